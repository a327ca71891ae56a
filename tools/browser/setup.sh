#!/usr/bin/env bash
# Sets up the headless browser that tools/tests/dashboard.rs checks the web
# dashboard in: Debian's `chromium` package, installed with apt-get when it
# is missing (as root; nothing else is downloaded). Prints the path of the
# chromium binary on stdout (all else goes to stderr); exits non-zero with
# the reason if it cannot.
#
#   chromium=$(tools/browser/setup.sh)   # then: WEIR_CHROMIUM=$chromium cargo test ...
set -euo pipefail

works() {
    local bin
    bin=$(command -v chromium 2>/dev/null) || return 1
    # Debian's wrapper script prints a harmless shell warning on some
    # machines; only the exit status and the version line count.
    "$bin" --version 2>/dev/null | grep -q '^Chromium ' || return 1
    echo "$bin"
}

if path=$(works); then
    echo "$path"
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "tools/browser/setup.sh: chromium is not installed and this is not root:" \
         "run 'sudo apt-get install -y chromium' (Debian's package), then this again" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null; then
    echo "tools/browser/setup.sh: chromium is not installed and there is no apt-get" \
         "to install Debian's package with; install chromium by hand" >&2
    exit 1
fi

echo "tools/browser/setup.sh: installing Debian's chromium (apt-get install -y chromium)" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y chromium >&2; then
    # A fresh machine has no package lists yet.
    echo "tools/browser/setup.sh: apt-get update, then trying again" >&2
    apt-get update >&2
    if ! apt-get install -y chromium >&2; then
        echo "tools/browser/setup.sh: apt-get install chromium failed (see above)" >&2
        exit 1
    fi
fi

if ! path=$(works); then
    echo "tools/browser/setup.sh: chromium was installed but 'chromium --version' fails" >&2
    exit 1
fi
echo "$path"
