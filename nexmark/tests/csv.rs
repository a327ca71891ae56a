//! The CSV rows and table files, read back by a small RFC 4180 parser
//! written here: every field comes back as it went in, in the documented
//! column order, and the table files hold exactly the generated rows.

use std::fs;
use std::path::PathBuf;

use weir_nexmark::csv::{format_timestamp, push_auction, push_bid, push_event, push_person};
use weir_nexmark::{
    Auction, Bid, CsvTables, Event, EventKind, Generator, GeneratorConfig, Person, WriteError,
};

/// Splits CSV text into rows of fields: a field is plain up to the next
/// comma or line end, or quoted, with `""` standing for one quote inside.
fn parse(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field.is_empty() && !was_quoted => {
                quoted = true;
                was_quoted = true;
            }
            '"' => panic!("a quote inside an unquoted field: {text:?}"),
            ',' => {
                row.push(std::mem::take(&mut field));
                was_quoted = false;
            }
            '\n' => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
                was_quoted = false;
            }
            _ => {
                assert!(!was_quoted, "text after a closing quote: {text:?}");
                field.push(c);
            }
        }
    }
    assert!(!quoted, "an unterminated quoted field");
    assert!(
        field.is_empty() && row.is_empty(),
        "the last row lacks its line end"
    );
    rows
}

fn row_of(event: &Event) -> Vec<String> {
    let mut out = Vec::new();
    push_event(&mut out, event);
    let mut rows = parse(std::str::from_utf8(&out).unwrap());
    assert_eq!(rows.len(), 1);
    rows.pop().unwrap()
}

fn person_fields(p: &Person) -> Vec<String> {
    vec![
        p.id.to_string(),
        p.name.clone(),
        p.email_address.clone(),
        p.credit_card.clone(),
        p.city.clone(),
        p.state.clone(),
        format_timestamp(p.date_time),
        p.extra.clone(),
    ]
}

fn auction_fields(a: &Auction) -> Vec<String> {
    vec![
        a.id.to_string(),
        a.item_name.clone(),
        a.description.clone(),
        a.initial_bid.to_string(),
        a.reserve.to_string(),
        format_timestamp(a.date_time),
        format_timestamp(a.expires),
        a.seller.to_string(),
        a.category.to_string(),
        a.extra.clone(),
    ]
}

fn bid_fields(b: &Bid) -> Vec<String> {
    vec![
        b.auction.to_string(),
        b.bidder.to_string(),
        b.price.to_string(),
        b.channel.clone(),
        b.url.clone(),
        format_timestamp(b.date_time),
        b.extra.clone(),
    ]
}

fn fields(event: &Event) -> Vec<String> {
    match event {
        Event::Person(p) => person_fields(p),
        Event::Auction(a) => auction_fields(a),
        Event::Bid(b) => bid_fields(b),
    }
}

#[test]
fn generated_rows_read_back_field_for_field_in_column_order() {
    let g = Generator::new(GeneratorConfig::default()).unwrap();
    for event in g.events(0..5000) {
        let row = row_of(&event);
        assert_eq!(row.len(), event.kind().columns().len());
        assert_eq!(row, fields(&event));
    }
}

#[test]
fn strings_that_need_quotes_get_them_and_round_trip() {
    let awkward = [
        "plain words",
        "a, b",
        "say \"hi\"",
        "\"",
        "two\nlines",
        "cr\r\nlf",
        ",",
        "",
        "trailing ",
    ];
    for s in awkward {
        let bid = Bid {
            auction: 1000,
            bidder: 1001,
            price: 12_345,
            channel: s.to_owned(),
            url: format!("{s}{s}"),
            date_time: 1_704_067_200_123,
            extra: s.to_owned(),
        };
        let mut out = Vec::new();
        push_bid(&mut out, &bid);
        let text = String::from_utf8(out).unwrap();
        let needs_quotes = s.contains([',', '"', '\n', '\r']);
        assert_eq!(text.contains('"'), needs_quotes, "{text:?}");
        assert_eq!(parse(&text), vec![bid_fields(&bid)], "{text:?}");
        assert!(text.contains(",2024-01-01 00:00:00.123,"));
    }
    // The other two kinds quote the same way.
    let person = Person {
        id: 1000,
        name: "Doe, Jane".into(),
        email_address: "\"j\"@d.com".into(),
        credit_card: "0000 0000 0000 0000".into(),
        city: "Bend".into(),
        state: "OR".into(),
        date_time: 0,
        extra: "x\ny".into(),
    };
    let mut out = Vec::new();
    push_person(&mut out, &person);
    assert_eq!(
        parse(std::str::from_utf8(&out).unwrap()),
        vec![person_fields(&person)]
    );
    let auction = Auction {
        id: 1000,
        item_name: "a,b".into(),
        description: "\"\"".into(),
        initial_bid: 100,
        reserve: 200,
        date_time: 0,
        expires: 1,
        seller: 1000,
        category: 10,
        extra: String::new(),
    };
    let mut out = Vec::new();
    push_auction(&mut out, &auction);
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("1000,\"a,b\",\"\"\"\"\"\",100,200,1970-01-01 00:00:00.000,"));
    assert_eq!(parse(&text), vec![auction_fields(&auction)]);
}

/// A directory for one test, removed at the end unless it failed.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("weir-nexmark-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

fn write_tables(dir: &std::path::Path, events: u64, overwrite: bool) -> Result<(), WriteError> {
    let g = Generator::new(GeneratorConfig::default()).unwrap();
    let mut tables = CsvTables::create(dir, overwrite)?;
    for e in g.events(0..events) {
        tables.write(&e)?;
    }
    let counts = tables.finish()?;
    assert_eq!(counts.total(), events);
    Ok(())
}

#[test]
fn the_tables_hold_every_event_in_its_own_file() {
    let scratch = Scratch::new("tables");
    let dir = scratch.0.join("out");
    // Enough bids to fill several write buffers.
    write_tables(&dir, 60_000, false).unwrap();
    let g = Generator::new(GeneratorConfig::default()).unwrap();
    for kind in EventKind::ALL {
        let path = CsvTables::path(&dir, kind);
        assert!(path.ends_with(format!("{}/part-0.csv", kind.table())));
        let rows = parse(&fs::read_to_string(&path).unwrap());
        let expected: Vec<Vec<String>> = g
            .events(0..60_000)
            .filter(|e| e.kind() == kind)
            .map(|e| fields(&e))
            .collect();
        assert_eq!(rows.len(), expected.len(), "{}", path.display());
        assert!(rows == expected, "{} differs", path.display());
    }
}

#[test]
fn existing_tables_are_refused_unless_overwriting() {
    let scratch = Scratch::new("exists");
    let dir = scratch.0.join("out");
    write_tables(&dir, 1000, false).unwrap();
    let before = fs::read(CsvTables::path(&dir, EventKind::Bid)).unwrap();

    let err = write_tables(&dir, 500, false).unwrap_err();
    assert!(matches!(err, WriteError::Exists { .. }), "{err}");
    assert!(err.to_string().contains("person/part-0.csv"), "{err}");
    assert_eq!(
        fs::read(CsvTables::path(&dir, EventKind::Bid)).unwrap(),
        before
    );

    // One table file alone is enough to refuse, and nothing is created.
    let other = scratch.0.join("other");
    fs::create_dir_all(other.join("bid")).unwrap();
    fs::write(CsvTables::path(&other, EventKind::Bid), "keep me\n").unwrap();
    let err = write_tables(&other, 500, false).unwrap_err();
    assert!(err.to_string().contains("bid/part-0.csv"), "{err}");
    assert!(!other.join("person").exists());

    // Overwriting truncates: 500 events' rows, not 1,500.
    write_tables(&dir, 500, true).unwrap();
    let bids = fs::read_to_string(CsvTables::path(&dir, EventKind::Bid)).unwrap();
    assert_eq!(bids.lines().count(), 460);
}

#[test]
fn a_directory_that_cannot_be_made_is_named() {
    let scratch = Scratch::new("file");
    fs::create_dir_all(&scratch.0).unwrap();
    let file = scratch.0.join("a-file");
    fs::write(&file, "").unwrap();
    let err = write_tables(&file, 10, false).expect_err("a file is no directory");
    let text = err.to_string();
    assert!(matches!(err, WriteError::Io { .. }), "{text}");
    assert!(text.starts_with("cannot create the directory"), "{text}");
    assert!(text.contains("a-file/person"), "{text}");
}
