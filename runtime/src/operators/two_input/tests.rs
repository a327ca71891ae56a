//! Two-input records: the decoder tells the inputs apart by channel, and
//! the adapter routes each to its function over shared keyed state.

use weir_net::Wire;

use super::*;
use crate::chain::testing::VecTail;
use crate::exchange::decoder::CoInputDecoder;
use crate::exchange::decoder::RecordDecoder;

fn encoded<T: Wire>(v: &T) -> Vec<u8> {
    let mut b = vec![0; v.encoded_len()];
    v.write(&mut b);
    b
}

#[test]
fn the_decoder_reads_each_channel_as_its_input_type() {
    let d = CoInputDecoder::<u64, (u32, u32)>::new(2);
    let a = encoded(&7u64);
    let b = encoded(&(1u32, 2u32));
    for c in 0..2 {
        assert_eq!(d.read(c, &a).unwrap(), (CoInput::First(7), 8));
    }
    for c in 2..5 {
        assert_eq!(d.read(c, &b).unwrap(), (CoInput::Second((1, 2)), 8));
    }
    // Four bytes are not a u64: the first input's channels say so.
    assert!(d.read(0, &a[..4]).is_err());
}

/// Counts first-input records and sums second-input values per key.
struct Tally {
    count: crate::state::value::KeyedValueState<u64, u64>,
    sum: crate::state::value::KeyedValueState<u64, u64>,
}

impl KeyedCoProcessFunction for Tally {
    type Key = u64;
    type In1 = u64;
    type In2 = (u64, u64);
    type Out = (u64, u64, u64);

    fn process_element1<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        _value: u64,
        out: &mut C,
    ) {
        let n = self.count.value_mut_or_insert_with(ctx, || 0);
        *n += 1;
        let n = *n;
        out.collect((*ctx.key(), n, self.sum.value(ctx).unwrap_or(0)));
    }

    fn process_element2<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (_, v): (u64, u64),
        out: &mut C,
    ) {
        let s = self.sum.value_mut_or_insert_with(ctx, || 0);
        *s += v;
        let s = *s;
        out.collect((*ctx.key(), self.count.value(ctx).unwrap_or(0), s));
    }
}

#[test]
fn the_adapter_routes_each_input_to_its_function_and_shares_the_keys_state() {
    let mut f = CoProcessAdapter(Tally {
        count: crate::state::value::KeyedValueState::new("count"),
        sum: crate::state::value::KeyedValueState::new("sum"),
    });
    let mut out = VecTail::default();
    let k1 = KeyContext::new(1u64);
    let k2 = KeyContext::new(2u64);
    f.process(&k1, CoInput::First(10), &mut out);
    f.process(&k1, CoInput::Second((1, 5)), &mut out);
    f.process(&k2, CoInput::Second((2, 7)), &mut out);
    f.process(&k1, CoInput::First(11), &mut out);
    assert_eq!(out.items, vec![(1, 1, 0), (1, 1, 5), (2, 0, 7), (1, 2, 5)]);
}
