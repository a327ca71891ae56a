//! The stateless links' runs ([`Collector::collect_many`]) against the
//! same records collected one by one, with a tail that runs out of room.

use proptest::prelude::*;

use crate::chain::control::{ChainControl, Collector};
use crate::chain::ops::{FilterOp, FlatMapOp, MapOp};
use crate::chain::testing::RoomTail;

/// map(+1) -> filter -> flat_map -> tail.
type Chain = MapOp<
    fn(u32) -> u32,
    FilterOp<fn(&u32) -> bool, FlatMapOp<fn(u32) -> Vec<u32>, RoomTail<u32>>>,
>;

/// `x + 1`, kept if odd or a multiple of 7, then `x % 4` copies of it (a
/// record may make none, one or several), into a tail with `room`.
fn chain(room: usize) -> Chain {
    MapOp {
        f: |x| x + 1,
        out: FilterOp {
            f: |x| x % 2 == 1 || x % 7 == 0,
            out: FlatMapOp {
                f: |x| vec![x; (x % 4) as usize],
                out: RoomTail::new(room),
            },
        },
    }
}

proptest! {
    /// Runs of any length against a tail with any room: every record taken
    /// is collected whole (a flat-map's output too, past the room), in
    /// order, exactly as one by one; a run stops short of its limit only
    /// when the records end or the chain is unavailable.
    #[test]
    fn runs_collect_what_one_by_one_collects(
        records in proptest::collection::vec(0u32..40, 0..200),
        limits in proptest::collection::vec(1usize..20, 1..50),
        room in 0usize..30,
    ) {
        let mut expected = chain(usize::MAX);
        for &r in &records {
            expected.collect(r);
        }
        let mut runs = chain(room);
        let mut it = records.iter().copied();
        let mut taken = 0;
        for (i, &limit) in limits.iter().cycle().take(400).enumerate() {
            if taken == records.len() {
                break;
            }
            let n = runs.collect_many(&mut it, limit);
            prop_assert!(n <= limit);
            taken += n;
            if n < limit {
                prop_assert!(
                    taken == records.len() || !runs.is_available(),
                    "run {i} stopped at {n} of {limit} while available with records left"
                );
            }
            // Room for more records in the next run (one at least).
            runs.out.out.out.room = room.max(1);
        }
        prop_assert_eq!(taken, records.len());
        prop_assert_eq!(&runs.out.out.out.items, &expected.out.out.out.items);
    }
}
