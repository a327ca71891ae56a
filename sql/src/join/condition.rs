//! A join's condition split for its operator (Flink's `JoinInfo` and
//! `IntervalJoinUtil`): the conjuncts `l = r` with `l` over the left
//! input's columns and `r` over the right's are the equi-join keys (both
//! inputs are keyed by them); two conjuncts that bound one side's
//! event-time attribute by the other's make an interval join; every other
//! conjunct is a residual predicate over the joined row.

use std::fmt;

use crate::error::Result;
use crate::expr::{Arith, Cmp, Scalar};
use crate::types::{least_common_type, DataType, Field};
use crate::value::Value;

/// Which rows a join keeps (Flink's `FlinkJoinType` of the streaming
/// joins).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    /// `[INNER] JOIN`: matching pairs only.
    Inner,
    /// `LEFT [OUTER] JOIN`: also every left row without a match, with
    /// NULLs for the right's columns.
    Left,
    /// `RIGHT [OUTER] JOIN`: also every right row without a match.
    Right,
    /// `FULL [OUTER] JOIN`: both.
    Full,
}

impl JoinKind {
    /// Whether the left input's unmatched rows are kept.
    pub fn left_outer(self) -> bool {
        matches!(self, JoinKind::Left | JoinKind::Full)
    }

    /// Whether the right input's unmatched rows are kept.
    pub fn right_outer(self) -> bool {
        matches!(self, JoinKind::Right | JoinKind::Full)
    }
}

impl fmt::Display for JoinKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            JoinKind::Inner => "InnerJoin",
            JoinKind::Left => "LeftOuterJoin",
            JoinKind::Right => "RightOuterJoin",
            JoinKind::Full => "FullOuterJoin",
        })
    }
}

/// A join's condition as its operator uses it.
#[derive(Clone, Debug)]
pub struct JoinOn {
    /// The left side of each equality, over the left input's row.
    pub left_keys: Vec<Scalar>,
    /// The right side of each equality, over the right input's row (of
    /// the left key's type: both are cast to their common type, so equal
    /// values make equal keys).
    pub right_keys: Vec<Scalar>,
    /// The other conjuncts, over the joined row (left columns, then
    /// right).
    pub residual: Option<Scalar>,
}

/// An interval join's bounds: a left row at `tL` (column `left_time`)
/// joins a right row at `tR` (column `right_time` of the right row) when
/// `lower <= tR - tL <= upper` (ms, both inclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeBounds {
    /// The left row's event-time column.
    pub left_time: usize,
    /// The right row's event-time column (in the right row).
    pub right_time: usize,
    /// The least `tR - tL`.
    pub lower: i64,
    /// The largest `tR - tL`.
    pub upper: i64,
}

/// The condition `conjuncts` of a join of a left input of `left_width`
/// columns, over the joined row whose columns are `fields` (the inputs'
/// own, time attributes marked). `interval`: whether the join may be an
/// interval join (an inner join of append-only inputs).
///
/// When no conjunct is an equality between the two sides, both inputs
/// are keyed by one constant (every pair on one subtask, as Flink's joins
/// without keys run on a single parallel instance).
pub fn split(
    conjuncts: Vec<Scalar>,
    fields: &[Field],
    left_width: usize,
    interval: bool,
) -> Result<(JoinOn, Option<TimeBounds>)> {
    let side = |s: &Scalar| -> Option<Side> {
        let (lo, hi) = s.column_range()?;
        if hi < left_width {
            Some(Side::Left)
        } else if lo >= left_width {
            Some(Side::Right)
        } else {
            None
        }
    };
    // `(a = b AND x) OR (a = b AND y)`: the factors every disjunct holds
    // are conjuncts too (as Calcite pulls them out), so such a join is
    // keyed by `a = b` rather than run without keys.
    let mut conjuncts = conjuncts;
    let factors: Vec<Scalar> = conjuncts.iter().flat_map(common_factors).collect();
    conjuncts.extend(factors);
    let mut on = JoinOn {
        left_keys: Vec::new(),
        right_keys: Vec::new(),
        residual: None,
    };
    let mut rest = Vec::new();
    // (conjunct's index in `rest`, bound) of each time bound seen.
    let mut bounds: Vec<(usize, Bound)> = Vec::new();
    for c in conjuncts {
        if let Scalar::Cmp(op, a, b) = &c {
            if *op == Cmp::Eq {
                let pair = match (side(a), side(b)) {
                    (Some(Side::Left), Some(Side::Right)) => Some((a, b)),
                    (Some(Side::Right), Some(Side::Left)) => Some((b, a)),
                    _ => None,
                };
                if let Some((l, r)) = pair {
                    if let Some(ty) = key_type(l.ty(), r.ty()) {
                        on.left_keys.push(cast_to((**l).clone(), ty));
                        on.right_keys.push(cast_to(r.shift_columns(left_width), ty));
                        continue;
                    }
                }
            }
            if let Some(bound) = time_bound(*op, a, b, fields, left_width) {
                bounds.push((rest.len(), bound));
            }
        }
        rest.push(c);
    }
    if on.left_keys.is_empty() {
        // No equality between the sides (a cross or non-equi join): one
        // constant key, so every row meets every row of the other side on
        // one subtask, as Flink runs a join without keys (a singleton).
        let key = Scalar::Literal(Value::Bool(true), DataType::Boolean);
        on.left_keys.push(key.clone());
        on.right_keys.push(key);
    }
    let mut time = None;
    if interval {
        if let Some((used, tb)) = interval_bounds(&bounds) {
            time = Some(tb);
            let mut i = 0;
            rest.retain(|_| {
                let keep = !used.contains(&i);
                i += 1;
                keep
            });
        }
    }
    on.residual = rest
        .into_iter()
        .reduce(|a, b| Scalar::And(Box::new(a), Box::new(b)));
    Ok((on, time))
}

/// The conjuncts that every disjunct of `c` (an OR) holds; none for
/// another condition.
fn common_factors(c: &Scalar) -> Vec<Scalar> {
    fn disjuncts(s: &Scalar, out: &mut Vec<Scalar>) {
        match s {
            Scalar::Or(a, b) => {
                disjuncts(a, out);
                disjuncts(b, out);
            }
            other => out.push(other.clone()),
        }
    }
    if !matches!(c, Scalar::Or(..)) {
        return Vec::new();
    }
    let mut ds = Vec::new();
    disjuncts(c, &mut ds);
    // Each disjunct's conjuncts, compared by their debug text (an
    // equality's operands in either order).
    let text = |c: &Scalar| match c {
        Scalar::Cmp(Cmp::Eq, a, b) => {
            let (a, b) = (format!("{a:?}"), format!("{b:?}"));
            format!("Eq({}, {})", a.clone().min(b.clone()), a.max(b))
        }
        other => format!("{other:?}"),
    };
    let parts: Vec<Vec<(String, Scalar)>> = ds
        .into_iter()
        .map(|d| {
            let mut cs = Vec::new();
            conjuncts(d, &mut cs);
            cs.into_iter().map(|c| (text(&c), c)).collect()
        })
        .collect();
    let Some((first, rest)) = parts.split_first() else {
        return Vec::new();
    };
    first
        .iter()
        .filter(|(text, _)| rest.iter().all(|p| p.iter().any(|(t, _)| t == text)))
        .map(|(_, c)| c.clone())
        .collect()
}

/// The conjuncts of a condition (`a AND b AND c`).
pub fn conjuncts(s: Scalar, out: &mut Vec<Scalar>) {
    match s {
        Scalar::And(a, b) => {
            conjuncts(*a, out);
            conjuncts(*b, out);
        }
        other => out.push(other),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Left,
    Right,
}

/// The type both sides of a key equality are cast to: a key is compared
/// by its values, so `INT = BIGINT` keys both as BIGINT.
fn key_type(a: DataType, b: DataType) -> Option<DataType> {
    if a == b {
        return Some(a);
    }
    least_common_type(a, b)
}

fn cast_to(s: Scalar, ty: DataType) -> Scalar {
    if s.ty() == ty {
        s
    } else {
        Scalar::Cast(Box::new(s), ty, false)
    }
}

/// One bound on `tR - tL`.
#[derive(Clone, Copy, Debug)]
struct Bound {
    left_time: usize,
    right_time: usize,
    /// `tR - tL >= value` (lower) or `<= value` (upper).
    lower: bool,
    value: i64,
}

/// `a op b` as a bound on `tR - tL`, if `a` and `b` are event-time
/// attributes of different sides, each plus or minus an interval literal.
fn time_bound(
    op: Cmp,
    a: &Scalar,
    b: &Scalar,
    fields: &[Field],
    left_width: usize,
) -> Option<Bound> {
    let (ca, da) = time_expr(a, fields)?;
    let (cb, db) = time_expr(b, fields)?;
    // `tX + dx op tY + dy`. With X the left: `tR - tL op' dx - dy`, op'
    // the flipped comparison; with X the right: `tR - tL op dy - dx`.
    let (left_time, right_time, op, value) = if ca < left_width && cb >= left_width {
        (ca, cb - left_width, flip(op)?, da.checked_sub(db)?)
    } else if ca >= left_width && cb < left_width {
        (cb, ca - left_width, op, db.checked_sub(da)?)
    } else {
        return None;
    };
    let (lower, value) = match op {
        Cmp::Ge => (true, value),
        Cmp::Gt => (true, value.checked_add(1)?),
        Cmp::Le => (false, value),
        Cmp::Lt => (false, value.checked_sub(1)?),
        _ => return None,
    };
    Some(Bound {
        left_time,
        right_time,
        lower,
        value,
    })
}

fn flip(op: Cmp) -> Option<Cmp> {
    Some(match op {
        Cmp::Ge => Cmp::Le,
        Cmp::Gt => Cmp::Lt,
        Cmp::Le => Cmp::Ge,
        Cmp::Lt => Cmp::Gt,
        _ => return None,
    })
}

/// `col`, `col + INTERVAL ..` or `col - INTERVAL ..` of an event-time
/// attribute: the column and the offset (ms).
fn time_expr(s: &Scalar, fields: &[Field]) -> Option<(usize, i64)> {
    match s {
        Scalar::Column(i, _) => fields.get(*i).filter(|f| f.rowtime).map(|_| (*i, 0)),
        Scalar::Arith(op @ (Arith::Add | Arith::Sub), x, y, _) => {
            if let Some(ms) = interval_literal(y) {
                let (c, d) = time_expr(x, fields)?;
                let d = if *op == Arith::Add {
                    d.checked_add(ms)?
                } else {
                    d.checked_sub(ms)?
                };
                return Some((c, d));
            }
            let ms = interval_literal(x).filter(|_| *op == Arith::Add)?;
            let (c, d) = time_expr(y, fields)?;
            Some((c, d.checked_add(ms)?))
        }
        _ => None,
    }
}

fn interval_literal(s: &Scalar) -> Option<i64> {
    match s {
        Scalar::Literal(Value::Interval(ms), _) => Some(*ms),
        Scalar::Neg(x, _) => interval_literal(x)?.checked_neg(),
        _ => None,
    }
}

/// The first pair of time attributes bounded both ways: the indices of
/// the conjuncts used and the bounds (the tightest of each kind).
fn interval_bounds(bounds: &[(usize, Bound)]) -> Option<(Vec<usize>, TimeBounds)> {
    for (_, first) in bounds {
        let same: Vec<&(usize, Bound)> = bounds
            .iter()
            .filter(|(_, b)| b.left_time == first.left_time && b.right_time == first.right_time)
            .collect();
        let lower = same
            .iter()
            .filter(|(_, b)| b.lower)
            .map(|(_, b)| b.value)
            .max();
        let upper = same
            .iter()
            .filter(|(_, b)| !b.lower)
            .map(|(_, b)| b.value)
            .min();
        if let (Some(lower), Some(upper)) = (lower, upper) {
            return Some((
                same.iter().map(|(i, _)| *i).collect(),
                TimeBounds {
                    left_time: first.left_time,
                    right_time: first.right_time,
                    lower,
                    upper,
                },
            ));
        }
    }
    None
}
