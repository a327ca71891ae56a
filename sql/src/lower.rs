//! Plans lowered onto weir's DataStream operators: one job graph for all
//! INSERTs of a script (Flink's statement set).
//!
//! Every plan node becomes operators with stable uids (`<kind>-<n>-...`,
//! numbered in plan order, so the same script restores its own
//! checkpoints; a stateful operator's ends in a digest of its state's
//! layout, so a changed aggregation is refused rather than misread): a scan a source (plus a parse of each line for files, the
//! computed columns and the watermark generator); a calc a chained
//! flat-map; a window aggregation `key_by` on the group keys and weir's
//! window operator; a group aggregation `key_by` and a keyed process
//! function with the accumulators in keyed state; a union weir's union.
//! Each node's stream is boxed (`Stream::boxed`) so that the next node,
//! whatever it is, continues one stream type, chained to it in the same
//! task through one virtual call per record (or run of records); a
//! sub-plan used more than once ([`crate::reuse`]) is shared instead, each
//! use a branch of its fork.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use weir_runtime::build::ChainBuilder;
use weir_runtime::core::paths::resolved;
use weir_runtime::{
    AttachedEventTimeWindows, BoxedStream, CumulativeEventTimeWindows, Decoded,
    EventTimeSessionWindows, FileSource, JobGraph, LineDecoder, Offset,
    ProcessingTimeSessionWindows, SharedStream, SlidingEventTimeWindows,
    SlidingProcessingTimeWindows, Stream, SubtaskInfo, TimeWindow, TransactionalFileSink,
    TumblingEventTimeWindows, TumblingProcessingTimeWindows, WatermarkStrategy,
};

use crate::changelog::UpdateBefore;
use crate::collect::Collected;
use crate::reuse::{Lookup, Memo, Reuse};

use crate::agg::{Aggs, GroupAggregate, WindowAggregate};
use crate::calc::Calc;
use crate::catalog::Table;
use crate::connectors::{datagen_source, BlackholeSink, Connector, PrintSink};
use crate::error::{Result, SqlError};
use crate::expr::Scalar;
use crate::join::interval::{IntervalJoin, Joinable};
use crate::join::regular::RegularJoin;
use crate::plan::{Node, Plan, Window};
use crate::prune::ReadColumns;
use crate::types::{DataType, Schema};
use crate::value::{Key, Row, RowKind, Value, Values};
use crate::watermark::DeclaredWatermarks;

/// A stream of rows after any plan node.
pub type Rows<'j> = BoxedStream<'j, Row>;

/// Builds plans into one job.
pub struct Lowering<'j> {
    job: &'j JobGraph,
    next: usize,
    /// When the job was planned (datagen's random timestamps count back
    /// from it).
    base_ms: i64,
    /// Job parameters to declare (`input-<table>` = a file source's
    /// directory, absolute): set on the job once lowering is done.
    pub parameters: Vec<(String, String)>,
    /// Output directories to declare (file sinks).
    pub outputs: Vec<PathBuf>,
    /// Input directories (or files) to declare (file sources).
    pub inputs: Vec<PathBuf>,
    /// The directories filesystem sources read, by table, and the
    /// directories filesystem sinks write, by table: kept apart
    /// ([`keep_apart`]).
    read_dirs: Vec<(String, PathBuf)>,
    written_dirs: Vec<(String, PathBuf)>,
    /// weir's own directories, `(key, what they hold, directory)`
    /// (`state.checkpoints.dir`, `state.savepoints.dir`): no filesystem
    /// source may read them.
    state_dirs: Vec<(&'static str, &'static str, PathBuf)>,
    /// `table.exec.state.ttl`: how long a regular join keeps a row after
    /// it was last written (`None`: forever).
    state_ttl: Option<Duration>,
    /// `table.exec.source.idle-timeout` (`None`: sources never idle).
    idle_timeout: Option<Duration>,
    /// `pipeline.auto-watermark-interval`: how far a row must move a
    /// declared watermark to emit it at once ([`DeclaredWatermarks`]).
    watermark_interval: Duration,
    /// `job.records` and `job.rate` for every generated source.
    generated: GeneratedSources,
    /// The uids of the generated sources lowered with `generated` set.
    pub generated_sources: Vec<String>,
    /// The job's repeated sub-plans ([`crate::reuse`]), each lowered once:
    /// later occurrences read a branch of it.
    reuse: Memo<SharedStream<'j, Row>>,
    /// Which group aggregations emit update-before rows.
    update_before: UpdateBefore,
    /// Which physical columns of each table the job reads (`None`: all).
    read: Option<ReadColumns>,
}

/// Every generated source's size and rate in place of its table's
/// (`job.records`, `job.rate`; `None`: the table's own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GeneratedSources {
    /// Rows of each (`number-of-rows`; events of all kinds for
    /// `nexmark`'s `events.num`).
    pub rows: Option<u64>,
    /// Rows per second of each over its subtasks (`rows-per-second`;
    /// events for `nexmark`'s `tps`).
    pub rate: Option<u64>,
}

impl GeneratedSources {
    /// Whether either is set.
    pub fn is_set(&self) -> bool {
        self.rows.is_some() || self.rate.is_some()
    }
}

impl<'j> Lowering<'j> {
    /// Lowers into `job`.
    pub fn new(job: &'j JobGraph) -> Self {
        let base_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        Self {
            job,
            next: 0,
            base_ms,
            parameters: Vec::new(),
            outputs: Vec::new(),
            inputs: Vec::new(),
            read_dirs: Vec::new(),
            written_dirs: Vec::new(),
            state_dirs: Vec::new(),
            state_ttl: None,
            idle_timeout: None,
            watermark_interval:
                weir_runtime::operators::timestamps::DEFAULT_AUTO_WATERMARK_INTERVAL,
            generated: GeneratedSources::default(),
            generated_sources: Vec::new(),
            reuse: Memo::default(),
            update_before: UpdateBefore::default(),
            read: None,
        }
    }

    /// The same lowering refusing a filesystem source that reads `config`'s
    /// `state.checkpoints.dir` or `state.savepoints.dir`: it would read
    /// weir's checkpoint segments as input (failing as text that is not
    /// UTF-8), or their history as JSON rows.
    pub fn with_state_dirs(mut self, config: &weir_runtime::Config) -> Self {
        let dirs = [
            (
                "state.checkpoints.dir",
                "checkpoint",
                &config.checkpoints_dir,
            ),
            ("state.savepoints.dir", "savepoint", &config.savepoints_dir),
        ];
        self.state_dirs = dirs
            .into_iter()
            .filter_map(|(key, what, dir)| Some((key, what, dir.clone()?)))
            .collect();
        self
    }

    /// The same lowering with `table.exec.source.idle-timeout` = `d`
    /// (zero: never idle).
    pub fn with_idle_timeout(mut self, d: Duration) -> Self {
        self.idle_timeout = (!d.is_zero()).then_some(d);
        self
    }

    /// The same lowering with `pipeline.auto-watermark-interval` = `d`.
    pub fn with_watermark_interval(mut self, d: Duration) -> Self {
        self.watermark_interval = d;
        self
    }

    /// The same lowering with every generated source (`datagen`,
    /// `nexmark`) sized and paced as `generated` says.
    pub fn with_generated_sources(mut self, generated: GeneratedSources) -> Self {
        self.generated = generated;
        self
    }

    /// The same lowering with `table.exec.state.ttl` = `ttl` (zero: keep
    /// state forever).
    pub fn with_state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = (!ttl.is_zero()).then_some(ttl);
        self
    }

    /// The same lowering running each sub-plan that `reuse` finds
    /// repeated once, its rows fanned out to every occurrence.
    pub fn with_reuse(mut self, reuse: Reuse) -> Self {
        self.reuse = Memo::new(reuse);
        self
    }

    /// The same lowering with generated sources making only the columns
    /// `read` says the job reads ([`crate::prune`]).
    pub fn with_read_columns(mut self, read: ReadColumns) -> Self {
        self.read = Some(read);
        self
    }

    /// The same lowering with the group aggregations emitting
    /// update-before rows only where `update_before` says a consumer
    /// needs them.
    pub fn with_update_before(mut self, update_before: UpdateBefore) -> Self {
        self.update_before = update_before;
        self
    }

    fn uid(&mut self, kind: &str) -> String {
        self.next += 1;
        format!("{kind}-{}", self.next)
    }

    /// The uid of a stateful operator: [`uid`](Self::uid) with a digest of
    /// what its state's entries are laid out as (`layout`: its key and row
    /// types, its aggregates' accumulator slots, its window). A script
    /// changed so that the state means something else (SUM turned into
    /// AVG, a column added to a joined side) no longer finds its old state
    /// under the same uid: the restore is refused as Flink refuses state
    /// it cannot map ("non-restored state", `--allow-non-restored-state`
    /// starts the operator afresh), instead of reading accumulator slots
    /// of one layout as another's.
    fn state_uid(&mut self, kind: &str, layout: &impl std::fmt::Debug) -> String {
        let uid = self.uid(kind);
        let digest = weir_runtime::KeyHash::key_hash(format!("{layout:?}").as_str());
        format!("{uid}-{:08x}", digest >> 32)
    }

    /// The rows of `plan`: a branch of its one run if it is a repeated
    /// sub-plan ([`Lowering::with_reuse`]).
    pub fn rows(&mut self, plan: &Plan) -> Result<Rows<'j>> {
        let digest = match self.reuse.lookup(plan) {
            Lookup::Once => return self.lower(plan),
            Lookup::Again(shared) => return Ok(shared.branch().boxed()),
            Lookup::First(digest) => digest,
        };
        let shared = self.lower(plan)?.share();
        let rows = shared.branch().boxed();
        self.reuse.remember(digest, shared);
        Ok(rows)
    }

    /// The operators of `plan`'s node, on the rows of its inputs.
    fn lower(&mut self, plan: &Plan) -> Result<Rows<'j>> {
        Ok(match &plan.node {
            Node::Scan(t) => self.scan(t)?,
            Node::Values(rows) => {
                let uid = self.uid("values");
                let rows = rows.clone();
                self.job
                    .source(&uid, move |info: &SubtaskInfo| {
                        let rows = rows.clone();
                        weir_runtime::NumberSequenceSource::new(
                            info,
                            rows.len() as u64,
                            info.parallelism as u64,
                            move |i| rows[i as usize].clone(),
                        )
                    })
                    .boxed()
            }
            Node::Calc {
                input,
                filter,
                project,
            } => {
                let rows = self.rows(input)?;
                let uid = self.uid("calc");
                let calc = Calc::new(filter.clone(), project, input.schema.len());
                rows.flat_map(&uid, move |row: Row| calc.apply(row)).boxed()
            }
            Node::WindowAgg {
                input,
                window,
                time,
                keys,
                aggs,
            } => {
                let rows = self.rows(input)?;
                let layout = (window, key_types(input, *keys), agg_layout(aggs));
                let uid = self.state_uid("window-aggregate", &layout);
                let nkeys = *keys;
                let time = *time;
                let ts = move |r: &Row| r.values[time].as_i64().unwrap_or(i64::MIN);
                let proctime = input.schema.fields[time].proctime;
                // A row without an event time belongs to no window: Flink's
                // window operators drop it (it once made a window at the
                // smallest time, or overflowed aligning one).
                let rows = if proctime {
                    rows
                } else {
                    rows.filter(&format!("{uid}-timed"), move |r: &Row| {
                        !r.values[time].is_null()
                    })
                    .boxed()
                };
                let keyed = rows.key_by_hash(
                    move |r: &Row| key_of(r, nkeys),
                    move |r: &Row| Key::hash_of_slice(&r.values[..nkeys]),
                );
                let f = WindowAggregate(Aggs::new(aggs));
                let out = move |(k, w, a): (Key, TimeWindow, Row)| window_row(k, w, a);
                let map_uid = format!("{uid}-output");
                // The assigner differs per arm; what follows it does not.
                macro_rules! aggregated {
                    ($assigner:expr) => {
                        keyed
                            .window($assigner)
                            .aggregate(&uid, f)
                            .map(&map_uid, out)
                            .boxed()
                    };
                }
                match *window {
                    // Processing time (a PROCTIME() column): the wall clock.
                    Window::Tumble { size, offset } if proctime => {
                        aggregated!(TumblingProcessingTimeWindows::of(ms(size))
                            .with_offset(offset_of(offset)))
                    }
                    Window::Hop {
                        slide,
                        size,
                        offset,
                    } if proctime => {
                        aggregated!(SlidingProcessingTimeWindows::of(ms(size), ms(slide))
                            .with_offset(offset_of(offset)))
                    }
                    Window::Session { gap } if proctime => {
                        aggregated!(ProcessingTimeSessionWindows::with_gap(ms(gap)))
                    }
                    Window::Tumble { size, offset } => {
                        aggregated!(TumblingEventTimeWindows::of(ms(size), ts)
                            .with_offset(offset_of(offset)))
                    }
                    Window::Hop {
                        slide,
                        size,
                        offset,
                    } => aggregated!(SlidingEventTimeWindows::of(ms(size), ms(slide), ts)
                        .with_offset(offset_of(offset))),
                    Window::Cumulate { step, size, offset } => {
                        aggregated!(CumulativeEventTimeWindows::of(ms(step), ms(size), ts)
                            .with_offset(offset_of(offset)))
                    }
                    Window::Session { gap } => {
                        aggregated!(EventTimeSessionWindows::with_gap(ms(gap), ts))
                    }
                    // The time column holds each row's window end.
                    Window::Attached { size } => {
                        aggregated!(AttachedEventTimeWindows::of(ms(size), ts))
                    }
                }
            }
            Node::GroupAgg { input, keys, aggs } => {
                let rows = self.rows(input)?;
                let layout = (key_types(input, *keys), agg_layout(aggs));
                let uid = self.state_uid("group-aggregate", &layout);
                let nkeys = *keys;
                let aggs = Aggs::new(aggs);
                let update_before = self.update_before.emits(plan);
                rows.key_by_hash(
                    move |r: &Row| key_of(r, nkeys),
                    move |r: &Row| Key::hash_of_slice(&r.values[..nkeys]),
                )
                .process(&uid, move |_: &SubtaskInfo| {
                    GroupAggregate::new(aggs.clone(), nkeys).with_update_before(update_before)
                })
                .boxed()
            }
            Node::OverAgg {
                input,
                partition,
                time,
                frame,
                aggs,
                lags,
            } => {
                let rows = self.rows(input)?;
                let layout = (input.schema.types(), partition, frame, agg_layout(aggs));
                // (LAGs keep rows of their own: in the digest when there.)
                let uid = if lags.is_empty() {
                    self.state_uid("over-aggregate", &layout)
                } else {
                    self.state_uid("over-aggregate", &(layout, lags))
                };
                crate::over_agg::lower(rows, &uid, partition, *time, *frame, Aggs::new(aggs), lags)
            }
            Node::Rank { input, rank } => {
                let rows = self.rows(input)?;
                let uid = self.state_uid("rank", &(input.schema.types(), rank));
                crate::rank::lower(rows, &uid, rank)
            }
            Node::WindowAssign {
                input,
                window,
                time,
            } => {
                let rows = self.rows(input)?;
                let uid = self.uid("window-assign");
                let (window, time) = (*window, *time);
                rows.flat_map(&uid, move |row: Row| assign_windows(window, time, row))
                    .boxed()
            }
            Node::Replicate { input } => {
                let rows = self.rows(input)?;
                let uid = self.uid("replicate");
                rows.process(&uid, |_: &SubtaskInfo| {
                    crate::replicate::ReplicateRows::default()
                })
                .boxed()
            }
            Node::Union(inputs) => {
                let mut it = inputs.iter();
                let mut first = Some(self.rows(it.next().expect("a union has inputs"))?);
                let mut acc: Option<weir_runtime::PartitionedStream<'j, Row>> = None;
                for p in it {
                    let next = self.rows(p)?;
                    acc = Some(match acc {
                        None => first.take().expect("the first input").union(next),
                        Some(u) => u.union(next),
                    });
                }
                match (acc, first) {
                    (Some(u), _) => u.boxed(),
                    (None, Some(f)) => f,
                    (None, None) => unreachable!("one of them is set"),
                }
            }
            Node::Join {
                left,
                right,
                kind,
                on,
            } => {
                let residual = on.residual.clone().map(Arc::new);
                let (kind, ttl) = (*kind, self.state_ttl);
                let widths = (left.schema.len(), right.schema.len());
                let append_only = [!left.updating, !right.updating];
                self.keyed_join(left, right, on, "join", move |_: &SubtaskInfo| {
                    RegularJoin::new(kind, residual.clone(), widths.0, widths.1, ttl)
                        .with_append_only(append_only)
                })?
            }
            Node::WindowJoin {
                left,
                right,
                kind,
                on,
                ends,
            } => {
                let residual = on.residual.clone().map(Arc::new);
                let (kind, ends) = (*kind, *ends);
                let widths = [left.schema.len(), right.schema.len()];
                self.keyed_join(left, right, on, "window-join", move |_: &SubtaskInfo| {
                    crate::join::window::WindowJoin::new(kind, residual.clone(), ends, widths)
                })?
            }
            Node::TemporalJoin {
                left,
                right,
                outer,
                on,
                left_time,
                right_time,
            } => {
                let residual = on.residual.clone().map(Arc::new);
                let (lt, rt, width, outer) = (*left_time, *right_time, right.schema.len(), *outer);
                self.keyed_join(left, right, on, "temporal-join", move |_: &SubtaskInfo| {
                    crate::join::temporal::TemporalJoin::new(lt, rt, width, outer, residual.clone())
                })?
            }
            Node::IntervalJoin {
                left,
                right,
                kind,
                on,
                bounds,
            } => {
                // Every row goes in: one that cannot match (a NULL key or
                // time) is dropped, or comes out padded at once if its side
                // is outer.
                let (lk, lt) = (keys(&on.left_keys), bounds.left_time);
                let (rk, rt) = (keys(&on.right_keys), bounds.right_time);
                let left_joinable: Joinable = {
                    let lk = lk.clone();
                    Arc::new(move |r: &Row| joinable(&lk, lt, r))
                };
                let right_joinable: Joinable = {
                    let rk = rk.clone();
                    Arc::new(move |r: &Row| joinable(&rk, rt, r))
                };
                let right_keyed = self
                    .rows(right)?
                    .key_by(move |r: &Row| key_values(&rk, r))
                    .detach();
                // Named as when only outer joins ran on this operator:
                // their checkpoints still restore.
                let uid = self.state_uid(
                    "outer-interval-join",
                    &(kind.to_string(), left.schema.types(), right.schema.types()),
                );
                let residual = on.residual.clone().map(Arc::new);
                let (bounds, kind) = (*bounds, *kind);
                let widths = (left.schema.len(), right.schema.len());
                self.rows(left)?
                    .key_by(move |r: &Row| key_values(&lk, r))
                    .connect(right_keyed)
                    .process(&uid, move |_: &SubtaskInfo| {
                        IntervalJoin::new(
                            bounds,
                            kind,
                            residual.clone(),
                            widths,
                            left_joinable.clone(),
                            right_joinable.clone(),
                        )
                    })
                    .boxed()
            }
        })
    }

    fn scan(&mut self, t: &Arc<Table>) -> Result<Rows<'j>> {
        let uid = self.uid(&format!("source-{}", t.name));
        let computed = t
            .columns
            .iter()
            .enumerate()
            .any(|(i, c)| c.as_column() != Some(i))
            || t.columns.len() != t.physical.len();
        let columns = Arc::new(Calc::new(None, &t.columns, t.physical.len()));
        // Event time is given in the source's own chain, before it is
        // boxed: no boxed call between the source and its timestamps.
        let time = EventTime {
            watermark: t.watermark,
            idle: self.idle_timeout,
            interval: self.watermark_interval,
        };
        Ok(match &t.connector {
            Connector::Filesystem {
                path,
                format,
                monitor_interval,
            } => {
                // A directory (every file of it) or one file.
                let meta = std::fs::metadata(path).map_err(|e| SqlError::Connector {
                    table: t.name.clone(),
                    message: format!("cannot read 'path' = '{}': {e}", path.display()),
                })?;
                if !meta.is_dir() && !meta.is_file() {
                    return Err(SqlError::Connector {
                        table: t.name.clone(),
                        message: format!(
                            "'path' = '{}' is neither a directory nor a regular file",
                            path.display()
                        ),
                    });
                }
                if meta.is_dir() {
                    for (sink, dir) in &self.written_dirs {
                        keep_apart(&t.name, path, sink, dir)?;
                    }
                    for (key, what, dir) in &self.state_dirs {
                        if let Some(lies) = read_by_source(path, dir) {
                            return Err(SqlError::Connector {
                                table: t.name.clone(),
                                message: format!(
                                    "{key} '{}' {lies} this table reads ('path' = '{}'): the \
                                     source would read weir's {what} files as its input; give \
                                     {what}s a directory outside it, or one whose name starts \
                                     with '_' or '.', which the source skips",
                                    dir.display(),
                                    path.display()
                                ),
                            });
                        }
                    }
                    self.read_dirs.push((t.name.clone(), path.clone()));
                }
                // Absolute, as the job's outputs are: run from another
                // working directory, `in` is another directory, and a
                // checkpoint of one does not restore into the other.
                let absolute: PathBuf = std::path::absolute(path)
                    .unwrap_or_else(|_| path.clone())
                    .components()
                    .collect();
                self.parameters
                    .push((format!("input-{}", t.name), absolute.display().to_string()));
                self.inputs.push(absolute);
                let input = path.clone();
                let name = t.name.clone();
                let format = format.clone();
                let physical = t.physical.clone();
                let monitor = *monitor_interval;
                // Lines are parsed in the source, from its read buffer:
                // no String per line, and errors name file, line and column.
                time.of(self.job.source(&uid, move |info: &SubtaskInfo| {
                    let source = FileSource::new(&input, info)
                        .unwrap_or_else(|e| panic!("table `{name}`: {e}"));
                    let source = match monitor {
                        Some(interval) => source.with_monitor_interval(interval),
                        None => source,
                    };
                    let (format, physical, columns) =
                        (format.clone(), physical.clone(), columns.clone());
                    let skip_first = format.skips_first_line();
                    source.with_decoder(FileLines {
                        skip_first,
                        decode: move |line: &str| match format.decode(line, &physical) {
                            Decoded::Record(r) if computed => Decoded::Record(columns.project(r)),
                            other => other,
                        },
                    })
                }))
            }
            Connector::Datagen(g) => {
                let mut g = g.clone();
                if let Some(read) = self.read.as_ref().and_then(|r| r.physical(t)) {
                    g.read = Some(read.to_vec());
                }
                if self.generated.is_set() {
                    g.rows = self.generated.rows.or(g.rows);
                    g.rows_per_second = self.generated.rate.unwrap_or(g.rows_per_second);
                    self.generated_sources.push(uid.clone());
                }
                let types = t.physical.types();
                let base = self.base_ms;
                let s = self.job.source(&uid, move |info: &SubtaskInfo| {
                    datagen_source(&g, &types, base, info)
                });
                if computed {
                    time.of(s.map(&format!("{uid}-computed"), move |r: Row| columns.project(r)))
                } else {
                    time.of(s)
                }
            }
            Connector::Nexmark(n) => {
                let mut n = n.clone();
                if let Some(read) = self.read.as_ref().and_then(|r| r.physical(t)) {
                    n = n.reading(read);
                }
                if self.generated.is_set() {
                    n.events = self.generated.rows.or(n.events);
                    n.tps = self.generated.rate.unwrap_or(n.tps);
                    self.generated_sources.push(uid.clone());
                }
                let (table, kind) = (n.clone(), n.clone());
                let to_row = move |e: u64| {
                    let r = table.row(e);
                    if computed {
                        columns.project(r)
                    } else {
                        r
                    }
                };
                let events = self
                    .job
                    .source(&uid, move |info: &SubtaskInfo| n.source(info));
                // Event time from every event the subtask generates, before
                // its kind is kept: at an even parallelism no person falls
                // to an odd subtask (persons are every 50th event), which
                // held every watermark downstream at its start until the
                // input ended (an unbounded q8 emitted nothing). Flink's
                // suite gets the same by declaring the watermark on one
                // table of all events.
                match time.of_event_numbers(t, &kind, events) {
                    Ok(timed) => timed
                        .filter(&format!("{uid}-kind"), move |&e: &u64| kind.is_mine(e))
                        .map(&format!("{uid}-rows"), to_row)
                        .boxed(),
                    Err(events) => time.of(events
                        .filter(&format!("{uid}-kind"), move |&e: &u64| kind.is_mine(e))
                        .map(&format!("{uid}-rows"), to_row)),
                }
            }
            Connector::Kafka(k) if !k.upsert => {
                let source = k.source(&t.name)?;
                let s = self
                    .job
                    .source(&uid, move |info: &SubtaskInfo| source.reader(info));
                if computed {
                    time.of(s.map(&format!("{uid}-computed"), move |r: Row| columns.project(r)))
                } else {
                    time.of(s)
                }
            }
            other => {
                return Err(SqlError::Connector {
                    table: t.name.clone(),
                    message: format!(
                        "the '{}' connector cannot be read (it is a sink)",
                        other.name()
                    ),
                })
            }
        })
    }

    /// `left` and `right` keyed by `on`'s join keys into one two-input
    /// stage running `function` (the right input built first and set
    /// aside: a job is built through one stream at a time).
    fn keyed_join<F>(
        &mut self,
        left: &Plan,
        right: &Plan,
        on: &crate::join::JoinOn,
        kind: &str,
        function: impl Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    ) -> Result<Rows<'j>>
    where
        F: weir_runtime::KeyedCoProcessFunction<Key = Key, In1 = Row, In2 = Row, Out = Row>,
    {
        let rk = keys(&on.right_keys);
        let right_keyed = self
            .rows(right)?
            .key_by(move |r: &Row| key_values(&rk, r))
            .detach();
        let lk = keys(&on.left_keys);
        let left_rows = self.rows(left)?;
        let uid = self.state_uid(kind, &(left.schema.types(), right.schema.types()));
        Ok(left_rows
            .key_by(move |r: &Row| key_values(&lk, r))
            .connect(right_keyed)
            .process(&uid, function)
            .boxed())
    }

    /// Ends `rows` (of `plan`) in table `t`'s connector.
    pub fn sink(&mut self, rows: Rows<'j>, plan: &Plan, t: &Table) -> Result<()> {
        let uid = self.uid(&format!("sink-{}", t.name));
        if plan.schema.types() != t.physical.types() {
            return Err(SqlError::Type(format!(
                "INSERT INTO `{}`: the query gives {}, the table's columns are {}",
                t.name, plan.schema, t.physical
            )));
        }
        let types = t.physical.types();
        match &t.connector {
            Connector::Print { identifier, stderr } => {
                let id = identifier.clone();
                let stderr = *stderr;
                rows.sink(&uid, move |info: &SubtaskInfo| {
                    PrintSink::new(id.as_deref(), stderr, types.clone(), info)
                });
            }
            Connector::Blackhole => rows.sink(&uid, |_: &SubtaskInfo| BlackholeSink),
            Connector::Filesystem { path, format, .. } => {
                if let Some(e) = refuse_updates(t, plan) {
                    return Err(e);
                }
                for (source, dir) in &self.read_dirs {
                    keep_apart(source, dir, &t.name, path)?;
                }
                self.written_dirs.push((t.name.clone(), path.clone()));
                if path.exists() && !path.is_dir() {
                    return Err(SqlError::Connector {
                        table: t.name.clone(),
                        message: format!(
                            "'path' = '{}' is a file: the filesystem sink writes its part \
                             files into a directory",
                            path.display()
                        ),
                    });
                }
                std::fs::create_dir_all(path).map_err(|e| SqlError::Connector {
                    table: t.name.clone(),
                    message: format!("cannot create 'path' = '{}': {e}", path.display()),
                })?;
                self.outputs.push(path.clone());
                let dir: PathBuf = path.clone();
                let format = format.clone();
                let schema: Schema = t.physical.clone();
                rows.sink(&uid, move |info: &SubtaskInfo| {
                    let format = format.clone();
                    let schema = schema.clone();
                    TransactionalFileSink::new(&dir, info, move |r: &Row, buf: &mut Vec<u8>| {
                        format.write(r, &schema, buf)
                    })
                });
            }
            Connector::Kafka(k) => {
                if let Some(e) = refuse_updates(t, plan) {
                    return Err(e);
                }
                let sink = k.sink(&t.name)?;
                if k.upsert && !crate::changelog::upsert_writes_update_before(plan) {
                    rows.flat_map(&format!("{uid}-upserts"), move |r: Row| {
                        (r.kind != RowKind::UpdateBefore).then_some(r)
                    })
                    .sink(&uid, move |info: &SubtaskInfo| sink.writer(info));
                } else {
                    rows.sink(&uid, move |info: &SubtaskInfo| sink.writer(info));
                }
            }
            Connector::Datagen(_) | Connector::Nexmark(_) => {
                return Err(SqlError::Connector {
                    table: t.name.clone(),
                    message: format!(
                        "the '{}' connector cannot be written (it is a source)",
                        t.connector.name()
                    ),
                })
            }
        }
        Ok(())
    }

    /// Ends `rows` in a collecting sink: every row, with its kind, lands in
    /// the returned collection (a bare SELECT's result), exactly once
    /// across restarts and restores ([`crate::collect`]).
    pub fn collect(&mut self, rows: Rows<'j>) -> Collected {
        let uid = self.uid("collect");
        let out = Collected::new();
        let o = out.clone();
        rows.sink(&uid, move |info: &SubtaskInfo| o.sink(info));
        out
    }
}

/// Where `dir` lies in the directory `input` a filesystem source reads:
/// `Some("is the directory")`, `Some("lies inside the directory")`, or
/// `None` when the source does not read it (elsewhere, or a name on the
/// way starting with `_` or `.`: Flink's hidden files, skipped).
fn read_by_source(input: &Path, dir: &Path) -> Option<&'static str> {
    let (input_at, dir_at) = (resolved(input), resolved(dir));
    let inside = dir_at.strip_prefix(&input_at).ok()?;
    let hidden = inside.components().any(|c| {
        let name = c.as_os_str().as_encoded_bytes();
        matches!(c, Component::Normal(_)) && (name.starts_with(b".") || name.starts_with(b"_"))
    });
    match (hidden, inside.as_os_str().is_empty()) {
        (true, _) => None,
        (false, true) => Some("is the directory"),
        (false, false) => Some("lies inside the directory"),
    }
}

/// Refuses a filesystem sink (table `sink`) writing into the directory
/// `input` that a filesystem source (table `source`) reads, or into one of
/// its subdirectories the source reads too ([`read_by_source`]): the
/// source would take the sink's committed part files as input, again and
/// again when it watches the directory (every row written back into what
/// it reads), and a fresh start's rollback would move aside files the
/// source listed.
fn keep_apart(source: &str, input: &Path, sink: &str, output: &Path) -> Result<()> {
    let Some(lies) = read_by_source(input, output) else {
        return Ok(());
    };
    Err(SqlError::Connector {
        table: sink.to_owned(),
        message: format!(
            "'path' = '{}' {lies} that table `{source}` reads ('path' = '{}'): the source \
             would read this sink's part files as its input (watching the directory, again and \
             again); write to a directory outside it, or to one whose name starts with '_' or \
             '.', which the source skips",
            output.display(),
            input.display()
        ),
    })
}

/// The error for an updating `plan` into table `t` when `t`'s connector is
/// append-only (`filesystem`, `kafka`), naming what makes the updates, as
/// Flink's planner refuses it ("doesn't support consuming update and
/// delete changes which is produced by node ..").
pub fn refuse_updates(t: &Table, plan: &Plan) -> Option<SqlError> {
    let instead = match &t.connector {
        Connector::Filesystem { .. } => "a table that takes a changelog (print, upsert-kafka)",
        Connector::Kafka(k) if !k.upsert => "an 'upsert-kafka' table with a PRIMARY KEY",
        _ => return None,
    };
    let from = plan.updates_from()?;
    Some(SqlError::Plan(format!(
        "table `{}` ({}) is append-only and cannot take the updates this query produces, made by {from}: write it to {instead}",
        t.name,
        t.connector.name()
    )))
}

/// `row` once per window of `window` holding its time (column `time`),
/// with the window's start, end and time (end - 1) appended; none for a
/// NULL time. Windows in order of their start.
fn assign_windows(window: Window, time: usize, row: Row) -> Vec<Row> {
    let Some(ts) = row.values[time].as_i64() else {
        return Vec::new();
    };
    let align = |size: i64, offset: i64| ts - (ts - offset).rem_euclid(size);
    let windows: Vec<(i64, i64)> = match window {
        Window::Tumble { size, offset } => {
            let s = align(size, offset);
            vec![(s, s + size)]
        }
        Window::Hop {
            slide,
            size,
            offset,
        } => {
            let last = align(slide, offset);
            let mut w: Vec<(i64, i64)> = (0..size / slide)
                .map(|k| last - k * slide)
                .filter(|s| *s + size > ts)
                .map(|s| (s, s + size))
                .collect();
            w.reverse();
            w
        }
        Window::Cumulate { step, size, offset } => {
            let s = align(size, offset);
            (1..=size / step)
                .map(|k| (s, s + k * step))
                .filter(|(_, e)| *e > ts)
                .collect()
        }
        Window::Session { .. } => unreachable!("sessions are refused when planned"),
        Window::Attached { .. } => unreachable!("attached windows are aggregated, never a TVF's"),
    };
    windows
        .into_iter()
        .map(|(s, e)| {
            let mut r = row.clone();
            r.values.push(Value::Timestamp(s));
            r.values.push(Value::Timestamp(e));
            r.values.push(Value::Timestamp(e - 1));
            r
        })
        .collect()
}

/// A scanned table's event time: its WATERMARK declaration (column,
/// delay in ms), `table.exec.source.idle-timeout` and
/// `pipeline.auto-watermark-interval`.
#[derive(Clone, Copy)]
struct EventTime {
    watermark: Option<(usize, i64)>,
    idle: Option<Duration>,
    interval: Duration,
}

impl EventTime {
    /// `rows` given this event time, if any, then boxed.
    fn of<'j, B: ChainBuilder<Row>>(self, rows: Stream<'j, Row, B>) -> Rows<'j> {
        let Some((col, delay)) = self.watermark else {
            return rows.boxed();
        };
        let interval = i64::try_from(self.interval.as_millis()).unwrap_or(i64::MAX);
        let strategy = WatermarkStrategy::for_generator(move |_: &SubtaskInfo| {
            DeclaredWatermarks::new(delay, interval)
        })
        .with_timestamp_assigner(move |r: &Row| r.values[col].as_i64().unwrap_or(i64::MIN));
        match self.idle {
            Some(idle) => rows
                .assign_timestamps_and_watermarks(strategy.with_idleness(idle))
                .boxed(),
            None => rows.assign_timestamps_and_watermarks(strategy).boxed(),
        }
    }
}

impl EventTime {
    /// `events`, a `nexmark` table's event numbers, given event time from
    /// every number when the table's WATERMARK is declared on its own
    /// `date_time` column (the event's time, the same for every kind): the
    /// generator's timestamp of each number, before the events of other
    /// kinds are dropped. `Err(events)` for any other declaration (a
    /// computed column, `expires`), or none.
    // The stream handed back either way is a builder, moved once per scan
    // while the job is planned.
    #[allow(clippy::result_large_err)]
    fn of_event_numbers<'j, B: ChainBuilder<u64>>(
        self,
        t: &crate::catalog::Table,
        table: &crate::nexmark::NexmarkTable,
        events: Stream<'j, u64, B>,
    ) -> Result<Stream<'j, u64, impl ChainBuilder<u64> + use<'j, B>>, Stream<'j, u64, B>> {
        let on_date_time = self.watermark.and_then(|(col, delay)| {
            let physical = t.columns.get(col)?.as_column()?;
            let field = *table.fields.get(physical)?;
            (table.kind.columns().get(field) == Some(&"date_time")).then_some(delay)
        });
        let Some(delay) = on_date_time else {
            return Err(events);
        };
        let config = table.generator.config().clone();
        let strategy =
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(delay as u64))
                .with_timestamp_assigner(move |&n: &u64| config.timestamp(n));
        // One type either way, so the events go on unboxed: a source that
        // never idles has a timeout no silence reaches.
        let idle = self.idle.unwrap_or(Duration::MAX);
        Ok(events.assign_timestamps_and_watermarks(strategy.with_idleness(idle)))
    }
}

/// A positive interval of the plan as a duration.
fn ms(v: i64) -> Duration {
    Duration::from_millis(v.unsigned_abs())
}

/// A signed interval as an offset.
fn offset_of(v: i64) -> Offset {
    if v < 0 {
        Offset::before(ms(v))
    } else {
        Offset::after(ms(v))
    }
}

/// A join's key expressions, shared by the subtasks' key functions.
fn keys(k: &[Scalar]) -> Arc<[Scalar]> {
    k.to_vec().into()
}

/// The join key of `r`.
#[inline]
fn key_values(keys: &[Scalar], r: &Row) -> Key {
    Key::of(keys.iter().map(|k| k.eval(r)))
}

/// The types of `input`'s first `keys` columns (a grouping's key).
fn key_types(input: &Plan, keys: usize) -> Vec<DataType> {
    input.schema.types()[..keys].to_vec()
}

/// What decides an aggregation's accumulator slots: each call's function,
/// types, DISTINCT, FILTER and whether its input retracts (not which
/// column it reads, nor how it is written).
fn agg_layout(aggs: &[crate::plan::AggCall]) -> Vec<String> {
    aggs.iter()
        .map(|c| {
            format!(
                "{:?} {} {} {} {} {}",
                c.func,
                c.arg_ty,
                c.ty,
                c.distinct,
                c.filter.is_some(),
                c.retracts
            )
        })
        .collect()
}

/// Whether `r` may join in an interval join: no NULL key, a time.
fn joinable(keys: &[Scalar], time: usize, r: &Row) -> bool {
    !r.values[time].is_null() && keys.iter().all(|k| !k.eval(r).is_null())
}

/// The first `n` columns as a key.
#[inline]
/// The key of a row's first `n` columns (a grouping's key); the sending
/// side of its `key_by` routes by [`Key::hash_of_slice`] of the same
/// columns instead of making it.
fn key_of(r: &Row, n: usize) -> Key {
    Key::from_slice(&r.values[..n])
}

/// A window aggregation's output row: keys, window start, end and time
/// (end - 1 ms), aggregates.
fn window_row(key: Key, w: TimeWindow, aggs: Row) -> Row {
    let mut v = Values::with_capacity(key.values.len() + 3 + aggs.values.len());
    v.extend(key.values);
    v.push(Value::Timestamp(w.start));
    v.push(Value::Timestamp(w.end));
    v.push(Value::Timestamp(w.end - 1));
    v.extend(aggs.values);
    Row {
        kind: RowKind::Insert,
        values: v,
    }
}

/// The types of a schema (for printing).
pub fn types(schema: &Schema) -> Vec<DataType> {
    schema.types()
}

/// A table's file lines decoded by its format (`decode`), a file's first
/// line skipped with `csv.ignore-first-line` (`skip_first`), whatever it
/// holds, as Flink's CSV reader skips it (FLINK-20746).
struct FileLines<F> {
    skip_first: bool,
    decode: F,
}

impl<F: FnMut(&str) -> Decoded<Row> + 'static> LineDecoder for FileLines<F> {
    type Out = Row;

    #[inline]
    fn decode(&mut self, line: &str) -> Decoded<Row> {
        (self.decode)(line)
    }

    fn decode_first(&mut self, line: &str) -> Decoded<Row> {
        if self.skip_first {
            Decoded::Skip
        } else {
            (self.decode)(line)
        }
    }
}
