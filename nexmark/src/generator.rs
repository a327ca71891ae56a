//! The generator: event number in, event out (the suite's
//! `NexmarkGenerator` with its `PersonGenerator`, `AuctionGenerator` and
//! `BidGenerator`).
//!
//! Event `n` depends on the config and `n` only. Its kind and time follow
//! from `n` ([`GeneratorConfig::kind`], [`GeneratorConfig::timestamp`]);
//! its id is its rank among the events of its kind before it; the ids it
//! refers to are drawn near the latest person or auction made up to `n`,
//! which is arithmetic on `n` too; its other values come from a random
//! source seeded with `n`. So a subtask makes any subset of the numbers, a
//! restored source resumes at the number it saved, and both agree with a
//! single generator making everything.

use std::fmt::{self, Write as _};
use std::iter::FusedIterator;
use std::ops::Range;
use std::sync::Arc;

use crate::config::{
    ConfigError, GeneratorConfig, FIRST_AUCTION_ID, FIRST_CATEGORY_ID, FIRST_PERSON_ID, HOT_BATCH,
    NUM_CATEGORIES,
};
use crate::model::{Auction, Bid, Event, EventKind, Fields, Person};
use crate::rng::{EventRng, Stream};

/// The suite's six states: few, so that the queries that filter on a
/// state find persons in short streams.
const US_STATES: [&str; 6] = ["AZ", "CA", "ID", "OR", "WA", "WY"];
const US_CITIES: [&str; 10] = [
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
];
const FIRST_NAMES: [&str; 11] = [
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter",
];
const LAST_NAMES: [&str; 9] = [
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris",
];
/// Half the bids come through one of these four channels.
const HOT_CHANNELS: [&str; 4] = ["Google", "Facebook", "Baidu", "Apple"];
/// The other half through `channel-<k>`, `k` below this.
const NUM_CHANNELS: u64 = 10_000;

/// The `extra` padding's position among each kind's fields.
const PERSON_EXTRA: usize = 7;
const AUCTION_EXTRA: usize = 9;
const BID_EXTRA: usize = 6;

/// A channel and the URL its bids carry.
struct Channel {
    name: String,
    url: String,
}

/// Makes the Nexmark stream: [`event`](Generator::event) for one event
/// number, [`events`](Generator::events) for many.
///
/// Cloning is cheap (the channel table is shared), so each subtask of a
/// source can hold its own.
#[derive(Clone)]
pub struct Generator {
    config: GeneratorConfig,
    /// The four hot channels, then `channel-0` … `channel-9999`.
    channels: Arc<[Channel]>,
}

impl fmt::Debug for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Generator")
            .field("config", &self.config)
            .field("channels", &self.channels.len())
            .finish()
    }
}

impl Generator {
    /// A generator for `config`, or the knob that makes it unusable.
    pub fn new(config: GeneratorConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let hot = HOT_CHANNELS.iter().enumerate().map(|(i, name)| Channel {
            name: (*name).to_owned(),
            url: base_url(&mut EventRng::new(config.seed, Stream::HotUrl, i as u64)),
        });
        let others = (0..NUM_CHANNELS).map(|k| {
            let mut rng = EventRng::new(config.seed, Stream::Channel, k);
            let mut url = base_url(&mut rng);
            // Nine channels in ten name themselves in the URL, by a number
            // that does not give the channel away at a glance.
            if rng.hot(10) {
                let id = (k as i32).reverse_bits().unsigned_abs();
                let _ = write!(url, "&channel_id={id}");
            }
            Channel {
                name: format!("channel-{k}"),
                url,
            }
        });
        Ok(Self {
            channels: hot.chain(others).collect(),
            config,
        })
    }

    /// The config this generator makes its stream from.
    pub fn config(&self) -> &GeneratorConfig {
        &self.config
    }

    /// Event number `n` (from 0) of the stream: a pure function of the
    /// config and `n`. It ignores [`GeneratorConfig::num_events`]: asking
    /// past the end gives the event an unbounded stream would have there.
    pub fn event(&self, n: u64) -> Event {
        self.event_fields(n, Fields::ALL)
    }

    /// Event `n` with only the strings of `fields` made (positions in
    /// its kind's [`EventKind::columns`]), the others empty: every field
    /// of `fields` is what [`event`](Self::event) gives, and numbers and
    /// times are always set.
    pub fn event_fields(&self, n: u64, fields: Fields) -> Event {
        let mut rng = EventRng::new(self.config.seed, Stream::Event, n);
        let time = self.config.timestamp(n);
        match self.config.kind(n) {
            EventKind::Person => Event::Person(self.person(n, time, &mut rng, fields)),
            EventKind::Auction => Event::Auction(self.auction(n, time, &mut rng, fields)),
            EventKind::Bid => Event::Bid(self.bid(n, time, &mut rng, fields)),
        }
    }

    /// The events of `numbers`, in their order: `events(0..1000)`, or a
    /// subtask's share `events((subtask..end).step_by(parallelism))`, or
    /// a restored subtask's rest `events((next..end).step_by(parallelism))`.
    pub fn events<I: IntoIterator<Item = u64>>(&self, numbers: I) -> Events<'_, I::IntoIter> {
        Events {
            generator: self,
            numbers: numbers.into_iter(),
        }
    }

    /// The event numbers of the whole stream: `0..num_events`, or
    /// `0..u64::MAX` when unbounded.
    pub fn numbers(&self) -> Range<u64> {
        0..self.config.bound().unwrap_or(u64::MAX)
    }

    /// Every event of the stream in order (see [`numbers`](Self::numbers)).
    pub fn stream(&self) -> Events<'_, Range<u64>> {
        self.events(self.numbers())
    }

    fn person(&self, n: u64, time: i64, rng: &mut EventRng, fields: Fields) -> Person {
        // The padding's length depends on every string's: wanted, all
        // are made.
        let all = fields.has(PERSON_EXTRA);
        let want = |i| all || fields.has(i);
        let (first, last) = (rng.pick(&FIRST_NAMES), rng.pick(&LAST_NAMES));
        let name = if want(1) {
            format!("{first} {last}")
        } else {
            String::new()
        };
        let email_address = if want(2) {
            format!("{}@{}.com", rng.word(7, ' '), rng.word(5, ' '))
        } else {
            rng.skip_word(7);
            rng.skip_word(5);
            String::new()
        };
        let mut credit_card = String::with_capacity(if want(3) { 19 } else { 0 });
        for group in 0..4 {
            let digits = rng.below(10_000);
            if want(3) {
                if group > 0 {
                    credit_card.push(' ');
                }
                let _ = write!(credit_card, "{digits:04}"); // a String takes every write
            }
        }
        let (city, state) = (rng.pick(&US_CITIES), rng.pick(&US_STATES));
        let city = if want(4) {
            city.to_owned()
        } else {
            String::new()
        };
        let state = if want(5) {
            state.to_owned()
        } else {
            String::new()
        };
        let extra = if all {
            let size = 8 + name.len() + email_address.len() + credit_card.len() + city.len() + 2;
            rng.extra(size as u64, self.config.avg_person_byte_size)
        } else {
            String::new()
        };
        Person {
            id: FIRST_PERSON_ID + self.config.last_person(n) as i64,
            name,
            email_address,
            credit_card,
            city,
            state,
            date_time: time,
            extra,
        }
    }

    fn auction(&self, n: u64, time: i64, rng: &mut EventRng, fields: Fields) -> Auction {
        let c = &self.config;
        let seller = if rng.hot(c.hot_sellers_ratio) {
            // The first person of the latest batch.
            c.last_person(n) / HOT_BATCH * HOT_BATCH
        } else {
            self.some_person(n, rng)
        };
        let category = FIRST_CATEGORY_ID + rng.below(NUM_CATEGORIES) as i64;
        let initial_bid = rng.price();
        let reserve = initial_bid + rng.price();
        let expires = time + self.auction_length(n, time, rng);
        // As for persons: the padding wanted, every string is made.
        let all = fields.has(AUCTION_EXTRA);
        let item_name = if all || fields.has(1) {
            rng.word(20, ' ')
        } else {
            rng.skip_word(20);
            String::new()
        };
        let description = if all || fields.has(2) {
            rng.word(100, ' ')
        } else {
            rng.skip_word(100);
            String::new()
        };
        let extra = if all {
            let size = 8 + item_name.len() + description.len() + 5 * 8;
            rng.extra(size as u64, c.avg_auction_byte_size)
        } else {
            String::new()
        };
        Auction {
            id: FIRST_AUCTION_ID + c.last_auction(n) as i64,
            item_name,
            description,
            initial_bid,
            reserve,
            date_time: time,
            expires,
            seller: FIRST_PERSON_ID + seller as i64,
            category,
            extra,
        }
    }

    fn bid(&self, n: u64, time: i64, rng: &mut EventRng, fields: Fields) -> Bid {
        let c = &self.config;
        let auction = if rng.hot(c.hot_auction_ratio) {
            // The first auction of the latest batch.
            c.last_auction(n) / HOT_BATCH * HOT_BATCH
        } else {
            self.some_auction(n, rng)
        };
        let bidder = if rng.hot(c.hot_bidders_ratio) {
            // The second person of the latest batch, so that the hot bidder
            // is not the hot seller. Early in a batch that person may not
            // exist yet: like every reference, it stays within the lead.
            let latest = c.last_person(n);
            (latest / HOT_BATCH * HOT_BATCH + 1).min(latest.saturating_add(c.person_id_lead))
        } else {
            self.some_person(n, rng)
        };
        let price = rng.price();
        let channel = if rng.hot(2) {
            &self.channels[rng.below(HOT_CHANNELS.len() as u64) as usize]
        } else {
            &self.channels[HOT_CHANNELS.len() + rng.below(NUM_CHANNELS) as usize]
        };
        // The padding is the last draw: not wanted, not drawn.
        let extra = if fields.has(BID_EXTRA) {
            rng.extra(4 * 8, c.avg_bid_byte_size)
        } else {
            String::new()
        };
        let text = |wanted: bool, s: &String| if wanted { s.clone() } else { String::new() };
        Bid {
            auction: FIRST_AUCTION_ID + auction as i64,
            bidder: FIRST_PERSON_ID + bidder as i64,
            price,
            channel: text(fields.has(3), &channel.name),
            url: text(fields.has(4), &channel.url),
            date_time: time,
            extra,
        }
    }

    /// A person (number from 0) among the `num_active_people` latest made
    /// up to event `n`, or up to `person_id_lead` past the latest.
    fn some_person(&self, n: u64, rng: &mut EventRng) -> u64 {
        let made = self.config.last_person(n) + 1;
        let active = made.min(self.config.num_active_people);
        made - active + rng.below(active.saturating_add(self.config.person_id_lead))
    }

    /// An auction (number from 0) among the `num_in_flight_auctions`
    /// before the latest made up to event `n`, the latest, or up to
    /// `auction_id_lead` past it.
    fn some_auction(&self, n: u64, rng: &mut EventRng) -> u64 {
        let latest = self.config.last_auction(n);
        let oldest = latest.saturating_sub(self.config.num_in_flight_auctions);
        oldest + rng.below((latest - oldest + 1).saturating_add(self.config.auction_id_lead))
    }

    /// How long the auction of event `n` runs, in ms: uniform in
    /// `1..=2h`, where `h` is the event time until `num_in_flight_auctions`
    /// more auctions will have opened, so that about that many are open at
    /// any time (at least 1 ms).
    fn auction_length(&self, n: u64, time: i64, rng: &mut EventRng) -> i64 {
        let c = &self.config;
        let events_ahead = c
            .num_in_flight_auctions
            .saturating_mul(c.total_proportion())
            / c.auction_proportion;
        let horizon = c.timestamp(n.saturating_add(events_ahead)) - time;
        1 + rng.below((horizon as u64).saturating_mul(2).max(1)) as i64
    }
}

/// `https://www.nexmark.com/<a>/<b>/<c>/item.htm?query=1` with three short
/// random path segments.
fn base_url(rng: &mut EventRng) -> String {
    format!(
        "https://www.nexmark.com/{}/{}/{}/item.htm?query=1",
        rng.word(5, '_'),
        rng.word(5, '_'),
        rng.word(5, '_')
    )
}

/// The events of a sequence of event numbers, made as they are taken
/// ([`Generator::events`]).
#[derive(Clone, Debug)]
pub struct Events<'g, I> {
    generator: &'g Generator,
    numbers: I,
}

impl<I: Iterator<Item = u64>> Iterator for Events<'_, I> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        self.numbers.next().map(|n| self.generator.event(n))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.numbers.size_hint()
    }

    fn nth(&mut self, skip: usize) -> Option<Event> {
        // Skipped events are not made.
        self.numbers.nth(skip).map(|n| self.generator.event(n))
    }
}

impl<I: ExactSizeIterator<Item = u64>> ExactSizeIterator for Events<'_, I> {}

impl<I: FusedIterator<Item = u64>> FusedIterator for Events<'_, I> {}
