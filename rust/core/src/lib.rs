//! slidewise-core: incremental sliding-window aggregation in pure Rust.
//!
//! * [`monoid`]: lift / combine / lower over monoids (Reactive Aggregator §3).
//! * [`ops`]: the aggregation operations, generic over the input dtype.
//! * [`fifo`]: FIFO final aggregators, one file per algorithm.
//! * [`rolling`]: per-row batch kernels (`rolling()` with slide 1).
//! * [`stream`]: the stream spine: count, time and session windows, keyed
//!   or not, in order or out of order, behind one batch-level trait.
//! * [`partial`]: partial aggregation: Panes, Pairs, Cutty slicing.
//! * [`plan`]: shared execution plans for many queries over one stream.
//! * [`optimizer`]: WeaveShare with F1 edge counting: which queries share a plan.
//! * [`keys`]: key identity and the per-batch partition by key.
//! * [`engine`]: run-time dispatch from (agg name, Arrow dtype, algorithm)
//!   to one monomorphised implementation: one virtual call per batch.
//!
//! The core knows nothing of Python; `rust/python` is a thin binding.

pub mod codec;
pub mod engine;
pub mod error;
pub mod fifo;
pub mod general;
pub mod keys;
pub mod monoid;
pub mod ops;
pub mod optimizer;
pub mod partial;
pub mod plan;
pub mod slide;
pub mod rolling;
pub mod stream;

pub use error::{Error, Result};
pub use fifo::{Algorithm, FifoAggregator};
pub use monoid::{AggOp, Monoid};
