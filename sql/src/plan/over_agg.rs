//! Planning OVER aggregates in a SELECT list (`SUM(x) OVER (PARTITION BY k
//! ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)`) onto
//! [`Node::OverAgg`](super::Node::OverAgg), with Flink's rules: every OVER
//! of one SELECT has the same window; ORDER BY is one event-time attribute,
//! ascending; the frame ends at the current row; the input is
//! append-only.

use sqlparser::ast::{
    self, Expr, FunctionArg, FunctionArgExpr, OrderBySort, Select, SelectItem, WindowFrameBound,
    WindowFrameUnits, WindowType,
};

use super::{calc, AggCall, AggFunc, From, Node, Plan, Planner};
use crate::error::{Result, SqlError};
use crate::expr::{self, compile, Scalar, Scope, ScopeCol};
use crate::over_agg::{Lag, OverFrame};
use crate::plan::subquery::HIDDEN;
use crate::script::object_name;
use crate::types::{DataType, Field, Schema};

/// The OVER aggregate calls in `e` (COUNT, SUM, MIN, MAX, AVG with OVER).
pub(super) fn find_over_aggregates(e: &Expr, out: &mut Vec<Expr>) {
    let _ = ast::visit_expressions(e, |x| {
        if let Expr::Function(f) = x {
            let n = object_name(&f.name).to_ascii_uppercase();
            if f.over.is_some()
                && (AggFunc::named(&n).is_some() || n == "LAG" || n == "LEAD")
                && !out.contains(x)
            {
                out.push(x.clone());
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

fn frame_of(spec: &ast::WindowSpec) -> Result<OverFrame> {
    let Some(wf) = &spec.window_frame else {
        // ORDER BY without a frame: RANGE UNBOUNDED PRECEDING.
        return Ok(OverFrame::Unbounded { peers: true });
    };
    if !matches!(wf.end_bound, None | Some(WindowFrameBound::CurrentRow)) {
        return Err(SqlError::Unsupported(format!(
            "the OVER frame of `{spec}`: a frame ends at CURRENT ROW in a stream (Flink's rule)"
        )));
    }
    let rows = match wf.units {
        WindowFrameUnits::Rows => true,
        WindowFrameUnits::Range => false,
        other => return Err(SqlError::Unsupported(format!("{other} frames"))),
    };
    Ok(match &wf.start_bound {
        WindowFrameBound::CurrentRow if rows => OverFrame::Rows(0),
        WindowFrameBound::CurrentRow => OverFrame::Range(0),
        WindowFrameBound::Preceding(None) => OverFrame::Unbounded { peers: !rows },
        WindowFrameBound::Preceding(Some(e)) if rows => {
            match e.as_ref() {
                Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => OverFrame::Rows(n.parse().map_err(|_| {
                        SqlError::Plan(format!("ROWS {n} PRECEDING: a count of rows"))
                    })?),
                    other => {
                        return Err(SqlError::Plan(format!(
                            "ROWS {other} PRECEDING: a count of rows"
                        )))
                    }
                },
                other => {
                    return Err(SqlError::Plan(format!(
                        "ROWS {other} PRECEDING: a count of rows"
                    )))
                }
            }
        }
        WindowFrameBound::Preceding(Some(e)) => match e.as_ref() {
            Expr::Interval(iv) => OverFrame::Range(expr::interval_ms(iv)?),
            other => {
                return Err(SqlError::Plan(format!(
                "RANGE {other} PRECEDING: an interval (INTERVAL '10' SECOND) on a time attribute"
            )))
            }
        },
        WindowFrameBound::Following(_) => {
            return Err(SqlError::Unsupported(
                "an OVER frame starting after the current row".into(),
            ))
        }
    })
}

/// The window `WINDOW name AS (..)` of `s` defines (following references
/// to other named windows).
fn named_window<'s>(s: &'s Select, name: &ast::Ident) -> Result<&'s ast::WindowSpec> {
    let mut at = name;
    for _ in 0..=s.named_window.len() {
        let def = s
            .named_window
            .iter()
            .find(|d| d.0.value.eq_ignore_ascii_case(&at.value))
            .ok_or_else(|| SqlError::Plan(format!("no window `{}` in WINDOW", at.value)))?;
        match &def.1 {
            ast::NamedWindowExpr::WindowSpec(w) => return Ok(w),
            ast::NamedWindowExpr::NamedWindow(next) => at = next,
        }
    }
    Err(SqlError::Plan(format!(
        "the windows named from `{}` refer to each other",
        name.value
    )))
}

impl Planner<'_> {
    /// The SELECT `s` whose list holds the OVER aggregates `overs`, over
    /// `from` filtered by `filter`.
    pub(super) fn over_aggregate(
        &mut self,
        s: &Select,
        from: From,
        input_scope: Scope,
        filter: Option<Scalar>,
        overs: Vec<Expr>,
    ) -> Result<Plan> {
        if from.plan.updating {
            return Err(SqlError::Unsupported(
                "an OVER aggregate over an updating input".into(),
            ));
        }
        let specs: Vec<&ast::WindowSpec> = overs
            .iter()
            .map(|e| match e {
                Expr::Function(ast::Function {
                    over: Some(WindowType::WindowSpec(w)),
                    ..
                }) => Ok(w),
                Expr::Function(ast::Function {
                    over: Some(WindowType::NamedWindow(name)),
                    ..
                }) => named_window(s, name),
                other => Err(SqlError::Unsupported(format!("`{other}`"))),
            })
            .collect::<Result<_>>()?;
        let spec = specs[0];
        if specs.iter().any(|w| w.to_string() != spec.to_string()) {
            return Err(SqlError::Unsupported(
                "OVER aggregates over different windows in one SELECT (Flink's rule: one window; use subqueries)".into(),
            ));
        }
        let column = |e: &Expr, what: &str| -> Result<usize> {
            compile(e, &input_scope)?.as_column().ok_or_else(|| {
                SqlError::Unsupported(format!(
                    "{what} `{e}`: a column (compute the expression in a subquery first)"
                ))
            })
        };
        let partition = spec
            .partition_by
            .iter()
            .map(|e| column(e, "PARTITION BY"))
            .collect::<Result<Vec<_>>>()?;
        let [order] = spec.order_by.as_slice() else {
            return Err(SqlError::Plan(
                "an OVER aggregate in a stream is ordered by one time attribute: OVER (.. ORDER BY ts ..)".into(),
            ));
        };
        if matches!(order.options.sort, Some(OrderBySort::Desc)) {
            return Err(SqlError::Unsupported(
                "OVER (ORDER BY .. DESC): a stream's OVER window is ordered by ascending time"
                    .into(),
            ));
        }
        let time = column(&order.expr, "OVER (ORDER BY ..)")?;
        let tf = &input_scope.cols[time].field;
        if !tf.rowtime {
            return Err(if tf.proctime {
                SqlError::Unsupported(
                    "OVER windows on processing time (event time is supported)".into(),
                )
            } else {
                SqlError::Plan(format!(
                    "OVER (ORDER BY {}): `{}` is not a time attribute (declare a WATERMARK on it)",
                    order.expr, tf.name
                ))
            });
        }
        let frame = frame_of(spec)?;
        // The input's columns, then the aggregates' arguments.
        let mut pre: Vec<Scalar> = input_scope
            .cols
            .iter()
            .enumerate()
            .map(|(i, c)| Scalar::Column(i, c.field.ty))
            .collect();
        let mut pre_fields: Vec<Field> = input_scope.cols.iter().map(|c| c.field.clone()).collect();
        let mut calls = Vec::new();
        // LAG calls: (index in `overs`, the call).
        let mut lags: Vec<(usize, Lag)> = Vec::new();
        for (i, e) in overs.iter().enumerate() {
            let Expr::Function(f) = e else {
                unreachable!("calls")
            };
            let name = object_name(&f.name).to_ascii_uppercase();
            if name == "LAG" || name == "LEAD" {
                let lag = lag_call(f, e, &input_scope, &mut pre, &mut pre_fields, i)?;
                lags.push((i, lag));
                continue;
            }
            let func = AggFunc::named(&name).expect("found as an aggregate");
            let ast::FunctionArguments::List(list) = &f.args else {
                return Err(SqlError::Type(format!("{name} needs an argument")));
            };
            if list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct)
                || f.filter.is_some()
                || !list.clauses.is_empty()
            {
                return Err(SqlError::Unsupported(format!(
                    "`{e}`: DISTINCT or FILTER in an OVER aggregate"
                )));
            }
            let (arg, arg_ty) = match list.args.as_slice() {
                [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] | []
                    if func == AggFunc::Count =>
                {
                    (None, DataType::BigInt)
                }
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(a))] => {
                    let c = compile(a, &input_scope)?;
                    let ty = c.ty();
                    pre.push(c);
                    pre_fields.push(Field::new(format!("{HIDDEN}over_arg{i}"), ty));
                    (Some(pre.len() - 1), ty)
                }
                _ => return Err(SqlError::Type(format!("{name} takes one argument"))),
            };
            calls.push(AggCall {
                func,
                arg,
                distinct: false,
                filter: None,
                arg_ty,
                ty: AggCall::result_type(func, arg_ty)?,
                text: e.to_string(),
                separator: None,
                // (an OVER aggregation's input is append-only)
                retracts: false,
            });
        }
        let input = calc(from.plan, filter, pre, pre_fields.clone());
        let first_agg = pre_fields.len();
        let mut fields = pre_fields;
        for (i, c) in calls.iter().enumerate() {
            fields.push(Field::new(format!("{HIDDEN}over{i}"), c.ty));
        }
        for (i, (_, l)) in lags.iter().enumerate() {
            let ty = fields[l.arg].ty;
            fields.push(Field::new(format!("{HIDDEN}lag{i}"), ty));
        }
        // The column of each OVER call: aggregates, then LAGs.
        let mut slot = vec![0; overs.len()];
        let mut next = first_agg;
        for (i, s) in slot.iter_mut().enumerate() {
            if !lags.iter().any(|(j, _)| *j == i) {
                *s = next;
                next += 1;
            }
        }
        for (i, _) in &lags {
            slot[*i] = next;
            next += 1;
        }
        let plan = Plan {
            node: Node::OverAgg {
                input: Box::new(input),
                partition,
                time,
                frame,
                aggs: calls,
                lags: lags.into_iter().map(|(_, l)| l).collect(),
            },
            schema: Schema::new(fields.clone()),
            updating: false,
        };
        // The SELECT list over the input's columns (as qualified in FROM)
        // and the aggregates.
        let mut cols = input_scope.cols.clone();
        for f in &fields[cols.len()..] {
            cols.push(ScopeCol {
                qualifier: None,
                field: f.clone(),
                hidden: false,
            });
        }
        let out_scope = Scope { cols };
        let mut hook = |e: &Expr| -> Result<Option<Scalar>> {
            Ok(overs.iter().position(|o| o == e).map(|i| {
                let c = slot[i];
                Scalar::Column(c, fields[c].ty)
            }))
        };
        let items: Vec<SelectItem> = s.projection.clone();
        let (project, out_fields) = self.projection(&items, &out_scope, &mut hook)?;
        Ok(calc(plan, None, project, out_fields))
    }
}

/// `LAG(x [, offset [, default]]) OVER ..` or LEAD (call `i` of the
/// SELECT): `x` computed into the input (`pre`), `offset` a non-negative
/// integer literal (1 by default), `default` a literal of `x`'s type
/// (NULL by default).
fn lag_call(
    f: &ast::Function,
    e: &Expr,
    scope: &Scope,
    pre: &mut Vec<Scalar>,
    pre_fields: &mut Vec<Field>,
    i: usize,
) -> Result<Lag> {
    let name = object_name(&f.name).to_ascii_uppercase();
    let ast::FunctionArguments::List(list) = &f.args else {
        return Err(SqlError::Type(format!("{name} needs an argument")));
    };
    if list.duplicate_treatment.is_some() || f.filter.is_some() || !list.clauses.is_empty() {
        return Err(SqlError::Unsupported(format!(
            "`{e}`: DISTINCT or FILTER in {name}"
        )));
    }
    let args: Vec<&Expr> = list
        .args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => Ok(x),
            other => Err(SqlError::Type(format!("{name}: the argument `{other}`"))),
        })
        .collect::<Result<_>>()?;
    let (x, offset, default) = match args.as_slice() {
        [x] => (*x, None, None),
        [x, o] => (*x, Some(*o), None),
        [x, o, d] => (*x, Some(*o), Some(*d)),
        _ => {
            return Err(SqlError::Type(format!(
                "{name} takes one to three arguments: {name}(x [, offset [, default]])"
            )))
        }
    };
    let c = compile(x, scope)?;
    let ty = c.ty();
    pre.push(c);
    pre_fields.push(Field::new(format!("{HIDDEN}lag_arg{i}"), ty));
    let offset = match offset {
        None => 1,
        Some(o) => match constant(compile(o, scope)?) {
            Some((v, _)) => v
                .as_i64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| {
                    SqlError::Plan(format!("{name}'s offset `{o}`: a non-negative integer"))
                })?,
            None => {
                return Err(SqlError::Plan(format!(
                    "{name}'s offset `{o}`: an integer literal"
                )))
            }
        },
    };
    let default = match default {
        None => crate::value::Value::Null,
        Some(d) => match constant(compile(d, scope)?) {
            Some((v, t)) => {
                // A number of another numeric type is cast (`0` for a
                // DECIMAL); another type is an error.
                let fits = v.is_null() || t == ty || (t.is_numeric() && ty.is_numeric());
                let cast = if fits {
                    expr::cast(v.clone(), t, ty)
                } else {
                    crate::value::Value::Null
                };
                if !v.is_null() && cast.is_null() {
                    return Err(SqlError::Type(format!(
                        "{name}'s default `{d}` is {t}, not {ty} as `{x}`"
                    )));
                }
                cast
            }
            None => return Err(SqlError::Plan(format!("{name}'s default `{d}`: a literal"))),
        },
    };
    Ok(Lag {
        arg: pre.len() - 1,
        offset,
        default,
        ahead: name == "LEAD",
    })
}

/// The value of `s` when it reads no column (`-1`, `'a' || 'b'`).
fn constant(s: Scalar) -> Option<(crate::value::Value, DataType)> {
    if s.column_range().is_some() {
        return None;
    }
    let ty = s.ty();
    Some((s.eval(&crate::value::Row::default()), ty))
}
