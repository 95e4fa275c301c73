//! Rolling order statistics: median, quantile and rank (not monoids, so
//! they run on order-statistic structures rather than the FIFO aggregators).
//!
//! Semantics (docs/DESIGN.md "Rolling median, quantile and rank"):
//! * a null is not an input; a window with no value (or fewer than
//!   `min_periods`) gives null;
//! * values are ordered as Spark orders doubles: NaN is a value, above
//!   +inf, every NaN equal to every other; -0.0 equals +0.0 (and is
//!   returned as +0.0);
//! * quantile `q` with pandas' interpolations (`Series.rolling(w).quantile`):
//!   position `q * (n - 1)` in the sorted window, then linear / lower /
//!   higher / midpoint / nearest (half to even position) between its two
//!   neighbours; median is quantile 0.5 with midpoint (pandas computes
//!   `(a + b) / 2` for an even count);
//! * rank as `bottleneck.move_rank`: the rank of the row's own value in
//!   its window, `2 * ((g + (e - 1) / 2) / (n - 1) - 0.5)` with `g` values
//!   below it and `e` equal to it (itself included), 0 for a single value,
//!   null where the row itself is null.
//!
//! Every kernel works on `u64` keys ([`key`]) whose integer order is that
//! value order, computed once per batch from any numeric dtype (ints widen
//! to f64, exact up to 2^53), so each kernel exists once, not per dtype.
//!
//! Kernels (crossovers measured by `python benches/compare_order_stats.py --kernels`):
//! * [`super::sorted_buffer`]: a sorted array updated with one memmove per
//!   row; fastest for short windows, and the push / evict / query structure
//!   a stream can hold ([`SortedWindow`]);
//! * [`super::median_sort`]: Suomela's sort-based median filtering, O(log w)
//!   per row, for long windows (median, quantile);
//! * [`super::fenwick_rank`]: a Fenwick tree over the column's value ranks,
//!   O(log n) per row, for rank over long windows.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;

pub use super::order_stat::{key, quantile_of, quantile_pos, rank_of, unkey, Interpolation, OrderStat, NAN_KEY};
pub use super::sorted_buffer::SortedWindow;
use super::median_sort::Keys as MedianKeys;
use super::order_stat::finish;
use super::shape::{Frame, Shape};
use crate::{invalid, Result};

/// Which kernel runs; `Auto` picks by window length (tests force the others).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderKernel {
    Auto,
    SortedBuffer,
    MedianSort,
    FenwickRank,
}

impl OrderKernel {
    pub fn parse(s: &str) -> Result<OrderKernel> {
        Ok(match s {
            "auto" => OrderKernel::Auto,
            "sorted_buffer" => OrderKernel::SortedBuffer,
            "median_sort" => OrderKernel::MedianSort,
            "fenwick" => OrderKernel::FenwickRank,
            _ => return invalid!("order-statistic kernel must be auto, sorted_buffer, median_sort or fenwick, got {s:?}"),
        })
    }
}

/// Windows up to this length run the sorted buffer (one vector pass over
/// at most `w` keys per row beats Suomela's O(log w) linked-list walk
/// there). Measured with `compare_order_stats.py --kernels`: since Suomela's kernel got
/// 1.3-1.7x faster, the crossover sits at 64-80 rows on an AMD EPYC (Zen 5)
/// and, from the older Intel Xeon figures scaled by that speed-up, at
/// about 100-130 there.
pub const SORTED_BUFFER_MAX: usize = 96;
/// Rank: windows up to this length run the sorted buffer, longer ones the
/// Fenwick tree.
pub const RANK_SORTED_MAX: usize = 512;

/// Writes the keys of rows `r0..r0 + out.len()` of a column into `out`.
pub(crate) type KeyFill<'a> = Box<dyn Fn(usize, &mut [u64]) + Sync + 'a>;

/// The column's keys, computed on demand (any numeric dtype), and its nulls.
pub(crate) fn key_fill(values: &dyn Array) -> Result<(KeyFill<'_>, Option<NullBuffer>)> {
    fn fill<T: Copy + Sync>(xs: &[T], f: impl Fn(T) -> u64 + Sync + 'static) -> KeyFill<'_> {
        Box::new(move |r0, out| {
            for (o, &x) in out.iter_mut().zip(&xs[r0..]) {
                *o = f(x);
            }
        })
    }
    let nulls = values.logical_nulls().filter(|n| n.null_count() > 0);
    let f = match values.data_type() {
        DataType::Float64 => fill(values.as_primitive::<Float64Type>().values(), key),
        DataType::Float32 => fill(values.as_primitive::<Float32Type>().values(), |x| key(x as f64)),
        DataType::Int64 => fill(values.as_primitive::<Int64Type>().values(), |x| key(x as f64)),
        DataType::Int32 => fill(values.as_primitive::<Int32Type>().values(), |x| key(x as f64)),
        other => return invalid!("median / quantile / rank need int32, int64, float32 or float64 values, got {other}"),
    };
    Ok((f, nulls))
}

/// The column as keys (one pass, any numeric dtype) and its nulls.
pub fn keys_of(values: &dyn Array) -> Result<(Vec<u64>, Option<NullBuffer>)> {
    let (f, nulls) = key_fill(values)?;
    // Split over the kernels' threads (the conversion was the serial part
    // of a threaded median).
    let n = values.len();
    let mut keys = super::buffer::<u64>(n);
    let cs = super::cuts(n, super::order_stat::threads(n), Some);
    super::par_ranges(&mut keys[..], &cs, |r0, _, o| f(r0, o));
    Ok((keys, nulls))
}

/// Rolling `stat` over `values`: row `i` reads rows `(i - window, i]`, or
/// as pandas' `closed=` / `center=` / `step=` say ([`Shape`], run by
/// [`order_count_shaped`]).
pub fn rolling_order_dyn(
    values: &dyn Array,
    window: usize,
    stat: OrderStat,
    min_periods: Option<usize>,
    kernel: OrderKernel,
    shape: Shape,
) -> Result<ArrayRef> {
    Ok(rolling_many_order_dyn(values, &[window], stat, min_periods, kernel, shape)?.remove(0))
}

/// [`rolling_order_dyn`] for several windows over the same column: the
/// keys are computed once; one array per window, in the order given.
pub fn rolling_many_order_dyn(
    values: &dyn Array,
    windows: &[usize],
    stat: OrderStat,
    min_periods: Option<usize>,
    kernel: OrderKernel,
    shape: Shape,
) -> Result<Vec<ArrayRef>> {
    for &w in windows {
        super::check_window(w, min_periods)?;
    }
    let mp = min_periods.unwrap_or(0);
    // One window for Suomela's kernel: it converts each block's keys as it
    // sorts the block, so the column's keys are never written out (a
    // buffer as large as the result, in fresh pages: a fifth of a 100k
    // window's time).
    if let ([w], true) = (windows, shape.is_default()) {
        let (n, (w, need)) = (values.len(), window_need(*w, values.len(), mp));
        if let (Some((q, interp)), OrderKernel::MedianSort) = (stat.quantile(), resolve(kernel, stat, w)) {
            let (fill, nulls) = key_fill(values)?;
            return Ok(vec![super::median_sort::rolling_quantile(MedianKeys::Fill(&*fill), n, nulls.as_ref(), w, need, q, interp)]);
        }
    }
    let (keys, nulls) = keys_of(values)?;
    if !shape.is_default() {
        let need = mp.max(1);
        return windows.iter().map(|&w| order_count_shaped(&keys, nulls.as_ref(), w, stat, need, kernel, shape)).collect();
    }
    Ok(windows.iter().map(|&w| rolling_order_keys(&keys, nulls.as_ref(), w, stat, mp, kernel)).collect())
}

/// Rolling `stat` over a time window: row `i` reads the rows `j <= i` with
/// `ts[j] > ts[i] - range` (pandas' `rolling("5m")`, `closed="right"`),
/// times non-decreasing, or as pandas' `closed=` / `center=` say (`step`
/// must be 1: pandas refuses it on time windows). Runs the sorted buffer
/// (a window's length varies, which Suomela's blocks and the Fenwick
/// kernel do not allow).
pub fn rolling_order_time_dyn(
    values: &dyn Array,
    ts: &dyn Array,
    range: i64,
    stat: OrderStat,
    min_periods: Option<usize>,
    shape: Shape,
) -> Result<ArrayRef> {
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
    let (keys, nulls) = keys_of(values)?;
    let need = min_periods.unwrap_or(0).max(1);
    if !shape.is_default() {
        let frame = Frame::Time { ts: times, range, closed: shape.closed, center: shape.center };
        return Ok(order_frames(&keys, nulls.as_ref(), &frame, need, stat, 1));
    }
    Ok(super::sorted_buffer::rolling_bounds(&keys, nulls.as_ref(), &time_starts(times, range), need, stat))
}

/// Each row's first row in its time window `(t - range, t]`.
pub(crate) fn time_starts(times: &[i64], range: i64) -> Vec<usize> {
    let mut lo = 0;
    times
        .iter()
        .map(|&t| {
            while times[lo] <= t.saturating_sub(range) {
                lo += 1;
            }
            lo
        })
        .collect()
}

/// The window the kernels run over `n` rows (no longer than the column)
/// and the values a row needs (at least one).
fn window_need(window: usize, n: usize, min_periods: usize) -> (usize, usize) {
    (window.min(n.max(1)), min_periods.max(1))
}

/// The kernel `auto` picks for `stat` over windows of `window` rows.
fn resolve(kernel: OrderKernel, stat: OrderStat, window: usize) -> OrderKernel {
    match kernel {
        OrderKernel::Auto => match stat {
            OrderStat::Rank if window <= RANK_SORTED_MAX => OrderKernel::SortedBuffer,
            OrderStat::Rank => OrderKernel::FenwickRank,
            _ if window <= SORTED_BUFFER_MAX => OrderKernel::SortedBuffer,
            _ => OrderKernel::MedianSort,
        },
        k => k,
    }
}

/// [`rolling_order_dyn`] on keys.
pub fn rolling_order_keys(
    keys: &[u64],
    nulls: Option<&NullBuffer>,
    window: usize,
    stat: OrderStat,
    min_periods: usize,
    kernel: OrderKernel,
) -> ArrayRef {
    let n = keys.len();
    let (window, need) = window_need(window, n, min_periods);
    match (resolve(kernel, stat, window), stat.quantile()) {
        (OrderKernel::FenwickRank, None) => super::fenwick_rank::rolling_rank(keys, nulls, window, need),
        (OrderKernel::MedianSort, Some((q, i))) => super::median_sort::rolling_quantile(MedianKeys::Column(keys), n, nulls, window, need, q, i),
        // the sorted buffer answers everything (a kernel that cannot
        // answer the statistic falls back to it)
        _ => super::sorted_buffer::rolling(keys, nulls, window, need, stat),
    }
}

/// The naive oracle: sort every window (tests).
#[doc(hidden)]
pub fn naive(values: &[Option<f64>], window: usize, stat: OrderStat, min_periods: usize) -> Vec<Option<f64>> {
    let need = min_periods.max(1);
    (0..values.len())
        .map(|i| {
            let lo = (i + 1).saturating_sub(window);
            let mut ks: Vec<u64> = values[lo..=i].iter().flatten().map(|&x| key(x)).collect();
            if ks.len() < need {
                return None;
            }
            ks.sort_unstable();
            match stat.quantile() {
                Some((q, interp)) => Some(quantile_of(ks.len(), q, interp, |k| unkey(ks[k]))),
                None => {
                    let me = key(values[i]?);
                    let less = ks.iter().filter(|&&k| k < me).count();
                    let equal = ks.iter().filter(|&&k| k == me).count();
                    Some(rank_of(less, equal, ks.len()))
                }
            }
        })
        .collect()
}

/// Median / quantile / rank over count windows of any shape: keys and
/// nulls as [`keys_of`] gives them, `need >= 1` values make
/// a row valid. The same trick as [`super::shape::rolling_shaped`]: row `i`'s window is
/// the plain trailing window of `b - a + 1` rows ending at row `i + b`, so
/// the order-statistic kernels run as they are
/// ([`rolling_order_keys`], any kernel) and row `i` reads
/// their row `i + b`: rank then ranks the window's last row, as pandas'
/// `rolling(...).rank()` does (`values[end - 1]`). Centred, the last `b`
/// rows' windows are cut by the end of the data and run
/// [`order_frames`]; so does a `step` far longer than the window.
pub(crate) fn order_count_shaped(
    keys: &[u64],
    nulls: Option<&NullBuffer>,
    window: usize,
    stat: OrderStat,
    need: usize,
    kernel: OrderKernel,
    shape: Shape,
) -> Result<ArrayRef> {
    shape.check()?;
    let n = keys.len();
    // capped to the column: the same windows (shape.rs `rolling_shaped`)
    let (a, b) = shape.capped_offsets(window, n.max(1));
    let len = (b - a + 1) as usize; // w - 1, w or w + 1
    let rows = n.div_ceil(shape.step);
    if need > len {
        // `neither` holds w - 1 rows: never enough values.
        return Ok(arrow_array::new_null_array(&arrow_schema::DataType::Float64, rows));
    }
    if shape.step >= 8 * len {
        return Ok(order_frames(keys, nulls, &Frame::Rows { a, b }, need, stat, shape.step));
    }
    let full = rolling_order_keys(keys, nulls, len, stat, need, kernel);
    let full = full.as_primitive::<Float64Type>();
    // Rows from `m` on are cut by the end of the data (centred only); their
    // frames touch rows from `t0` on.
    let m = n.saturating_sub(b.max(0) as usize);
    let t0 = (m as isize + a).max(0) as usize;
    let tail = (m < n).then(|| order_frames(&keys[t0..], nulls.map(|nb| nb.slice(t0, n - t0)).as_ref(), &Frame::Rows { a, b }, need, stat, 1));
    let tail = tail.as_ref().map(|t| t.as_primitive::<Float64Type>());
    let (mut out, mut valid) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    for i in (0..n).step_by(shape.step) {
        let (src, j) = match i as isize + b {
            j if j < 0 => (None, 0), // left-open, not centred: row 0's window is empty
            j if i < m => (Some(full), j as usize),
            _ => (tail, i - t0),
        };
        let v = src.filter(|s| s.is_valid(j)).map(|s| s.value(j));
        out.push(v.unwrap_or(0.0));
        valid.push(v.is_some());
    }
    Ok(finish(out, Some(valid)))
}

/// Median / quantile / rank over each row's frame `[s, e)` (every
/// `step`-th row) on the sorted buffer: keys pushed up to `e`, evicted
/// below `s`, a frame past everything held starting afresh (rows between
/// non-overlapping windows are never pushed). Rank ranks the frame's last
/// row (null when it is null), as pandas.
pub(crate) fn order_frames(keys: &[u64], nulls: Option<&NullBuffer>, frame: &Frame, need: usize, stat: OrderStat, step: usize) -> ArrayRef {
    let n = keys.len();
    let ok = |i: usize| nulls.is_none_or(|nb| nb.is_valid(i));
    let mut win = SortedWindow::new();
    let rows = n.div_ceil(step);
    let (mut out, mut valid) = (vec![0.0f64; rows], vec![true; rows]);
    let (mut lo, mut hi) = (0usize, 0usize);
    for (o, i) in (0..n).step_by(step).enumerate() {
        let (s, e) = frame.bounds(i, n, lo, hi);
        if s >= hi {
            win.clear();
            (lo, hi) = (s, s);
        }
        while hi < e {
            if ok(hi) {
                win.push_key(keys[hi]);
            }
            hi += 1;
        }
        while lo < s {
            if ok(lo) {
                win.evict_key(keys[lo]);
            }
            lo += 1;
        }
        let c = win.len();
        let got = if c < need {
            None
        } else {
            match stat.quantile() {
                Some((q, interp)) => Some(quantile_of(c, q, interp, |k| win.kth(k))),
                None => ok(e - 1).then(|| {
                    let (less, equal) = win.less_equal_key(keys[e - 1]);
                    rank_of(less, equal, c)
                }),
            }
        };
        match got {
            Some(v) => out[o] = v,
            None => valid[o] = false,
        }
    }
    finish(out, Some(valid))
}
