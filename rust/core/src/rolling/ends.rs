//! first / last (Spark's `first(v)` / `last(v)`, a null row is a row) and
//! their `ignorenulls` forms over count windows: each window's value is
//! one of its rows, so the kernel is a gather. Row `i` of a segment
//! `[s, e)` reads the rows `[max(i + a, s), min(i + b, e - 1)]` (the
//! shape's offsets, `shape.rs`); both ends only move forward as `i` does,
//! so the window's non-null count and its first / last non-null row
//! follow with two pointers, O(1) amortised a row. `min_periods` counts
//! the window's non-null rows, as every kernel does. No aggregation
//! structure and no padding: keyed rolling's segments, any shape and a
//! step run as one call (the FIFO kernels fold `Option`s row by row), and
//! a null-free segment's full windows are a slice copy.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, ScalarBuffer};

use crate::engine::{AggKind, DType};
use crate::Result;

/// The four aggregations this kernel runs.
pub(crate) fn is_end(agg: AggKind) -> bool {
    matches!(agg, AggKind::First | AggKind::Last | AggKind::FirstNonNull | AggKind::LastNonNull)
}

/// `agg` (one of [`is_end`]'s) of the windows `[i + a, i + b]` of each
/// segment `bounds[k]..bounds[k + 1]` of `values` alone (ascending from 0
/// to `values.len()`), for every `step`-th row of a segment (one segment
/// where `step > 1`); null where the window is empty, holds fewer than
/// `min_periods` non-null rows, or (ignoring nulls) has none.
pub(crate) fn rolling_ends(values: &dyn Array, bounds: &[usize], ab: (isize, isize), agg: AggKind, min_periods: usize, step: usize) -> Result<ArrayRef> {
    assert!(is_end(agg) && step >= 1 && (step == 1 || bounds.len() <= 2));
    Ok(match DType::of(values.data_type())? {
        DType::I32 => ends::<Int32Type>(values.as_primitive(), bounds, ab, agg, min_periods, step),
        DType::I64 => ends::<Int64Type>(values.as_primitive(), bounds, ab, agg, min_periods, step),
        DType::F32 => ends::<Float32Type>(values.as_primitive(), bounds, ab, agg, min_periods, step),
        DType::F64 => ends::<Float64Type>(values.as_primitive(), bounds, ab, agg, min_periods, step),
    })
}

fn ends<P: ArrowPrimitiveType>(arr: &PrimitiveArray<P>, bounds: &[usize], (a, b): (isize, isize), agg: AggKind, mp: usize, step: usize) -> ArrayRef {
    let x = arr.values();
    let rows = bounds.windows(2).map(|s| (s[1] - s[0]).div_ceil(step)).sum::<usize>();
    let mut out: Vec<P::Native> = Vec::with_capacity(rows);
    let mut keep = BooleanBufferBuilder::new(rows);
    let oldest = matches!(agg, AggKind::First | AggKind::FirstNonNull);
    let nulls = arr.nulls().filter(|nb| nb.null_count() > 0);
    for s in bounds.windows(2) {
        let (s0, e) = (s[0] as isize, s[1] as isize);
        let at = |i: isize| ((i + a).max(s0), (i + b).min(e - 1));
        match nulls {
            None => {
                // Every row counts: a window keeps its value when it holds
                // `mp` rows; full windows in the middle are a slice copy.
                let full = (b - a + 1) as usize >= mp.max(1);
                let (m0, m1) = (s0 - a.min(0), e - b.max(0));
                let mut i = s0;
                while i < e {
                    let (lo, hi) = at(i);
                    if step == 1 && full && i >= m0 && i < m1 {
                        let src = if oldest { i + a } else { i + b } as usize;
                        let len = (m1 - i) as usize;
                        out.extend_from_slice(&x[src..src + len]);
                        keep.append_n(len, true);
                        i = m1;
                        continue;
                    }
                    let ok = lo <= hi && (hi - lo + 1) as usize >= mp;
                    out.push(if ok { x[if oldest { lo } else { hi } as usize] } else { P::Native::default() });
                    keep.append(ok);
                    i += step as isize;
                }
            }
            Some(nb) => {
                let valid = |j: isize| nb.is_valid(j as usize);
                // `count`: the non-null rows of [l, h], rows below `l` left
                // (or were passed over before entering, under a step),
                // rows up to `h` entered.
                let (mut count, mut l, mut h) = (0usize, s0, s0 - 1);
                // The last non-null row at or before `h`; the first at or
                // after the window's start (a scan that only moves on).
                let (mut last_nn, mut first_nn) = (s0 - 1, s0);
                for i in (s0..e).step_by(step) {
                    let (lo, hi) = at(i);
                    while h < hi {
                        h += 1;
                        if valid(h) {
                            count += (h >= l) as usize;
                            last_nn = h;
                        }
                    }
                    while l < lo {
                        count -= (l <= h && valid(l)) as usize;
                        l += 1;
                    }
                    let pick = match agg {
                        _ if lo > hi => None,
                        AggKind::First => Some(lo),
                        AggKind::Last => Some(hi),
                        AggKind::FirstNonNull => {
                            first_nn = first_nn.max(lo);
                            while first_nn <= hi && !valid(first_nn) {
                                first_nn += 1;
                            }
                            Some(first_nn).filter(|&j| j <= hi)
                        }
                        _ => Some(last_nn).filter(|&j| j >= lo),
                    };
                    // a picked null row (first / last) is null
                    let pick = pick.filter(|&j| count >= mp && valid(j));
                    out.push(pick.map_or(P::Native::default(), |j| x[j as usize]));
                    keep.append(pick.is_some());
                }
            }
        }
    }
    let keep = NullBuffer::new(keep.finish());
    Arc::new(PrimitiveArray::<P>::new(ScalarBuffer::from(out), Some(keep).filter(|k| k.null_count() > 0)))
}
