//! A script run as one job: its statements applied in order (SET to the
//! config, CREATE TABLE / VIEW to the catalog, INSERT INTO and bare
//! SELECT planned), then every INSERT and SELECT lowered into one job
//! graph, as Flink's statement set runs all INSERTs of a script together.
//! EXPLAIN prints a plan instead of running its statement.

use weir_runtime::{Config, JobGraph};

use crate::catalog::{Catalog, Table};
use crate::changelog::UpdateBefore;
use crate::collect::Collected;
use crate::error::{Result, SqlError};
use crate::lower::{GeneratedSources, Lowering};
use crate::plan::{fit_insert, Node, Plan, Planner, Presentation};
use crate::prune::ReadColumns;
use crate::reuse::{Lookup, Memo, Reuse};
use crate::script::{parse_script, Statement};
use crate::types::{Field, Schema};
use crate::value::{Row, RowKind};

/// A parsed and planned script, ready to become a job.
#[derive(Debug)]
pub struct Script {
    /// `SET` statements in order: config keys for the job.
    pub settings: Vec<(String, String)>,
    /// What EXPLAIN, SHOW and DESCRIBE statements print, in order.
    pub explained: Vec<String>,
    /// Notes on SET keys of Flink's that weir takes but that change
    /// nothing here (printed to stderr).
    pub warnings: Vec<String>,
    /// `SET 'pipeline.name'`: the job's name.
    pub job_name: Option<String>,
    catalog: Catalog,
    pub(crate) inserts: Vec<(String, Plan)>,
    selects: Vec<Plan>,
    /// How each bare SELECT's table is ordered and cut.
    presentations: Vec<Presentation>,
    /// `job.records` and `job.rate` for every generated source (see
    /// [`Script::set_generated_sources`]).
    generated: GeneratedSources,
}

/// The config keys the planner reads (the rest are the runtime's).
pub const PLANNER_KEYS: &[&str] = &["table.exec.state.ttl", "table.exec.source.idle-timeout"];

/// The job a script builds, and where its bare SELECTs' rows land.
pub struct SqlJob {
    /// The job graph.
    pub job: JobGraph,
    /// Each bare SELECT's schema and collected rows.
    pub selects: Vec<(Schema, Collected)>,
    /// How each bare SELECT's table is shown (ORDER BY, LIMIT).
    pub presentations: Vec<Presentation>,
    /// The uids of the generated sources sized or paced by `job.records`
    /// and `job.rate` ([`Script::set_generated_sources`]).
    pub generated_sources: Vec<String>,
}

impl Script {
    /// Parses and plans `text`: every error (syntax with line and column,
    /// an unknown table, column or function, a type mismatch, something
    /// unsupported) comes out here, before anything runs.
    pub fn parse(text: &str) -> Result<Script> {
        let mut s = Script {
            settings: Vec::new(),
            explained: Vec::new(),
            catalog: Catalog::default(),
            inserts: Vec::new(),
            selects: Vec::new(),
            presentations: Vec::new(),
            warnings: Vec::new(),
            job_name: None,
            generated: GeneratedSources::default(),
        };
        for stmt in parse_script(text)? {
            s.apply(stmt)?;
        }
        Ok(s)
    }

    fn apply(&mut self, stmt: Statement) -> Result<()> {
        match stmt {
            Statement::Set { key, value } => self.set(key, value)?,
            Statement::Reset(key) => {
                let reset = |k: &str| key.as_deref().is_none_or(|r| r == k);
                self.settings.retain(|(k, _)| !reset(k));
                if reset("pipeline.name") {
                    self.job_name = None;
                }
            }
            Statement::Show { views } => {
                // As Flink's catalog lists tables: views too (SHOW VIEWS
                // lists views alone).
                let names = if views {
                    self.catalog.view_names()
                } else {
                    let mut all = self.catalog.table_names();
                    all.extend(self.catalog.view_names());
                    all.sort();
                    all
                };
                let schema = Schema::new(vec![crate::types::Field::new(
                    if views { "view name" } else { "table name" },
                    crate::types::DataType::String,
                )]);
                let rows: Vec<Row> = names
                    .into_iter()
                    .map(|n| Row::new([crate::value::Value::Str(n.into())].into_iter().collect()))
                    .collect();
                self.explained
                    .push(format_table(&schema, &rows, &Presentation::default()));
            }
            Statement::Drop {
                name,
                view,
                if_exists,
            } => {
                if !self.catalog.drop(&name, view) && !if_exists {
                    return Err(SqlError::Plan(format!(
                        "DROP {}: {} `{name}` does not exist",
                        if view { "VIEW" } else { "TABLE" },
                        if view { "view" } else { "table" },
                    )));
                }
            }
            Statement::Describe(name) => {
                let schema = match (self.catalog.table(&name), self.catalog.view(&name)) {
                    (Some(t), _) => t.schema.clone(),
                    (None, Some(q)) => {
                        let q = q.clone();
                        Planner::new(&self.catalog).query(&q)?.schema
                    }
                    (None, None) => return Err(SqlError::UnknownTable(name)),
                };
                let key = self
                    .catalog
                    .table(&name)
                    .and_then(|t| t.primary_key.clone())
                    .unwrap_or_default();
                let out = Schema::new(
                    ["name", "type", "null", "key", "extras"]
                        .iter()
                        .map(|n| crate::types::Field::new(*n, crate::types::DataType::String))
                        .collect(),
                );
                let rows: Vec<Row> = schema
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        let text = |s: String| crate::value::Value::Str(s.into());
                        let extras = if f.rowtime {
                            "*ROWTIME*"
                        } else if f.proctime {
                            "*PROCTIME*"
                        } else {
                            ""
                        };
                        Row::new(
                            [
                                text(f.name.clone()),
                                text(f.ty.to_string()),
                                text(f.nullable.to_string().to_uppercase()),
                                text(if key.contains(&i) {
                                    "PRI".into()
                                } else {
                                    String::new()
                                }),
                                text(extras.into()),
                            ]
                            .into_iter()
                            .collect(),
                        )
                    })
                    .collect();
                self.explained
                    .push(format_table(&out, &rows, &Presentation::default()));
            }
            Statement::CreateTable(def) => {
                self.catalog.create_table(&def)?;
                let rolling: Vec<&String> = def
                    .options
                    .keys()
                    .filter(|k| k.starts_with("sink.rolling-policy."))
                    .collect();
                for key in crate::connectors::PARALLELISM_OPTIONS {
                    if def.options.contains_key(key) {
                        self.warnings.push(format!(
                            "table `{}`: '{key}': every source, operator and sink of a weir job runs \
                             at the job's parallelism (--workers, parallelism.default)",
                            def.name
                        ));
                    }
                }
                if !rolling.is_empty() {
                    self.warnings.push(format!(
                        "table `{}`: {}: weir's filesystem sink commits one part file per subtask and \
                         checkpoint (Flink's rolling on checkpoints); a part is not cut by size or time",
                        def.name,
                        rolling
                            .iter()
                            .map(|k| format!("'{k}'"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
            Statement::CreateView {
                name,
                query,
                if_not_exists,
            } => {
                // Planned now so that its errors name it.
                Planner::new(&self.catalog)
                    .view(&query)
                    .map_err(|e| SqlError::Plan(format!("view `{name}`: {e}")))?;
                self.catalog.create_view(&name, query, if_not_exists)?;
            }
            Statement::Insert {
                table,
                columns,
                query,
            } => {
                let t = self
                    .catalog
                    .table(&table)
                    .ok_or_else(|| SqlError::UnknownTable(table.clone()))?
                    .clone();
                if !t.connector.is_sink() {
                    return Err(SqlError::Connector {
                        table: t.name.clone(),
                        message: format!(
                            "the '{}' connector cannot be written",
                            t.connector.name()
                        ),
                    });
                }
                let plan = Planner::for_insert(&self.catalog).query(&query)?;
                let plan = with_columns(&t, &columns, plan)?;
                let plan = fit_insert(&t.name, plan, &t.physical)?;
                if let Some(e) = crate::lower::refuse_updates(&t, &plan) {
                    return Err(e);
                }
                self.inserts.push((t.name.clone(), plan));
            }
            Statement::Query(q) => {
                let (plan, shown) = Planner::new(&self.catalog).select_query(&q)?;
                self.selects.push(plan);
                self.presentations.push(shown);
            }
            Statement::Explain(inner) => {
                let text = match *inner {
                    Statement::Query(q) => {
                        explain(&Planner::new(&self.catalog).select_query(&q)?.0, None)
                    }
                    Statement::Insert {
                        table,
                        columns,
                        query,
                    } => {
                        let plan = Planner::for_insert(&self.catalog).query(&query)?;
                        let t = self
                            .catalog
                            .table(&table)
                            .ok_or(SqlError::UnknownTable(table))?;
                        let plan = with_columns(t, &columns, plan)?;
                        let plan = fit_insert(&t.name, plan, &t.physical)?;
                        // As the INSERT itself would be, as Flink's planner
                        // fails to explain it.
                        if let Some(e) = crate::lower::refuse_updates(t, &plan) {
                            return Err(e);
                        }
                        explain(&plan, Some(t))
                    }
                    other => {
                        return Err(SqlError::Unsupported(format!(
                            "EXPLAIN of `{}` (EXPLAIN takes SELECT and INSERT)",
                            match other {
                                Statement::Set { .. } => "SET",
                                Statement::CreateTable(_) => "CREATE TABLE",
                                Statement::CreateView { .. } => "CREATE VIEW",
                                _ => "EXPLAIN",
                            }
                        )))
                    }
                };
                self.explained.push(text);
            }
        }
        Ok(())
    }

    /// A `SET`: weir's and Flink's config keys go to the job; Flink's keys
    /// that mean nothing in weir are taken with a note (a script written
    /// for Flink's SQL client runs as it is).
    fn set(&mut self, key: String, value: String) -> Result<()> {
        let note = |k: &str, why: &str| format!("SET '{k}': {why}");
        match key.as_str() {
            "pipeline.name" => self.job_name = Some(value),
            "execution.runtime-mode" => match value.to_ascii_lowercase().as_str() {
                "streaming" => {}
                "batch" | "automatic" => self.warnings.push(note(
                    &key,
                    "weir runs every job in streaming mode; a bounded input runs to its end and a bare SELECT prints the final table, as in batch mode",
                )),
                other => {
                    return Err(SqlError::Plan(format!(
                        "SET 'execution.runtime-mode' = '{other}': streaming, batch or automatic"
                    )))
                }
            },
            k if k.starts_with("sql-client.") => self.warnings.push(note(
                k,
                "a Flink SQL client display option; weir prints a bare SELECT's final table",
            )),
            k if k.starts_with("table.exec.mini-batch.")
                || k.starts_with("table.optimizer.")
                || k == "table.dml-sync"
                || k == "table.exec.sink.not-null-enforcer"
                || k == "table.exec.sink.upsert-materialize"
                || k == "table.exec.sink.keyed-shuffle" =>
            {
                self.warnings
                    .push(note(k, "a Flink planner option with no effect in weir"))
            }
            // Flink's state backends: weir has one, its per-core arenas in
            // memory (what Flink's `hashmap` backend is to its heap).
            "state.backend" | "state.backend.type" => self.warnings.push(note(
                &key,
                "weir keeps keyed state in per-core arenas in memory, as Flink's hashmap \
                 backend does; there is no RocksDB backend (state is not spilled to disk)",
            )),
            // Flink 1's name of `execution.checkpointing.incremental`.
            "state.backend.incremental" => self
                .settings
                .push(("execution.checkpointing.incremental".to_owned(), value)),
            // The parallelism of a SQL job's operators: weir runs every
            // operator at the job's parallelism (-1: that default).
            "table.exec.resource.default-parallelism" => {
                if value.trim() != "-1" {
                    self.settings.push(("parallelism.default".to_owned(), value));
                }
            }
            "execution.checkpointing.externalized-checkpoint-retention"
            | "execution.checkpointing.externalized-checkpoint-retention.type" => {
                let known = ["RETAIN_ON_CANCELLATION", "DELETE_ON_CANCELLATION", "NO_EXTERNALIZED_CHECKPOINTS"];
                if !known.iter().any(|k| value.eq_ignore_ascii_case(k)) {
                    return Err(SqlError::Plan(format!(
                        "SET '{key}' = '{value}': one of {}",
                        known.join(", ")
                    )));
                }
                self.warnings.push(note(
                    &key,
                    "weir keeps the newest `state.checkpoints.num-retained` checkpoints whatever \
                     ends the job (as RETAIN_ON_CANCELLATION); a stop takes a savepoint",
                ));
            }
            "table.local-time-zone" => {
                if !matches!(value.as_str(), "UTC" | "Etc/UTC" | "GMT" | "Z" | "+00:00") {
                    return Err(SqlError::Unsupported(format!(
                        "SET 'table.local-time-zone' = '{value}': weir's TIMESTAMP_LTZ is shown in UTC"
                    )));
                }
            }
            _ => self.settings.push((key, value)),
        }
        Ok(())
    }

    /// The bare SELECTs' plans, in order.
    pub fn planned_selects(&self) -> &[Plan] {
        &self.selects
    }

    /// Whether there is anything to run (an INSERT or a SELECT).
    pub fn has_job(&self) -> bool {
        !self.inserts.is_empty() || !self.selects.is_empty()
    }

    /// Whether every source the job reads ends by itself.
    pub fn is_bounded(&self) -> bool {
        let bounded = |p: &Plan| p.is_bounded();
        self.inserts
            .iter()
            .map(|(_, p)| p)
            .chain(&self.selects)
            .all(bounded)
    }

    /// The job of every INSERT and SELECT, named `name`, planned with
    /// the keys of weir's defaults and the script's own `SET` statements
    /// that the planner reads (`table.exec.state.ttl`); the others are for
    /// the runner ([`job_with`](Self::job_with) takes a whole config).
    pub fn job(&self, name: &str) -> Result<SqlJob> {
        let mut config = Config::default();
        for (key, value) in &self.settings {
            if PLANNER_KEYS.contains(&key.as_str()) {
                config
                    .set(key, value)
                    .map_err(|e| SqlError::Plan(format!("SET '{key}' = '{value}': {e}")))?;
            }
        }
        self.job_with(name, &config)
    }

    /// Sizes and paces every generated source the job reads (`datagen`
    /// and `nexmark` tables) as `generated` says, in place of the table's
    /// `number-of-rows` (`events.num`) and `rows-per-second` (`tps`):
    /// `job.records` and `job.rate`, how a SQL job is run for a chosen
    /// time at a chosen load (`weir tune`). Planning the job then fails if
    /// it reads no generated source.
    pub fn set_generated_sources(&mut self, generated: GeneratedSources) {
        self.generated = generated;
    }

    /// The job of every INSERT and SELECT, named `name`, planned with
    /// `config` (its `table.exec.*` keys; the caller applies the script's
    /// `SET` statements to it, as `weir sql` does).
    pub fn job_with(&self, name: &str, config: &Config) -> Result<SqlJob> {
        if !self.selects.is_empty() && !self.is_bounded() {
            return Err(SqlError::Plan(
                "a bare SELECT over an unbounded source would never end: INSERT INTO a 'print' table instead, or bound the source ('number-of-rows')".into(),
            ));
        }
        let mut job = JobGraph::new(name);
        let mut selects = Vec::new();
        let (parameters, outputs, inputs, generated_sources) = {
            let mut low = Lowering::new(&job)
                .with_state_ttl(config.state_ttl)
                .with_idle_timeout(config.source_idle_timeout)
                .with_watermark_interval(config.auto_watermark_interval)
                .with_state_dirs(config)
                .with_generated_sources(self.generated)
                .with_reuse(Reuse::of(
                    self.inserts.iter().map(|(_, p)| p).chain(&self.selects),
                ))
                .with_update_before(self.update_before())
                .with_read_columns(self.read_columns());
            for (table, plan) in &self.inserts {
                let t = self.catalog.table(table).expect("checked when planned");
                let rows = low.rows(plan)?;
                low.sink(rows, plan, t)?;
            }
            for plan in &self.selects {
                let rows = low.rows(plan)?;
                selects.push((plan.schema.clone(), low.collect(rows)));
            }
            if self.generated.is_set() && low.generated_sources.is_empty() {
                return Err(SqlError::Plan(
                    "job.records and job.rate size and pace generated sources ('datagen' and 'nexmark' tables), and this job reads none".into(),
                ));
            }
            (
                std::mem::take(&mut low.parameters),
                std::mem::take(&mut low.outputs),
                std::mem::take(&mut low.inputs),
                low.generated_sources,
            )
        };
        for (k, v) in parameters {
            job.parameter(&k, v);
        }
        for o in outputs {
            job.output_directory(o);
        }
        for i in inputs {
            job.input_directory(i);
        }
        Ok(SqlJob {
            job,
            selects,
            presentations: self.presentations.clone(),
            generated_sources,
        })
    }

    /// Which physical columns of each table the job reads
    /// ([`crate::prune`]).
    pub fn read_columns(&self) -> ReadColumns {
        ReadColumns::of(self.inserts.iter().map(|(_, p)| p).chain(&self.selects))
    }

    /// Which group aggregations of the job must emit update-before rows:
    /// those whose rows reach a sink that writes them or an operator
    /// that retracts them ([`crate::changelog`]); a bare SELECT's table
    /// shows them.
    fn update_before(&self) -> UpdateBefore {
        UpdateBefore::of(
            self.inserts
                .iter()
                .map(|(table, plan)| {
                    let t = self.catalog.table(table).expect("checked when planned");
                    (plan, t.connector.takes_update_before())
                })
                .chain(self.selects.iter().map(|p| (p, true))),
        )
    }
}

/// EXPLAIN's text: the plan, then how it runs (exchanges, state).
pub fn explain(plan: &Plan, sink: Option<&Table>) -> String {
    let mut s = String::from("== Optimized Logical Plan ==\n");
    match sink {
        Some(t) => {
            s.push_str(&format!(
                "Sink(table=[{}], fields=[{}])\n",
                t.name,
                names(&plan.schema)
            ));
            for line in plan.explain().lines() {
                s.push_str("  ");
                s.push_str(line);
                s.push('\n');
            }
        }
        None => s.push_str(&plan.explain()),
    }
    s.push_str("\n== Physical Execution Plan ==\n(every stage runs at the job's parallelism, one subtask per worker)\n");
    let mut stages = Vec::new();
    let mut reused = Reused {
        memo: Memo::new(Reuse::of([plan])),
        update_before: UpdateBefore::of([(
            plan,
            sink.is_none_or(|t| t.connector.takes_update_before()),
        )]),
        read: ReadColumns::of([plan]),
    };
    physical(plan, &mut stages, &mut reused);
    for (i, st) in stages.iter().enumerate() {
        s.push_str(&format!("Stage {}: {st}\n", i + 1));
    }
    if let Some(t) = sink {
        s.push_str(&format!(
            "  chained: Sink({}){}\n",
            t.name,
            if plan.updating { " [changelog]" } else { "" }
        ));
    }
    s
}

fn names(schema: &Schema) -> String {
    schema
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Stage descriptions in data-flow order: a stage ends at an exchange.
fn physical(plan: &Plan, out: &mut Vec<String>, reused: &mut Reused) {
    // A repeated sub-plan runs once: later occurrences read its rows.
    match reused.memo.lookup(plan) {
        Lookup::Once => physical_node(plan, out, reused),
        Lookup::Again(&stage) => out.push(format!(
            "Reuse: the rows of Stage {} (the same sub-plan, run once and fanned out)",
            stage + 1
        )),
        Lookup::First(digest) => {
            physical_node(plan, out, reused);
            reused.memo.remember(digest, out.len() - 1);
        }
    }
}

/// The repeated sub-plans of an explained statement, with the index of the
/// stage that runs each once it has been described, and which group
/// aggregations make update-before rows.
struct Reused {
    memo: Memo<usize>,
    update_before: UpdateBefore,
    /// The columns each table's scan makes ([`crate::prune`]).
    read: ReadColumns,
}

fn physical_node(plan: &Plan, out: &mut Vec<String>, reused: &mut Reused) {
    match &plan.node {
        Node::Values(rows) => out.push(format!(
            "Source: VALUES ({} rows) parallelism=default, state=[source position: splits (operator list state)]",
            rows.len()
        )),
        Node::Scan(t) => {
            let mut s = format!(
                "Source: {} [{}] parallelism=default, state=[source position{}]",
                t.name,
                t.connector.name(),
                if matches!(t.connector, crate::connectors::Connector::Filesystem { .. }) {
                    ": file byte ranges (operator list state)"
                } else {
                    ": splits (operator list state)"
                }
            );
            let read = reused.read.physical(t);
            if matches!(
                t.connector,
                crate::connectors::Connector::Nexmark(_) | crate::connectors::Connector::Datagen(_)
            )
                && read.is_some_and(|r| r.contains(&false))
            {
                // Flink's `project=[..]` of a source the projection was
                // pushed into: the others are NULL, never generated.
                let read: Vec<&str> = t
                    .physical
                    .fields
                    .iter()
                    .zip(read.into_iter().flatten())
                    .filter(|(_, &r)| r)
                    .map(|(f, _)| f.name.as_str())
                    .collect();
                s.push_str(&format!(", project=[{}]", read.join(", ")));
            }
            if let Some((c, d)) = t.watermark {
                s.push_str(&format!(
                    "\n  chained: Watermarks({} - {d} ms, per source subtask)",
                    t.schema.fields[c].name
                ));
            }
            out.push(s);
        }
        Node::Calc { input, filter, .. } => {
            physical(input, out, reused);
            let last = out.last_mut().expect("an input stage");
            last.push_str(&format!(
                "\n  chained: Calc({}{})",
                names(&plan.schema),
                if filter.is_some() {
                    ", with filter"
                } else {
                    ""
                }
            ));
        }
        Node::WindowAgg {
            input,
            window,
            keys,
            ..
        } => {
            physical(input, out, reused);
            out.push(format!(
                "Exchange: HASH[{}] (key groups) -> WindowAggregate({window:?}), state=[keyed: window accumulators, event-time timers], fires on watermarks",
                names(&Schema::new(input.schema.fields[..*keys].to_vec()))
            ));
        }
        Node::GroupAgg { input, keys, aggs } => {
            physical(input, out, reused);
            out.push(format!(
                "Exchange: HASH[{}] (key groups) -> GroupAggregate, state=[keyed ValueState group-accumulators{}], emits changelog {}",
                names(&Schema::new(input.schema.fields[..*keys].to_vec())),
                if aggs.iter().any(|a| a.distinct) {
                    ", keyed MapState group-distinct-values"
                } else {
                    ""
                },
                if reused.update_before.emits(plan) {
                    "(+I, -U, +U, -D)"
                } else {
                    "(+I, +U, -D; no -U: no consumer takes them)"
                }
            ));
        }
        Node::OverAgg {
            input, partition, ..
        } => {
            physical(input, out, reused);
            out.push(format!(
                "Exchange: HASH[{}] (key groups) -> OverAggregate, state=[keyed ValueState over-pending-rows, over-frame-rows, over-accumulator; event-time timers], emits on watermarks (append-only)",
                partition
                    .iter()
                    .map(|&c| input.schema.fields[c].name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Node::WindowJoin { left, right, .. } => {
            physical(left, out, reused);
            physical(right, out, reused);
            out.push(
                "Exchange: HASH[join keys, window bounds] both inputs (key groups) -> WindowJoin, state=[keyed ValueState window-join-left-rows, window-join-right-rows; event-time timers], emits when windows end (append-only)"
                    .into(),
            );
        }
        Node::TemporalJoin { left, right, .. } => {
            physical(left, out, reused);
            physical(right, out, reused);
            out.push(
                "Exchange: HASH[join keys] both inputs (key groups) -> TemporalJoin (event time), state=[keyed ValueState temporal-join-left-rows, temporal-join-versions; event-time timers], emits on watermarks (append-only)"
                    .into(),
            );
        }
        Node::Rank { input, rank } => {
            physical(input, out, reused);
            let key = Schema::new(
                rank.partition
                    .iter()
                    .map(|&c| input.schema.fields[c].clone())
                    .collect(),
            );
            out.push(format!(
                "Exchange: HASH[{}] (key groups) -> {}, state=[keyed ValueState {}]{}",
                names(&key),
                match rank.kind {
                    crate::rank::RankKind::TopN { limit, .. } => format!("Rank(top {limit})"),
                    crate::rank::RankKind::RetractTopN {
                        start,
                        limit,
                        keep_all,
                        ..
                    } => format!(
                        "Rank(rows {start}..={limit}{})",
                        if keep_all { " of an updating input" } else { "" }
                    ),
                    crate::rank::RankKind::WindowTopN { limit, .. } => {
                        format!("WindowRank(top {limit}, fires on watermarks)")
                    }
                    crate::rank::RankKind::TiedTopN {
                        ties,
                        start,
                        limit,
                        keep_all,
                        ..
                    } => format!(
                        "Rank({ties:?} {start}..={limit}{})",
                        if keep_all { " of an updating input" } else { "" }
                    ),
                    crate::rank::RankKind::MiniBatch { interval_ms } if interval_ms == i64::MAX => {
                        "MiniBatch(changes held until the input ends)".into()
                    }
                    crate::rank::RankKind::MiniBatch { interval_ms } => {
                        format!("MiniBatch(changes held up to {interval_ms} ms)")
                    }
                    crate::rank::RankKind::KeepFirst { .. } => "Deduplicate(first row)".into(),
                    crate::rank::RankKind::KeepLast { .. } => "Deduplicate(last row)".into(),
                    crate::rank::RankKind::ProcTimeDeduplicate { keep_last: false } => {
                        "Deduplicate(first row to arrive)".into()
                    }
                    crate::rank::RankKind::ProcTimeDeduplicate { keep_last: true } => {
                        "Deduplicate(last row to arrive)".into()
                    }
                },
                if matches!(
                    rank.kind,
                    crate::rank::RankKind::RetractTopN { .. } | crate::rank::RankKind::TiedTopN { .. }
                ) {
                    "top-n-all-rows (the key's rows)"
                } else if matches!(rank.kind, crate::rank::RankKind::TopN { .. }) {
                    "top-n-rows (the key's N rows)"
                } else if matches!(rank.kind, crate::rank::RankKind::WindowTopN { .. }) {
                    "window-top-n-rows (a window's rows until it fires), event-time timers"
                } else if matches!(rank.kind, crate::rank::RankKind::MiniBatch { .. }) {
                    "mini-batch-live-rows, mini-batch-emitted-rows, processing-time timers"
                } else {
                    "deduplicate-kept-row"
                },
                if plan.updating {
                    ", emits changelog (+I, -U, +U, -D)"
                } else {
                    ", append-only"
                }
            ));
        }
        Node::Replicate { input } => {
            physical(input, out, reused);
            let last = out.last_mut().expect("an input stage");
            last.push_str(&format!(
                "\n  chained: ReplicateRows({}): each row as many times as its count",
                names(&plan.schema)
            ));
        }
        Node::WindowAssign { input, window, .. } => {
            physical(input, out, reused);
            let last = out.last_mut().expect("an input stage");
            last.push_str(&format!(
                "\n  chained: WindowTableFunction({window:?}): each row once per window, window columns appended"
            ));
        }
        Node::Union(inputs) => {
            for i in inputs {
                physical(i, out, reused);
            }
            out.push(format!(
                "Union of the {} stages above (exchange: forward)",
                inputs.len()
            ));
        }
        Node::Join {
            left, right, kind, ..
        } => {
            physical(right, out, reused);
            physical(left, out, reused);
            out.push(format!(
                "Exchange: HASH[join keys] of both stages above (key groups) -> Join({kind}), state=[keyed MapState join-left, join-right: rows with their counts, table.exec.state.ttl], emits {}",
                if plan.updating {
                    "changelog (+I, -D)"
                } else {
                    "inserts"
                }
            ));
        }
        Node::IntervalJoin {
            left,
            right,
            kind,
            bounds,
            ..
        } => {
            physical(right, out, reused);
            physical(left, out, reused);
            out.push(format!(
                "Exchange: HASH[join keys] of both stages above (key groups) -> IntervalJoin({kind}, {} ms <= right - left <= {} ms), state=[keyed MapState of each side's rows by time{}, event-time cleanup timers], emits inserts",
                bounds.lower,
                bounds.upper,
                if *kind == crate::join::JoinKind::Inner { "" } else { " and whether each matched (unmatched rows of an outer side emitted padded at cleanup)" }
            ));
        }
    }
}

/// `INSERT INTO t (a, c) query`: the query's columns placed at the named
/// columns of `t`'s, NULL in the others (Flink's rule).
fn with_columns(t: &crate::catalog::Table, columns: &[String], plan: Plan) -> Result<Plan> {
    if columns.is_empty() {
        return Ok(plan);
    }
    if columns.len() != plan.schema.len() {
        return Err(SqlError::Plan(format!(
            "INSERT INTO `{}` ({}): the query gives {} columns",
            t.name,
            columns.join(", "),
            plan.schema.len()
        )));
    }
    let mut at = Vec::new();
    for c in columns {
        let i = t
            .physical
            .index_of(c)
            .ok_or_else(|| SqlError::UnknownColumn {
                column: c.clone(),
                in_scope: t.physical.to_string(),
            })?;
        if at.contains(&i) {
            return Err(SqlError::Plan(format!(
                "INSERT INTO `{}`: column `{c}` twice",
                t.name
            )));
        }
        at.push(i);
    }
    let project: Vec<crate::expr::Scalar> = t
        .physical
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| match at.iter().position(|&a| a == i) {
            Some(j) => crate::expr::Scalar::Column(j, plan.schema.fields[j].ty),
            None => crate::expr::Scalar::Literal(crate::value::Value::Null, f.ty),
        })
        .collect();
    // The named columns keep the query's types: the INSERT's check
    // widens them to the table's or names the one that does not fit.
    let fields = t
        .physical
        .fields
        .iter()
        .zip(&project)
        .map(|(f, p)| Field {
            ty: p.ty(),
            ..f.clone()
        })
        .collect();
    let updating = plan.updating;
    Ok(Plan {
        node: Node::Calc {
            input: Box::new(plan),
            filter: None,
            project,
        },
        schema: Schema::new(fields),
        updating,
    })
}

/// A bare SELECT's collected rows as the result table: a changelog
/// applied (`-U`/`-D` remove the row they name), then printed in Flink SQL
/// client's tableau style. The changelog is applied as a multiset: a
/// retraction that comes before the row it names (the rows of different
/// sink subtasks, [`crate::collect`], are in no order among each other)
/// takes that row out when it comes.
pub fn format_table(schema: &Schema, rows: &[Row], shown: &Presentation) -> String {
    let mut live: Vec<&Row> = Vec::new();
    let mut retracted: Vec<&Row> = Vec::new();
    for r in rows {
        match r.kind {
            RowKind::Insert | RowKind::UpdateAfter => {
                match retracted.iter().position(|l| l.values == r.values) {
                    Some(i) => {
                        retracted.swap_remove(i);
                    }
                    None => live.push(r),
                }
            }
            RowKind::UpdateBefore | RowKind::Delete => {
                match live.iter().position(|l| l.values == r.values) {
                    Some(i) => {
                        live.remove(i);
                    }
                    None => retracted.push(r),
                }
            }
        }
    }
    let live = shown.apply(live);
    let types = schema.types();
    let columns = shown.columns.unwrap_or(types.len()).min(types.len());
    let cells: Vec<Vec<String>> = live
        .iter()
        .map(|r| {
            r.values
                .iter()
                .zip(&types[..columns])
                .map(|(v, t)| v.display(*t))
                .collect()
        })
        .collect();
    let mut width: Vec<usize> = schema.fields[..columns]
        .iter()
        .map(|f| f.name.chars().count())
        .collect();
    for row in &cells {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let rule = {
        let mut s = String::from("+");
        for w in &width {
            s.push_str(&"-".repeat(w + 2));
            s.push('+');
        }
        s.push('\n');
        s
    };
    let line = |vals: Vec<&str>| {
        let mut s = String::from("|");
        for (v, w) in vals.iter().zip(&width) {
            // (padded by hand: `format!`'s width stops at u16::MAX, and a
            // column name or value may be longer)
            s.push(' ');
            s.extend(std::iter::repeat_n(
                ' ',
                w.saturating_sub(v.chars().count()),
            ));
            s.push_str(v);
            s.push_str(" |");
        }
        s.push('\n');
        s
    };
    let mut s = rule.clone();
    s.push_str(&line(
        schema.fields.iter().map(|f| f.name.as_str()).collect(),
    ));
    s.push_str(&rule);
    for row in &cells {
        s.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    s.push_str(&rule);
    s.push_str(&format!(
        "{} row{} in set\n",
        cells.len(),
        if cells.len() == 1 { "" } else { "s" }
    ));
    s
}

#[cfg(test)]
mod tests;
