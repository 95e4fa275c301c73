//! Per-row time rolling as pandas' `rolling("5s")`: row `i` aggregates rows
//! `j <= i` with `ts[j] > ts[i] - range`, a variable-size FIFO window run by
//! a FIFO aggregator ([`super::shape::rolling_frames`], which also runs the
//! other shapes: `closed=`, `center=`); under `auto`, sums, means and
//! counts as differences of prefix sums ([`super::prefix::frame_sums`]),
//! var and std as differences of prefix moments
//! ([`super::prefix_moments::frame_vars`]),
//! max and min as TwoStacks laid flat ([`super::two_stacks_frames`]).

use arrow_array::{Array, ArrayRef};

use super::shape::{Frame, Shape};
use super::Split;
use crate::engine::AggKind;
use crate::fifo::Algorithm;
use crate::{invalid, Result};

/// Per-row time rolling (pandas `rolling("5s")` semantics, see the module
/// docs): `ts` non-decreasing, `range > 0` in the timestamps' unit, with
/// pandas' `closed=` and `center=` (module docs of [`super::shape`]);
/// `step` must be 1, as in pandas, which refuses it on time windows.
pub fn rolling_time_dyn(
    values: &dyn Array,
    ts: &dyn Array,
    range: i64,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
    shape: Shape,
) -> Result<ArrayRef> {
    time_split(values, ts, range, agg, min_periods, algo, shape, Split::default())
}

/// [`rolling_time_dyn`] (`auto`) with the rows split over threads as
/// `split` says (tests force thread counts on short columns).
#[doc(hidden)]
pub fn rolling_time_split(values: &dyn Array, ts: &dyn Array, range: i64, agg: AggKind, min_periods: Option<usize>, shape: Shape, split: Split) -> Result<ArrayRef> {
    time_split(values, ts, range, agg, min_periods, Algorithm::Auto, shape, split)
}

#[allow(clippy::too_many_arguments)]
fn time_split(values: &dyn Array, ts: &dyn Array, range: i64, agg: AggKind, min_periods: Option<usize>, algo: Algorithm, shape: Shape, split: Split) -> Result<ArrayRef> {
    if range <= 0 {
        return invalid!("time window must be positive, got {range}");
    }
    if shape.step != 1 {
        return invalid!("step is not supported with time windows (pandas refuses it too), got step={}", shape.step);
    }
    let times = crate::engine::event_times(ts, values.len())?;
    if let Some((i, p)) = crate::engine::first_decrease(times, None) {
        return Err(crate::engine::time_order_error(i, None, times[i], p));
    }
    let frame = Frame::Time { ts: times, range, closed: shape.closed, center: shape.center };
    if algo == Algorithm::Auto {
        if let Some(out) = super::prefix::frame_sums(values, &frame, agg, min_periods.unwrap_or(0), split) {
            return Ok(out);
        }
        if let Some(out) = super::prefix_moments::frame_vars(values, &frame, agg, min_periods.unwrap_or(0), split) {
            return Ok(out);
        }
    }
    if algo == Algorithm::Auto && super::two_stacks_frames::runs(agg) {
        let n = values.len();
        // a frame starts at or after the first row at least `range` (+1)
        // before its row's time, whatever its shape
        let below = |i: usize| times[..=i].partition_point(|&t| t < times[i].saturating_sub(range).saturating_sub(1));
        // one shape's bounds a call, so the kernel's loop inlines them
        let (ts, closed) = (times, shape.closed);
        use super::two_stacks_frames::selective_frames_dyn as run;
        return if shape.center {
            run(values, |i, s, e| super::shape::centred_time(ts, range, closed, n, i, s, e), below, agg, min_periods, split)
        } else {
            run(values, |i, s, e| super::shape::trailing_time(ts, range, closed, i, s, e), below, agg, min_periods, split)
        };
    }
    super::shape::rolling_frames_dyn(values, &frame, agg, min_periods, algo, 1)
}
