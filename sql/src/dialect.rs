//! Flink SQL's dialect for sqlparser: identifiers quoted with backticks,
//! and `TABLE name` as an argument of a windowing table-valued function
//! (`TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND)`), which
//! sqlparser's generic dialect does not read, with the partition keys
//! Flink's SESSION takes after it (`TABLE bid PARTITION BY item`, or
//! `PARTITION BY (a, b)`); an aggregate's `FILTER (WHERE ..)`; and
//! `TRIM([BOTH | LEADING | TRAILING] FROM s)`, Calcite's trim of spaces
//! without characters named, which sqlparser reads only with them.

use sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident,
    ObjectName, TrimWhereField,
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

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        if parser.peek_keyword(Keyword::TRIM) {
            return trim_without_characters(parser);
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
