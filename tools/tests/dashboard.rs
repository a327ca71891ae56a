//! The web dashboard in a real headless Chromium (issue 22,
//! docs/REST.md "The dashboard"): during `weir bench w4` (an unpaced
//! source into a slow sink, so the source's stage is backpressured HIGH;
//! aligned checkpoints every second) the page at `/` asks for the token
//! the endpoint requires, takes it from a `#token=` fragment, draws the
//! job graph with the source's stage HIGH, the subtasks' busy,
//! backpressured and idle shares, records/s, the checkpoint history
//! filling in with its duration chart, the exceptions and the
//! configuration, and for the keyed stage the latency its markers
//! measured; screenshots of it are kept (`WEIR_DASHBOARD_SCREENSHOTS`
//! names a directory to copy them to; docs/img/dashboard.png is one).
//!
//! Needs chromium: run tools/browser/setup.sh (.ci/run does) or set
//! `WEIR_CHROMIUM`; without one the test fails saying so.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;
use support::{Proc, Scratch, CONDITION, WEIR};

#[path = "dashboard/cdp.rs"]
mod cdp;
use cdp::Browser;

/// The endpoint's bearer token (a loopback endpoint may have one too).
const TOKEN: &str = "dashboard-test-token-5f3a9c";

/// `weir bench w4` on two unpinned workers, aligned checkpoints every
/// second into the scratch directory, latency markers every second, the
/// endpoint on a free port with [`TOKEN`]; its source runs far longer
/// than the test, which kills it.
fn w4(s: &Scratch) -> Command {
    let mut c = Command::new(WEIR);
    c.args(["bench", "w4", "--mode", "aligned", "--workers", "2"])
        .args(["--duration", "180"]);
    for set in [
        format!("state.checkpoints.dir={}", s.join("ck").display()),
        "execution.checkpointing.interval=1s".into(),
        "metrics.latency.interval=1s".into(),
        "weir.worker.pin-cores=false".into(),
        "rest.port=0".into(),
        format!("rest.auth-token={TOKEN}"),
    ] {
        c.arg("--set").arg(set);
    }
    c.env_remove("RUST_LOG").env_remove("WEIR_FAILPOINTS");
    c
}

/// The endpoint's address once the run printed it.
fn endpoint(p: &mut Proc) -> String {
    p.printed("REST endpoint: ")
}

/// `GET path` with the token; the JSON body.
fn get(base: &str, path: &str) -> Value {
    ureq::get(&format!("{base}{path}"))
        .set("Authorization", &format!("Bearer {TOKEN}"))
        .timeout(Duration::from_secs(10))
        .call()
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
        .into_json()
        .unwrap_or_else(|e| panic!("GET {path}: not JSON: {e}"))
}

/// Waits (through REST, not the page) until the job shows what the page
/// is checked for: a source stage backpressured HIGH and two completed
/// checkpoints. Returns the job id and its vertex ids.
fn wait_for_backpressure_and_checkpoints(p: &mut Proc, base: &str) -> (String, Vec<String>) {
    let since = Instant::now();
    loop {
        assert!(p.exited().is_none(), "W4 ended early\n{}", p.stderr());
        assert!(
            since.elapsed() < CONDITION,
            "W4 showed no HIGH backpressure and two checkpoints within {CONDITION:?}\n{}",
            p.stderr()
        );
        let jobs = get(base, "/jobs");
        if jobs["jobs"][0]["status"] == "RUNNING" {
            let job = jobs["jobs"][0]["id"].as_str().expect("a job id").to_owned();
            let details = get(base, &format!("/jobs/{job}"));
            let vertices: Vec<String> = details["vertices"]
                .as_array()
                .expect("vertices")
                .iter()
                .map(|v| v["id"].as_str().expect("a vertex id").to_owned())
                .collect();
            let source = get(
                base,
                &format!("/jobs/{job}/vertices/{}/backpressure", vertices[0]),
            );
            let completed = get(base, &format!("/jobs/{job}/checkpoints"))["counts"]["completed"]
                .as_u64()
                .unwrap_or(0);
            if source["backpressure-level"] == "high" && completed >= 2 {
                return (job, vertices);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Completed rows of the page's checkpoint history table.
const COMPLETED_ROWS: &str =
    "document.querySelectorAll('#checkpoint-history tr[data-status=\"COMPLETED\"]').length";

#[test]
fn the_dashboard_shows_backpressure_and_checkpoints_in_a_real_browser() {
    let chromium = cdp::chromium();
    let s = Scratch::new("dashboard", "browser");
    let mut p = Proc::spawn(&s, "w4", w4(&s));
    let base = endpoint(&mut p);
    let (job, vertices) = wait_for_backpressure_and_checkpoints(&mut p, &base);
    assert_eq!(
        vertices.len(),
        2,
        "W4's stages: source, keyed count -> sink"
    );

    let mut browser = Browser::start(&chromium, &s.join("chromium-profile"), 1400, 1100);

    // Without the token the page asks for it and shows no data.
    browser.navigate(&format!("{base}/"));
    browser.wait_for(
        "token form",
        "!document.getElementById('token-form').hidden && \
         document.getElementById('poll-status').dataset.status === 'error'",
        CONDITION,
    );
    assert_eq!(
        browser.evaluate("document.querySelectorAll('g.vertex').length"),
        0,
        "a graph drawn without the token"
    );
    // The 401s it got are all that went wrong.
    for problem in browser.take_problems() {
        assert!(
            problem.contains("401"),
            "the page without a token: {problem}"
        );
    }

    // With it (a fragment, as a user pastes it), the page reads the job.
    browser.navigate(&format!("{base}/#token={TOKEN}"));
    browser.wait_for(
        "HIGH vertex and two completed checkpoints",
        &format!(
            "document.querySelector('g.vertex[data-backpressure=\"HIGH\"]') !== null && \
             {COMPLETED_ROWS} >= 2"
        ),
        CONDITION,
    );
    assert_eq!(
        browser.evaluate("location.hash"),
        "",
        "the token stays in the address bar"
    );
    assert_eq!(
        browser.evaluate("document.getElementById('token-form').hidden"),
        true
    );
    // The graph: both stages, the source's HIGH, with an edge between.
    assert_eq!(
        browser.evaluate("[...document.querySelectorAll('g.vertex')].map(g => g.dataset.vertexId)"),
        serde_json::json!(vertices),
        "the graph's vertices are the job's stages, in order"
    );
    assert_eq!(
        browser.evaluate("document.querySelector('g.vertex[data-vertex-id]').dataset.backpressure"),
        "HIGH",
        "W4's source stage is backpressured by the slow sink"
    );
    // One edge, the key_by's, labelled as Flink labels it.
    assert_eq!(
        browser.evaluate(
            "[...document.querySelectorAll('#job-graph path.edge')].map(e => e.dataset.shipStrategy)"
        ),
        serde_json::json!(["HASH"])
    );
    assert_eq!(
        browser.evaluate("document.getElementById('job-state').textContent"),
        "RUNNING"
    );
    // The source's subtasks (selected first): one row each, mostly
    // backpressured.
    assert_eq!(
        browser.evaluate("document.querySelectorAll('#subtasks tbody tr').length"),
        2
    );
    assert_eq!(
        browser.evaluate(
            "document.querySelectorAll('#subtasks td[data-backpressure=\"HIGH\"]').length"
        ),
        2,
        "both source subtasks HIGH"
    );
    // The duration chart has a group of bars per checkpoint, one bar per
    // subtask of each stage (2 + 2), from the per-subtask details.
    browser.wait_for(
        "per-subtask checkpoint bars",
        "[...document.querySelectorAll('#checkpoint-chart g.checkpoint-bars')]\
         .filter(g => g.querySelectorAll('rect.bar-async').length === 4).length >= 2",
        CONDITION,
    );
    // Exceptions (none) and the effective configuration.
    assert_eq!(
        browser.evaluate("document.getElementById('restart-count').textContent"),
        "restarts 0"
    );
    assert_eq!(
        browser.evaluate(
            "[...document.querySelectorAll('#config td')].some(td => \
             td.textContent === 'execution.checkpointing.interval')"
        ),
        true,
        "the configuration lists weir's keys"
    );
    assert_eq!(
        browser.evaluate(
            "[...document.querySelectorAll('#config td')].some(td => td.textContent.includes('dashboard-test-token'))"
        ),
        false,
        "the token is shown in the configuration"
    );
    let early = browser
        .evaluate(COMPLETED_ROWS)
        .as_u64()
        .expect("a row count");
    browser.screenshot(&s.join("dashboard-early.png"));

    // Half a minute on: the history has filled in and records/s has a
    // line per stage.
    browser.wait_for(
        "records/s history and more checkpoints",
        &format!(
            "[...document.querySelectorAll('#rate-chart polyline')]\
             .filter(l => l.getAttribute('points').split(' ').length >= 10).length === 2 && \
             {COMPLETED_ROWS} >= {}",
            early + 8
        ),
        CONDITION,
    );
    browser.screenshot(&s.join("dashboard.png"));

    // Clicking the other stage shows its subtasks, with the latency the
    // markers measured from the source (a source's own stage has none).
    assert_eq!(
        browser.evaluate(
            "[...document.querySelectorAll('#subtasks tbody tr')].map(r => r.lastChild.textContent)"
        ),
        serde_json::json!(["—", "—"]),
        "latency shown for the source's own stage"
    );
    browser.evaluate(
        "document.querySelectorAll('g.vertex')[1].dispatchEvent(new MouseEvent('click', {bubbles: true}))",
    );
    browser.wait_for(
        "the keyed stage's subtasks, with their latency, after a click",
        "document.getElementById('selected-name').textContent.startsWith('w4-keyed-count') && \
         document.querySelectorAll('g.vertex')[1].classList.contains('selected') && \
         [...document.querySelectorAll('#subtasks tbody tr')]\
         .filter(r => / ms \\/ .* ms$/.test(r.lastChild.textContent)).length === 2",
        CONDITION,
    );
    browser.screenshot(&s.join("dashboard-keyed.png"));

    // Nothing went wrong in the page with the token: no exception, no
    // failed request, nothing the Content-Security-Policy refused.
    let problems = browser.take_problems();
    assert!(problems.is_empty(), "the page reported {problems:#?}");
    assert!(
        p.exited().is_none(),
        "the job ended while the page watched it\n{}",
        p.stderr()
    );
    assert_eq!(get(&base, &format!("/jobs/{job}"))["state"], "RUNNING");
    if let Some(dir) = std::env::var_os("WEIR_DASHBOARD_SCREENSHOTS") {
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("the screenshot directory");
        for name in [
            "dashboard-early.png",
            "dashboard.png",
            "dashboard-keyed.png",
        ] {
            std::fs::copy(s.join(name), dir.join(name)).expect("copy a screenshot");
        }
    }
}
