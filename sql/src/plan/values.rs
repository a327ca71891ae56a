//! `VALUES (..), (..)`: a bounded table of literal rows, as Flink's
//! `Values`: in FROM (`(VALUES (1, 'a'), (2, 'b')) AS v(id, name)`), as a
//! query, or as `INSERT INTO t VALUES ..`. Each column's type is the
//! least common type of its expressions' ([`least_common_type`]: INT <
//! BIGINT < DECIMAL < DOUBLE; a NULL takes the others' type); the
//! columns are named `EXPR$0`, `EXPR$1`, .. unless an alias names them.
//! Read through a rescalable sequence source (the row number its split
//! position).

use std::sync::Arc;

use sqlparser::ast;

use super::{Node, Plan, Planner};
use crate::error::{Result, SqlError};
use crate::expr::{cast, compile, Scalar, Scope};
use crate::types::{least_common_type, DataType, Field, Schema};
use crate::value::{Row, Value};

impl Planner<'_> {
    /// The rows of `VALUES`.
    pub(super) fn values(&mut self, v: &ast::Values) -> Result<Plan> {
        let scope = Scope::default();
        let mut rows: Vec<Vec<Scalar>> = Vec::new();
        for r in &v.rows {
            rows.push(
                r.iter()
                    .map(|e| compile(e, &scope))
                    .collect::<Result<_>>()?,
            );
        }
        let width = rows.first().map_or(0, Vec::len);
        if width == 0 || rows.iter().any(|r| r.len() != width) {
            return Err(SqlError::Plan(
                "VALUES needs rows of one width, at least one column".into(),
            ));
        }
        let is_null = |s: &Scalar| matches!(s, Scalar::Literal(Value::Null, _));
        let mut types = Vec::with_capacity(width);
        for c in 0..width {
            let mut ty: Option<DataType> = None;
            for r in &rows {
                if is_null(&r[c]) {
                    continue;
                }
                let t = r[c].ty();
                ty = Some(match ty {
                    None => t,
                    Some(u) => least_common_type(u, t).ok_or_else(|| {
                        SqlError::Type(format!("VALUES column {}: {u} and {t} do not mix", c + 1))
                    })?,
                });
            }
            types.push(ty.unwrap_or(DataType::String));
        }
        let empty = Row::new(Default::default());
        let literal: Vec<Row> = rows
            .iter()
            .map(|r| {
                Row::new(
                    r.iter()
                        .zip(&types)
                        .map(|(s, &t)| {
                            if is_null(s) {
                                Value::Null
                            } else {
                                cast(s.eval(&empty), s.ty(), t)
                            }
                        })
                        .collect(),
                )
            })
            .collect();
        let fields = types
            .iter()
            .enumerate()
            .map(|(i, &t)| Field::new(format!("EXPR${i}"), t))
            .collect();
        Ok(Plan {
            node: Node::Values(Arc::new(literal)),
            schema: Schema::new(fields),
            updating: false,
        })
    }
}
