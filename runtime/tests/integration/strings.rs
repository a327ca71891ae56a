//! String records through the key_by exchange, keyed by their `String`
//! (no interning: keyed state holds the key itself).

use std::collections::HashMap;

use weir_runtime::{
    Collector, JobGraph, KeyContext, KeyedProcessFunction, KeyedValueState, SequenceSource,
    SubtaskInfo,
};

use crate::{collect_into, options, run_ok, splitmix64, Collected};

/// The user name of event `i`: varied lengths, some non-ASCII, one empty.
fn user(i: u64) -> String {
    match splitmix64(i) % 300 {
        0 => String::new(),
        u if u % 3 == 0 => format!("user-{u}"),
        u if u % 3 == 1 => format!("Zürich-ünïcødé-{u}-{}", "x".repeat((u % 40) as usize)),
        u => format!("{u}"),
    }
}

fn all_users() -> Vec<String> {
    let mut users: Vec<String> = (0..10_000).map(user).collect();
    users.sort();
    users.dedup();
    users
}

/// Per user: events and a wrapping sum of the amounts.
struct PerUser {
    totals: KeyedValueState<String, (u64, u64)>,
}

impl KeyedProcessFunction for PerUser {
    type Key = String;
    type In = (String, u64);
    type Out = (String, u64, u64);

    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<String>,
        (name, amount): (String, u64),
        out: &mut C,
    ) {
        assert_eq!(ctx.key(), &name);
        let t = self.totals.value_mut_or_insert_with(ctx, || (0, 0));
        t.0 += 1;
        t.1 = t.1.wrapping_add(amount);
        let (count, sum) = *t;
        out.collect((name, count, sum));
    }
}

#[test]
fn string_keyed_counts_match_a_hashmap() {
    let n = 100_000u64;
    assert!(all_users().len() > 250, "varied users");
    let mut want: HashMap<String, (u64, u64)> = HashMap::new();
    for i in 0..n {
        let t = want.entry(user(i % 10_000)).or_default();
        t.0 += 1;
        t.1 = t.1.wrapping_add(splitmix64(i ^ 0xABCD));
    }

    for workers in [1, 2, 4] {
        let got = Collected::new();
        let job = JobGraph::new("string-keys");
        job.source("events", move |info: &SubtaskInfo| {
            SequenceSource::new(info, n, |i| (user(i % 10_000), splitmix64(i ^ 0xABCD)))
        })
        .key_by(|r: &(String, u64)| r.0.clone())
        .process("per-user", |_: &SubtaskInfo| PerUser {
            totals: KeyedValueState::new("per-user"),
        })
        .sink("collect", collect_into(&got));
        let result = run_ok(job, &options(workers));
        assert_eq!(result.metrics.total_sink_records(), n);

        // The last totals each sink subtask saw per user; a user must not
        // show up on two subtasks.
        let mut last: HashMap<String, (u64, u64)> = HashMap::new();
        let mut owner: HashMap<String, usize> = HashMap::new();
        for (info, records) in got.take_parts() {
            for (name, count, sum) in records {
                let previous_owner = *owner.entry(name.clone()).or_insert(info.index);
                assert_eq!(
                    previous_owner, info.index,
                    "user {name:?} on two subtasks ({workers} workers)"
                );
                last.insert(name, (count, sum));
            }
        }
        assert_eq!(last.len(), want.len(), "users seen ({workers} workers)");
        for (name, totals) in &want {
            assert_eq!(
                last.get(name),
                Some(totals),
                "totals of {name:?} ({workers} workers)"
            );
        }
    }
}
