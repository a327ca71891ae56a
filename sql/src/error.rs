//! What goes wrong in a SQL script, each error naming the statement's
//! line and column, table, column, function or option involved.

use thiserror::Error;

/// An error in a SQL script or in planning it. Nothing starts when one
/// is returned.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SqlError {
    /// The text is not SQL weir reads (sqlparser's message: line and column).
    #[error("SQL syntax error: {0}")]
    Syntax(String),
    /// A table or view not created in the script.
    #[error("unknown table `{0}`")]
    UnknownTable(String),
    /// A column not in scope.
    #[error("unknown column `{column}` (in scope: {in_scope})")]
    UnknownColumn {
        /// The name written.
        column: String,
        /// The columns that are.
        in_scope: String,
    },
    /// A function weir does not have.
    #[error("unknown function `{0}`")]
    UnknownFunction(String),
    /// Operand types that do not fit.
    #[error("type mismatch: {0}")]
    Type(String),
    /// SQL weir reads but does not run.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// A connector, format or option problem in `CREATE TABLE ... WITH`.
    #[error("table `{table}`: {message}")]
    Connector {
        /// The table.
        table: String,
        /// What is wrong.
        message: String,
    },
    /// Anything else the planner refuses, said plainly.
    #[error("{0}")]
    Plan(String),
}

/// Results of this crate.
pub type Result<T, E = SqlError> = std::result::Result<T, E>;
