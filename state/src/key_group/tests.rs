//! Tests of the stable key hash (golden vectors and independent reference
//! formulas), key group ranges and the assigner.

use super::*;

/// fmix64 written out independently of the crate's implementation.
fn reference_fmix(k: u64) -> u64 {
    let mut x = k;
    for (shift, mul) in [(33, 0xff51afd7ed558ccd_u64), (33, 0xc4ceb9fe1a85ec53)] {
        x = (x ^ (x >> shift)).wrapping_mul(mul);
    }
    x ^ (x >> 33)
}

/// The byte-string hash written out independently: words padded on the
/// right with zeros, folded from the length-and-seed start.
fn reference_bytes(bytes: &[u8]) -> u64 {
    let mul = 0x9e3779b97f4a7c15_u64;
    let mut padded = bytes.to_vec();
    while !padded.len().is_multiple_of(8) {
        padded.push(0);
    }
    let start = (bytes.len() as u64).wrapping_mul(mul) ^ 0x243f6a8885a308d3;
    let h = padded.chunks(8).fold(start, |h, w| {
        let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        let x = (h ^ w).wrapping_mul(mul);
        x.rotate_left(29)
    });
    reference_fmix(h)
}

#[test]
fn golden_literal_values() {
    // Computed once by an independent (Python) implementation. Changing
    // any of these breaks the snapshot format: do not "fix" the test. (The
    // byte-string values changed once, from FNV-1a to the word-wise hash,
    // in the release that first let keys that own memory be checkpointed:
    // no snapshot could hold state keyed by a string before.)
    assert_eq!(0u64.key_hash(), 0);
    assert_eq!(1u64.key_hash(), 0xb456_bcfc_34c2_cb2c);
    assert_eq!(42u32.key_hash(), 0x8108_7960_8e42_59cc);
    assert_eq!((-1i64).key_hash(), 0x64b5_720b_4b82_5f21);
    assert_eq!(0xdead_beef_u64.key_hash(), 0xd24b_d59f_862a_1dac);
    assert_eq!("".key_hash(), 0x7acd_bb98_b134_4213);
    assert_eq!("a".key_hash(), 0x27a0_2e16_8da2_1aa0);
    assert_eq!("hello".key_hash(), 0x150b_2024_17c5_89b3);
    assert_eq!(b"weir".key_hash(), 0x4c10_f484_3ad3_a2ff);
    assert_eq!((1u64, 2u64).key_hash(), 0xa21d_f90d_e423_8c09);
    assert_eq!((7u32, "ab").key_hash(), 0x0c53_517a_909f_00b9);
    assert_eq!(assign_to_key_group("hello", 128), 51);
    assert_eq!(assign_to_key_group(&42u64, 128), 76);
    assert_eq!(assign_to_key_group(&42u64, 100), 40);
}

#[test]
fn integers_match_reference_formula() {
    for v in [
        0u64,
        1,
        2,
        3,
        255,
        256,
        65535,
        1 << 32,
        u64::MAX - 1,
        u64::MAX,
    ] {
        assert_eq!(v.key_hash(), reference_fmix(v));
    }
    for v in [0u8, 1, 127, 128, 255] {
        assert_eq!(v.key_hash(), reference_fmix(v as u64));
    }
    for v in [0u16, 1, 0x8000, u16::MAX] {
        assert_eq!(v.key_hash(), reference_fmix(v as u64));
    }
    assert_eq!(7usize.key_hash(), 7u64.key_hash());
    assert_eq!(u32::MAX.key_hash(), reference_fmix(0xffff_ffff));
}

#[test]
fn signed_integers_are_sign_extended() {
    assert_eq!((-1i8).key_hash(), u64::MAX.key_hash());
    assert_eq!((-1i16).key_hash(), u64::MAX.key_hash());
    assert_eq!((-1i32).key_hash(), u64::MAX.key_hash());
    assert_eq!((-1isize).key_hash(), u64::MAX.key_hash());
    assert_eq!(i64::MIN.key_hash(), reference_fmix(1 << 63));
    assert_eq!((-5i32).key_hash(), (-5i64).key_hash());
    assert_eq!(5i8.key_hash(), 5u64.key_hash());
}

#[test]
fn bool_and_char() {
    assert_eq!(false.key_hash(), reference_fmix(0));
    assert_eq!(true.key_hash(), reference_fmix(1));
    assert_eq!('A'.key_hash(), reference_fmix(65));
    assert_eq!('€'.key_hash(), reference_fmix(0x20ac));
}

#[test]
fn byte_strings_match_reference_formula() {
    for s in [
        "",
        "a",
        "key-17",
        "exactly8",
        "sixteen bytes!!!",
        "a somewhat longer key with spaces",
        "ünïcödé",
    ] {
        let expected = reference_bytes(s.as_bytes());
        assert_eq!(s.key_hash(), expected);
        assert_eq!(s.to_string().key_hash(), expected);
        assert_eq!(s.as_bytes().key_hash(), expected);
        assert_eq!(s.as_bytes().to_vec().key_hash(), expected);
        assert_eq!((&s).key_hash(), expected);
        assert_eq!(Box::<str>::from(s).key_hash(), expected);
        assert_eq!(compact_str::CompactString::new(s).key_hash(), expected);
    }
    // Zero padding does not make a trailing NUL invisible: the length is
    // in the seed.
    assert_ne!("a".key_hash(), "a\0".key_hash());
}

/// Every length from 0 to 40 and every position of the last partial
/// word's bytes: the fixed-width loads of the hash's tail give the padded
/// word of the definition.
#[test]
fn byte_strings_of_every_length_match_reference_formula() {
    let text: Vec<u8> = (0u8..40)
        .map(|i| i.wrapping_mul(37).wrapping_add(1))
        .collect();
    for len in 0..=text.len() {
        for start in 0..=text.len() - len {
            let s = &text[start..start + len];
            assert_eq!(s.key_hash(), reference_bytes(s), "{s:?}");
        }
    }
}

/// The hash of a text's words with other bytes past its end: the hash of
/// its bytes, at every length that fits three words.
#[test]
fn hash_of_words_is_the_hash_of_the_bytes_they_begin_with() {
    let noise: Vec<u8> = (0u8..24).map(|i| i.wrapping_mul(91) | 0x80).collect();
    let text: Vec<u8> = (0u8..24).map(|i| b'a' + i).collect();
    for n in 0..=24 {
        let mut bytes = noise.clone();
        bytes[..n].copy_from_slice(&text[..n]);
        let word = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
        let words = [word(0), word(1), word(2)];
        assert_eq!(hash_words(words, n), reference_bytes(&text[..n]), "{n}");
    }
}

/// `CompactString`s of every length from 0 to 40, inline and on the heap,
/// also with other bytes left past the text by a truncation: the same hash
/// as their bytes', and equal as keys exactly when their texts are equal.
#[test]
fn compact_strings_of_every_length_hash_and_compare_as_their_bytes() {
    use compact_str::CompactString;
    let text: String = (0u8..40).map(|i| char::from(b'!' + i)).collect();
    let mut keys = Vec::new();
    for len in 0..=text.len() {
        let s = &text[..len];
        let mut heap = CompactString::with_capacity(64);
        heap.push_str(s);
        assert!(heap.is_heap_allocated());
        keys.push(CompactString::new(s));
        keys.push(heap);
        keys.push(CompactString::const_new(String::leak(s.to_string())));
        if len <= 23 {
            let mut truncated = CompactString::new(&text[..23]);
            truncated.truncate(len);
            keys.push(truncated);
        }
    }
    for k in &keys {
        assert_eq!(k.key_hash(), reference_bytes(k.as_bytes()), "{k:?}");
    }
    for a in &keys {
        for b in &keys {
            assert_eq!(a.key_eq(b), a == b, "{a:?} {b:?}");
        }
    }
}

/// Short string ids spread evenly over key groups (within 15% of the
/// mean per group for 100,000 ids over 128 groups).
#[test]
fn string_ids_spread_over_key_groups() {
    let mut per_group = [0u32; 128];
    for i in 0..100_000 {
        per_group[assign_to_key_group(&format!("user-{i}"), 128) as usize] += 1;
    }
    let mean = 100_000.0 / 128.0;
    for (g, &n) in per_group.iter().enumerate() {
        assert!((f64::from(n) - mean).abs() < 0.15 * mean, "group {g}: {n}");
    }
}

#[test]
fn tuples_match_reference_formula_and_are_ordered() {
    let (a, b, c) = (3u64, "x", -2i32);
    let ab = reference_fmix(a.key_hash() ^ b.key_hash().rotate_left(32));
    assert_eq!((a, b).key_hash(), ab);
    assert_eq!(
        (a, b, c).key_hash(),
        reference_fmix(ab ^ c.key_hash().rotate_left(32))
    );
    assert_ne!((1u64, 2u64).key_hash(), (2u64, 1u64).key_hash());
    assert_ne!((5u64, 5u64).key_hash(), 0);
}

#[test]
fn range_basics() {
    let r = KeyGroupRange::new(3, 7);
    assert_eq!((r.start(), r.end(), r.len()), (3, 7, 4));
    assert!(!r.is_empty());
    assert!(r.contains(3) && r.contains(6));
    assert!(!r.contains(2) && !r.contains(7));
    assert_eq!(r.iter().collect::<Vec<_>>(), vec![3, 4, 5, 6]);
    assert_eq!(r.to_string(), "[3, 7)");
    assert!(KeyGroupRange::new(5, 5).is_empty());
    assert_eq!(KeyGroupRange::for_subtask(128, 2, 0).to_string(), "[0, 64)");
}

#[test]
#[should_panic(expected = "start 4 > end 3")]
fn range_rejects_inverted_bounds() {
    let _ = KeyGroupRange::new(4, 3);
}

#[test]
fn flink_reference_ranges() {
    // maxP 10, P 3: Flink assigns [0,4), [4,7), [7,10).
    let ranges: Vec<_> = (0..3)
        .map(|i| KeyGroupRange::for_subtask(10, 3, i))
        .collect();
    assert_eq!(
        ranges,
        vec![
            KeyGroupRange::new(0, 4),
            KeyGroupRange::new(4, 7),
            KeyGroupRange::new(7, 10)
        ]
    );
    assert_eq!(subtask_for_key_group(10, 3, 3), 0);
    assert_eq!(subtask_for_key_group(10, 3, 4), 1);
    assert_eq!(subtask_for_key_group(10, 3, 9), 2);
    assert_eq!(
        KeyGroupRange::for_subtask(128, 3, 1),
        KeyGroupRange::new(43, 86)
    );
    assert_eq!(
        KeyGroupRange::for_subtask(32768, 32768, 32767),
        KeyGroupRange::new(32767, 32768)
    );
}

#[test]
#[should_panic(expected = "parallelism must be in 1..=4")]
fn parallelism_above_max_parallelism_panics() {
    let _ = KeyGroupRange::for_subtask(4, 5, 0);
}

#[test]
#[should_panic(expected = "max parallelism must be in 1..=32768")]
fn max_parallelism_above_upper_bound_panics() {
    let _ = KeyGroupAssigner::new(UPPER_BOUND_MAX_PARALLELISM + 1, 1);
}

#[test]
#[should_panic(expected = "subtask index 2 out of range")]
fn subtask_index_out_of_range_panics() {
    let _ = KeyGroupRange::for_subtask(8, 2, 2);
}

#[test]
fn assigner_power_of_two_and_not() {
    for (m, p) in [(128, 3), (100, 7), (1, 1), (32768, 512)] {
        let a = KeyGroupAssigner::new(m, p);
        assert_eq!(a.mask.is_some(), m.is_power_of_two());
        for h in [0u64, 1, 99, 12345, u64::MAX, 0x8000_0000_0000_0001] {
            let kg = a.key_group(h);
            assert_eq!(kg, key_group_for_hash(h, m));
            assert_eq!(a.subtask(kg), subtask_for_key_group(m, p, kg));
            assert_eq!(a.subtask_for_hash(h), a.subtask(kg));
            assert!(a.range_for_subtask(a.subtask(kg)).contains(kg));
        }
    }
}

#[test]
fn the_masked_assigner_routes_every_hash_like_the_assigner() {
    for (m, p) in [(128, 2), (128, 3), (1, 1), (2, 2), (32768, 7), (4096, 4096)] {
        let a = KeyGroupAssigner::new(m, p);
        let masked = a.masked().expect("a power-of-two max parallelism");
        let mut h = 0x1234_5678_9abc_def0u64;
        for i in 0..10_000u64 {
            h = fmix64(h ^ i);
            assert_eq!(
                masked.subtask_for_hash(h),
                a.subtask_for_hash(h),
                "m {m} p {p} hash {h:#x}"
            );
        }
        for h in [0, u64::MAX, u64::from(m) - 1, u64::from(m)] {
            assert_eq!(
                masked.subtask_for_hash(h),
                a.subtask_for_hash(h),
                "m {m} p {p} hash {h:#x}"
            );
        }
    }
    for m in [100, 3, 32767] {
        assert!(KeyGroupAssigner::new(m, 1).masked().is_none(), "m {m}");
    }
}
