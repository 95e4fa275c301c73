//! slidewise-core: incremental sliding-window aggregation in pure Rust.
//!
//! * [`monoid`]: lift / combine / lower over monoids (Reactive Aggregator §3).
//! * [`ops`]: the aggregation operations, generic over the input dtype.
//! * [`fifo`]: FIFO final aggregators, one file per algorithm.
//! * [`rolling`]: per-row batch kernels (`rolling()` with slide 1).
//! * [`window`]: count windows with Pairs partial aggregation (streams).
//! * [`partial`]: partial aggregation: Panes, Pairs, Cutty slicing.
//! * [`plan`]: shared execution plans for many queries over one stream.
//! * [`optimizer`]: WeaveShare with F1 edge counting: which queries share a plan.
//! * [`time_window`]: Spark-style time windows and per-row time rolling.
//! * [`keyed`]: a key column with independent window state per key.
//! * [`engine`]: run-time dispatch from (agg name, Arrow dtype, algorithm)
//!   to one monomorphised implementation: one virtual call per batch.
//!
//! The core knows nothing of Python; `rust/python` is a thin binding.

pub mod codec;
pub mod engine;
pub mod error;
pub mod fifo;
pub mod general;
pub mod keyed;
pub mod late_window;
pub mod monoid;
pub mod ops;
pub mod optimizer;
pub mod partial;
pub mod plan;
pub mod rolling;
pub mod time_window;
pub mod window;

pub use error::{Error, Result};
pub use fifo::{Algorithm, FifoAggregator};
pub use monoid::{AggOp, Monoid};
