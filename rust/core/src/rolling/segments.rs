//! Many short columns in one call: the rows of keyed rolling's short keys
//! (keyed.rs), grouped, with the arithmetic restarted at every key's first
//! row. Sum, mean, geomean and the moments carry state from row to row (a
//! compensated chain, a block's shift), so they cannot run the keys as one
//! padded column as max / min do: a key's value would depend on the rows of
//! the keys before it. Here each key runs the same kernel as
//! [`super::rolling_plain`] on that key alone, into one shared output, so
//! its bits are those of one call per key, without a call's arrays (the
//! allocations were most of a 5-row key's time).

use arrow_array::ArrayRef;
use arrow_buffer::{BooleanBufferBuilder, NullBuffer};

use super::{append_validity, buffer, filled, moments, sum, window_counts, FastNum};
use crate::engine::{AggKind, Column, ToArrow};

/// The aggregations [`rolling_segments`] runs: those whose kernels carry
/// state from row to row (a compensated chain, a block's shift).
pub(crate) fn restarts(agg: AggKind) -> bool {
    matches!(agg, AggKind::Sum | AggKind::Mean | AggKind::Geomean | AggKind::Var | AggKind::Std | AggKind::VarPop | AggKind::StdPop)
}

/// `agg` over each segment `bounds[k]..bounds[k + 1]` of `col` alone, as
/// [`super::rolling_split`]'s `specialised` gives it on that segment (the
/// window capped to the segment, all null below `mp` rows). `None` for
/// another aggregation, or where a segment's variance kernel declines
/// (squares that could overflow): the caller runs one call per key.
pub(super) fn rolling_segments<T: FastNum>(col: &Column<T>, bounds: &[usize], window: usize, mp: usize, agg: AggKind) -> Option<ArrayRef> {
    let (ddof, sqrt) = match agg {
        AggKind::Sum | AggKind::Mean | AggKind::Geomean => (0, false),
        AggKind::Var => (1, false),
        AggKind::Std => (1, true),
        AggKind::VarPop => (0, false),
        AggKind::StdPop => (0, true),
        _ => return None,
    };
    let n = col.len();
    debug_assert!(bounds.first() == Some(&0) && bounds.last() == Some(&n));
    let mut valid = BooleanBufferBuilder::new(n);
    // Each segment: its rows, its window, its nulls (none where it has
    // none, as a call on it alone sees it) and their counts.
    let mut each = |f: &mut dyn FnMut(usize, usize, usize, Option<&NullBuffer>, Option<&[u32]>) -> bool| -> bool {
        for b in bounds.windows(2) {
            let (lo, hi) = (b[0], b[1]);
            let w = window.min((hi - lo).max(1));
            let need = match agg {
                AggKind::Sum | AggKind::Mean | AggKind::Geomean => mp.max(1),
                _ => mp.max(ddof + 1),
            };
            if mp > w {
                valid.append_n(hi - lo, false);
                continue;
            }
            let nb = col.nulls.map(|nb| nb.slice(lo, hi - lo)).filter(|nb| nb.null_count() > 0);
            let counts = nb.as_ref().map(|nb| window_counts(nb, w));
            if !f(lo, hi, w, nb.as_ref(), counts.as_deref()) {
                return false;
            }
            append_validity(&mut valid, hi - lo, w, need, counts.as_deref());
        }
        true
    };
    let nulls = |mut v: BooleanBufferBuilder| Some(NullBuffer::new(v.finish())).filter(|nb| nb.null_count() > 0);
    match agg {
        AggKind::Sum | AggKind::Mean => {
            // Null slots zeroed once for the run (elementwise, as each key's
            // own call would).
            let zeroed: Option<Vec<T>> = col.nulls.map(|_| filled(col, T::default()));
            let xs = zeroed.as_deref().unwrap_or(col.values);
            if agg == AggKind::Sum {
                let mut out = buffer::<T::Wide>(n);
                each(&mut |lo, hi, w, _, _| {
                    T::window_sums_into(&xs[lo..hi], w, &mut out[lo..hi]);
                    true
                });
                return Some(<T::Wide as ToArrow>::to_arrow(out, nulls(valid)));
            }
            let mut out = buffer::<f64>(n);
            each(&mut |lo, hi, w, _, counts| {
                sum::mean_into(&xs[lo..hi], w, counts, &mut out[lo..hi]);
                true
            });
            Some(f64::to_arrow(out, nulls(valid)))
        }
        AggKind::Geomean => {
            // The logarithms once for the run (elementwise, as each key's
            // own call takes them), the mean's kernel per key.
            let logs = sum::logs_of(col, 1);
            let mut out = buffer::<f64>(n);
            each(&mut |lo, hi, w, _, counts| {
                sum::geomean_into(&logs[lo..hi], w, counts, &mut out[lo..hi]);
                true
            });
            Some(f64::to_arrow(out, nulls(valid)))
        }
        _ => {
            // As moments::rolling_var on one segment, its scratch kept
            // across the segments.
            let mut out = buffer::<f64>(n);
            let (mut filled, mut weights) = (Vec::new(), Vec::new());
            let ok = each(&mut |lo, hi, w, nb, _| {
                let seg = Column { values: &col.values[lo..hi], nulls: nb };
                moments::var_column_into(&seg, w, ddof, sqrt, 1, &mut out[lo..hi], &mut filled, &mut weights)
            });
            ok.then(|| f64::to_arrow(out, nulls(valid)))
        }
    }
}
