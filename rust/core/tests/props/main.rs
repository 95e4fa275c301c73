//! The core's property and targeted tests, one binary (each test binary
//! monomorphises the generic core again, so one binary builds once).
//! One module per area; `common` holds the generators and oracles.
//!
//! Run one area with a filter: `cargo test -p slidewise-core --test props fifo::`.
//! A failure proptest finds is saved beside its module (`fifo.proptest-regressions`
//! next to `fifo.rs`), replayed first on every later run, and committed.

mod common;
mod fifo;
mod fifo_algorithms;
mod fifo_complexity;
mod flatfit;
mod general;
mod keyed;
mod many;
mod masks;
mod optimizer;
mod overflow;
mod order;
mod partial;
mod rolling;
mod shape;
mod spine;
mod threads;
mod time;
mod window;
mod zero_sign;
