//! The interval join against a nested loop over both sides, its bounds,
//! late records and the cleanup of buffered records.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::chain::control::ChainControl;
use crate::chain::testing::VecTail;
use crate::core::duration::ms;
use crate::core::subtask::SubtaskInfo;
use crate::exchange::decoder::CoInput;
use crate::operators::keyed::op::KeyedProcessOp;
use crate::operators::two_input::CoProcessAdapter;

/// `(key, timestamp, id)`.
type Rec = (u64, i64, u64);
type Ts = fn(&Rec) -> i64;
/// `(left id, right id, pair timestamp)`.
type Pair = (u64, u64, i64);

/// Emits the ids of each pair with its timestamp.
struct PairIds;

impl ProcessJoinFunction<Rec, Rec> for PairIds {
    type Out = Pair;
    fn process_element<C: Collector<Pair>>(
        &mut self,
        left: Rec,
        right: Rec,
        ctx: &JoinContext,
        out: &mut C,
    ) {
        assert_eq!(
            (ctx.left_timestamp(), ctx.right_timestamp()),
            (left.1, right.1)
        );
        out.collect((left.2, right.2, ctx.timestamp()));
    }
}

type Join = IntervalJoinOperator<u64, Rec, Rec, Ts, Ts, PairIds>;
type Op = KeyedProcessOp<CoProcessAdapter<Join>, fn(&CoInput<Rec, Rec>) -> u64, VecTail<Pair>>;

fn key_of(r: &CoInput<Rec, Rec>) -> u64 {
    match r {
        CoInput::First(l) => l.0,
        CoInput::Second(r) => r.0,
    }
}

/// The bound `ms` (signed) from the left record's timestamp.
fn offset(ms: i64) -> Offset {
    let span = Duration::from_millis(ms.unsigned_abs());
    if ms < 0 {
        Offset::before(span)
    } else {
        Offset::after(span)
    }
}

fn op(bounds: JoinBounds) -> Op {
    op_with(bounds, |j| j)
}

fn op_with(bounds: JoinBounds, configure: impl FnOnce(Join) -> Join) -> Op {
    let info = SubtaskInfo {
        index: 0,
        parallelism: 1,
        worker: 0,
        max_parallelism: 128,
    };
    let join = IntervalJoinOperator::new(
        bounds,
        (|r: &Rec| r.1) as Ts,
        (|r: &Rec| r.1) as Ts,
        PairIds,
    );
    KeyedProcessOp::new(
        CoProcessAdapter(configure(join)),
        key_of as fn(&CoInput<Rec, Rec>) -> u64,
        VecTail::default(),
        "join",
        &info,
        false,
    )
}

/// One step of a scenario.
#[derive(Clone, Copy, Debug)]
enum Step {
    Left(Rec),
    Right(Rec),
    Watermark(i64),
}

/// splitmix64, for reproducible scenarios from one seed.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Records of both sides over `keys` keys, out of order by up to `bound`
/// ms, with watermarks `max - bound - 1` as a bounded-out-of-orderness
/// strategy emits them, and about one record in ten late (strictly below
/// the watermark).
fn scenario(seed: u64, n: usize, keys: u64, bound: i64) -> Vec<Step> {
    let mut rng = seed;
    let mut next = move || {
        rng = mix(rng);
        rng
    };
    let (mut base, mut max, mut wm) = (0i64, i64::MIN, i64::MIN);
    let mut steps = Vec::new();
    for id in 0..n as u64 {
        base += (next() % 4) as i64;
        let late = wm != i64::MIN && next() % 10 == 0;
        let ts = if late {
            wm - 1 - (next() % 30) as i64
        } else {
            base - (next() % (bound as u64 + 1)) as i64
        };
        max = max.max(ts);
        let r = (next() % keys, ts, id);
        steps.push(if next() % 2 == 0 {
            Step::Left(r)
        } else {
            Step::Right(r)
        });
        if next() % 8 == 0 && max - bound - 1 > wm {
            wm = max - bound - 1;
            steps.push(Step::Watermark(wm));
        }
    }
    steps
}

/// The records that are not late when they arrive, per side.
fn kept(steps: &[Step]) -> (Vec<Rec>, Vec<Rec>) {
    let mut wm = i64::MIN;
    let (mut l, mut r) = (Vec::new(), Vec::new());
    for s in steps {
        match *s {
            Step::Watermark(w) => wm = w,
            Step::Left(x) if wm == i64::MIN || x.1 >= wm => l.push(x),
            Step::Right(x) if wm == i64::MIN || x.1 >= wm => r.push(x),
            _ => {}
        }
    }
    (l, r)
}

/// Every pair of kept records of one key within `lower..=upper`, by a
/// nested loop.
fn nested_loop(steps: &[Step], lower: i64, upper: i64) -> Vec<Pair> {
    let (left, right) = kept(steps);
    let mut out = Vec::new();
    for l in &left {
        for r in &right {
            if l.0 == r.0 && l.1 + lower <= r.1 && r.1 <= l.1 + upper {
                out.push((l.2, r.2, l.1.max(r.1)));
            }
        }
    }
    out.sort_unstable();
    out
}

fn run(steps: &[Step], bounds: JoinBounds, lower: i64, upper: i64) {
    let late_out: Rc<RefCell<Vec<Rec>>> = Rc::default();
    let (l_out, r_out) = (late_out.clone(), late_out.clone());
    let mut op = op_with(bounds, move |join| {
        join.with_left_late_output(Box::new(move |r| l_out.borrow_mut().push(r)))
            .with_right_late_output(Box::new(move |r| r_out.borrow_mut().push(r)))
    });
    let mut wm = i64::MIN;
    let (mut seen_l, mut seen_r) = (Vec::new(), Vec::new());
    for s in steps {
        match *s {
            Step::Left(r) => {
                if wm == i64::MIN || r.1 >= wm {
                    seen_l.push(r);
                }
                op.collect(CoInput::First(r));
            }
            Step::Right(r) => {
                if wm == i64::MIN || r.1 >= wm {
                    seen_r.push(r);
                }
                op.collect(CoInput::Second(r));
            }
            Step::Watermark(w) => {
                wm = w;
                op.on_watermark(w);
                // Exactly the records some later record may still match
                // stay buffered.
                let left = seen_l.iter().filter(|r| r.1 + upper.max(0) > w).count();
                let right = seen_r.iter().filter(|r| r.1 + (-lower).max(0) > w).count();
                assert_eq!(
                    op.function_mut().0.buffered(),
                    (left, right),
                    "buffered after watermark {w}"
                );
            }
        }
    }
    let (kl, kr) = kept(steps);
    let late = op.function_mut().0.late_records();
    let (nl, nr) = steps.iter().fold((0, 0), |(l, r), s| match s {
        Step::Left(_) => (l + 1, r),
        Step::Right(_) => (l, r + 1),
        Step::Watermark(_) => (l, r),
    });
    assert_eq!(late, ((nl - kl.len()) as u64, (nr - kr.len()) as u64));
    // The late records reached the side outputs, each once.
    let mut late_ids: Vec<u64> = late_out.borrow().iter().map(|r| r.2).collect();
    late_ids.sort_unstable();
    let kept_ids: std::collections::HashSet<u64> = kl.iter().chain(&kr).map(|r| r.2).collect();
    let want_late: Vec<u64> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Left(r) | Step::Right(r) if !kept_ids.contains(&r.2) => Some(r.2),
            _ => None,
        })
        .collect();
    assert_eq!(late_ids, want_late);
    op.end_input();
    assert_eq!(op.function_mut().0.buffered(), (0, 0), "all cleaned up");
    let mut got = std::mem::take(&mut op.output_mut().items);
    got.sort_unstable();
    assert_eq!(got, nested_loop(steps, lower, upper));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random out-of-order input on both sides, late records included,
    /// inclusive and exclusive bounds on either side of zero: the join is
    /// the nested loop over the records that were not late, and each
    /// watermark leaves exactly the still-joinable records buffered.
    #[test]
    fn the_join_equals_a_nested_loop_and_cleans_up_by_watermark(
        seed in any::<u64>(),
        lower in -40i64..20,
        width in 0i64..50,
        lower_exclusive in any::<bool>(),
        upper_exclusive in any::<bool>(),
        bound in 0i64..30,
    ) {
        let upper = lower + width;
        let steps = scenario(seed, 400, 5, bound);
        match JoinBounds::new(offset(lower), offset(upper), lower_exclusive, upper_exclusive) {
            Ok(bounds) => {
                let l = lower + i64::from(lower_exclusive);
                let u = upper - i64::from(upper_exclusive);
                run(&steps, bounds, l, u);
            }
            Err(e) => {
                let e = e.to_string();
                prop_assert!(width <= 1 && (lower_exclusive || upper_exclusive));
                prop_assert!(e.contains("leave no interval"), "{}", e);
            }
        }
    }
}

#[test]
fn exclusive_bounds_move_inward_and_an_empty_interval_is_an_error() {
    // Flink's between(Duration.ofMillis(-2), Duration.ofMillis(3)).
    let b = JoinBounds::new(Offset::before(ms(2)), ms(3), true, true).unwrap();
    assert!(!b.contains(10, 8));
    assert!(b.contains(10, 9));
    assert!(b.contains(10, 12));
    assert!(!b.contains(10, 13));
    let inclusive = JoinBounds::new(Offset::before(ms(2)), ms(3), false, false).unwrap();
    assert!(inclusive.contains(10, 8) && inclusive.contains(10, 13));
    let e = JoinBounds::new(ms(5), ms(5), false, true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("lower 5 ms is above upper 5 ms (exclusive)"),
        "{e}"
    );
    assert!(JoinBounds::new(ms(5), ms(5), false, false).is_ok());
    let below = JoinBounds::new(Offset::before(ms(3)), Offset::before(ms(5)), false, false);
    assert!(below.is_err(), "-3 ms is above -5 ms");
}

#[test]
fn a_record_before_any_watermark_is_never_late_and_the_same_timestamp_joins_many() {
    let mut op = op(JoinBounds::new(Duration::ZERO, Duration::ZERO, false, false).unwrap());
    for id in 0..3 {
        op.collect(CoInput::First((1, 100, id)));
    }
    op.collect(CoInput::Second((1, 100, 10)));
    op.collect(CoInput::Second((2, 100, 11)));
    op.on_watermark(100);
    // The timer at 100 fired: nothing at 100 can match any more.
    assert_eq!(op.function_mut().0.buffered(), (0, 0));
    op.collect(CoInput::Second((1, 99, 12)));
    assert_eq!(op.function_mut().0.late_records(), (0, 1));
    let mut got = std::mem::take(&mut op.output_mut().items);
    got.sort_unstable();
    assert_eq!(got, vec![(0, 10, 100), (1, 10, 100), (2, 10, 100)]);
}

#[test]
fn a_wide_interval_on_a_fixed_scenario_joins_many_pairs_and_drops_late_records() {
    let steps = scenario(7, 400, 5, 20);
    let (l, r) = kept(&steps);
    let records = steps
        .iter()
        .filter(|s| !matches!(s, Step::Watermark(_)))
        .count();
    assert!(l.len() + r.len() < records, "some records are late");
    let pairs = nested_loop(&steps, -30, 30);
    assert!(pairs.len() > 200, "{} pairs", pairs.len());
    run(
        &steps,
        JoinBounds::new(Offset::before(ms(30)), ms(30), false, false).unwrap(),
        -30,
        30,
    );
}

#[test]
#[should_panic(expected = "a right record has timestamp i64::MIN")]
fn a_record_without_a_timestamp_is_rejected_naming_its_side() {
    let mut op = op(JoinBounds::new(Duration::ZERO, ms(10), false, false).unwrap());
    op.collect(CoInput::Second((1, i64::MIN, 0)));
}
