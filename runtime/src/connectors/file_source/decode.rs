//! What the file source makes of one line: a [`LineDecoder`] turns the
//! line's text, borrowed from the read buffer, into a record, so that a
//! format (SQL's `csv` and `json`) parses in place, without a `String` per
//! line, and its errors name the file, the line and the column.
//!
//! [`Lines`], the default, emits every line as a `String`.

/// What became of one line.
#[derive(Debug, PartialEq)]
pub enum Decoded<T> {
    /// A record to emit.
    Record(T),
    /// A line that holds no record (blank, a comment, a header): dropped
    /// silently.
    Skip,
    /// A line that does not parse, skipped because the format ignores
    /// parse errors (`*.ignore-parse-errors`): dropped and counted; the
    /// reason is logged for the first one of each file range.
    Ignored(String),
    /// A line that does not parse: the job fails with the reason, the
    /// file, the line and (if the decoder knows it) the column.
    Error {
        /// 1-based byte column within the line where the problem is.
        column: Option<usize>,
        /// What is wrong.
        message: String,
    },
}

/// Turns a line into a record (see the module doc).
pub trait LineDecoder: 'static {
    /// The records made.
    type Out;
    /// Decodes `line`: its text without the `\n` (a `\r` before it is
    /// kept).
    fn decode(&mut self, line: &str) -> Decoded<Self::Out>;

    /// Decodes a file's first line (the one at byte offset 0, without a
    /// byte order mark): as any other unless the format skips a header
    /// line (SQL's `csv.ignore-first-line`).
    fn decode_first(&mut self, line: &str) -> Decoded<Self::Out> {
        self.decode(line)
    }
}

/// Every line as a `String` record.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lines;

impl LineDecoder for Lines {
    type Out = String;

    #[inline]
    fn decode(&mut self, line: &str) -> Decoded<String> {
        Decoded::Record(line.to_owned())
    }
}

/// A closure as a decoder.
pub struct DecodeWith<F>(pub F);

impl<T, F: FnMut(&str) -> Decoded<T> + 'static> LineDecoder for DecodeWith<F> {
    type Out = T;

    #[inline]
    fn decode(&mut self, line: &str) -> Decoded<T> {
        (self.0)(line)
    }
}
