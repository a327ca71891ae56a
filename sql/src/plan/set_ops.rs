//! `UNION`, `INTERSECT` and `EXCEPT` (distinct), planned as Flink plans
//! them, over `UNION ALL` and a group aggregation, by rewriting the query:
//!
//! - `a UNION b` is `SELECT DISTINCT * FROM (a UNION ALL b)`;
//! - `a INTERSECT b` tags each side's rows (`1, 0` and `0, 1`), unions
//!   them, groups by every column and keeps the groups with rows from
//!   both sides (`HAVING SUM(l) > 0 AND SUM(r) > 0`);
//! - `a EXCEPT b` keeps those with rows from `a` only;
//! - `a INTERSECT ALL b` and `a EXCEPT ALL b` count each row's copies on
//!   both sides in the same grouping and emit the row `LEAST(l, r)` times
//!   (`l - r` times for EXCEPT ALL) through [`Node::Replicate`], as
//!   Flink's `ReplicateRows` table function over the aggregate (see
//!   [`crate::replicate`]).
//!
//! The sides' columns widen to their least common type, as UNION ALL's
//! do. Each is an updating result (a group aggregation), as Flink's. Rows are
//! equal when every column is equal, NULLs included, as grouping compares
//! them.

use sqlparser::ast::{SetExpr, SetOperator, SetQuantifier};
use sqlparser::parser::Parser;

use super::{Node, Plan, Planner};
use crate::dialect::FlinkDialect;
use crate::error::{Result, SqlError};
use crate::types::Schema;

impl Planner<'_> {
    pub(super) fn set_operation(
        &mut self,
        op: &SetOperator,
        quantifier: &SetQuantifier,
        left: &SetExpr,
        right: &SetExpr,
    ) -> Result<Plan> {
        let distinct = match quantifier {
            SetQuantifier::None | SetQuantifier::Distinct => true,
            SetQuantifier::All => false,
            other => {
                return Err(SqlError::Unsupported(format!("{op} {other}")));
            }
        };
        if !distinct && matches!(op, SetOperator::Union) {
            // (the parser's UNION ALL does not come here)
            return Err(SqlError::Plan("UNION ALL as a set operation".into()));
        }
        // The columns, named as the left side names them.
        let l = self.set_expr(left)?;
        let r = self.set_expr(right)?;
        // The sides must meet in common types; the UNION ALL the query is
        // rewritten over widens them.
        super::widen::union_types(&op.to_string(), &l, &r)?;
        let cols: Vec<String> = l
            .schema
            .fields
            .iter()
            .map(|f| format!("`{}`", f.name.replace('`', "``")))
            .collect();
        let list = cols.join(", ");
        // The right side renamed to the left side's names.
        let renamed: Vec<String> = r
            .schema
            .fields
            .iter()
            .zip(&cols)
            .map(|(f, c)| format!("`{}` AS {c}", f.name.replace('`', "``")))
            .collect();
        let right_text = format!(
            "SELECT {} FROM ({right}) AS __weir_right",
            renamed.join(", ")
        );
        let text = match op {
            SetOperator::Union => format!(
                "SELECT DISTINCT {list} FROM ({left} UNION ALL {right_text}) AS __weir_union"
            ),
            SetOperator::Intersect | SetOperator::Except if !distinct => {
                let copies = if matches!(op, SetOperator::Intersect) {
                    "LEAST(SUM(__weir_l), SUM(__weir_r))"
                } else {
                    "SUM(__weir_l) - SUM(__weir_r)"
                };
                format!(
                    "SELECT {list}, {copies} AS __weir_copies FROM (
                       SELECT {list}, 1 AS __weir_l, 0 AS __weir_r FROM ({left}) AS __weir_a
                       UNION ALL
                       SELECT {list}, 0 AS __weir_l, 1 AS __weir_r FROM ({right_text}) AS __weir_b
                     ) AS __weir_tagged GROUP BY {list}"
                )
            }
            SetOperator::Intersect | SetOperator::Except => {
                let keep = if matches!(op, SetOperator::Intersect) {
                    "SUM(__weir_l) > 0 AND SUM(__weir_r) > 0"
                } else {
                    "SUM(__weir_l) > 0 AND SUM(__weir_r) = 0"
                };
                format!(
                    "SELECT {list} FROM (
                       SELECT {list}, 1 AS __weir_l, 0 AS __weir_r FROM ({left}) AS __weir_a
                       UNION ALL
                       SELECT {list}, 0 AS __weir_l, 1 AS __weir_r FROM ({right_text}) AS __weir_b
                     ) AS __weir_tagged GROUP BY {list} HAVING {keep}"
                )
            }
            other => return Err(SqlError::Unsupported(format!("{other}"))),
        };
        let q = Parser::new(&FlinkDialect::default())
            .try_with_sql(&text)
            .and_then(|mut p| p.parse_query())
            .map_err(|e| SqlError::Plan(format!("{op} as a group aggregation: {e}")))?;
        let counted = self.query(&q)?;
        if distinct {
            return Ok(counted);
        }
        let width = counted.schema.len() - 1;
        Ok(Plan {
            schema: Schema::new(counted.schema.fields[..width].to_vec()),
            updating: true,
            node: Node::Replicate {
                input: Box::new(counted),
            },
        })
    }
}
