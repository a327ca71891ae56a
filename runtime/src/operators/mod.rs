//! The operators, each with its builder: the keyed process operator,
//! the non-keyed process operator, sources, sinks, event-time timestamps,
//! two-input and broadcast operators, the interval join and windows;
//! [`OperatorError`] for parameters that cannot work.

pub mod broadcast;
pub mod error;
pub mod interval_join;
pub mod keyed;
pub mod late_data;
pub mod process;
pub mod side_output;
pub mod sink;
pub mod source;
pub mod timestamps;
pub mod two_input;
pub mod window;

pub use error::OperatorError;
