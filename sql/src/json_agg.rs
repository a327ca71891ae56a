//! Flink's JSON aggregates, `JSON_ARRAYAGG(v [NULL | ABSENT ON NULL])`
//! and `JSON_OBJECTAGG([KEY] k VALUE v [NULL | ABSENT ON NULL])`, each
//! with an optional `FILTER (WHERE ..)`, read by the dialect as the
//! `LISTAGG` of their members' JSON text that they are:
//!
//! - `JSON_ARRAYAGG(v)` is `'[' || COALESCE(LISTAGG(JSON_STRING(v), ','), '') || ']'`:
//!   the values in the order rows arrive (Flink's `JsonArrayAggFunction`
//!   keeps them in a list in that order), `[]` when none is kept; ABSENT
//!   ON NULL (the default) skips a NULL value, NULL ON NULL writes `null`;
//! - `JSON_OBJECTAGG(KEY k VALUE v)` is the same over `"k":v` members in
//!   braces, NULL ON NULL by default (`"k":null`), ABSENT ON NULL skipping
//!   the member.
//!
//! A value that is itself a `JSON_OBJECT` or `JSON_ARRAY` call, written in
//! the argument, is inserted as JSON, as those constructors insert it.
//! Being a LISTAGG, each runs where LISTAGG runs: group and window
//! aggregations over append-only input.

use sqlparser::ast::{
    BinaryOperator, CastKind, DataType, Expr, FunctionArgumentClause, JsonNullClause, Value,
};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use crate::dialect::{call, on_null, word};

/// Parses `JSON_ARRAYAGG(..)` or `JSON_OBJECTAGG(..)` (`object`) and its
/// FILTER clause, the name next, into the expression it is.
pub(crate) fn json_agg(parser: &mut Parser, object: bool) -> Result<Expr, ParserError> {
    parser.next_token(); // the name
    parser.expect_token(&Token::LParen)?;
    let key = if object {
        // `KEY` starts the pair unless it is the key itself (`KEY VALUE v`).
        if !matches!(&parser.peek_nth_token(1).token,
                     Token::Word(w) if w.value.eq_ignore_ascii_case("VALUE"))
        {
            word(parser, "KEY");
        }
        let k = parser.parse_expr()?;
        if !word(parser, "VALUE") {
            return parser.expected("VALUE after the JSON_OBJECTAGG key", parser.peek_token());
        }
        Some(k)
    } else {
        None
    };
    let value = parser.parse_expr()?;
    // Flink's defaults: JSON_OBJECTAGG writes NULLs, JSON_ARRAYAGG skips them.
    let nulls = match on_null(parser) {
        Some(FunctionArgumentClause::JsonNullClause(JsonNullClause::NullOnNull)) => true,
        Some(_) => false,
        None => object,
    };
    parser.expect_token(&Token::RParen)?;
    let filter = if parser.peek_keyword(Keyword::FILTER)
        && parser.peek_nth_token(1).token == Token::LParen
    {
        parser.next_token();
        parser.expect_token(&Token::LParen)?;
        parser.expect_keyword(Keyword::WHERE)?;
        let cond = parser.parse_expr()?;
        parser.expect_token(&Token::RParen)?;
        Some(Box::new(cond))
    } else {
        None
    };
    if parser.peek_keyword(Keyword::OVER) {
        // (as Flink's: not in OVER windows)
        return Err(ParserError::ParserError(format!(
            "{} .. OVER is not supported (Flink runs it in group and window aggregations only)",
            if object {
                "JSON_OBJECTAGG"
            } else {
                "JSON_ARRAYAGG"
            }
        )));
    }
    let mut member = json_text(value);
    if nulls {
        member = call("COALESCE", vec![member, text("null")], vec![]);
    }
    if let Some(k) = key {
        let k = Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(k),
            data_type: DataType::String(None),
            format: None,
        };
        member = concat(
            concat(call("JSON_STRING", vec![k], vec![]), text(":")),
            member,
        );
    }
    let mut list = call("LISTAGG", vec![member, text(",")], vec![]);
    if let Expr::Function(f) = &mut list {
        f.filter = filter;
    }
    let (open, close) = if object { ("{", "}") } else { ("[", "]") };
    let members = call("COALESCE", vec![list, text("")], vec![]);
    Ok(Expr::Nested(Box::new(concat(
        concat(text(open), members),
        text(close),
    ))))
}

/// `v`'s JSON text: a JSON_OBJECT or JSON_ARRAY call as it is, any other
/// value through JSON_STRING (NULL for NULL).
fn json_text(v: Expr) -> Expr {
    let constructor = matches!(&v, Expr::Function(f)
        if f.name.0.len() == 1
            && ["JSON_OBJECT", "JSON_ARRAY"]
                .iter()
                .any(|n| f.name.to_string().eq_ignore_ascii_case(n)));
    if constructor {
        v
    } else {
        call("JSON_STRING", vec![v], vec![])
    }
}

fn text(s: &str) -> Expr {
    Expr::value(Value::SingleQuotedString(s.into()))
}

fn concat(a: Expr, b: Expr) -> Expr {
    Expr::BinaryOp {
        left: Box::new(a),
        op: BinaryOperator::StringConcat,
        right: Box::new(b),
    }
}

#[cfg(test)]
mod tests;
