//! `weir list`, `weir savepoint`, `weir stop` and `weir cancel`: Flink's
//! CLI control commands, each a client of a running job's REST endpoint
//! (`--address`, default `http://127.0.0.1:8081`; a token from `--token`
//! or `WEIR_REST_TOKEN`). They print what Flink's CLI prints (`Savepoint
//! completed. Path: ...`) and exit 0 on success, 1 when the endpoint cannot
//! be reached or refuses (no such job, a job not running, a savepoint that
//! failed), 2 on bad usage.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde_json::{json, Value};

/// Longest wait for a savepoint to complete.
const SAVEPOINT_TIMEOUT: Duration = Duration::from_secs(600);

/// How often a savepoint's status is asked for.
const POLL: Duration = Duration::from_millis(100);

/// Where the job's endpoint is.
#[derive(Args, Clone)]
pub struct Endpoint {
    /// The job's REST endpoint.
    #[arg(long, default_value = "http://127.0.0.1:8081")]
    address: String,
    /// The bearer token (rest.auth-token) if the endpoint requires one;
    /// default: the WEIR_REST_TOKEN environment variable.
    #[arg(long)]
    token: Option<String>,
}

/// The control commands.
#[derive(Subcommand, Clone)]
pub enum Control {
    /// List the job the endpoint serves, with its id and state.
    List {
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Take a savepoint of a running job; the job runs on.
    Savepoint {
        /// The job id (weir list).
        #[arg(value_parser = job_id)]
        job: String,
        /// Where the savepoint goes (default: the job's
        /// state.savepoints.dir); a relative path is taken from the
        /// directory this command runs in.
        #[arg(long, value_name = "DIR")]
        dir: Option<String>,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Stop a running job with a savepoint (into its state.savepoints.dir,
    /// or --dir), as SIGTERM does.
    Stop {
        /// The job id (weir list).
        #[arg(value_parser = job_id)]
        job: String,
        /// Where the savepoint goes (default: the job's
        /// state.savepoints.dir); a relative path is taken from the
        /// directory this command runs in.
        #[arg(long, value_name = "DIR")]
        dir: Option<String>,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Cancel a running job: it ends at once, without a savepoint.
    Cancel {
        /// The job id (weir list).
        #[arg(value_parser = job_id)]
        job: String,
        #[command(flatten)]
        endpoint: Endpoint,
    },
}

/// A job id as Flink's CLI takes one: 32 hex digits (either case).
/// Anything else is bad usage (exit 2) before a request is sent: the id
/// is part of the request's path, so `ID/stop?` given to `weir savepoint`
/// would otherwise stop the job.
fn job_id(text: &str) -> Result<String, String> {
    if text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err("not a job id: a job id is 32 hex digits (see weir list)".into())
    }
}

/// `--dir` as the job is to read it: a relative path made absolute here,
/// against the directory the command runs in (the job resolves a path
/// against its own, which `weir savepoint --dir sp` run elsewhere did
/// not mean); an absolute path or a URI as given.
fn target_directory(dir: &str) -> String {
    if dir.contains("://") {
        return dir.to_owned();
    }
    std::path::absolute(dir)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| dir.to_owned())
}

/// What went wrong talking to the endpoint.
struct Failure(String);

struct Client {
    agent: ureq::Agent,
    base: String,
    token: Option<String>,
}

impl Client {
    fn new(e: &Endpoint) -> Self {
        let base = e.address.trim_end_matches('/').to_owned();
        let base = if base.contains("://") {
            base
        } else {
            format!("http://{base}")
        };
        Self {
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(15))
                .build(),
            base,
            token: e
                .token
                .clone()
                .or_else(|| std::env::var("WEIR_REST_TOKEN").ok()),
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, Failure> {
        let url = format!("{}{path}", self.base);
        let mut request = self.agent.request(method, &url);
        if let Some(t) = &self.token {
            request = request.set("Authorization", &format!("Bearer {t}"));
        }
        let response = match body {
            Some(b) => request.send_json(b),
            None => request.call(),
        };
        match response {
            Ok(r) => r
                .into_json::<Value>()
                .map_err(|e| Failure(format!("{url}: the answer is not JSON: {e}"))),
            Err(ureq::Error::Status(code, r)) => {
                let why = r
                    .into_json::<Value>()
                    .ok()
                    .and_then(|v| v["errors"][0].as_str().map(str::to_owned))
                    .unwrap_or_default();
                Err(Failure(format!("{method} {url}: {code}: {why}")))
            }
            Err(e) => Err(Failure(format!(
                "cannot reach the REST endpoint at {}: {e} (is the job running? see --address)",
                self.base
            ))),
        }
    }

    /// Polls savepoint `trigger` of `job` to its end; returns its location.
    fn wait_for_savepoint(&self, job: &str, trigger: &str) -> Result<String, Failure> {
        let until = Instant::now() + SAVEPOINT_TIMEOUT;
        loop {
            let status = self.call("GET", &format!("/jobs/{job}/savepoints/{trigger}"), None)?;
            if status["status"]["id"] == "COMPLETED" {
                let op = &status["operation"];
                if let Some(location) = op["location"].as_str() {
                    return Ok(location.to_owned());
                }
                let why = op["failure-cause"]["stack-trace"]
                    .as_str()
                    .unwrap_or("unknown cause");
                return Err(Failure(format!("the savepoint failed: {why}")));
            }
            if Instant::now() > until {
                return Err(Failure(format!(
                    "the savepoint did not complete in {SAVEPOINT_TIMEOUT:?} (trigger {trigger})"
                )));
            }
            std::thread::sleep(POLL);
        }
    }
}

/// Runs a control command.
pub fn run(command: &Control) -> ExitCode {
    let result = match command {
        Control::List { endpoint } => list(&Client::new(endpoint)),
        Control::Savepoint { job, dir, endpoint } => {
            let c = Client::new(endpoint);
            let body = match dir.as_deref().map(target_directory) {
                Some(d) => json!({ "target-directory": d, "cancel-job": false }),
                None => json!({ "cancel-job": false }),
            };
            println!("Triggering savepoint for job {job}.");
            c.call("POST", &format!("/jobs/{job}/savepoints"), Some(body))
                .and_then(|r| trigger_of(&r))
                .and_then(|t| c.wait_for_savepoint(job, &t))
                .map(|path| {
                    println!("Savepoint completed. Path: {path}");
                    println!(
                        "You can resume your program from this savepoint with: --restore {path} \
                         (weir run, weir sql or weir bench, the command that runs the job)"
                    );
                })
        }
        Control::Stop { job, dir, endpoint } => {
            let c = Client::new(endpoint);
            let body = match dir.as_deref().map(target_directory) {
                Some(d) => json!({ "targetDirectory": d, "drain": false }),
                None => json!({ "drain": false }),
            };
            println!("Suspending job \"{job}\" with a savepoint.");
            c.call("POST", &format!("/jobs/{job}/stop"), Some(body))
                .and_then(|r| trigger_of(&r))
                .and_then(|t| c.wait_for_savepoint(job, &t))
                .map(|path| println!("Savepoint completed. Path: {path}"))
        }
        Control::Cancel { job, endpoint } => {
            let c = Client::new(endpoint);
            c.call("PATCH", &format!("/jobs/{job}?mode=cancel"), None)
                .map(|_| println!("Cancelled job {job}."))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(why)) => {
            eprintln!("error: {why}");
            ExitCode::from(1)
        }
    }
}

fn trigger_of(reply: &Value) -> Result<String, Failure> {
    reply["request-id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| {
            Failure(format!(
                "the endpoint answered without a request-id: {reply}"
            ))
        })
}

/// `weir list`: the job, as Flink's `flink list` prints jobs.
fn list(c: &Client) -> Result<(), Failure> {
    let overview = c.call("GET", "/jobs/overview", None)?;
    let jobs = overview["jobs"].as_array().cloned().unwrap_or_default();
    let (running, ended): (Vec<&Value>, Vec<&Value>) = jobs.iter().partition(|j| {
        matches!(
            j["state"].as_str(),
            Some("RUNNING" | "RESTARTING" | "INITIALIZING" | "CREATED" | "CANCELLING")
        )
    });
    let line = |j: &Value| {
        format!(
            "{} : {} : {} ({})",
            j["start-time"].as_u64().unwrap_or(0),
            j["jid"].as_str().unwrap_or("?"),
            j["name"].as_str().unwrap_or("?"),
            j["state"].as_str().unwrap_or("?")
        )
    };
    if running.is_empty() {
        println!("No running jobs.");
    } else {
        println!("------------------ Running/Restarting Jobs -------------------");
        for j in running {
            println!("{}", line(j));
        }
        println!("--------------------------------------------------------------");
    }
    if !ended.is_empty() {
        println!("---------------------- Terminated Jobs -----------------------");
        for j in ended {
            println!("{}", line(j));
        }
        println!("--------------------------------------------------------------");
    }
    Ok(())
}
