//! How bytes move in weir: buffer pools, lock-free SPSC rings, channels and
//! the doorbells that wake parked workers.
//!
//! Data crosses cores as [`NetworkBuffer`]s passed by ownership through
//! [`ring`](mod@ring)s: the sender fills a buffer from its [`BufferPool`], pushes it
//! into the channel's forward ring, the receiver reads the records in place
//! and pushes the buffer into the channel's return ring, back to the pool.
//! There is no lock, no unbounded queue and no per-record allocation on this
//! path; a full ring or an empty pool is backpressure.
#![deny(missing_docs)]

pub mod buffer;
pub mod channel;
pub mod codec;
pub mod doorbell;
pub mod event;
pub mod ring;
mod sync;

pub use buffer::{BufferPool, NetworkBuffer, RecordReader};
pub use channel::{channel, ChannelReceiver, ChannelSender};
pub use codec::{DecodeError, Wire};
pub use doorbell::Doorbell;
pub use event::{
    BarrierKind, ChannelEvent, CheckpointBarrier, LatencyMarker, PriorityBarrier, WatermarkStatus,
};
pub use ring::{ring, Consumer, Producer};
