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
