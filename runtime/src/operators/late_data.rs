//! Where an operator hands records that are late for event time.

/// Where a window operator hands the records it drops as late.
pub type LateOutput<T> = Box<dyn FnMut(T)>;
