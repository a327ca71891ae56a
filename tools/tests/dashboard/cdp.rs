//! A headless Chromium driven through the Chrome DevTools protocol, just
//! enough for the dashboard test: open a page, evaluate JavaScript in it,
//! take a screenshot. The protocol runs over a WebSocket; the few frames
//! it needs (masked text frames out; text, continuation, ping and close
//! frames in) are written here on std's TcpStream rather than pulling in a
//! WebSocket crate for one test.
//!
//! Real time, not `--virtual-time-budget`: the page polls the endpoint
//! once a second and keeps its own history of records/s, which virtual
//! time would compress into a few milliseconds of the job's life.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The chromium binary: `WEIR_CHROMIUM`, else `chromium` on the PATH;
/// panics saying how to install it.
pub fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("WEIR_CHROMIUM") {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "WEIR_CHROMIUM={} is not a file: run tools/browser/setup.sh, which installs \
             Debian's chromium and prints its path",
            p.display()
        );
        return p;
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "headless Chromium is needed to check the web dashboard and none was found \
                 (no WEIR_CHROMIUM, no chromium on the PATH): run tools/browser/setup.sh \
                 (as root it installs Debian's chromium package; .ci/run calls it)"
            )
        })
}

/// A headless browser with one page, ended when dropped.
pub struct Browser {
    child: Child,
    page: Socket,
    next_id: u64,
    profile: PathBuf,
    /// Uncaught exceptions, console errors and the browser's own error
    /// entries (a resource that failed to load, a Content-Security-Policy
    /// violation), as the page reported them.
    problems: Vec<String>,
}

impl Browser {
    /// Starts `chromium` headless with a fresh profile in `profile` and a
    /// `width` x `height` window, and connects to its first page.
    pub fn start(chromium: &Path, profile: &Path, width: u32, height: u32) -> Self {
        let _ = fs::remove_dir_all(profile);
        fs::create_dir_all(profile).expect("create the browser profile directory");
        let log = fs::File::create(profile.with_extension("log")).expect("the browser's log");
        let child = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--remote-debugging-port=0",
                &format!("--window-size={width},{height}"),
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e} (run tools/browser/setup.sh)",
                    chromium.display()
                )
            });
        let mut browser = Self {
            child,
            page: Socket::none(),
            next_id: 0,
            profile: profile.to_owned(),
            problems: Vec::new(),
        };
        let port = browser.devtools_port();
        browser.page = Socket::connect(port, &page_path(port));
        // The window's size less its frame: the page gets all of it.
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        );
        browser.call("Runtime.enable", json!({}));
        browser.call("Log.enable", json!({}));
        browser
    }

    /// What went wrong in the page since the last call (see `problems`).
    pub fn take_problems(&mut self) -> Vec<String> {
        self.evaluate("0"); // reads the events sent before it
        std::mem::take(&mut self.problems)
    }

    /// Keeps an event that reports a problem.
    fn note(&mut self, event: &Value) {
        let p = &event["params"];
        let problem = match event["method"].as_str() {
            Some("Runtime.exceptionThrown") => Some(format!(
                "uncaught: {}",
                p["exceptionDetails"]["exception"]["description"]
                    .as_str()
                    .or(p["exceptionDetails"]["text"].as_str())
                    .unwrap_or("?")
            )),
            Some("Runtime.consoleAPICalled") if p["type"] == "error" => {
                Some(format!("console.error: {}", p["args"]))
            }
            Some("Log.entryAdded") if p["entry"]["level"] == "error" => Some(format!(
                "{}: {} {}",
                p["entry"]["source"].as_str().unwrap_or("log"),
                p["entry"]["text"].as_str().unwrap_or(""),
                p["entry"]["url"].as_str().unwrap_or("")
            )),
            _ => None,
        };
        self.problems.extend(problem);
    }

    /// The port chromium writes into `DevToolsActivePort` once it listens.
    fn devtools_port(&mut self) -> u16 {
        let file = self.profile.join("DevToolsActivePort");
        let since = Instant::now();
        loop {
            if let Some(port) = fs::read_to_string(&file)
                .ok()
                .and_then(|t| t.lines().next().and_then(|l| l.trim().parse().ok()))
            {
                return port;
            }
            if let Some(status) = self.child.try_wait().expect("poll chromium") {
                panic!("chromium ended ({status}) before listening\n{}", self.log());
            }
            assert!(
                since.elapsed() < Duration::from_secs(60),
                "chromium did not open its DevTools port within 60 s\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What chromium said on stderr.
    pub fn log(&self) -> String {
        fs::read_to_string(self.profile.with_extension("log")).unwrap_or_default()
    }

    /// Calls a DevTools `method`; its result (panics on a protocol error).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({ "id": id, "method": method, "params": params });
        self.page.send(message.to_string().as_bytes());
        loop {
            let reply: Value = serde_json::from_slice(&self.page.receive())
                .unwrap_or_else(|e| panic!("{method}: a reply that is not JSON: {e}"));
            if reply["id"] != id {
                self.note(&reply); // an event
                continue;
            }
            if let Some(e) = reply.get("error") {
                panic!("{method}: {e}");
            }
            return reply["result"].clone();
        }
    }

    /// Opens `url` in the page.
    pub fn navigate(&mut self, url: &str) {
        let r = self.call("Page.navigate", json!({ "url": url }));
        assert!(r.get("errorText").is_none(), "cannot open {url}: {r}");
    }

    /// The value of JavaScript `expression` in the page (awaited), or
    /// what it threw.
    fn try_evaluate(&mut self, expression: &str) -> Result<Value, Value> {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        );
        match r.get("exceptionDetails") {
            Some(e) => Err(e.clone()),
            None => Ok(r["result"]["value"].clone()),
        }
    }

    /// The value of JavaScript `expression` in the page (awaited).
    pub fn evaluate(&mut self, expression: &str) -> Value {
        self.try_evaluate(expression)
            .unwrap_or_else(|e| panic!("`{expression}` threw: {e}"))
    }

    /// Waits until `expression` is true in the page (while the page
    /// loads it may throw: not yet); panics with `what` and the page's
    /// text after `timeout`.
    pub fn wait_for(&mut self, what: &str, expression: &str, timeout: Duration) {
        let since = Instant::now();
        while self.try_evaluate(expression) != Ok(Value::Bool(true)) {
            if since.elapsed() > timeout {
                let text = self.evaluate("document.body.innerText");
                panic!(
                    "the dashboard showed no {what} within {timeout:?}; it shows:\n{}",
                    text.as_str().unwrap_or("")
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A PNG of the page as the window shows it, into `path`.
    pub fn screenshot(&mut self, path: &Path) {
        let r = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        let png = base64_decode(r["data"].as_str().expect("screenshot data"));
        assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
        fs::write(path, png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.profile);
    }
}

/// The WebSocket path of the browser's first page (`/json/list`).
fn page_path(port: u16) -> String {
    let since = Instant::now();
    loop {
        let targets: Option<Value> = ureq::get(&format!("http://127.0.0.1:{port}/json/list"))
            .call()
            .ok()
            .and_then(|r| r.into_json().ok());
        let path = targets.as_ref().and_then(|t| {
            t.as_array()?
                .iter()
                .find(|t| t["type"] == "page")?
                .get("webSocketDebuggerUrl")?
                .as_str()?
                .split_once(&format!("127.0.0.1:{port}"))
                .map(|(_, path)| path.to_owned())
        });
        if let Some(path) = path {
            return path;
        }
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "chromium lists no page on port {port}: {targets:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A client WebSocket (RFC 6455), text messages only.
struct Socket(Option<BufReader<TcpStream>>);

impl Socket {
    fn none() -> Self {
        Self(None)
    }

    fn connect(port: u16, path: &str) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to chromium");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("a read timeout");
        let mut reader = BufReader::new(stream);
        // The key only proves to the server that this is a WebSocket
        // client; any 16 bytes in base64 do.
        write!(
            reader.get_mut(),
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: d2Vpci1kYXNoYm9hcmQtdA==\r\n\
             Sec-WebSocket-Version: 13\r\n\r\n"
        )
        .expect("send the handshake");
        let mut status = String::new();
        reader.read_line(&mut status).expect("the handshake reply");
        assert!(
            status.starts_with("HTTP/1.1 101"),
            "chromium refused the WebSocket: {status}"
        );
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("the handshake headers");
            if line == "\r\n" || line.is_empty() {
                break;
            }
        }
        Self(Some(reader))
    }

    fn stream(&mut self) -> &mut BufReader<TcpStream> {
        self.0.as_mut().expect("a connected socket")
    }

    /// Sends `payload` as one masked text frame (clients must mask).
    fn send(&mut self, payload: &[u8]) {
        let mask = [0x5a, 0x13, 0xc4, 0x7e];
        let mut frame = vec![0x81];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n <= 0xffff => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream()
            .get_mut()
            .write_all(&frame)
            .expect("send to chromium");
    }

    /// The next whole text message (continuation frames joined; pings
    /// answered).
    fn receive(&mut self) -> Vec<u8> {
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.stream()
                .read_exact(&mut head)
                .expect("read from chromium");
            let (fin, opcode) = (head[0] & 0x80 != 0, head[0] & 0x0f);
            let len = match head[1] & 0x7f {
                126 => {
                    let mut b = [0u8; 2];
                    self.stream().read_exact(&mut b).expect("a frame length");
                    u64::from(u16::from_be_bytes(b))
                }
                127 => {
                    let mut b = [0u8; 8];
                    self.stream().read_exact(&mut b).expect("a frame length");
                    u64::from_be_bytes(b)
                }
                n => u64::from(n),
            };
            let mut mask = [0u8; 4];
            if head[1] & 0x80 != 0 {
                self.stream().read_exact(&mut mask).expect("a frame mask");
            }
            let mut payload = vec![0u8; len as usize];
            self.stream()
                .read_exact(&mut payload)
                .expect("a frame payload");
            if head[1] & 0x80 != 0 {
                payload
                    .iter_mut()
                    .enumerate()
                    .for_each(|(i, b)| *b ^= mask[i % 4]);
            }
            match opcode {
                0x0..=0x2 => {
                    message.extend_from_slice(&payload);
                    if fin {
                        return message;
                    }
                }
                0x8 => panic!("chromium closed the DevTools connection"),
                0x9 => {
                    let mut pong = vec![0x8a, 0x80 | payload.len() as u8, 0, 0, 0, 0];
                    pong.extend_from_slice(&payload);
                    self.stream()
                        .get_mut()
                        .write_all(&pong)
                        .expect("answer a ping");
                }
                _ => {} // a pong
            }
        }
    }
}

/// Standard base64 (the screenshot's encoding) to bytes.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {:?}", c as char),
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .map(value)
        .collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, d)| n | u32::from(*d) << (18 - 6 * i));
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

#[test]
fn base64_decodes_what_it_should() {
    assert_eq!(base64_decode("aGVsbG8="), b"hello");
    assert_eq!(base64_decode("aGVsbG8h"), b"hello!");
    assert_eq!(base64_decode("aGk="), b"hi");
    assert_eq!(base64_decode(""), b"");
}
