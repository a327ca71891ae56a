//! Queries planned into a tree of relational operators over typed rows.
//!
//! [`Planner::query`] resolves names and types (through [`crate::expr`])
//! and picks the streaming operator for each part of a query: a scan of a
//! table, a calc (filter and projection, chained), a window aggregation
//! (a windowing TVF grouped by `window_start, window_end`), a group
//! aggregation (an updating result), a union, a regular or an interval
//! join (FROM's joins and comma joins; their conditions are split by
//! [`crate::join::condition`]), a Top-N or deduplication (`ROW_NUMBER()
//! OVER` bounded by the reader's WHERE: [`over`]). Every node knows its
//! output schema and whether it produces updates (a changelog) or only
//! inserts.

use std::fmt::Write as _;
use std::sync::Arc;

use sqlparser::ast::{
    self, Expr, FunctionArg, FunctionArgExpr, GroupByExpr, Query, Select, SelectItem, SetExpr,
    SetOperator, SetQuantifier, TableFactor,
};

use crate::catalog::{Catalog, Table};
use crate::dialect::TABLE_ARG;
use crate::error::{Result, SqlError};
use crate::expr::{self, compile, compile_with, Scalar, Scope, ScopeCol};
use crate::join::{JoinKind, JoinOn, TimeBounds};
use crate::rank::Rank;
use crate::script::object_name;
use crate::types::{DataType, Field, Schema};
use crate::value::Value;

mod grouping_sets;
mod joins;
mod order;
mod over;
mod over_agg;
mod set_ops;
mod subquery;

/// Most windows a HOP or CUMULATE window may span per row (its size over
/// its slide or step): each row is folded into, and each window fires
/// from, that many slices, so a size of a day with a slide of a
/// millisecond (86.4 M) would never finish a row (and a process busy in
/// one row cannot stop). Flink has no such bound; a day of one-second
/// slides (86,400) is well within it.
pub const MAX_WINDOWS_PER_ROW: i64 = 1_000_000;

/// Refuses a HOP or CUMULATE of `n` slides (or steps) per window over
/// [`MAX_WINDOWS_PER_ROW`], saying so.
fn check_windows_per_row(n: i64, unit: &str) -> std::result::Result<(), String> {
    if n > MAX_WINDOWS_PER_ROW {
        return Err(format!(
            "the size is {n} times the {unit}: at most {MAX_WINDOWS_PER_ROW} windows per row are supported"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
mod values;
mod widen;
mod window_props;

use joins::join_keys;
pub use order::Presentation;
pub(crate) use widen::fit_insert;

/// A planned query: its root node, output schema, and whether it updates.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The operator.
    pub node: Node,
    /// Its output columns.
    pub schema: Schema,
    /// Whether it emits update-before/after and deletes (a changelog), not
    /// only inserts.
    pub updating: bool,
}

/// The relational operators.
#[derive(Clone, Debug)]
pub enum Node {
    /// Reads a table through its connector; computed columns evaluated,
    /// watermarks generated from the table's WATERMARK declaration.
    Scan(Arc<Table>),
    /// Filter then projection.
    Calc {
        /// The input.
        input: Box<Plan>,
        /// Rows for which this is not TRUE are dropped.
        filter: Option<Scalar>,
        /// The output columns.
        project: Vec<Scalar>,
    },
    /// A windowing TVF grouped by its window: one row per key and window
    /// when the watermark passes the window's end. Output: the keys, then
    /// `window_start`, `window_end`, `window_time`, then the aggregates.
    WindowAgg {
        /// The input: the keys in its first `keys` columns, the time
        /// attribute at `time`, the aggregates' arguments anywhere.
        input: Box<Plan>,
        /// The window.
        window: Window,
        /// The time attribute column.
        time: usize,
        /// Key columns: `0..keys`.
        keys: usize,
        /// The aggregates.
        aggs: Vec<AggCall>,
    },
    /// GROUP BY without a window: an updating result per key. Output: the
    /// keys, then the aggregates.
    GroupAgg {
        /// The input (keys first, as for windows).
        input: Box<Plan>,
        /// Key columns: `0..keys`.
        keys: usize,
        /// The aggregates.
        aggs: Vec<AggCall>,
    },
    /// OVER aggregation (see [`crate::over_agg`]): each input row with its
    /// aggregates over a frame of its partition, ordered by event time.
    /// Output: the input's columns, then the aggregates; append-only.
    OverAgg {
        /// The input (append-only).
        input: Box<Plan>,
        /// The PARTITION BY columns.
        partition: Vec<usize>,
        /// The rowtime column ordering the rows.
        time: usize,
        /// The frame.
        frame: crate::over_agg::OverFrame,
        /// The aggregates.
        aggs: Vec<AggCall>,
        /// LAG calls, their values after the aggregates'.
        lags: Vec<crate::over_agg::Lag>,
    },
    /// Literal rows (`VALUES`): a bounded source.
    Values(Arc<Vec<crate::value::Row>>),
    /// UNION ALL of inputs of one schema.
    Union(Vec<Plan>),
    /// A windowing TVF read as a table (not aggregated): each row once per
    /// window holding its time, with `window_start`, `window_end` and
    /// `window_time` appended (a window join joins two of these on them).
    WindowAssign {
        /// The input.
        input: Box<Plan>,
        /// The window (not SESSION: sessions exist only when aggregated).
        window: Window,
        /// The time attribute column.
        time: usize,
    },
    /// A regular join (see [`crate::join`]): both inputs keyed by their
    /// join keys, each side's rows in keyed state. Output: the left
    /// input's columns, then the right's; updating if an outer join or an
    /// input is.
    Join {
        /// The left input.
        left: Box<Plan>,
        /// The right input.
        right: Box<Plan>,
        /// Inner, left, right or full.
        kind: JoinKind,
        /// The keys and the residual condition.
        on: JoinOn,
    },
    /// An interval join on event time (see [`crate::join`]): append-only,
    /// its state freed as the watermark passes (an outer one's unmatched
    /// rows emitted padded then). Output as [`Node::Join`]'s.
    IntervalJoin {
        /// The left input.
        left: Box<Plan>,
        /// The right input.
        right: Box<Plan>,
        /// Inner, left, right or full.
        kind: JoinKind,
        /// The keys and the residual condition.
        on: JoinOn,
        /// The time columns and the bounds of their difference.
        bounds: TimeBounds,
    },
    /// A window join (see [`crate::join::window`]): two windowed inputs
    /// joined on their keys and window bounds, emitted when the window
    /// ends; append-only, also when outer. Output as [`Node::Join`]'s.
    WindowJoin {
        /// The left input.
        left: Box<Plan>,
        /// The right input.
        right: Box<Plan>,
        /// Inner, left, right or full.
        kind: JoinKind,
        /// The keys (window bounds among them) and the residual.
        on: JoinOn,
        /// Each side's `window_end` column.
        ends: [usize; 2],
    },
    /// An event-time temporal join (see [`crate::join::temporal`]): each
    /// left row with the right row of its key valid at its time.
    /// Append-only; output as [`Node::Join`]'s.
    TemporalJoin {
        /// The left (probe) input.
        left: Box<Plan>,
        /// The right (versioned) input.
        right: Box<Plan>,
        /// LEFT JOIN: rows without a version padded with NULLs.
        outer: bool,
        /// The keys (the right side's primary key) and the residual.
        on: JoinOn,
        /// The left rows' time column.
        left_time: usize,
        /// The right rows' (versions') time column.
        right_time: usize,
    },
    /// Each input row as many times as its last column says (none for
    /// a count below 1), that column dropped, with the row's kind: Flink's
    /// `ReplicateRows` under `INTERSECT ALL` and `EXCEPT ALL`.
    Replicate {
        /// The input: the output's columns, then the count (an integer).
        input: Box<Plan>,
    },
    /// Top-N or deduplication per key: the input's columns (the row
    /// number in its column when read), as a changelog unless it keeps
    /// the first row.
    Rank {
        /// The input (append-only).
        input: Box<Plan>,
        /// Keys, order, N.
        rank: Rank,
    },
}

/// A windowing table-valued function's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// TUMBLE(size[, offset]).
    Tumble {
        /// Window length (ms).
        size: i64,
        /// Alignment offset (ms).
        offset: i64,
    },
    /// HOP(slide, size[, offset]).
    Hop {
        /// Step between window starts (ms).
        slide: i64,
        /// Window length (ms).
        size: i64,
        /// Alignment offset (ms).
        offset: i64,
    },
    /// SESSION(gap).
    Session {
        /// Inactivity gap (ms).
        gap: i64,
    },
    /// CUMULATE(step, size[, offset]): windows growing by `step` from the
    /// start of each `size`-aligned period.
    Cumulate {
        /// Step between window ends (ms).
        step: i64,
        /// Largest window (ms), a multiple of the step.
        size: i64,
        /// Alignment offset (ms).
        offset: i64,
    },
    /// The windows the input's rows already belong to, each row's given
    /// by its window bounds (a window aggregation's rows grouped again by
    /// their window: Flink's cascaded window aggregation); never a TVF's.
    Attached {
        /// Window length (ms), the same for every window.
        size: i64,
    },
}

/// An aggregate function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFunc {
    /// COUNT(*) / COUNT(x) (non-NULL x).
    Count,
    /// SUM.
    Sum,
    /// MIN.
    Min,
    /// MAX.
    Max,
    /// AVG (of an integer type: truncated, as Flink).
    Avg,
    /// VAR_POP / VAR_SAMP (`sample`), STDDEV_POP / STDDEV_SAMP (`root`):
    /// in the argument's type, as Flink (an integer's truncated).
    Variance {
        /// Divide by n - 1 (NULL for one row).
        sample: bool,
        /// The square root (standard deviation).
        root: bool,
    },
    /// FIRST_VALUE: the first non-NULL value, in the order rows arrive.
    FirstValue,
    /// LAST_VALUE: the last non-NULL value, in the order rows arrive.
    LastValue,
    /// LISTAGG(x [, separator]): the non-NULL values joined by the
    /// separator (`,` by default), in the order rows arrive.
    ListAgg,
}

impl AggFunc {
    /// The aggregate function a name calls, if any.
    pub fn named(name: &str) -> Option<AggFunc> {
        Some(match name {
            "COUNT" => AggFunc::Count,
            "SUM" => AggFunc::Sum,
            "MIN" => AggFunc::Min,
            "MAX" => AggFunc::Max,
            "AVG" => AggFunc::Avg,
            "VAR_POP" => AggFunc::Variance {
                sample: false,
                root: false,
            },
            "VAR_SAMP" | "VARIANCE" => AggFunc::Variance {
                sample: true,
                root: false,
            },
            "STDDEV_POP" => AggFunc::Variance {
                sample: false,
                root: true,
            },
            "STDDEV_SAMP" | "STDDEV" => AggFunc::Variance {
                sample: true,
                root: true,
            },
            "FIRST_VALUE" => AggFunc::FirstValue,
            "LAST_VALUE" => AggFunc::LastValue,
            "LISTAGG" => AggFunc::ListAgg,
            _ => return None,
        })
    }
}

/// One aggregate of a grouping.
#[derive(Clone, Debug)]
pub struct AggCall {
    /// Which.
    pub func: AggFunc,
    /// The argument's column in the input (`None`: COUNT(*)).
    pub arg: Option<usize>,
    /// DISTINCT: each value of the argument counts once (never without an
    /// argument). For MIN and MAX (where DISTINCT changes nothing) it means
    /// an updating input: their values are counted the same way, so that a
    /// retraction of the extreme finds the next one.
    pub distinct: bool,
    /// FILTER (WHERE ..): a BOOLEAN column of the input; only rows where
    /// it is TRUE are aggregated.
    pub filter: Option<usize>,
    /// The argument's type.
    pub arg_ty: DataType,
    /// The result type.
    pub ty: DataType,
    /// As written, for EXPLAIN.
    pub text: String,
    /// LISTAGG's separator (`None`: `,`).
    pub separator: Option<String>,
    /// The input retracts rows (it is updating): a SUM counts the values
    /// in it so that it is NULL again once all are retracted (Flink's
    /// `SumWithRetractAggFunction`); over an append-only input a NULL sum
    /// already says that no value came (Flink's `SumAggFunction`).
    pub retracts: bool,
}

impl AggCall {
    /// The result type of `func` over `arg` (Flink's rules: SUM, AVG and
    /// the variances keep an integer type, COUNT is BIGINT).
    fn result_type(func: AggFunc, arg: DataType) -> Result<DataType> {
        Ok(match func {
            AggFunc::Count => DataType::BigInt,
            AggFunc::Min | AggFunc::Max | AggFunc::FirstValue | AggFunc::LastValue => arg,
            AggFunc::ListAgg if arg == DataType::String => arg,
            AggFunc::ListAgg => {
                return Err(SqlError::Type(format!(
                    "LISTAGG of {arg}: it joins STRINGs (CAST the argument)"
                )))
            }
            AggFunc::Sum | AggFunc::Avg | AggFunc::Variance { .. } => match arg {
                DataType::Int | DataType::BigInt | DataType::Double | DataType::Float => arg,
                // AVG and the variances (Calcite's SqlAvgAggFunction, typed
                // by Flink's deriveAvgAggType) of a DECIMAL(p, s) are
                // DECIMAL(38, max(6, s)); SUM keeps the scale.
                DataType::Decimal { scale, .. } if func == AggFunc::Sum => DataType::Decimal {
                    precision: 38,
                    scale,
                },
                DataType::Decimal { scale, .. } => DataType::Decimal {
                    precision: 38,
                    scale: scale.max(6),
                },
                other => {
                    return Err(SqlError::Type(format!(
                        "{func:?} of {other}: it needs a number"
                    )))
                }
            },
        })
    }
}

/// Plans queries against a catalog.
pub struct Planner<'c> {
    catalog: &'c Catalog,
    depth: usize,
    /// The common table expressions in scope (`WITH`), innermost last.
    ctes: Vec<(String, ast::Query)>,
    /// While one grouping set of GROUPING SETS / ROLLUP / CUBE is planned:
    /// which GROUP BY expressions it groups by (the others are NULL).
    grouping_set: Option<Vec<bool>>,
    /// Whether the outermost query is an INSERT's, whose ORDER BY without
    /// LIMIT sorts the stream (Calcite keeps the sort of the top query and
    /// drops that of a subquery or view).
    insert: bool,
}

/// What FROM gave: the plan, the scope its rows are read in, and the
/// window of a windowing TVF (whose three columns come last in the scope
/// and exist only after aggregation).
struct From {
    plan: Plan,
    scope: Scope,
    window: Option<(Window, usize)>,
    /// SESSION's `PARTITION BY` columns (none: not given).
    partition: Vec<String>,
}

impl<'c> Planner<'c> {
    /// A planner of queries over `catalog`.
    pub fn new(catalog: &'c Catalog) -> Self {
        Self {
            catalog,
            depth: 0,
            ctes: Vec::new(),
            grouping_set: None,
            insert: false,
        }
    }

    /// A planner of an INSERT's query over `catalog`: its top query's
    /// ORDER BY without LIMIT is a sort of the stream (see
    /// `plan::order`).
    pub fn for_insert(catalog: &'c Catalog) -> Self {
        Self {
            insert: true,
            ..Self::new(catalog)
        }
    }

    /// Plans a query.
    pub fn query(&mut self, q: &Query) -> Result<Plan> {
        self.depth += 1;
        if self.depth > 64 {
            return Err(SqlError::Plan(
                "views or subqueries nest deeper than 64".into(),
            ));
        }
        let r = self.query_inner(q);
        self.depth -= 1;
        r
    }

    fn query_inner(&mut self, q: &Query) -> Result<Plan> {
        let scoped = self.push_ctes(q)?;
        let r = if q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
            self.top_n(q)
        } else {
            self.set_expr(&q.body)
        };
        self.ctes.truncate(self.ctes.len() - scoped);
        r
    }

    /// Brings `q`'s `WITH` tables into scope (as views seen only by `q`);
    /// returns how many.
    fn push_ctes(&mut self, q: &Query) -> Result<usize> {
        let Some(with) = &q.with else {
            return Ok(0);
        };
        if with.recursive {
            return Err(SqlError::Unsupported("WITH RECURSIVE".into()));
        }
        for cte in &with.cte_tables {
            if cte.alias.columns.iter().any(|c| c.data_type.is_some()) {
                return Err(SqlError::Unsupported(format!(
                    "column types in `WITH {} (..)`",
                    cte.alias.name
                )));
            }
            let names: Vec<ast::Ident> = cte.alias.columns.iter().map(|c| c.name.clone()).collect();
            let query = crate::script::with_column_names((*cte.query).clone(), &names)
                .map_err(|e| SqlError::Plan(format!("WITH {} (..): {e}", cte.alias.name)))?;
            let name = cte.alias.name.value.to_ascii_lowercase();
            let same = with
                .cte_tables
                .iter()
                .filter(|c| c.alias.name.value.eq_ignore_ascii_case(&name))
                .count();
            if same > 1 {
                return Err(SqlError::Plan(format!("WITH names `{name}` twice")));
            }
            self.ctes.push((name, query));
        }
        Ok(with.cte_tables.len())
    }

    /// The query a name in FROM stands for: a `WITH` table in scope (the
    /// innermost), else a view; `None` for a table or an unknown name.
    fn view_query(&self, name: &str) -> Option<Query> {
        let key = name.to_ascii_lowercase();
        if let Some((_, q)) = self.ctes.iter().rev().find(|(n, _)| *n == key) {
            return Some(q.clone());
        }
        if self.catalog.table(name).is_some() {
            return None;
        }
        self.catalog.view(name).cloned()
    }

    fn set_expr(&mut self, body: &SetExpr) -> Result<Plan> {
        match body {
            SetExpr::Select(s) => self.select(s),
            SetExpr::Query(q) => self.query(q),
            SetExpr::Values(v) => self.values(v),
            SetExpr::SetOperation {
                op: SetOperator::Union,
                set_quantifier: SetQuantifier::All,
                left,
                right,
            } => {
                let (l, r) = (self.set_expr(left)?, self.set_expr(right)?);
                // Each column widened to the least common type of both.
                let types = widen::union_types("UNION ALL", &l, &r)?;
                let (l, r) = (
                    widen::cast_columns(l, &types),
                    widen::cast_columns(r, &types),
                );
                let mut schema = l.schema.clone();
                for (f, g) in schema.fields.iter_mut().zip(&r.schema.fields) {
                    f.nullable |= g.nullable;
                }
                let updating = l.updating || r.updating;
                let mut inputs = Vec::new();
                for p in [l, r] {
                    match p.node {
                        Node::Union(more) => inputs.extend(more),
                        _ => inputs.push(p),
                    }
                }
                Ok(Plan {
                    node: Node::Union(inputs),
                    schema,
                    updating,
                })
            }
            SetExpr::SetOperation {
                op,
                set_quantifier,
                left,
                right,
            } => self.set_operation(op, set_quantifier, left, right),
            other => Err(SqlError::Unsupported(format!("the query `{other}`"))),
        }
    }

    fn select(&mut self, s: &Select) -> Result<Plan> {
        // The grouping set this SELECT is planned for (not its subqueries').
        let set = self.grouping_set.take();
        if let Some(rewritten) = self.rewrite_subqueries(s)? {
            self.grouping_set = set;
            return self.select(&rewritten);
        }
        if let Some(rewritten) = self.rewrite_scalar_subqueries(s)? {
            self.grouping_set = set;
            return self.select(&rewritten);
        }
        if s.from.is_empty() {
            // `SELECT 1 + 1, UPPER('a')`: as Flink (Calcite's `VALUES ()`),
            // the expressions over one row of a one-row table.
            let mut one_row = s.clone();
            one_row.from = dual()?;
            self.grouping_set = set;
            return self.select(&one_row);
        }
        if let Some(d) = &s.distinct {
            return self.select_distinct(s, d);
        }
        // `FROM (SELECT .., ROW_NUMBER() OVER (..) AS rn ..) WHERE rn <= N`:
        // a Top-N, the rest of WHERE filtering its rows. `FROM a, b WHERE
        // ..`: the conjuncts of WHERE over two of them join them, the
        // others filter the joined rows.
        let ranked = self.ranked_from(s)?;
        let (from, comma_filter, selection) = match (ranked, s.from.as_slice()) {
            (Some((from, rest)), _) => (from, None, rest),
            (None, [one]) => (self.table_with_joins(one)?, None, s.selection.clone()),
            (None, several) => {
                let (from, rest) = self.comma_join(several, s.selection.as_ref())?;
                (from, Some(rest), None)
            }
        };
        let group_exprs: Vec<Expr> = match &s.group_by {
            GroupByExpr::Expressions(e, m) if m.is_empty() => grouping_sets::flatten(e),
            other => return Err(SqlError::Unsupported(format!("`{other}`"))),
        };
        // `GROUP BY ()`: one group of all rows, aggregated or not.
        let empty_set = matches!(&s.group_by, GroupByExpr::Expressions(e, _) if !e.is_empty())
            && group_exprs.is_empty();
        if set.is_none() {
            if let Some((all, sets)) = grouping_sets::expand(&group_exprs)? {
                return self.grouping_sets(s, all, sets);
            }
        }
        let mut aggs_found = Vec::new();
        for item in &s.projection {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
                find_aggregates(e, &mut aggs_found);
            }
        }
        if let Some(h) = &s.having {
            find_aggregates(h, &mut aggs_found);
        }
        let grouped = !group_exprs.is_empty() || !aggs_found.is_empty() || empty_set;
        // A windowing TVF not aggregated is a table of its rows with their
        // windows (window joins, filters on the window columns).
        let mut from = from;
        if let (Some((window, time)), false) = (from.window, grouped) {
            from = window_table(from, window, time)?;
        }
        // The scope rows are read in before aggregation: a TVF's window
        // columns are not in the rows yet.
        let input_scope = match from.window {
            Some(_) => Scope {
                cols: from.scope.cols[..from.scope.cols.len() - 3].to_vec(),
            },
            None => from.scope.clone(),
        };
        let filter = match comma_filter {
            Some(rest) => rest,
            None => selection
            .as_ref()
            .map(|w| {
                let f = compile(w, &input_scope).map_err(|e| match (&from.window, e) {
                    (Some(_), SqlError::UnknownColumn { column, .. })
                        if is_window_column(&column) =>
                    {
                        SqlError::Unsupported(format!(
                            "`{column}` in WHERE of a window aggregation (filter it after the aggregation)"
                        ))
                    }
                    (_, e) => e,
                })?;
                if f.ty() != DataType::Boolean {
                    return Err(SqlError::Type(format!("WHERE needs a BOOLEAN, got {}", f.ty())));
                }
                Ok(f)
            })
            .transpose()?,
        };
        let mut overs = Vec::new();
        for item in &s.projection {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
                over_agg::find_over_aggregates(e, &mut overs);
            }
        }
        if !overs.is_empty() {
            if grouped || s.having.is_some() {
                return Err(SqlError::Unsupported(
                    "OVER aggregates with GROUP BY or HAVING in one SELECT (aggregate in a subquery first)".into(),
                ));
            }
            return self.over_aggregate(s, from, input_scope, filter, overs);
        }
        if !grouped {
            if s.having.is_some() {
                return Err(SqlError::Plan(
                    "HAVING without GROUP BY or aggregates".into(),
                ));
            }
            let (project, fields) =
                self.projection(&s.projection, &input_scope, &mut |_| Ok(None))?;
            return Ok(calc(from.plan, filter, project, fields));
        }
        self.grouping_set = set;
        // `SELECT *` (or `t.*`) of a grouped query: the input's columns,
        // each of which must then be grouped, as Calcite expands the star
        // before it validates the grouping (`SELECT * FROM t GROUP BY a,
        // b` over a table of `a` and `b` runs; another column is named).
        let starred;
        let s = if from.window.is_none() && s.projection.iter().any(is_star) {
            starred = expand_stars(s, &input_scope)?;
            &starred
        } else {
            s
        };
        self.aggregate(s, from, input_scope, filter, group_exprs)
    }

    /// SELECT DISTINCT: the SELECT grouped by all its columns, without
    /// aggregates (an updating result, as Flink's). Flink plans it as that
    /// GROUP BY, so rows of TUMBLE or HOP windows whose bounds are among
    /// the columns (`SELECT DISTINCT k, window_start, window_end FROM
    /// TABLE(TUMBLE(..))`, and the distinct keys a window semi or anti join
    /// is planned over) are a window aggregation: append-only, each
    /// window's distinct rows once when it ends.
    fn select_distinct(&mut self, s: &Select, d: &ast::Distinct) -> Result<Plan> {
        if let ast::Distinct::On(_) = d {
            return Err(SqlError::Unsupported(format!("SELECT {d}")));
        }
        let mut all = s.clone();
        all.distinct = None;
        let plan = self.select(&all)?;
        if matches!(d, ast::Distinct::All) {
            return Ok(plan);
        }
        let plain_group = matches!(&all.group_by,
            ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
        if window_props::window_props(&plan).is_some() && plain_group && all.having.is_none() {
            let keys: Option<Vec<Expr>> = all
                .projection
                .iter()
                .map(|item| match item {
                    SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                        Some(e.clone())
                    }
                    _ => None,
                })
                .collect();
            if let Some(keys) = keys {
                let mut grouped = all.clone();
                grouped.group_by = ast::GroupByExpr::Expressions(keys, Vec::new());
                if let Ok(g) = self.select(&grouped) {
                    if !g.updating && g.schema.len() == plan.schema.len() {
                        return Ok(g);
                    }
                }
            }
        }
        let mut fields = plan.schema.fields.clone();
        for f in &mut fields {
            f.rowtime = false;
        }
        Ok(Plan {
            node: Node::GroupAgg {
                keys: plan.schema.len(),
                input: Box::new(plan),
                aggs: Vec::new(),
            },
            schema: Schema::new(fields),
            updating: true,
        })
    }

    /// Plans GROUP BY: a calc placing keys first and the aggregates'
    /// arguments after them, the aggregation, then a calc for SELECT and
    /// HAVING over its output.
    fn aggregate(
        &mut self,
        s: &Select,
        from: From,
        mut input_scope: Scope,
        filter: Option<Scalar>,
        group_exprs: Vec<Expr>,
    ) -> Result<Plan> {
        let (mut from, group_exprs, legacy) = legacy_group_window(from, &input_scope, group_exprs)?;
        // A windowing TVF grouped without both window_start and
        // window_end is not a window aggregation: as in Flink, its rows
        // (one per window holding the row) are grouped as any table's.
        if let (Some((window, time)), None) = (&from.window, legacy) {
            let grouped = |col: &str| {
                group_exprs
                    .iter()
                    .any(|g| ident_name(g).is_some_and(|n| n.eq_ignore_ascii_case(col)))
            };
            let session = matches!(window, Window::Session { .. });
            let both = grouped("window_start") && grouped("window_end");
            if !session && !both {
                let (window, time) = (*window, *time);
                from = window_table(from, window, time)?;
                input_scope = from.scope.clone();
            }
        }
        let updating_input = from.plan.updating;
        let grouping_set = self.grouping_set.take();
        let session = matches!(from.window, Some((Window::Session { .. }, _)));
        if grouping_set.is_some() && from.window.is_some() && (legacy.is_some() || session) {
            return Err(SqlError::Unsupported(
                "GROUPING SETS, ROLLUP or CUBE of a legacy group window or a SESSION window aggregation (of a TUMBLE, HOP or CUMULATE window aggregation they are)".into(),
            ));
        }
        // Rows of windows (a window aggregation's, a TVF read as a table)
        // grouped by both their window bounds, under any names: a window
        // aggregation of those same windows (Flink's cascaded one). Not
        // under GROUPING SETS (a set without the bounds is no window's).
        let column_of = |e: &Expr| match compile(e, &input_scope) {
            Ok(Scalar::Column(c, _)) => Some(c),
            _ => None,
        };
        let attached = match (&from.window, legacy, updating_input, &grouping_set) {
            (None, None, false, None) => window_props::window_props(&from.plan).filter(|w| {
                let grouped = |col: usize| group_exprs.iter().any(|g| column_of(g) == Some(col));
                grouped(w.start) && grouped(w.end)
            }),
            _ => None,
        };
        let is_bound = |g: &Expr| {
            attached.is_some_and(|w| {
                let c = column_of(g);
                c == Some(w.start) || c == Some(w.end) || (c.is_some() && c == w.time)
            })
        };
        // Keys: GROUP BY's expressions but a TVF's window columns.
        let mut keys: Vec<Expr> = Vec::new();
        let mut window_cols = Vec::new();
        if legacy.is_some() {
            window_cols.extend(["window_start".to_owned(), "window_end".to_owned()]);
        }
        for g in &group_exprs {
            match ident_name(g) {
                Some(n) if from.window.is_some() && is_window_column(&n) => {
                    window_cols.push(n.to_ascii_lowercase())
                }
                _ if is_bound(g) => {}
                _ => keys.push(g.clone()),
            }
        }
        // A grouping set of a window aggregation (Flink's `GROUP BY
        // window_start, window_end, GROUPING SETS (..)`): a window
        // aggregation of its keys, each set with both window bounds; its
        // flags over `keys`, which leave the window columns out.
        let grouping_set = match grouping_set {
            Some(set) if from.window.is_some() => {
                let mut flags = Vec::with_capacity(keys.len());
                for (g, &grouped) in group_exprs.iter().zip(&set) {
                    match ident_name(g) {
                        Some(n) if is_window_column(&n) => {
                            if !grouped {
                                return Err(SqlError::Plan(format!(
                                    "a grouping set of a window aggregation without `{n}`: group by window_start and window_end outside the sets (GROUP BY window_start, window_end, GROUPING SETS (..))"
                                )));
                            }
                        }
                        _ => flags.push(grouped),
                    }
                }
                Some(flags)
            }
            other => other,
        };
        if from.window.is_some()
            && !(window_cols.iter().any(|c| c == "window_start")
                && window_cols.iter().any(|c| c == "window_end"))
        {
            return Err(SqlError::Plan(
                "a window aggregation must GROUP BY window_start and window_end".into(),
            ));
        }
        // Sessions form per GROUP BY key: SESSION's partition keys, when
        // given, must be those keys (Flink's planner requires the same).
        if !from.partition.is_empty() {
            let names = |v: Vec<String>| {
                let mut v: Vec<String> = v.iter().map(|n| n.to_ascii_lowercase()).collect();
                v.sort();
                v.dedup();
                v
            };
            let grouped: Option<Vec<String>> = keys.iter().map(ident_name).collect();
            if grouped.map(names) != Some(names(from.partition.clone())) {
                return Err(SqlError::Unsupported(format!(
                    "SESSION's PARTITION BY ({}) other than the GROUP BY keys besides the window columns ({}): sessions are formed per GROUP BY key, and Flink requires the two to be the same",
                    from.partition.join(", "),
                    keys.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
                )));
            }
        }
        let mut pre = Vec::new();
        let mut pre_fields = Vec::new();
        // Each key's compiled form: an expression of SELECT or HAVING is
        // that key when it compiles to the same (`t.cat` for `cat`,
        // `upper(x)` for `UPPER(x)`, `(a + 1)` for `a + 1`), as Flink
        // resolves them, not only when it is written the same.
        let mut key_forms = Vec::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            let mut c = compile(k, &input_scope)?;
            key_forms.push(format!("{c:?}"));
            if grouping_set.as_ref().is_some_and(|set| !set[i]) {
                // Not grouped by in this grouping set: NULL.
                c = Scalar::Literal(Value::Null, c.ty());
            }
            let name = ident_name(k).unwrap_or_else(|| format!("$key{i}"));
            pre_fields.push(Field::new(name, c.ty()));
            pre.push(c);
        }
        // The aggregates, each with its argument (and FILTER condition)
        // placed after the keys; equal expressions share a column.
        let mut calls = Vec::new();
        let mut inputs: Vec<(Expr, usize)> = Vec::new();
        let mut agg_exprs: Vec<Expr> = Vec::new();
        let mut found = Vec::new();
        for item in &s.projection {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
                find_aggregates(e, &mut found);
            }
        }
        if let Some(h) = &s.having {
            find_aggregates(h, &mut found);
        }
        for f in found {
            if agg_exprs.contains(&f) {
                continue;
            }
            let Expr::Function(func) = &f else {
                unreachable!("aggregates are calls")
            };
            let name = object_name(&func.name).to_ascii_uppercase();
            let agg = AggFunc::named(&name).expect("found as an aggregate");
            let ast::FunctionArguments::List(list) = &func.args else {
                return Err(SqlError::Type(format!("{name} needs an argument")));
            };
            let distinct = list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct);
            if !list.clauses.is_empty()
                || func.null_treatment.is_some()
                || !func.within_group.is_empty()
            {
                return Err(SqlError::Unsupported(format!("the aggregate call `{f}`")));
            }
            let filter = match &func.filter {
                Some(cond) => Some(self.agg_input(
                    cond,
                    &input_scope,
                    "$filter",
                    &mut pre,
                    &mut pre_fields,
                    &mut inputs,
                )?),
                None => None,
            };
            if let Some(col) = filter {
                if pre_fields[col].ty != DataType::Boolean {
                    return Err(SqlError::Type(format!(
                        "{name}(..) FILTER (WHERE ..) needs a BOOLEAN condition, got {}",
                        pre_fields[col].ty
                    )));
                }
            }
            // LISTAGG's second argument, its separator; then the one
            // argument as any aggregate's.
            let mut args = list.args.as_slice();
            let mut separator = None;
            if let [first, FunctionArg::Unnamed(FunctionArgExpr::Expr(sep))] = args {
                if agg == AggFunc::ListAgg {
                    separator = Some(string_literal(sep).ok_or_else(|| {
                        SqlError::Type(format!(
                            "LISTAGG's separator `{sep}`: a string literal such as ';'"
                        ))
                    })?);
                    args = std::slice::from_ref(first);
                }
            }
            let (arg, arg_ty) = match args {
                [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] if agg == AggFunc::Count => {
                    if distinct {
                        return Err(SqlError::Plan(
                            "COUNT(DISTINCT *): name the column whose distinct values to count"
                                .into(),
                        ));
                    }
                    (None, DataType::BigInt)
                }
                [] if agg == AggFunc::Count && !distinct => (None, DataType::BigInt),
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(a))] => {
                    let col = self.agg_input(
                        a,
                        &input_scope,
                        "$arg",
                        &mut pre,
                        &mut pre_fields,
                        &mut inputs,
                    )?;
                    (Some(col), pre_fields[col].ty)
                }
                [_, _, ..] if distinct => {
                    return Err(SqlError::Unsupported(format!(
                        "{name}(DISTINCT ..) of several columns (one column is supported)"
                    )))
                }
                _ => return Err(SqlError::Type(format!("{name} takes one argument"))),
            };
            if updating_input
                && matches!(
                    agg,
                    AggFunc::FirstValue | AggFunc::LastValue | AggFunc::ListAgg
                )
            {
                // (JSON_ARRAYAGG and JSON_OBJECTAGG are read as LISTAGGs)
                let name = if agg == AggFunc::ListAgg {
                    "LISTAGG (or JSON_ARRAYAGG, JSON_OBJECTAGG)"
                } else {
                    name.as_str()
                };
                return Err(SqlError::Unsupported(format!(
                    "{name} over an updating input (weir keeps no list of its values to retract; it runs over append-only input)"
                )));
            }
            if distinct
                && matches!(
                    agg,
                    AggFunc::FirstValue | AggFunc::LastValue | AggFunc::ListAgg
                )
            {
                return Err(SqlError::Unsupported(format!("{name}(DISTINCT ..)")));
            }
            let extreme = matches!(agg, AggFunc::Min | AggFunc::Max);
            calls.push(AggCall {
                func: agg,
                arg,
                // A MIN or MAX over an updating input counts its values as
                // a DISTINCT aggregate does, so that a retraction of the
                // extreme finds the next one (Flink's *WithRetract).
                distinct: if extreme { updating_input } else { distinct },
                filter,
                arg_ty,
                ty: AggCall::result_type(agg, arg_ty)?,
                text: f.to_string(),
                separator,
                retracts: updating_input,
            });
            agg_exprs.push(f);
        }
        let nkeys = keys.len();
        // The window and the column its time comes from: a TVF's time
        // attribute, or the attached windows' ends.
        let window = match (from.window, attached) {
            (Some(w), _) => Some(w),
            (None, Some(a)) => Some((Window::Attached { size: a.size }, a.end)),
            (None, None) => None,
        };
        let (node, mut out_fields) = match window {
            Some((window, time_col)) => {
                let t = input_scope.cols[time_col].field.clone();
                pre.push(Scalar::Column(time_col, t.ty));
                pre_fields.push(t);
                let time = pre.len() - 1;
                let input = calc(from.plan, filter, pre, pre_fields.clone());
                let mut fields: Vec<Field> = pre_fields[..nkeys].to_vec();
                fields.push(Field::new("window_start", DataType::Timestamp));
                fields.push(Field::new("window_end", DataType::Timestamp));
                let t = &input_scope.cols[time_col].field;
                let mut wt = Field::new("window_time", t.ty);
                // The window's time attribute is of the window's time
                // (attached windows: event time, their ends').
                wt.rowtime = t.rowtime || attached.is_some();
                wt.proctime = t.proctime;
                fields.push(wt);
                (
                    Node::WindowAgg {
                        input: Box::new(input),
                        window,
                        time,
                        keys: nkeys,
                        aggs: calls.clone(),
                    },
                    fields,
                )
            }
            None => {
                let input = calc(from.plan, filter, pre, pre_fields.clone());
                (
                    Node::GroupAgg {
                        input: Box::new(input),
                        keys: nkeys,
                        aggs: calls.clone(),
                    },
                    pre_fields[..nkeys].to_vec(),
                )
            }
        };
        let windowed = matches!(node, Node::WindowAgg { .. });
        let first_agg = out_fields.len();
        for (i, c) in calls.iter().enumerate() {
            out_fields.push(Field::new(format!("EXPR${i}"), c.ty));
        }
        let agg_plan = Plan {
            node,
            schema: Schema::new(out_fields.clone()),
            updating: !windowed || updating_input,
        };
        // SELECT and HAVING over the aggregation's output.
        let out_scope = Scope::of(&agg_plan.schema, None);
        let set = grouping_set.clone();
        let mut hook = |e: &Expr| -> Result<Option<Scalar>> {
            if let Some(i) = keys.iter().position(|k| k == e) {
                return Ok(Some(Scalar::Column(i, out_fields[i].ty)));
            }
            if let Some(g) = grouping_sets::grouping_call(e, &keys, set.as_deref())? {
                return Ok(Some(g));
            }
            if let Some(i) = agg_exprs.iter().position(|a| a == e) {
                let c = first_agg + i;
                return Ok(Some(Scalar::Column(c, out_fields[c].ty)));
            }
            if let (Some(kind), Expr::Function(f)) = (legacy, e) {
                // TUMBLE_START(..) and the like: the group window's columns.
                let name = object_name(&f.name).to_ascii_uppercase();
                if let Some(w) = legacy_window_column(kind, &name)? {
                    let c = nkeys + w;
                    return Ok(Some(Scalar::Column(c, out_fields[c].ty)));
                }
            }
            if let Some(w) = attached {
                // The attached windows' bounds, by whatever name the input
                // gave them.
                let col = column_of(e);
                if let Some(b) = [Some(w.start), Some(w.end), w.time]
                    .iter()
                    .position(|b| b.is_some() && *b == col)
                {
                    let c = nkeys + b;
                    return Ok(Some(Scalar::Column(c, out_fields[c].ty)));
                }
            }
            if windowed && attached.is_none() {
                if let Some(n) = ident_name(e) {
                    let n = n.to_ascii_lowercase();
                    if let Some(w) = ["window_start", "window_end", "window_time"]
                        .iter()
                        .position(|c| *c == n)
                    {
                        let c = nkeys + w;
                        return Ok(Some(Scalar::Column(c, out_fields[c].ty)));
                    }
                }
            }
            if let Ok(c) = compile(e, &input_scope) {
                let form = format!("{c:?}");
                if let Some(i) = key_forms.iter().position(|k| *k == form) {
                    return Ok(Some(Scalar::Column(i, out_fields[i].ty)));
                }
            }
            match e {
                Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                    // A column neither grouped nor aggregated.
                    let name = e.to_string();
                    if input_scope.resolve(&idents(e)).is_ok() {
                        Err(SqlError::Plan(format!(
                            "column `{name}` is neither in GROUP BY nor in an aggregate"
                        )))
                    } else {
                        Err(SqlError::UnknownColumn {
                            column: name,
                            in_scope: input_scope
                                .cols
                                .iter()
                                .map(|c| c.field.name.clone())
                                .collect::<Vec<_>>()
                                .join(", "),
                        })
                    }
                }
                _ => Ok(None),
            }
        };
        let having = s
            .having
            .as_ref()
            .map(|h| compile_with(h, &out_scope, &mut hook))
            .transpose()?;
        let (project, fields) = self.projection(&s.projection, &out_scope, &mut hook)?;
        Ok(calc(agg_plan, having, project, fields))
    }

    /// The column of the pre-aggregation calc that computes `e` (an
    /// aggregate's argument or FILTER condition): an earlier one computing
    /// the same expression, or a new one named `{prefix}{n}`.
    fn agg_input(
        &mut self,
        e: &Expr,
        scope: &Scope,
        prefix: &str,
        pre: &mut Vec<Scalar>,
        pre_fields: &mut Vec<Field>,
        inputs: &mut Vec<(Expr, usize)>,
    ) -> Result<usize> {
        if let Some((_, col)) = inputs.iter().find(|(x, _)| x == e) {
            return Ok(*col);
        }
        let c = compile(e, scope)?;
        pre_fields.push(Field::new(format!("{prefix}{}", inputs.len()), c.ty()));
        pre.push(c);
        inputs.push((e.clone(), pre.len() - 1));
        Ok(pre.len() - 1)
    }

    /// SELECT's items compiled in `scope`: the expressions and the output
    /// columns (named by alias, column name, or `EXPR$n`).
    fn projection(
        &mut self,
        items: &[SelectItem],
        scope: &Scope,
        hook: expr::Hook<'_>,
    ) -> Result<(Vec<Scalar>, Vec<Field>)> {
        let mut project = Vec::new();
        let mut fields = Vec::new();
        for (n, item) in items.iter().enumerate() {
            match item {
                SelectItem::Wildcard(_) => {
                    for (i, c) in scope.cols.iter().enumerate() {
                        // The columns of a subquery made a join, and the
                        // sides' columns a USING merged.
                        if c.hidden || c.field.name.starts_with(subquery::HIDDEN) {
                            continue;
                        }
                        project.push(
                            hook(&Expr::Identifier(ast::Ident::new(&c.field.name)))?
                                .unwrap_or(Scalar::Column(i, c.field.ty)),
                        );
                        fields.push(c.field.clone());
                    }
                }
                SelectItem::QualifiedWildcard(kind, _) => {
                    // `t.*`: the columns qualified by `t`.
                    let q = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => object_name(n),
                        other => {
                            return Err(SqlError::Unsupported(format!("the select item `{other}`")))
                        }
                    };
                    let mut any = false;
                    for (i, c) in scope.cols.iter().enumerate() {
                        if c.qualifier
                            .as_deref()
                            .is_some_and(|cq| cq.eq_ignore_ascii_case(&q))
                        {
                            project.push(Scalar::Column(i, c.field.ty));
                            fields.push(c.field.clone());
                            any = true;
                        }
                    }
                    if !any {
                        return Err(SqlError::UnknownTable(q));
                    }
                }
                SelectItem::UnnamedExpr(e) => {
                    let c = compile_with(e, scope, hook)?;
                    let mut f = match (ident_name(e), c.as_column()) {
                        (Some(name), Some(i)) => Field {
                            name,
                            ..scope.cols[i].field.clone()
                        },
                        (Some(name), None) => Field::new(name, c.ty()),
                        _ => Field::new(format!("EXPR${n}"), c.ty()),
                    };
                    f.ty = c.ty();
                    f.proctime |= c.is_proctime();
                    fields.push(f);
                    project.push(c);
                }
                SelectItem::ExprWithAlias { expr: e, alias } => {
                    let c = compile_with(e, scope, hook)?;
                    let mut f = match c.as_column() {
                        Some(i) => scope.cols[i].field.clone(),
                        None => Field::new("", c.ty()),
                    };
                    f.name = alias.value.clone();
                    f.ty = c.ty();
                    f.proctime |= c.is_proctime();
                    fields.push(f);
                    project.push(c);
                }
                other => return Err(SqlError::Unsupported(format!("the select item `{other}`"))),
            }
        }
        unique_names(&mut fields);
        Ok((project, fields))
    }

    fn table_factor(&mut self, t: &TableFactor) -> Result<From> {
        match t {
            TableFactor::Table { name, alias, args: None, .. } => {
                let n = object_name(name);
                let qual = alias.as_ref().map_or(n.clone(), |a| a.name.value.clone());
                let plan = self.named(&n)?;
                let scope = Scope::of(&plan.schema, Some(&qual));
                Ok(From {
                    plan,
                    scope,
                    window: None,
                    partition: Vec::new(),
                })
            }
            TableFactor::Derived { subquery, alias, lateral: false, .. } => {
                let mut plan = self.query(subquery)?;
                // `AS v(a, b)`: the columns renamed.
                if let Some(a) = alias.as_ref().filter(|a| !a.columns.is_empty()) {
                    if a.columns.len() != plan.schema.len() {
                        // (a view's or WITH table's column list is such an
                        // alias, `__weir_named`: the list is what was written)
                        let named = if a.name.value == "__weir_named" {
                            let cols: Vec<String> =
                                a.columns.iter().map(|c| c.name.to_string()).collect();
                            format!("the column list ({})", cols.join(", "))
                        } else {
                            format!("`{a}`")
                        };
                        return Err(SqlError::Plan(format!(
                            "{named} names {} columns, the query has {}",
                            a.columns.len(),
                            plan.schema.len()
                        )));
                    }
                    for (f, c) in plan.schema.fields.iter_mut().zip(&a.columns) {
                        f.name = c.name.value.clone();
                    }
                }
                let scope = Scope::of(&plan.schema, alias.as_ref().map(|a| a.name.value.as_str()));
                Ok(From {
                    plan,
                    scope,
                    window: None,
                    partition: Vec::new(),
                })
            }
            TableFactor::TableFunction { expr: Expr::Function(f), alias } => self.window_tvf(f, alias.as_ref()),
            TableFactor::NestedJoin { table_with_joins, alias } => {
                let mut from = self.table_with_joins(table_with_joins)?;
                if let Some(a) = alias {
                    for c in &mut from.scope.cols {
                        c.qualifier = Some(a.name.value.clone());
                    }
                }
                Ok(from)
            }
            TableFactor::Table { name, args: Some(_), .. } => Err(SqlError::Unsupported(format!(
                "`{name}(..)` in FROM; a windowing TVF is written TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL ..))"
            ))),
            other => Err(SqlError::Unsupported(format!("`{other}` in FROM"))),
        }
    }

    /// A table or view by name, planned.
    fn named(&mut self, name: &str) -> Result<Plan> {
        let key = name.to_ascii_lowercase();
        // A WITH table is planned seeing only the WITH tables before it.
        if let Some(at) = self.ctes.iter().rposition(|(n, _)| *n == key) {
            let q = self.ctes[at].1.clone();
            let saved = self.ctes.clone();
            self.ctes.truncate(at);
            let r = self.query(&q);
            self.ctes = saved;
            return r;
        }
        if let Some(t) = self.catalog.table(name) {
            return Ok(Plan {
                node: Node::Scan(t.clone()),
                schema: t.schema.clone(),
                updating: false,
            });
        }
        if let Some(q) = self.catalog.view(name) {
            // A view sees the catalog, not the WITH tables of its reader.
            let q = q.clone();
            let saved = std::mem::take(&mut self.ctes);
            let r = self.query(&q);
            self.ctes = saved;
            return r;
        }
        Err(SqlError::UnknownTable(name.to_owned()))
    }

    fn window_tvf(&mut self, f: &ast::Function, alias: Option<&ast::TableAlias>) -> Result<From> {
        let name = object_name(&f.name).to_ascii_uppercase();
        let ast::FunctionArguments::List(list) = &f.args else {
            return Err(SqlError::Plan(format!("{name} needs arguments")));
        };
        let mut args: Vec<&Expr> = Vec::new();
        for a in &list.args {
            match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => args.push(e),
                FunctionArg::Named {
                    arg: FunctionArgExpr::Expr(e),
                    ..
                }
                | FunctionArg::ExprNamed {
                    arg: FunctionArgExpr::Expr(e),
                    ..
                } => args.push(e),
                other => return Err(SqlError::Plan(format!("{name}: the argument `{other}`"))),
            }
        }
        let usage = |what: &str| {
            SqlError::Plan(format!(
                "{name}: {what}; write {name}(TABLE t, DESCRIPTOR(time_column), {})",
                match name.as_str() {
                    "HOP" => "INTERVAL slide, INTERVAL size",
                    "CUMULATE" => "INTERVAL step, INTERVAL size",
                    "SESSION" => "INTERVAL gap",
                    _ => "INTERVAL size",
                }
            ))
        };
        if args.len() < 3 {
            return Err(usage("too few arguments"));
        }
        // TABLE t (or a subquery), then DESCRIPTOR(col).
        let input = match args[0] {
            Expr::Function(tf) if object_name(&tf.name) == TABLE_ARG => {
                let ast::FunctionArguments::List(l) = &tf.args else {
                    unreachable!()
                };
                // The dialect reads `TABLE db.t` as `__TABLE(db.t)`; a
                // query printed and parsed again (a subquery rewritten to
                // a join) has `__TABLE(t)`, a plain identifier.
                let table = match l.args.first() {
                    Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(
                        Expr::CompoundIdentifier(parts),
                    ))) => parts.last().map(|p| p.value.clone()).unwrap_or_default(),
                    Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(i)))) => {
                        i.value.clone()
                    }
                    _ => return Err(usage("the first argument must be TABLE name")),
                };
                let plan = self.named(&table)?;
                // `TABLE t PARTITION BY (k, ..)`: the keys after the name.
                let partition: Vec<String> = l.args[1..]
                    .iter()
                    .filter_map(|a| match a {
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => ident_name(e),
                        _ => None,
                    })
                    .collect();
                (plan, table, partition)
            }
            // A subquery, as Calcite's table parameter takes it (and the
            // rows of a view): `TUMBLE((SELECT .. FROM t WHERE ..), ..)`.
            Expr::Subquery(q) => (self.query(q)?, name.to_ascii_lowercase(), Vec::new()),
            _ => {
                return Err(usage(
                    "the first argument must be TABLE name or a subquery (SELECT ..)",
                ))
            }
        };
        let (plan, table, partition) = input;
        if !partition.is_empty() && name != "SESSION" {
            return Err(SqlError::Unsupported(format!(
                "PARTITION BY in {name} (as in Flink, only SESSION takes partition keys)"
            )));
        }
        let unknown = |column: &str| SqlError::UnknownColumn {
            column: column.to_owned(),
            in_scope: plan
                .schema
                .fields
                .iter()
                .map(|f| f.name.clone())
                .collect::<Vec<_>>()
                .join(", "),
        };
        if let Some(key) = partition.iter().find(|k| plan.schema.index_of(k).is_none()) {
            return Err(unknown(key));
        }
        let Expr::Function(d) = args[1] else {
            return Err(usage("the second argument must be DESCRIPTOR(time_column)"));
        };
        if !object_name(&d.name).eq_ignore_ascii_case("DESCRIPTOR") {
            return Err(usage("the second argument must be DESCRIPTOR(time_column)"));
        }
        let ast::FunctionArguments::List(dl) = &d.args else {
            return Err(usage("DESCRIPTOR names one column"));
        };
        let col = match dl.args.as_slice() {
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(e))] => ident_name(e),
            _ => None,
        }
        .ok_or_else(|| usage("DESCRIPTOR names one column"))?;
        let qual = alias.map_or(table.clone(), |a| a.name.value.clone());
        let mut scope = Scope::of(&plan.schema, Some(&qual));
        let time = plan.schema.index_of(&col).ok_or_else(|| unknown(&col))?;
        let proctime = plan.schema.fields[time].proctime;
        if !plan.schema.fields[time].rowtime && !proctime {
            return Err(SqlError::Plan(format!(
                "{name}: `{col}` is not a time attribute (declare WATERMARK FOR {col} in table `{table}`, or a processing-time column `{col} AS PROCTIME()`)"
            )));
        }
        if proctime && name == "CUMULATE" {
            return Err(SqlError::Unsupported(
                "CUMULATE on processing time (it is supported on event time)".into(),
            ));
        }
        if plan.updating {
            return Err(SqlError::Unsupported(format!(
                "{name} over an updating input"
            )));
        }
        // The offset (TUMBLE's third interval, HOP's and CUMULATE's
        // fourth) may be zero or negative, as in Flink.
        let offset_at = if name == "TUMBLE" { 1 } else { 2 };
        let interval = |(i, e): (usize, &&Expr)| -> Result<i64> {
            match e {
                Expr::Interval(iv) => {
                    let ms = expr::interval_ms(iv)?;
                    if ms <= 0 && i != offset_at {
                        return Err(usage("intervals must be positive"));
                    }
                    Ok(ms)
                }
                _ => Err(usage("sizes are INTERVAL literals")),
            }
        };
        let rest: Vec<i64> = args[2..]
            .iter()
            .enumerate()
            .map(interval)
            .collect::<Result<_>>()?;
        // Flink's window start, `t - (t - offset + period) % period`,
        // depends on the offset only modulo the period its windows repeat
        // at: an offset of -1 s to 5 s windows is one of 4 s.
        let offset = |period: i64| rest.get(offset_at).map_or(0, |o| o.rem_euclid(period));
        let window = match (name.as_str(), rest.as_slice()) {
            ("TUMBLE", [size]) | ("TUMBLE", [size, _]) => Window::Tumble {
                size: *size,
                offset: offset(*size),
            },
            ("HOP", [slide, size]) | ("HOP", [slide, size, _]) => {
                if size % slide != 0 {
                    return Err(usage("the size must be a whole multiple of the slide"));
                }
                check_windows_per_row(size / slide, "slide").map_err(|e| usage(&e))?;
                Window::Hop {
                    slide: *slide,
                    size: *size,
                    offset: offset(*slide),
                }
            }
            ("SESSION", [gap]) => Window::Session { gap: *gap },
            ("CUMULATE", [step, size]) | ("CUMULATE", [step, size, _]) => {
                if size % step != 0 {
                    return Err(usage("the size must be a whole multiple of the step"));
                }
                check_windows_per_row(size / step, "step").map_err(|e| usage(&e))?;
                Window::Cumulate {
                    step: *step,
                    size: *size,
                    offset: offset(*size),
                }
            }
            ("TUMBLE" | "HOP" | "SESSION" | "CUMULATE", _) => {
                return Err(usage("wrong number of intervals"))
            }
            _ => return Err(SqlError::UnknownFunction(name)),
        };
        for n in ["window_start", "window_end", "window_time"] {
            let mut f = Field::new(
                n,
                if n == "window_time" {
                    plan.schema.fields[time].ty
                } else {
                    DataType::Timestamp
                },
            );
            f.rowtime = n == "window_time" && !proctime;
            f.proctime = n == "window_time" && proctime;
            scope.cols.push(ScopeCol {
                qualifier: Some(qual.clone()),
                field: f,
                hidden: false,
            });
        }
        Ok(From {
            plan,
            scope,
            window: Some((window, time)),
            partition,
        })
    }
}

/// Renames output columns whose name an earlier one has, as Flink does
/// (`SELECT *` of a join of two tables with an `id`: `id`, `id0`).
fn unique_names(fields: &mut [Field]) {
    for i in 1..fields.len() {
        let taken =
            |n: &str, fields: &[Field]| fields.iter().any(|f| f.name.eq_ignore_ascii_case(n));
        if !taken(&fields[i].name, &fields[..i]) {
            continue;
        }
        let base = fields[i].name.clone();
        let mut n = 0;
        while taken(&format!("{base}{n}"), fields) {
            n += 1;
        }
        fields[i].name = format!("{base}{n}");
    }
}

/// A windowing TVF's rows with their windows, as a table.
fn window_table(from: From, window: Window, time: usize) -> Result<From> {
    if let Window::Session { .. } = window {
        return Err(SqlError::Unsupported(
            "SESSION without GROUP BY window_start, window_end (sessions exist only as a window aggregation)".into(),
        ));
    }
    let mut schema = from.plan.schema.clone();
    let n = from.scope.cols.len();
    schema
        .fields
        .extend(from.scope.cols[n - 3..].iter().map(|c| c.field.clone()));
    let updating = from.plan.updating;
    Ok(From {
        plan: Plan {
            node: Node::WindowAssign {
                input: Box::new(from.plan),
                window,
                time,
            },
            schema,
            updating,
        },
        scope: from.scope,
        window: None,
        partition: Vec::new(),
    })
}

/// The group window functions of Flink's legacy syntax, `GROUP BY ..,
/// TUMBLE(time, size)` (also `HOP(time, slide, size)` and `SESSION(time,
/// gap)`), as the window of a windowing TVF over the same input: returns
/// the FROM with that window, GROUP BY without the call, and the
/// window's kind (for `TUMBLE_START(..)` and the like). A GROUP BY
/// without one is returned as it is.
fn legacy_group_window(
    from: From,
    scope: &Scope,
    group_exprs: Vec<Expr>,
) -> Result<(From, Vec<Expr>, Option<&'static str>)> {
    fn kind_of(e: &Expr) -> Option<(&'static str, &ast::Function)> {
        match e {
            Expr::Function(f) => match object_name(&f.name).to_ascii_uppercase().as_str() {
                "TUMBLE" => Some(("TUMBLE", f)),
                "HOP" => Some(("HOP", f)),
                "SESSION" => Some(("SESSION", f)),
                _ => None,
            },
            _ => None,
        }
    }
    let calls: Vec<_> = group_exprs.iter().filter_map(kind_of).collect();
    let Some(&(kind, f)) = calls.first() else {
        return Ok((from, group_exprs, None));
    };
    let usage = |what: &str| {
        SqlError::Plan(format!(
            "GROUP BY {kind}(..): {what}; write {kind}(time_column, {})",
            match kind {
                "HOP" => "INTERVAL slide, INTERVAL size",
                "SESSION" => "INTERVAL gap",
                _ => "INTERVAL size",
            }
        ))
    };
    if calls.len() > 1 {
        return Err(usage("one group window per GROUP BY"));
    }
    if from.window.is_some() {
        return Err(usage(
            "a group window over a windowing table function's rows",
        ));
    }
    let ast::FunctionArguments::List(list) = &f.args else {
        return Err(usage("arguments missing"));
    };
    let args: Vec<&Expr> = list
        .args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
            other => Err(usage(&format!("the argument `{other}`"))),
        })
        .collect::<Result<_>>()?;
    let Some((time_arg, intervals)) = args.split_first() else {
        return Err(usage("arguments missing"));
    };
    let time = match compile(time_arg, scope)? {
        Scalar::Column(i, _) => i,
        _ => return Err(usage("the first argument must be a time column")),
    };
    let field = &scope.cols[time].field;
    if !field.rowtime && !field.proctime {
        return Err(SqlError::Plan(format!(
            "GROUP BY {kind}(..): `{}` is not a time attribute (declare a WATERMARK for it, or a processing-time column AS PROCTIME())",
            field.name
        )));
    }
    if from.plan.updating {
        return Err(SqlError::Unsupported(format!(
            "GROUP BY {kind}(..) over an updating input"
        )));
    }
    let ms: Vec<i64> = intervals
        .iter()
        .map(|e| match e {
            Expr::Interval(iv) => match expr::interval_ms(iv)? {
                ms if ms > 0 => Ok(ms),
                _ => Err(usage("intervals must be positive")),
            },
            _ => Err(usage("sizes are INTERVAL literals")),
        })
        .collect::<Result<_>>()?;
    let window = match (kind, ms.as_slice()) {
        ("TUMBLE", &[size]) => Window::Tumble { size, offset: 0 },
        ("TUMBLE", &[size, offset]) => Window::Tumble { size, offset },
        ("HOP", &[slide, size]) if size % slide == 0 => {
            check_windows_per_row(size / slide, "slide").map_err(|e| usage(&e))?;
            Window::Hop {
                slide,
                size,
                offset: 0,
            }
        }
        ("HOP", &[_, _]) => return Err(usage("the size must be a whole multiple of the slide")),
        ("SESSION", &[gap]) => Window::Session { gap },
        _ => return Err(usage("wrong number of intervals")),
    };
    let rest = group_exprs
        .iter()
        .filter(|e| kind_of(e).is_none())
        .cloned()
        .collect();
    Ok((
        From {
            window: Some((window, time)),
            ..from
        },
        rest,
        Some(kind),
    ))
}

/// The text of a string literal (`';'`), if `e` is one.
fn string_literal(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The window column (0 start, 1 end, 2 time) that the legacy group
/// window function `name` (`TUMBLE_START`, `HOP_END`, `SESSION_ROWTIME`,
/// ..) gives, for a GROUP BY of a `kind` window; `None` if `name` is no
/// such function.
fn legacy_window_column(kind: &str, name: &str) -> Result<Option<usize>> {
    let Some((prefix, part)) = ["TUMBLE", "HOP", "SESSION"]
        .iter()
        .find_map(|k| Some((*k, name.strip_prefix(k)?.strip_prefix('_')?)))
    else {
        return Ok(None);
    };
    let column = match part {
        "START" => 0,
        "END" => 1,
        "ROWTIME" | "PROCTIME" => 2,
        _ => return Ok(None),
    };
    if prefix != kind {
        return Err(SqlError::Plan(format!(
            "{name}(..) in a query grouped by a {kind} window (use {kind}_{part})"
        )));
    }
    Ok(Some(column))
}

fn is_window_column(n: &str) -> bool {
    ["window_start", "window_end", "window_time"]
        .iter()
        .any(|c| c.eq_ignore_ascii_case(n))
}

fn idents(e: &Expr) -> Vec<ast::Ident> {
    match e {
        Expr::Identifier(i) => vec![i.clone()],
        Expr::CompoundIdentifier(p) => p.clone(),
        _ => vec![],
    }
}

/// The column name an expression is, if it is one (`a` or `t.a`).
fn ident_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(i.value.clone()),
        Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()),
        Expr::Nested(x) => ident_name(x),
        _ => None,
    }
}

fn is_star(item: &SelectItem) -> bool {
    matches!(
        item,
        SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
    )
}

/// `s` with each `*` and `t.*` of its SELECT list written out as the
/// columns of `scope` it stands for (qualified where a name is not
/// unique).
fn expand_stars(s: &Select, scope: &Scope) -> Result<Select> {
    let visible: Vec<&crate::expr::ScopeCol> = scope
        .cols
        .iter()
        .filter(|c| !c.hidden && !c.field.name.starts_with(subquery::HIDDEN))
        .collect();
    let column = |c: &crate::expr::ScopeCol| {
        let unique = visible
            .iter()
            .filter(|o| o.field.name.eq_ignore_ascii_case(&c.field.name))
            .count()
            == 1;
        let expr = match &c.qualifier {
            Some(q) if !unique => Expr::CompoundIdentifier(vec![
                ast::Ident::new(q.as_str()),
                ast::Ident::new(c.field.name.as_str()),
            ]),
            _ => Expr::Identifier(ast::Ident::new(c.field.name.as_str())),
        };
        SelectItem::UnnamedExpr(expr)
    };
    let mut out = s.clone();
    out.projection = Vec::with_capacity(s.projection.len());
    for item in &s.projection {
        match item {
            SelectItem::Wildcard(_) => out.projection.extend(visible.iter().map(|c| column(c))),
            SelectItem::QualifiedWildcard(
                ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                _,
            ) => {
                let q = object_name(n);
                let mine: Vec<SelectItem> = scope
                    .cols
                    .iter()
                    .filter(|c| {
                        c.qualifier
                            .as_deref()
                            .is_some_and(|cq| cq.eq_ignore_ascii_case(&q))
                    })
                    .map(|c| {
                        SelectItem::UnnamedExpr(Expr::CompoundIdentifier(vec![
                            ast::Ident::new(q.as_str()),
                            ast::Ident::new(c.field.name.as_str()),
                        ]))
                    })
                    .collect();
                if mine.is_empty() {
                    return Err(SqlError::UnknownTable(q));
                }
                out.projection.extend(mine);
            }
            other => out.projection.push(other.clone()),
        }
    }
    Ok(out)
}

/// Collects the aggregate calls in `e` (not inside another aggregate).
fn find_aggregates(e: &Expr, out: &mut Vec<Expr>) {
    use sqlparser::ast::Visit;
    /// The aggregates found, and how many subqueries deep the visit is
    /// (a subquery's aggregates are its own).
    struct V<'a>(&'a mut Vec<Expr>, usize);
    impl ast::Visitor for V<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> std::ops::ControlFlow<()> {
            self.1 += 1;
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> std::ops::ControlFlow<()> {
            self.1 -= 1;
            std::ops::ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
            if let Expr::Function(f) = e {
                let n = object_name(&f.name).to_ascii_uppercase();
                if self.1 == 0 && f.over.is_none() && AggFunc::named(&n).is_some() {
                    self.0.push(e.clone());
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = e.visit(&mut V(out, 0));
}

/// A calc node, or the input itself when it would do nothing.
pub(super) fn calc(
    input: Plan,
    filter: Option<Scalar>,
    project: Vec<Scalar>,
    fields: Vec<Field>,
) -> Plan {
    let identity = filter.is_none()
        && project.len() == input.schema.len()
        && project
            .iter()
            .enumerate()
            .all(|(i, p)| p.as_column() == Some(i));
    if identity {
        let mut p = input;
        for (f, n) in p.schema.fields.iter_mut().zip(fields) {
            f.name = n.name;
        }
        return p;
    }
    let updating = input.updating;
    Plan {
        node: Node::Calc {
            input: Box::new(input),
            filter,
            project,
        },
        schema: Schema::new(fields),
        updating,
    }
}

impl Plan {
    /// The plan as EXPLAIN prints its logical part: one operator per line,
    /// inputs indented below.
    pub fn explain(&self) -> String {
        let mut s = String::new();
        self.explain_into(&mut s, 0);
        s
    }

    fn explain_into(&self, s: &mut String, depth: usize) {
        let pad = "  ".repeat(depth);
        let cols = self
            .schema
            .fields
            .iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        match &self.node {
            Node::Values(rows) => {
                let _ = writeln!(s, "{pad}Values(rows=[{}], fields=[{cols}])", rows.len());
            }
            Node::Scan(t) => {
                let _ = write!(
                    s,
                    "{pad}TableSourceScan(table=[{}], connector=[{}], fields=[{cols}]",
                    t.name,
                    t.connector.name()
                );
                if let Some((c, d)) = t.watermark {
                    let _ = write!(s, ", watermark=[{} - {d} ms]", t.schema.fields[c].name);
                }
                s.push_str(")\n");
            }
            Node::Calc {
                input,
                filter,
                project,
            } => {
                // A column cast from one of the input's (UNION's and
                // INSERT's widening, or a CAST of a column) shows the cast.
                let select = project
                    .iter()
                    .zip(&self.schema.fields)
                    .map(|(p, f)| match p {
                        Scalar::Cast(c, t, _) => {
                            let what = c
                                .as_column()
                                .map_or("..", |i| input.schema.fields[i].name.as_str());
                            format!("CAST({what} AS {t}) AS {}", f.name)
                        }
                        _ => f.name.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                let _ = write!(s, "{pad}Calc(select=[{select}]");
                if filter.is_some() {
                    s.push_str(", where=[..]");
                }
                s.push_str(")\n");
                input.explain_into(s, depth + 1);
            }
            Node::WindowAgg {
                input,
                window,
                keys,
                aggs,
                ..
            } => {
                let _ = writeln!(
                    s,
                    "{pad}WindowAggregate(window=[{window:?}], groupBy=[{}], select=[{}])",
                    input.schema.fields[..*keys]
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    aggs.iter()
                        .map(|a| a.text.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                input.explain_into(s, depth + 1);
            }
            Node::GroupAgg { input, keys, aggs } => {
                let _ = writeln!(
                    s,
                    "{pad}GroupAggregate(groupBy=[{}], select=[{}], changelog=[I,UB,UA,D])",
                    input.schema.fields[..*keys]
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    aggs.iter()
                        .map(|a| a.text.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                input.explain_into(s, depth + 1);
            }
            Node::OverAgg {
                input,
                partition,
                time,
                frame,
                aggs,
                lags,
            } => {
                let lags: Vec<String> = lags
                    .iter()
                    .map(|l| {
                        let f = if l.ahead { "LEAD" } else { "LAG" };
                        format!(", {f}({}, {})", input.schema.fields[l.arg].name, l.offset)
                    })
                    .collect();
                let _ = writeln!(
                    s,
                    "{pad}OverAggregate(partitionBy=[{}], orderBy=[{}], frame=[{frame:?}], select=[{}{}])",
                    partition
                        .iter()
                        .map(|&c| input.schema.fields[c].name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    input.schema.fields[*time].name,
                    aggs.iter()
                        .map(|a| a.text.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    lags.concat()
                );
                input.explain_into(s, depth + 1);
            }
            Node::WindowJoin {
                left, right, kind, ..
            } => {
                let _ = writeln!(s, "{pad}WindowJoin(joinType=[{kind}], fields=[{cols}])");
                left.explain_into(s, depth + 1);
                right.explain_into(s, depth + 1);
            }
            Node::TemporalJoin {
                left,
                right,
                outer,
                left_time,
                right_time,
                ..
            } => {
                let _ = writeln!(
                    s,
                    "{pad}TemporalJoin(joinType=[{}], leftTime=[{}], rightTime=[{}], fields=[{cols}])",
                    if *outer { "LeftOuterJoin" } else { "InnerJoin" },
                    left.schema.fields[*left_time].name,
                    right.schema.fields[*right_time].name
                );
                left.explain_into(s, depth + 1);
                right.explain_into(s, depth + 1);
            }
            Node::Union(inputs) => {
                let _ = writeln!(s, "{pad}Union(all=[true], fields=[{cols}])");
                for i in inputs {
                    i.explain_into(s, depth + 1);
                }
            }
            Node::Replicate { input } => {
                let _ = writeln!(
                    s,
                    "{pad}Correlate(invocation=[ReplicateRows({})], select=[{cols}])",
                    input.schema.fields[input.schema.len() - 1].name
                );
                input.explain_into(s, depth + 1);
            }
            Node::WindowAssign {
                input,
                window,
                time,
            } => {
                let _ = writeln!(
                    s,
                    "{pad}WindowTableFunction(window=[{window:?}], time_col=[{}])",
                    input.schema.fields[*time].name
                );
                input.explain_into(s, depth + 1);
            }
            Node::Join {
                left,
                right,
                kind,
                on,
            } => {
                let _ = writeln!(
                    s,
                    "{pad}Join(joinType=[{kind}], {}, select=[{cols}])",
                    join_keys(left, right, on)
                );
                left.explain_into(s, depth + 1);
                right.explain_into(s, depth + 1);
            }
            Node::IntervalJoin {
                left,
                right,
                kind,
                on,
                bounds,
            } => {
                let _ = writeln!(
                    s,
                    "{pad}IntervalJoin(joinType=[{kind}], {}, between=[{} ms <= {} - {} <= {} ms], select=[{cols}])",
                    join_keys(left, right, on),
                    bounds.lower,
                    right.schema.fields[bounds.right_time].name,
                    left.schema.fields[bounds.left_time].name,
                    bounds.upper
                );
                left.explain_into(s, depth + 1);
                right.explain_into(s, depth + 1);
            }
            Node::Rank { input, rank } => {
                let names: Vec<String> =
                    input.schema.fields.iter().map(|f| f.name.clone()).collect();
                let _ = writeln!(
                    s,
                    "{pad}{}{}",
                    crate::rank::Explain(rank, &names),
                    if self.updating {
                        ", changelog=[I,UB,UA,D]"
                    } else {
                        ""
                    }
                );
                input.explain_into(s, depth + 1);
            }
        }
    }
}

impl Plan {
    /// What makes this plan's rows a changelog, in the words an
    /// append-only sink's refusal names it with (Flink's names the node
    /// that produces the updates): the updating operator nearest the
    /// output, through calcs and unions. `None` when it only inserts.
    pub fn updates_from(&self) -> Option<String> {
        if !self.updating {
            return None;
        }
        let first_updating = |node: &Node| {
            crate::reuse::inputs(node)
                .into_iter()
                .find_map(Plan::updates_from)
        };
        Some(match &self.node {
            Node::Calc { input, .. } | Node::Replicate { input } => return input.updates_from(),
            Node::Rank { input, rank } => match &rank.kind {
                crate::rank::RankKind::MiniBatch { .. } => return input.updates_from(),
                crate::rank::RankKind::KeepLast { .. }
                | crate::rank::RankKind::ProcTimeDeduplicate { .. } => {
                    "a deduplication keeping the last row (ROW_NUMBER() .. ORDER BY time DESC, rn = 1)"
                        .into()
                }
                _ if input.updating => {
                    "a Top-N over an updating input (ROW_NUMBER(), RANK() or DENSE_RANK() bounded by WHERE)"
                        .into()
                }
                _ => "a Top-N (ROW_NUMBER(), RANK() or DENSE_RANK() bounded by WHERE)".into(),
            },
            Node::GroupAgg { .. } => {
                "a group aggregation without a window (GROUP BY, SELECT DISTINCT, UNION, INTERSECT or EXCEPT)"
                    .into()
            }
            Node::Join {
                left, right, kind, ..
            } => {
                let written = match kind {
                    JoinKind::Inner => "JOIN",
                    JoinKind::Left => "LEFT JOIN",
                    JoinKind::Right => "RIGHT JOIN",
                    JoinKind::Full => "FULL JOIN",
                };
                if left.updating || right.updating {
                    format!(
                        "a regular {written} of {}",
                        first_updating(&self.node).unwrap_or_default()
                    )
                } else {
                    format!("a regular {written}, which retracts the rows it padded with NULLs when a match arrives")
                }
            }
            _ => return first_updating(&self.node),
        })
    }

    /// Whether every source under this plan ends by itself.
    pub fn is_bounded(&self) -> bool {
        match &self.node {
            Node::Values(_) => true,
            Node::Scan(t) => match &t.connector {
                crate::connectors::Connector::Datagen(g) => g.count().is_some(),
                crate::connectors::Connector::Nexmark(n) => n.events.is_some(),
                crate::connectors::Connector::Filesystem {
                    monitor_interval, ..
                } => monitor_interval.is_none(),
                crate::connectors::Connector::Kafka(k) => k.is_bounded(),
                _ => true,
            },
            Node::Calc { input, .. }
            | Node::WindowAgg { input, .. }
            | Node::GroupAgg { input, .. }
            | Node::OverAgg { input, .. }
            | Node::Rank { input, .. }
            | Node::Replicate { input }
            | Node::WindowAssign { input, .. } => input.is_bounded(),
            Node::Union(inputs) => inputs.iter().all(Plan::is_bounded),
            Node::Join { left, right, .. }
            | Node::IntervalJoin { left, right, .. }
            | Node::TemporalJoin { left, right, .. }
            | Node::WindowJoin { left, right, .. } => left.is_bounded() && right.is_bounded(),
        }
    }
}

/// A literal NULL of a type, for places a value must be made up.
pub fn null() -> Value {
    Value::Null
}

/// The FROM of a SELECT without one: a table of one row, whose one
/// column is hidden (`__weir_`) from `*`.
fn dual() -> Result<Vec<ast::TableWithJoins>> {
    let q = sqlparser::parser::Parser::new(&crate::dialect::FlinkDialect::default())
        .try_with_sql("SELECT 1 FROM (VALUES (0)) AS __weir_dual(__weir_dual)")
        .and_then(|mut p| p.parse_query())
        .map_err(|e| SqlError::Plan(format!("a SELECT without FROM: {e}")))?;
    match *q.body {
        SetExpr::Select(one) => Ok(one.from),
        _ => Err(SqlError::Plan("a SELECT without FROM".into())),
    }
}
