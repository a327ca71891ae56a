//! `UNION`, `INTERSECT` and `EXCEPT` (distinct), planned as Flink plans
//! them, over `UNION ALL` and a group aggregation, by rewriting the query:
//!
//! - `a UNION b` is `SELECT DISTINCT * FROM (a UNION ALL b)`;
//! - `a INTERSECT b` tags each side's rows (`1, 0` and `0, 1`), unions
//!   them, groups by every column and keeps the groups with rows from
//!   both sides (`HAVING SUM(l) > 0 AND SUM(r) > 0`);
//! - `a EXCEPT b` keeps those with rows from `a` only.
//!
//! The sides' columns widen to their least common type, as UNION ALL's
//! do. Each is an updating result (a group aggregation), as Flink's. Rows are
//! equal when every column is equal, NULLs included, as grouping compares
//! them. `INTERSECT ALL` and `EXCEPT ALL` (multiplicities) are refused.

use sqlparser::ast::{SetExpr, SetOperator, SetQuantifier};
use sqlparser::parser::Parser;

use super::{Plan, Planner};
use crate::dialect::FlinkDialect;
use crate::error::{Result, SqlError};

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
        if !distinct {
            return Err(SqlError::Unsupported(format!(
                "{op} ALL (multiplicities): {op} (distinct) and UNION ALL are supported"
            )));
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
        self.query(&q)
    }
}
