//! The window operator of one partition of a stream (the whole stream, or
//! one key's rows): what count, time, out-of-order and session windows each
//! implement, and the one thing [`super::driver::Driver`] runs, keyed or
//! not.

use crate::codec::Codec;
use crate::monoid::AggOp;
use crate::engine::{Column, FromArrow, OutBuilder, ToArrow};
use crate::Result;

/// One partition's rows of a batch, contiguous.
pub struct Rows<'a, T> {
    pub col: Column<'a, T>,
    /// Event times (time and session windows), non-null.
    pub ts: Option<&'a [i64]>,
    /// Argument column of argmax / argmin, as i64.
    pub args: Option<&'a [i64]>,
}

/// One query's results being built: values, window starts, window ends.
/// Operators append to a slice of these (one per query), so a keyed stream
/// collects every key's windows into one set of builders.
pub type Emit<O> = (OutBuilder<O>, Vec<i64>, Vec<i64>);

/// Empty builders for `queries` queries.
pub fn new_emit<O: ToArrow>(queries: usize) -> Vec<Emit<O>> {
    (0..queries).map(|_| (OutBuilder::with_capacity(16), Vec::new(), Vec::new())).collect()
}

/// An operation whose partials a checkpoint can hold: every stream runs
/// one. (The algebra itself, `monoid`, `fifo/`, `general/`, knows nothing
/// of checkpoints.)
pub trait Saved: AggOp<Agg: Codec> {}

impl<M: AggOp<Agg: Codec>> Saved for M {}

/// The watermark as a batch found it and as it left it (out-of-order
/// streams; `None` before the first row and for in-order streams). Every
/// row a batch pushes is on time under `before`; `after` bounds the rows
/// still to come: a later row is on time only if a window of it ends after
/// `after`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Clock {
    pub before: Option<i64>,
    pub after: Option<i64>,
}

/// The state of one partition. Monomorphised per (operation, dtype): the
/// driver makes one static call per (partition, batch).
pub trait WindowOp: Send + Sized {
    type In: FromArrow + ToArrow + Codec + Copy + Send;
    type Out: ToArrow;
    /// Whether rows carry event times.
    const TIMED: bool;
    /// Whether windows close by the stream's watermark ([`Self::advance`])
    /// rather than by this partition's own rows.
    const WATERMARKED: bool;
    /// Number of queries (one [`Emit`] each).
    fn queries(&self) -> usize;
    /// An empty state of the same queries, sharing their plan; allocates
    /// nothing until it has rows.
    fn fresh(&self) -> Result<Self>;
    /// Where the times `ts` of this partition's rows break its order rule: the index of the
    /// first offending row and the time it came after. Checked for every
    /// partition before any is pushed, so a refused batch changes nothing.
    fn check(&self, _ts: &[i64]) -> Option<(usize, i64)> {
        None
    }
    /// Add rows (watermarked operators: every row is on time under
    /// `clock.before`).
    fn push(&mut self, rows: &Rows<'_, Self::In>, clock: Clock, em: &mut [Emit<Self::Out>]) -> Result<()>;
    /// The watermark moved to `wm`: emit every window ending at or before it.
    fn advance(&mut self, _wm: i64, _em: &mut [Emit<Self::Out>]) {}
    /// End of stream: emit what is left.
    fn flush(&mut self, em: &mut [Emit<Self::Out>]);
    fn save(&self, out: &mut Vec<u8>);
    /// Restore what [`Self::save`] wrote into this fresh state.
    fn restore(&mut self, inp: &mut &[u8]) -> Result<()>;
}

pub use crate::engine::first_decrease;
