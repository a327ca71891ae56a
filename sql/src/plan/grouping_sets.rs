//! `GROUP BY GROUPING SETS (..)`, `ROLLUP (..)` and `CUBE (..)`, as Flink
//! runs them: one group aggregation per grouping set, its keys the GROUP
//! BY expressions with those outside the set NULL, and the results in one
//! UNION ALL. `GROUPING(a, ..)` / `GROUPING_ID(a, ..)` give each row the
//! bits of the expressions its set does not group by (the first argument
//! the most significant bit). Of a window aggregation (`GROUP BY
//! window_start, window_end, GROUPING SETS (..)`), each set is a window
//! aggregation holding both window bounds; not of SESSION windows. A
//! parenthesized list outside the sets is its expressions (`GROUP BY (a,
//! b)`, and `()` none), as Calcite reads it.

use sqlparser::ast::{self, Expr, FunctionArg, FunctionArgExpr, Select};

use super::{Node, Plan, Planner};
use crate::error::{Result, SqlError};
use crate::expr::Scalar;
use crate::script::object_name;
use crate::types::DataType;
use crate::value::Value;

/// One element of GROUP BY: the grouping sets it stands for, each a list
/// of expressions.
fn sets_of(e: &Expr) -> Vec<Vec<Expr>> {
    match e {
        Expr::GroupingSets(sets) => sets.clone(),
        Expr::Rollup(items) => (0..=items.len())
            .rev()
            .map(|n| items[..n].concat())
            .collect(),
        Expr::Cube(items) => {
            let n = items.len();
            (0..1u64 << n)
                .rev()
                .map(|mask| {
                    (0..n)
                        .filter(|i| mask & (1 << (n - 1 - i)) != 0)
                        .flat_map(|i| items[i].clone())
                        .collect()
                })
                .collect()
        }
        plain => vec![vec![plain.clone()]],
    }
}

/// GROUP BY's items with a parenthesized list spelled out, as Calcite
/// reads them: `GROUP BY (a, b)` is `GROUP BY a, b` and `GROUP BY ()` (the
/// empty grouping set) groups by nothing, one group of all rows.
pub(super) fn flatten(group_by: &[Expr]) -> Vec<Expr> {
    let mut out = Vec::with_capacity(group_by.len());
    for e in group_by {
        match e {
            Expr::Tuple(items) => out.extend(flatten(items)),
            e => out.push(e.clone()),
        }
    }
    out
}

/// GROUP BY's expressions and its grouping sets, each a flag per
/// expression.
pub(super) type Expanded = (Vec<Expr>, Vec<Vec<bool>>);

/// GROUP BY's expressions and grouping sets, or `None` for a plain GROUP
/// BY.
pub(super) fn expand(group_by: &[Expr]) -> Result<Option<Expanded>> {
    if !group_by
        .iter()
        .any(|e| matches!(e, Expr::GroupingSets(_) | Expr::Rollup(_) | Expr::Cube(_)))
    {
        return Ok(None);
    }
    // The cross product of the elements' sets.
    let mut sets: Vec<Vec<Expr>> = vec![Vec::new()];
    for e in group_by {
        let mut next = Vec::new();
        for s in &sets {
            for t in sets_of(e) {
                let mut u = s.clone();
                u.extend(t);
                next.push(u);
            }
        }
        sets = next;
        if sets.len() > 4096 {
            return Err(SqlError::Plan("more than 4096 grouping sets".into()));
        }
    }
    let mut all: Vec<Expr> = Vec::new();
    for s in &sets {
        for e in s {
            if !all.contains(e) {
                all.push(e.clone());
            }
        }
    }
    let flags = sets
        .iter()
        .map(|s| all.iter().map(|e| s.contains(e)).collect())
        .collect();
    Ok(Some((all, flags)))
}

/// `GROUPING(a, ..)` or `GROUPING_ID(a, ..)` of a row of grouping set `set`
/// (over `keys`): a BIGINT constant; `None` for another expression.
pub(super) fn grouping_call(
    e: &Expr,
    keys: &[Expr],
    set: Option<&[bool]>,
) -> Result<Option<Scalar>> {
    let Expr::Function(f) = e else {
        return Ok(None);
    };
    let name = object_name(&f.name).to_ascii_uppercase();
    if name != "GROUPING" && name != "GROUPING_ID" {
        return Ok(None);
    }
    let ast::FunctionArguments::List(list) = &f.args else {
        return Err(SqlError::Type(format!("{name} needs arguments")));
    };
    let mut bits = 0i64;
    for a in &list.args {
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) = a else {
            return Err(SqlError::Type(format!("{name}: the argument `{a}`")));
        };
        let i = keys.iter().position(|k| k == x).ok_or_else(|| {
            SqlError::Plan(format!("{name}({x}): `{x}` is not a GROUP BY expression"))
        })?;
        let absent = set.is_some_and(|s| !s[i]);
        bits = bits << 1 | i64::from(absent);
    }
    Ok(Some(Scalar::Literal(Value::BigInt(bits), DataType::BigInt)))
}

impl Planner<'_> {
    /// `s` once per grouping set, in one UNION ALL.
    pub(super) fn grouping_sets(
        &mut self,
        s: &Select,
        all: Vec<Expr>,
        sets: Vec<Vec<bool>>,
    ) -> Result<Plan> {
        let mut plain = s.clone();
        plain.group_by = ast::GroupByExpr::Expressions(all, Vec::new());
        let mut plans = Vec::new();
        for set in sets {
            self.grouping_set = Some(set);
            let p = self.select(&plain);
            self.grouping_set = None;
            plans.push(p?);
        }
        let schema = plans[0].schema.clone();
        if plans.iter().any(|p| p.schema.types() != schema.types()) {
            return Err(SqlError::Plan(
                "grouping sets give rows of different types".into(),
            ));
        }
        let updating = plans.iter().any(|p| p.updating);
        Ok(Plan {
            node: Node::Union(plans),
            schema,
            updating,
        })
    }
}
