//! Which runs a report makes, at which size: the workloads of
//! WORKLOADS.md as `weir bench ...` command lines, for the full report
//! (the workloads' own sizes and run times), `--quick` (the same sweeps,
//! smaller N and shorter runs) and the hidden `--tiny` (the tests' size).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// How big a report is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// The workloads as WORKLOADS.md sizes them (13 minutes measured on
    /// two cores, without Nexmark q7, which adds one to two).
    Full,
    /// The same sweeps with smaller N and shorter runs (under three
    /// minutes on two cores).
    Quick,
    /// A few seconds per workload, for the tests.
    Tiny,
}

impl Scale {
    /// How the report names it.
    pub fn name(self) -> &'static str {
        match self {
            Scale::Full => "full",
            Scale::Quick => "quick",
            Scale::Tiny => "tiny",
        }
    }
}

/// What a run measures, so that a section finds its runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Point {
    /// W1 at this many workers.
    W1Workers(usize),
    /// W1 with this many keys.
    W1Keys(u64),
    /// W1 (unpaced) with this buffer timeout in ms.
    W1Timeout(f64),
    /// W1 with (true) or without aligned checkpoints.
    W1Checkpoints(bool),
    /// W2.
    W2,
    /// W3 at a rate (records/s) and buffer timeout (ms).
    W3 {
        /// Records/s in total.
        rate: u64,
        /// `execution.buffer-timeout` in ms; with `auto`, the latency
        /// target.
        timeout_ms: f64,
        /// The adaptive timeout (`execution.buffer-timeout.interval =
        /// auto` with `timeout_ms` as its latency target).
        auto: bool,
        /// With WORKLOADS.md's aligned checkpoints every second; without
        /// them, the control run that shows the host's own hiccups.
        checkpoints: bool,
    },
    /// W4 in a mode (`none`, `aligned`, ...).
    W4(&'static str),
    /// W5 with K keys.
    W5 {
        /// K.
        keys: u64,
    },
    /// A Nexmark query.
    Nexmark(&'static str),
}

/// One `weir bench ...` run of a report.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// What it measures.
    pub point: Point,
    /// The arguments after `weir`.
    pub args: Vec<String>,
    /// A checkpoint or working directory to delete after the run.
    pub scratch: Option<PathBuf>,
    /// The run must complete at least this many checkpoints (it is
    /// verified only if it does).
    pub min_checkpoints: Option<u64>,
    /// The run is killed and reported as failed after this long.
    pub limit: Duration,
}

/// The sizes of one scale.
#[derive(Clone, Debug)]
pub struct Sizes {
    /// W1's N in the worker, key and timeout sweeps.
    pub w1_records: u64,
    /// W1's keys in the key sweep.
    pub w1_keys: Vec<u64>,
    /// W2's N.
    pub w2_records: u64,
    /// W3's warm-up and recorded run, in ms.
    pub w3_warmup_ms: u64,
    /// W3's recorded run, in ms.
    pub w3_duration_ms: u64,
    /// The checkpoint interval of W1 with checkpoints, W3 and W4, in ms
    /// (WORKLOADS.md: 1 s).
    pub checkpoint_ms: u64,
    /// W4's source run time, in s.
    pub w4_duration_s: u64,
    /// W5's runs: (N, K, checkpoint interval in ms).
    pub w5: Vec<(u64, u64, u64)>,
    /// Nexmark: events per query.
    pub nexmark_events: u64,
    /// Nexmark: the queries (those with a reference count).
    pub nexmark_queries: Vec<&'static str>,
    /// The longest one run may take.
    pub limit: Duration,
}

/// The latency target of the W3 run with the adaptive timeout (issue 23:
/// plotted against the fixed timeouts), in ms.
pub const AUTO_TARGET_MS: u64 = 1;

/// The buffer timeouts of the sweeps (WORKLOADS.md, W3), in ms.
pub const TIMEOUTS_MS: [u64; 4] = [0, 1, 10, 100];
/// W3's rates (WORKLOADS.md), records/s.
pub const W3_RATES: [u64; 2] = [200_000, 1_000_000];
/// The rate of W3's control run, without checkpoints (issue 23 judges
/// the tail at 1 M records/s and timeout 0 beside one).
pub const CONTROL_RATE: u64 = 1_000_000;
/// W4's modes, the baseline first.
pub const W4_MODES: [&str; 5] = ["none", "aligned", "unaligned", "debloat", "timeout"];
/// W1's K outside the key sweep (WORKLOADS.md).
pub const W1_KEYS: u64 = 100_000;
/// W2's K (WORKLOADS.md).
pub const W2_KEYS: u64 = 10_000;

impl Sizes {
    /// The sizes of `scale`.
    pub fn of(scale: Scale) -> Self {
        match scale {
            Scale::Full => Sizes {
                w1_records: 200_000_000,
                w1_keys: (3..=8).map(|e| 10u64.pow(e)).collect(),
                w2_records: 200_000_000,
                w3_warmup_ms: 5_000,
                w3_duration_ms: 20_000,
                checkpoint_ms: 1_000,
                w4_duration_s: 60,
                // The last is W5 exactly as WORKLOADS.md says.
                w5: vec![
                    (30_000_000, 1_000_000, 1_000),
                    (50_000_000, 3_000_000, 2_000),
                    (100_000_000, 10_000_000, 5_000),
                ],
                nexmark_events: 5_000_000,
                nexmark_queries: vec!["q0", "q1", "q2", "q3", "q7", "q8", "q17", "q21", "q22"],
                limit: Duration::from_secs(900),
            },
            Scale::Quick => Sizes {
                w1_records: 20_000_000,
                w1_keys: (3..=7).map(|e| 10u64.pow(e)).collect(),
                w2_records: 20_000_000,
                w3_warmup_ms: 1_000,
                w3_duration_ms: 3_000,
                checkpoint_ms: 1_000,
                w4_duration_s: 5,
                // N large enough that the first run outlasts three
                // checkpoints on a quiet machine (at 10 M and 300 ms it
                // did not).
                w5: vec![(20_000_000, 100_000, 200), (20_000_000, 1_000_000, 200)],
                nexmark_events: 1_000_000,
                nexmark_queries: vec!["q0", "q1", "q2"],
                limit: Duration::from_secs(120),
            },
            Scale::Tiny => Sizes {
                w1_records: 200_000,
                w1_keys: vec![1_000, 10_000],
                w2_records: 200_000,
                w3_warmup_ms: 200,
                w3_duration_ms: 600,
                checkpoint_ms: 200,
                w4_duration_s: 1,
                w5: vec![(2_000_000, 1_000, 100), (2_000_000, 10_000, 100)],
                nexmark_events: 100_000,
                nexmark_queries: vec!["q0"],
                limit: Duration::from_secs(120),
            },
        }
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

/// Every run of a report at `scale` on `cores` cores, with checkpoints and
/// working directories under `work`.
pub fn runs(scale: Scale, cores: usize, work: &Path) -> Vec<RunSpec> {
    let s = Sizes::of(scale);
    let workers = cores.to_string();
    let spec = |point: Point, args: Vec<String>| RunSpec {
        point,
        args,
        scratch: None,
        min_checkpoints: None,
        limit: s.limit,
    };
    let w1 = |n: u64, k: u64, workers: &str| {
        strings(&[
            "bench",
            "w1",
            "--n",
            &n.to_string(),
            "--k",
            &k.to_string(),
            "--workers",
            workers,
        ])
    };
    let checkpoints = |dir: &Path| {
        vec![
            "--set".to_owned(),
            format!("execution.checkpointing.interval={}ms", s.checkpoint_ms),
            "--set".to_owned(),
            format!("state.checkpoints.dir={}", dir.display()),
        ]
    };
    let mut out = Vec::new();
    for p in 1..=cores {
        let mut args = w1(s.w1_records, W1_KEYS, &p.to_string());
        args.push("--quiet".into());
        out.push(spec(Point::W1Workers(p), args));
    }
    for &k in &s.w1_keys {
        let mut args = w1(s.w1_records, k, &workers);
        args.push("--quiet".into());
        out.push(spec(Point::W1Keys(k), args));
    }
    for t in TIMEOUTS_MS {
        let mut args = w1(s.w1_records, W1_KEYS, &workers);
        args.extend(strings(&[
            "--set",
            &format!("execution.buffer-timeout={t}ms"),
            "--quiet",
        ]));
        out.push(spec(Point::W1Timeout(t as f64), args));
    }
    for with in [false, true] {
        let mut args = w1(s.w1_records, W1_KEYS, &workers);
        let mut run = spec(Point::W1Checkpoints(with), Vec::new());
        if with {
            let dir = work.join("w1-checkpoints");
            args.extend(checkpoints(&dir));
            run.scratch = Some(dir);
            run.min_checkpoints = Some(1);
        }
        args.push("--quiet".into());
        run.args = args;
        out.push(run);
    }
    out.push(spec(
        Point::W2,
        strings(&[
            "bench",
            "w2",
            "--n",
            &s.w2_records.to_string(),
            "--k",
            &W2_KEYS.to_string(),
            "--workers",
            &workers,
            "--quiet",
        ]),
    ));
    for rate in W3_RATES {
        // The fixed timeouts of WORKLOADS.md, then weir's adaptive one,
        // all with checkpoints; at the highest rate, the tightest timeout
        // once more without checkpoints: the latency tail of the host
        // itself, beside what the checkpoints add to it.
        let settings = TIMEOUTS_MS
            .iter()
            .map(|t| (*t, false, true))
            .chain(std::iter::once((AUTO_TARGET_MS, true, true)))
            .chain((rate == CONTROL_RATE).then_some((TIMEOUTS_MS[0], false, false)));
        for (t, auto, with_checkpoints) in settings {
            let name = match (auto, with_checkpoints) {
                (true, _) => "auto".to_owned(),
                (false, true) => format!("{t}ms"),
                (false, false) => format!("{t}ms-no-checkpoints"),
            };
            let dir = work.join(format!("w3-{rate}-{name}"));
            let mut args = strings(&[
                "bench",
                "w3",
                "--rate",
                &rate.to_string(),
                "--warmup",
                &format!("{}ms", s.w3_warmup_ms),
                "--duration",
                &format!("{}ms", s.w3_duration_ms),
                "--workers",
                &workers,
            ]);
            if auto {
                args.extend(strings(&[
                    "--set",
                    "execution.buffer-timeout.interval=auto",
                    "--set",
                    &format!("execution.buffer-timeout.latency-target={t}ms"),
                ]));
            } else {
                args.extend(strings(&[
                    "--set",
                    &format!("execution.buffer-timeout={t}ms"),
                ]));
            }
            if with_checkpoints {
                args.extend(checkpoints(&dir));
            }
            args.push("--quiet".into());
            out.push(RunSpec {
                scratch: with_checkpoints.then_some(dir),
                // A checkpoint per interval of the run, less the first
                // interval and one for slack (the count includes the final
                // checkpoint at the end of the run).
                min_checkpoints: with_checkpoints.then(|| {
                    ((s.w3_warmup_ms + s.w3_duration_ms) / s.checkpoint_ms)
                        .saturating_sub(2)
                        .max(1)
                }),
                ..spec(
                    Point::W3 {
                        rate,
                        timeout_ms: t as f64,
                        auto,
                        checkpoints: with_checkpoints,
                    },
                    args,
                )
            });
        }
    }
    for mode in W4_MODES {
        let dir = work.join(format!("w4-{mode}"));
        let mut args = strings(&[
            "bench",
            "w4",
            "--mode",
            mode,
            "--duration",
            &format!("{}s", s.w4_duration_s),
            "--workers",
            &workers,
        ]);
        if mode != "none" {
            args.extend(checkpoints(&dir));
        }
        args.push("--quiet".into());
        out.push(RunSpec {
            scratch: (mode != "none").then(|| dir.clone()),
            // As W3: a checkpoint per interval of the source's run, less
            // two (the count includes the final checkpoint at the end).
            min_checkpoints: (mode != "none").then(|| {
                (s.w4_duration_s * 1000 / s.checkpoint_ms)
                    .saturating_sub(2)
                    .max(1)
            }),
            ..spec(Point::W4(mode), args)
        });
    }
    for &(n, k, interval) in &s.w5 {
        let dir = work.join(format!("w5-{k}"));
        let args = strings(&[
            "bench",
            "w5",
            "--n",
            &n.to_string(),
            "--k",
            &k.to_string(),
            "--workers",
            &workers,
            "--dir",
            &dir.display().to_string(),
            "--set",
            &format!("execution.checkpointing.interval={interval}ms"),
        ]);
        out.push(RunSpec {
            scratch: Some(dir),
            ..spec(Point::W5 { keys: k }, args)
        });
    }
    for &q in &s.nexmark_queries {
        out.push(spec(
            Point::Nexmark(q),
            strings(&[
                "bench",
                "nexmark",
                "--query",
                q,
                "--events",
                &s.nexmark_events.to_string(),
                "--workers",
                &workers,
                "--quiet",
            ]),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(r: &RunSpec) -> String {
        r.args.join(" ")
    }

    #[test]
    fn w3_runs_the_sweep_with_one_second_aligned_checkpoints() {
        let runs = runs(Scale::Full, 2, Path::new("out/work"));
        let w3: Vec<&RunSpec> = runs
            .iter()
            .filter(|r| matches!(r.point, Point::W3 { .. }))
            .collect();
        assert_eq!(
            w3.len(),
            11,
            "two rates times four timeouts and auto, and the control"
        );
        let (w3, control): (Vec<&RunSpec>, Vec<&RunSpec>) = w3.into_iter().partition(|r| {
            matches!(
                r.point,
                Point::W3 {
                    checkpoints: true,
                    ..
                }
            )
        });
        let [control] = control[..] else {
            panic!("one control run: {control:?}")
        };
        assert_eq!(
            control.point,
            Point::W3 {
                rate: 1_000_000,
                timeout_ms: 0.0,
                auto: false,
                checkpoints: false
            }
        );
        let cmd = joined(control);
        assert!(
            cmd.contains("--set execution.buffer-timeout=0ms")
                && !cmd.contains("checkpoint")
                && control.min_checkpoints.is_none(),
            "{cmd}"
        );
        for r in &w3 {
            let cmd = joined(r);
            assert!(
                cmd.contains("--set execution.checkpointing.interval=1000ms")
                    && cmd.contains("--set state.checkpoints.dir=out/work/w3-")
                    && cmd.contains("--warmup 5000ms --duration 20000ms"),
                "{cmd}"
            );
            // 25 s of run at one checkpoint a second.
            assert_eq!(r.min_checkpoints, Some(23));
        }
        let timeouts: Vec<String> = w3
            .iter()
            .map(|r| r.args[r.args.iter().position(|a| a == "--set").unwrap() + 1].clone())
            .collect();
        assert_eq!(
            timeouts[..5],
            [
                "execution.buffer-timeout=0ms",
                "execution.buffer-timeout=1ms",
                "execution.buffer-timeout=10ms",
                "execution.buffer-timeout=100ms",
                "execution.buffer-timeout.interval=auto",
            ]
        );
    }

    #[test]
    fn every_scale_covers_every_workload() {
        for scale in [Scale::Full, Scale::Quick, Scale::Tiny] {
            let runs = runs(scale, 3, Path::new("w"));
            let count = |f: fn(&Point) -> bool| runs.iter().filter(|r| f(&r.point)).count();
            assert_eq!(count(|p| matches!(p, Point::W1Workers(_))), 3);
            assert!(count(|p| matches!(p, Point::W1Keys(_))) >= 2);
            assert_eq!(count(|p| matches!(p, Point::W1Timeout(_))), 4);
            assert_eq!(count(|p| matches!(p, Point::W2)), 1);
            assert_eq!(count(|p| matches!(p, Point::W4(_))), 5);
            assert!(count(|p| matches!(p, Point::W5 { .. })) >= 2);
            assert!(count(|p| matches!(p, Point::Nexmark(_))) >= 1);
            for r in &runs {
                assert_eq!(r.args[0], "bench");
                // Checkpointing runs go to their own directory.
                if r.min_checkpoints.is_some() {
                    assert!(r.scratch.is_some(), "{}", joined(r));
                }
            }
        }
    }

    #[test]
    fn full_w5_includes_the_workload_as_written() {
        let runs = runs(Scale::Full, 2, Path::new("w"));
        assert!(runs.iter().any(|r| joined(r).contains(
            "bench w5 --n 100000000 --k 10000000 --workers 2 --dir w/w5-10000000 --set execution.checkpointing.interval=5000ms"
        )));
    }
}
