//! Property test of retention with incremental checkpoints: over random
//! timelines of checkpoints (full, or deltas over the chain a writer can
//! reach), retention, failed checkpoints, restores of older checkpoints
//! (issue 17: newer ones move to `abandoned/`) and fresh starts, no
//! manifest left anywhere, in the root or in `abandoned/`, ever names a
//! segment that is gone; and retention still deletes what nothing needs.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use weir_state::snapshot::{
    BlockKind, Extent, Manifest, OperatorSnapshot, SnapshotKind, SubtaskSnapshot,
};
use weir_state::KeyGroupRange;

use super::super::{referenced_path, CheckpointStorage, ABANDONED_DIR, METADATA_FILE};

const SEGMENT: &str = "w000.seg";

/// One step of a directory's life.
#[derive(Clone, Debug)]
enum Step {
    /// A checkpoint completes; bits of the mask pick which checkpoints of
    /// the run's reachable chain (the previous checkpoint of the run and
    /// what it refers to) it refers to.
    Checkpoint(u16),
    /// A checkpoint fails (its directory stays incomplete) and the next
    /// start cleans it.
    Failed,
    /// Retention with `num-retained` = the value.
    Retain(usize),
    /// A new run restores the complete checkpoint at this index of the
    /// root's list (newest first), abandoning newer ones.
    Restore(usize),
    /// A fresh start: every checkpoint of the root is abandoned.
    Fresh,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => any::<u16>().prop_map(Step::Checkpoint),
        1 => Just(Step::Failed),
        4 => (1usize..4).prop_map(Step::Retain),
        1 => (0usize..4).prop_map(Step::Restore),
        1 => Just(Step::Fresh),
    ]
}

fn extent(segment: String) -> Extent {
    Extent {
        segment,
        offset: 0,
        length: 4096,
        key_groups: KeyGroupRange::new(0, 128),
        kind: BlockKind::KeyedTable,
        payload_crc32c: 0,
        state: "totals".into(),
    }
}

/// Writes checkpoint `id`, referring to checkpoints `refs`, complete.
fn write_checkpoint(s: &CheckpointStorage, id: u64, refs: &BTreeSet<u64>) {
    let dir = s.checkpoint_dir(id);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(SEGMENT), b"segment").unwrap();
    let mut extents = vec![extent(SEGMENT.into())];
    extents.extend(refs.iter().map(|r| extent(format!("../chk-{r}/{SEGMENT}"))));
    let manifest = Manifest {
        job_name: "retention".into(),
        checkpoint_id: id,
        timestamp_ms: 0,
        max_parallelism: 128,
        operators: vec![OperatorSnapshot {
            uid: "op".into(),
            parallelism: 1,
            subtasks: vec![SubtaskSnapshot {
                index: 0,
                key_groups: KeyGroupRange::new(0, 128),
                extents,
                inline_state: Vec::new(),
            }],
        }],
        lineage: None,
        kind: SnapshotKind::Checkpoint,
    };
    manifest.write(&dir, METADATA_FILE).unwrap();
}

/// Every manifest under `root` and `root/abandoned`, with its directory.
fn manifests(root: &Path) -> Vec<(PathBuf, Manifest)> {
    let mut out = Vec::new();
    for dir in [root.to_path_buf(), root.join(ABANDONED_DIR)] {
        for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let meta = e.path().join(METADATA_FILE);
            if meta.is_file() {
                out.push((e.path(), Manifest::read(&meta).unwrap()));
            }
        }
    }
    out
}

/// Where a restore of the checkpoint in `dir` finds `../chk-<id>/<seg>`.
fn resolves(dir: &Path, id: u64, segment: &str) -> bool {
    referenced_path(dir, id, segment).is_some_and(|p| p.is_file())
}

fn run(steps: &[Step], case: u64) {
    let root =
        std::env::temp_dir().join(format!("weir-retention-prop-{}-{case}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    let s = CheckpointStorage::open(&root).unwrap();
    // The run's newest checkpoint and what it refers to: what its writer's
    // chains can reach (a restored run starts without chains).
    let mut reachable: BTreeSet<u64> = BTreeSet::new();
    let mut restorable: BTreeSet<u64> = BTreeSet::new();
    for step in steps {
        match *step {
            Step::Checkpoint(mask) => {
                let id = s.max_id().unwrap() + 1;
                let refs: BTreeSet<u64> = reachable
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| mask & (1 << (i % 16)) != 0)
                    .map(|(_, &r)| r)
                    .collect();
                write_checkpoint(&s, id, &refs);
                restorable.insert(id);
                reachable = refs;
                reachable.insert(id);
            }
            Step::Failed => {
                let id = s.max_id().unwrap() + 1;
                fs::create_dir_all(s.checkpoint_dir(id)).unwrap();
                fs::write(s.checkpoint_dir(id).join(SEGMENT), b"partial").unwrap();
                s.clean_incomplete().unwrap();
                // A failed checkpoint breaks every chain.
                reachable.clear();
            }
            Step::Retain(n) => {
                s.retain(n).unwrap();
            }
            Step::Restore(i) => {
                let complete: Vec<u64> = s
                    .list()
                    .unwrap()
                    .iter()
                    .filter(|c| c.complete)
                    .map(|c| c.id)
                    .collect();
                if let Some(&from) = complete.get(i) {
                    s.start_timeline("run", Some(from), None).unwrap();
                    s.clean_incomplete().unwrap();
                    reachable.clear();
                }
            }
            Step::Fresh => {
                s.start_timeline("run", None, None).unwrap();
                reachable.clear();
            }
        }
        // What must stay restorable: every checkpoint written, until
        // retention drops it from the root's newest `num-retained` (one
        // abandoned before that stays restorable: a user may name it). A
        // checkpoint kept only for segments a newer one refers to is not
        // itself restorable: references are not followed transitively.
        if let Step::Retain(n) = *step {
            let newest: BTreeSet<u64> = s
                .list()
                .unwrap()
                .iter()
                .filter(|c| c.complete)
                .take(n)
                .map(|c| c.id)
                .collect();
            let aside: BTreeSet<u64> = manifests(&root)
                .iter()
                .filter(|(dir, _)| dir.starts_with(root.join(ABANDONED_DIR)))
                .map(|(_, m)| m.checkpoint_id)
                .collect();
            restorable.retain(|id| aside.contains(id) || newest.contains(id));
        }
        for (dir, m) in manifests(&root) {
            if !restorable.contains(&m.checkpoint_id) {
                continue;
            }
            for e in m.referenced_extents() {
                let (id, segment) = weir_state::snapshot::referenced_segment(&e.segment).unwrap();
                assert!(
                    resolves(&dir, id, segment),
                    "after {step:?}: {} refers to {} which is gone; steps {steps:?}",
                    dir.display(),
                    e.segment
                );
            }
        }
    }
    fs::remove_dir_all(&root).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn retention_never_deletes_a_referenced_segment(
        steps in proptest::collection::vec(step(), 1..40),
        case in any::<u64>(),
    ) {
        run(&steps, case);
    }
}

/// Retention still deletes: a long run of full checkpoints and deltas,
/// one retained, leaves the newest and its chain only.
#[test]
fn retention_keeps_exactly_the_newest_and_its_chain() {
    let root = std::env::temp_dir().join(format!("weir-retention-chain-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    let s = CheckpointStorage::open(&root).unwrap();
    // Full at 1, deltas 2..=4, full at 5, deltas 6..=7.
    let mut chain = BTreeSet::new();
    for id in 1..=7u64 {
        if id == 5 {
            chain.clear();
        }
        write_checkpoint(&s, id, &chain);
        chain.insert(id);
        s.retain(1).unwrap();
    }
    let left: Vec<u64> = s.list().unwrap().iter().map(|c| c.id).collect();
    assert_eq!(left, vec![7, 6, 5]);
    // Abandoned checkpoints keep what they refer to: go back to 6 after
    // the chain moved on, with 7 abandoned (it refers to 5 and 6).
    s.start_timeline("run", Some(6), None).unwrap();
    write_checkpoint(&s, 8, &BTreeSet::new());
    s.retain(1).unwrap();
    let left: Vec<u64> = s.list().unwrap().iter().map(|c| c.id).collect();
    assert_eq!(left, vec![8, 6, 5]);
    assert!(resolves(
        &root.join(ABANDONED_DIR).join("chk-7"),
        5,
        SEGMENT
    ));
    fs::remove_dir_all(&root).unwrap();
}
