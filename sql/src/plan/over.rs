//! `ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..) AS rn` in a subquery
//! (or a view) whose reader bounds it with `WHERE rn <= N`: Flink's Top-N
//! and deduplication patterns, planned as one [`Node::Rank`]. `RANK()` and
//! `DENSE_RANK()` in its place make a Top-N of ranks, peers (rows equal on
//! the ORDER BY columns) sharing one.
//!
//! The subquery is planned without the OVER item: in its place a
//! placeholder column (the rank operator writes the row number there when
//! the outer query reads it), and after its items hidden columns for the
//! PARTITION BY and ORDER BY columns (dropped again where they repeat a
//! column the subquery selects anyway). The rank's key is the partition
//! columns; a calc after it drops the hidden columns.

use sqlparser::ast::{
    self, BinaryOperator as B, Expr, OrderBySort, SelectItem, SetExpr, TableFactor, WindowType,
};

use super::window_props::{window_props, windowed};
use super::{calc, From, Node, Plan, Planner};
use crate::error::{Result, SqlError};
use crate::expr::Scope;
use crate::rank::{Rank, RankKind, SortKey, Ties};
use crate::script::object_name;
use crate::types::{DataType, Schema};

/// The placeholder column of the row number while planning.
const ROW_NUMBER: &str = "$row_number";
/// Hidden PARTITION BY / ORDER BY columns: `$over0`, `$over1`, ...
const HIDDEN: &str = "$over";

impl Planner<'_> {
    /// When `s` reads a subquery or view numbering its rows with
    /// `ROW_NUMBER() OVER` and bounds the number in its WHERE: the Top-N
    /// (or deduplication) as what FROM gives, and the rest of the WHERE.
    /// `None` when FROM is anything else.
    pub(super) fn ranked_from(&mut self, s: &ast::Select) -> Result<Option<(From, Option<Expr>)>> {
        let [from] = s.from.as_slice() else {
            return Ok(None);
        };
        if !from.joins.is_empty() {
            return Ok(None);
        }
        let (query, qualifier) = match &from.relation {
            TableFactor::Derived {
                subquery,
                alias,
                lateral: false,
                ..
            } => (
                subquery.as_ref().clone(),
                alias.as_ref().map(|a| a.name.value.clone()),
            ),
            TableFactor::Table {
                name,
                alias,
                args: None,
                ..
            } => {
                let n = object_name(name);
                match self.view_query(&n) {
                    Some(q) => (q, Some(alias.as_ref().map_or(n, |a| a.name.value.clone()))),
                    None => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        let Some((at, rn)) = numbering(&query)? else {
            return Ok(None);
        };
        let (range, rest) = rank_bound(s.selection.as_ref(), &rn, &query, at)?;
        let plan = self.ranked(&query, at, &rn, range, outer_reads(s, &rn))?;
        let scope = Scope::of(&plan.schema, qualifier.as_deref());
        Ok(Some((
            From {
                plan,
                scope,
                window: None,
                partition: Vec::new(),
            },
            rest,
        )))
    }

    /// Plans a view when it is created, to report its errors: one that
    /// numbers its rows as its readers will read it (the first row per
    /// partition, the row number selected).
    pub fn view(&mut self, q: &ast::Query) -> Result<()> {
        match numbering(q)? {
            Some((at, rn)) => self.ranked(q, at, &rn, (1, 1), true).map(drop),
            None => self.query(q).map(drop),
        }
    }

    /// `query`, whose item `at` is `ROW_NUMBER() OVER (..) AS rn`, as the
    /// rows numbered `start..=limit` per partition (`range`); the row
    /// number in its column when `reads_rn`, else left out.
    fn ranked(
        &mut self,
        query: &ast::Query,
        at: usize,
        rn: &str,
        range: (usize, usize),
        reads_rn: bool,
    ) -> Result<Plan> {
        let (start, limit) = range;
        let SetExpr::Select(inner) = query.body.as_ref() else {
            unreachable!("numbering() found a SELECT")
        };
        let item = item_expr(&inner.projection[at]);
        let Some(Expr::Function(f)) = item else {
            unreachable!("numbering() found a function")
        };
        let spec = row_number_spec(f)?;
        let ties = ranking(f).flatten();
        if matches!(
            inner.distinct,
            Some(ast::Distinct::Distinct | ast::Distinct::On(_))
        ) {
            return Err(SqlError::Unsupported(
                "SELECT DISTINCT with ROW_NUMBER() OVER in the same SELECT".into(),
            ));
        }

        // The subquery with the placeholder and the hidden columns.
        let mut numbered = inner.as_ref().clone();
        numbered.projection[at] = SelectItem::ExprWithAlias {
            expr: Expr::value(ast::Value::Number("0".into(), false)),
            alias: ast::Ident::new(ROW_NUMBER),
        };
        let columns: Vec<&Expr> = spec
            .partition_by
            .iter()
            .chain(spec.order_by.iter().map(|o| &o.expr))
            .collect();
        for (i, e) in columns.iter().enumerate() {
            numbered.projection.push(SelectItem::ExprWithAlias {
                expr: (*e).clone(),
                alias: ast::Ident::new(format!("{HIDDEN}{i}")),
            });
        }
        let q = ast::Query {
            body: Box::new(SetExpr::Select(Box::new(numbered))),
            ..query.clone()
        };
        let mut planned = self.query(&q)?;
        // Over an updating input (a GROUP BY's result, a join's), a Top-N
        // keeps every row of its key to retract from (Flink's
        // RetractableTopNFunction).
        let retract = planned.updating;
        // Names for EXPLAIN: the row number's, the hidden columns' own.
        let hidden = columns.len();
        let placeholder = planned
            .schema
            .index_of(ROW_NUMBER)
            .expect("the subquery selects the placeholder");
        planned.schema.fields[placeholder].name = rn.to_owned();
        let first_hidden = planned.schema.len() - hidden;
        for (i, e) in columns.iter().enumerate() {
            if let Some(name) = super::ident_name(e) {
                planned.schema.fields[first_hidden + i].name = name;
            }
        }
        let (input, visible, map, placeholder) =
            drop_hidden(planned, hidden, placeholder, reads_rn);
        let col = |i: usize| map[i];
        let partition: Vec<usize> = (0..spec.partition_by.len()).map(col).collect();
        let order: Vec<SortKey> = spec
            .order_by
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let desc = matches!(o.options.sort, Some(OrderBySort::Desc));
                SortKey {
                    col: col(spec.partition_by.len() + i),
                    desc,
                    // Flink's default null collation: NULLs are the smallest.
                    nulls_first: o.options.nulls_first.unwrap_or(!desc),
                }
            })
            .collect();
        let row_number = placeholder;
        let kind = match order.as_slice() {
            // RANK and DENSE_RANK: the range of ranks of all rows sorted
            // (not a window Top-N nor a deduplication, which number rows).
            _ if ties.is_some() => RankKind::TiedTopN {
                ties: ties.expect("a rank with ties"),
                order,
                start,
                limit,
                keep_all: retract,
            },
            // Over an updating input, or from a later row than the first
            // (the rows before it can move into the range), the diff of
            // the range of all rows sorted.
            _ if retract || start > 1 => {
                if start > 1 && window_end(&input, &partition).is_some() {
                    return Err(SqlError::Unsupported(format!(
                        "a window Top-N from row {start} (`{rn}` bounded from below)"
                    )));
                }
                RankKind::RetractTopN {
                    order,
                    start,
                    limit,
                    keep_all: retract,
                }
            }
            // Partitioned by the window's bounds too: Flink's window
            // deduplication, each window's first or last row by event
            // time emitted once when the window ends, as a window Top-1
            // (append-only, its state freed with the window).
            [k] if limit == 1 && input.schema.fields[k.col].rowtime => {
                if let Some(end) = window_end(&input, &partition) {
                    RankKind::WindowTopN { order, limit, end }
                } else if k.desc {
                    RankKind::KeepLast { time: k.col }
                } else {
                    RankKind::KeepFirst { time: k.col }
                }
            }
            [k] if limit == 1 && input.schema.fields[k.col].proctime => {
                RankKind::ProcTimeDeduplicate { keep_last: k.desc }
            }
            _ => match window_end(&input, &partition) {
                Some(end) => RankKind::WindowTopN { order, limit, end },
                None => RankKind::TopN { order, limit },
            },
        };
        let rank = Rank {
            partition,
            row_number,
            kind,
        };
        let mut fields = input.schema.fields.clone();
        if let Some(c) = row_number {
            fields[c].name = rn.to_owned();
            fields[c].ty = DataType::BigInt;
            fields[c].nullable = false;
            fields[c].rowtime = false;
        }
        let updating = rank.updating();
        let ranked = Plan {
            node: Node::Rank {
                input: Box::new(input),
                rank,
            },
            schema: Schema::new(fields.clone()),
            updating,
        };
        let project = (0..visible)
            .map(|i| crate::expr::Scalar::Column(i, fields[i].ty))
            .collect();
        Ok(calc(ranked, None, project, fields[..visible].to_vec()))
    }
}

/// The partition column that is a window's end, when `input` is a window
/// aggregation's (or a windowing TVF's) results partitioned by their
/// window: the Top-N is then Flink's window Top-N.
fn window_end(input: &Plan, partition: &[usize]) -> Option<usize> {
    // The bounds followed through projections, whatever their names.
    if let Some(w) = window_props(input) {
        if partition.contains(&w.start) && partition.contains(&w.end) {
            return Some(w.end);
        }
    }
    if !windowed(input) {
        return None;
    }
    let named = |n: &str| {
        partition.iter().copied().find(|&c| {
            let f = &input.schema.fields[c];
            f.name.eq_ignore_ascii_case(n) && f.ty.is_timestamp()
        })
    };
    named("window_start")?;
    named("window_end")
}

/// Where `query` numbers its rows: the position of its
/// `ROW_NUMBER() OVER (..) AS rn` item and `rn`; `None` if it has no
/// OVER item (or is no plain SELECT); an error for an OVER weir does not
/// run (several, an unnamed one, another function).
fn numbering(query: &ast::Query) -> Result<Option<(usize, String)>> {
    let SetExpr::Select(inner) = query.body.as_ref() else {
        return Ok(None);
    };
    let over: Vec<usize> = inner
        .projection
        .iter()
        .enumerate()
        .filter(|(_, item)| matches!(item_expr(item), Some(Expr::Function(f)) if f.over.is_some()))
        .map(|(i, _)| i)
        .collect();
    let numbers = over.iter().any(|&i| {
        matches!(item_expr(&inner.projection[i]), Some(Expr::Function(f))
            if ranking(f).is_some())
    });
    if !numbers {
        // OVER aggregates (`SUM(x) OVER (..)`, RANK, LAG) and no row
        // number: the subquery is an OVER aggregation of its own, planned
        // where it stands, and the query reading it filters its rows.
        return Ok(None);
    }
    let at = match over.as_slice() {
        [] => return Ok(None),
        [at] => *at,
        _ => {
            return Err(SqlError::Unsupported(
                "several OVER functions in one SELECT (one ROW_NUMBER() OVER for Top-N)".into(),
            ))
        }
    };
    match &inner.projection[at] {
        SelectItem::ExprWithAlias {
            expr: Expr::Function(f),
            alias,
        } => {
            row_number_spec(f)?;
            Ok(Some((at, alias.value.clone())))
        }
        SelectItem::UnnamedExpr(Expr::Function(f)) => {
            row_number_spec(f)?;
            Err(SqlError::Plan(format!(
                "`{f}` needs a name (`AS rn`) for the query reading it to bound with WHERE rn <= N"
            )))
        }
        _ => Ok(None),
    }
}

/// The expression of a SELECT item, if it is one.
fn item_expr(item: &SelectItem) -> Option<&Expr> {
    match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
        _ => None,
    }
}

/// What `f` numbers rows by, if it is a ranking function: `Some(None)`
/// for ROW_NUMBER (each row its own number), `Some(Some(ties))` for RANK
/// and DENSE_RANK (peers share a rank).
fn ranking(f: &ast::Function) -> Option<Option<Ties>> {
    match object_name(&f.name).to_ascii_uppercase().as_str() {
        "ROW_NUMBER" => Some(None),
        "RANK" => Some(Some(Ties::Rank)),
        "DENSE_RANK" => Some(Some(Ties::Dense)),
        _ => None,
    }
}

/// `f`'s OVER window, if `f` is `ROW_NUMBER() OVER (PARTITION BY columns
/// ORDER BY columns)` (or RANK(), DENSE_RANK()); an error naming what
/// else it is.
fn row_number_spec(f: &ast::Function) -> Result<&ast::WindowSpec> {
    let name = object_name(&f.name).to_ascii_uppercase();
    if ranking(f).is_none() {
        return Err(SqlError::Unsupported(format!(
            "{name}(..) OVER: a Top-N or deduplication numbers its rows with ROW_NUMBER(), RANK() or DENSE_RANK() bounded by WHERE rn <= N"
        )));
    }
    let no_args = match &f.args {
        ast::FunctionArguments::None => true,
        ast::FunctionArguments::List(l) => l.args.is_empty() && l.clauses.is_empty(),
        ast::FunctionArguments::Subquery(_) => false,
    };
    if !no_args || f.filter.is_some() || !f.within_group.is_empty() {
        return Err(SqlError::Plan(format!("{name}() takes no arguments")));
    }
    let spec = match &f.over {
        Some(WindowType::WindowSpec(spec)) => spec,
        _ => {
            return Err(SqlError::Unsupported(format!(
                "{name}() OVER a named window (write OVER (PARTITION BY .. ORDER BY ..))"
            )))
        }
    };
    if spec.window_name.is_some() || spec.window_frame.is_some() {
        return Err(SqlError::Unsupported(format!(
            "{name}() OVER ({spec}): a window name or frame (ROWS/RANGE) in it"
        )));
    }
    if spec.order_by.is_empty() {
        return Err(SqlError::Plan(format!(
            "{name}() OVER (..) needs an ORDER BY (which rows come first)"
        )));
    }
    for o in &spec.order_by {
        if let Some(OrderBySort::Using(_)) = o.options.sort {
            return Err(SqlError::Unsupported(format!(
                "ORDER BY `{o}` in {name}() OVER (ASC or DESC)"
            )));
        }
        if o.with_fill.is_some() {
            return Err(SqlError::Unsupported(format!("ORDER BY `{o}` WITH FILL")));
        }
    }
    Ok(spec)
}

/// Whether `e` names the column `rn` (`rn` or `t.rn`).
fn is_rn(e: &Expr, rn: &str) -> bool {
    match e {
        Expr::Identifier(i) => i.value.eq_ignore_ascii_case(rn),
        Expr::CompoundIdentifier(p) => p.last().is_some_and(|i| i.value.eq_ignore_ascii_case(rn)),
        Expr::Nested(x) => is_rn(x, rn),
        _ => false,
    }
}

/// Whether `rn` occurs anywhere in `e`.
fn mentions(e: &Expr, rn: &str) -> bool {
    use sqlparser::ast::Visit;
    struct V<'a>(&'a str);
    impl ast::Visitor for V<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
            if matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) && is_rn(e, self.0) {
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    e.visit(&mut V(rn)).is_break()
}

/// Whether the outer query reads `rn` (selects it, by name or `*`, or
/// groups or filters groups by it).
fn outer_reads(s: &ast::Select, rn: &str) -> bool {
    let items = s.projection.iter().any(|item| match item {
        SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => true,
        SelectItem::UnnamedExpr(e)
        | SelectItem::ExprWithAlias { expr: e, .. }
        | SelectItem::ExprWithAliases { expr: e, .. } => mentions(e, rn),
    });
    let grouped = match &s.group_by {
        ast::GroupByExpr::Expressions(es, _) => es.iter().any(|e| mentions(e, rn)),
        ast::GroupByExpr::All(_) => false,
    };
    items || grouped || s.having.as_ref().is_some_and(|h| mentions(h, rn))
}

/// The AND-ed parts of a condition.
pub(super) fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: B::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Nested(x) if matches!(x.as_ref(), Expr::BinaryOp { op: B::And, .. }) => {
            conjuncts(x, out)
        }
        other => out.push(other.clone()),
    }
}

/// The AND of `parts` (`None` for none), each part that binds more loosely
/// than AND (an OR, an XOR) in parentheses: the rewrites print conditions
/// as text and parse them again (a subquery made a derived table), and
/// sqlparser prints a tree as written, without the parentheses its shape
/// implies, so `(a OR b) AND c` built from a bare `a OR b` would be read
/// back as `a OR (b AND c)`.
pub(super) fn conjunction(parts: impl IntoIterator<Item = Expr>) -> Option<Expr> {
    parts
        .into_iter()
        .map(|p| match p {
            Expr::BinaryOp {
                op: B::Or | B::Xor, ..
            } => Expr::Nested(Box::new(p)),
            p => p,
        })
        .reduce(|a, b| Expr::BinaryOp {
            left: Box::new(a),
            op: B::And,
            right: Box::new(b),
        })
}

/// The range `start..=N` of the outer WHERE's bounds on the row number
/// (`rn <= N`, `rn < N + 1`, `rn = n`, `rn > m`, `rn >= m`, `rn BETWEEN m
/// AND N`, or the same with the operands swapped; several combine), and
/// the WHERE without them.
fn rank_bound(
    selection: Option<&Expr>,
    rn: &str,
    query: &ast::Query,
    at: usize,
) -> Result<((usize, usize), Option<Expr>)> {
    let function = match query.body.as_ref() {
        SetExpr::Select(inner) => match item_expr(&inner.projection[at]) {
            Some(Expr::Function(f)) => object_name(&f.name).to_ascii_uppercase(),
            _ => "ROW_NUMBER".into(),
        },
        _ => "ROW_NUMBER".into(),
    };
    let missing = || {
        SqlError::Unsupported(format!(
            "{function}() OVER without `WHERE {rn} <= N` in the query reading it: weir runs Top-N and deduplication (a row number or rank bounded by N), not OVER windows over all rows"
        ))
    };
    let mut parts = Vec::new();
    if let Some(w) = selection {
        conjuncts(w, &mut parts);
    }
    let (mut start, mut limit) = (1i64, None::<i64>);
    let mut rest: Vec<Expr> = Vec::new();
    for p in parts {
        if !mentions(&p, rn) {
            rest.push(p);
            continue;
        }
        let (lo, hi) = bound(&p, rn)?;
        start = start.max(lo.unwrap_or(1));
        if let Some(hi) = hi {
            limit = Some(limit.map_or(hi, |l| l.min(hi)));
        }
    }
    let limit = limit.ok_or_else(missing)?;
    if limit < start {
        return Err(SqlError::Plan(format!(
            "the bounds on `{rn}` (from {start} to {limit}) leave a range that keeps no row"
        )));
    }
    let as_usize = |n: i64| {
        usize::try_from(n).map_err(|_| SqlError::Unsupported(format!("a bound of {n} on `{rn}`")))
    };
    let (start, limit) = (as_usize(start)?, as_usize(limit)?);
    Ok(((start, limit), conjunction(rest)))
}

/// The lowest and highest row number one condition keeps (`None`:
/// unbounded that way).
fn bound(e: &Expr, rn: &str) -> Result<(Option<i64>, Option<i64>)> {
    let unsupported = || {
        SqlError::Unsupported(format!(
            "`{e}`: weir bounds the row number with `{rn} <= N`, `{rn} < N`, `{rn} = n`, `{rn} > m`, `{rn} >= m` or `{rn} BETWEEN m AND N` (integer literals)"
        ))
    };
    if let Expr::Between {
        expr,
        negated: false,
        low,
        high,
    } = e
    {
        if !is_rn(expr, rn) {
            return Err(unsupported());
        }
        let lo = integer(low).ok_or_else(unsupported)?;
        let hi = integer(high).ok_or_else(unsupported)?;
        return Ok((Some(lo), Some(hi)));
    }
    let Expr::BinaryOp { left, op, right } = e else {
        return Err(unsupported());
    };
    let (op, n) = match (is_rn(left, rn), is_rn(right, rn)) {
        (true, false) => (op.clone(), integer(right).ok_or_else(unsupported)?),
        (false, true) => (
            match op {
                B::Lt => B::Gt,
                B::LtEq => B::GtEq,
                B::Gt => B::Lt,
                B::GtEq => B::LtEq,
                other => other.clone(),
            },
            integer(left).ok_or_else(unsupported)?,
        ),
        _ => return Err(unsupported()),
    };
    Ok(match op {
        B::LtEq => (None, Some(n)),
        B::Lt => (None, Some(n - 1)),
        B::Eq => (Some(n), Some(n)),
        B::Gt => (Some(n + 1), None),
        B::GtEq => (Some(n), None),
        _ => return Err(unsupported()),
    })
}

/// An integer literal.
fn integer(e: &Expr) -> Option<i64> {
    match e {
        Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        Expr::Nested(x) => integer(x),
        _ => None,
    }
}

/// Drops the hidden columns that repeat a selected one (and the row
/// number's placeholder, column `placeholder`, when nobody reads it) from
/// `planned`, the subquery's plan: returns the new plan, how many leading
/// columns the subquery selects (the rest are hidden), each hidden
/// column's new position and the placeholder's, if kept.
fn drop_hidden(
    planned: Plan,
    hidden: usize,
    placeholder: usize,
    reads_rn: bool,
) -> (Plan, usize, Vec<usize>, Option<usize>) {
    let n = planned.schema.len();
    let first_hidden = n - hidden;
    // Old positions: each hidden column's, a repeated selected one's.
    let mut map: Vec<usize> = (first_hidden..n).collect();
    if let Node::Calc { project, .. } = &planned.node {
        for m in map.iter_mut() {
            if let Some(c) = project[*m].as_column() {
                if let Some(j) = (0..first_hidden)
                    .find(|&j| j != placeholder && project[j].as_column() == Some(c))
                {
                    *m = j;
                }
            }
        }
    }
    let mut keep: Vec<usize> = (0..first_hidden)
        .filter(|&j| reads_rn || j != placeholder)
        .collect();
    let visible = keep.len();
    for &m in &map {
        if !keep.contains(&m) {
            keep.push(m);
        }
    }
    let new_pos = |old: usize| keep.iter().position(|&k| k == old).expect("kept");
    let map: Vec<usize> = map.iter().map(|&m| new_pos(m)).collect();
    let placeholder = reads_rn.then(|| new_pos(placeholder));
    if keep.len() == n {
        return (planned, visible, map, placeholder);
    }
    let fields: Vec<_> = keep
        .iter()
        .map(|&k| planned.schema.fields[k].clone())
        .collect();
    let plan = match planned.node {
        Node::Calc {
            input,
            filter,
            project,
        } => calc(
            *input,
            filter,
            keep.iter().map(|&k| project[k].clone()).collect(),
            fields,
        ),
        node => {
            let types = planned.schema.types();
            let input = Plan {
                node,
                schema: planned.schema,
                updating: planned.updating,
            };
            calc(
                input,
                None,
                keep.iter()
                    .map(|&k| crate::expr::Scalar::Column(k, types[k]))
                    .collect(),
                fields,
            )
        }
    };
    (plan, visible, map, placeholder)
}
