//! Fingerprints: what fits, and the message naming what differs.

use super::*;

fn fp(entries: &[(&str, &str)]) -> Fingerprint {
    Fingerprint::new(entries.iter().map(|(k, v)| (k.to_string(), v.to_string())))
}

#[test]
fn the_same_job_fits_and_a_new_operator_is_allowed() {
    let stored = fp(&[
        ("job", "w1"),
        ("operator", "src"),
        ("parameter keys", "100"),
    ]);
    assert_eq!(stored.mismatch(&stored), None);
    let grown = fp(&[
        ("job", "w1"),
        ("operator", "src"),
        ("operator", "new"),
        ("parameter keys", "100"),
    ]);
    assert_eq!(grown.mismatch(&stored), None);
}

#[test]
fn a_path_written_another_way_is_the_same() {
    let stored = fp(&[
        ("job", "w1"),
        ("parameter input-src", "/data/in"),
        ("output", "/data/out/"),
        ("output", "/data/b"),
    ]);
    let here = fp(&[
        ("job", "w1"),
        ("parameter input-src", "/data/./in/"),
        ("output", "/data/out"),
        ("output", "/data//b"),
    ]);
    assert_eq!(here.mismatch(&stored), None);
    let elsewhere = fp(&[
        ("job", "w1"),
        ("parameter input-src", "/data/in2"),
        ("output", "/data/out"),
        ("output", "/data/b"),
    ]);
    let what = elsewhere.mismatch(&stored).expect("another input");
    assert!(
        what.contains("parameter input-src: /data/in in the checkpoint, /data/in2 in this job"),
        "{what}"
    );
    // Not a path: as written.
    let other = fp(&[("job", "w1"), ("parameter keys", "100 ")]);
    let mine = fp(&[("job", "w1"), ("parameter keys", "100")]);
    assert!(other.mismatch(&mine).is_some());
}

#[test]
fn an_input_recorded_relative_by_older_weir_matches_its_absolute_path() {
    let stored = fp(&[("job", "w1"), ("parameter input-src", "data/in")]);
    let here = fp(&[("job", "w1"), ("parameter input-src", "/jobs/a/data/in")]);
    assert_eq!(here.mismatch(&stored), None);
    // Recorded absolute, another directory differs.
    let absolute = fp(&[("job", "w1"), ("parameter input-src", "/jobs/a/data/in")]);
    let elsewhere = fp(&[("job", "w1"), ("parameter input-src", "/jobs/b/data/in")]);
    assert!(elsewhere.mismatch(&absolute).is_some());
    // Another name, or a way out with `..`, is another directory.
    let other = fp(&[("job", "w1"), ("parameter input-src", "/jobs/a/data/in2")]);
    assert!(other.mismatch(&stored).is_some());
    let up = fp(&[("job", "w1"), ("parameter input-src", "../in")]);
    let up_here = fp(&[("job", "w1"), ("parameter input-src", "/jobs/in")]);
    assert!(up_here.mismatch(&up).is_some());
}

#[test]
fn every_difference_is_named() {
    let stored = fp(&[
        ("job", "w1"),
        ("operator", "gone"),
        ("operator", "src"),
        ("parameter keys", "1000"),
        ("output", "/data/a"),
    ]);
    let here = fp(&[
        ("job", "w1"),
        ("operator", "src"),
        ("parameter keys", "100"),
        ("parameter records", "60"),
    ]);
    let what = here.mismatch(&stored).expect("a mismatch");
    assert!(
        what.contains("operator `gone` of the checkpoint is not in this job"),
        "{what}"
    );
    assert!(
        what.contains("parameter keys: 1000 in the checkpoint, 100 in this job"),
        "{what}"
    );
    assert!(
        what.contains("parameter records: none in the checkpoint, 60 in this job"),
        "{what}"
    );
    assert!(
        what.contains("output: /data/a in the checkpoint, none in this job"),
        "{what}"
    );
}

#[test]
fn job_ids_are_32_hex_digits_and_differ() {
    let (a, b) = (new_job_id(), new_job_id());
    assert_eq!(a.len(), 32);
    assert!(a.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
    assert_ne!(a, b);
}

#[test]
fn missing_operators_are_named_apart_and_may_take_their_outputs_along() {
    let stored = fp(&[
        ("job", "w1"),
        ("operator", "sink"),
        ("operator", "src"),
        ("output", "/data/a"),
    ]);
    let without_sink = fp(&[("job", "w1"), ("operator", "src")]);
    assert_eq!(without_sink.missing_operators(&stored), vec!["sink"]);
    // The removed sink's output may go with it, only when state is skipped.
    assert_eq!(without_sink.mismatch_but_operators(&stored, true), None);
    assert!(without_sink
        .mismatch_but_operators(&stored, false)
        .is_some_and(|w| w.contains("output: /data/a in the checkpoint, none in this job")));
    // A new output is never the snapshot's.
    let elsewhere = fp(&[("job", "w1"), ("operator", "src"), ("output", "/data/b")]);
    assert!(elsewhere
        .mismatch_but_operators(&stored, true)
        .is_some_and(|w| w.contains("/data/b in this job")));
}
