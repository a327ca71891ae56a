//! FROM's joins planned: `a [INNER | LEFT | RIGHT | FULL] JOIN b ON ..`
//! (also parenthesized) and `FROM a, b WHERE ..`, each a [`Node::Join`]
//! or a [`Node::IntervalJoin`] whose condition
//! [`crate::join::condition`] splits, over the concatenated scope of its
//! inputs (left columns, then right; each qualified by its table name or
//! alias).

use sqlparser::ast::{self, Expr, JoinConstraint, JoinOperator, TableFactor, TableWithJoins};

use super::subquery::HIDDEN;
use super::window_props::{window_props, windowed};
use super::{From, Node, Plan, Planner};
use crate::error::{Result, SqlError};
use crate::expr::{compile, Scalar, Scope, ScopeCol};
use crate::join::condition::{self, conjuncts};
use crate::join::{JoinKind, JoinOn};
use crate::types::{DataType, Field, Schema};

impl Planner<'_> {
    /// A FROM item: a table factor and the joins that follow it, joined
    /// left to right.
    pub(super) fn table_with_joins(&mut self, t: &TableWithJoins) -> Result<From> {
        let mut acc = self.table_factor(&t.relation)?;
        for j in &t.joins {
            let (kind, constraint) = match &j.join_operator {
                JoinOperator::Join(c) | JoinOperator::Inner(c) => (JoinKind::Inner, c),
                JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (JoinKind::Left, c),
                JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (JoinKind::Right, c),
                JoinOperator::FullOuter(c) => (JoinKind::Full, c),
                JoinOperator::CrossJoin(_) => {
                    // Every pair: a join without keys (one subtask).
                    let right = self.table_factor(&j.relation)?;
                    acc = self.join(acc, right, JoinKind::Inner, Vec::new())?;
                    continue;
                }
                _ => {
                    return Err(SqlError::Unsupported(format!(
                        "`{}` (weir runs [INNER] JOIN, LEFT, RIGHT and FULL [OUTER] JOIN with ON)",
                        j.to_string().trim()
                    )))
                }
            };
            if let TableFactor::Table {
                version: Some(v), ..
            } = &j.relation
            {
                let JoinConstraint::On(cond) = constraint else {
                    return Err(SqlError::Plan(
                        "a temporal join needs ON with the versioned table's primary key".into(),
                    ));
                };
                acc = self.temporal_join(acc, &j.relation, v, kind, cond)?;
                continue;
            }
            let right = self.table_factor(&j.relation)?;
            let cond = match constraint {
                JoinConstraint::On(e) => e,
                JoinConstraint::Using(names) => {
                    let names: Vec<String> = names.iter().map(crate::script::object_name).collect();
                    acc = self.join_using(acc, right, kind, &names)?;
                    continue;
                }
                JoinConstraint::Natural => {
                    let names = common_names(&acc.scope, &right.scope);
                    acc = self.join_using(acc, right, kind, &names)?;
                    continue;
                }
                JoinConstraint::UsingAlias(..) => {
                    return Err(SqlError::Unsupported(
                        "JOIN .. USING (..) AS alias; write the equalities, `ON a.k = b.k`".into(),
                    ))
                }
                JoinConstraint::None => {
                    return Err(SqlError::Plan(format!(
                        "`{}` needs a condition: `ON a.k = b.k`",
                        j.to_string().trim()
                    )))
                }
            };
            check_joinable(&acc, &right)?;
            let scope = acc.scope.concat(&right.scope);
            let c = compile(cond, &scope)?;
            if c.ty() != DataType::Boolean {
                return Err(SqlError::Type(format!(
                    "a join's ON needs a BOOLEAN, got {}",
                    c.ty()
                )));
            }
            let mut parts = Vec::new();
            conjuncts(c, &mut parts);
            acc = self.join(acc, right, kind, parts)?;
        }
        Ok(acc)
    }

    /// `left JOIN right USING (names)` (NATURAL JOIN: the names both
    /// sides have), as Calcite expands it: joined on `l.k = r.k` for each
    /// name, the output's columns the merged `k`s first (the left's value,
    /// the right's for RIGHT JOIN, `COALESCE(l.k, r.k)` for FULL JOIN, in
    /// their common type), then the left's other columns, then the right's.
    /// `*` and a bare `k` read the merged column; `l.k` and `r.k` still
    /// name each side's (columns hidden from `*` and bare names).
    fn join_using(
        &mut self,
        left: From,
        right: From,
        kind: JoinKind,
        names: &[String],
    ) -> Result<From> {
        check_joinable(&left, &right)?;
        let lw = left.scope.cols.len();
        let mut pairs = Vec::new();
        let mut conds = Vec::new();
        for name in names {
            let id = [ast::Ident::new(name)];
            let (l, r) = (left.scope.resolve(&id)?, right.scope.resolve(&id)?);
            if pairs.iter().any(|&(pl, _)| pl == l) {
                return Err(SqlError::Plan(format!("USING names `{name}` twice")));
            }
            let (lt, rt) = (left.scope.cols[l].field.ty, right.scope.cols[r].field.ty);
            conds.push(crate::expr::binary(
                &ast::BinaryOperator::Eq,
                Scalar::Column(l, lt),
                Scalar::Column(lw + r, rt),
            )?);
            pairs.push((l, r));
        }
        if pairs.is_empty() {
            return Err(SqlError::Plan(
                "a NATURAL JOIN of inputs without a column name in common".into(),
            ));
        }
        let joined = self.join(left, right, kind, conds)?;
        let cols = joined.scope.cols.clone();
        let mut project = Vec::new();
        let mut scope = Vec::new();
        for &(l, r) in &pairs {
            let (lc, rc) = (&cols[l], &cols[lw + r]);
            let ty =
                crate::types::least_common_type(lc.field.ty, rc.field.ty).ok_or_else(|| {
                    SqlError::Type(format!(
                        "USING `{}`: {} and {} have no common type",
                        lc.field.name, lc.field.ty, rc.field.ty
                    ))
                })?;
            let (lcol, rcol) = (
                Scalar::Column(l, lc.field.ty),
                Scalar::Column(lw + r, rc.field.ty),
            );
            let one = |c: Scalar| match c.ty() == ty {
                true => c,
                false => Scalar::Cast(Box::new(c), ty, false),
            };
            project.push(match kind {
                JoinKind::Inner | JoinKind::Left => one(lcol),
                JoinKind::Right => one(rcol),
                JoinKind::Full => Scalar::Call(crate::expr::Func::Coalesce, vec![lcol, rcol], ty),
            });
            let mut f = lc.field.clone();
            f.ty = ty;
            f.nullable = match kind {
                JoinKind::Full => lc.field.nullable && rc.field.nullable,
                JoinKind::Right => rc.field.nullable,
                _ => lc.field.nullable,
            };
            f.rowtime = false;
            f.proctime = false;
            scope.push(ScopeCol {
                qualifier: None,
                field: f,
                hidden: false,
            });
        }
        // Each side's columns in their order, the merged ones hidden where
        // they stand (so that `l.*` is the left's columns in order).
        let merged: Vec<usize> = pairs.iter().flat_map(|&(l, r)| [l, lw + r]).collect();
        for (i, c) in cols.iter().enumerate() {
            project.push(Scalar::Column(i, c.field.ty));
            scope.push(ScopeCol {
                hidden: c.hidden || merged.contains(&i),
                ..c.clone()
            });
        }
        let fields = scope.iter().map(|c| c.field.clone()).collect();
        Ok(From {
            plan: super::calc(joined.plan, None, project, fields),
            scope: Scope { cols: scope },
            window: None,
            partition: Vec::new(),
        })
    }

    /// `FROM a, b, ..` with WHERE `selection`: inner joins left to right,
    /// each on the conjuncts of WHERE that read both its sides; the
    /// conjuncts left over filter the joined rows.
    pub(super) fn comma_join(
        &mut self,
        items: &[TableWithJoins],
        selection: Option<&Expr>,
    ) -> Result<(From, Option<Scalar>)> {
        let froms = items
            .iter()
            .map(|t| self.table_with_joins(t))
            .collect::<Result<Vec<_>>>()?;
        for (i, f) in froms.iter().enumerate() {
            for g in &froms[i + 1..] {
                check_joinable(f, g)?;
            }
        }
        let all = froms
            .iter()
            .fold(Scope::default(), |acc, f| acc.concat(&f.scope));
        let mut parts = Vec::new();
        if let Some(w) = selection {
            let f = compile(w, &all)?;
            if f.ty() != DataType::Boolean {
                return Err(SqlError::Type(format!(
                    "WHERE needs a BOOLEAN, got {}",
                    f.ty()
                )));
            }
            conjuncts(f, &mut parts);
        }
        let mut it = froms.into_iter();
        let mut acc = it.next().expect("several FROM items");
        for right in it {
            let start = acc.scope.cols.len();
            let end = start + right.scope.cols.len();
            let (on, rest): (Vec<_>, Vec<_>) = parts.into_iter().partition(|c| {
                matches!(c.column_range(), Some((lo, hi)) if lo < start && (start..end).contains(&hi))
            });
            parts = rest;
            acc = self.join(acc, right, JoinKind::Inner, on)?;
        }
        let filter = parts
            .into_iter()
            .reduce(|a, b| Scalar::And(Box::new(a), Box::new(b)));
        Ok((acc, filter))
    }

    /// Joins `left` and `right` on `conds`, conjuncts over the columns of
    /// both (left's first): a regular join, or an interval join when an
    /// inner join of append-only inputs bounds one side's event time by
    /// the other's.
    fn join(
        &mut self,
        left: From,
        right: From,
        kind: JoinKind,
        conds: Vec<Scalar>,
    ) -> Result<From> {
        check_joinable(&left, &right)?;
        let (left, right) = (as_table(left)?, as_table(right)?);
        let left_width = left.scope.cols.len();
        let mut fields: Vec<Field> = left
            .scope
            .cols
            .iter()
            .chain(&right.scope.cols)
            .map(|c| c.field.clone())
            .collect();
        let append_only = !left.plan.updating && !right.plan.updating;
        let (on, time) = condition::split(conds, &fields, left_width, append_only)?;
        if let Some(b) = &time {
            if b.lower > b.upper {
                return Err(SqlError::Plan(format!(
                    "the interval join's bounds leave no interval: {} ms <= `{}` - `{}` <= {} ms",
                    b.lower,
                    fields[left_width + b.right_time].name,
                    fields[b.left_time].name,
                    b.upper
                )));
            }
        }
        for (i, f) in fields.iter_mut().enumerate() {
            let outer = if i < left_width {
                kind.right_outer()
            } else {
                kind.left_outer()
            };
            f.nullable |= outer;
            // As Flink: time attributes stay event-time attributes through
            // an interval join (its watermark is held back by its bounds),
            // and become plain timestamps after a regular join (its state
            // holds rows of any age, so its output has no watermark to go
            // by).
            // An outer interval join's rows carry no time attribute: a
            // padded row has none, and it comes as late as the bounds.
            f.rowtime &= time.is_some() && kind == JoinKind::Inner;
        }
        // The side a scalar subquery's rewrite joins (`__weir_sq..`).
        let scalar_side = right
            .scope
            .cols
            .first()
            .and_then(|c| c.qualifier.as_deref())
            .is_some_and(|q| q.starts_with(&format!("{HIDDEN}sq")));
        let cols = left
            .scope
            .cols
            .into_iter()
            .chain(right.scope.cols)
            .zip(&fields)
            .map(|(c, f)| ScopeCol {
                qualifier: c.qualifier,
                field: f.clone(),
                hidden: c.hidden,
            })
            .collect();
        // Both sides windowed and joined on their window bounds: Flink's
        // window join (append-only, state freed when the window ends).
        let window = match (&time, append_only) {
            (None, true) => window_ends(&left.plan, &right.plan, &on, left_width, &fields),
            _ => None,
        };
        let updating =
            time.is_none() && window.is_none() && (kind != JoinKind::Inner || !append_only);
        let (l, r) = if on.left_keys.iter().all(|k| k.column_range().is_none()) {
            // Without keys every change of a side re-joins all the other
            // side's rows: an updating side (a one-row aggregate of a
            // scalar subquery) goes through a mini-batch.
            (mini_batch(left.plan), mini_batch(right.plan))
        } else if scalar_side {
            // A correlated scalar subquery's aggregate per key: each of
            // its changes re-joins the key's rows, so it is batched too.
            (left.plan, mini_batch(right.plan))
        } else {
            (left.plan, right.plan)
        };
        let (l, r) = (Box::new(l), Box::new(r));
        if let Some(ends) = window {
            return Ok(From {
                plan: Plan {
                    node: Node::WindowJoin {
                        left: l,
                        right: r,
                        kind,
                        on,
                        ends,
                    },
                    schema: Schema::new(fields),
                    updating,
                },
                scope: Scope { cols },
                window: None,
                partition: Vec::new(),
            });
        }
        let node = match time {
            Some(bounds) => Node::IntervalJoin {
                left: l,
                right: r,
                kind,
                on,
                bounds,
            },
            None => Node::Join {
                left: l,
                right: r,
                kind,
                on,
            },
        };
        Ok(From {
            plan: Plan {
                node,
                schema: Schema::new(fields),
                updating,
            },
            scope: Scope { cols },
            window: None,
            partition: Vec::new(),
        })
    }
}

impl Planner<'_> {
    /// `left JOIN r FOR SYSTEM_TIME AS OF left.ts ON ..`: an event-time
    /// temporal join against `r`, a table with a PRIMARY KEY and a
    /// WATERMARK (a versioned table), on its primary key.
    fn temporal_join(
        &mut self,
        left: From,
        relation: &TableFactor,
        version: &ast::TableVersion,
        kind: JoinKind,
        cond: &Expr,
    ) -> Result<From> {
        let ast::TableVersion::ForSystemTimeAsOf(at) = version else {
            return Err(SqlError::Unsupported(format!(
                "`{version}` (FOR SYSTEM_TIME AS OF is)"
            )));
        };
        let outer = match kind {
            JoinKind::Inner => false,
            JoinKind::Left => true,
            other => {
                return Err(SqlError::Unsupported(format!(
                    "a {other} temporal join (INNER and LEFT are)"
                )))
            }
        };
        let mut plain = relation.clone();
        if let TableFactor::Table { version, .. } = &mut plain {
            *version = None;
        }
        let right = self.table_factor(&plain)?;
        let table = match &right.plan.node {
            Node::Scan(t) => t.clone(),
            _ => {
                return Err(SqlError::Unsupported(
                    "FOR SYSTEM_TIME AS OF a view or subquery (a versioned table is a table with a PRIMARY KEY and a WATERMARK)".into(),
                ))
            }
        };
        let (Some(pk), Some((right_time, _))) = (&table.primary_key, table.watermark) else {
            return Err(SqlError::Plan(format!(
                "table `{}` is not versioned: a temporal join needs its PRIMARY KEY (..) NOT ENFORCED and a WATERMARK",
                table.name
            )));
        };
        let left_time = compile(at, &left.scope)?.as_column().ok_or_else(|| {
            SqlError::Unsupported(format!(
                "FOR SYSTEM_TIME AS OF `{at}`: a time attribute column of the left table"
            ))
        })?;
        let lf = &left.scope.cols[left_time].field;
        if !lf.rowtime {
            return Err(SqlError::Unsupported(format!(
                "FOR SYSTEM_TIME AS OF `{at}`: `{}` is not an event-time attribute (processing-time temporal joins are not supported)",
                lf.name
            )));
        }
        if left.plan.updating || right.plan.updating {
            return Err(SqlError::Unsupported(
                "a temporal join of an updating input".into(),
            ));
        }
        let (left, right) = (as_table(left)?, as_table(right)?);
        let left_width = left.scope.cols.len();
        let scope = left.scope.concat(&right.scope);
        let c = compile(cond, &scope)?;
        if c.ty() != DataType::Boolean {
            return Err(SqlError::Type(format!(
                "a join's ON needs a BOOLEAN, got {}",
                c.ty()
            )));
        }
        let mut parts = Vec::new();
        conjuncts(c, &mut parts);
        let mut fields: Vec<Field> = scope.cols.iter().map(|c| c.field.clone()).collect();
        let (on, _) = condition::split(parts, &fields, left_width, false)?;
        let keyed: Vec<usize> = on.right_keys.iter().filter_map(Scalar::as_column).collect();
        if !pk.iter().all(|k| keyed.contains(k)) {
            return Err(SqlError::Plan(format!(
                "a temporal join on `{}` must join on its whole primary key ({})",
                table.name,
                pk.iter()
                    .map(|&k| table.schema.fields[k].name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for (i, f) in fields.iter_mut().enumerate() {
            if i >= left_width {
                f.nullable |= outer;
                f.rowtime = false;
            }
        }
        let cols = scope
            .cols
            .into_iter()
            .zip(&fields)
            .map(|(c, f)| ScopeCol {
                qualifier: c.qualifier,
                field: f.clone(),
                hidden: c.hidden,
            })
            .collect();
        Ok(From {
            plan: Plan {
                node: Node::TemporalJoin {
                    left: Box::new(left.plan),
                    right: Box::new(right.plan),
                    outer,
                    on,
                    left_time,
                    right_time,
                },
                schema: Schema::new(fields),
                updating: false,
            },
            scope: Scope { cols },
            window: None,
            partition: Vec::new(),
        })
    }
}

/// The `window_end` columns of the two sides (right's in its own row) when
/// both are windowed and `on` joins them on `window_start` and
/// `window_end`.
fn window_ends(
    left: &Plan,
    right: &Plan,
    on: &crate::join::JoinOn,
    left_width: usize,
    fields: &[Field],
) -> Option<[usize; 2]> {
    // Bounds followed through projections and renames, as Flink's
    // window properties (Nexmark q5 joins `starttime` and `endtime`).
    if let (Some(l), Some(r)) = (window_props(left), window_props(right)) {
        let joined = |a: usize, b: usize| {
            on.left_keys
                .iter()
                .zip(&on.right_keys)
                .any(|(lk, rk)| lk.as_column() == Some(a) && rk.as_column() == Some(b))
        };
        if joined(l.start, r.start) && joined(l.end, r.end) {
            return Some([l.end, r.end]);
        }
    }
    if !windowed(left) || !windowed(right) {
        return None;
    }
    let named = |n: &str| -> Option<[usize; 2]> {
        on.left_keys.iter().zip(&on.right_keys).find_map(|(l, r)| {
            let (l, r) = (l.as_column()?, r.as_column()?);
            let both = fields[l].name.eq_ignore_ascii_case(n)
                && fields[left_width + r].name.eq_ignore_ascii_case(n)
                && fields[l].ty.is_timestamp();
            both.then_some([l, r])
        })
    };
    named("window_start")?;
    named("window_end")
}

/// A windowing TVF joined is read as a table of its rows with their
/// windows (Flink's window join joins two on `window_start` and
/// `window_end`).
fn as_table(from: From) -> Result<From> {
    match from.window {
        Some((window, time)) => super::window_table(from, window, time),
        None => Ok(from),
    }
}

/// Whether two FROM items may be joined: no table name or alias in both.
fn check_joinable(left: &From, right: &From) -> Result<()> {
    for q in right
        .scope
        .cols
        .iter()
        .filter_map(|c| c.qualifier.as_deref())
    {
        let twice = left.scope.cols.iter().any(|c| {
            c.qualifier
                .as_deref()
                .is_some_and(|l| l.eq_ignore_ascii_case(q))
        });
        if twice {
            return Err(SqlError::Plan(format!(
                "`{q}` names two inputs of a join: give one an alias (`{q} AS {q}2`)"
            )));
        }
    }
    Ok(())
}

/// The column names a NATURAL JOIN joins on: those of `left` that
/// `right` has too (case-insensitively), bare names of both.
fn common_names(left: &Scope, right: &Scope) -> Vec<String> {
    let visible = |s: &Scope| -> Vec<String> {
        s.cols
            .iter()
            .filter(|c| !c.hidden && !c.field.name.starts_with(HIDDEN))
            .map(|c| c.field.name.clone())
            .collect()
    };
    let right = visible(right);
    let mut names: Vec<String> = Vec::new();
    for n in visible(left) {
        if right.iter().any(|r| r.eq_ignore_ascii_case(&n))
            && !names.iter().any(|m| m.eq_ignore_ascii_case(&n))
        {
            names.push(n);
        }
    }
    names
}

/// A join's keys and residual condition as EXPLAIN shows them.
pub(super) fn join_keys(left: &Plan, right: &Plan, on: &JoinOn) -> String {
    let name = |p: &Plan, k: &Scalar| match k.as_column() {
        Some(i) => p.schema.fields[i].name.clone(),
        None => "expr".into(),
    };
    let keys = on
        .left_keys
        .iter()
        .zip(&on.right_keys)
        .map(|(l, r)| format!("{} = {}", name(left, l), name(right, r)))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "keys=[{keys}]{}",
        if on.residual.is_some() {
            ", where=[..]"
        } else {
            ""
        }
    )
}

/// The processing time a mini-batch holds changes at most (ms).
const MINI_BATCH_MS: i64 = 200;

/// `plan` through a [`crate::rank::MiniBatch`] when it is updating: its
/// changes held [`MINI_BATCH_MS`], or, when its sources end by themselves
/// (a bounded input), until its input ends (one batch: the other side is
/// re-joined once, not once per 200 ms of a long run).
fn mini_batch(plan: Plan) -> Plan {
    if !plan.updating {
        return plan;
    }
    let interval_ms = if plan.is_bounded() {
        i64::MAX
    } else {
        MINI_BATCH_MS
    };
    let schema = plan.schema.clone();
    Plan {
        node: Node::Rank {
            input: Box::new(plan),
            rank: crate::rank::Rank {
                partition: Vec::new(),
                row_number: None,
                kind: crate::rank::RankKind::MiniBatch { interval_ms },
            },
        },
        schema,
        updating: true,
    }
}
