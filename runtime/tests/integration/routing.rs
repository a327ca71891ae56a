//! Key-group routing: every record reaches exactly the keyed subtask that
//! owns its key's key group (Flink's key-group ranges), none is lost and
//! none is duplicated.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;
use weir_runtime::{
    Collector, KeyContext, KeyHash, KeyedProcessFunction, SequenceSource, SubtaskInfo,
};
use weir_state::{assign_to_key_group, KeyGroupRange};

use crate::{collect_into, options, run_ok, sorted, Collected};

/// Emits `(its subtask index, its parallelism, key, seq)` for every record.
struct WhereAmI<K, R> {
    info: SubtaskInfo,
    _types: std::marker::PhantomData<fn(K, R)>,
}

impl<K, R> WhereAmI<K, R> {
    fn new(info: &SubtaskInfo) -> Self {
        Self {
            info: *info,
            _types: std::marker::PhantomData,
        }
    }
}

impl<K, R> KeyedProcessFunction for WhereAmI<K, R>
where
    K: Clone + Eq + KeyHash + 'static,
    R: 'static,
    (R, u64): 'static,
{
    type Key = K;
    type In = (R, u64);
    type Out = (usize, usize, R, u64);

    fn process<C: Collector<Self::Out>>(
        &mut self,
        _ctx: &KeyContext<K>,
        (key, seq): (R, u64),
        out: &mut C,
    ) {
        out.collect((self.info.index, self.info.parallelism, key, seq));
    }
}

/// Checks the routing of `got` (from a job over `keys`, record `seq` having
/// key `keys[seq]`) for a keyed stage of `parallelism` subtasks.
fn check_routing<R: KeyHash + PartialEq + std::fmt::Debug>(
    keys: &[R],
    got: &[(usize, usize, R, u64)],
    max_parallelism: u32,
    parallelism: usize,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), keys.len(), "records processed vs emitted");
    for (index, p, key, seq) in got {
        prop_assert_eq!(*p, parallelism, "keyed subtask's parallelism");
        prop_assert!(*index < parallelism);
        prop_assert_eq!(key, &keys[*seq as usize], "record {} kept its key", seq);
        let group = assign_to_key_group(key, max_parallelism);
        let owned = KeyGroupRange::for_subtask(max_parallelism, parallelism as u32, *index as u32);
        prop_assert!(
            owned.contains(group),
            "key {:?} (key group {}) reached subtask {} owning {:?}",
            key,
            group,
            index,
            owned
        );
    }
    let seqs = sorted(got.iter().map(|r| r.3).collect::<Vec<_>>());
    let want: Vec<u64> = (0..keys.len() as u64).collect();
    prop_assert!(seqs == want, "every record exactly once");
    Ok(())
}

/// (max_parallelism, workers, keyed parallelism), both at most max_parallelism.
fn layout() -> impl Strategy<Value = (u32, usize, usize)> {
    prop_oneof![1u32..=4, 1u32..=300].prop_flat_map(|max_p| {
        let cap = max_p.min(4) as usize;
        (Just(max_p), 1..=cap, 1..=cap)
    })
}

/// Runs records `(keys[i], i)` from a source into the stream `$keyed`
/// makes of it (`$source` names the source's stream there), then into
/// `WhereAmI<$key, $rec>`, at `$layout`'s (max parallelism, workers,
/// keyed parallelism), and checks where each record went.
macro_rules! check_keyed_routing {
    (
        $name:expr, $keys:expr, $layout:expr,
        |$source:ident| $keyed:expr, $key:ty, $rec:ty
    ) => {{
        let (max_p, workers, parallelism): (u32, usize, usize) = $layout;
        let keys: Vec<$rec> = $keys;
        let n = keys.len() as u64;
        let source_keys = Arc::new(keys.clone());
        let got = Collected::new();
        let job = weir_runtime::JobGraph::new($name);
        let $source = job.source("keys", move |info: &SubtaskInfo| {
            let keys = source_keys.clone();
            SequenceSource::new(info, n, move |i| (keys[i as usize].clone(), i))
        });
        $keyed
            .process("where-am-i", |info: &SubtaskInfo| {
                WhereAmI::<$key, $rec>::new(info)
            })
            .parallelism(parallelism)
            .sink("collect", collect_into(&got));
        let mut opts = options(workers);
        opts.max_parallelism = max_p;
        run_ok(job, &opts);
        prop_assert_eq!(got.finishes(), parallelism);
        check_routing(&keys, &got.take_all(), max_p, parallelism)?;
    }};
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn u64_keys_reach_the_subtask_owning_their_key_group(
        layout in layout(),
        keys in prop::collection::vec(prop_oneof![0u64..16, any::<u64>()], 0..600),
    ) {
        check_keyed_routing!(
            "routing-u64", keys, layout,
            |s| s.key_by(|r: &(u64, u64)| r.0), u64, u64
        );
    }

    #[test]
    fn string_keys_reach_the_subtask_owning_their_key_group(
        layout in layout(),
        keys in prop::collection::vec(prop_oneof!["[a-c]{0,2}", "\\PC{0,12}"], 0..400),
    ) {
        // The key is the record's String interned as a `&'static str`: its
        // key hash is the String's (both hash their UTF-8 bytes), so it
        // routes exactly like it.
        let interned: HashMap<String, &'static str> = keys
            .iter()
            .map(|k| (k.clone(), &*Box::leak(k.clone().into_boxed_str())))
            .collect();
        let interned = Arc::new(interned);
        check_keyed_routing!(
            "routing-string", keys, layout,
            |s| s.key_by(move |r: &(String, u64)| {
                *interned.get(&r.0).expect("every key is interned")
            }),
            &'static str, String
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// `key_by_ref` hashes the borrowed key on the sending side: the same
    /// key groups as `key_by` of its clone.
    #[test]
    fn string_keys_selected_by_reference_reach_the_subtask_owning_their_key_group(
        layout in layout(),
        keys in prop::collection::vec(prop_oneof!["[a-c]{0,2}", "\\PC{0,12}"], 0..400),
    ) {
        check_keyed_routing!(
            "routing-string-ref", keys, layout,
            |s| s.key_by_ref(|r: &(String, u64)| &r.0), String, String
        );
    }

    /// `key_by_hash` routes by the hash it is given, which is the key's.
    #[test]
    fn pairs_routed_by_their_hash_reach_the_subtask_owning_their_key_group(
        layout in layout(),
        keys in prop::collection::vec((0u64..8, any::<u64>()), 0..600),
    ) {
        check_keyed_routing!(
            "routing-hash", keys, layout,
            |s| s.key_by_hash(
                |r: &((u64, u64), u64)| r.0,
                |r: &((u64, u64), u64)| r.0.key_hash(),
            ),
            (u64, u64), (u64, u64)
        );
    }
}

/// A `key_by_hash` whose hash is not the key's sends records to subtasks
/// that do not own their key group: debug builds stop there.
#[cfg(debug_assertions)]
#[test]
fn a_hash_that_is_not_the_keys_fails_in_debug_builds() {
    let job = weir_runtime::JobGraph::new("routing-wrong-hash");
    job.source("keys", |info: &SubtaskInfo| {
        SequenceSource::new(info, 2_000, |i| (i, i))
    })
    .key_by_hash(|r: &(u64, u64)| r.0, |r: &(u64, u64)| r.0)
    .process("where-am-i", |info: &SubtaskInfo| {
        WhereAmI::<u64, u64>::new(info)
    })
    .parallelism(2)
    .sink("collect", collect_into(&Collected::new()));
    match crate::run_job(job, &options(2)) {
        Err(e) => assert!(e.to_string().contains("does not own its key group"), "{e}"),
        Ok(_) => panic!("records routed by a wrong hash were accepted"),
    }
}

#[test]
fn keyed_stage_with_its_own_parallelism_behind_a_single_source() {
    let (n, max_p, keyed_parallelism) = (20_000u64, 128u32, 3usize);
    let keys: Vec<u64> = (0..n).map(|i| crate::splitmix64(i) % 1_000).collect();
    let source_keys = Arc::new(keys.clone());
    let source_infos = Arc::new(std::sync::Mutex::new(Vec::<SubtaskInfo>::new()));
    let seen_sources = source_infos.clone();
    let got = Collected::new();
    let job = weir_runtime::JobGraph::new("rescaled-keyed-stage");
    job.source("keys", move |info: &SubtaskInfo| {
        seen_sources.lock().unwrap().push(*info);
        let keys = source_keys.clone();
        SequenceSource::new(info, n, move |i| (keys[i as usize], i))
    })
    .parallelism(1)
    .key_by(|r: &(u64, u64)| r.0)
    .process("where-am-i", |info: &SubtaskInfo| {
        WhereAmI::<u64, u64>::new(info)
    })
    .parallelism(keyed_parallelism)
    .sink("collect", collect_into(&got));
    let mut opts = options(2);
    opts.max_parallelism = max_p;
    let result = run_ok(job, &opts);

    let sources = source_infos.lock().unwrap();
    assert_eq!(sources.len(), 1, "one source subtask");
    assert_eq!(sources[0].parallelism, 1);
    assert_eq!(
        got.finishes(),
        keyed_parallelism,
        "every keyed subtask ends"
    );
    let records = got.take_all();
    assert_eq!(result.metrics.total_sink_records(), n);
    let used: std::collections::BTreeSet<usize> = records.iter().map(|r| r.0).collect();
    assert_eq!(
        used.len(),
        keyed_parallelism,
        "1,000 keys spread over all 3 keyed subtasks"
    );
    check_routing(&keys, &records, max_p, keyed_parallelism).unwrap();
}
