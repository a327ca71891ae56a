//! The three kinds of Nexmark event (the suite's `Person`, `Auction` and
//! `Bid`, and its `Event` union), with the suite's fields in the suite's
//! order. Ids, prices and times are `i64`: the suite's SQL tables declare
//! them `BIGINT` and `TIMESTAMP(3)`.

/// One event of the stream.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// A new person registers.
    Person(Person),
    /// A person opens an auction.
    Auction(Auction),
    /// A person bids in an auction.
    Bid(Bid),
}

impl Event {
    /// Which of the three kinds this is.
    pub fn kind(&self) -> EventKind {
        match self {
            Event::Person(_) => EventKind::Person,
            Event::Auction(_) => EventKind::Auction,
            Event::Bid(_) => EventKind::Bid,
        }
    }

    /// The event's time, epoch milliseconds.
    pub fn date_time(&self) -> i64 {
        match self {
            Event::Person(p) => p.date_time,
            Event::Auction(a) => a.date_time,
            Event::Bid(b) => b.date_time,
        }
    }
}

/// The kind of an event, and the table it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    /// [`Person`], table `person`.
    Person,
    /// [`Auction`], table `auction`.
    Auction,
    /// [`Bid`], table `bid`.
    Bid,
}

impl EventKind {
    /// The three kinds, in table order.
    pub const ALL: [EventKind; 3] = [EventKind::Person, EventKind::Auction, EventKind::Bid];

    /// The table's name: `person`, `auction` or `bid`.
    pub fn table(self) -> &'static str {
        match self {
            EventKind::Person => "person",
            EventKind::Auction => "auction",
            EventKind::Bid => "bid",
        }
    }

    /// The table's column names, in field (and CSV) order.
    pub fn columns(self) -> &'static [&'static str] {
        match self {
            EventKind::Person => &[
                "id",
                "name",
                "email_address",
                "credit_card",
                "city",
                "state",
                "date_time",
                "extra",
            ],
            EventKind::Auction => &[
                "id",
                "item_name",
                "description",
                "initial_bid",
                "reserve",
                "date_time",
                "expires",
                "seller",
                "category",
                "extra",
            ],
            EventKind::Bid => &[
                "auction",
                "bidder",
                "price",
                "channel",
                "url",
                "date_time",
                "extra",
            ],
        }
    }

    /// Position in [`EventKind::ALL`] (0, 1, 2), for per-table arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Which fields of an event a reader wants, by position in
/// [`EventKind::columns`]: the generator leaves the strings of the others
/// empty instead of making them (a query that reads a bid's auction and
/// time pays for neither its URL nor its padding). The fields it makes
/// are the same whatever the mask: each event draws from its own random
/// source, and a skipped string's draws are still taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fields(u32);

impl Fields {
    /// Every field.
    pub const ALL: Fields = Fields(u32::MAX);

    /// No field (each wanted one is added with [`Fields::with`]).
    pub const NONE: Fields = Fields(0);

    /// These fields and field `i` too.
    #[must_use]
    pub fn with(self, i: usize) -> Fields {
        Fields(self.0 | 1u32.checked_shl(i as u32).unwrap_or(0))
    }

    /// Whether field `i` is wanted.
    #[inline]
    pub fn has(self, i: usize) -> bool {
        self.0 & 1u32.checked_shl(i as u32).unwrap_or(0) != 0
    }
}

/// A person who sells or bids.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Person {
    /// Person id: consecutive from [`FIRST_PERSON_ID`](crate::FIRST_PERSON_ID)
    /// in stream order.
    pub id: i64,
    /// First and last name, e.g. `Kate Abrams`.
    pub name: String,
    /// A made-up address `<letters>@<letters>.com`.
    pub email_address: String,
    /// Sixteen digits in four groups: `1234 5678 9012 3456`.
    pub credit_card: String,
    /// One of ten cities of the US west.
    pub city: String,
    /// One of six two-letter US states (`AZ CA ID OR WA WY`).
    pub state: String,
    /// When the person registered, epoch milliseconds.
    pub date_time: i64,
    /// Letters that pad the person to its average byte size.
    pub extra: String,
}

/// An item offered for sale.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Auction {
    /// Auction id: consecutive from
    /// [`FIRST_AUCTION_ID`](crate::FIRST_AUCTION_ID) in stream order.
    pub id: i64,
    /// Short random words.
    pub item_name: String,
    /// Longer random words.
    pub description: String,
    /// Opening price in cents.
    pub initial_bid: i64,
    /// The price the seller accepts, at least `initial_bid`.
    pub reserve: i64,
    /// When the auction opened, epoch milliseconds.
    pub date_time: i64,
    /// When the auction closes, epoch milliseconds, after `date_time`.
    pub expires: i64,
    /// The selling person's id.
    pub seller: i64,
    /// Category id, from [`FIRST_CATEGORY_ID`](crate::FIRST_CATEGORY_ID).
    pub category: i64,
    /// Letters that pad the auction to its average byte size.
    pub extra: String,
}

/// A bid in an auction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Bid {
    /// The auction's id.
    pub auction: i64,
    /// The bidding person's id.
    pub bidder: i64,
    /// Offered price in cents.
    pub price: i64,
    /// Where the bid came from: `Google`, `Facebook`, `Baidu`, `Apple`, or
    /// `channel-<k>` for `k` below 10,000.
    pub channel: String,
    /// The page the bid was made on,
    /// `https://www.nexmark.com/<a>/<b>/<c>/item.htm?query=1`, for most
    /// `channel-<k>` with `&channel_id=<n>` appended.
    pub url: String,
    /// When the bid was made, epoch milliseconds.
    pub date_time: i64,
    /// Letters that pad the bid to its average byte size.
    pub extra: String,
}
