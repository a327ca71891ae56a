//! Flink SQL's dialect for sqlparser: identifiers quoted with backticks,
//! and `TABLE name` as an argument of a windowing table-valued function
//! (`TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND)`), which
//! sqlparser's generic dialect does not read, with the partition keys
//! Flink's SESSION takes after it (`TABLE bid PARTITION BY item`, or
//! `PARTITION BY (a, b)`); an aggregate's `FILTER (WHERE ..)`; and
//! `TRIM([BOTH | LEADING | TRAILING] FROM s)`, Calcite's trim of spaces
//! without characters named, which sqlparser reads only with them;
//! `BETWEEN SYMMETRIC` and `BETWEEN ASYMMETRIC`; and
//! the SQL/JSON forms of `JSON_OBJECT([KEY] k VALUE v, ..
//! [NULL | ABSENT] ON NULL)` and `JSON_QUERY(j, path [RETURNING t]
//! [wrapper] [.. ON EMPTY] [.. ON ERROR])`; `JSON_ARRAYAGG` and
//! `JSON_OBJECTAGG` as the LISTAGGs they are ([`crate::json_agg`]).

use sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentClause, FunctionArgumentList,
    FunctionArguments, Ident, JsonNullClause, JsonReturningClause, ObjectName, TrimWhereField,
};
use sqlparser::dialect::{Dialect, GenericDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// The name a `TABLE t` argument is read as: a call `__TABLE(t)`, or
/// `__TABLE(t, k1, k2)` for `TABLE t PARTITION BY (k1, k2)`.
pub const TABLE_ARG: &str = "__TABLE";

/// Flink SQL as weir reads it.
#[derive(Debug, Default)]
pub struct FlinkDialect {
    generic: GenericDialect,
}

impl Dialect for FlinkDialect {
    fn is_identifier_start(&self, ch: char) -> bool {
        self.generic.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        self.generic.is_identifier_part(ch)
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '`' || ch == '"'
    }

    fn supports_named_fn_args_with_rarrow_operator(&self) -> bool {
        true
    }

    /// `U&'\0009'`: Calcite's Unicode string literal.
    fn supports_unicode_string_literal(&self) -> bool {
        true
    }

    /// `COUNT(*) FILTER (WHERE price < 10000)`.
    fn supports_table_versioning(&self) -> bool {
        // `FOR SYSTEM_TIME AS OF` (temporal joins).
        true
    }

    fn supports_group_by_expr(&self) -> bool {
        // GROUPING SETS, ROLLUP and CUBE.
        true
    }

    fn supports_filter_during_aggregation(&self) -> bool {
        true
    }

    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        _precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        between_symmetric(self, parser, expr)
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        if parser.peek_keyword(Keyword::TRIM) {
            return trim_without_characters(parser);
        }
        if let Token::Word(w) = &parser.peek_token().token {
            if parser.peek_nth_token(1).token == Token::LParen {
                if w.value.eq_ignore_ascii_case("JSON_OBJECT") {
                    return Some(json_object(parser));
                }
                if w.value.eq_ignore_ascii_case("JSON_QUERY") {
                    return Some(json_query(parser));
                }
                for (name, object) in [("JSON_ARRAYAGG", false), ("JSON_OBJECTAGG", true)] {
                    if w.value.eq_ignore_ascii_case(name) {
                        return Some(crate::json_agg::json_agg(parser, object));
                    }
                }
            }
        }
        // `TABLE name` (not `TABLE(`): a table argument.
        if !parser.peek_keyword(Keyword::TABLE) {
            return None;
        }
        if let Token::LParen = parser.peek_nth_token(1).token {
            return None;
        }
        parser.next_token();
        Some(table_argument(parser))
    }
}

/// `x [NOT] BETWEEN {SYMMETRIC | ASYMMETRIC} a AND b`, which sqlparser does
/// not read: ASYMMETRIC is the plain BETWEEN, and SYMMETRIC is as Calcite
/// expands it, `(x BETWEEN a AND b) OR (x BETWEEN b AND a)` (so NULL
/// where neither order is FALSE), NOT BETWEEN SYMMETRIC its negation.
/// `None` (sqlparser parses it) for anything else.
fn between_symmetric(
    dialect: &FlinkDialect,
    parser: &mut Parser,
    expr: &Expr,
) -> Option<Result<Expr, ParserError>> {
    let negated = parser.peek_keyword(Keyword::NOT);
    let at = usize::from(negated);
    let is = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k);
    if !is(&parser.peek_nth_token(at).token, Keyword::BETWEEN) {
        return None;
    }
    let modifier = &parser.peek_nth_token(at + 1).token;
    let symmetric = is(modifier, Keyword::SYMMETRIC);
    if !symmetric && !is(modifier, Keyword::ASYMMETRIC) {
        return None;
    }
    for _ in 0..at + 2 {
        parser.next_token();
    }
    let bounds = (|| {
        let prec = dialect.prec_value(sqlparser::dialect::Precedence::Between);
        let low = parser.parse_subexpr(prec)?;
        parser.expect_keyword(Keyword::AND)?;
        let high = parser.parse_subexpr(prec)?;
        Ok((low, high))
    })();
    Some(bounds.map(|(low, high)| {
        let between = |low: &Expr, high: &Expr| Expr::Between {
            expr: Box::new(expr.clone()),
            negated: false,
            low: Box::new(low.clone()),
            high: Box::new(high.clone()),
        };
        let either = if symmetric {
            Expr::Nested(Box::new(Expr::BinaryOp {
                left: Box::new(between(&low, &high)),
                op: sqlparser::ast::BinaryOperator::Or,
                right: Box::new(between(&high, &low)),
            }))
        } else {
            between(&low, &high)
        };
        if negated {
            Expr::UnaryOp {
                op: sqlparser::ast::UnaryOperator::Not,
                expr: Box::new(either),
            }
        } else {
            either
        }
    }))
}

/// `TRIM ( [BOTH | LEADING | TRAILING] FROM s )`, as Calcite reads it
/// (spaces trimmed): the same `Expr::Trim` as `TRIM(BOTH ' ' FROM s)`
/// without its characters. `None` (sqlparser parses it) for any other
/// TRIM.
fn trim_without_characters(parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
    if parser.peek_nth_token(1).token != Token::LParen {
        return None;
    }
    let where_ = match &parser.peek_nth_token(2).token {
        Token::Word(w) => match w.keyword {
            Keyword::BOTH => Some(TrimWhereField::Both),
            Keyword::LEADING => Some(TrimWhereField::Leading),
            Keyword::TRAILING => Some(TrimWhereField::Trailing),
            Keyword::FROM => None,
            _ => return None,
        },
        _ => return None,
    };
    let from_at = if where_.is_some() { 3 } else { 2 };
    match &parser.peek_nth_token(from_at).token {
        Token::Word(w) if w.keyword == Keyword::FROM => {}
        _ => return None,
    }
    for _ in 0..=from_at {
        parser.next_token(); // TRIM ( [where] FROM
    }
    Some((|| {
        let expr = parser.parse_expr()?;
        parser.expect_token(&Token::RParen)?;
        Ok(Expr::Trim {
            expr: Box::new(expr),
            trim_where: Some(where_.unwrap_or(TrimWhereField::Both)),
            trim_what: None,
            trim_characters: None,
        })
    })())
}

/// `name [PARTITION BY key | PARTITION BY (key, ...)]` after `TABLE`, as
/// `__TABLE(name, key, ...)`.
fn table_argument(parser: &mut Parser) -> Result<Expr, ParserError> {
    let name = parser.parse_object_name(false)?;
    let mut args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(
        Expr::CompoundIdentifier(
            name.0
                .into_iter()
                .filter_map(|p| p.as_ident().cloned())
                .collect(),
        ),
    ))];
    if parser.parse_keywords(&[Keyword::PARTITION, Keyword::BY]) {
        let keys = if parser.consume_token(&Token::LParen) {
            let keys = parser.parse_comma_separated(Parser::parse_identifier)?;
            parser.expect_token(&Token::RParen)?;
            keys
        } else {
            vec![parser.parse_identifier()?]
        };
        args.extend(
            keys.into_iter()
                .map(|k| FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(k)))),
        );
    }
    Ok(Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(TABLE_ARG)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args,
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    }))
}

/// Consumes the next token if it is the word `w` (any case).
pub(crate) fn word(parser: &mut Parser, w: &str) -> bool {
    match &parser.peek_token().token {
        Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w) => {
            parser.next_token();
            true
        }
        _ => false,
    }
}

/// A call `name(args)` with `clauses` after them.
pub(crate) fn call(name: &str, args: Vec<Expr>, clauses: Vec<FunctionArgumentClause>) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a)))
                .collect(),
            clauses,
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// A call `name(*)` (`COUNT(*)`).
pub(crate) fn call_star(name: &str) -> Expr {
    let mut c = call(name, Vec::new(), Vec::new());
    if let Expr::Function(Function {
        args: FunctionArguments::List(list),
        ..
    }) = &mut c
    {
        list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Wildcard)];
    }
    c
}

/// `[NULL | ABSENT] ON NULL`, if next.
pub(crate) fn on_null(parser: &mut Parser) -> Option<FunctionArgumentClause> {
    if parser.parse_keywords(&[Keyword::NULL, Keyword::ON, Keyword::NULL]) {
        Some(FunctionArgumentClause::JsonNullClause(
            JsonNullClause::NullOnNull,
        ))
    } else if parser.parse_keywords(&[Keyword::ABSENT, Keyword::ON, Keyword::NULL]) {
        Some(FunctionArgumentClause::JsonNullClause(
            JsonNullClause::AbsentOnNull,
        ))
    } else {
        None
    }
}

/// `JSON_OBJECT([[KEY] k VALUE v, ...] [NULL | ABSENT ON NULL])` as the
/// call `JSON_OBJECT(k, v, ...)` with its ON NULL clause.
fn json_object(parser: &mut Parser) -> Result<Expr, ParserError> {
    parser.next_token(); // JSON_OBJECT
    parser.expect_token(&Token::LParen)?;
    let mut args = Vec::new();
    let mut clauses = Vec::new();
    loop {
        if let Some(c) = on_null(parser) {
            clauses.push(c);
            break;
        }
        if parser.peek_token().token == Token::RParen {
            break;
        }
        // `KEY` starts a pair unless it is the key itself (`KEY VALUE v`).
        if let Token::Word(w) = &parser.peek_nth_token(1).token {
            if !w.value.eq_ignore_ascii_case("VALUE") {
                word(parser, "KEY");
            }
        } else {
            word(parser, "KEY");
        }
        args.push(parser.parse_expr()?);
        if !word(parser, "VALUE") {
            return parser.expected("VALUE after a JSON_OBJECT key", parser.peek_token());
        }
        args.push(parser.parse_expr()?);
        if !parser.consume_token(&Token::Comma) {
            if let Some(c) = on_null(parser) {
                clauses.push(c);
            }
            break;
        }
    }
    parser.expect_token(&Token::RParen)?;
    Ok(call("JSON_OBJECT", args, clauses))
}

/// `JSON_QUERY(j, path [RETURNING t] [{WITHOUT | WITH [CONDITIONAL |
/// UNCONDITIONAL]} [ARRAY] WRAPPER] [{NULL | EMPTY ARRAY | EMPTY OBJECT |
/// ERROR} ON EMPTY] [... ON ERROR])` as the call `JSON_QUERY(j, path,
/// wrapper, on_empty, on_error)`, the last three string codes, with the
/// RETURNING clause.
fn json_query(parser: &mut Parser) -> Result<Expr, ParserError> {
    parser.next_token(); // JSON_QUERY
    parser.expect_token(&Token::LParen)?;
    let json = parser.parse_expr()?;
    parser.expect_token(&Token::Comma)?;
    let path = parser.parse_expr()?;
    let mut clauses = Vec::new();
    if parser.parse_keyword(Keyword::RETURNING) {
        clauses.push(FunctionArgumentClause::JsonReturningClause(
            JsonReturningClause {
                data_type: parser.parse_data_type()?,
            },
        ));
    }
    let mut wrapper = "WITHOUT";
    if word(parser, "WITHOUT") {
        word(parser, "ARRAY");
        if !word(parser, "WRAPPER") {
            return parser.expected("WRAPPER", parser.peek_token());
        }
    } else if parser.peek_keyword(Keyword::WITH) {
        parser.next_token();
        // `WITH [ARRAY] WRAPPER` alone is WITH UNCONDITIONAL (Calcite's).
        wrapper = if word(parser, "CONDITIONAL") {
            "CONDITIONAL"
        } else {
            word(parser, "UNCONDITIONAL");
            "UNCONDITIONAL"
        };
        word(parser, "ARRAY");
        if !word(parser, "WRAPPER") {
            return parser.expected("WRAPPER", parser.peek_token());
        }
    }
    let mut behaviors = ["NULL", "NULL"];
    for (i, when) in ["EMPTY", "ERROR"].iter().enumerate() {
        // `EMPTY ARRAY ON ..` / `EMPTY OBJECT ON ..` start with EMPTY, so
        // look for the `ON when` that ends the clause.
        let (b, len) = match (
            &parser.peek_nth_token(0).token,
            &parser.peek_nth_token(1).token,
        ) {
            (Token::Word(a), Token::Word(b))
                if a.value.eq_ignore_ascii_case("EMPTY")
                    && b.value.eq_ignore_ascii_case("ARRAY") =>
            {
                ("EMPTY ARRAY", 2)
            }
            (Token::Word(a), Token::Word(b))
                if a.value.eq_ignore_ascii_case("EMPTY")
                    && b.value.eq_ignore_ascii_case("OBJECT") =>
            {
                ("EMPTY OBJECT", 2)
            }
            (Token::Word(a), _) if a.value.eq_ignore_ascii_case("NULL") => ("NULL", 1),
            (Token::Word(a), _) if a.value.eq_ignore_ascii_case("ERROR") => ("ERROR", 1),
            _ => continue,
        };
        let on_when = |n: usize| match (
            &parser.peek_nth_token(n).token,
            &parser.peek_nth_token(n + 1).token,
        ) {
            (Token::Word(o), Token::Word(w)) => {
                o.value.eq_ignore_ascii_case("ON") && w.value.eq_ignore_ascii_case(when)
            }
            _ => false,
        };
        if !on_when(len) {
            continue;
        }
        for _ in 0..len + 2 {
            parser.next_token();
        }
        behaviors[i] = b;
    }
    parser.expect_token(&Token::RParen)?;
    let code = |c: &str| Expr::Value(sqlparser::ast::Value::SingleQuotedString(c.into()).into());
    Ok(call(
        "JSON_QUERY",
        vec![
            json,
            path,
            code(wrapper),
            code(behaviors[0]),
            code(behaviors[1]),
        ],
        clauses,
    ))
}
