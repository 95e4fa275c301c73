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
//!
//! Float64 and int64 columns (every dtype once widened) run [`fast`]: the
//! deque holds row numbers in a plain vector, the test is `extreme.rs`'s
//! `pick`'s order on raw values ([`beats`]), validity is read
//! from the bitmap and the output written in place: 2.5x the generic
//! loop's speed (its keys, `VecDeque` and per-row builder).

use std::collections::VecDeque;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef};

use super::valid::{nulls_of_words, All, Bitmap, Valid};
use super::FastNum;

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
    let nulls = values.logical_nulls();
    let fast_of = |max: bool| -> Option<ArrayRef> {
        macro_rules! typed {
            ($t:ty, $x:expr) => {{
                let x: &[$t] = $x;
                Some(match (&nulls, max) {
                    (None, true) => fast::<$t, All, true>(x, All, bounds, mp),
                    (None, false) => fast::<$t, All, false>(x, All, bounds, mp),
                    (Some(nb), true) => fast::<$t, Bitmap, true>(x, Bitmap::new(nb), bounds, mp),
                    (Some(nb), false) => fast::<$t, Bitmap, false>(x, Bitmap::new(nb), bounds, mp),
                })
            }};
        }
        if let Some(a) = values.as_primitive_opt::<Float64Type>() {
            return typed!(f64, a.values().as_ref());
        }
        if let Some(a) = values.as_primitive_opt::<Int64Type>() {
            return typed!(i64, a.values().as_ref());
        }
        None
    };
    if let Some(out) = fast_of(agg == AggKind::Max) {
        return Ok(crate::engine::narrow(out, &crate::engine::out_type(agg, dtype)));
    }
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

/// [`filter`] on raw values (`MAX`: max, else min): the deque is row
/// numbers, their values non-increasing from its head (`head`: rows
/// before it have left); a newer row pops the rows it [`beats`], the
/// head answers. A row is valid
/// with `min_periods` valid rows in its frame, at least one.
fn fast<T: FastNum + ToArrow, Va: Valid, const MAX: bool>(x: &[T], va: Va, bounds: impl Fn(usize, usize, usize) -> (usize, usize), min_periods: usize) -> ArrayRef {
    let n = x.len();
    let need = min_periods.max(1);
    let mut out = super::buffer_to_fill::<T>(n); // every row written below
    let mut words = Vec::with_capacity(n.div_ceil(64));
    let mut word = 0u64;
    let mut dq: Vec<usize> = Vec::with_capacity(64);
    let mut head = 0usize;
    let (mut lo, mut hi, mut valid) = (0usize, 0usize, 0usize);
    for i in 0..n {
        let (s, e) = bounds(i, lo, hi);
        if s >= hi {
            // a frame past everything held (or the first): start afresh there
            dq.clear();
            (head, lo, hi, valid) = (0, s, s, 0);
        }
        while hi < e {
            if va.bits(hi) & 1 != 0 {
                let v = x[hi];
                while dq.len() > head && beats::<T, MAX>(x[dq[dq.len() - 1]], v) {
                    dq.pop();
                }
                dq.push(hi);
                valid += 1;
            }
            hi += 1;
        }
        while lo < s {
            valid -= (va.bits(lo) & 1) as usize;
            lo += 1;
        }
        while head < dq.len() && dq[head] < s {
            head += 1;
        }
        if head >= 4096 && 2 * head >= dq.len() {
            dq.drain(..head);
            head = 0;
        }
        // an empty frame's row is null, whatever it stores
        out[i] = if head < dq.len() { x[dq[head]] } else { T::LOWEST };
        word |= ((valid >= need) as u64) << (i & 63);
        if i & 63 == 63 {
            words.push(std::mem::take(&mut word));
        }
    }
    if n & 63 != 0 {
        words.push(word);
    }
    super::assert_filled(&out);
    T::to_arrow(out, nulls_of_words(words, n))
}

/// Whether the newer `b` takes the older `a`'s place: strictly better, or
/// a NaN over a number (NaN is above every number, for min too).
#[inline(always)]
fn beats<T: FastNum, const MAX: bool>(a: T, b: T) -> bool {
    (if MAX { b > a } else { b < a }) | T::nan_beats::<MAX>(a, b)
}
