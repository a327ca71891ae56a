//! Incremental checkpoints (`execution.checkpointing.incremental`) with
//! the real `weir` binary: W1 writes its value table as deltas over a
//! chain of earlier checkpoints, is SIGKILLed, and restored from the chain
//! (at the same and at other `--workers`); its committed output must hold
//! every result exactly once, as an uninterrupted run's. A corrupt block
//! of a referenced (older) checkpoint is refused, naming the file, with
//! nothing changed; retention (`num-retained=1`) never deletes a
//! checkpoint a kept one refers to.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod support;
use support::*;

/// W1 with the transactional file sink, incremental checkpoints every
/// 100 ms and one retained checkpoint. `k` keys at [`RATE`] records/s fill
/// each of two subtasks' tables to ~95,000 of ~131,000 slots (they stop
/// growing, which starts a new chain, after about 7 s) and change ~1,000
/// slots of each per 100 ms. A delta is taken while it is estimated at
/// most 1/4 of the full write, here ~19,800 changed slots: on a
/// loaded machine (CI runs tests side by side on two cores) a checkpoint
/// takes up to ~0.8 s and the next freeze comes that much later, and the
/// slots changed meanwhile must still stay under it.
/// Records per second, over both subtasks.
const RATE: u64 = 20_000;

struct W1 {
    ck: PathBuf,
    out: PathBuf,
    n: u64,
    k: u64,
    retained: usize,
}

impl W1 {
    fn new(s: &Scratch) -> Self {
        Self {
            ck: s.join("ck"),
            out: s.join("out"),
            n: 600_000,
            k: 200_000,
            retained: 1,
        }
    }

    fn cmd(&self, workers: usize) -> Command {
        let mut c = Command::new(WEIR);
        c.args(["bench", "w1", "--quiet", "--workers", &workers.to_string()])
            .args(["--n", &self.n.to_string(), "--k", &self.k.to_string()])
            .args(["--rate", &RATE.to_string()])
            .arg("--output")
            .arg(&self.out)
            .arg("--set")
            .arg(format!("state.checkpoints.dir={}", self.ck.display()))
            .args(["--set", "execution.checkpointing.interval=100ms"])
            .args(["--set", "execution.checkpointing.incremental=true"])
            .arg("--set")
            .arg(format!("state.checkpoints.num-retained={}", self.retained))
            .args(["--set", "weir.worker.pin-cores=false"])
            .env("RUST_BACKTRACE", "1")
            // The restore says which path it took.
            .env("RUST_LOG", "weir::checkpoint=debug")
            .env_remove("WEIR_FAILPOINTS");
        c
    }
}

/// `weir checkpoints describe --json` of checkpoint directory `dir`;
/// `None` if it failed (retention may have deleted it meanwhile).
fn try_describe(dir: &Path) -> Option<Value> {
    let out = Command::new(WEIR)
        .args(["checkpoints", "describe", "--json"])
        .arg(dir)
        .output()
        .expect("run weir checkpoints describe");
    serde_json::from_slice(&out.stdout).ok()
}

fn describe(dir: &Path) -> Value {
    try_describe(dir).unwrap_or_else(|| panic!("describe {}", dir.display()))
}

/// The checkpoints checkpoint `id` of `ck` refers to (its chain).
fn try_references(ck: &Path, id: u64) -> Option<Vec<u64>> {
    let d = try_describe(&ck.join(format!("chk-{id}")))?;
    Some(
        d["incremental"]["references"]
            .as_array()?
            .iter()
            .filter_map(Value::as_u64)
            .collect(),
    )
}

fn references(ck: &Path, id: u64) -> Vec<u64> {
    try_references(ck, id).unwrap_or_else(|| panic!("describe checkpoint {id}"))
}

/// Waits until `run` completed a checkpoint newer than `after` that refers
/// to at least `refs` earlier ones; returns its id.
fn wait_for_chain(run: &mut Proc, ck: &Path, after: u64, refs: usize) -> u64 {
    let mut found = 0;
    let running = run.wait_until(&format!("a delta over {refs} checkpoints"), || {
        let Some(&latest) = complete_checkpoints(ck).last() else {
            return false;
        };
        // The newest may be deleted under us; ask again then.
        if latest > after && try_references(ck, latest).is_some_and(|r| r.len() >= refs) {
            found = latest;
            return true;
        }
        false
    });
    assert!(running, "`{}` finished before it wrote deltas", run.label);
    found
}

/// Every file under `dir` with its contents (lock files left out).
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, into: &mut BTreeMap<String, Vec<u8>>) {
        for e in fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = e.path();
            if e.file_name() == ".weir-lock" {
                continue;
            }
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if path.is_dir() {
                into.insert(format!("{rel}/"), Vec::new());
                walk(root, &path, into);
            } else {
                into.insert(rel, fs::read(&path).unwrap_or_default());
            }
        }
    }
    let mut all = BTreeMap::new();
    walk(dir, dir, &mut all);
    all
}

/// The judged scenario: W1 killed after several delta checkpoints and
/// restored from the chain at 2, then 1, then 3 workers (each run killed
/// after deltas of its own, the last finishing). Every restore takes the
/// chain path, retention keeps every referenced checkpoint (and deletes
/// the rest), and the committed output holds every result exactly once.
#[test]
fn killed_and_restored_from_incremental_chains_commits_every_result_once() {
    let s = Scratch::new("incremental", "chains");
    let job = W1::new(&s);
    let plan = [2usize, 2, 1, 3];
    let mut restoring_delta = false;
    let mut chain_restores = Vec::new();
    for (i, &workers) in plan.iter().enumerate() {
        let last = i + 1 == plan.len();
        let mut cmd = job.cmd(workers);
        if i > 0 {
            cmd.args(["--restore", "latest"]);
        }
        let label = format!("run{i}-workers{workers}");
        let mut run = Proc::spawn(&s, &label, cmd);
        if last {
            let status = run.wait(FINISH);
            assert!(status.success(), "`{label}`: {status}\n{}", run.stderr());
        } else {
            let before = complete_checkpoints(&job.ck).last().copied().unwrap_or(0);
            // The first run builds long chains (past a compaction), the
            // others a delta of their own.
            let (refs, min_id) = if i == 0 { (3, 25) } else { (1, 0) };
            let mut at = wait_for_chain(&mut run, &job.ck, before, refs);
            while at < min_id {
                at = wait_for_chain(&mut run, &job.ck, at, refs);
            }
            // Killed at once: the checkpoint `--restore latest` takes is
            // then (almost always) this delta.
            assert!(run.kill(), "`{label}` finished before it could be killed");
        }
        let err = run.stderr();
        assert!(!err.contains("panicked"), "`{label}` panicked\n{err}");
        if i > 0 {
            let chain = err.contains("restored state from incremental chains");
            assert_eq!(
                chain, restoring_delta,
                "`{label}` restored from a chain iff its checkpoint was a delta\n{err}"
            );
            if chain {
                chain_restores.push(workers);
            }
        }
        if !last {
            let newest = *complete_checkpoints(&job.ck).last().unwrap();
            restoring_delta = !references(&job.ck, newest).is_empty();
        }
        if i == 0 {
            // Retention: every checkpoint the newest refers to is there
            // (and verifies), and the first checkpoints, which no chain
            // refers to any more, are gone.
            let ids = complete_checkpoints(&job.ck);
            let newest = *ids.last().unwrap();
            let refs = references(&job.ck, newest);
            for r in &refs {
                assert!(
                    ids.contains(r),
                    "checkpoint {r} of {newest}'s chain deleted: {ids:?}"
                );
            }
            assert!(!ids.contains(&1), "retention deleted nothing: {ids:?}");
            let verify = Command::new(WEIR)
                .args(["checkpoints", "verify"])
                .arg(job.ck.join(format!("chk-{newest}")))
                .output()
                .unwrap();
            assert!(
                verify.status.success(),
                "{}",
                String::from_utf8_lossy(&verify.stderr)
            );
        }
    }
    // A checkpoint may complete between the check and the kill (rarely):
    // most restores, and one at another parallelism, must be of chains.
    assert!(
        chain_restores.len() >= 2 && chain_restores.iter().any(|&w| w != 2),
        "restores from chains at workers {chain_restores:?}"
    );
    assert_w1_exactly_once(
        &job.out,
        job.n,
        job.k,
        "after chains restored at 2 -> 2 -> 1 -> 3 workers",
    );
}

/// A corrupt block of a checkpoint an incremental one refers to: the
/// restore of the newer one is refused (exit 2) naming the damaged file
/// of the older checkpoint, and changes nothing in either directory.
#[test]
fn a_corrupt_block_of_a_referenced_checkpoint_is_refused_naming_the_file() {
    let s = Scratch::new("incremental", "corrupt");
    // Every checkpoint kept: the one picked stays while the run goes on.
    let job = W1 {
        retained: 1000,
        ..W1::new(&s)
    };
    let mut run = Proc::spawn(&s, "first", job.cmd(2));
    let newest = wait_for_chain(&mut run, &job.ck, 0, 2);
    assert!(run.kill(), "the run finished before it could be killed");
    let refs = references(&job.ck, newest);
    let d = describe(&job.ck.join(format!("chk-{newest}")));
    assert_eq!(d["incremental"]["full"], false, "{d}");
    // The oldest checkpoint of the chain holds its full table blocks: the
    // bulk of its segments.
    let older = refs[0];
    // A segment of it the newest names (the manifest holds the names as
    // plain bytes).
    let manifest = fs::read(job.ck.join(format!("chk-{newest}/_metadata"))).unwrap();
    let prefix = format!("../chk-{older}/");
    let at = manifest
        .windows(prefix.len())
        .position(|w| w == prefix.as_bytes())
        .expect("the manifest names the referenced segment");
    let name = String::from_utf8_lossy(&manifest[at + prefix.len()..at + prefix.len() + 8]);
    assert!(name.ends_with(".seg"), "{name}");
    let seg = job.ck.join(format!("chk-{older}")).join(&*name);
    let len = fs::metadata(&seg).unwrap().len() as usize;
    let mut bytes = fs::read(&seg).unwrap();
    bytes[len / 2] ^= 0x01;
    fs::write(&seg, bytes).unwrap();
    let (ck_before, out_before) = (tree(&job.ck), tree(&job.out));

    let mut cmd = job.cmd(2);
    cmd.arg("--restore")
        .arg(job.ck.join(format!("chk-{newest}")));
    let mut refused = Proc::spawn(&s, "restore-corrupt", cmd);
    let status = refused.wait(FINISH);
    let err = refused.stderr();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let named = format!("chk-{older}/{name}");
    assert!(err.contains(&named), "the error names {named}\n{err}");
    assert!(
        tree(&job.ck) == ck_before,
        "the checkpoint directory changed"
    );
    assert!(tree(&job.out) == out_before, "the output directory changed");

    // The inspector says the same.
    let verify = Command::new(WEIR)
        .args(["checkpoints", "verify"])
        .arg(job.ck.join(format!("chk-{newest}")))
        .output()
        .unwrap();
    let verr = String::from_utf8_lossy(&verify.stderr).into_owned()
        + &String::from_utf8_lossy(&verify.stdout);
    assert_eq!(verify.status.code(), Some(2), "{verr}");
    assert!(verr.contains(&named), "verify names {named}\n{verr}");
}
