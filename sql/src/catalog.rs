//! The tables and views a script created: each table's columns (physical
//! and computed), its event-time attribute and watermark delay, its
//! primary key and its connector.

use std::collections::HashMap;
use std::sync::Arc;

use sqlparser::ast::{BinaryOperator, Expr, Query};

use crate::connectors::Connector;
use crate::error::{Result, SqlError};
use crate::expr::{self, Scalar, Scope};
use crate::script::{ColumnDef, TableDef};
use crate::types::{DataType, Field, Schema};

/// A table of the catalog.
#[derive(Debug)]
pub struct Table {
    /// Its name as created.
    pub name: String,
    /// The columns a connector reads or writes.
    pub physical: Schema,
    /// All columns: the physical ones, then the computed ones, in the
    /// order written (the rowtime column marked).
    pub schema: Schema,
    /// For each column of `schema`, where it comes from: a physical column
    /// or an expression over the physical row.
    pub columns: Vec<Scalar>,
    /// The event-time column and the watermark's delay behind it (ms).
    pub watermark: Option<(usize, i64)>,
    /// The primary key's columns.
    pub primary_key: Option<Vec<usize>>,
    /// The connector and its options, checked.
    pub connector: Connector,
}

/// Tables and views by lower-case name.
#[derive(Debug, Default)]
pub struct Catalog {
    tables: HashMap<String, Arc<Table>>,
    views: HashMap<String, Box<Query>>,
}

impl Catalog {
    /// Adds `CREATE TABLE`'s table (an error names what is wrong); with
    /// `IF NOT EXISTS`, a table of that name already there stays.
    pub fn create_table(&mut self, def: &TableDef) -> Result<()> {
        let key = def.name.to_ascii_lowercase();
        if def.if_not_exists && self.tables.contains_key(&key) {
            return Ok(());
        }
        if self.tables.contains_key(&key) || self.views.contains_key(&key) {
            return Err(SqlError::Plan(format!(
                "table `{}` already exists",
                def.name
            )));
        }
        let table = build_table(def)?;
        self.tables.insert(key, Arc::new(table));
        Ok(())
    }

    /// Adds a view; with `if_not_exists`, a view of that name already
    /// there stays.
    pub fn create_view(
        &mut self,
        name: &str,
        query: Box<Query>,
        if_not_exists: bool,
    ) -> Result<()> {
        let key = name.to_ascii_lowercase();
        if if_not_exists && self.views.contains_key(&key) {
            return Ok(());
        }
        if self.tables.contains_key(&key) || self.views.contains_key(&key) {
            return Err(SqlError::Plan(format!(
                "table or view `{name}` already exists"
            )));
        }
        self.views.insert(key, query);
        Ok(())
    }

    /// `DROP TABLE` (`view`: `DROP VIEW`) `name`: whether there was one
    /// of that kind to drop. Queries planned before keep what they read.
    pub fn drop(&mut self, name: &str, view: bool) -> bool {
        let key = name.to_ascii_lowercase();
        if view {
            self.views.remove(&key).is_some()
        } else {
            self.tables.remove(&key).is_some()
        }
    }

    /// The table named `name`.
    pub fn table(&self, name: &str) -> Option<&Arc<Table>> {
        self.tables.get(&name.to_ascii_lowercase())
    }

    /// The tables' names (as created), sorted.
    pub fn table_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.tables.values().map(|t| t.name.clone()).collect();
        v.sort();
        v
    }

    /// The views' names (lower case), sorted.
    pub fn view_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.views.keys().cloned().collect();
        v.sort();
        v
    }

    /// The view named `name`.
    pub fn view(&self, name: &str) -> Option<&Query> {
        self.views.get(&name.to_ascii_lowercase()).map(|q| &**q)
    }
}

fn build_table(def: &TableDef) -> Result<Table> {
    let conn_err = |message: String| SqlError::Connector {
        table: def.name.clone(),
        message,
    };
    let mut physical = Vec::new();
    for c in &def.columns {
        if let ColumnDef::Physical { name, ty, not_null } = c {
            if physical
                .iter()
                .any(|f: &Field| f.name.eq_ignore_ascii_case(name))
            {
                return Err(conn_err(format!("column `{name}` is declared twice")));
            }
            let mut f = Field::new(name.clone(), expr::data_type(ty)?);
            f.nullable = !not_null;
            physical.push(f);
        }
    }
    let physical = Schema::new(physical);
    let scope = Scope::of(&physical, None);
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for c in &def.columns {
        match c {
            ColumnDef::Physical { name, .. } => {
                let i = physical.index_of(name).expect("a physical column");
                fields.push(physical.fields[i].clone());
                columns.push(Scalar::Column(i, physical.fields[i].ty));
            }
            ColumnDef::Computed { name, expr: e } => {
                if fields
                    .iter()
                    .any(|f: &Field| f.name.eq_ignore_ascii_case(name))
                {
                    return Err(conn_err(format!("column `{name}` is declared twice")));
                }
                let s = expr::compile(e, &scope)
                    .map_err(|e| conn_err(format!("computed column `{name}`: {e}")))?;
                let mut f = Field::new(name.clone(), s.ty());
                f.proctime = s.is_proctime();
                fields.push(f);
                columns.push(s);
            }
        }
    }
    let mut schema = Schema::new(fields);
    let watermark = match &def.watermark {
        None => None,
        Some((col, e)) => {
            let i = schema
                .index_of(col)
                .ok_or_else(|| conn_err(format!("WATERMARK FOR `{col}`: no such column")))?;
            if !schema.fields[i].ty.is_timestamp() {
                return Err(conn_err(format!(
                    "WATERMARK FOR `{col}`: the column is {}, not TIMESTAMP(3) or TIMESTAMP_LTZ(3)",
                    schema.fields[i].ty
                )));
            }
            let delay = watermark_delay(col, e).ok_or_else(|| {
                conn_err(format!(
                    "WATERMARK FOR `{col}` AS `{e}`: weir takes `{col}` or `{col} - INTERVAL '..' unit` (a bounded out-of-orderness)"
                ))
            })?;
            schema.fields[i].rowtime = true;
            Some((i, delay))
        }
    };
    let primary_key = match &def.primary_key {
        None => None,
        Some(cols) => Some(
            cols.iter()
                .map(|c| {
                    schema.index_of(c).ok_or_else(|| {
                        conn_err(format!("PRIMARY KEY column `{c}`: no such column"))
                    })
                })
                .collect::<Result<Vec<_>>>()?,
        ),
    };
    // upsert-kafka's record key is the primary key (Flink's rule).
    let mut options = def.options.clone();
    if options
        .get("connector")
        .is_some_and(|c| c.eq_ignore_ascii_case("upsert-kafka"))
    {
        match &def.primary_key {
            Some(cols) if !options.contains_key("key.fields") => {
                options.insert("key.fields".into(), cols.join(";"));
            }
            Some(_) => {}
            None => {
                return Err(conn_err(
                    "'upsert-kafka' needs a PRIMARY KEY (.. ) NOT ENFORCED: its columns are the record key".into(),
                ))
            }
        }
    }
    let connector = Connector::from_options(&def.name, &options, &physical)?;
    Ok(Table {
        name: def.name.clone(),
        physical,
        schema,
        columns,
        watermark,
        primary_key,
        connector,
    })
}

/// The delay of `col - INTERVAL '..'` (or 0 for `col`).
fn watermark_delay(col: &str, e: &Expr) -> Option<i64> {
    let is_col = |e: &Expr| matches!(e, Expr::Identifier(i) if i.value.eq_ignore_ascii_case(col));
    match e {
        e if is_col(e) => Some(0),
        Expr::Nested(x) => watermark_delay(col, x),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Minus,
            right,
        } if is_col(left) => match right.as_ref() {
            Expr::Interval(iv) => expr::interval_ms(iv).ok().filter(|d| *d >= 0),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a column type can be a window's time attribute.
pub fn is_time(ty: DataType) -> bool {
    ty.is_timestamp()
}
