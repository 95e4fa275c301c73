//! Per-row rolling aggregation over a whole column (slide 1): row `i` gets
//! the aggregate of rows `(i - window, i]`, as Spark's
//! `ROWS BETWEEN window-1 PRECEDING AND CURRENT ROW`; a window at the start
//! holds fewer rows and is still emitted. `min_periods = k` gives null where
//! fewer than `k` non-null values are in the window (pandas).
//!
//! `algorithm = auto` runs the fastest kernel for the operation; a named
//! algorithm runs that FIFO aggregator step by step (insert, evict, query),
//! which is what benchmarks and cross-checks want.

use arrow_array::{Array, ArrayRef};

use crate::engine::{AggKind, Column, DType, FromArrow, OutBuilder, ToArrow};
use crate::fifo::{Algorithm, FifoAggregator, New};
use crate::monoid::AggOp;
use crate::{invalid, Result};

/// Validate arguments shared by every entry point.
pub fn check_window(window: usize, min_periods: Option<usize>) -> Result<()> {
    if window == 0 {
        return invalid!("window must be a positive number of rows, got 0");
    }
    if let Some(mp) = min_periods {
        if mp > window {
            return invalid!("min_periods ({mp}) must be <= window ({window})");
        }
    }
    Ok(())
}

/// Rolling `agg` over `values` (int32/int64/float32/float64, nulls allowed).
pub fn rolling_dyn(
    values: &dyn Array,
    window: usize,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
) -> Result<ArrayRef> {
    check_window(window, min_periods)?;
    let dtype = DType::of(values.data_type())?;
    crate::with_dtype!(dtype, |T| {
        let col = <T as FromArrow>::column(values)?;
        crate::with_op!(agg, T, |Op| rolling_op::<Op>(&col, window, min_periods.unwrap_or(0), algo))
    })
}

/// Rolling one operation; picks the kernel.
pub fn rolling_op<M>(col: &Column<M::In>, window: usize, min_periods: usize, algo: Algorithm) -> Result<ArrayRef>
where
    M: AggOp,
    M::Out: ToArrow,
{
    let algo = match algo {
        Algorithm::Auto => Algorithm::TwoStacks,
        a => a,
    };
    algo.check::<M>()?;
    crate::with_fifo!(algo, M, rolling_new(col, window, min_periods))
}

fn rolling_new<M, A>(col: &Column<M::In>, window: usize, min_periods: usize) -> Result<ArrayRef>
where
    M: AggOp,
    M::Out: ToArrow,
    A: FifoAggregator<M> + New,
{
    Ok(rolling_with::<M, A>(col, window, min_periods, A::new_with_capacity(window)?))
}

/// The step-by-step path: one insert, at most one evict and one query per row.
pub fn rolling_with<M, A>(col: &Column<M::In>, window: usize, min_periods: usize, mut agg: A) -> ArrayRef
where
    M: AggOp,
    M::Out: ToArrow,
    A: FifoAggregator<M>,
{
    let n = col.len();
    let mut out = OutBuilder::<M::Out>::with_capacity(n);
    let mut valid_in_window = 0usize;
    for i in 0..n {
        if agg.len() == window {
            agg.evict();
            if col.is_valid(i - window) {
                valid_in_window -= 1;
            }
        }
        if col.is_valid(i) {
            agg.insert(M::lift(col.values[i], i as i64));
            valid_in_window += 1;
        } else {
            agg.insert(M::identity());
        }
        let a = agg.query();
        out.push(if min_periods == 0 || valid_in_window >= min_periods { M::lower(&a) } else { None });
    }
    out.finish()
}
