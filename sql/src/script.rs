//! A SQL script split into statements and parsed: sqlparser reads the
//! tokens, queries and expressions; the Flink statements it does not know
//! (`CREATE TABLE` with computed columns, `WATERMARK FOR` and `PRIMARY KEY
//! .. NOT ENFORCED`; `SET 'key' = 'value'`) are read here from its tokens
//! with its own parser primitives.

use std::collections::BTreeMap;

use sqlparser::ast::{self, Expr, Query, SetExpr, Statement as Ast, TableObject};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use crate::dialect::FlinkDialect;
use crate::error::SqlError;

/// One statement of a script.
#[derive(Clone, Debug)]
pub enum Statement {
    /// `SET 'key' = 'value'`: a config key for the job.
    Set {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// `RESET 'key'` / `RESET`: drops the script's earlier SETs of the key
    /// (of every key).
    Reset(Option<String>),
    /// `CREATE TABLE`.
    CreateTable(Box<TableDef>),
    /// `CREATE [TEMPORARY] VIEW [IF NOT EXISTS] name AS query`.
    CreateView {
        /// The view's name.
        name: String,
        /// Its query.
        query: Box<Query>,
        /// `IF NOT EXISTS`: a view of that name already there is kept.
        if_not_exists: bool,
    },
    /// `INSERT INTO table [(columns)] query`.
    Insert {
        /// The target table.
        table: String,
        /// The columns written, in the query's order (empty: all).
        columns: Vec<String>,
        /// The rows.
        query: Box<Query>,
    },
    /// A bare query: its rows are printed.
    Query(Box<Query>),
    /// `EXPLAIN statement`.
    Explain(Box<Statement>),
    /// `SHOW TABLES` / `SHOW VIEWS`: the catalog's names.
    Show {
        /// Views (else tables).
        views: bool,
    },
    /// `DESCRIBE t` / `DESC t`: a table's or view's columns.
    Describe(String),
    /// `DROP [TEMPORARY] TABLE|VIEW [IF EXISTS] name`.
    Drop {
        /// The table's or view's name.
        name: String,
        /// A view (else a table).
        view: bool,
        /// `IF EXISTS`: nothing to drop is no error.
        if_exists: bool,
    },
}

/// A column of `CREATE TABLE` (parsed once per script: size is no matter).
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum ColumnDef {
    /// A column the connector reads and writes.
    Physical {
        /// Its name.
        name: String,
        /// Its type as written.
        ty: ast::DataType,
        /// `NOT NULL` given.
        not_null: bool,
    },
    /// `name AS expression`: computed from the physical columns.
    Computed {
        /// Its name.
        name: String,
        /// The expression.
        expr: Expr,
    },
}

impl ColumnDef {
    /// The column's name.
    pub fn name(&self) -> &str {
        match self {
            ColumnDef::Physical { name, .. } | ColumnDef::Computed { name, .. } => name,
        }
    }
}

/// `CREATE TABLE name (columns, WATERMARK FOR, PRIMARY KEY) WITH (options)`.
#[derive(Clone, Debug)]
pub struct TableDef {
    /// The table's name.
    pub name: String,
    /// Its columns in order.
    pub columns: Vec<ColumnDef>,
    /// `WATERMARK FOR column AS expression`.
    pub watermark: Option<(String, Expr)>,
    /// `PRIMARY KEY (columns) NOT ENFORCED`.
    pub primary_key: Option<Vec<String>>,
    /// The `WITH` options, keys as written.
    pub options: BTreeMap<String, String>,
    /// `IF NOT EXISTS`: a table of that name already there is kept, and
    /// this statement does nothing.
    pub if_not_exists: bool,
    /// Where the statement starts.
    pub at: Location,
}

/// Parses a script: statements separated by `;`. An error names the line
/// and column.
///
/// The Flink SQL client's statement sets, `EXECUTE STATEMENT SET BEGIN
/// INSERT ..; INSERT ..; END;` and `BEGIN STATEMENT SET; INSERT ..; END;`,
/// hold INSERTs only; every INSERT of a script runs in one job anyway, so
/// the set's bounds are checked and dropped.
pub fn parse_script(text: &str) -> Result<Vec<Statement>, SqlError> {
    let dialect = FlinkDialect::default();
    let mut tokens = Tokenizer::new(&dialect, text)
        .tokenize_with_location()
        .map_err(|e| SqlError::Syntax(e.to_string()))?;
    // A Unicode string literal (`U&'\0009'`, as Flink's docs write a tab
    // for `csv.field-delimiter`) is the string its escapes spell: from
    // here on an ordinary one, wherever a string literal is read.
    for t in &mut tokens {
        if let Token::UnicodeStringLiteral(s) = &mut t.token {
            t.token = Token::SingleQuotedString(std::mem::take(s));
        }
    }
    let mut out = Vec::new();
    let mut current = Vec::new();
    // Where the open statement set began.
    let mut set: Option<Location> = None;
    let mut take = |tokens: Vec<TokenWithSpan>, set: &mut Option<Location>| {
        let (tokens, in_set) = match statement_set_bound(&tokens) {
            Some((SetBound::Begin, at, rest)) => {
                if set.is_some() {
                    return Err(set_error("a statement set inside another", at));
                }
                *set = Some(at);
                (tokens[rest..].to_vec(), true)
            }
            Some((SetBound::End, at, _)) => {
                if set.take().is_none() {
                    return Err(set_error("END without BEGIN STATEMENT SET", at));
                }
                return Ok(());
            }
            None => (tokens, set.is_some()),
        };
        let at = tokens
            .iter()
            .find(|t| !matches!(t.token, Token::Whitespace(_)))
            .map(|t| t.span.start);
        if let Some(s) = parse_statement(tokens)? {
            if in_set && !matches!(s, Statement::Insert { .. }) {
                let at = at.unwrap_or(Location::new(1, 1));
                return Err(set_error(
                    "a statement set holds INSERT statements only; this one is not",
                    at,
                ));
            }
            out.push(s);
        }
        Ok(())
    };
    for t in tokens {
        if t.token == Token::SemiColon {
            take(std::mem::take(&mut current), &mut set)?;
        } else {
            current.push(t);
        }
    }
    take(current, &mut set)?;
    if let Some(at) = set {
        return Err(set_error("the statement set is not closed with END", at));
    }
    Ok(out)
}

/// A bound of a statement set.
enum SetBound {
    /// `EXECUTE STATEMENT SET BEGIN` (before the set's first INSERT) or
    /// `BEGIN STATEMENT SET` (a statement of its own).
    Begin,
    /// `END`.
    End,
}

/// The statement-set bound `tokens` begin with, where, and the index of
/// the first token after it.
fn statement_set_bound(tokens: &[TokenWithSpan]) -> Option<(SetBound, Location, usize)> {
    let words: Vec<(usize, &TokenWithSpan)> = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .take(5)
        .collect();
    let word = |i: usize| match words.get(i).map(|(_, t)| &t.token) {
        Some(Token::Word(w)) => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    let at = words.first()?.1.span.start;
    let after = |n: usize| words.get(n - 1).map_or(tokens.len(), |(i, _)| i + 1);
    let is = |i: usize, w: &str| word(i).as_deref() == Some(w);
    if is(0, "EXECUTE") && is(1, "STATEMENT") && is(2, "SET") && is(3, "BEGIN") {
        return Some((SetBound::Begin, at, after(4)));
    }
    if is(0, "BEGIN") && is(1, "STATEMENT") && is(2, "SET") && words.len() == 3 {
        return Some((SetBound::Begin, at, after(3)));
    }
    if is(0, "END") && words.len() == 1 {
        return Some((SetBound::End, at, after(1)));
    }
    None
}

fn set_error(what: &str, at: Location) -> SqlError {
    SqlError::Syntax(format!(
        "{what} at Line: {}, Column: {}",
        at.line, at.column
    ))
}

fn is_blank(tokens: &[TokenWithSpan]) -> bool {
    tokens
        .iter()
        .all(|t| matches!(t.token, Token::Whitespace(_) | Token::EOF))
}

fn parse_statement(tokens: Vec<TokenWithSpan>) -> Result<Option<Statement>, SqlError> {
    if is_blank(&tokens) {
        return Ok(None);
    }
    let end = tokens
        .iter()
        .rev()
        .find(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .map_or(Location::new(1, 1), |t| t.span.end);
    nesting_within_limit(&tokens)?;
    let dialect = FlinkDialect::default();
    // (sqlparser's default limit, 50, cuts off a CASE nested 50 deep,
    // which Flink's parser takes; the planner's is `MAX_DEPTH`)
    let mut p = Parser::new(&dialect)
        .with_recursion_limit(crate::expr::MAX_DEPTH)
        .with_tokens_with_locations(tokens);
    let stmt = statement(&mut p).map_err(|e| {
        let msg = e.to_string();
        if msg.contains("Line:") {
            SqlError::Syntax(msg)
        } else {
            // The statement ended early: say where it ends.
            SqlError::Syntax(format!(
                "{msg} at Line: {}, Column: {}",
                end.line, end.column
            ))
        }
    })?;
    let rest = p.peek_token();
    if rest.token != Token::EOF {
        return Err(SqlError::Syntax(format!(
            "unexpected `{}` after the end of the statement at Line: {}, Column: {}",
            rest.token, rest.span.start.line, rest.span.start.column
        )));
    }
    Ok(Some(stmt))
}

/// Refuses a statement whose parentheses or CASEs nest deeper than the
/// parser's recursion limit, naming where: past the limit sqlparser may
/// read a CASE as a column's name and complain about the next token.
fn nesting_within_limit(tokens: &[TokenWithSpan]) -> Result<(), SqlError> {
    let mut depth = 0usize;
    for t in tokens {
        match &t.token {
            Token::LParen => depth += 1,
            Token::Word(w) if w.keyword == Keyword::CASE => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Word(w) if w.keyword == Keyword::END => depth = depth.saturating_sub(1),
            _ => continue,
        }
        if depth > crate::expr::MAX_DEPTH {
            return Err(SqlError::Syntax(format!(
                "parentheses or CASEs nested more than {} levels deep at Line: {}, Column: {}",
                crate::expr::MAX_DEPTH,
                t.span.start.line,
                t.span.start.column
            )));
        }
    }
    Ok(())
}

fn statement(p: &mut Parser<'_>) -> Result<Statement, ParserError> {
    if p.parse_keyword(Keyword::EXPLAIN) {
        // `EXPLAIN PLAN FOR` as Flink also accepts.
        let _ = p.parse_keywords(&[Keyword::PLAN, Keyword::FOR]);
        return Ok(Statement::Explain(Box::new(statement(p)?)));
    }
    if p.peek_keyword(Keyword::SET) {
        if let Token::SingleQuotedString(_) = p.peek_nth_token(1).token {
            p.next_token();
            let key = p.parse_literal_string()?;
            p.expect_token(&Token::Eq)?;
            let value = p.parse_literal_string()?;
            return Ok(Statement::Set { key, value });
        }
    }
    if p.peek_keyword(Keyword::RESET) {
        match p.peek_nth_token(1).token {
            Token::SingleQuotedString(_) => {
                p.next_token();
                return Ok(Statement::Reset(Some(p.parse_literal_string()?)));
            }
            Token::EOF => {
                p.next_token();
                return Ok(Statement::Reset(None));
            }
            _ => {}
        }
    }
    let start = p.peek_token().span.start;
    if p.parse_keyword(Keyword::SHOW) {
        if p.parse_keyword(Keyword::TABLES) {
            return Ok(Statement::Show { views: false });
        }
        if p.parse_keyword(Keyword::VIEWS) {
            return Ok(Statement::Show { views: true });
        }
        return unsupported("`SHOW` other than SHOW TABLES / SHOW VIEWS", start);
    }
    if p.parse_keyword(Keyword::DESCRIBE) || p.parse_keyword(Keyword::DESC) {
        let name = p.parse_object_name(false)?;
        return Ok(Statement::Describe(object_name(&name)));
    }
    if p.parse_keyword(Keyword::DROP) {
        // Flink's `DROP [TEMPORARY] TABLE|VIEW [IF EXISTS] name`.
        let _ = p.parse_keyword(Keyword::TEMPORARY);
        let view = match p.parse_one_of_keywords(&[Keyword::TABLE, Keyword::VIEW]) {
            Some(Keyword::VIEW) => true,
            Some(_) => false,
            None => return unsupported("`DROP` other than DROP TABLE / DROP VIEW", start),
        };
        let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        let name = object_name(&p.parse_object_name(false)?);
        return Ok(Statement::Drop {
            name,
            view,
            if_exists,
        });
    }
    if p.peek_keyword(Keyword::CREATE) {
        let is_table = matches!(
            (p.peek_nth_token(1).token, p.peek_nth_token(2).token),
            (Token::Word(ref a), _) if a.keyword == Keyword::TABLE
        ) || matches!(
            (p.peek_nth_token(1).token, p.peek_nth_token(2).token),
            (Token::Word(ref a), Token::Word(ref b))
                if a.keyword == Keyword::TEMPORARY && b.keyword == Keyword::TABLE
        );
        if is_table {
            p.next_token();
            let _ = p.parse_keyword(Keyword::TEMPORARY);
            p.expect_keyword(Keyword::TABLE)?;
            let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
            return create_table(p, start).map(|mut t| {
                t.if_not_exists = if_not_exists;
                Statement::CreateTable(Box::new(t))
            });
        }
    }
    let ast = p.parse_statement()?;
    from_ast(ast, start)
}

fn unsupported<T>(what: &str, at: Location) -> Result<T, ParserError> {
    Err(ParserError::ParserError(format!(
        "{what} is not supported at Line: {}, Column: {}",
        at.line, at.column
    )))
}

fn from_ast(ast: Ast, at: Location) -> Result<Statement, ParserError> {
    match ast {
        Ast::Query(q) => Ok(Statement::Query(q)),
        Ast::CreateView(v) => {
            if v.columns.iter().any(|c| c.data_type.is_some()) {
                return unsupported("a column type in CREATE VIEW's column list", at);
            }
            let names: Vec<ast::Ident> = v.columns.iter().map(|c| c.name.clone()).collect();
            Ok(Statement::CreateView {
                name: object_name(&v.name),
                query: Box::new(with_column_names(*v.query, &names)?),
                if_not_exists: v.if_not_exists,
            })
        }
        Ast::Insert(ins) => {
            let TableObject::TableName(name) = &ins.table else {
                return unsupported("INSERT INTO a table function", at);
            };
            if ins.overwrite {
                return unsupported("INSERT OVERWRITE", at);
            }
            let Some(query) = ins.source else {
                return unsupported("INSERT without a query", at);
            };
            Ok(Statement::Insert {
                table: object_name(name),
                columns: ins.columns.iter().map(object_name).collect(),
                query,
            })
        }
        Ast::Explain { statement, .. } => from_ast(*statement, at),
        other => {
            let text = other.to_string();
            let head: String = text
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ");
            unsupported(&format!("the statement `{head} ...`"), at)
        }
    }
}

/// `q` with its columns named `names` (none: `q` itself), as `CREATE VIEW
/// v (a, b) AS q` and `WITH w (a, b) AS (q)` name them: `SELECT * FROM (q)
/// AS __weir_named (a, b)`, a derived table whose alias names its columns
/// (a count that differs from `q`'s is an error where it is planned).
pub fn with_column_names(q: Query, names: &[ast::Ident]) -> Result<Query, ParserError> {
    if names.is_empty() {
        return Ok(q);
    }
    let cols: Vec<String> = names.iter().map(ToString::to_string).collect();
    let text = format!("SELECT * FROM ({q}) AS __weir_named ({})", cols.join(", "));
    Parser::new(&FlinkDialect::default())
        .try_with_sql(&text)?
        .parse_query()
        .map(|q| *q)
}

/// The name an object name stands for: its last part (catalogs and
/// databases are not modelled).
pub fn object_name(name: &ast::ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default()
}

fn is_word(t: &Token, word: &str) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

fn create_table(p: &mut Parser<'_>, at: Location) -> Result<TableDef, ParserError> {
    let name = object_name(&p.parse_object_name(false)?);
    // Flink's CREATE TABLE .. [WITH (..)] AS SELECT and .. LIKE other:
    // named, not a syntax error.
    if p.peek_token().token != Token::LParen {
        let ctas = (0..256)
            .map(|i| p.peek_nth_token(i).token)
            .take_while(|t| *t != Token::EOF)
            .any(|t| matches!(t, Token::Word(w) if w.keyword == Keyword::AS));
        if ctas {
            return unsupported(
                &format!("CREATE TABLE `{name}` .. AS SELECT (CTAS: create the table with its columns and INSERT INTO it)"),
                at,
            );
        }
        if p.peek_keyword(Keyword::LIKE) || p.peek_keyword(Keyword::WITH) {
            return unsupported(
                &format!("CREATE TABLE `{name}` .. LIKE (write the table's columns)"),
                at,
            );
        }
    }
    p.expect_token(&Token::LParen)?;
    let mut def = TableDef {
        name,
        columns: Vec::new(),
        watermark: None,
        primary_key: None,
        options: BTreeMap::new(),
        if_not_exists: false,
        at,
    };
    loop {
        if is_word(&p.peek_token().token, "WATERMARK") {
            p.next_token();
            p.expect_keyword(Keyword::FOR)?;
            let col = p.parse_identifier()?.value;
            p.expect_keyword(Keyword::AS)?;
            def.watermark = Some((col, p.parse_expr()?));
        } else if p.parse_keywords(&[Keyword::PRIMARY, Keyword::KEY]) {
            let cols =
                p.parse_parenthesized_column_list(sqlparser::parser::IsOptional::Mandatory, false)?;
            def.primary_key = Some(cols.into_iter().map(|i| i.value).collect());
            p.expect_keywords(&[Keyword::NOT, Keyword::ENFORCED])?;
        } else if p.parse_keyword(Keyword::CONSTRAINT) {
            p.parse_identifier()?;
            continue;
        } else {
            let name = p.parse_identifier()?.value;
            if p.parse_keyword(Keyword::AS) {
                def.columns.push(ColumnDef::Computed {
                    name,
                    expr: p.parse_expr()?,
                });
            } else {
                // Flink's constructed types, which sqlparser does not read
                // in Flink's spelling: named rather than a syntax error.
                let kind = p.peek_token().token;
                if let Token::Word(w) = &kind {
                    let up = w.value.to_ascii_uppercase();
                    if matches!(up.as_str(), "ROW" | "MAP" | "MULTISET" | "ARRAY")
                        && matches!(p.peek_nth_token(1).token, Token::Lt | Token::LParen)
                    {
                        return unsupported(
                            &format!(
                                "the type {up}<..> of column `{name}` (weir's types are scalars)"
                            ),
                            p.peek_token().span.start,
                        );
                    }
                }
                let ty = p.parse_data_type()?;
                let mut not_null = false;
                loop {
                    if p.parse_keywords(&[Keyword::NOT, Keyword::NULL]) {
                        not_null = true;
                    } else if p.parse_keyword(Keyword::NULL) {
                    } else if p.parse_keywords(&[Keyword::PRIMARY, Keyword::KEY]) {
                        p.expect_keywords(&[Keyword::NOT, Keyword::ENFORCED])?;
                        def.primary_key = Some(vec![name.clone()]);
                    } else if p.parse_keyword(Keyword::COMMENT) {
                        p.parse_literal_string()?;
                    } else if p.peek_keyword(Keyword::METADATA) {
                        // Flink's `c TYPE METADATA [FROM 'key'] [VIRTUAL]`:
                        // read, so the error names the column and the key.
                        let at = p.next_token().span.start;
                        let key = if p.parse_keyword(Keyword::FROM) {
                            p.parse_literal_string()?
                        } else {
                            name.clone()
                        };
                        return unsupported(
                            &format!(
                                "the METADATA column `{name}` (connector metadata `{key}`) of table `{}`",
                                def.name
                            ),
                            at,
                        );
                    } else {
                        break;
                    }
                }
                def.columns.push(ColumnDef::Physical { name, ty, not_null });
            }
        }
        if !p.consume_token(&Token::Comma) {
            break;
        }
    }
    p.expect_token(&Token::RParen)?;
    if p.parse_keyword(Keyword::COMMENT) {
        p.parse_literal_string()?;
    }
    if p.parse_keyword(Keyword::WITH) {
        p.expect_token(&Token::LParen)?;
        if !p.consume_token(&Token::RParen) {
            loop {
                let key = p.parse_literal_string()?;
                p.expect_token(&Token::Eq)?;
                let value = p.parse_literal_string()?;
                def.options.insert(key, value);
                if !p.consume_token(&Token::Comma) {
                    break;
                }
            }
            p.expect_token(&Token::RParen)?;
        }
    }
    Ok(def)
}

/// Whether a query is a plain `SELECT` body (for error messages).
pub fn is_select(q: &Query) -> bool {
    matches!(*q.body, SetExpr::Select(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flink_script_parses() {
        let s = parse_script(
            "SET 'parallelism.default' = '2';
             CREATE TABLE clicks (
                 user_id BIGINT NOT NULL,
                 url STRING,
                 ts TIMESTAMP(3),
                 ts2 AS ts + INTERVAL '1' SECOND,
                 WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
                 PRIMARY KEY (user_id) NOT ENFORCED
             ) WITH ('connector' = 'filesystem', 'path' = '/tmp/x', 'format' = 'csv');
             CREATE VIEW v AS SELECT user_id FROM clicks;
             INSERT INTO out SELECT window_start, COUNT(*) FROM TABLE(
                TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' MINUTES))
                GROUP BY window_start, window_end;
             EXPLAIN SELECT * FROM v;",
        )
        .unwrap();
        assert_eq!(s.len(), 5);
        let Statement::CreateTable(t) = &s[1] else {
            panic!()
        };
        assert_eq!(t.columns.len(), 4);
        assert_eq!(t.watermark.as_ref().unwrap().0, "ts");
        assert_eq!(t.primary_key.as_deref(), Some(&["user_id".to_string()][..]));
        assert_eq!(t.options["format"], "csv");
        assert!(matches!(s[4], Statement::Explain(_)));
    }

    /// Flink's docs write a tab delimiter as `U&'\0009'`: a Unicode
    /// string literal is its string, in options and in queries (it was a
    /// syntax error).
    #[test]
    fn unicode_string_literals_are_their_strings() {
        let s = parse_script(
            "CREATE TABLE t (a INT) WITH ('format' = 'csv', 'csv.field-delimiter' = U&'\\0009');
             SELECT U&'a\\0062c' AS x, 'U&' AS u;",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let Statement::CreateTable(t) = &s[0] else {
            panic!()
        };
        assert_eq!(t.options["csv.field-delimiter"], "\t");
        let Statement::Query(q) = &s[1] else { panic!() };
        assert_eq!(q.to_string(), "SELECT 'abc' AS x, 'U&' AS u");
    }

    #[test]
    fn drop_table_and_view_parse_as_flink_writes_them() {
        let s = parse_script("DROP TABLE IF EXISTS t; DROP TEMPORARY VIEW v; DROP TABLE db.u;")
            .unwrap();
        let drops: Vec<(String, bool, bool)> = s
            .into_iter()
            .map(|d| match d {
                Statement::Drop {
                    name,
                    view,
                    if_exists,
                } => (name, view, if_exists),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            drops,
            [
                ("t".into(), false, true),
                ("v".into(), true, false),
                ("u".into(), false, false)
            ]
        );
        let e = parse_script("DROP FUNCTION f;").unwrap_err().to_string();
        assert!(e.contains("DROP TABLE / DROP VIEW"), "{e}");
    }

    /// A METADATA column (Flink's connector metadata) is refused naming
    /// the column, its key and the table, with or without `FROM` and
    /// `VIRTUAL`.
    #[test]
    fn metadata_columns_are_refused_by_name() {
        for (col, key) in [
            ("f STRING METADATA FROM 'file.path' VIRTUAL", "file.path"),
            ("`timestamp` TIMESTAMP_LTZ(3) METADATA", "timestamp"),
        ] {
            let e = parse_script(&format!(
                "CREATE TABLE t (a INT, {col}) WITH ('connector' = 'datagen');"
            ))
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("METADATA column")
                    && e.contains(&format!("`{key}`"))
                    && e.contains("table `t`")
                    && e.contains("not supported"),
                "{e}"
            );
        }
    }

    /// CTAS and CREATE TABLE .. LIKE are refused by name, not as syntax;
    /// a view's column list names its query's columns.
    #[test]
    fn ctas_and_like_are_refused_by_name_and_view_columns_are_taken() {
        for (sql, what) in [
            (
                "CREATE TABLE c WITH ('connector' = 'blackhole') AS SELECT 1;",
                "(CTAS",
            ),
            ("CREATE TABLE c AS SELECT 1;", "(CTAS"),
            ("CREATE TABLE c LIKE t;", "LIKE"),
            ("CREATE TABLE c WITH ('path' = '/x') LIKE t;", "LIKE"),
        ] {
            let e = parse_script(sql).unwrap_err().to_string();
            assert!(
                e.contains(what) && e.contains("`c`") && e.contains("not supported"),
                "{e}"
            );
        }
        let s = parse_script("CREATE VIEW v (x, y) AS SELECT a, b FROM t;").unwrap();
        let Statement::CreateView { query, .. } = &s[0] else {
            panic!("a view")
        };
        assert!(query.to_string().contains("(x, y)"), "{query}");
    }

    /// The SQL client's statement sets, both spellings, hold INSERTs whose
    /// bounds are dropped; a set left open, an END without a set, a
    /// nested set or another statement in a set is an error naming where.
    #[test]
    fn statement_sets_hold_inserts() {
        let inserts = |text: &str| -> Vec<String> {
            parse_script(text)
                .unwrap_or_else(|e| panic!("{text}: {e}"))
                .iter()
                .map(|s| match s {
                    Statement::Insert { table, .. } => table.clone(),
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        assert_eq!(
            inserts(
                "EXECUTE STATEMENT SET\nBEGIN\n  INSERT INTO a SELECT 1;\n  INSERT INTO b SELECT 2;\nEND;"
            ),
            ["a", "b"]
        );
        assert_eq!(
            inserts("BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;\nINSERT INTO b SELECT 2;\nEND;"),
            ["a", "b"]
        );
        for (text, want) in [
            (
                "BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;",
                "not closed with END at Line: 1, Column: 1",
            ),
            (
                "INSERT INTO a SELECT 1;\nEND;",
                "END without BEGIN STATEMENT SET at Line: 2, Column: 1",
            ),
            (
                "BEGIN STATEMENT SET;\nBEGIN STATEMENT SET;\nEND;",
                "a statement set inside another at Line: 2, Column: 1",
            ),
            (
                "BEGIN STATEMENT SET;\n  SELECT 1;\nEND;",
                "INSERT statements only; this one is not at Line: 2, Column: 3",
            ),
        ] {
            let e = parse_script(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let e = parse_script("CREATE TABLE t (a BIGINT) WITH ('x' = 'y');\nSELEC a FROM t;")
            .unwrap_err()
            .to_string();
        assert!(e.contains("Line: 2, Column: 1"), "{e}");
        let e = parse_script("SELECT a FROM t WHERE")
            .unwrap_err()
            .to_string();
        assert!(e.contains("Line: 1"), "{e}");
    }
}
