//! Implicit casts between planned queries: the columns of a UNION's sides
//! widened to their least common type, and a query's columns widened to
//! the types of the table an INSERT writes. The types come from
//! [`crate::types`] ([`least_common_type`], [`casts_implicitly`]); here the plan
//! gets the casts, so the rows that run always have the schema's types.
//!
//! A bare `NULL` in a SELECT list or a VALUES column has no type of its
//! own (the expression compiler gives it STRING); it takes the type of
//! the column it meets, as in Flink.

use super::{Node, Plan};
use crate::error::{Result, SqlError};
use crate::expr::{coerce, Scalar};
use crate::types::{casts_implicitly, least_common_type, DataType, Field, Schema};
use crate::value::{Row, Value};

/// Whether column `i` of `plan` is an untyped NULL in every row: a `NULL`
/// selected (through any projections of it), a VALUES column of NULLs
/// only, or a union of such.
pub(crate) fn null_column(plan: &Plan, i: usize) -> bool {
    match &plan.node {
        Node::Calc { input, project, .. } => match &project[i] {
            Scalar::Literal(Value::Null, _) => true,
            Scalar::Column(j, _) => null_column(input, *j),
            _ => false,
        },
        Node::Values(rows) => {
            plan.schema.fields[i].ty == DataType::String
                && rows.iter().all(|r| r.values[i].is_null())
        }
        Node::Union(inputs) => inputs.iter().all(|p| null_column(p, i)),
        _ => false,
    }
}

/// The column types two sides of a set operation (`what`: `UNION ALL`,
/// `INTERSECT`, ..) meet in: per column the least common type of both,
/// or the other side's where one side gives an untyped NULL. An error
/// names the column and both types when they do not mix.
pub(crate) fn union_types(what: &str, l: &Plan, r: &Plan) -> Result<Vec<DataType>> {
    if l.schema.len() != r.schema.len() {
        return Err(SqlError::Type(format!(
            "{what} of {} and {}: the sides need as many columns",
            l.schema, r.schema
        )));
    }
    let (lf, rf) = (&l.schema.fields, &r.schema.fields);
    (0..lf.len())
        .map(|i| {
            let (a, b) = (lf[i].ty, rf[i].ty);
            if null_column(r, i) {
                Ok(a)
            } else if null_column(l, i) {
                Ok(b)
            } else {
                least_common_type(a, b).ok_or_else(|| {
                    SqlError::Type(format!(
                        "{what} of {} and {}: column {} (`{}` {a}, `{}` {b}) has no common type; CAST one side",
                        l.schema,
                        r.schema,
                        i + 1,
                        lf[i].name,
                        rf[i].name
                    ))
                })
            }
        })
        .collect()
}

/// `plan` with the columns of `plan`'s rows written into the columns of
/// `table`'s `physical` schema (INSERT): a column of another type is cast
/// when Flink casts it implicitly ([`casts_implicitly`]) or it is an
/// untyped NULL; otherwise an error names the column and both types.
pub(crate) fn fit_insert(table: &str, plan: Plan, physical: &Schema) -> Result<Plan> {
    if plan.schema.len() != physical.len() {
        return Err(SqlError::Type(format!(
            "INSERT INTO `{table}`: the query gives {} columns {}, the table has {} {}",
            plan.schema.len(),
            plan.schema,
            physical.len(),
            physical
        )));
    }
    for (i, (q, t)) in plan.schema.fields.iter().zip(&physical.fields).enumerate() {
        if !casts_implicitly(q.ty, t.ty) && !null_column(&plan, i) {
            return Err(SqlError::Type(format!(
                "INSERT INTO `{table}`: column `{}` is {}, the query gives {} (`{}`), which is not cast to it implicitly; CAST it",
                t.name, t.ty, q.ty, q.name
            )));
        }
    }
    Ok(cast_columns(plan, &physical.types()))
}

/// `plan` with its columns cast to `types` (each one the column is cast to
/// implicitly, or any type for an untyped NULL): the casts join the plan's top
/// calc, or a new calc takes them; a VALUES node's rows are converted in
/// place. A cast column is no longer a time attribute.
pub(crate) fn cast_columns(plan: Plan, types: &[DataType]) -> Plan {
    if plan.schema.types() == types {
        return plan;
    }
    let fields: Vec<Field> = plan
        .schema
        .fields
        .iter()
        .zip(types)
        .map(|(f, &ty)| {
            if f.ty == ty {
                f.clone()
            } else {
                Field {
                    ty,
                    rowtime: false,
                    proctime: false,
                    ..f.clone()
                }
            }
        })
        .collect();
    let from = plan.schema.types();
    let updating = plan.updating;
    let node = match plan.node {
        Node::Values(rows) => Node::Values(std::sync::Arc::new(
            rows.iter()
                .map(|r| {
                    let mut out = Row::new(
                        r.values
                            .iter()
                            .zip(from.iter().zip(types))
                            .map(|(v, (&f, &t))| coerce(v.clone(), f, t))
                            .collect(),
                    );
                    out.kind = r.kind;
                    out
                })
                .collect(),
        )),
        Node::Calc {
            input,
            filter,
            project,
        } => Node::Calc {
            input,
            filter,
            project: project
                .into_iter()
                .zip(types)
                .map(|(p, &t)| cast_to(p, t))
                .collect(),
        },
        node => Node::Calc {
            project: from
                .iter()
                .zip(types)
                .enumerate()
                .map(|(i, (&f, &t))| cast_to(Scalar::Column(i, f), t))
                .collect(),
            input: Box::new(Plan {
                node,
                schema: plan.schema,
                updating,
            }),
            filter: None,
        },
    };
    Plan {
        node,
        schema: Schema::new(fields),
        updating,
    }
}

/// `s` as a value of type `t`: itself, a NULL of that type, or an
/// implicit cast (TRY_CAST's: a number never fails to convert; one too
/// wide for a DECIMAL is NULL).
fn cast_to(s: Scalar, t: DataType) -> Scalar {
    match s {
        s if s.ty() == t => s,
        Scalar::Literal(Value::Null, _) => Scalar::Literal(Value::Null, t),
        s => Scalar::Cast(Box::new(s), t, false),
    }
}
