//! Per-row time rolling as pandas' `rolling("5s")`: row `i` aggregates rows
//! `j <= i` with `ts[j] > ts[i] - range`, a variable-size FIFO window run by
//! a FIFO aggregator.

use arrow_array::{Array, ArrayRef};

use crate::engine::{AggKind, Column, DType, FromArrow, OutBuilder, ToArrow};
use crate::fifo::{Algorithm, FifoAggregator, New};
use crate::monoid::AggOp;
use crate::{invalid, Result};

/// Per-row time rolling (pandas `rolling("5s")` semantics, see the module
/// docs): `ts` non-decreasing, `range > 0` in the timestamps' unit.
pub fn rolling_time_dyn(
    values: &dyn Array,
    ts: &dyn Array,
    range: i64,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
) -> Result<ArrayRef> {
    if range <= 0 {
        return invalid!("time window must be positive, got {range}");
    }
    let times = crate::engine::event_times(ts, values.len())?;
    if let Some((i, p)) = crate::engine::first_decrease(times, None) {
        return Err(crate::engine::time_order_error(i, None, times[i], p));
    }
    let dtype = DType::of(values.data_type())?;
    // Computed on the wide dtype (`DType::wide`), the result narrowed back.
    let wide = crate::engine::widen(values)?;
    let values = wide.as_deref().unwrap_or(values);
    let out = crate::with_wide_dtype!(dtype.wide(), |T| {
        let col = <T as FromArrow>::column(values)?;
        crate::with_op!(agg, T, |Op| rolling_time_op::<Op>(&col, times, range, min_periods.unwrap_or(0), algo))
    })?;
    Ok(crate::engine::narrow(out, &crate::engine::out_type(agg, dtype)))
}

fn rolling_time_op<M>(col: &Column<M::In>, ts: &[i64], range: i64, min_periods: usize, algo: Algorithm) -> Result<ArrayRef>
where
    M: AggOp,
    M::Out: ToArrow,
{
    let algo = algo.resolve::<M>();
    algo.check::<M>()?;
    // A per-row hot loop: instantiated per algorithm, as `rolling`'s.
    crate::with_fifo!(algo, M, rolling_time_with(col, ts, range, min_periods))
}

fn rolling_time_with<M, A>(col: &Column<M::In>, ts: &[i64], range: i64, min_periods: usize) -> Result<ArrayRef>
where
    M: AggOp,
    M::Out: ToArrow,
    A: FifoAggregator<M> + New,
{
    let mut agg = A::new_with_capacity(64)?;
    let mut out = OutBuilder::<M::Out>::with_capacity(col.len());
    let (mut oldest, mut valid) = (0usize, 0usize);
    for i in 0..col.len() {
        while oldest < i && ts[oldest] <= ts[i].saturating_sub(range) {
            agg.evict();
            valid -= col.is_valid(oldest) as usize;
            oldest += 1;
        }
        valid += col.is_valid(i) as usize;
        agg.insert(col.lift::<M>(i, i as i64).unwrap_or_else(M::identity));
        let a = agg.query();
        out.push(if min_periods == 0 || valid >= min_periods { M::lower(&a) } else { None });
    }
    Ok(out.finish())
}

