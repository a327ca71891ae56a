//! `ORDER BY`, `LIMIT`, `OFFSET` and `FETCH FIRST` of a query.
//!
//! - On a bare `SELECT` (over bounded sources, printed as a table) they
//!   order and cut the final table, as a batch query would:
//!   [`Planner::select_query`] plans the query without them and returns a
//!   [`Presentation`] that the printer applies.
//! - In a stream (an `INSERT`, a subquery, a view) `ORDER BY .. LIMIT n`
//!   is a Top-N over the whole input, as Flink plans it: the query becomes
//!   `SELECT cols FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY ..) AS rn
//!   FROM (query)) WHERE rn <= n` (with `OFFSET m`: `m < rn <= m + n`), an
//!   updating result on one subtask. An INSERT's `ORDER BY ts, ..`
//!   without `LIMIT`, its first key the input's event-time attribute
//!   ascending, is Flink's temporal sort (rows in time order as the
//!   watermark passes them, late ones dropped), planned as an OVER
//!   aggregation by that time; any other ORDER BY there is refused, as
//!   Flink refuses it. In a subquery or a view an `ORDER BY` without
//!   `LIMIT` is dropped, as Calcite drops it (nothing reading it sees an
//!   order). `LIMIT` without `ORDER BY` has no meaning on an unbounded
//!   stream and is refused, naming what to write instead.

use std::cmp::Ordering;

use sqlparser::ast::{
    self, Expr, LimitClause, OrderByKind, Query, SelectItem, SetExpr, Value as AstValue,
};
use sqlparser::parser::Parser;

use super::{Plan, Planner};
use crate::dialect::FlinkDialect;
use crate::error::{Result, SqlError};
use crate::types::Schema;
use crate::value::Row;

/// How a bare SELECT's final table is shown: sorted by `order`, then rows
/// `offset..offset + limit`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Presentation {
    /// `(column, ascending, nulls first)`, most significant first.
    pub order: Vec<(usize, bool, bool)>,
    /// Rows skipped.
    pub offset: usize,
    /// Rows shown at most.
    pub limit: Option<usize>,
    /// Columns shown, when the last ones are hidden (ORDER BY items not
    /// selected); `None`: all.
    pub columns: Option<usize>,
}

impl Presentation {
    /// Orders and cuts `rows` (the table's live rows).
    pub fn apply<'r>(&self, mut rows: Vec<&'r Row>) -> Vec<&'r Row> {
        if !self.order.is_empty() {
            rows.sort_by(|a, b| {
                for &(c, asc, nulls_first) in &self.order {
                    let (x, y) = (&a.values[c], &b.values[c]);
                    let o = match (x.is_null(), y.is_null()) {
                        (true, true) => Ordering::Equal,
                        (true, false) => {
                            if nulls_first {
                                Ordering::Less
                            } else {
                                Ordering::Greater
                            }
                        }
                        (false, true) => {
                            if nulls_first {
                                Ordering::Greater
                            } else {
                                Ordering::Less
                            }
                        }
                        (false, false) => {
                            let o = x.total_cmp(y);
                            if asc {
                                o
                            } else {
                                o.reverse()
                            }
                        }
                    };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                Ordering::Equal
            });
        }
        rows.into_iter()
            .skip(self.offset)
            .take(self.limit.unwrap_or(usize::MAX))
            .collect()
    }
}

/// A non-negative integer literal of LIMIT / OFFSET / FETCH.
fn count(e: &Expr, what: &str) -> Result<usize> {
    match e {
        Expr::Value(v) => match &v.value {
            AstValue::Number(n, _) => n.parse().map_err(|_| {
                SqlError::Plan(format!(
                    "{what} {n}: a count of rows is a non-negative integer"
                ))
            }),
            other => Err(SqlError::Plan(format!(
                "{what} {other}: a count of rows is an integer literal"
            ))),
        },
        other => Err(SqlError::Plan(format!(
            "{what} {other}: a count of rows is an integer literal"
        ))),
    }
}

/// `q`'s ORDER BY items, LIMIT and OFFSET.
fn clauses(q: &Query) -> Result<(Vec<ast::OrderByExpr>, Option<usize>, usize)> {
    let order = match &q.order_by {
        None => Vec::new(),
        Some(o) => match &o.kind {
            OrderByKind::Expressions(e) => e.clone(),
            OrderByKind::All(_) => return Err(SqlError::Unsupported("ORDER BY ALL".into())),
        },
    };
    let (mut limit, mut offset) = (None, 0);
    match &q.limit_clause {
        None => {}
        Some(LimitClause::LimitOffset {
            limit: l,
            offset: o,
            limit_by,
        }) => {
            if !limit_by.is_empty() {
                return Err(SqlError::Unsupported("LIMIT .. BY".into()));
            }
            if let Some(l) = l {
                limit = Some(count(l, "LIMIT")?);
            }
            if let Some(o) = o {
                offset = count(&o.value, "OFFSET")?;
            }
        }
        Some(LimitClause::OffsetCommaLimit {
            offset: o,
            limit: l,
        }) => {
            limit = Some(count(l, "LIMIT")?);
            offset = count(o, "OFFSET")?;
        }
    }
    if let Some(f) = &q.fetch {
        if f.percent || f.with_ties {
            return Err(SqlError::Unsupported(format!("{f}")));
        }
        limit = Some(match &f.quantity {
            Some(e) => count(e, "FETCH FIRST")?,
            None => 1,
        });
    }
    Ok((order, limit, offset))
}

/// The column of `schema` an ORDER BY item names: an output column's name
/// or alias, or its position (1-based).
fn order_column(e: &Expr, schema: &Schema, items: &[SelectItem]) -> Result<usize> {
    match e {
        Expr::Identifier(i) => schema
            .fields
            .iter()
            .position(|f| f.name.eq_ignore_ascii_case(&i.value))
            .ok_or_else(|| SqlError::UnknownColumn {
                column: i.value.clone(),
                in_scope: format!("{schema} (ORDER BY names an output column)"),
            }),
        Expr::CompoundIdentifier(parts) => {
            let last = parts.last().map(|p| p.value.clone()).unwrap_or_default();
            order_column(&Expr::Identifier(ast::Ident::new(last)), schema, items)
        }
        Expr::Value(v) => match &v.value {
            AstValue::Number(n, _) => {
                let k: usize = n.parse().unwrap_or(0);
                if k == 0 || k > schema.len() {
                    return Err(SqlError::Plan(format!(
                        "ORDER BY {n}: the SELECT has {} columns",
                        schema.len()
                    )));
                }
                Ok(k - 1)
            }
            other => Err(SqlError::Plan(format!("ORDER BY {other}: not a column"))),
        },
        other => {
            // An expression written as in the SELECT list.
            let text = other.to_string();
            items
                .iter()
                .position(|it| match it {
                    SelectItem::UnnamedExpr(x) | SelectItem::ExprWithAlias { expr: x, .. } => {
                        x.to_string().eq_ignore_ascii_case(&text)
                    }
                    _ => false,
                })
                .filter(|&p| p < schema.len())
                .ok_or_else(|| {
                    SqlError::Unsupported(format!(
                        "ORDER BY {text}: order by an output column (select the expression with an alias and order by the alias)"
                    ))
                })
        }
    }
}

/// Whether `e` is a number literal (an ORDER BY position).
fn is_number(e: &Expr) -> bool {
    matches!(e, Expr::Value(v) if matches!(v.value, AstValue::Number(..)))
}

fn select_items(q: &Query) -> &[SelectItem] {
    match q.body.as_ref() {
        SetExpr::Select(s) => &s.projection,
        _ => &[],
    }
}

/// What [`Planner::ordered`] gives: the query without ORDER BY and LIMIT
/// (with the hidden columns), its plan, the column of each ORDER BY item,
/// and how many columns the SELECT shows.
struct Ordered {
    bare: Query,
    plan: Plan,
    columns: Vec<usize>,
    shown: usize,
}

impl Planner<'_> {
    /// Plans `q` without its ORDER BY and LIMIT, resolving each ORDER BY
    /// item to a column: an output column (by name, alias, position or the
    /// same expression), else, in a plain SELECT (not DISTINCT, not a set
    /// operation), a hidden column appended to the SELECT list, as SQL and
    /// Flink allow `SELECT name FROM t ORDER BY price` (a column or
    /// expression of the input, or of the GROUP BY keys and aggregates).
    fn ordered(&mut self, q: &Query, order: &[ast::OrderByExpr]) -> Result<Ordered> {
        let mut bare = q.clone();
        bare.order_by = None;
        bare.limit_clause = None;
        bare.fetch = None;
        let plan = self.query(&bare)?;
        let shown = plan.schema.len();
        let items = select_items(q);
        let mut found = Vec::with_capacity(order.len());
        let mut hidden = 0;
        for (i, o) in order.iter().enumerate() {
            match order_column(&o.expr, &plan.schema, items) {
                Ok(c) => found.push(Some(c)),
                // (an integer is a position, as Calcite reads it: one out
                // of range is an error, not a constant to sort by)
                Err(e) if is_number(&o.expr) => return Err(e),
                Err(e) => {
                    let SetExpr::Select(s) = bare.body.as_mut() else {
                        return Err(e);
                    };
                    if s.distinct.is_some() {
                        // (Flink too: with DISTINCT an ORDER BY item must
                        // be selected.)
                        return Err(e);
                    }
                    s.projection.push(SelectItem::ExprWithAlias {
                        expr: o.expr.clone(),
                        alias: ast::Ident::new(format!("__weir_order{i}")),
                    });
                    found.push(None);
                    hidden += 1;
                }
            }
        }
        let plan = if hidden == 0 {
            plan
        } else {
            self.query(&bare)?
        };
        let mut next = shown;
        let columns = found
            .into_iter()
            .map(|c| {
                c.unwrap_or_else(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect();
        Ok(Ordered {
            bare,
            plan,
            columns,
            shown,
        })
    }

    /// A bare SELECT: its plan without ORDER BY / LIMIT, and how its final
    /// table is ordered and cut.
    pub fn select_query(&mut self, q: &Query) -> Result<(Plan, Presentation)> {
        let (order, limit, offset) = clauses(q)?;
        let Ordered {
            plan,
            columns,
            shown,
            ..
        } = self.ordered(q, &order)?;
        let order = order
            .iter()
            .zip(columns)
            .map(|(o, c)| {
                let asc = !matches!(o.options.sort, Some(ast::OrderBySort::Desc));
                // Flink's default: NULLS FIRST ascending, NULLS LAST descending.
                let nulls_first = o.options.nulls_first.unwrap_or(asc);
                (c, asc, nulls_first)
            })
            .collect();
        let columns = (shown < plan.schema.len()).then_some(shown);
        Ok((
            plan,
            Presentation {
                order,
                offset,
                limit,
                columns,
            },
        ))
    }

    /// `q` with ORDER BY and no LIMIT in a stream: Flink's temporal sort
    /// when the first key is the input's event-time attribute ascending
    /// (`ORDER BY ts, x`): each row waits until the watermark passes its
    /// time and rows leave in time order, a row at or behind the watermark
    /// dropped as late (Flink's `RowTimeSortOperator`). It is planned as
    /// the OVER aggregation of one partition ordered by that time, which
    /// buffers, orders and drops rows so, its aggregate left out; rows of
    /// one time leave ordered by their other columns (Flink: by the other
    /// ORDER BY keys). Any other ORDER BY without LIMIT is refused, as
    /// Flink refuses to sort a stream on anything else.
    fn temporal_sort(&mut self, q: &Query, order: &[ast::OrderByExpr]) -> Result<Plan> {
        let refused = || {
            SqlError::Unsupported(
                "ORDER BY without LIMIT on a stream, other than by its event-time attribute ascending first (ORDER BY ts, ..): a bare SELECT over bounded sources prints in that order; in an INSERT, add LIMIT n for a Top-N".into(),
            )
        };
        let Some(first) = order.first() else {
            return Err(refused());
        };
        if matches!(first.options.sort, Some(ast::OrderBySort::Desc)) {
            return Err(refused());
        }
        let mut without_with = q.clone();
        without_with.with = None;
        let Ordered {
            bare,
            plan: inner,
            columns,
            shown,
        } = self.ordered(&without_with, order)?;
        if !inner.schema.fields[columns[0]].rowtime || inner.updating {
            return Err(refused());
        }
        let all: Vec<String> = inner
            .schema
            .fields
            .iter()
            .map(|f| format!("`{}`", f.name.replace('`', "``")))
            .collect();
        let text = format!(
            "SELECT {cols} FROM (SELECT {all}, COUNT(*) OVER (ORDER BY {ts}) AS __weir_sort FROM ({body}) AS __weir_sorted) AS __weir_sort_out",
            cols = all[..shown].join(", "),
            all = all.join(", "),
            ts = all[columns[0]],
            body = bare,
        );
        let rewritten = Parser::new(&FlinkDialect::default())
            .try_with_sql(&text)
            .and_then(|mut p| p.parse_query())
            .map_err(|e| SqlError::Plan(format!("ORDER BY a time attribute as a sort: {e}")))?;
        self.query(&rewritten)
    }

    /// `q` with ORDER BY and LIMIT in a stream: a Top-N (see the module
    /// docs).
    pub(super) fn top_n(&mut self, q: &Query) -> Result<Plan> {
        let (order, limit, offset) = clauses(q)?;
        let Some(limit) = limit else {
            if offset > 0 {
                return Err(SqlError::Unsupported(
                    "OFFSET without LIMIT on a stream: add ORDER BY .. LIMIT n for a Top-N".into(),
                ));
            }
            if self.insert && self.depth == 1 {
                return self.temporal_sort(q, &order);
            }
            // A subquery's or view's ORDER BY without LIMIT orders nothing
            // its reader sees: Calcite drops it (`removeSortInSubQuery`),
            // and so does weir. (WITH's tables are in scope already.)
            return self.set_expr(&q.body);
        };
        if order.is_empty() {
            return Err(SqlError::Unsupported(
                "LIMIT without ORDER BY on a stream (which rows is undefined): add ORDER BY for a Top-N".into(),
            ));
        }
        let mut without_with = q.clone();
        without_with.with = None;
        let Ordered {
            bare,
            plan: inner,
            columns,
            shown,
        } = self.ordered(&without_with, &order)?;
        let all: Vec<String> = inner
            .schema
            .fields
            .iter()
            .map(|f| format!("`{}`", f.name.replace('`', "``")))
            .collect();
        let keys: Vec<String> = order
            .iter()
            .zip(columns)
            .map(|(o, c)| {
                let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
                // The NULLS placement carries over to the row number's
                // ORDER BY (without it, its default for the direction).
                let nulls = match o.options.nulls_first {
                    Some(true) => " NULLS FIRST",
                    Some(false) => " NULLS LAST",
                    None => "",
                };
                format!("{}{}{nulls}", all[c], if desc { " DESC" } else { "" })
            })
            .collect();
        let bound = if offset > 0 {
            format!("__weir_rn > {offset} AND __weir_rn <= {}", offset + limit)
        } else {
            format!("__weir_rn <= {limit}")
        };
        let text = format!(
            "SELECT {cols} FROM (SELECT {all}, ROW_NUMBER() OVER (ORDER BY {keys}) AS __weir_rn FROM ({body}) AS __weir_sorted) AS __weir_top WHERE {bound}",
            cols = all[..shown].join(", "),
            all = all.join(", "),
            keys = keys.join(", "),
            body = bare,
        );
        let rewritten = Parser::new(&FlinkDialect::default())
            .try_with_sql(&text)
            .and_then(|mut p| p.parse_query())
            .map_err(|e| SqlError::Plan(format!("ORDER BY .. LIMIT as a Top-N: {e}")))?;
        self.query(&rewritten)
    }
}
