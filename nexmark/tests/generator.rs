//! The generated stream against the Nexmark suite's rules: the mix of
//! kinds, consecutive ids, references near the latest person and auction,
//! the hot auction's share of bids, event-time spacing, value ranges, and
//! that event `n` is the same however the numbers are split.

use std::collections::HashMap;

use weir_nexmark::{
    Auction, Bid, Event, EventKind, Fields, Generator, GeneratorConfig, Person, DEFAULT_BASE_TIME,
    FIRST_AUCTION_ID, FIRST_PERSON_ID,
};

const N: u64 = 100_000;

fn generator(config: GeneratorConfig) -> Generator {
    Generator::new(config).expect("a valid config")
}

fn default_events(n: u64) -> Vec<Event> {
    generator(GeneratorConfig::default()).events(0..n).collect()
}

#[test]
fn every_round_of_fifty_is_one_person_three_auctions_and_46_bids() {
    let events = default_events(N);
    for (round, chunk) in events.chunks(50).enumerate() {
        let kinds: Vec<EventKind> = chunk.iter().map(Event::kind).collect();
        assert_eq!(kinds[0], EventKind::Person, "round {round}");
        assert!(kinds[1..4].iter().all(|k| *k == EventKind::Auction));
        assert!(kinds[4..].iter().all(|k| *k == EventKind::Bid));
    }
    let mut counts = HashMap::new();
    for e in &events {
        *counts.entry(e.kind()).or_insert(0u64) += 1;
    }
    assert_eq!(counts[&EventKind::Person], N / 50);
    assert_eq!(counts[&EventKind::Auction], 3 * N / 50);
    assert_eq!(counts[&EventKind::Bid], 46 * N / 50);
}

#[test]
fn other_proportions_are_kept_too() {
    let config = GeneratorConfig {
        person_proportion: 2,
        auction_proportion: 5,
        bid_proportion: 3,
        ..GeneratorConfig::default()
    };
    let g = generator(config);
    let kinds: Vec<EventKind> = g.events(0..10_000).map(|e| e.kind()).collect();
    for chunk in kinds.chunks(10) {
        assert_eq!(chunk.iter().filter(|k| **k == EventKind::Person).count(), 2);
        assert_eq!(
            chunk.iter().filter(|k| **k == EventKind::Auction).count(),
            5
        );
        assert_eq!(chunk.iter().filter(|k| **k == EventKind::Bid).count(), 3);
    }
}

#[test]
fn person_and_auction_ids_are_consecutive_from_1000() {
    let mut next_person = FIRST_PERSON_ID;
    let mut next_auction = FIRST_AUCTION_ID;
    for e in default_events(N) {
        match e {
            Event::Person(p) => {
                assert_eq!(p.id, next_person);
                next_person += 1;
            }
            Event::Auction(a) => {
                assert_eq!(a.id, next_auction);
                next_auction += 1;
            }
            Event::Bid(_) => {}
        }
    }
    assert_eq!(next_person - FIRST_PERSON_ID, (N / 50) as i64);
    assert_eq!(next_auction - FIRST_AUCTION_ID, (3 * N / 50) as i64);
}

/// Walks the stream keeping the latest person and auction ids, and checks
/// every seller, bidder and bid auction: at most `lead` ids past the latest,
/// and among the active persons or in-flight auctions (or the hot ones).
fn check_references(config: GeneratorConfig) {
    let person_lead = config.person_id_lead as i64;
    let auction_lead = config.auction_id_lead as i64;
    let active = config.num_active_people as i64;
    let in_flight = config.num_in_flight_auctions as i64;
    let g = generator(config);
    let mut latest_person = None;
    let mut latest_auction = None;
    for (n, e) in g.events(0..N).enumerate() {
        match e {
            Event::Person(p) => latest_person = Some(p.id),
            Event::Auction(a) => {
                latest_auction = Some(a.id);
                let last = latest_person.expect("a person comes first");
                assert!(a.seller <= last + person_lead, "event {n}: {a:?}");
                assert!(
                    a.seller >= (last - active).max(FIRST_PERSON_ID),
                    "event {n}"
                );
            }
            Event::Bid(b) => {
                let person = latest_person.expect("a person comes first");
                let auction = latest_auction.expect("auctions come before bids");
                assert!(b.bidder <= person + person_lead, "event {n}: {b:?}");
                assert!(
                    b.bidder >= (person - active).max(FIRST_PERSON_ID),
                    "event {n}"
                );
                assert!(b.auction <= auction + auction_lead, "event {n}: {b:?}");
                assert!(
                    b.auction >= (auction - in_flight).max(FIRST_AUCTION_ID),
                    "event {n}"
                );
            }
        }
    }
}

#[test]
fn references_stay_within_the_suites_lead_of_the_latest_ids() {
    check_references(GeneratorConfig::default());
}

#[test]
fn without_a_lead_every_reference_names_an_existing_person_or_auction() {
    check_references(GeneratorConfig {
        person_id_lead: 0,
        auction_id_lead: 0,
        ..GeneratorConfig::default()
    });
}

fn bids(events: &[Event]) -> impl Iterator<Item = &Bid> {
    events.iter().filter_map(|e| match e {
        Event::Bid(b) => Some(b),
        _ => None,
    })
}

/// The share of all `keys` that the most frequent `top` keys hold.
fn top_share(keys: impl Iterator<Item = i64>, top: usize) -> f64 {
    let mut counts: HashMap<i64, u64> = HashMap::new();
    let mut total = 0;
    for k in keys {
        *counts.entry(k).or_default() += 1;
        total += 1;
    }
    let mut sorted: Vec<u64> = counts.into_values().collect();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted.iter().take(top).sum::<u64>() as f64 / total as f64
}

#[test]
fn a_few_hot_auctions_and_bidders_take_a_large_share_of_the_bids() {
    let events = default_events(N);
    // 6,000 auctions; one in 100 is hot. With hot ratio 2 the hot ones get
    // half of all bids (plus their share of the rest).
    let hot = top_share(bids(&events).map(|b| b.auction), 60);
    assert!((0.45..0.60).contains(&hot), "hot auctions' share {hot}");
    // Hot bidders ratio 4: three bids in four by one of 20 hot bidders.
    let bidders = top_share(bids(&events).map(|b| b.bidder), 20);
    assert!(
        (0.70..0.85).contains(&bidders),
        "hot bidders' share {bidders}"
    );

    // With the hot draws off, the same top 1% of auctions is far smaller.
    let flat = generator(GeneratorConfig {
        hot_auction_ratio: 1,
        ..GeneratorConfig::default()
    });
    let events: Vec<Event> = flat.events(0..N).collect();
    let share = top_share(bids(&events).map(|b| b.auction), 60);
    assert!(
        share < 0.10,
        "auctions' top share without hot ones: {share}"
    );
}

#[test]
fn event_times_follow_the_rate() {
    // Default rate 10 M/s: 10,000 events per millisecond.
    let events = default_events(N);
    let mut previous = i64::MIN;
    for (n, e) in events.iter().enumerate() {
        assert_eq!(e.date_time(), DEFAULT_BASE_TIME + n as i64 / 10_000);
        assert!(e.date_time() >= previous);
        previous = e.date_time();
    }

    let config = GeneratorConfig {
        events_per_second: 1000,
        base_time: 1_000_000,
        ..GeneratorConfig::default()
    };
    assert_eq!(
        config.inter_event_delay(),
        std::time::Duration::from_millis(1)
    );
    let g = generator(config);
    for (n, e) in g.events(0..5000).enumerate() {
        assert_eq!(e.date_time(), 1_000_000 + n as i64);
    }
    // A rate that does not divide a second: times round down, steps are 0
    // or 1 ms, and the total is exact.
    let g = generator(GeneratorConfig {
        events_per_second: 3,
        base_time: 0,
        ..GeneratorConfig::default()
    });
    let times: Vec<i64> = g.events(0..7).map(|e| e.date_time()).collect();
    assert_eq!(times, [0, 333, 666, 1000, 1333, 1666, 2000]);
}

#[test]
fn the_same_number_gives_the_same_event_however_the_work_is_split() {
    let a = generator(GeneratorConfig::default());
    let b = generator(GeneratorConfig::default());
    for n in [0, 1, 4, 49, 50, 12_345, 99_999, 1 << 40] {
        assert_eq!(a.event(n), b.event(n), "event {n}");
    }
    let all: Vec<Event> = a.events(0..20_000).collect();
    let evens: Vec<Event> = a.events((0..20_000).step_by(2)).collect();
    let odds: Vec<Event> = b.events((1..20_000).step_by(2)).collect();
    let merged: Vec<Event> = evens
        .into_iter()
        .zip(odds)
        .flat_map(|(e, o)| [e, o])
        .collect();
    assert_eq!(merged, all);
    // Backwards, or skipping, changes nothing either.
    let backwards: Vec<Event> = a.events((0..20_000).rev()).collect();
    assert!(backwards.iter().rev().eq(all.iter()));
    assert_eq!(a.events(0..20_000).nth(12_345), Some(all[12_345].clone()));
}

#[test]
fn another_seed_gives_other_values_with_the_same_ids_and_times() {
    let a = generator(GeneratorConfig::default());
    let b = generator(GeneratorConfig {
        seed: 7,
        ..GeneratorConfig::default()
    });
    let mut differ = 0;
    for n in 0..1000 {
        let (x, y) = (a.event(n), b.event(n));
        assert_eq!(x.kind(), y.kind());
        assert_eq!(x.date_time(), y.date_time());
        if let (Event::Person(p), Event::Person(q)) = (&x, &y) {
            assert_eq!(p.id, q.id);
        }
        if let (Event::Auction(p), Event::Auction(q)) = (&x, &y) {
            assert_eq!(p.id, q.id);
        }
        differ += usize::from(x != y);
    }
    assert!(differ > 990, "only {differ} of 1000 events differ");
}

#[test]
fn values_lie_in_the_suites_ranges_and_sizes_average_out() {
    let events = default_events(N);
    let (mut person_bytes, mut auction_bytes, mut bid_bytes) = (0, 0, 0);
    let (mut hot_channels, mut with_channel_id) = (0, 0);
    for e in &events {
        match e {
            Event::Person(p) => {
                check_person(p);
                person_bytes += 8
                    + p.name.len()
                    + p.email_address.len()
                    + p.credit_card.len()
                    + p.city.len()
                    + p.state.len()
                    + p.extra.len();
            }
            Event::Auction(a) => {
                check_auction(a);
                auction_bytes += 8 + a.item_name.len() + a.description.len() + 40 + a.extra.len();
            }
            Event::Bid(b) => {
                assert!((100..=100_000_000).contains(&b.price), "{b:?}");
                assert!(b.url.starts_with("https://www.nexmark.com/"), "{b:?}");
                assert!(b.url.contains("/item.htm?query=1"), "{b:?}");
                if ["Google", "Facebook", "Baidu", "Apple"].contains(&b.channel.as_str()) {
                    hot_channels += 1;
                } else {
                    let k: u32 = b.channel["channel-".len()..].parse().expect("channel-<k>");
                    assert!(k < 10_000);
                    with_channel_id += usize::from(b.url.contains("&channel_id="));
                }
                bid_bytes += 32 + b.extra.len();
            }
        }
    }
    let mean = |bytes: usize, count: u64| bytes as f64 / count as f64;
    let person = mean(person_bytes, N / 50);
    let auction = mean(auction_bytes, 3 * N / 50);
    let bid = mean(bid_bytes, 46 * N / 50);
    assert!((195.0..205.0).contains(&person), "person {person} bytes");
    assert!((490.0..510.0).contains(&auction), "auction {auction} bytes");
    assert!((98.0..102.0).contains(&bid), "bid {bid} bytes");
    let bids = 46 * N / 50;
    let hot_share = hot_channels as f64 / bids as f64;
    assert!(
        (0.48..0.52).contains(&hot_share),
        "hot channels {hot_share}"
    );
    let id_share = with_channel_id as f64 / (bids - hot_channels) as f64;
    assert!(
        (0.85..0.95).contains(&id_share),
        "urls with channel_id {id_share}"
    );
}

fn check_person(p: &Person) {
    assert!(["AZ", "CA", "ID", "OR", "WA", "WY"].contains(&p.state.as_str()));
    assert_eq!(p.name.split(' ').count(), 2, "{p:?}");
    assert!(p.email_address.ends_with(".com") && p.email_address.contains('@'));
    assert_eq!(p.credit_card.len(), 19);
    assert!(p
        .credit_card
        .split(' ')
        .all(|g| g.len() == 4 && g.bytes().all(|b| b.is_ascii_digit())));
    assert!(p.extra.bytes().all(|b| b.is_ascii_lowercase()));
}

fn check_auction(a: &Auction) {
    assert!((10..15).contains(&a.category), "{a:?}");
    assert!((100..=100_000_000).contains(&a.initial_bid), "{a:?}");
    assert!(a.reserve > a.initial_bid, "{a:?}");
    assert!(a.expires > a.date_time, "{a:?}");
    assert!(a.item_name.len() < 20 && a.description.len() < 100, "{a:?}");
}

#[test]
fn auctions_last_about_as_long_as_100_auctions_take_to_open() {
    // At 1,000 events/s, 100 auctions take 1,666 events: 1.666 s. Lengths
    // are uniform up to twice that.
    let g = generator(GeneratorConfig {
        events_per_second: 1000,
        ..GeneratorConfig::default()
    });
    let lengths: Vec<i64> = g
        .events(0..N)
        .filter_map(|e| match e {
            Event::Auction(a) => Some(a.expires - a.date_time),
            _ => None,
        })
        .collect();
    assert!(lengths.iter().all(|l| (1..=3332).contains(l)));
    let mean = lengths.iter().sum::<i64>() as f64 / lengths.len() as f64;
    assert!((1600.0..1730.0).contains(&mean), "mean length {mean} ms");
}

#[test]
fn the_stream_ends_after_num_events_or_never() {
    let bounded = generator(GeneratorConfig {
        num_events: 1234,
        ..GeneratorConfig::default()
    });
    assert_eq!(bounded.stream().count(), 1234);
    assert_eq!(bounded.numbers(), 0..1234);
    let unbounded = generator(GeneratorConfig::default());
    assert_eq!(unbounded.numbers().end, u64::MAX);
    assert_eq!(unbounded.stream().take(10).count(), 10);
}

#[test]
fn a_zero_knob_is_refused_by_name() {
    for (config, knob) in [
        (
            GeneratorConfig {
                events_per_second: 0,
                ..GeneratorConfig::default()
            },
            "events_per_second",
        ),
        (
            GeneratorConfig {
                person_proportion: 0,
                ..GeneratorConfig::default()
            },
            "person_proportion",
        ),
        (
            GeneratorConfig {
                num_active_people: 0,
                ..GeneratorConfig::default()
            },
            "num_active_people",
        ),
    ] {
        let err = Generator::new(config).expect_err("a zero knob");
        assert_eq!(err.knob, knob);
        assert!(err.to_string().contains(knob));
    }
}

/// Event `e` with the strings outside `fields` emptied: what
/// `event_fields` must give.
fn masked(e: &Event, fields: Fields) -> Event {
    let keep = |i: usize, s: &String| {
        if fields.has(i) {
            s.clone()
        } else {
            String::new()
        }
    };
    match e {
        Event::Person(p) => Event::Person(Person {
            name: keep(1, &p.name),
            email_address: keep(2, &p.email_address),
            credit_card: keep(3, &p.credit_card),
            city: keep(4, &p.city),
            state: keep(5, &p.state),
            extra: keep(7, &p.extra),
            ..p.clone()
        }),
        Event::Auction(a) => Event::Auction(Auction {
            item_name: keep(1, &a.item_name),
            description: keep(2, &a.description),
            extra: keep(9, &a.extra),
            ..a.clone()
        }),
        Event::Bid(b) => Event::Bid(Bid {
            channel: keep(3, &b.channel),
            url: keep(4, &b.url),
            extra: keep(6, &b.extra),
            ..b.clone()
        }),
    }
}

#[test]
fn a_mask_of_fields_leaves_the_wanted_ones_as_the_whole_event_has_them() {
    let g = generator(GeneratorConfig::default());
    // Every mask of one field, of all but one, and none; where the padding
    // is wanted every string is made (its length depends on theirs).
    let mut masks = vec![Fields::NONE];
    for i in 0..10 {
        masks.push(Fields::NONE.with(i));
        masks.push((0..10).filter(|&j| j != i).fold(Fields::NONE, Fields::with));
    }
    for n in 0..5_000 {
        let whole = g.event(n);
        assert_eq!(g.event_fields(n, Fields::ALL), whole, "event {n}");
        for &fields in &masks {
            let got = g.event_fields(n, fields);
            let extra = match whole.kind() {
                EventKind::Person => 7,
                EventKind::Auction => 9,
                EventKind::Bid => 6,
            };
            if fields.has(extra) && whole.kind() != EventKind::Bid {
                assert_eq!(got, whole, "event {n}, {fields:?}");
            } else {
                assert_eq!(got, masked(&whole, fields), "event {n}, {fields:?}");
            }
        }
    }
}
