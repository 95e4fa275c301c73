//! Max / min over monotone frames (time windows, their `closed=` and
//! `center=` shapes) by Lemire's streaming maximum-minimum filter (D.
//! Lemire, "Streaming maximum-minimum filter using no more than three
//! comparisons per element", Nordic Journal of Computing 13(4), 2006, §2):
//! a deque of the rows that may still be some window's answer, their
//! values non-increasing (max) from front to back. A row entering pops the
//! rows behind it that it beats, and rows leave the front as the window's
//! start passes them, so each row is pushed and popped once: O(1)
//! amortised a row, with no aggregator's partials to build (the generic
//! frame loop runs TwoStacks: 20-30 ns a row, measured on time windows).
//!
//! The test "beats" is the monoid's own `combine`, so the answer is what
//! the FIFO aggregators give, bit for bit: a newer value enters only when
//! strictly greater (`Max::combine` keeps the older of a tie, so the oldest
//! of tied values answers, and signed zeros and NaN order as there).
//! Missing rows are never pushed; they count for `min_periods` only.

use std::collections::VecDeque;

use arrow_array::{Array, ArrayRef};

use crate::engine::{AggKind, Column, DType, FromArrow, OutBuilder, ToArrow};
use crate::monoid::AggOp;
use crate::ops::{Max, Min};
use crate::Result;

/// Whether [`selective_frames_dyn`] runs `agg`.
pub(crate) fn runs(agg: AggKind) -> bool {
    matches!(agg, AggKind::Max | AggKind::Min)
}

/// Max or min ([`runs`]) of each row's frame, as
/// [`super::shape::rolling_frames_dyn`] computes it with any aggregator:
/// `bounds(i, s, e)` is row `i`'s frame `[start, end)` given the previous
/// row's, both non-decreasing (a time frame's `Frame::bounds`).
pub(crate) fn selective_frames_dyn(
    values: &dyn Array,
    bounds: impl Fn(usize, usize, usize) -> (usize, usize) + Copy,
    agg: AggKind,
    min_periods: Option<usize>,
) -> Result<ArrayRef> {
    let dtype = DType::of(values.data_type())?;
    let wide = crate::engine::widen(values)?;
    let values = wide.as_deref().unwrap_or(values);
    let mp = min_periods.unwrap_or(0);
    let out = crate::with_wide_dtype!(dtype.wide(), |T| {
        let col = <T as FromArrow>::column(values)?;
        match agg {
            AggKind::Max => filter::<Max<T>>(&col, bounds, mp),
            AggKind::Min => filter::<Min<T>>(&col, bounds, mp),
            _ => unreachable!("selective_frames_dyn runs max and min"),
        }
    });
    Ok(crate::engine::narrow(out, &crate::engine::out_type(agg, dtype)))
}

fn filter<M>(col: &Column<M::In>, bounds: impl Fn(usize, usize, usize) -> (usize, usize), min_periods: usize) -> ArrayRef
where
    M: AggOp,
    M::Agg: Copy,
    M::Out: ToArrow,
{
    let n = col.len();
    let mut dq: VecDeque<(usize, M::Agg)> = VecDeque::with_capacity(64);
    let mut out = OutBuilder::<M::Out>::with_capacity(n);
    let (mut lo, mut hi, mut valid) = (0usize, 0usize, 0usize);
    for i in 0..n {
        let (s, e) = bounds(i, lo, hi);
        if s >= hi {
            // a frame past everything held (or the first): start afresh there
            dq.clear();
            (lo, hi, valid) = (s, s, 0);
        }
        while hi < e {
            if let Some(x) = col.lift::<M>(hi, hi as i64) {
                while let Some(&(_, b)) = dq.back() {
                    if M::same(&M::combine(&b, &x), &b) {
                        break;
                    }
                    dq.pop_back();
                }
                dq.push_back((hi, x));
                valid += 1;
            }
            hi += 1;
        }
        while lo < s {
            valid -= col.is_valid(lo) as usize;
            lo += 1;
        }
        while dq.front().is_some_and(|&(j, _)| j < s) {
            dq.pop_front();
        }
        out.push(if min_periods > 0 && valid < min_periods {
            None
        } else {
            M::lower(&dq.front().map_or_else(M::identity, |&(_, a)| a))
        });
    }
    out.finish()
}
