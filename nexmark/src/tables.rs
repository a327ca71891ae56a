//! The three CSV tables on disk: `DIR/person/part-0.csv`,
//! `DIR/auction/part-0.csv` and `DIR/bid/part-0.csv`, one folder per
//! table as Flink's filesystem connector (and most engines) read a table.
//!
//! [`CsvTables::create`] makes the folders and files: by default it
//! refuses a `DIR` that already holds any of the three files (nothing is
//! created then), so that a second run never mixes its rows into the
//! first's; with `overwrite` it truncates them. Rows are appended to one
//! buffer per table and written in large blocks. A failure names the file
//! and what was being done to it. After a failure the files hold a prefix
//! of the rows and should be discarded.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::csv::push_event;
use crate::model::{Event, EventKind};

/// A table's buffer is written out once it holds this many bytes.
const FLUSH_AT: usize = 1 << 20;

/// Why the tables could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A table file is already there and `overwrite` was not asked for.
    #[error("{} already exists (refusing to overwrite it)", path.display())]
    Exists {
        /// The table file found.
        path: PathBuf,
    },
    /// The file system refused: e.g. no permission, `DIR` is a regular
    /// file, the disk is full.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done: `create the directory`, `create`, `write`.
        op: &'static str,
        /// The directory or file it was done to.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
}

/// Rows written per table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableCounts {
    /// Rows in `person`.
    pub person: u64,
    /// Rows in `auction`.
    pub auction: u64,
    /// Rows in `bid`.
    pub bid: u64,
}

impl TableCounts {
    /// All rows.
    pub fn total(&self) -> u64 {
        self.person + self.auction + self.bid
    }

    /// The count of one table.
    pub fn of(&self, kind: EventKind) -> u64 {
        match kind {
            EventKind::Person => self.person,
            EventKind::Auction => self.auction,
            EventKind::Bid => self.bid,
        }
    }

    fn add(&mut self, kind: EventKind) {
        match kind {
            EventKind::Person => self.person += 1,
            EventKind::Auction => self.auction += 1,
            EventKind::Bid => self.bid += 1,
        }
    }
}

/// One open table file and the rows not yet written to it.
struct TableFile {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
}

impl TableFile {
    fn flush(&mut self) -> Result<(), WriteError> {
        self.file
            .write_all(&self.buf)
            .map_err(|source| WriteError::Io {
                op: "write",
                path: self.path.clone(),
                source,
            })?;
        self.buf.clear();
        Ok(())
    }
}

/// The three table files of one directory, open for writing.
pub struct CsvTables {
    /// Person, auction, bid ([`EventKind::index`]).
    files: [TableFile; 3],
    counts: TableCounts,
}

impl CsvTables {
    /// The file of table `kind` under `dir`: `dir/<table>/part-0.csv`.
    pub fn path(dir: &Path, kind: EventKind) -> PathBuf {
        dir.join(kind.table()).join("part-0.csv")
    }

    /// Creates `dir` and its three table folders if missing, and the three
    /// files: new ones, or, with `overwrite`, truncated ones. Without
    /// `overwrite`, an existing table file is refused before anything is
    /// created.
    pub fn create(dir: &Path, overwrite: bool) -> Result<Self, WriteError> {
        if !overwrite {
            for kind in EventKind::ALL {
                let path = Self::path(dir, kind);
                if path.symlink_metadata().is_ok() {
                    return Err(WriteError::Exists { path });
                }
            }
        }
        let open = |kind: EventKind| -> Result<TableFile, WriteError> {
            let folder = dir.join(kind.table());
            fs::create_dir_all(&folder).map_err(|source| WriteError::Io {
                op: "create the directory",
                path: folder.clone(),
                source,
            })?;
            let path = Self::path(dir, kind);
            let mut options = OpenOptions::new();
            options.write(true);
            if overwrite {
                options.create(true).truncate(true);
            } else {
                // Also refuses a file that appeared since the check above.
                options.create_new(true);
            }
            let file = options.open(&path).map_err(|source| match source.kind() {
                io::ErrorKind::AlreadyExists => WriteError::Exists { path: path.clone() },
                _ => WriteError::Io {
                    op: "create",
                    path: path.clone(),
                    source,
                },
            })?;
            Ok(TableFile {
                path,
                file,
                buf: Vec::with_capacity(FLUSH_AT + 4096),
            })
        };
        Ok(Self {
            files: [
                open(EventKind::Person)?,
                open(EventKind::Auction)?,
                open(EventKind::Bid)?,
            ],
            counts: TableCounts::default(),
        })
    }

    /// Appends `event` as a row of its table.
    pub fn write(&mut self, event: &Event) -> Result<(), WriteError> {
        let file = &mut self.files[event.kind().index()];
        let kind = push_event(&mut file.buf, event);
        self.counts.add(kind);
        if file.buf.len() >= FLUSH_AT {
            file.flush()?;
        }
        Ok(())
    }

    /// Rows written so far, per table.
    pub fn counts(&self) -> TableCounts {
        self.counts
    }

    /// Writes out what is buffered and closes the files; returns the rows
    /// per table.
    pub fn finish(mut self) -> Result<TableCounts, WriteError> {
        for file in &mut self.files {
            file.flush()?;
        }
        Ok(self.counts)
    }
}
