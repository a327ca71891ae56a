//! Subqueries in `WHERE`: `x IN (SELECT ..)`, `EXISTS (SELECT ..)` and
//! `NOT EXISTS (SELECT ..)`, planned as Flink plans them, as semi and anti
//! joins, by rewriting the SELECT before it is planned:
//!
//! - `WHERE x IN (SELECT c FROM ..)` joins the distinct values of `c`
//!   (`INNER JOIN (SELECT DISTINCT c AS k FROM ..) ON x = k`): each outer
//!   row at most once, none for a NULL `x` (IN is then unknown).
//! - `WHERE EXISTS (SELECT .. FROM r WHERE r.a = o.b AND ..)`: the
//!   equalities between the subquery's columns and the outer query's are
//!   the join keys, the subquery's other conditions filter it, and the
//!   outer rows join the distinct keys that exist. Correlated by other
//!   conditions too (`r.v > o.v`), the distinct values of the outer
//!   columns it reads are joined with its FROM under all its conditions,
//!   and the outer rows join the values that found a row.
//! - `NOT EXISTS`: a LEFT JOIN of the distinct keys, keeping the rows that
//!   found none: an updating result (a row is retracted when a match
//!   arrives later), as Flink's anti join.
//! - An uncorrelated `[NOT] EXISTS (SELECT ..)`: a scalar subquery (below)
//!   counting the subquery's rows, compared with 0.
//!
//! - Either correlated through equalities (`WHERE s.k = t.k`): the
//!   subquery's side of them is joined too, as EXISTS's keys.
//! - `WHERE x NOT IN (SELECT c ..)`: the anti join of `c`'s distinct
//!   values, and SQL's NULL rules as a condition on two scalar subqueries
//!   (below): TRUE when the subquery has no rows, else unknown for a NULL
//!   `x` or when a `c` is NULL.
//!
//! Only top-level conjuncts of WHERE; over several FROM items (`FROM a, b
//! WHERE ..`) a semi join is one more item (an anti join needs one FROM
//! item, with its JOINs); the joined columns are named `__weir_*` and a `*` leaves them
//! out. Correlations other than equalities are refused, naming them.
//!
//! An uncorrelated `x [NOT] IN (SELECT ..)` that is no top-level conjunct
//! (in an OR, a SELECT item) is a CASE over a LEFT JOIN of the subquery's
//! distinct values on `x` and two scalar subqueries counting its rows and
//! NULLs (SQL's IN: NULL for a NULL `x` or a set with a NULL).
//!
//! Uncorrelated scalar subqueries (`WHERE x > (SELECT AVG(x) FROM t)`, in
//! SELECT items and HAVING too) that give at most one row (an aggregate
//! without GROUP BY, or `LIMIT 1`) are LEFT JOINs without keys, as
//! Flink's planner lowers them: every row meets the subquery's one row
//! (or NULLs), and the subquery is replaced by the joined value; a
//! grouped SELECT groups by the value too. One correlated through
//! equalities (`WHERE t2.k = t.k`) is the subquery grouped by its side of
//! them, LEFT JOINed on them (a COUNT's missing key is 0); other
//! correlations are refused.

use sqlparser::ast::{self, BinaryOperator as B, Expr, Query, Select, SetExpr, TableFactor};
use sqlparser::parser::Parser;

use super::over::{conjunction, conjuncts};
use super::Planner;
use crate::dialect::FlinkDialect;
use crate::error::{Result, SqlError};
use crate::script::object_name;

/// The prefix of the columns a rewrite adds (left out of `*`).
pub const HIDDEN: &str = "__weir_";

fn parse_query(text: &str) -> Result<Query> {
    Parser::new(&FlinkDialect::default())
        .try_with_sql(text)
        .and_then(|mut p| p.parse_query())
        .map(|q| *q)
        .map_err(|e| SqlError::Plan(format!("a subquery in WHERE as a join: {e}")))
}

/// The subquery of `x [NOT] IN (SELECT ..)`, with `x` and `negated`.
fn in_subquery(e: &Expr) -> Option<(&Expr, &Query, bool)> {
    match e {
        Expr::In {
            expr,
            target: ast::InTarget::Subquery(q),
            negated,
            ..
        } => Some((expr, q, *negated)),
        _ => None,
    }
}

/// `(a, b) IN (SELECT x, y ..)`, a conjunct of WHERE, as the EXISTS it
/// means there (a row is kept when some row of the subquery equals it
/// column by column): `EXISTS (SELECT 1 FROM (sub) AS q (c0, c1) WHERE
/// q.c0 = a AND q.c1 = b)`, a semi join on those equalities. `NOT IN` of
/// a row is refused (its NULL rules per column are not built).
fn tuple_in_as_exists(n: usize, xs: &[Expr], sub: &Query, negated: bool) -> Result<Expr> {
    if negated {
        return Err(SqlError::Unsupported(
            "NOT IN of a row, `(a, b) NOT IN (SELECT ..)`: write NOT EXISTS with the equalities"
                .into(),
        ));
    }
    let q = format!("{HIDDEN}tin{n}");
    let cols: Vec<String> = (0..xs.len()).map(|i| format!("{HIDDEN}t{i}")).collect();
    let on: Vec<String> = xs
        .iter()
        .zip(&cols)
        .map(|(x, c)| format!("{q}.{c} = {x}"))
        .collect();
    let exists = parse_query(&format!(
        "SELECT 1 WHERE EXISTS (SELECT 1 FROM ({sub}) AS {q} ({}) WHERE {})",
        cols.join(", "),
        on.join(" AND ")
    ))?;
    Ok(where_of(exists))
}

/// The qualifiers (table names and aliases) a FROM brings into scope.
fn qualifiers(from: &[ast::TableWithJoins]) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |f: &TableFactor| match f {
        // An alias hides the table's name (`FROM t AS t2`: `t.k` is the
        // outer query's).
        TableFactor::Table { name, alias, .. } => match alias {
            Some(a) => out.push(a.name.value.to_ascii_lowercase()),
            None => out.push(object_name(name).to_ascii_lowercase()),
        },
        TableFactor::Derived { alias: Some(a), .. }
        | TableFactor::Function { alias: Some(a), .. } => {
            out.push(a.name.value.to_ascii_lowercase())
        }
        _ => {}
    };
    for t in from {
        add(&t.relation);
        for j in &t.joins {
            add(&j.relation);
        }
    }
    out
}

/// A subquery's own scope, to tell its columns from the outer query's:
/// the qualifiers its FROM brings in and, when its FROM plans on its own,
/// the names of its columns.
struct Inner {
    qualifiers: Vec<String>,
    columns: Option<Vec<String>>,
}

/// Whether `e` names a column of another scope than `inner`: a qualified
/// name whose qualifier is not one of `inner`'s, or a bare name that is
/// none of its columns (`WHERE l_orderkey = o_orderkey`).
fn is_outer(e: &Expr, inner: &Inner) -> bool {
    match e {
        Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
            let q = parts[parts.len() - 2].value.to_ascii_lowercase();
            !inner.qualifiers.contains(&q)
        }
        Expr::Identifier(i) => inner
            .columns
            .as_ref()
            .is_some_and(|c| !c.contains(&i.value.to_ascii_lowercase())),
        _ => false,
    }
}

/// Whether any column `e` reads is of another scope than `inner` (not
/// looking into subqueries of `e`, whose columns are their own).
fn mentions_outer(e: &Expr, inner: &Inner) -> bool {
    use ast::Visit;
    struct V<'a> {
        inner: &'a Inner,
        depth: usize,
    }
    impl ast::Visitor for V<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> std::ops::ControlFlow<()> {
            self.depth += 1;
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> std::ops::ControlFlow<()> {
            self.depth -= 1;
            std::ops::ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
            if self.depth == 0 && is_outer(e, self.inner) {
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    e.visit(&mut V { inner, depth: 0 }).is_break()
}

/// One subquery predicate made a join: the derived table, the ON
/// condition, and for NOT EXISTS the condition that keeps unmatched rows.
struct SemiJoin {
    relation: TableFactor,
    on: Expr,
    anti: Option<Expr>,
}

impl Planner<'_> {
    /// The scope of a subquery's FROM (see [`Inner`]).
    fn inner_scope(&mut self, from: &[ast::TableWithJoins]) -> Inner {
        let mut columns = Some(Vec::new());
        for t in from {
            match self.table_with_joins(t) {
                Ok(f) => {
                    if let Some(c) = &mut columns {
                        c.extend(
                            f.scope
                                .cols
                                .iter()
                                .map(|col| col.field.name.to_ascii_lowercase()),
                        );
                    }
                }
                Err(_) => columns = None,
            }
        }
        Inner {
            qualifiers: qualifiers(from),
            columns,
        }
    }

    /// `s` with its subquery predicates made joins; `None` if it has none.
    pub(super) fn rewrite_subqueries(&mut self, s: &Select) -> Result<Option<Select>> {
        let Some(w) = &s.selection else {
            return Ok(None);
        };
        let mut parts = Vec::new();
        conjuncts(w, &mut parts);
        let is_sub = |e: &Expr| in_subquery(e).is_some() || matches!(e, Expr::Exists { .. });
        let has = |e: &Expr| is_sub(e) || matches!(e, Expr::Nested(x) if is_sub(x));
        if !parts.iter().any(has) {
            return Ok(None);
        }
        let mut kept = Vec::new();
        let mut joins = Vec::new();
        for p in parts {
            let p = match p {
                Expr::Nested(x) => *x,
                other => other,
            };
            let n = joins.len();
            let p = match in_subquery(&p) {
                Some((Expr::Tuple(xs), sub, negated)) => tuple_in_as_exists(n, xs, sub, negated)?,
                _ => p,
            };
            if let Some((x, sub, negated)) = in_subquery(&p) {
                let (x, sub) = (x.clone(), sub.clone());
                let (mut j, [all, nulls]) = self.in_join(n, &x, &sub)?;
                if negated {
                    // NOT IN: the rows whose `x` no value equals (an anti
                    // join), and SQL's NULL rules as a condition on two
                    // scalar subqueries: TRUE when the subquery has no
                    // rows; else unknown (dropped) for a NULL `x` or when
                    // the subquery has a NULL.
                    j.anti = Some(where_of(parse_query(&format!(
                        "SELECT 1 WHERE {HIDDEN}q{n}.{HIDDEN}k{n}_0 IS NULL"
                    ))?));
                    kept.push(where_of(parse_query(&format!(
                        "SELECT 1 WHERE (COALESCE({all}, 0) = 0
                           OR ({x}) IS NOT NULL AND COALESCE({nulls}, 0) = 0)"
                    ))?));
                }
                joins.push(j);
                continue;
            }
            match p {
                Expr::Exists { subquery, negated } => {
                    match self.exists_join(n, &subquery, negated, &s.from)? {
                        Some(j) => joins.push(j),
                        // Uncorrelated: whether the subquery has a row, a
                        // scalar subquery counting them.
                        None => kept.push(where_of(parse_query(&format!(
                            "SELECT 1 WHERE COALESCE((SELECT COUNT(*) FROM ({subquery}) AS {HIDDEN}ex{n}), 0) {} 0",
                            if negated { "=" } else { ">" }
                        ))?)),
                    }
                }
                other => kept.push(other),
            }
        }
        let mut out = s.clone();
        for j in joins {
            if out.from.len() > 1 {
                // `FROM a, b, c WHERE ..`: a semi join is one more item,
                // joined on its condition as the others are.
                if j.anti.is_some() {
                    return Err(SqlError::Unsupported(
                        "NOT EXISTS or NOT IN (SELECT ..) with several tables in FROM (write them as JOIN .. ON)".into(),
                    ));
                }
                out.from.push(ast::TableWithJoins {
                    relation: j.relation,
                    joins: Vec::new(),
                });
                kept.push(j.on);
                continue;
            }
            let op = if j.anti.is_some() {
                ast::JoinOperator::LeftOuter(ast::JoinConstraint::On(j.on))
            } else {
                ast::JoinOperator::Inner(ast::JoinConstraint::On(j.on))
            };
            out.from[0].joins.push(ast::Join {
                relation: j.relation,
                global: false,
                join_operator: op,
            });
            kept.extend(j.anti);
        }
        out.selection = conjunction(kept);
        Ok(Some(out))
    }

    fn derived(&mut self, n: usize, text: &str) -> Result<TableFactor> {
        let q = parse_query(&format!("SELECT * FROM ({text}) AS {HIDDEN}q{n}"))?;
        match *q.body {
            SetExpr::Select(s) => Ok(s.from[0].relation.clone()),
            _ => unreachable!("parsed a SELECT"),
        }
    }

    /// `x IN (sub)` as a semi join of the distinct values of `sub`'s
    /// column (and of its side of the equalities that correlate it with
    /// the outer query, `WHERE s.k = t.k`, joined too); with the texts of
    /// two scalar subqueries, valid in the outer query, counting `sub`'s
    /// rows and its rows whose value is NULL (NOT IN's NULL rules).
    fn in_join(&mut self, n: usize, x: &Expr, sub: &Query) -> Result<(SemiJoin, [String; 2])> {
        let mut inner = sub.clone();
        let plain = sub.with.is_none() && sub.order_by.is_none() && sub.limit_clause.is_none();
        let mut keys = Vec::new();
        let mut item = None;
        if let SetExpr::Select(sel) = inner.body.as_mut() {
            if plain && sel.group_by_is_empty() && sel.having.is_none() {
                if let [ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. }] = sel.projection.as_slice()
                {
                    item = Some(e.clone());
                }
                let scope = self.inner_scope(&sel.from);
                keys = correlation(sel, sub, &scope)?;
                for (j, (k, _)) in keys.iter().enumerate() {
                    sel.projection.push(ast::SelectItem::ExprWithAlias {
                        expr: k.clone(),
                        alias: ast::Ident::new(format!("{HIDDEN}ck{j}")),
                    });
                }
            }
        }
        let plan = self.query(&inner)?;
        if plan.schema.len() != 1 + keys.len() {
            return Err(SqlError::Plan(format!(
                "IN (SELECT ..) needs one column, the subquery gives {}",
                plan.schema
            )));
        }
        let col = plan.schema.fields[0].name.replace('`', "``");
        let mut items = vec![format!("`{col}` AS {HIDDEN}k{n}_0")];
        let mut on = format!("({x}) = {HIDDEN}q{n}.{HIDDEN}k{n}_0");
        for (j, (_, outer)) in keys.iter().enumerate() {
            items.push(format!("{HIDDEN}ck{j} AS {HIDDEN}k{n}_{}", j + 1));
            on.push_str(&format!(
                " AND ({outer}) = {HIDDEN}q{n}.{HIDDEN}k{n}_{}",
                j + 1
            ));
        }
        let relation = self.derived(
            n,
            &format!(
                "SELECT DISTINCT {} FROM ({inner}) AS {HIDDEN}s{n}",
                items.join(", ")
            ),
        )?;
        // The counts: over `sub`'s own FROM and WHERE (its correlation
        // included) when it is a plain SELECT of one value, else over it
        // as a derived table (uncorrelated only).
        let counts = match (sub.body.as_ref(), item) {
            (SetExpr::Select(sel), Some(item)) => {
                let from: Vec<String> = sel.from.iter().map(ToString::to_string).collect();
                let from = from.join(", ");
                let and = sel
                    .selection
                    .as_ref()
                    .map_or(String::new(), |w| format!("({w}) AND "));
                let all = sel
                    .selection
                    .as_ref()
                    .map_or(String::new(), |w| format!(" WHERE {w}"));
                [
                    format!("(SELECT COUNT(*) FROM {from}{all})"),
                    format!("(SELECT COUNT(*) FROM {from} WHERE {and}({item}) IS NULL)"),
                ]
            }
            _ => {
                let rows = format!("FROM ({sub}) AS {HIDDEN}ns{n}");
                [
                    format!("(SELECT COUNT(*) {rows})"),
                    format!("(SELECT COUNT(*) {rows} WHERE `{col}` IS NULL)"),
                ]
            }
        };
        Ok((
            SemiJoin {
                relation,
                on: where_of(parse_query(&format!("SELECT 1 WHERE {on}"))?),
                anti: None,
            },
            counts,
        ))
    }

    fn exists_join(
        &mut self,
        n: usize,
        sub: &Query,
        negated: bool,
        outer_from: &[ast::TableWithJoins],
    ) -> Result<Option<SemiJoin>> {
        let SetExpr::Select(inner) = sub.body.as_ref() else {
            return Err(SqlError::Unsupported(format!(
                "EXISTS ({sub}): a SELECT is needed"
            )));
        };
        if sub.with.is_some() || sub.order_by.is_some() || sub.limit_clause.is_some() {
            return Err(SqlError::Unsupported(format!(
                "EXISTS ({sub}) with WITH, ORDER BY or LIMIT"
            )));
        }
        let inner_q = self.inner_scope(&inner.from);
        let mut keys: Vec<(Expr, Expr)> = Vec::new();
        let mut rest = Vec::new();
        // Correlated conditions other than equalities (`s.v > o.v`).
        let mut other_correlated = Vec::new();
        if let Some(w) = &inner.selection {
            let mut parts = Vec::new();
            conjuncts(w, &mut parts);
            for p in parts {
                match &p {
                    Expr::BinaryOp {
                        left,
                        op: B::Eq,
                        right,
                    } if mentions_outer(left, &inner_q) != mentions_outer(right, &inner_q) => {
                        let (i, o) = if mentions_outer(left, &inner_q) {
                            (right.as_ref().clone(), left.as_ref().clone())
                        } else {
                            (left.as_ref().clone(), right.as_ref().clone())
                        };
                        keys.push((i, o));
                    }
                    other if mentions_outer(other, &inner_q) => {
                        other_correlated.push(other.clone())
                    }
                    other => rest.push(other.clone()),
                }
            }
        }
        if !other_correlated.is_empty() {
            if !inner.group_by_is_empty() || inner.having.is_some() {
                return Err(SqlError::Unsupported(format!(
                    "EXISTS ({sub}) with GROUP BY or HAVING"
                )));
            }
            let [outer] = outer_from else {
                return Err(SqlError::Unsupported(format!(
                    "the correlated condition `{}` in EXISTS over several tables in FROM (write them as JOIN .. ON)",
                    other_correlated[0]
                )));
            };
            return self.exists_join_by_outer_values(
                n,
                inner,
                &inner_q,
                outer,
                negated,
                (keys, other_correlated, rest),
            );
        }
        if keys.is_empty() {
            return Ok(None);
        }
        if !inner.group_by_is_empty() || inner.having.is_some() {
            return Err(SqlError::Unsupported(format!(
                "EXISTS ({sub}) with GROUP BY or HAVING"
            )));
        }
        let items: Vec<String> = keys
            .iter()
            .enumerate()
            .map(|(k, (i, _))| format!("{i} AS {HIDDEN}k{n}_{k}"))
            .collect();
        let from: Vec<String> = inner.from.iter().map(ToString::to_string).collect();
        let filter = if rest.is_empty() {
            String::new()
        } else {
            format!(
                " WHERE {}",
                rest.iter()
                    .map(|r| format!("({r})"))
                    .collect::<Vec<_>>()
                    .join(" AND ")
            )
        };
        let relation = self.derived(
            n,
            &format!(
                "SELECT DISTINCT {} FROM {}{filter}",
                items.join(", "),
                from.join(", ")
            ),
        )?;
        let on_text: Vec<String> = keys
            .iter()
            .enumerate()
            .map(|(k, (_, o))| format!("({o}) = {HIDDEN}q{n}.{HIDDEN}k{n}_{k}"))
            .collect();
        let on = where_of(parse_query(&format!(
            "SELECT 1 WHERE {}",
            on_text.join(" AND ")
        ))?);
        let anti = negated.then(|| {
            where_of(
                parse_query(&format!(
                    "SELECT 1 WHERE {HIDDEN}q{n}.{HIDDEN}k{n}_0 IS NULL"
                ))
                .expect("a fixed condition parses"),
            )
        });
        Ok(Some(SemiJoin { relation, on, anti }))
    }
}

impl Planner<'_> {
    /// EXISTS correlated by conditions other than equalities (`WHERE s.k =
    /// o.k AND s.v > o.v`), as the semi (anti) join Flink plans: which
    /// values of the outer columns the subquery reads have a row meeting
    /// them is a join of the distinct such values of the outer FROM item
    /// with the subquery's FROM; the outer rows are joined with the
    /// distinct values found, on all those columns (a NULL one matches
    /// none, as it meets no comparison).
    fn exists_join_by_outer_values(
        &mut self,
        n: usize,
        inner: &ast::Select,
        inner_q: &Inner,
        outer: &ast::TableWithJoins,
        negated: bool,
        (keys, correlated, rest): (Vec<(Expr, Expr)>, Vec<Expr>, Vec<Expr>),
    ) -> Result<Option<SemiJoin>> {
        let mut conds: Vec<Expr> = keys
            .into_iter()
            .map(|(i, o)| Expr::BinaryOp {
                left: Box::new(i),
                op: B::Eq,
                right: Box::new(o),
            })
            .collect();
        conds.extend(correlated);
        let null_rejected = conds.clone();
        // The outer columns read, each once, in order.
        let mut outer_cols: Vec<Expr> = Vec::new();
        for c in &conds {
            let _ = ast::visit_expressions(c, |x| {
                if matches!(x, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
                    && is_outer(x, inner_q)
                    && !outer_cols.contains(x)
                {
                    outer_cols.push(x.clone());
                }
                std::ops::ControlFlow::<()>::Continue(())
            });
        }
        let d = format!("{HIDDEN}d{n}");
        let col = |j: usize| format!("{HIDDEN}c{n}_{j}");
        let values = format!(
            "SELECT DISTINCT {} FROM {outer}",
            outer_cols
                .iter()
                .enumerate()
                .map(|(j, o)| format!("{o} AS {}", col(j)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        // The conditions over those values instead of the outer columns.
        let mut rewritten = Vec::new();
        for c in conds {
            let mut c = c;
            let _ = ast::visit_expressions_mut(&mut c, |x| {
                if let Some(j) = outer_cols.iter().position(|o| o == x) {
                    *x = Expr::CompoundIdentifier(vec![
                        ast::Ident::new(d.clone()),
                        ast::Ident::new(col(j)),
                    ]);
                }
                std::ops::ControlFlow::<()>::Continue(())
            });
            rewritten.push(format!("({c})"));
        }
        rewritten.extend(rest.iter().map(|r| format!("({r})")));
        let from: Vec<String> = inner.from.iter().map(ToString::to_string).collect();
        let relation = self.derived(
            n,
            &format!(
                "SELECT DISTINCT {}, TRUE AS {HIDDEN}m{n} FROM ({values}) AS {d}, {} WHERE {}",
                (0..outer_cols.len())
                    .map(|j| format!("{d}.{} AS {HIDDEN}k{n}_{j}", col(j)))
                    .collect::<Vec<_>>()
                    .join(", "),
                from.join(", "),
                rewritten.join(" AND ")
            ),
        )?;
        // A column some condition compares directly (or through
        // arithmetic) is never NULL in a value found: an equality joins
        // it (a key). Another one (`b.v > t.v OR b.s <> t.s`) may be
        // found NULL: IS NOT DISTINCT FROM joins it.
        let on_text: Vec<String> = outer_cols
            .iter()
            .enumerate()
            .map(|(j, o)| {
                let op = if null_rejected.iter().any(|c| rejects_null(c, o)) {
                    "="
                } else {
                    "IS NOT DISTINCT FROM"
                };
                format!("({o}) {op} {HIDDEN}q{n}.{HIDDEN}k{n}_{j}")
            })
            .collect();
        let on = where_of(parse_query(&format!(
            "SELECT 1 WHERE {}",
            on_text.join(" AND ")
        ))?);
        // No match: the join's marker column (TRUE in every value found).
        let anti = negated.then(|| {
            where_of(
                parse_query(&format!("SELECT 1 WHERE {HIDDEN}q{n}.{HIDDEN}m{n} IS NULL"))
                    .expect("a fixed condition parses"),
            )
        });
        Ok(Some(SemiJoin { relation, on, anti }))
    }
}

/// Whether the condition `c` is NULL (so not TRUE) when `col` is NULL:
/// a comparison or BETWEEN with `col` in an operand through arithmetic
/// alone.
fn rejects_null(c: &Expr, col: &Expr) -> bool {
    fn strict(e: &Expr, col: &Expr) -> bool {
        match e {
            _ if e == col => true,
            Expr::Nested(x) => strict(x, col),
            Expr::UnaryOp { expr, .. } => strict(expr, col),
            Expr::BinaryOp {
                left,
                op: B::Plus | B::Minus | B::Multiply | B::Divide | B::Modulo,
                right,
            } => strict(left, col) || strict(right, col),
            _ => false,
        }
    }
    match c {
        Expr::Nested(x) => rejects_null(x, col),
        Expr::BinaryOp {
            left,
            op: B::Eq | B::NotEq | B::Lt | B::LtEq | B::Gt | B::GtEq,
            right,
        } => strict(left, col) || strict(right, col),
        Expr::Between {
            expr, low, high, ..
        } => strict(expr, col) || strict(low, col) || strict(high, col),
        _ => false,
    }
}

fn where_of(q: Query) -> Expr {
    match *q.body {
        SetExpr::Select(s) => s.selection.expect("a WHERE was written"),
        _ => unreachable!("parsed a SELECT"),
    }
}

trait GroupByEmpty {
    fn group_by_is_empty(&self) -> bool;
}

impl GroupByEmpty for Select {
    fn group_by_is_empty(&self) -> bool {
        matches!(&self.group_by, ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty())
    }
}

/// The uncorrelated scalar subqueries of a SELECT (at its own level, not
/// inside a nested query): each replaced by the column of its value.
struct Scalars {
    /// How many queries deep the visit is.
    depth: usize,
    /// The subqueries found, in order: `__weir_sq{i}`.
    found: Vec<Query>,
    /// A subquery predicate (EXISTS) met where no join rewrite took it.
    predicate: Option<String>,
    /// `x [NOT] IN (SELECT ..)` met where no semi join took it (in an OR,
    /// a SELECT item): `x` and the subquery, `__weir_mq{i}`; made a CASE
    /// over a LEFT JOIN of the subquery's values and two counts.
    members: Vec<(Expr, Query)>,
}

impl Scalars {
    /// Replaces `e`, `x op ANY (sub)` (or ALL with `all`), by what it
    /// means in SQL: `= ANY` is IN, `<> ALL` NOT IN; `>`, `>=`, `<`, `<=`
    /// compare with the subquery's MIN or MAX, with SQL's NULL rules
    /// (TRUE for ALL and FALSE for ANY over no rows; NULL where only a
    /// NULL operand or a NULL in the set could decide). Another operator
    /// is left for the planner to refuse.
    fn quantified(&mut self, e: &mut Expr, x: &Expr, op: &B, sub: &Query, all: bool) {
        let member = match (op, all) {
            (B::Eq, false) => Some(false),
            (B::NotEq, true) => Some(true),
            _ => None,
        };
        if let Some(negated) = member {
            let i = self.members.len();
            if let Some(case) = membership(i, x, sub, negated) {
                self.members.push((x.clone(), sub.clone()));
                *e = case;
            }
            return;
        }
        let (sym, extreme) = match (op, all) {
            (B::Gt, true) | (B::GtEq, true) | (B::Lt, false) | (B::LtEq, false) => {
                (op.to_string(), "MAX")
            }
            (B::Gt, false) | (B::GtEq, false) | (B::Lt, true) | (B::LtEq, true) => {
                (op.to_string(), "MIN")
            }
            _ => {
                if self.predicate.is_none() {
                    self.predicate = Some(e.to_string());
                }
                return;
            }
        };
        let over = format!("FROM ({sub}) AS {HIDDEN}qs({HIDDEN}c)");
        let n = format!("COALESCE((SELECT COUNT(*) {over}), 0)");
        let nn = format!("COALESCE((SELECT COUNT({HIDDEN}c) {over}), 0)");
        let m = format!("(SELECT {extreme}({HIDDEN}c) {over})");
        let text = if all {
            format!(
                "SELECT CASE WHEN {n} = 0 THEN TRUE WHEN ({x}) IS NULL THEN CAST(NULL AS BOOLEAN)
                   WHEN {m} IS NOT NULL AND NOT (({x}) {sym} {m}) THEN FALSE
                   WHEN {nn} < {n} THEN CAST(NULL AS BOOLEAN) ELSE TRUE END"
            )
        } else {
            format!(
                "SELECT CASE WHEN {n} = 0 THEN FALSE WHEN ({x}) IS NULL THEN CAST(NULL AS BOOLEAN)
                   WHEN {m} IS NOT NULL AND (({x}) {sym} {m}) THEN TRUE
                   WHEN {nn} < {n} THEN CAST(NULL AS BOOLEAN) ELSE FALSE END"
            )
        };
        if let Ok(q) = parse_query(&text) {
            if let SetExpr::Select(s) = *q.body {
                if let Some(ast::SelectItem::UnnamedExpr(c)) = s.projection.into_iter().next() {
                    *e = c;
                }
            }
        }
    }
}

/// The CASE that `x [NOT] IN (sub)` (member `i`) becomes: SQL's IN over
/// the LEFT JOIN of `sub`'s distinct values (`__weir_mq{i}.__weir_m{i}`,
/// NULL without a match) and scalar subqueries counting `sub`'s rows and
/// its NULLs.
fn membership(i: usize, x: &Expr, sub: &Query, negated: bool) -> Option<Expr> {
    let rows = |n: &str| format!("FROM ({sub}) AS {HIDDEN}{n}{i}({HIDDEN}c)");
    let text = format!(
        "SELECT {}(CASE WHEN {HIDDEN}mq{i}.{HIDDEN}m{i} IS NOT NULL THEN TRUE
                 WHEN COALESCE((SELECT COUNT(*) {}), 0) = 0 THEN FALSE
                 WHEN ({x}) IS NULL
                   OR COALESCE((SELECT COUNT(*) {} WHERE {HIDDEN}c IS NULL), 0) > 0
                 THEN CAST(NULL AS BOOLEAN)
                 ELSE FALSE END)",
        if negated { "NOT " } else { "" },
        rows("ma"),
        rows("mn")
    );
    let q = parse_query(&text).ok()?;
    match *q.body {
        SetExpr::Select(s) => match s.projection.into_iter().next() {
            Some(ast::SelectItem::UnnamedExpr(e)) => Some(e),
            _ => None,
        },
        _ => None,
    }
}

impl ast::VisitorMut for Scalars {
    type Break = ();

    fn pre_visit_query(&mut self, _: &mut Query) -> std::ops::ControlFlow<()> {
        self.depth += 1;
        std::ops::ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> std::ops::ControlFlow<()> {
        self.depth -= 1;
        std::ops::ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &mut Expr) -> std::ops::ControlFlow<()> {
        if self.depth > 0 {
            return std::ops::ControlFlow::Continue(());
        }
        match e {
            Expr::Subquery(q) => {
                let i = self.found.len();
                self.found.push(q.as_ref().clone());
                *e = Expr::CompoundIdentifier(vec![
                    ast::Ident::new(format!("{HIDDEN}sq{i}")),
                    ast::Ident::new(format!("{HIDDEN}v{i}")),
                ]);
            }
            Expr::In {
                expr,
                target: ast::InTarget::Subquery(sub),
                negated,
                ..
            } => {
                let i = self.members.len();
                if let Some(case) = membership(i, expr, sub, *negated) {
                    self.members
                        .push((expr.as_ref().clone(), sub.as_ref().clone()));
                    *e = case;
                } else if self.predicate.is_none() {
                    self.predicate = Some(e.to_string());
                }
            }
            Expr::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => {
                if let Expr::Subquery(sub) = right.as_ref() {
                    let (x, op, sub) = (left.as_ref().clone(), compare_op.clone(), sub.clone());
                    self.quantified(e, &x, &op, &sub, false);
                }
            }
            Expr::AllOp {
                left,
                compare_op,
                right,
            } => {
                if let Expr::Subquery(sub) = right.as_ref() {
                    let (x, op, sub) = (left.as_ref().clone(), compare_op.clone(), sub.clone());
                    self.quantified(e, &x, &op, &sub, true);
                }
            }
            Expr::Exists { subquery, negated } => {
                // Not a top-level conjunct (in an OR, a SELECT item):
                // whether a scalar subquery counting the rows (correlated
                // as scalar subqueries may be) is above 0.
                let count = match subquery.body.as_ref() {
                    SetExpr::Select(sel)
                        if sel.group_by_is_empty()
                            && sel.having.is_none()
                            && subquery.with.is_none()
                            && subquery.limit_clause.is_none() =>
                    {
                        let from: Vec<String> = sel.from.iter().map(ToString::to_string).collect();
                        let w = sel
                            .selection
                            .as_ref()
                            .map_or(String::new(), |w| format!(" WHERE {w}"));
                        format!("SELECT COUNT(*) FROM {}{w}", from.join(", "))
                    }
                    _ => format!("SELECT COUNT(*) FROM ({subquery}) AS {HIDDEN}ex"),
                };
                let text = format!(
                    "SELECT COALESCE(({count}), 0) {} 0",
                    if *negated { "=" } else { ">" }
                );
                let replaced = parse_query(&text).ok().and_then(|q| match *q.body {
                    SetExpr::Select(s) => match s.projection.into_iter().next() {
                        Some(ast::SelectItem::UnnamedExpr(c)) => Some(c),
                        _ => None,
                    },
                    _ => None,
                });
                match replaced {
                    Some(c) => *e = c,
                    None if self.predicate.is_none() => self.predicate = Some(e.to_string()),
                    None => {}
                }
            }
            _ => {}
        }
        std::ops::ControlFlow::Continue(())
    }
}

/// Whether `q` gives at most one row: a SELECT of one value that
/// aggregates without GROUP BY, or a query cut to one row (`LIMIT 1`).
fn single_row(q: &Query) -> bool {
    let one = |e: &Expr| matches!(e, Expr::Value(v) if matches!(&v.value, ast::Value::Number(n, _) if n == "1"));
    let limited = match &q.limit_clause {
        Some(ast::LimitClause::LimitOffset {
            limit: Some(l),
            offset: None,
            ..
        }) => one(l),
        _ => false,
    };
    if limited {
        return true;
    }
    let SetExpr::Select(s) = q.body.as_ref() else {
        return false;
    };
    let aggregated = s.projection.iter().any(|item| match item {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
            let mut found = Vec::new();
            super::find_aggregates(e, &mut found);
            !found.is_empty()
        }
        _ => false,
    });
    aggregated && s.group_by_is_empty() && s.distinct.is_none()
}

/// Whether `q` is a SELECT that neither aggregates nor groups, nor is
/// DISTINCT, limited or ordered: its rows are its FROM's rows.
fn plain_select(q: &Query) -> bool {
    let SetExpr::Select(s) = q.body.as_ref() else {
        return false;
    };
    let aggregates = s.projection.iter().any(|item| match item {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
            let mut found = Vec::new();
            super::find_aggregates(e, &mut found);
            !found.is_empty()
        }
        _ => false,
    });
    !aggregates
        && s.group_by_is_empty()
        && s.having.is_none()
        && s.distinct.is_none()
        && q.limit_clause.is_none()
        && q.order_by.is_none()
        && q.fetch.is_none()
}

impl Planner<'_> {
    /// `s` with its uncorrelated scalar subqueries (`WHERE x > (SELECT
    /// AVG(x) FROM t)`, in SELECT items and HAVING too) made LEFT JOINs,
    /// as Flink's planner makes them: the subquery's one row (none: its
    /// value is NULL) joined to every row on a constant key, and the
    /// subquery replaced by its value's column. A grouped SELECT groups by
    /// that value too (it is one value for all rows). `None` if `s` has
    /// none.
    pub(super) fn rewrite_scalar_subqueries(&mut self, s: &Select) -> Result<Option<Select>> {
        use ast::VisitMut;
        let mut out = s.clone();
        let mut v = Scalars {
            depth: 0,
            found: Vec::new(),
            predicate: None,
            members: Vec::new(),
        };
        if let Some(w) = &mut out.selection {
            let _ = w.visit(&mut v);
        }
        let in_where = v.found.len();
        let members_in_where = v.members.len();
        for item in &mut out.projection {
            if let ast::SelectItem::UnnamedExpr(e)
            | ast::SelectItem::ExprWithAlias { expr: e, .. } = item
            {
                let _ = e.visit(&mut v);
            }
        }
        if let Some(h) = &mut out.having {
            let _ = h.visit(&mut v);
        }
        if v.found.is_empty() {
            return Ok(None);
        }
        if let Some(p) = v.predicate {
            return Err(SqlError::Unsupported(format!(
                "the subquery predicate `{p}` (weir plans neither `= ALL` nor `<> ANY`)"
            )));
        }
        let Some(first) = out.from.first() else {
            return Err(SqlError::Unsupported(
                "a scalar subquery without FROM".into(),
            ));
        };
        if let TableFactor::Function { .. } | TableFactor::TableFunction { .. } = first.relation {
            return Err(SqlError::Unsupported(
                "a scalar subquery in a query over a table function (a windowing TVF)".into(),
            ));
        }
        for (i, (x, sub)) in v.members.iter().enumerate() {
            let relation = self.derived_as(
                &format!(
                    "SELECT DISTINCT {HIDDEN}c AS {HIDDEN}m{i} FROM ({sub}) AS {HIDDEN}md{i}({HIDDEN}c)"
                ),
                &format!("{HIDDEN}mq{i}"),
            )?;
            let on = where_of(parse_query(&format!(
                "SELECT 1 WHERE ({x}) = {HIDDEN}mq{i}.{HIDDEN}m{i}"
            ))?);
            let at = if out.from.len() > 1 {
                self.item_read_by(&out.from, std::iter::once(x), sub)?
            } else {
                0
            };
            out.from[at].joins.push(ast::Join {
                relation,
                global: false,
                join_operator: ast::JoinOperator::LeftOuter(ast::JoinConstraint::On(on)),
            });
        }
        for (i, q) in v.found.iter().enumerate() {
            // One that does not aggregate (`(SELECT w FROM u WHERE n = 9)`)
            // is Flink's SINGLE_VALUE of its rows: its value, NULL without
            // a row, and the job fails on a second row.
            let single_value = !single_row(q) && plain_select(q);
            if !single_row(q) && !single_value {
                return Err(SqlError::Unsupported(format!(
                    "the scalar subquery `({q})`: weir plans one that aggregates without GROUP BY (`(SELECT AVG(x) FROM t)`), is cut to one row (`ORDER BY .. LIMIT 1`) or selects a value of at most one row, not one with GROUP BY, DISTINCT or LIMIT"
                )));
            }
            let mut value = q.clone();
            let SetExpr::Select(sel) = value.body.as_mut() else {
                return Err(SqlError::Unsupported(format!(
                    "the scalar subquery `({q})`: a SELECT is needed"
                )));
            };
            let [item] = sel.projection.as_slice() else {
                return Err(SqlError::Plan(format!(
                    "the scalar subquery `({q})` needs one column"
                )));
            };
            let mut e = match item {
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => e.clone(),
                _ => {
                    return Err(SqlError::Plan(format!(
                        "the scalar subquery `({q})` needs one column, not `{item}`"
                    )))
                }
            };
            if single_value {
                let call = |name: &str, args| crate::dialect::call(name, args, Vec::new());
                let count = crate::dialect::call_star("COUNT");
                e = call(crate::expr::SINGLE_VALUE, vec![count, call("MAX", vec![e])]);
            }
            // Correlated through equalities `inner = outer`: the value per
            // inner key (a GROUP BY of the subquery), joined on the keys.
            let scope = self.inner_scope(&sel.from);
            let keys = correlation(sel, q, &scope)?;
            if !keys.is_empty() && q.limit_clause.is_some() {
                return Err(SqlError::Unsupported(format!(
                    "the correlated scalar subquery `({q})` with LIMIT (weir decorrelates one that aggregates without GROUP BY)"
                )));
            }
            let mut aggs = Vec::new();
            super::find_aggregates(&e, &mut aggs);
            let is_count = |a: &Expr| matches!(a, Expr::Function(f) if object_name(&f.name).eq_ignore_ascii_case("COUNT"));
            // A key without rows has no group: its COUNT is 0, not NULL.
            let count = !keys.is_empty() && is_count(&e);
            if !keys.is_empty() && !count && !single_value && aggs.iter().any(is_count) {
                return Err(SqlError::Unsupported(format!(
                    "the correlated scalar subquery `({q})`: a COUNT inside an expression (weir decorrelates COUNT(..) alone or other aggregates)"
                )));
            }
            let mut items: Vec<ast::SelectItem> = keys
                .iter()
                .enumerate()
                .map(|(j, (inner, _))| ast::SelectItem::ExprWithAlias {
                    expr: inner.clone(),
                    alias: ast::Ident::new(format!("{HIDDEN}k{i}_{j}")),
                })
                .collect();
            items.push(ast::SelectItem::ExprWithAlias {
                expr: e,
                alias: ast::Ident::new(format!("{HIDDEN}v{i}")),
            });
            items.push(ast::SelectItem::ExprWithAlias {
                expr: Expr::value(ast::Value::Boolean(true)),
                alias: ast::Ident::new(format!("{HIDDEN}c{i}")),
            });
            sel.projection = items;
            if !keys.is_empty() {
                sel.group_by = ast::GroupByExpr::Expressions(
                    keys.iter().map(|(inner, _)| inner.clone()).collect(),
                    Vec::new(),
                );
            }
            if let Err(e) = self.query(&value) {
                return Err(SqlError::Unsupported(format!(
                    "the scalar subquery `({q})` alone ({e}): weir plans uncorrelated scalar subqueries and those correlated through equalities `inner.col = outer.col` only"
                )));
            }
            let relation = self.derived_as(&format!("{value}"), &format!("{HIDDEN}sq{i}"))?;
            let mut on = format!("{HIDDEN}sq{i}.{HIDDEN}c{i}");
            for (j, (_, outer)) in keys.iter().enumerate() {
                on.push_str(&format!(" AND ({outer}) = {HIDDEN}sq{i}.{HIDDEN}k{i}_{j}"));
            }
            let on = where_of(parse_query(&format!("SELECT 1 WHERE {on}"))?);
            // Over several FROM items, the join goes with the item the
            // correlation reads (the first when uncorrelated).
            let at = if out.from.len() > 1 && !keys.is_empty() {
                self.item_read_by(&out.from, keys.iter().map(|(_, o)| o), q)?
            } else {
                0
            };
            out.from[at].joins.push(ast::Join {
                relation,
                global: false,
                join_operator: ast::JoinOperator::LeftOuter(ast::JoinConstraint::On(on)),
            });
            if count {
                let mut c = CountOfNoRows(i);
                if let Some(w) = &mut out.selection {
                    let _ = w.visit(&mut c);
                }
                for item in &mut out.projection {
                    if let ast::SelectItem::UnnamedExpr(e)
                    | ast::SelectItem::ExprWithAlias { expr: e, .. } = item
                    {
                        let _ = e.visit(&mut c);
                    }
                }
                if let Some(h) = &mut out.having {
                    let _ = h.visit(&mut c);
                }
            }
        }
        // Grouped: the values read after grouping are grouped by.
        let grouped = !s.group_by_is_empty()
            || s.having.is_some()
            || s.projection.iter().any(|item| match item {
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                    let mut found = Vec::new();
                    super::find_aggregates(e, &mut found);
                    !found.is_empty()
                }
                _ => false,
            });
        if grouped && (v.found.len() > in_where || v.members.len() > members_in_where) {
            let ast::GroupByExpr::Expressions(keys, _) = &mut out.group_by else {
                return Err(SqlError::Unsupported(format!("`{}`", s.group_by)));
            };
            for i in in_where..v.found.len() {
                keys.push(Expr::CompoundIdentifier(vec![
                    ast::Ident::new(format!("{HIDDEN}sq{i}")),
                    ast::Ident::new(format!("{HIDDEN}v{i}")),
                ]));
            }
            for i in members_in_where..v.members.len() {
                keys.push(Expr::CompoundIdentifier(vec![
                    ast::Ident::new(format!("{HIDDEN}mq{i}")),
                    ast::Ident::new(format!("{HIDDEN}m{i}")),
                ]));
            }
        }
        Ok(Some(out))
    }

    /// The one FROM item of `from` whose columns the expressions `exprs`
    /// read (the outer side of scalar subquery `q`'s correlation); an
    /// error when they read several or none.
    fn item_read_by<'e>(
        &mut self,
        from: &[ast::TableWithJoins],
        exprs: impl Iterator<Item = &'e Expr>,
        q: &Query,
    ) -> Result<usize> {
        let scopes: Vec<Inner> = from
            .iter()
            .map(|t| self.inner_scope(std::slice::from_ref(t)))
            .collect();
        let mut found: Option<usize> = None;
        for e in exprs {
            for (i, scope) in scopes.iter().enumerate() {
                // Reads item `i`: some column of `e` is not outside it.
                let reads = {
                    let mut any = false;
                    let _ = ast::visit_expressions(e, |x| {
                        if matches!(x, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
                            && !is_outer(x, scope)
                        {
                            any = true;
                        }
                        std::ops::ControlFlow::<()>::Continue(())
                    });
                    any
                };
                if reads {
                    match found {
                        Some(j) if j != i => {
                            return Err(SqlError::Unsupported(format!(
                                "the scalar subquery `({q})` correlated with several FROM items (write them as JOIN .. ON)"
                            )))
                        }
                        _ => found = Some(i),
                    }
                }
            }
        }
        Ok(found.unwrap_or(0))
    }

    /// `text` (a query) as a derived table named `alias`.
    fn derived_as(&mut self, text: &str, alias: &str) -> Result<TableFactor> {
        let q = parse_query(&format!("SELECT * FROM ({text}) AS {alias}"))?;
        match *q.body {
            SetExpr::Select(s) => Ok(s.from[0].relation.clone()),
            _ => unreachable!("parsed a SELECT"),
        }
    }
}

/// The correlation of a scalar subquery's SELECT `sel`: its WHERE's
/// equalities of an expression of its own columns and one of the outer
/// query's (`u.k = t.k`), as (inner, outer) pairs, taken out of its
/// WHERE; an error for another condition that reads the outer query.
fn correlation(sel: &mut Select, q: &Query, inner_q: &Inner) -> Result<Vec<(Expr, Expr)>> {
    let mut keys = Vec::new();
    let Some(w) = &sel.selection else {
        return Ok(keys);
    };
    let mut parts = Vec::new();
    conjuncts(w, &mut parts);
    let mut rest = Vec::new();
    for p in parts {
        let mut bare = &p;
        while let Expr::Nested(x) = bare {
            bare = x;
        }
        match bare {
            Expr::BinaryOp {
                left,
                op: B::Eq,
                right,
            } if mentions_outer(left, inner_q) != mentions_outer(right, inner_q) => {
                if mentions_outer(left, inner_q) {
                    keys.push((right.as_ref().clone(), left.as_ref().clone()));
                } else {
                    keys.push((left.as_ref().clone(), right.as_ref().clone()));
                }
            }
            other if mentions_outer(other, inner_q) => {
                return Err(SqlError::Unsupported(format!(
                    "the correlated condition `{other}` in the scalar subquery `({q})` (only equalities of a subquery column and an outer column correlate)"
                )))
            }
            // (as written: `(a OR b)` keeps its parentheses)
            _ => rest.push(p.clone()),
        }
    }
    sel.selection = conjunction(rest);
    Ok(keys)
}

/// Replaces the value column of correlated scalar subquery `.0`, a COUNT,
/// by `COALESCE(value, 0)`: a key no row has is not joined, and its COUNT
/// is 0.
struct CountOfNoRows(usize);

impl ast::VisitorMut for CountOfNoRows {
    type Break = ();

    fn post_visit_expr(&mut self, e: &mut Expr) -> std::ops::ControlFlow<()> {
        let i = self.0;
        if matches!(e, Expr::CompoundIdentifier(p) if p.len() == 2
            && p[0].value == format!("{HIDDEN}sq{i}") && p[1].value == format!("{HIDDEN}v{i}"))
        {
            let text = format!("SELECT COALESCE({HIDDEN}sq{i}.{HIDDEN}v{i}, 0)");
            if let Ok(q) = parse_query(&text) {
                if let SetExpr::Select(s) = *q.body {
                    if let Some(ast::SelectItem::UnnamedExpr(c)) = s.projection.into_iter().next() {
                        *e = c;
                    }
                }
            }
        }
        std::ops::ControlFlow::Continue(())
    }
}
