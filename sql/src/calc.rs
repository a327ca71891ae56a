//! A calc: a filter and a projection over one row, made as the row's own
//! values rearranged in place wherever the projection takes a column as it
//! is.
//!
//! Projecting by evaluating every output (`Scalar::eval` of a column
//! reference clones the value) costs, for a row of more columns than a
//! row holds inline and a long string, an allocation for the new row, a
//! copy of the string into a new allocation, and the old row's two frees
//! (about a fifth of Nexmark q0's instructions, measured with callgrind).
//! Here the first output that names a column *moves* it: every output
//! that is an expression (or a second reference to a column) is evaluated
//! first, over the row as it came, and then the row's values are permuted
//! by swaps planned once per operator, cut to the projection's width, and
//! the evaluated outputs written into their places. The row keeps its
//! allocation, its strings are never copied, and a projection that takes
//! every column in order does nothing at all.

use smallvec::SmallVec;

use crate::expr::{truth, Scalar};
use crate::value::{Row, Value};

/// One output column of a [`Calc`].
#[derive(Clone, Debug)]
enum Output {
    /// Input column `i`, moved to this place.
    Move(usize),
    /// An expression over the input row (evaluated before any move).
    Eval(Scalar),
}

/// A filter and a projection, planned for rows of one width.
#[derive(Clone, Debug)]
pub struct Calc {
    filter: Option<Scalar>,
    outputs: Box<[Output]>,
    /// The width of the rows the plan is for; a row of another width is
    /// projected by building a new row (never expected, but never wrong).
    width: usize,
    /// Swaps that put every moved column in its output place, in order,
    /// over the row padded with NULLs to the wider of input and output.
    swaps: Box<[(u16, u16)]>,
    /// The projection is every input column in order: rows pass as they are.
    identity: bool,
    /// Some output is evaluated rather than moved.
    evaluates: bool,
}

impl Calc {
    /// A calc of `filter` and `project` over rows of `width` columns.
    pub fn new(filter: Option<Scalar>, project: &[Scalar], width: usize) -> Self {
        let n = width.max(project.len());
        let mut moved = vec![false; n];
        let outputs: Box<[Output]> = project
            .iter()
            .map(|p| match p.as_column() {
                Some(i) if i < width && !moved[i] => {
                    moved[i] = true;
                    Output::Move(i)
                }
                _ => Output::Eval(p.clone()),
            })
            .collect();
        // Where each output's value comes from: a moved column, or for an
        // evaluated output any column no move takes (there are enough:
        // the row is padded to at least the projection's width).
        let mut free = (0..n).filter(|&c| !moved[c]);
        let source: Vec<usize> = outputs
            .iter()
            .map(|o| match o {
                Output::Move(i) => *i,
                Output::Eval(_) => free.next().unwrap_or_else(|| unreachable!("padded row")),
            })
            .collect();
        let swaps = swaps_for(&source, n);
        let identity = project.len() == width
            && outputs
                .iter()
                .enumerate()
                .all(|(j, o)| matches!(o, Output::Move(i) if *i == j));
        let evaluates = outputs.iter().any(|o| matches!(o, Output::Eval(_)));
        Self {
            filter,
            evaluates,
            outputs,
            width,
            swaps,
            identity,
        }
    }

    /// `row` filtered and projected: `None` if the filter does not hold.
    #[inline]
    pub fn apply(&self, row: Row) -> Option<Row> {
        if let Some(f) = &self.filter {
            if truth(&f.eval(&row)) != Some(true) {
                return None;
            }
        }
        Some(self.project(row))
    }

    /// `row` projected.
    #[inline]
    pub fn project(&self, mut row: Row) -> Row {
        if self.identity && row.values.len() == self.width {
            return row;
        }
        if row.values.len() != self.width {
            return self.rebuild(row);
        }
        if !self.evaluates {
            self.permute(&mut row);
            return row;
        }
        // Every evaluated output first, over the row as it came.
        let evaluated: SmallVec<[(usize, Value); 4]> = self
            .outputs
            .iter()
            .enumerate()
            .filter_map(|(j, o)| match o {
                Output::Eval(e) => Some((j, e.eval(&row))),
                Output::Move(_) => None,
            })
            .collect();
        self.permute(&mut row);
        for (j, v) in evaluated {
            row.values[j] = v;
        }
        row
    }

    /// Moves every moved column of `row` to its output place and cuts the
    /// row to the projection's width.
    #[inline]
    fn permute(&self, row: &mut Row) {
        if self.outputs.len() > self.width {
            row.values.resize(self.outputs.len(), Value::Null);
        }
        // The slice once, not the small vector's inline-or-heap test per
        // swap.
        let values: &mut [Value] = &mut row.values;
        for &(a, b) in self.swaps.iter() {
            values.swap(usize::from(a), usize::from(b));
        }
        row.values.truncate(self.outputs.len());
    }

    /// `row` projected into a new row (a row of an unplanned width).
    #[cold]
    fn rebuild(&self, row: Row) -> Row {
        let values = self
            .outputs
            .iter()
            .map(|o| match o {
                Output::Move(i) => row.values.get(*i).cloned().unwrap_or(Value::Null),
                Output::Eval(e) => e.eval(&row),
            })
            .collect();
        Row {
            kind: row.kind,
            values,
        }
    }
}

/// The swaps that make `values[j] = old[source[j]]` for every output `j`
/// of a row of `n` values (`source` injective, below `n`).
fn swaps_for(source: &[usize], n: usize) -> Box<[(u16, u16)]> {
    // `at[i]`: the original column now at index `i`; `loc[c]`: its inverse.
    let mut at: Vec<usize> = (0..n).collect();
    let mut loc: Vec<usize> = (0..n).collect();
    let mut swaps = Vec::new();
    for (j, &c) in source.iter().enumerate() {
        let i = loc[c];
        if i == j {
            continue;
        }
        let d = at[j];
        at[j] = c;
        at[i] = d;
        loc[c] = j;
        loc[d] = i;
        let index = |x: usize| u16::try_from(x).expect("a row has fewer than 65,536 columns");
        swaps.push((index(j), index(i)));
    }
    swaps.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Calc;
    use crate::expr::Scalar;
    use crate::types::DataType;
    use crate::value::{Row, Value};

    fn column(i: usize) -> Scalar {
        Scalar::Column(i, DataType::String)
    }

    fn row(width: usize) -> Row {
        Row::of((0..width).map(|i| Value::Str(format!("column {i} {}", "x".repeat(30)).into())))
    }

    /// The projection as evaluation defines it: each output evaluated
    /// over the input row.
    fn evaluated(project: &[Scalar], r: &Row) -> Row {
        Row::of(project.iter().map(|p| p.eval(r)))
    }

    #[test]
    fn identity_passes_the_row() {
        let calc = Calc::new(None, &[column(0), column(1), column(2)], 3);
        assert_eq!(calc.project(row(3)), row(3));
    }

    #[test]
    fn repeated_columns_and_literals() {
        let project = [
            column(2),
            Scalar::Literal(Value::BigInt(7), DataType::BigInt),
            column(2),
            column(0),
            column(2),
        ];
        let calc = Calc::new(None, &project, 3);
        assert_eq!(calc.project(row(3)), evaluated(&project, &row(3)));
    }

    #[test]
    fn a_row_of_another_width_is_rebuilt() {
        let project = [column(1), column(0)];
        let calc = Calc::new(None, &project, 2);
        assert_eq!(calc.project(row(4)), evaluated(&project, &row(4)));
    }

    proptest! {
        /// Any projection of columns and literals, narrower or wider than
        /// the row, equals evaluating every output.
        #[test]
        fn equals_evaluation(width in 0usize..12, picks in proptest::collection::vec(0usize..14, 0..16)) {
            let project: Vec<Scalar> = picks
                .iter()
                .map(|&p| if p < width { column(p) } else { Scalar::Literal(Value::BigInt(p as i64), DataType::BigInt) })
                .collect();
            let calc = Calc::new(None, &project, width);
            prop_assert_eq!(calc.project(row(width)), evaluated(&project, &row(width)));
        }
    }
}
