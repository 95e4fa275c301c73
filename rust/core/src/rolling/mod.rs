//! Per-row rolling aggregation over a whole column (slide 1): row `i` gets
//! the aggregate of rows `(i - window, i]`, as Spark's
//! `ROWS BETWEEN window-1 PRECEDING AND CURRENT ROW`; a window at the start
//! holds fewer rows and is still emitted. `min_periods = k` gives null where
//! fewer than `k` non-null values are in the window (pandas).
//!
//! `algorithm = auto` runs the fastest kernel for the operation; a named
//! algorithm runs that FIFO aggregator step by step (insert, evict, query),
//! which is what benchmarks and cross-checks want.
//!
//! The `auto` kernels (docs/DESIGN.md "Performance notes"):
//! * [`block`]: any monoid, TwoStacks' flip done block by block (van Herk /
//!   Gil-Werman): about three combines per row; collect copies its windows.
//! * [`ends`]: first / last (and ignoring nulls): a gather of each
//!   window's end row.
//! * [`extreme`]: max / min / range on the raw values (a NaN-aware compare
//!   where a NaN is near), ties to the earliest row (-0.0 vs 0.0 as Spark).
//! * [`sum`]: sum / mean / count: compensated Subtract-on-Evict restarted
//!   from an exact recomputation every block, exact wrapping integers.
//! * [`moments`]: var / std: a checked compensated Subtract-on-Evict on
//!   shifted values (null-free columns), blocks it cannot vouch for redone
//!   by exact double-double partials over van Herk blocks; lanes in lock
//!   step.
//! * [`many`]: many windows at once (`rolling_many`): a shared sparse-table
//!   pass for max / min; [`prefix`]: compensated prefix sums shared by
//!   many sums / means.
//! * [`shape`]: pandas' `closed=`, `center=`, `step=` on count and time
//!   windows.
//! * [`order`]: median / quantile / rank (not monoids) on order-statistic
//!   structures: [`sorted_buffer`], [`median_sort`], [`fenwick_rank`].

mod block;
mod ends;
mod extreme;
mod fenwick_rank;
pub mod keyed;
mod many;
mod median_sort;
mod moments;
pub mod order;
mod order_stat;
mod prefix;
mod prefix_moments;
mod segments;
pub mod shape;
mod sorted_buffer;
mod sum;
pub mod time;
mod two_stacks_frames;
mod valid;

pub use keyed::{rolling_keyed_dyn, rolling_many_keyed_dyn, rolling_order_keyed_dyn, rolling_order_time_keyed_dyn, rolling_time_keyed_dyn};
pub use extreme::extreme_values_at;
pub use valid::{nan_as_null, nan_to_null_dyn};
pub use order::{rolling_many_order_dyn, rolling_order_dyn, rolling_order_time_dyn, Interpolation, OrderKernel, OrderStat, SortedWindow};
pub use many::{rolling_many_dyn, rolling_many_split, rolling_many_tuned, Tuning};
pub use shape::{Closed, Shape};
pub use time::{rolling_time_dyn, rolling_time_split};

use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, NullBuffer};

use crate::engine::{AggKind, Column, DType, FromArrow, OutBuilder, ToArrow};
use crate::fifo::{Algorithm, FifoAggregator, New};
use crate::monoid::AggOp;
use crate::ops::arith::LiftSum;
use crate::ops::Num;
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

/// The most threads a kernel splits one call's rows over: the CPUs, at
/// most 4, capped by `SLIDEWISE_THREADS=k` (`1`: every kernel on the
/// calling thread, e.g. beside other work on the same cores). Kernels only
/// split large work (their own thresholds), never a small batch.
pub(crate) fn thread_cap() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |p| p.get()).min(4);
    match std::env::var("SLIDEWISE_THREADS").ok().and_then(|s| s.trim().parse::<usize>().ok()) {
        Some(k) => k.clamp(1, cpus),
        None => cpus,
    }
}

/// Columns below this many rows stay on the calling thread in `rolling()`'s
/// count-window kernels (measured: benches/compare_rolling.py; a thread's
/// start-up and the cut's extra reads are noise from here on).
pub(crate) const SPLIT_MIN_ROWS: usize = 1 << 20;

/// How `rolling()`'s count-window kernels split one call's rows over
/// threads; tests force thread counts and a tiny threshold.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Split {
    /// Threads (`None`: [`thread_cap`]).
    pub threads: Option<usize>,
    /// Columns shorter than this run on the calling thread.
    pub min_rows: usize,
}

impl Default for Split {
    fn default() -> Split {
        Split { threads: None, min_rows: SPLIT_MIN_ROWS }
    }
}

impl Split {
    /// Threads for `n` rows (1 for a small column, without reading the env).
    pub(crate) fn threads(self, n: usize) -> usize {
        if n < self.min_rows.max(2) {
            return 1;
        }
        self.threads.unwrap_or_else(thread_cap).clamp(1, 64)
    }
}

/// Cuts for `threads` ranges of `0..n`: near `n t / threads`, moved by
/// `snap` to a row where the kernel's arithmetic restarts (`None`: no such
/// row near; that cut is dropped). Ascending, inside `(0, n)`.
pub(crate) fn cuts(n: usize, threads: usize, snap: impl Fn(usize) -> Option<usize>) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for t in 1..threads {
        if let Some(c) = snap(n * t / threads) {
            if c > 0 && c < n && out.last().is_none_or(|&l| c > l) {
                out.push(c);
            }
        }
    }
    out
}

/// The allowed row nearest `r` of the ascending `rows`.
pub(crate) fn nearest(rows: &[usize], r: usize) -> Option<usize> {
    let i = rows.partition_point(|&b| b < r);
    let lo = i.checked_sub(1).map(|k| rows[k]);
    let hi = rows.get(i).copied();
    match (lo, hi) {
        (Some(a), Some(b)) => Some(if r - a <= b - r { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// Output rows that [`par_ranges`] can hand out in disjoint ranges: one
/// slice, or a pair of slices of the same rows (values and validity).
pub(crate) trait Rows: Send + Sized {
    fn rows(&self) -> usize;
    fn split_rows(self, at: usize) -> (Self, Self);
}

impl<T: Send> Rows for &mut [T] {
    fn rows(&self) -> usize {
        self.len()
    }
    fn split_rows(self, at: usize) -> (Self, Self) {
        self.split_at_mut(at)
    }
}

impl<A: Rows, B: Rows> Rows for (A, B) {
    fn rows(&self) -> usize {
        self.0.rows()
    }
    fn split_rows(self, at: usize) -> (Self, Self) {
        let ((a0, a1), (b0, b1)) = (self.0.split_rows(at), self.1.split_rows(at));
        ((a0, b0), (a1, b1))
    }
}

/// Run `job(r0, r1, out[r0..r1])` over the ranges between `cuts`
/// (ascending, inside `(0, out.rows())`), all but the last on scoped
/// threads: each thread writes its own rows of the one output, no copy
/// after.
pub(crate) fn par_ranges<O: Rows>(out: O, cuts: &[usize], job: impl Fn(usize, usize, O) + Sync) {
    let n = out.rows();
    if cuts.is_empty() {
        job(0, n, out);
        return;
    }
    let job = &job;
    std::thread::scope(|s| {
        let mut rest = out;
        let mut r0 = 0;
        for &r1 in cuts {
            let (mine, tail) = rest.split_rows(r1 - r0);
            rest = tail;
            s.spawn(move || job(r0, r1, mine));
            r0 = r1;
        }
        job(r0, n, rest);
    });
}

/// Rolling `agg` over `values` (int32/int64/float32/float64, nulls allowed)
/// in windows of `window` rows shaped by pandas' `closed=` / `center=` /
/// `step=` ([`shape`]); the default shape runs the plain kernels directly.
pub fn rolling_dyn(
    values: &dyn Array,
    window: usize,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
    shape: Shape,
) -> Result<ArrayRef> {
    if shape.is_default() {
        return rolling_plain(values, window, agg, min_periods, algo);
    }
    shape::rolling_shaped(values, window, agg, min_periods, algo, shape)
}

/// [`rolling_dyn`] with `nan="skip"`: a NaN value is missing, as a null
/// is. Float sums, means, maxima, minima and ranges (float64 variances
/// and stds too) of the default shape mask their NaN rows job by job or
/// chunk by chunk ([`sum::rolling_skip_nan`], [`extreme::rolling_extreme_skip`],
/// [`moments::rolling_var_skip`]: no NaN-to-null pass over the column
/// first); every other call runs on the column with its NaN rows null
/// ([`nan_to_null_dyn`]). The same answers either way. `split`:
/// [`Split::default`] but in tests.
pub fn rolling_skip_nan_dyn(
    values: &dyn Array,
    window: usize,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
    shape: Shape,
    split: Split,
) -> Result<ArrayRef> {
    // The kernels that mask NaN themselves; `None`: the pass below.
    fn skip<T: FastNum>(col: &Column<T>, window: usize, mp: usize, agg: AggKind, split: Split) -> Option<ArrayRef> {
        let th = split.threads(col.len());
        let var = |ddof, sqrt| moments::rolling_var_skip(col, window, mp, ddof, sqrt, th);
        match agg {
            AggKind::Max => Some(extreme::rolling_extreme_skip::<T, true>(col, window, mp, th)),
            AggKind::Min => Some(extreme::rolling_extreme_skip::<T, false>(col, window, mp, th)),
            AggKind::Range => Some(extreme::rolling_range_skip::<T>(col, window, mp, th)),
            AggKind::Sum | AggKind::Mean => Some(sum::rolling_skip_nan::<T>(col, window, mp, agg == AggKind::Mean, split)),
            AggKind::Var => var(1, false),
            AggKind::Std => var(1, true),
            AggKind::VarPop => var(0, false),
            AggKind::StdPop => var(0, true),
            _ => None,
        }
    }
    if shape.is_default() && algo == Algorithm::Auto && matches!(values.data_type(), DataType::Float64 | DataType::Float32) {
        check_window(window, min_periods)?;
        let window = window.min(values.len().max(1));
        let mp = min_periods.unwrap_or(0);
        if mp <= window {
            let got = match values.data_type() {
                DataType::Float64 => skip::<f64>(&<f64 as FromArrow>::column(values)?, window, mp, agg, split),
                _ => skip::<f32>(&<f32 as FromArrow>::column(values)?, window, mp, agg, split),
            };
            if let Some(a) = got {
                return Ok(a);
            }
        }
    }
    match nan_to_null_dyn(values) {
        Some(v) => rolling_dyn(v.as_ref(), window, agg, min_periods, algo, shape),
        None => rolling_dyn(values, window, agg, min_periods, algo, shape),
    }
}

/// [`rolling_dyn`] for the default shape: row `i` reads rows
/// `(i - window, i]`.
pub(crate) fn rolling_plain(
    values: &dyn Array,
    window: usize,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
) -> Result<ArrayRef> {
    rolling_split(values, window, agg, min_periods, algo, Split::default())
}

/// [`rolling_plain`] with the thread split forced (tests: thread counts on
/// small columns, which must give the same bits as one thread).
#[doc(hidden)]
pub fn rolling_split(
    values: &dyn Array,
    window: usize,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
    split: Split,
) -> Result<ArrayRef> {
    check_window(window, min_periods)?;
    let dtype = DType::of(values.data_type())?;
    // A window longer than the data is the whole prefix: cap it, so no
    // algorithm sizes its buffers from an arbitrary user number.
    let n = values.len();
    let window = window.min(n.max(1));
    let mp = min_periods.unwrap_or(0);
    let out_type = crate::engine::out_type(agg, dtype);
    if mp > window {
        // Never enough values: all null, of the type the aggregate has.
        return Ok(arrow_array::new_null_array(&out_type, n));
    }
    if algo == Algorithm::Auto && ends::is_end(agg) {
        return ends::rolling_ends(values, &[0, n], Shape::default().row_offsets(window), agg, mp, 1, split);
    }
    if algo == Algorithm::Auto {
        let out = crate::with_dtype!(dtype, |T| specialised::<T>(&<T as FromArrow>::column(values)?, window, mp, agg, split));
        if let Some(out) = out {
            return Ok(out);
        }
    }
    // The generic kernels run on the wide dtype (`DType::wide`).
    let wide = crate::engine::widen(values)?;
    let values = wide.as_deref().unwrap_or(values);
    let out = crate::with_wide_dtype!(dtype.wide(), |T| {
        let col = <T as FromArrow>::column(values)?;
        crate::with_op!(agg, T, |Op| rolling_op::<Op>(&col, window, mp, algo))
    })?;
    Ok(crate::engine::narrow(out, &out_type))
}

/// Rolling `agg` over each segment `bounds[k]..bounds[k + 1]` of `values`
/// alone (ascending, from 0 to `values.len()`), in one output: each
/// segment's rows as [`rolling_plain`] with `Algorithm::Auto` gives them on
/// that segment, bit for bit. Keyed rolling's short keys (keyed.rs).
/// `None`: not one of sum, mean, geomean, var, std, var_pop, std_pop, or a segment's
/// values would overflow the variance kernel's squares; run one call each.
pub(crate) fn rolling_segments_dyn(values: &dyn Array, bounds: &[usize], window: usize, agg: AggKind, min_periods: Option<usize>) -> Result<Option<ArrayRef>> {
    check_window(window, min_periods)?;
    if bounds.first() != Some(&0) || bounds.last() != Some(&values.len()) || bounds.windows(2).any(|b| b[0] > b[1]) {
        return invalid!("segment bounds must ascend from 0 to {} rows", values.len());
    }
    let dtype = DType::of(values.data_type())?;
    let mp = min_periods.unwrap_or(0);
    Ok(crate::with_dtype!(dtype, |T| segments::rolling_segments::<T>(&<T as FromArrow>::column(values)?, bounds, window, mp, agg)))
}

/// The kernels written for one operation family; `None`: use the generic
/// block kernel.
/// `split`: these kernels cut the rows over threads only where their
/// arithmetic restarts, so every thread count gives the same bits.
fn specialised<T: FastNum>(col: &Column<T>, window: usize, mp: usize, agg: AggKind, split: Split) -> Option<ArrayRef> {
    let th = split.threads(col.len());
    Some(match agg {
        AggKind::Max => extreme::rolling_extreme::<T, true>(col, window, mp, th),
        AggKind::Min => extreme::rolling_extreme::<T, false>(col, window, mp, th),
        AggKind::Range => extreme::rolling_range::<T>(col, window, mp, th),
        AggKind::Sum => sum::rolling_sum::<T>(col, window, mp, split),
        AggKind::Mean => sum::rolling_mean::<T>(col, window, mp, split),
        AggKind::Geomean => sum::rolling_geomean::<T>(col, window, mp, split),
        AggKind::Count => sum::rolling_count(col, window, mp, th),
        // Values whose squares could overflow take Chan's merge (`block`):
        // the kernel says so (`None`) rather than a pass over the column
        // first. Nulls stay on the exact kernel: it shifts a block by a
        // valid row (moments.rs `valid_ends`).
        AggKind::Var => return moments::rolling_var::<T>(col, window, mp, 1, false, th),
        AggKind::Std => return moments::rolling_var::<T>(col, window, mp, 1, true, th),
        AggKind::VarPop => return moments::rolling_var::<T>(col, window, mp, 0, false, th),
        AggKind::StdPop => return moments::rolling_var::<T>(col, window, mp, 0, true, th),
        AggKind::Collect => block::rolling_collect::<T>(col, window, mp),
        _ => return None,
    })
}

/// Rolling one operation; picks the kernel.
pub fn rolling_op<M>(col: &Column<M::In>, window: usize, min_periods: usize, algo: Algorithm) -> Result<ArrayRef>
where
    M: AggOp,
    M::Out: ToArrow,
{
    if algo == Algorithm::Auto {
        return Ok(block::rolling_block::<M>(col, window, min_periods));
    }
    algo.check::<M>()?;
    // The per-row loop is the hot loop: instantiated per algorithm (small),
    // not through `AnyFifo`, whose match per call measured 1.75x slower here.
    crate::with_fifo!(algo, M, rolling_new(col, window, min_periods))
}

fn rolling_new<M, A>(col: &Column<M::In>, window: usize, min_periods: usize) -> Result<ArrayRef>
where
    M: AggOp,
    M::Out: ToArrow,
    A: FifoAggregator<M> + New,
{
    let hint = crate::fifo::capacity_hint(window.min(col.len() + 1));
    Ok(rolling_with::<M, A>(col, window, min_periods, A::new_with_capacity(hint)?))
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
        valid_in_window += col.is_valid(i) as usize;
        agg.insert(col.lift::<M>(i, i as i64).unwrap_or_else(M::identity));
        let a = agg.query();
        out.push(if min_periods == 0 || valid_in_window >= min_periods { M::lower(&a) } else { None });
    }
    out.finish()
}

/// What the `auto` kernels need from an input dtype beyond [`Num`].
pub trait FastNum: Num + LiftSum + PartialOrd {
    /// Below / above every value (identities of max / min on raw values;
    /// -inf / +inf for floats, which only matters with the validity mask).
    const LOWEST: Self;
    const HIGHEST: Self;
    /// The top of the key order (NaN for floats): what fills null slots for
    /// min, since a +inf filler would beat a real NaN.
    const TOP: Self;
    /// Whether raw comparison may disagree with the total order here: a NaN
    /// (above every number in it). Always false for integers. (-0.0 needs
    /// nothing: it compares equal to +0.0 either way.)
    fn has_nan(xs: &[Self]) -> bool;
    /// Whether the newer `b` beats the older `a` for max (`MAX`) or min
    /// because of a NaN, which raw comparison misses: for max `b` is NaN
    /// and `a` is not; for min `a` is NaN and `b` is not.
    fn nan_beats<const MAX: bool>(a: Self, b: Self) -> bool;
    /// Rolling sums of a null-free (or null-zeroed) slice, rows split over
    /// up to `threads` threads (same bits for every count).
    fn window_sums(xs: &[Self], window: usize, threads: usize, min_rows: usize) -> Vec<Self::Wide>;
    /// [`FastNum::window_sums`] of the rows a validity bitmap keeps (the
    /// others count 0): floats read the bitmap in the kernel.
    fn window_sums_valid(xs: &[Self], va: valid::Bitmap<'_>, window: usize, threads: usize, min_rows: usize) -> Vec<Self::Wide>;
    /// [`FastNum::window_sums`] on one thread into `out`, with the bits of
    /// any thread count and the default [`Split`].
    fn window_sums_into(xs: &[Self], window: usize, out: &mut [Self::Wide]);
    /// Integers: the exact (i128) window sums of rows `[r0, r1)` as f64, a
    /// mean's (`sum::exact_int_sums_range`). Floats take the compensated
    /// kernel instead and never call this.
    fn exact_sums_range(xs: &[Self], window: usize, r0: usize, r1: usize, out: &mut [f64]);
    /// What debug builds fill an unzeroed output with ([`buffer_to_fill`]):
    /// a signalling NaN for floats (arithmetic never yields one), a value
    /// far from any test's data for integers.
    const UNWRITTEN: Self;
    fn is_unwritten(self) -> bool;
}

macro_rules! fast_float {
    ($t:ty, $mark:expr) => {
        impl FastNum for $t {
            const LOWEST: $t = <$t>::NEG_INFINITY;
            const HIGHEST: $t = <$t>::INFINITY;
            const TOP: $t = <$t>::NAN;
            #[inline(always)]
            fn has_nan(xs: &[$t]) -> bool {
                // Branch-free fold per chunk so it vectorises; stop at the
                // first chunk that has one.
                xs.chunks(256).any(|c| c.iter().fold(false, |a, &v| a | (v != v)))
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn nan_beats<const MAX: bool>(a: $t, b: $t) -> bool {
                if MAX { (a == a) & (b != b) } else { (a != a) & (b == b) }
            }
            fn window_sums(xs: &[$t], window: usize, threads: usize, min_rows: usize) -> Vec<f64> {
                sum::float_sums(xs, window, threads, min_rows)
            }
            fn window_sums_valid(xs: &[$t], va: valid::Bitmap<'_>, window: usize, threads: usize, min_rows: usize) -> Vec<f64> {
                sum::float_sums_scaled(xs, va, window, sum::Out::Scale(1.0), threads, min_rows, |_, _| {})
            }
            fn window_sums_into(xs: &[$t], window: usize, out: &mut [f64]) {
                sum::float_sums_into(xs, valid::All, window, sum::Out::Scale(1.0), out)
            }
            fn exact_sums_range(_: &[$t], _: usize, _: usize, _: usize, _: &mut [f64]) {
                unreachable!("float means take the compensated kernel")
            }
            const UNWRITTEN: $t = <$t>::from_bits($mark);
            #[inline(always)]
            fn is_unwritten(self) -> bool {
                self.to_bits() == $mark
            }
        }
    };
}
fast_float!(f64, 0x7FF4_DEAD_BEEF_0001u64);
fast_float!(f32, 0x7FA0_BEEFu32);

macro_rules! fast_int {
    ($t:ty) => {
        impl FastNum for $t {
            const LOWEST: $t = <$t>::MIN;
            const HIGHEST: $t = <$t>::MAX;
            const TOP: $t = <$t>::MAX;
            #[inline(always)]
            fn has_nan(_: &[$t]) -> bool {
                false
            }
            #[inline(always)]
            fn nan_beats<const MAX: bool>(_: $t, _: $t) -> bool {
                false
            }
            fn window_sums(xs: &[$t], window: usize, threads: usize, _: usize) -> Vec<i64> {
                sum::int_sums(xs, window, threads)
            }
            fn window_sums_valid(xs: &[$t], va: valid::Bitmap<'_>, window: usize, threads: usize, _: usize) -> Vec<i64> {
                // Exact integers: zeroing the null slots in a copy costs
                // little beside the i64 sums.
                let mut z = buffer::<$t>(xs.len());
                z.iter_mut().enumerate().for_each(|(i, o)| *o = if valid::Valid::bits(va, i) & 1 == 1 { xs[i] } else { 0 });
                sum::int_sums(&z, window, threads)
            }
            fn window_sums_into(xs: &[$t], window: usize, out: &mut [i64]) {
                sum::int_sums_range(xs, window, 0, xs.len(), out)
            }
            fn exact_sums_range(xs: &[$t], window: usize, r0: usize, r1: usize, out: &mut [f64]) {
                sum::exact_int_sums_range(xs, window, r0, r1, out)
            }
            const UNWRITTEN: $t = <$t>::MIN + 0x5EED;
            #[inline(always)]
            fn is_unwritten(self) -> bool {
                self == Self::UNWRITTEN
            }
        }
    };
}
fast_int!(i32);
fast_int!(i64);

/// Non-null rows in each window `(i - window, i]`; only built for columns
/// with nulls. The validity bits are read 64 rows at a time, each row's
/// count a difference of valid-row prefixes ([`valid::ValidPrefix`]; a
/// bit lookup per row measured ~10x slower than the sum kernel itself).
fn window_counts(nulls: &NullBuffer, window: usize) -> Vec<u32> {
    let mut out = buffer::<u32>(nulls.len());
    valid::ValidPrefix::new(nulls).window_counts(window, 0, &mut out, |c| c as u32);
    out
}

/// Output validity: row `i` is valid when its window holds at least `need`
/// non-null rows. Null-free input: only the first `need - 1` rows can fail.
fn validity(n: usize, window: usize, need: usize, counts: Option<&[u32]>) -> Option<NullBuffer> {
    match counts {
        None => {
            let bad = leading_invalid(n, window, need);
            // Two runs, filled a byte at a time (collect_bool's bit per
            // call cost a tenth of the variance kernel on 10M rows).
            (bad > 0).then(|| {
                let mut b = BooleanBufferBuilder::new(n);
                b.append_n(bad, false);
                b.append_n(n - bad, true);
                NullBuffer::new(b.finish())
            })
        }
        Some(c) => {
            let buf = NullBuffer::new(BooleanBuffer::collect_bool(n, |i| c[i] as usize >= need));
            (buf.null_count() > 0).then_some(buf)
        }
    }
}

/// A valid-or-not NaN among the first 65,536 rows of `values` or in a
/// 64-row word every 8,192 rows after (a sensor down for 8,256 rows or
/// more anywhere): whether the `nan="skip"` sums and variances mask every
/// job (the column holds NaN) or run each unmasked until it meets one
/// ([`sum::float_sums_skip`], [`valid::Words`]).
fn nan_seen<T: Copy + PartialEq + 'static>(values: &[T]) -> bool {
    let head = values.len().min(1 << 16);
    values[..head].chunks(64).any(|c| valid::nan_bits(c) != 0)
        || values[head..].chunks(1 << 13).any(|c| valid::nan_bits(&c[..c.len().min(64)]) != 0)
}

/// The output validity of a kernel over a column with `nulls` that needs
/// `need` valid rows a window: for one (every aggregate but `count` and
/// var / std by default) a word at a time ([`valid::any_in_window`]),
/// else from prefix counts a word at a time ([`valid::at_least_in_window`]).
/// One thread: split over two by words it measured 1.2 -> 1.0 ms at
/// window 16 and no faster at 1,024 (10M rows, Intel Xeon), bound by
/// memory, not by its bit arithmetic.
fn out_nulls(nulls: Option<&NullBuffer>, n: usize, window: usize, need: usize) -> Option<NullBuffer> {
    match nulls {
        Some(nb) if need <= 1 => valid::any_in_window(nb, window),
        Some(nb) => valid::at_least_in_window(nb, window, need),
        None => validity(n, window, need, None),
    }
}

/// Null-free input: the rows before the window holds `need` values.
fn leading_invalid(n: usize, window: usize, need: usize) -> usize {
    if need > window { n } else { need.saturating_sub(1).min(n) }
}

/// [`validity`]'s bits for `n` rows appended to `b` (many segments'
/// validity in one buffer).
fn append_validity(b: &mut BooleanBufferBuilder, n: usize, window: usize, need: usize, counts: Option<&[u32]>) {
    match counts {
        None => {
            let bad = leading_invalid(n, window, need);
            b.append_n(bad, false);
            b.append_n(n - bad, true);
        }
        // Packed 64 rows a word, as `validity` builds them (a builder's
        // append per row was as long as keyed rolling's kernel, issue 36).
        Some(c) => b.append_buffer(&BooleanBuffer::collect_bool(n, |i| c[i] as usize >= need)),
    }
}

/// A copy of the values with null slots replaced by `fill`, so kernels can
/// run on a plain slice (their results there are masked by [`validity`]).
/// One copy, then the null slots found a 64-bit word of validity at a time.
fn filled<T: Copy + Default>(col: &Column<T>, fill: T) -> Vec<T> {
    let mut out = buffer::<T>(col.len());
    out.copy_from_slice(col.values);
    if let Some(nb) = col.nulls {
        let chunks = nb.inner().bit_chunks();
        let words = chunks.iter().chain(std::iter::once(chunks.remainder_bits()));
        for (block, word) in out.chunks_mut(64).zip(words) {
            // Null slots of this block: the zero bits below its length.
            let mut holes = !word & (u64::MAX >> (64 - block.len()));
            while holes != 0 {
                block[holes.trailing_zeros() as usize] = fill;
                holes &= holes - 1;
            }
        }
    }
    out
}

/// A zeroed output buffer of `n` values. Large ones come fresh from mmap
/// (calloc), and the first write to each page faults; with 4 KiB pages that
/// costs as much as the kernel itself, so ask for transparent huge pages
/// before touching them (numpy does the same for its arrays).
pub(crate) fn buffer<T: Copy + Default>(n: usize) -> Vec<T> {
    let mut v = vec![T::default(); n];
    advise_huge_pages(&mut v);
    v
}

/// An output of `n` rows that its caller writes in full before anything
/// reads it: not zeroed. A large block the extension's allocator kept
/// (DESIGN §6) would be memset first, a whole pass over the output for
/// nothing (10M rows: ~1 ms of a 5-8 ms rolling mean, measured). Debug
/// builds (every test) fill it with [`FastNum::UNWRITTEN`] instead, and
/// the callers check with [`assert_filled`] that no row kept it.
pub(crate) fn buffer_to_fill<T: FastNum>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    if cfg!(debug_assertions) {
        v.resize(n, T::UNWRITTEN);
    } else {
        // SAFETY: the capacity is n; the numeric types have no invalid
        // bit patterns, and the callers write every row before the vector
        // is read or returned (checked in debug builds, `assert_filled`).
        unsafe { v.set_len(n) };
    }
    advise_huge_pages(&mut v);
    v
}

/// Outputs of at least this many bytes are written by non-temporal
/// stores where a kernel can ([`streams`]).
const STREAM_BYTES: usize = 32 << 20;

/// Whether an output of `n` values of `T` should bypass the caches
/// (non-temporal stores): one this large does not stay in them for its
/// reader anyway (32 MiB is the EPYC's whole L3), and a regular store
/// first reads each line it writes, a third of a rolling sum's memory
/// traffic. A/B on 10M float64 rows (AMD EPYC, 2 threads), rolling mean:
/// 1.2-1.3x at window 16, 1.1x at 1K, 1.15-1.4x at 64K, 1.1-1.3x at 1M.
pub(crate) fn streams<T>(n: usize) -> bool {
    n.saturating_mul(std::mem::size_of::<T>()) >= STREAM_BYTES
}

/// Four f64 to `p` (16-byte aligned) by non-temporal stores, as two
/// 128-bit halves (rows are 8-byte aligned in general, 16 in practice:
/// malloc's). The caller ends with an `sfence`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn stream4(p: *mut f64, v: std::arch::x86_64::__m256d) {
    use std::arch::x86_64::*;
    _mm_stream_pd(p, _mm256_castpd256_pd128(v));
    _mm_stream_pd(p.add(2), _mm256_extractf128_pd::<1>(v));
}

/// Debug builds: every row of a [`buffer_to_fill`] output was written.
pub(crate) fn assert_filled<T: FastNum>(v: &[T]) {
    if cfg!(debug_assertions) {
        if let Some(i) = v.iter().position(|x| x.is_unwritten()) {
            panic!("row {i} of {} of an output was never written", v.len());
        }
    }
}

#[cfg(target_os = "linux")]
fn advise_huge_pages<T>(v: &mut [T]) {
    extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
    }
    const MADV_HUGEPAGE: i32 = 14;
    const HUGE: usize = 2 << 20;
    let bytes = std::mem::size_of_val(v);
    if bytes < 2 * HUGE {
        return;
    }
    let p = v.as_mut_ptr() as usize;
    let (lo, hi) = ((p + HUGE - 1) & !(HUGE - 1), (p + bytes) & !(HUGE - 1));
    if hi > lo {
        // SAFETY: the range lies inside `v`'s allocation; MADV_HUGEPAGE is
        // advisory and never changes the contents. Failure is harmless.
        unsafe {
            madvise(lo as *mut std::ffi::c_void, hi - lo, MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages<T>(_: &mut [T]) {}

/// One xorshift64 step (13, 7, 17) for the kernels' unit tests: the new
/// state.
#[cfg(test)]
pub(crate) fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}
