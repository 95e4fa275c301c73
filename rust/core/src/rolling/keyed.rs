//! Keyed per-row rolling (`rolling(..., keys=k)`): rows are grouped by key
//! once, each key's segment runs the unkeyed kernel (window capped to the
//! segment), and results are scattered back to input order, as pandas
//! `groupby(k).rolling(...)` re-aligned to the input.
//!
//! A call, step by step:
//!
//! 1. **Key ids** (`keys::batch_ids`): integer keys whose span (largest
//!    minus smallest) is at most 2 per row + 64k are their offset from the
//!    smallest key, with no hashing; other integers and strings go through a
//!    fresh `KeyIndex` (FxHash). Null keys are refused, as in streams.
//! 2. **Partition** (a counting sort, `keys::partition_on`) and **gather**
//!    of the values, their validity (and times) into key segments, each
//!    split over threads from `KEYED_SPLIT_MIN_ROWS` rows.
//! 3. **Segments over threads**: columns of `KEYED_SPLIT_MIN_ROWS` (2^18)
//!    rows or more split their segments into `thread_cap()` runs of whole
//!    keys of about equal rows (`SLIDEWISE_THREADS` caps it). A key of 2^20
//!    rows or more keeps the call on one thread: the unkeyed kernel splits
//!    that key's rows itself. Which thread runs a key never changes its bits.
//! 4. **Short keys batched**: a kernel call costs about a microsecond before
//!    its first row, so keys of at most `SHORT_ROWS` (64) rows go through
//!    the unkeyed kernel in runs of up to 16k rows, one call a run. This is
//!    sound only where a row's result depends on its window's values alone,
//!    so that where the window sits in the column cannot change a bit:
//!    - first / last and their `ignore_nulls` forms, any shape
//!      (`rolling/ends.rs`): each window's value is one of its rows, so the
//!      run's keys and their bounds go to `rolling_ends`, which clips each
//!      row's window to its key and gathers the end row;
//!    - count windows of max / min / range / count, collect, max / mincount,
//!      argmax / argmin and the order statistics: the keys are
//!      separated by `w - 1` null rows (`padded`, `w` capped to the run's
//!      longest key), which every one of them skips; argmax / argmin
//!      positions are mapped back to input rows (`padded_rows`);
//!    - count windows of sum / mean / geomean / var / std / var_pop /
//!      std_pop carry state from row to row (a compensated chain, a
//!      variance block's shift), so they are not padded: the run's keys go
//!      to `rolling/segments.rs` with their bounds, each key running the
//!      kernel the unkeyed call would pick for it alone into one shared
//!      output: the bits of one call per key, without its allocations. Up to
//!      `RESTART_ROWS` (4,096) rows a key, since nothing is padded. A key
//!      whose squares could overflow sends its run key by key (Chan's merge);
//!    - time windows, every aggregation: each key's times are moved to start
//!      `range + 1` after the key before it ends (`spaced_times`), so no
//!      window reaches the previous key; TwoStacks keeps nothing of evicted
//!      rows, so the bits are those of one call per key. Up to
//!      `RESTART_ROWS` rows a key;
//!    - shaped count windows (`closed=` / `center=`): the unkeyed call's
//!      steps over all the run's keys at once (`shape.rs shaped_segments`),
//!      sums and moments restarted per key, the others one padded column
//!      with the offsets capped to the run's longest key
//!      (`Shape::capped_offsets`). A centred rank cannot be padded (its
//!      window's last row would be a filler): it runs the sorted-window frame
//!      loop with each row's frame clipped to its key;
//!    - `rolling_many`: one padded column for max / min / range / count,
//!      sum / mean / moments restarted per key a window at a time (on at
//!      most `PER_WINDOW_ROWS` rows `rolling_many` runs those a window at a
//!      time, whose bits equal the single-window kernel's).
//! 5. **Put back**: each output is allocated once; every thread scatters its
//!    segments straight to their input rows (the permutation makes the
//!    threads' rows disjoint), validity a byte per row, packed once. Lists
//!    (`collect`) are concatenated and taken by the inverse permutation.
//!
//! Tests: `tests/props/keyed.rs` forces thread counts, batching thresholds
//! and batch sizes on small columns (`KeyedTuning` through `with_tuning`)
//! and checks the bits against one thread without batching, and every key
//! against the unkeyed kernel on its rows alone;
//! `restarted_short_keys_equal_one_call_per_key` checks the restarted
//! batches bit for bit on values whose rounding depends on a chain's
//! history.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, PrimitiveArray, UInt32Array};
use arrow_buffer::{NullBuffer, ScalarBuffer};

use crate::engine::{AggKind, DType, FromArrow, ToArrow};
use crate::fifo::Algorithm;
use crate::keys::{batch_ids, describe_key, gather, gather_nulls, on_threads, partition_on, Partition, Shared};
use crate::engine::first_decrease;
use crate::rolling::shape::{self, Shape};
use crate::rolling::ends::{is_end, rolling_ends};
use crate::rolling::Split;
use crate::rolling::segments::restarts;
use crate::{invalid, Error, Result};

/// Rows grouped by key, values gathered: the input of a keyed rolling.
struct Grouped {
    keys: ArrayRef,
    part: Partition,
    values: ArrayRef,
    /// Threads the segments run on (1: the calling thread).
    threads: usize,
    /// Threads the grouping and the gathers run on (`threads` is 1 where a
    /// long key splits its own rows; these passes end before it starts).
    split: usize,
    tuning: KeyedTuning,
}

/// Keyed columns from this many rows spread their segments (and the
/// gathers) over threads; below it a thread's start-up is a visible part
/// of the call.
pub(crate) const KEYED_SPLIT_MIN_ROWS: usize = 1 << 18;

/// How keyed rolling spreads one call over threads; tests force thread
/// counts and a tiny threshold on small columns ([`with_tuning`]), which
/// must give the same bits as one thread.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct KeyedTuning {
    /// Threads (`None`: [`super::thread_cap`]).
    pub threads: Option<usize>,
    /// Columns shorter than this run on the calling thread.
    pub min_rows: usize,
    /// Keys of at most this many rows are batched ([`padded_run`]) where
    /// the aggregation allows (0: never).
    pub short_rows: usize,
    /// Keys of at most this many rows run many in one call where nothing
    /// is padded: `rolling` of sum, mean and the moments restarted per key
    /// ([`restarts`]) and time windows spaced apart ([`spaced_times`]); 0:
    /// never.
    pub restart_rows: usize,
    /// Rows of keys per batch (at least one key).
    pub batch_rows: usize,
}

/// Keys of up to this many rows run batched (max / min / range / count):
/// a kernel call costs about a microsecond before its first row, what the
/// padded kernel spends on some hundreds of rows, and a batch's padding is
/// below this per key.
pub(crate) const SHORT_ROWS: usize = 64;
/// Keys of up to this many rows run restarted per key, many in one call
/// (sum, mean and the moments, one window): no padding, so the limit is
/// where a call's fixed cost (about a microsecond) stops mattering beside
/// the key's own rows.
pub(crate) const RESTART_ROWS: usize = 1 << 12;
/// Rows per batch: the padded column, its validity and output stay in L2.
pub(crate) const BATCH_ROWS: usize = 1 << 14;

/// Batches of short keys run on the thread that holds them (the keyed
/// split already runs one batch a thread).
const ONE_THREAD: Split = Split { threads: Some(1), min_rows: usize::MAX };

impl Default for KeyedTuning {
    fn default() -> KeyedTuning {
        KeyedTuning { threads: None, min_rows: KEYED_SPLIT_MIN_ROWS, short_rows: SHORT_ROWS, restart_rows: RESTART_ROWS, batch_rows: BATCH_ROWS }
    }
}

thread_local! {
    static TUNING: std::cell::Cell<KeyedTuning> = std::cell::Cell::new(KeyedTuning::default());
}

/// Run `f` with the keyed entry points called from this thread tuned by
/// `t` (a thread-local, so tests running side by side do not see it).
#[doc(hidden)]
pub fn with_tuning<R>(t: KeyedTuning, f: impl FnOnce() -> R) -> R {
    let old = TUNING.with(|c| c.replace(t));
    let out = f();
    TUNING.with(|c| c.set(old));
    out
}

fn group_rows(keys: &dyn Array, values: &dyn Array) -> Result<Grouped> {
    if keys.len() != values.len() {
        return invalid!("keys have {} rows, values {}", keys.len(), values.len());
    }
    let dtype = DType::of(values.data_type())?;
    let ids = batch_ids(keys)?;
    let n = ids.len();
    let tuning = TUNING.with(|c| c.get());
    let split = if n < tuning.min_rows.max(2) { 1 } else { tuning.threads.unwrap_or_else(super::thread_cap).clamp(1, 64) };
    let part = partition_on(&ids, split);
    drop(ids);
    let mut threads = split;
    // A key long enough for the kernels to split its rows over threads
    // themselves: the segments run one after another, so threads are not
    // started inside threads.
    if part.bounds.windows(2).any(|b| b[1] - b[0] >= super::SPLIT_MIN_ROWS) {
        threads = 1;
    }
    let values: ArrayRef = crate::with_dtype!(dtype, |T| {
        let col = <T as FromArrow>::column(values)?;
        T::to_arrow(par_gather(col.values, &part.perm, split), gather_nulls(col.nulls, &part.perm, split))
    });
    Ok(Grouped { keys: keys.slice(0, keys.len()), part, values, threads, split, tuning })
}

/// [`gather`] with the output rows split evenly over `threads`.
fn par_gather<T: super::FastNum + Send + Sync>(xs: &[T], perm: &[u32], threads: usize) -> Vec<T> {
    if threads <= 1 {
        return gather(xs, perm);
    }
    // not zeroed: a memset of the rows was a tenth of a keyed mean's time
    let mut out = super::buffer_to_fill::<T>(perm.len());
    let cs = super::cuts(perm.len(), threads, Some);
    super::par_ranges(&mut out[..], &cs, |r0, r1, o| {
        for (o, &i) in o.iter_mut().zip(&perm[r0..r1]) {
            *o = xs[i as usize];
        }
    });
    super::assert_filled(&out);
    out
}

/// Runs a batch of consecutive short segments `[s0, s1)` in one call: one
/// array per output covering their rows in grouped order.
type Batch<'a> = &'a (dyn Fn(usize, usize) -> Result<Vec<ArrayRef>> + Sync);

/// Segment ranges `[s0, s1)` for the threads: contiguous runs of segments
/// of about `n / threads` rows each, cut at the segment boundary nearest
/// the even split (the segments are whole: which thread runs a segment
/// never changes its bits).
fn segment_ranges(bounds: &[usize], threads: usize) -> Vec<(usize, usize)> {
    let segs = bounds.len() - 1;
    // Segments are never empty, so each boundary row names one segment.
    let at = super::cuts(bounds[segs], threads, |r| super::nearest(bounds, r)).into_iter().map(|c| bounds.partition_point(|&b| b < c));
    let cs: Vec<usize> = std::iter::once(0).chain(at).chain(std::iter::once(segs)).collect();
    cs.windows(2).map(|c| (c[0], c[1])).collect()
}

/// Run `f` on every key's segment of the grouped values (`n_out` arrays
/// per segment: one per window of a `rolling_many`), or `batch` on runs of
/// short segments where given, and put the results back in input row
/// order. The segments run on `g.threads` threads, each a contiguous run
/// of segments (DESIGN §3.4); then each output is put back: primitive outputs (every aggregation but
/// collect) scattered straight from the segments' arrays to their input
/// rows, each thread its own segments' rows of the one output; others
/// concatenated and taken by the inverse permutation.
fn per_segment_many(
    g: &Grouped,
    n_out: usize,
    f: impl Fn(&dyn Array, usize, usize) -> Result<Vec<ArrayRef>> + Sync,
    batch: Option<(Batch, usize)>,
) -> Result<Vec<ArrayRef>> {
    let segs = g.part.seg_key.len();
    if segs == 0 {
        return f(g.values.as_ref(), 0, 0);
    }
    let bounds = &g.part.bounds;
    let len = |s: usize| bounds[s + 1] - bounds[s];
    let ranges = segment_ranges(bounds, g.threads);
    // `batch` runs keys of at most `short` rows, many per call.
    let (batch, short) = (batch.map(|b| b.0), batch.map_or(0, |b| b.1));
    let most = g.tuning.batch_rows.max(1);
    // A thread's units (runs of segments, each one call) and their outputs:
    // `got[k * n_out + o]` is output o of unit k.
    let run = |(s0, s1): (usize, usize)| -> Result<Unit> {
        let mut u = Unit { runs: Vec::new(), got: Vec::with_capacity((s1 - s0) * n_out) };
        let mut s = s0;
        while s < s1 {
            let e = match batch {
                Some(_) if len(s) <= short => {
                    let (mut e, mut rows) = (s, 0);
                    while e < s1 && len(e) <= short && (e == s || rows + len(e) <= most) {
                        rows += len(e);
                        e += 1;
                    }
                    e
                }
                _ => s + 1,
            };
            let res = match batch {
                Some(b) if len(s) <= short => b(s, e)?,
                _ => f(&g.values.slice(bounds[s], len(s)), bounds[s], bounds[s + 1])?,
            };
            debug_assert_eq!(res.len(), n_out);
            u.runs.push((s, e));
            u.got.extend(res);
            s = e;
        }
        Ok(u)
    };
    // The first failing segment's error, as one thread would give.
    let parts: Vec<Unit> = on_threads(ranges.len(), |c| run(ranges[c])).into_iter().collect::<Result<_>>()?;
    (0..n_out).map(|o| put_back(g, &parts, n_out, o)).collect()
}

/// One thread's work: runs of segments `[s0, s1)` computed in one call
/// each (one segment, or a batch of short ones), and their outputs,
/// `n_out` per run.
struct Unit {
    runs: Vec<(usize, usize)>,
    got: Vec<ArrayRef>,
}

/// Output `o` of every segment (`parts` as [`per_segment_many`] made them)
/// in input row order.
fn put_back(g: &Grouped, parts: &[Unit], n_out: usize, o: usize) -> Result<ArrayRef> {
    use arrow_schema::DataType as D;
    let all = || parts.iter().flat_map(|p| p.got.iter().skip(o).step_by(n_out));
    let dtype = parts[0].got[o].data_type().clone();
    if let Some(a) = all().find(|a| a.data_type() != &dtype) {
        return invalid!("keyed segments gave {} and {}", dtype, a.data_type());
    }
    Ok(match dtype {
        D::Int32 => scatter::<arrow_array::types::Int32Type>(g, parts, n_out, o),
        D::Int64 => scatter::<Int64Type>(g, parts, n_out, o),
        D::Float32 => scatter::<arrow_array::types::Float32Type>(g, parts, n_out, o),
        D::Float64 => scatter::<arrow_array::types::Float64Type>(g, parts, n_out, o),
        _ => {
            // grouped row p is input row perm[p]: take by the inverse.
            let refs: Vec<&dyn Array> = all().map(|a| a.as_ref()).collect();
            let grouped = arrow_select::concat::concat(&refs).map_err(|e| Error::Invalid(e.to_string()))?;
            let mut inv = vec![0u32; g.part.perm.len()];
            for (p, &i) in g.part.perm.iter().enumerate() {
                inv[i as usize] = p as u32;
            }
            let inv = UInt32Array::new(ScalarBuffer::from(inv), None);
            arrow_select::take::take(grouped.as_ref(), &inv, None).map_err(|e| Error::Invalid(e.to_string()))?
        }
    })
}

/// Each segment's values written to its input rows (`perm[lo..hi]`), one
/// copy, each thread its own segments; a null row's bit cleared in words
/// of all ones, atomically (two threads' rows may share a word), only if
/// some segment has a null.
fn scatter<T: ArrowPrimitiveType>(g: &Grouped, parts: &[Unit], n_out: usize, o: usize) -> ArrayRef
where
    T::Native: super::FastNum,
{
    let n = g.part.perm.len();
    let has_nulls = parts.iter().flat_map(|p| p.got.iter().skip(o).step_by(n_out)).any(|a| a.null_count() > 0);
    // every row is some segment's (perm is a permutation): not zeroed
    let mut values = super::buffer_to_fill::<T::Native>(n);
    // (a byte a row, packed after, was a serial pass over the rows)
    let valid: Vec<AtomicU64> = if has_nulls { (0..n.div_ceil(64)).map(|_| AtomicU64::new(u64::MAX)).collect() } else { Vec::new() };
    let vp = Shared(values.as_mut_ptr());
    let job = |t: usize| {
        for (k, &(s0, s1)) in parts[t].runs.iter().enumerate() {
            let rows = &g.part.perm[g.part.bounds[s0]..g.part.bounds[s1]];
            let a = parts[t].got[k * n_out + o].as_primitive::<T>();
            assert_eq!(a.len(), rows.len(), "a segment's output has its rows");
            for (&r, &v) in rows.iter().zip(a.values().iter()) {
                // SAFETY: r < n (perm holds 0..n), and no other segment, so no
                // other thread, has row r.
                unsafe { vp.write(r as usize, v) };
            }
            if let Some(nb) = a.nulls().filter(|nb| nb.null_count() > 0) {
                for k in nb.iter().enumerate().filter(|(_, ok)| !ok).map(|(k, _)| k) {
                    let r = rows[k] as usize;
                    valid[r / 64].fetch_and(!(1u64 << (r % 64)), Ordering::Relaxed);
                }
            }
        }
    };
    on_threads(parts.len(), job);
    super::assert_filled(&values);
    let nulls = if has_nulls { super::valid::Words::nulls(valid, n) } else { None };
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls))
}

/// Per-row rolling within each key: row `i` aggregates the last `window`
/// rows of its key up to and including `i` (pandas
/// `groupby(k).rolling(window)`, re-aligned to the input rows), with
/// pandas' `closed=` / `center=` within each key; pandas has no `step` on
/// groupby rolling, so `step` must be 1.
pub fn rolling_keyed_dyn(
    keys: &dyn Array,
    values: &dyn Array,
    window: usize,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
    shape: Shape,
) -> Result<ArrayRef> {
    crate::rolling::check_window(window, min_periods)?;
    check_no_step(shape)?;
    let g = group_rows(keys, values)?;
    let f = |seg: &dyn Array, lo: usize, _| {
        let out = crate::rolling::rolling_dyn(seg, window, agg, min_periods, algo, shape)?;
        Ok(vec![input_rows(&g, agg, out, lo)])
    };
    let mp = min_periods.unwrap_or(0);
    let arg = matches!(agg, AggKind::ArgMax | AggKind::ArgMin);
    // Short keys in one call: restarted per key (sums, moments) or one
    // padded column (max / min / range / count).
    let out_type = crate::engine::out_type(agg, DType::of(g.values.data_type())?);
    let batch = |s0: usize, s1: usize| -> Result<Vec<ArrayRef>> {
        let (run, rel) = run_of(&g, s0, s1);
        if is_end(agg) {
            // a gather within each key: no padding, any shape
            return Ok(vec![rolling_ends(run.as_ref(), &rel, shape.row_offsets(window), agg, mp, 1, ONE_THREAD)?]);
        }
        let out = if restarts(agg) {
            // None: values the variance kernel declines
            let trailing = |c: &dyn Array, b: &[usize], len: usize| crate::rolling::rolling_segments_dyn(c, b, len, agg, min_periods);
            match shape.is_default() {
                true => trailing(run.as_ref(), &rel, window)?,
                false => shape::shaped_segments(run.as_ref(), &rel, shape.row_offsets(window), &out_type, mp, false, &trailing)?,
            }
        } else {
            // Windows capped to the run's longest key (the same rows of
            // each key), the keys apart by as many null rows as a window
            // reaches.
            let (a, b) = shape.capped_offsets(window, longest(&rel));
            let len = (b - a + 1) as usize;
            if mp > len {
                // no key of the run has enough rows (as rolling_dyn on each)
                return Ok(vec![arrow_array::new_null_array(&out_type, run.len())]);
            }
            let gap = (-a).max(b).max(0) as usize;
            let (col, real) = padded(run.as_ref(), &rel, gap)?;
            let plain = |c: &dyn Array, _: &[usize], len: usize| crate::rolling::rolling_plain(c, len, agg, min_periods, algo).map(Some);
            let out = match shape.is_default() {
                true => plain(col.as_ref(), &[], len)?,
                false => shape::shaped_segments(col.as_ref(), &[0, col.len()], (a, b), &out_type, mp, true, &plain)?,
            };
            match out {
                Some(o) if arg => {
                    let o = shape::positions_from_start(o, (a, b))?;
                    Some(padded_rows(&g, s0, &rel, gap, only(o.as_ref(), &real)?))
                }
                Some(o) => Some(only(o.as_ref(), &real)?),
                None => None,
            }
        };
        match out {
            Some(o) => Ok(vec![o]),
            None => each_alone(&g, s0, s1, &f),
        }
    };
    // argmax / argmin: positions in the padded column, mapped back to
    // input rows (a shaped one's cut tail first counted from the column's
    // start).
    let batched = algo == Algorithm::Auto && (batchable(agg) || restarts(agg) || is_end(agg) || arg);
    let short = if restarts(agg) { g.tuning.restart_rows } else { g.tuning.short_rows };
    let mut out = per_segment_many(&g, 1, f, batched.then_some((&batch as Batch, short)))?;
    Ok(out.pop().expect("one output"))
}

/// argmax / argmin positions in a [`padded`] column of the segments
/// `rel` (run-relative bounds of the segments from `s0` on, `gap` rows
/// between them), one per segment row, as input rows: a row's window lies
/// in its own segment, so its position is `gap` rows on per segment before.
fn padded_rows(g: &Grouped, s0: usize, rel: &[usize], gap: usize, out: ArrayRef) -> ArrayRef {
    let a = out.as_primitive::<Int64Type>();
    let base = g.part.bounds[s0];
    let mut rows = Vec::with_capacity(a.len());
    for (s, b) in rel.windows(2).enumerate() {
        for &q in &a.values()[b[0]..b[1]] {
            // a null row's position is arbitrary: kept in the segment
            let r = (q.max(0) as usize).saturating_sub(s * gap).clamp(b[0], b[1] - 1);
            rows.push(g.part.perm[base + r] as i64);
        }
    }
    Arc::new(PrimitiveArray::<Int64Type>::new(ScalarBuffer::from(rows), a.nulls().cloned()))
}

/// Aggregations whose value at a row depends only on the non-null values
/// of its window, exactly (no rounding that depends on where the window
/// sits in the column): short keys can run batched, separated by null rows
/// ([`padded`]). (A NaN tied with a null row's NaN filler in `min` comes
/// back as the canonical NaN, as in the unkeyed kernel with nulls.)
fn batchable(agg: AggKind) -> bool {
    // collect skips nulls too, and a key's rows keep their order in the
    // padded column; the counts of the max / min are exact integers
    matches!(agg, AggKind::Max | AggKind::Min | AggKind::Range | AggKind::Count | AggKind::Collect | AggKind::MaxCount | AggKind::MinCount)
}

/// Segments `[s0, s1)` as one run of the grouped values and their bounds
/// within it (for [`crate::rolling::rolling_segments_dyn`]).
fn run_of(g: &Grouped, s0: usize, s1: usize) -> (ArrayRef, Vec<usize>) {
    let b = &g.part.bounds;
    (g.values.slice(b[s0], b[s1] - b[s0]), b[s0..=s1].iter().map(|&r| r - b[s0]).collect())
}

/// The longest segment of a run (its bounds).
fn longest(bounds: &[usize]) -> usize {
    bounds.windows(2).map(|b| b[1] - b[0]).max().unwrap_or(1).max(1)
}

/// One array per window of `ws` (`rows` rows each): `many` runs the
/// windows capped to a run's longest key (`most` rows), which hold the
/// same rows of every key, and that admit `min_periods`; a capped window
/// short of `min_periods` rows leaves every row null (no key has that
/// many values), as a call on each key would.
fn capped_windows(
    ws: &[usize],
    most: usize,
    min_periods: Option<usize>,
    rows: usize,
    out_type: &arrow_schema::DataType,
    many: impl FnOnce(&[usize]) -> Result<Vec<ArrayRef>>,
) -> Result<Vec<ArrayRef>> {
    let admits = |w: &usize| min_periods.is_none_or(|m| m <= *w);
    let capped: Vec<usize> = ws.iter().map(|&w| w.min(most)).collect();
    let ok: Vec<usize> = capped.iter().copied().filter(admits).collect();
    let mut got = if ok.is_empty() { Vec::new() } else { many(&ok)? }.into_iter();
    Ok(capped
        .iter()
        .map(|w| match admits(w) {
            true => got.next().expect("one output per window run"),
            false => arrow_array::new_null_array(out_type, rows),
        })
        .collect())
}

/// The segments `bounds[k]..bounds[k + 1]` of `values` as one column,
/// `gap` null rows between consecutive segments, so that a window of at
/// most `gap + 1` rows never reaches into the segment before: one kernel
/// call for many short keys instead of one each (DESIGN §3.4). Returns
/// the column and which of its rows are the segments' (for [`only`]).
fn padded(values: &dyn Array, bounds: &[usize], gap: usize) -> Result<(ArrayRef, arrow_array::BooleanArray)> {
    let segs = bounds.len().saturating_sub(1);
    let total = values.len() + gap * segs.saturating_sub(1);
    let mut idx: Vec<u32> = Vec::with_capacity(total);
    let mut real = arrow_buffer::BooleanBufferBuilder::new(total);
    for (s, b) in bounds.windows(2).enumerate() {
        if s > 0 {
            idx.resize(idx.len() + gap, 0);
            real.append_n(gap, false);
        }
        idx.extend(b[0] as u32..b[1] as u32);
        real.append_n(b[1] - b[0], true);
    }
    let real = real.finish();
    let indices = UInt32Array::new(ScalarBuffer::from(idx), Some(NullBuffer::new(real.clone())));
    let col = arrow_select::take::take(values, &indices, None).map_err(|e| Error::Invalid(e.to_string()))?;
    Ok((col, arrow_array::BooleanArray::new(real, None)))
}

/// The segments' rows of a kernel's output over a [`padded`] column.
fn only(out: &dyn Array, real: &arrow_array::BooleanArray) -> Result<ArrayRef> {
    arrow_select::filter::filter(out, real).map_err(|e| Error::Invalid(e.to_string()))
}

fn check_no_step(shape: Shape) -> Result<()> {
    if shape.step != 1 {
        return invalid!("step is not supported with keys (pandas' groupby().rolling has no step), got step={}", shape.step);
    }
    Ok(())
}

/// [`rolling_keyed_dyn`] for median / quantile / rank (`windows`: one
/// array per window, as `rolling_many`), `closed=` / `center=` within each
/// key; `step` must be 1.
pub fn rolling_order_keyed_dyn(
    keys: &dyn Array,
    values: &dyn Array,
    windows: &[usize],
    stat: crate::rolling::OrderStat,
    min_periods: Option<usize>,
    kernel: crate::rolling::OrderKernel,
    shape: Shape,
) -> Result<Vec<ArrayRef>> {
    for &w in windows {
        crate::rolling::check_window(w, min_periods)?;
    }
    check_no_step(shape)?;
    let g = group_rows(keys, values)?;
    let f = |seg: &dyn Array, _, _| crate::rolling::rolling_many_order_dyn(seg, windows, stat, min_periods, kernel, shape);
    // An order statistic is a function of its window's values: short keys
    // run in one padded column, as max / min. Each window is capped to the
    // run's longest key (the same rows of each key); rows short of
    // `min_periods` values are null either way.
    let float = arrow_schema::DataType::Float64;
    let trailing = |run: &dyn Array, rel: &[usize], ws: &[usize]| -> Result<Vec<ArrayRef>> {
        capped_windows(ws, longest(rel), min_periods, run.len(), &float, |ok| {
            let (col, real) = padded(run, rel, ok.iter().max().expect("a window") - 1)?;
            let outs = crate::rolling::rolling_many_order_dyn(col.as_ref(), ok, stat, min_periods, kernel, Shape::default())?;
            outs.iter().map(|o| only(o.as_ref(), &real)).collect()
        })
    };
    let rank_cut = stat == crate::rolling::OrderStat::Rank && shape.center;
    let batch = |s0: usize, s1: usize| -> Result<Vec<ArrayRef>> {
        let (run, rel) = run_of(&g, s0, s1);
        if shape.is_default() {
            return trailing(run.as_ref(), &rel, windows);
        }
        if rank_cut {
            // Rank ranks its window's last row: centred, a window cut by
            // its key's end ends on the key's last row, which a padded
            // column would follow with a null. The sorted-window frame
            // loop over the run, each window clipped to its key, instead.
            let (keys, nulls) = crate::rolling::order::keys_of(run.as_ref())?;
            let need = min_periods.unwrap_or(0).max(1);
            return Ok(windows
                .iter()
                .map(|&w| {
                    let (a, b) = shape.row_offsets(w);
                    crate::rolling::order::order_frames(&keys, nulls.as_ref(), &shape::Frame::RowsIn { a, b, bounds: &rel }, need, stat, 1)
                })
                .collect());
        }
        let one = |col: &dyn Array, b: &[usize], len: usize| Ok(Some(trailing(col, b, &[len])?.remove(0)));
        let mut outs = Vec::with_capacity(windows.len());
        for &w in windows {
            let out = shape::shaped_segments(run.as_ref(), &rel, shape.row_offsets(w), &float, min_periods.unwrap_or(0).max(1), false, &one)?;
            outs.push(out.expect("the padded kernel runs every window"));
        }
        Ok(outs)
    };
    per_segment_many(&g, windows.len(), f, Some((&batch as Batch, g.tuning.short_rows)))
}

/// argmax / argmin report row positions: within a key's segment they count
/// from the segment; map them to the input row index.
fn input_rows(g: &Grouped, agg: AggKind, out: ArrayRef, lo: usize) -> ArrayRef {
    if !matches!(agg, AggKind::ArgMax | AggKind::ArgMin) {
        return out;
    }
    let Some(a) = out.as_any().downcast_ref::<PrimitiveArray<Int64Type>>() else {
        return out;
    };
    let vals: Vec<i64> = a.values().iter().map(|&p| g.part.perm[lo + p.max(0) as usize] as i64).collect();
    Arc::new(PrimitiveArray::<Int64Type>::new(ScalarBuffer::from(vals), a.nulls().cloned()))
}


/// Many windows and aggregations at once, keyed: one array per
/// (aggregation, window), aggregation-major (`aggs[0]` over every window,
/// then `aggs[1]`, ...). The rows are grouped once for all of them (the
/// grouping, not the kernels, is most of a keyed call's cost on short
/// segments); each key's segment runs [`crate::rolling::rolling_many_dyn`]
/// per aggregation (the shared max / min pass, windows capped to the
/// segment), as an unkeyed `rolling_many` over that key's rows alone would.
pub fn rolling_many_keyed_dyn(
    keys: &dyn Array,
    values: &dyn Array,
    windows: &[usize],
    aggs: &[AggKind],
    min_periods: Option<usize>,
    algo: Algorithm,
) -> Result<Vec<ArrayRef>> {
    for &w in windows {
        crate::rolling::check_window(w, min_periods)?;
    }
    if aggs.is_empty() {
        return invalid!("rolling_many needs at least one aggregation");
    }
    let g = group_rows(keys, values)?;
    let f = |seg: &dyn Array, lo: usize, _| {
        let mut outs = Vec::with_capacity(windows.len() * aggs.len());
        for &agg in aggs {
            let got = crate::rolling::rolling_many_dyn(seg, windows, agg, min_periods, algo)?;
            outs.extend(got.into_iter().map(|o| input_rows(&g, agg, o, lo)));
        }
        Ok(outs)
    };
    // max / min / range / count through one padded column (windows capped
    // to the run's longest key, [`capped_windows`]); sum, mean and the moments restarted per key, a window at a time,
    // as rolling_many runs them on a key of at most PER_WINDOW_ROWS rows
    // (many.rs `min_shared`), so longer keys of a batch (tests raise the
    // limit) go one call each.
    let n_out = windows.len() * aggs.len();
    let batch = |s0: usize, s1: usize| -> Result<Vec<ArrayRef>> {
        let (run, rel) = run_of(&g, s0, s1);
        let most = longest(&rel);
        let restarted = aggs.iter().any(|&a| restarts(a));
        if restarted && most > crate::rolling::many::PER_WINDOW_ROWS {
            return each_alone(&g, s0, s1, &f);
        }
        let gap = windows.iter().map(|&w| w.min(most)).max().expect("a window") - 1;
        let pad = match aggs.iter().any(|&a| batchable(a)) {
            true => Some(padded(run.as_ref(), &rel, gap)?),
            false => None,
        };
        let mut outs = Vec::with_capacity(n_out);
        for &agg in aggs {
            match &pad {
                _ if is_end(agg) => {
                    for &w in windows {
                        outs.push(rolling_ends(run.as_ref(), &rel, Shape::default().row_offsets(w), agg, min_periods.unwrap_or(0), 1, ONE_THREAD)?);
                    }
                }
                Some((col, real)) if !restarts(agg) => {
                    let out_type = crate::engine::out_type(agg, DType::of(g.values.data_type())?);
                    outs.extend(capped_windows(windows, most, min_periods, run.len(), &out_type, |ok| {
                        let got = crate::rolling::rolling_many_dyn(col.as_ref(), ok, agg, min_periods, algo)?;
                        got.iter().map(|o| only(o.as_ref(), real)).collect()
                    })?);
                }
                _ => {
                    for &w in windows {
                        match crate::rolling::rolling_segments_dyn(run.as_ref(), &rel, w, agg, min_periods)? {
                            Some(o) => outs.push(o),
                            // values the variance kernel declines
                            None => return each_alone(&g, s0, s1, &f),
                        }
                    }
                }
            }
        }
        Ok(outs)
    };
    let batched = algo == Algorithm::Auto && aggs.iter().all(|&a| batchable(a) || restarts(a) || is_end(a));
    per_segment_many(&g, n_out, &f, batched.then_some((&batch as Batch, g.tuning.short_rows)))
}

/// Per-row time rolling within each key (pandas
/// `groupby(k).rolling("5s", on=ts)`): row `i` aggregates the rows `j` of its
/// key with `ts[j] > ts[i] - range`, up to and including `i`, or as
/// `closed=` / `center=` say; `step` must be 1. Times must be non-null and
/// non-decreasing within each key (keys may interleave).
#[allow(clippy::too_many_arguments)]
pub fn rolling_time_keyed_dyn(
    keys: &dyn Array,
    values: &dyn Array,
    ts: &dyn Array,
    range: i64,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
    shape: Shape,
) -> Result<ArrayRef> {
    check_no_step(shape)?;
    if range <= 0 {
        return invalid!("time window must be positive, got {range}");
    }
    let g = group_rows(keys, values)?;
    let ts_arr = times_per_key(&g, ts, values.len())?;
    let f = |seg: &dyn Array, lo: usize, hi: usize| {
        let out = crate::rolling::time::rolling_time_dyn(seg, &ts_arr.slice(lo, hi - lo), range, agg, min_periods, algo, shape)?;
        Ok(vec![input_rows(&g, agg, out, lo)])
    };
    let batch = |s0: usize, s1: usize| -> Result<Vec<ArrayRef>> {
        let (lo, hi) = (g.part.bounds[s0], g.part.bounds[s1]);
        match spaced_times(&g, &ts_arr, s0, s1, range) {
            Some(t) => {
                let out = crate::rolling::time::rolling_time_dyn(&g.values.slice(lo, hi - lo), &t, range, agg, min_periods, algo, shape)?;
                Ok(vec![input_rows(&g, agg, out, lo)])
            }
            None => each_alone(&g, s0, s1, &f),
        }
    };
    // Spacing pads nothing, so keys batch up to `restart_rows`, whatever
    // the aggregation. Each key's first row finds its window empty (the
    // spacing), and `auto`'s TwoStacks holds nothing of the rows it
    // evicted (both stacks empty), so sums, moments and geomean keep the
    // bits of one call per key too (props/time.rs `a_gap_starts_afresh`);
    // shaped windows run the frame loop, which drops what it holds where a
    // frame starts past it. argmax / argmin positions count from the run's
    // first row.
    let batched = algo == Algorithm::Auto;
    let mut out = per_segment_many(&g, 1, f, batched.then_some((&batch as Batch, g.tuning.restart_rows)))?;
    Ok(out.pop().expect("one output"))
}

/// The times of segments `[s0, s1)` moved so that each segment starts
/// `range + 1` after the one before it ends (its times minus its first,
/// plus a base): a time window `(t - range, t]`, closed at either end or
/// centred, then holds rows of its own segment only, and within a segment
/// the differences, so the windows, are the same. One kernel call for many short keys (DESIGN §3.4). `None`
/// where the bases would overflow.
fn spaced_times(g: &Grouped, ts: &PrimitiveArray<Int64Type>, s0: usize, s1: usize, range: i64) -> Option<PrimitiveArray<Int64Type>> {
    let (b, t) = (&g.part.bounds, ts.values());
    let mut out = Vec::with_capacity(b[s1] - b[s0]);
    let mut base = 0i64;
    for s in s0..s1 {
        let seg = &t[b[s]..b[s + 1]];
        let first = seg[0];
        let span = seg[seg.len() - 1].checked_sub(first)?;
        // The times are non-decreasing, so every `x - first` is in
        // `[0, span]`: each moved time fits when `base + span` does.
        let end = base.checked_add(span)?;
        out.extend(seg.iter().map(|&x| x - first + base));
        // `range + 1`: a left-closed window `[t - range, t]` of the next
        // key's first row stops short of this key's last time
        base = end.checked_add(range)?.checked_add(1)?;
    }
    Some(PrimitiveArray::new(ScalarBuffer::from(out), None))
}

/// A batch's segments run one by one, their outputs concatenated (where a
/// batch cannot run as one call).
fn each_alone(
    g: &Grouped,
    s0: usize,
    s1: usize,
    f: &dyn Fn(&dyn Array, usize, usize) -> Result<Vec<ArrayRef>>,
) -> Result<Vec<ArrayRef>> {
    let b = &g.part.bounds;
    let outs = (s0..s1).map(|s| f(&g.values.slice(b[s], b[s + 1] - b[s]), b[s], b[s + 1])).collect::<Result<Vec<_>>>()?;
    (0..outs[0].len())
        .map(|o| {
            let refs: Vec<&dyn Array> = outs.iter().map(|v| v[o].as_ref()).collect();
            arrow_select::concat::concat(&refs).map_err(|e| Error::Invalid(e.to_string()))
        })
        .collect()
}

/// The time column gathered into key segments (as the values), each
/// segment's times checked non-decreasing: the error names the first
/// offending row in input order, over all keys.
fn times_per_key(g: &Grouped, ts: &dyn Array, n: usize) -> Result<PrimitiveArray<Int64Type>> {
    let times = crate::engine::event_times(ts, n)?;
    let tsg = par_gather(times, &g.part.perm, g.split);
    let mut worst: Option<(usize, usize, i64)> = None;
    for s in 0..g.part.seg_key.len() {
        let (lo, hi) = (g.part.bounds[s], g.part.bounds[s + 1]);
        if let Some((j, prev)) = first_decrease(&tsg[lo..hi], None) {
            let row = g.part.perm[lo + j] as usize;
            if worst.is_none_or(|w| row < w.0) {
                worst = Some((row, lo + j, prev));
            }
        }
    }
    if let Some((row, p, prev)) = worst {
        return Err(crate::engine::time_order_error(row, Some(describe_key(g.keys.as_ref(), row)), tsg[p], prev));
    }
    Ok(PrimitiveArray::<Int64Type>::new(ScalarBuffer::from(tsg), None))
}

/// [`crate::rolling::order::rolling_order_time_dyn`] within each key
/// (`closed=` / `center=` too; `step` must be 1).
pub fn rolling_order_time_keyed_dyn(
    keys: &dyn Array,
    values: &dyn Array,
    ts: &dyn Array,
    range: i64,
    stat: crate::rolling::OrderStat,
    min_periods: Option<usize>,
    shape: Shape,
) -> Result<ArrayRef> {
    check_no_step(shape)?;
    if range <= 0 {
        return invalid!("time window must be positive, got {range}");
    }
    let g = group_rows(keys, values)?;
    let ts_arr = times_per_key(&g, ts, values.len())?;
    let f = |seg: &dyn Array, lo: usize, hi: usize| {
        Ok(vec![crate::rolling::order::rolling_order_time_dyn(seg, &ts_arr.slice(lo, hi - lo), range, stat, min_periods, shape)?])
    };
    // An order statistic is a function of its window's values: batched as
    // rolling_time_keyed_dyn's max / min.
    let batch = |s0: usize, s1: usize| -> Result<Vec<ArrayRef>> {
        let (lo, hi) = (g.part.bounds[s0], g.part.bounds[s1]);
        match spaced_times(&g, &ts_arr, s0, s1, range) {
            Some(t) => Ok(vec![crate::rolling::order::rolling_order_time_dyn(&g.values.slice(lo, hi - lo), &t, range, stat, min_periods, shape)?]),
            None => each_alone(&g, s0, s1, &f),
        }
    };
    let mut out = per_segment_many(&g, 1, f, Some((&batch as Batch, g.tuning.restart_rows)))?;
    Ok(out.pop().expect("one output"))
}

