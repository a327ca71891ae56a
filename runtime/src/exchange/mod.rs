//! Exchanges: how records cross from one stage to the next. The output
//! side (per-channel buffers, credit, buffer timeout), the input gate
//! (reading channels, barrier alignment, unaligned capture), the record
//! decoders, buffer debloating, the watermark valve, the input task, and
//! what the sources of a watermark alignment group share.

pub mod alignment;
pub mod debloat;
pub mod decoder;
pub mod fan_out;
pub mod flush;
pub mod gate;
pub mod input_task;
pub mod output;
pub mod stamped;
pub mod throughput;
pub mod valve;
pub mod watermark_alignment;

pub use alignment::BarrierAligner;
pub use debloat::{BufferDebloater, DebloatOptions, DebloatTarget};
pub use decoder::{CoInput, CoInputDecoder, RecordDecoder, WireDecoder};
pub use fan_out::FanOutOutput;
pub use flush::{BufferTimeout, OperatorTimeouts};
pub use gate::InputGate;
pub use input_task::InputTask;
pub use output::ExchangeOutput;
pub use valve::WatermarkValve;
pub use watermark_alignment::{AlignmentGroupMember, WatermarkAlignmentGroups};
