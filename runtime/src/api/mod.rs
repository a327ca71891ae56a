//! The user's job API: the graph, streams, keyed and windowed streams, and
//! one file per feature with its stream extension (two inputs, the
//! interval join, broadcast).

pub mod broadcast;
pub mod graph;
pub mod interval_join;
pub mod keyed;
pub mod stream;
pub mod two_input;
pub mod window;

pub use broadcast::{BroadcastConnectedStream, BroadcastStream, KeyedBroadcastConnectedStream};
pub use graph::JobGraph;
pub use interval_join::{IntervalJoin, IntervalJoined};
pub use keyed::KeyedStream;
pub use stream::Stream;
pub use two_input::{ConnectedKeyedStreams, DetachedKeyedStream};
pub use window::WindowedStream;
