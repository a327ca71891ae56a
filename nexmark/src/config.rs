//! The knobs of the Nexmark stream (the suite's `NexmarkConfiguration` and
//! `GeneratorConfig`): its rate and length, the mix of persons, auctions and
//! bids, how skewed the references are, how large the events are, and where
//! event time starts.
//!
//! Two things are derived from the knobs, and both depend only on the event
//! number: the kind of event `n` ([`GeneratorConfig::kind`]) and its event
//! time ([`GeneratorConfig::timestamp`]).

use std::time::Duration;

use crate::model::EventKind;

/// The first person id; person ids count up from here, one per person event.
pub const FIRST_PERSON_ID: i64 = 1000;
/// The first auction id; auction ids count up from here, one per auction event.
pub const FIRST_AUCTION_ID: i64 = 1000;
/// The first category id; categories are this and the next
/// [`NUM_CATEGORIES`]` - 1` ids.
pub const FIRST_CATEGORY_ID: i64 = 10;
/// How many categories auctions are spread over (kept small so that the
/// queries find matches even in short streams).
pub const NUM_CATEGORIES: u64 = 5;
/// Hot sellers, hot bidders and hot auctions are picked once per batch of
/// this many persons or auctions: the first person of the latest batch is
/// the hot seller, the second the hot bidder, the first auction the hot
/// auction.
pub const HOT_BATCH: u64 = 100;

/// 2024-01-01 00:00:00.000 UTC, the default [`GeneratorConfig::base_time`].
pub const DEFAULT_BASE_TIME: i64 = 1_704_067_200_000;

/// What stream the generator produces. The defaults are the Nexmark suite's
/// (Flink's `nexmark` repository), except where a field says otherwise.
///
/// Check a hand-made config with [`GeneratorConfig::validate`];
/// [`Generator::new`](crate::Generator::new) does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratorConfig {
    /// Events per second of event time (the suite's `first-event.rate`, its
    /// workloads' TPS): event `n` happens at `base_time + n / rate` seconds.
    /// Default 10,000,000, the suite's workload rate (its Java default is
    /// 10,000). The rate spaces event times only; how fast events are made
    /// is the caller's business.
    pub events_per_second: u64,
    /// How many events the stream has; 0 means unbounded (the suite's
    /// `events.num`). Default 0.
    pub num_events: u64,
    /// Persons per `person + auction + bid` events. Default 1.
    pub person_proportion: u64,
    /// Auctions per `person + auction + bid` events. Default 3.
    pub auction_proportion: u64,
    /// Bids per `person + auction + bid` events. Default 46.
    pub bid_proportion: u64,
    /// A bid is for the hot auction with probability `1 - 1/ratio`, else
    /// for a recent auction picked uniformly. Default 2.
    pub hot_auction_ratio: u64,
    /// An auction is sold by the hot seller with probability `1 - 1/ratio`,
    /// else by an active person picked uniformly. Default 4.
    pub hot_sellers_ratio: u64,
    /// A bid is made by the hot bidder with probability `1 - 1/ratio`, else
    /// by an active person picked uniformly. Default 4.
    pub hot_bidders_ratio: u64,
    /// How many of the latest auctions a non-hot bid picks from. Default 100.
    pub num_in_flight_auctions: u64,
    /// How many of the latest persons a non-hot seller or bidder is picked
    /// from. Default 1,000.
    pub num_active_people: u64,
    /// Average byte size of a person, which its `extra` pads up to.
    /// Default 200.
    pub avg_person_byte_size: u64,
    /// Average byte size of an auction, which its `extra` pads up to.
    /// Default 500.
    pub avg_auction_byte_size: u64,
    /// Average byte size of a bid, which its `extra` pads up to. Default 100.
    pub avg_bid_byte_size: u64,
    /// Event time of event 0, milliseconds since the epoch. Default
    /// [`DEFAULT_BASE_TIME`]: fixed, so that every run makes the same
    /// stream (the suite takes the wall clock at start).
    pub base_time: i64,
    /// How many person ids past the latest person a non-hot seller or
    /// bidder may name: the suite lets a few references run ahead of the
    /// persons made so far, as if events were slightly out of order.
    /// Default 10 (the suite's constant); 0 makes every seller and bidder
    /// a person already generated.
    pub person_id_lead: u64,
    /// How many auction ids past the latest auction a non-hot bid may name.
    /// Default 10 (the suite's constant); 0 makes every bid's auction one
    /// already generated.
    pub auction_id_lead: u64,
    /// Mixed into every event's random source: another seed, another
    /// stream with the same proportions and distributions. Default 0.
    pub seed: u64,
}

impl Default for GeneratorConfig {
    fn default() -> Self {
        Self {
            events_per_second: 10_000_000,
            num_events: 0,
            person_proportion: 1,
            auction_proportion: 3,
            bid_proportion: 46,
            hot_auction_ratio: 2,
            hot_sellers_ratio: 4,
            hot_bidders_ratio: 4,
            num_in_flight_auctions: 100,
            num_active_people: 1000,
            avg_person_byte_size: 200,
            avg_auction_byte_size: 500,
            avg_bid_byte_size: 100,
            base_time: DEFAULT_BASE_TIME,
            person_id_lead: 10,
            auction_id_lead: 10,
            seed: 0,
        }
    }
}

/// A knob with a value the generator cannot work with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("nexmark generator: {knob} must be at least 1 (it is 0)")]
pub struct ConfigError {
    /// The field of [`GeneratorConfig`] at fault.
    pub knob: &'static str,
}

impl GeneratorConfig {
    /// Checks that every rate, proportion, ratio and the number of active
    /// people is at least 1 (each divides or bounds a random pick).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let at_least_one = [
            ("events_per_second", self.events_per_second),
            ("person_proportion", self.person_proportion),
            ("auction_proportion", self.auction_proportion),
            ("bid_proportion", self.bid_proportion),
            ("hot_auction_ratio", self.hot_auction_ratio),
            ("hot_sellers_ratio", self.hot_sellers_ratio),
            ("hot_bidders_ratio", self.hot_bidders_ratio),
            ("num_active_people", self.num_active_people),
        ];
        match at_least_one.iter().find(|(_, v)| *v == 0) {
            Some(&(knob, _)) => Err(ConfigError { knob }),
            None => Ok(()),
        }
    }

    /// Events in one round of the mix: `person + auction + bid` proportions
    /// (50 by default). Event `n` is the `n % total`-th of its round.
    #[inline]
    pub fn total_proportion(&self) -> u64 {
        self.person_proportion + self.auction_proportion + self.bid_proportion
    }

    /// The kind of event `n`: in every round the persons come first, then
    /// the auctions, then the bids.
    #[inline]
    pub fn kind(&self, n: u64) -> EventKind {
        let offset = n % self.total_proportion();
        if offset < self.person_proportion {
            EventKind::Person
        } else if offset < self.person_proportion + self.auction_proportion {
            EventKind::Auction
        } else {
            EventKind::Bid
        }
    }

    /// The event-time spacing of consecutive events, `1 s / rate`, rounded
    /// to the nanosecond (timestamps use the exact fraction, see
    /// [`timestamp`](Self::timestamp)).
    pub fn inter_event_delay(&self) -> Duration {
        Duration::from_nanos(1_000_000_000 / self.events_per_second.max(1))
    }

    /// Event time of event `n` in epoch milliseconds:
    /// `base_time + n × inter-event delay`, rounded down to the millisecond
    /// and computed exactly (`n × 1000 / rate` in integers), so it never
    /// decreases and every subtask computes the same value.
    #[inline]
    pub fn timestamp(&self, n: u64) -> i64 {
        let rate = self.events_per_second.max(1);
        // In 64 bits while `n × 1000` fits (every run: 1.8e16 events), a
        // division instruction rather than the 128-bit one's call: a SQL
        // scan takes the time of every event it generates.
        let narrow = n.checked_mul(1000).and_then(|scaled| {
            let ms = u64::try_from(self.base_time)
                .ok()?
                .checked_add(scaled / rate)?;
            i64::try_from(ms).ok()
        });
        if let Some(ms) = narrow {
            return ms;
        }
        let offset_ms = u128::from(n) * 1000 / u128::from(rate);
        let ms = i128::from(self.base_time) + offset_ms as i128;
        ms.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// How many events exist: `Some(num_events)`, or `None` when unbounded.
    pub fn bound(&self) -> Option<u64> {
        (self.num_events > 0).then_some(self.num_events)
    }

    /// The number (from 0) of the latest person made up to event `n`: the
    /// person of event `n` itself if it is one. Every event has one, since
    /// the persons lead each round.
    pub(crate) fn last_person(&self, n: u64) -> u64 {
        let round = n / self.total_proportion();
        let offset = (n % self.total_proportion()).min(self.person_proportion - 1);
        round * self.person_proportion + offset
    }

    /// The number (from 0) of the latest auction made up to event `n`: the
    /// auction of event `n` itself if it is one. For a person event of the
    /// first round there is none yet; this is then 0, but only auctions and
    /// bids ask.
    pub(crate) fn last_auction(&self, n: u64) -> u64 {
        let total = self.total_proportion();
        let round = n / total;
        let offset = n % total;
        if offset < self.person_proportion {
            // The previous round's last auction.
            (round * self.auction_proportion).saturating_sub(1)
        } else if offset < self.person_proportion + self.auction_proportion {
            round * self.auction_proportion + (offset - self.person_proportion)
        } else {
            round * self.auction_proportion + self.auction_proportion - 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 64-bit path gives the exact formula's value, and the 128-bit
    /// one takes over where `n × 1000` or the sum leaves 64 bits.
    #[test]
    fn timestamps_equal_the_exact_formula() {
        let exact = |c: &GeneratorConfig, n: u64| {
            let ms = i128::from(c.base_time)
                + (u128::from(n) * 1000 / u128::from(c.events_per_second.max(1))) as i128;
            ms.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
        };
        let mut c = GeneratorConfig::default();
        for base in [0, DEFAULT_BASE_TIME, -5_000, i64::MAX - 10] {
            for rate in [1, 7, 1_000, 10_000_000, u64::MAX] {
                c.base_time = base;
                c.events_per_second = rate;
                for n in [
                    0,
                    1,
                    49,
                    999_999,
                    u64::MAX / 1000,
                    u64::MAX / 1000 + 1,
                    u64::MAX,
                ] {
                    assert_eq!(
                        c.timestamp(n),
                        exact(&c, n),
                        "base {base} rate {rate} n {n}"
                    );
                }
            }
        }
    }
}
