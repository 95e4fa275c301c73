//! Many rolling sums / means of one float64 column in one shared pass
//! (`rolling_many`): compensated prefix sums, every window a difference.
//!
//! Per chunk of output rows `[a, b)` (plus the longest window's halo
//! before it) one running Neumaier sum gives `P[t] = ph[t] + pl[t]`, the
//! sum of the chunk's first `t` rows, with `ph` the rounded running sum and
//! `pl` its accumulated TwoSum errors. A window's sum is then
//! `(ph[e] - ph[s]) + (pl[e] - pl[s])`: the first difference is exact when
//! the two are within a factor 2 (Sterbenz), else rounded relative to the
//! result, and `pl` is `O(eps sqrt(L))` times the prefix's size, so the
//! error is a rounding of the result plus `O(L eps^2)` times the sum of
//! `|x|` over the chunk (`L` its rows): the same class as the
//! single-window kernel's (rolling/sum.rs), and restarting every chunk
//! keeps `L` at most the chunk plus the longest window. That term matters
//! only where values far larger than a window's met in the chunk (1e300
//! beside 1e-3: the rounding `pl` carried lost the small values' sum, and
//! their windows read 0), so as rolling/sum.rs `certify` does, the rows it
//! may have spoilt are summed again ([`redo_small`]). Each window then
//! costs four loads and three adds per row, which vectorise: the output's
//! own writes are most of the time.
//!
//! Only finite columns whose prefixes cannot overflow take this path (an
//! inf would poison every later prefix); the caller falls back to the
//! per-window kernel otherwise.

use std::sync::atomic::AtomicU64;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::NullBuffer;

use super::shape::Frame;
use super::valid::{non_finite_bits, word_at, All, Bitmap, PartBits, Valid, ValidPrefix, Words};
use super::sum::value;
use super::{buffer, Split};
use crate::engine::{AggKind, Column, ToArrow};
use crate::ops::arith::{two_sum, FSum, SumAcc};
use crate::ops::reduce::{detected, Level};

/// Output rows per chunk (the halo is read again per chunk).
fn chunk_rows(wmax: usize) -> usize {
    (4 * wmax).clamp(1 << 14, 1 << 17)
}

/// Sums (or means, `mean`) of `windows` (already capped to the column)
/// over `col`, or `None` when a value is not finite.
pub(super) fn many_sums(
    col: &Column<f64>,
    windows: &[usize],
    min_periods: usize,
    mean: bool,
    threads: usize,
    chunk: Option<usize>,
) -> Option<Vec<ArrayRef>> {
    let (x, n) = (col.values, col.len());
    // The largest valid |x| (`None`: one is not finite); null slots read
    // as 0 where they are loaded, never copied or filled (issue 36: a
    // filled copy, made on one thread a bit at a time, cost a third of
    // the kernel).
    let top = match col.nulls {
        None => valid_top(x, All),
        Some(nb) => valid_top(x, Bitmap::new(nb)),
    }?;
    let wmax = windows.iter().copied().max().unwrap_or(1);
    let chunk = chunk.unwrap_or_else(|| chunk_rows(wmax)).max(1);
    // A prefix holds at most `chunk + wmax` rows: it must not overflow
    // (inf - inf would be a NaN window); such a column takes the per-window
    // kernel, which counts an overflow apart.
    if top * (chunk + wmax) as f64 >= f64::MAX / 2.0 {
        return None;
    }
    let cum = col.nulls.map(prefix_counts);
    let mut outs: Vec<Vec<f64>> = windows.iter().map(|_| buffer::<f64>(n)).collect();
    let threads = threads.clamp(1, n.max(1));
    if n > 0 && !windows.is_empty() {
        let cum = cum.as_deref();
        let level = detected();
        split_rows(&mut outs, n, threads, |r0, r1, mine| match col.nulls {
            None => sum_rows_at(level, x, All, cum, windows, r0, r1, chunk, mean, mine),
            Some(nb) => sum_rows_at(level, x, Bitmap::new(nb), cum, windows, r0, r1, chunk, mean, mine),
        });
    }
    Some(columns(outs, windows, min_periods.max(1), col.nulls, threads))
}

/// The largest |x| of the valid rows `va` says (inf or NaN: not finite,
/// `None`; the fold's `max` keeps inf and `v - v` is NaN for both).
fn valid_top<Va: Valid>(x: &[f64], va: Va) -> Option<f64> {
    let mut top = 0.0f64;
    for (q, c) in x.chunks(32).enumerate() {
        let bits = if Va::ALL { u64::MAX } else { va.bits(32 * q) };
        let (fin, m) = c.iter().enumerate().fold((true, 0.0f64), |(a, m), (j, &v)| {
            let v = if Va::ALL { v } else { value(v, bits >> j) };
            (a & ((v - v) == 0.0), m.max(v.abs()))
        });
        if !fin {
            return None;
        }
        top = top.max(m);
    }
    Some(top)
}

/// Each window's output as an Arrow array, null below `need` valid rows
/// (`nulls`: the column's validity), as the single-window kernels mask
/// theirs ([`super::out_nulls`]); shared by every `rolling_many` pass. The
/// windows' validity is built on up to `threads` threads, a share of the
/// windows each (the first share here: keyed calls come here per batch of
/// short keys, and one share spawns nothing; a column without nulls is one
/// share).
pub(super) fn columns<O: ToArrow>(outs: Vec<Vec<O>>, windows: &[usize], need: usize, nulls: Option<&NullBuffer>, threads: usize) -> Vec<ArrayRef> {
    let n = outs.first().map_or(0, Vec::len);
    let mut valid: Vec<Option<NullBuffer>> = vec![None; windows.len()];
    // Without nulls each window's validity is its first `need - 1` rows:
    // no work for a thread.
    let threads = if nulls.is_some() { threads } else { 1 };
    let per = windows.len().div_ceil(threads.clamp(1, windows.len().max(1))).max(1);
    let each = move |vs: &mut [Option<NullBuffer>], ws: &[usize]| vs.iter_mut().zip(ws).for_each(|(v, &w)| *v = super::out_nulls(nulls, n, w, need));
    let (mine, rest) = valid.split_at_mut(per.min(windows.len()));
    std::thread::scope(|s| {
        for (vs, ws) in rest.chunks_mut(per).zip(windows[mine.len()..].chunks(per)) {
            s.spawn(move || each(vs, ws));
        }
        each(mine, &windows[..mine.len()]);
    });
    outs.into_iter().zip(valid).map(|(out, nb)| O::to_arrow(out, nb)).collect()
}

/// Rows `[r0, r1)` of every window (`outs[q]` holds exactly those rows).
/// [`sum_rows`] compiled for the CPU's widest level (the window
/// differences are a plain loop the compiler vectorises; the running sum is
/// a chain either way). `SLIDEWISE_SIMD` caps it.
#[allow(clippy::too_many_arguments)]
fn sum_rows_at<Va: Valid>(
    level: Level,
    x: &[f64],
    va: Va,
    cum: Option<&[u32]>,
    windows: &[usize],
    r0: usize,
    r1: usize,
    chunk: usize,
    mean: bool,
    outs: &mut [&mut [f64]],
) {
    #[cfg(target_arch = "x86_64")]
    {
        #[allow(clippy::too_many_arguments)]
        #[target_feature(enable = "avx512f")]
        unsafe fn avx512<Va: Valid>(x: &[f64], va: Va, c: Option<&[u32]>, w: &[usize], r0: usize, r1: usize, k: usize, m: bool, o: &mut [&mut [f64]]) {
            sum_rows(x, va, c, w, r0, r1, k, m, o)
        }
        #[allow(clippy::too_many_arguments)]
        #[target_feature(enable = "avx2")]
        unsafe fn avx2<Va: Valid>(x: &[f64], va: Va, c: Option<&[u32]>, w: &[usize], r0: usize, r1: usize, k: usize, m: bool, o: &mut [&mut [f64]]) {
            sum_rows(x, va, c, w, r0, r1, k, m, o)
        }
        // SAFETY: `detected()` found the CPU feature of the level.
        match level {
            Level::Avx512 => return unsafe { avx512(x, va, cum, windows, r0, r1, chunk, mean, outs) },
            Level::Avx2 => return unsafe { avx2(x, va, cum, windows, r0, r1, chunk, mean, outs) },
            Level::Portable => {}
        }
    }
    let _ = level;
    sum_rows(x, va, cum, windows, r0, r1, chunk, mean, outs)
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn sum_rows<Va: Valid>(x: &[f64], va: Va, cum: Option<&[u32]>, windows: &[usize], r0: usize, r1: usize, chunk: usize, mean: bool, outs: &mut [&mut [f64]]) {
    let wmax = windows.iter().copied().max().unwrap_or(1);
    let mut ph: Vec<f64> = Vec::new();
    let mut pl: Vec<f64> = Vec::new();
    let mut a = r0;
    while a < r1 {
        let b = (a + chunk).min(r1);
        // P[t] = sum of the valid rows of [h0, h0 + t).
        let h0 = a.saturating_sub(wmax);
        ph.clear();
        pl.clear();
        let (mut s, mut c) = (0.0, 0.0);
        ph.push(0.0);
        pl.push(0.0);
        for (q, xs) in x[h0..b].chunks(32).enumerate() {
            let bits = if Va::ALL { u64::MAX } else { va.bits(h0 + 32 * q) };
            for (j, &v) in xs.iter().enumerate() {
                let v = if Va::ALL { v } else { value(v, bits >> j) };
                let (t, e) = two_sum(s, v);
                s = t;
                c += e;
                ph.push(s);
                pl.push(c);
            }
        }
        // `redo_small`'s threshold; whether the prefix read a value small
        // enough to need it (found when a row is below it)
        let thr = small_sums(&pl);
        let mut fine: Option<bool> = None;
        for (q, &w) in windows.iter().enumerate() {
            let out = &mut outs[q][a - r0..b - r0];
            populate(out);
            // Row i's window is rows [max(i + 1 - w, 0), i]: prefix indices
            // e = i + 1 - h0 and s = e - w (clamped at the column start).
            let full = a.max(w - 1).min(b);
            for i in a..full {
                // Partial windows: here h0 = 0 (a < w - 1 <= wmax).
                let (e, s) = (i + 1 - h0, (i + 1).saturating_sub(w) - h0);
                out[i - a] = (ph[e] - ph[s]) + (pl[e] - pl[s]);
            }
            if full < b {
                let e0 = full + 1 - h0;
                let len = b - full;
                let (he, hs) = (&ph[e0..e0 + len], &ph[e0 - w..e0 - w + len]);
                let (le, ls) = (&pl[e0..e0 + len], &pl[e0 - w..e0 - w + len]);
                for ((((o, &p1), &p0), &l1), &l0) in out[full - a..].iter_mut().zip(he).zip(hs).zip(le).zip(ls) {
                    *o = (p1 - p0) + (l1 - l0);
                }
            }
            if lanes_abs(out, f64::INFINITY, |a, m| a < m) < thr
                && !*fine.get_or_insert_with(|| below_values(thr, x, va, h0, b))
            {
                redo_small(x, va, w, a, thr, out);
            }
            if mean {
                match cum {
                    None => {
                        for i in a..full {
                            out[i - a] /= (i + 1) as f64;
                        }
                        let inv = w as f64;
                        out[full - a..].iter_mut().for_each(|o| *o /= inv);
                    }
                    Some(cum) => {
                        // (a window of no valid row divides by 0: masked)
                        for i in a..full {
                            out[i - a] /= cum[i + 1] as f64;
                        }
                        if full < b {
                            let (ce, cs) = (&cum[full + 1..b + 1], &cum[full + 1 - w..b + 1 - w]);
                            for ((o, &e), &s) in out[full - a..].iter_mut().zip(ce).zip(cs) {
                                *o /= (e - s) as f64;
                            }
                        }
                    }
                }
            }
        }
        a = b;
    }
}

/// The sums a prefix of compensations `pl` may have spoilt are those below
/// this (rolling/sum.rs `certify`): each add rounds `pl` by at most `u
/// |pl|`, so a difference is off by at most `err = 2 eps cm L` beyond its
/// own rounding (`cm` the largest `|pl|`, NaN ignored; `L` the prefix's
/// rows), which is `2^-44` of a sum from `2^44 err` on. Rows below are
/// redone unless `err` is within `2^-50` of the smallest nonzero value the
/// prefix read (so of any window's sum of `|values|`).
fn small_sums(pl: &[f64]) -> f64 {
    let cm = lanes_abs(pl, 0.0, |a, m| a > m);
    2.0 * f64::EPSILON * cm * (pl.len() + 16) as f64 * (1u64 << 44) as f64
}

/// Whether [`small_sums`]' threshold `thr` (so its `err`) is within
/// `2^-50` of the smallest nonzero valid value of rows `[lo, hi)`: then no
/// row needs redoing.
fn below_values<Va: Valid>(thr: f64, x: &[f64], va: Va, lo: usize, hi: usize) -> bool {
    thr <= super::sum::min_nonzero(x, va, lo, hi) * (1u64 << 44) as f64 * (-50f64).exp2()
}

/// The `|x|` of `xs` that `better` picks over all others (NaN never:
/// `better` compares), from `init`: eight lanes of compare-and-select,
/// which vectorise (one chain of them would cost a compare's latency a
/// row).
#[inline(always)]
fn lanes_abs(xs: &[f64], init: f64, better: impl Fn(f64, f64) -> bool) -> f64 {
    let mut m = [init; 8];
    let mut it = xs.chunks_exact(8);
    for c in &mut it {
        for k in 0..8 {
            m[k] = if better(c[k].abs(), m[k]) { c[k].abs() } else { m[k] };
        }
    }
    for (k, &v) in it.remainder().iter().enumerate() {
        m[k] = if better(v.abs(), m[k]) { v.abs() } else { m[k] };
    }
    m.into_iter().fold(init, |a, v| if better(v, a) { v } else { a })
}

/// Rows `a..` (`out`: a chunk of window `w`'s sums of the zero-filled `x`)
/// below `thr` in magnitude, summed again over their window (`FSum`, what
/// the per-window kernel's FIFO gives).
#[cold]
fn redo_small<Va: Valid>(x: &[f64], va: Va, w: usize, a: usize, thr: f64, out: &mut [f64]) {
    for (q, o) in out.iter_mut().enumerate().filter(|(_, o)| o.abs() < thr) {
        let i = a + q;
        *o = ((i + 1).saturating_sub(w)..=i).filter(|&t| va.bit(t)).fold(FSum::default(), |f, t| f.add(&FSum::lift(x[t]))).value();
    }
}

// Shared with `many.rs` (the max / min sparse table): the row split over
// threads, and the validity of each window from prefix counts of non-null
// rows.

/// Run `job(r0, r1, rows r0..r1 of every output)` over `threads`
/// contiguous row ranges, all but the last on scoped threads (each output
/// split the same way, so the threads write disjoint slices).
pub(super) fn split_rows<O: Send>(outs: &mut [Vec<O>], n: usize, threads: usize, job: impl Fn(usize, usize, &mut [&mut [O]]) + Sync) {
    let mut rest: Vec<&mut [O]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
    let job = &job;
    std::thread::scope(|s| {
        let mut r0 = 0;
        for t in 0..threads {
            let r1 = n * (t + 1) / threads;
            let mut mine = Vec::with_capacity(rest.len());
            for sl in rest.iter_mut() {
                let (a, b) = std::mem::take(sl).split_at_mut(r1 - r0);
                mine.push(a);
                *sl = b;
            }
            if t + 1 == threads {
                job(r0, r1, &mut mine);
            } else {
                s.spawn(move || job(r0, r1, &mut mine));
            }
            r0 = r1;
        }
    });
}

/// `cum[i]` = non-null rows before row `i` (`n + 1` entries): the counts
/// of windows as long as the column ([`ValidPrefix::window_counts`], eight
/// rows a vector add; a running count over the bitmap's bit iterator was
/// a serial pass of several cycles a row, beside kernels of about one).
pub(super) fn prefix_counts(nb: &NullBuffer) -> Vec<u32> {
    let n = nb.len();
    let mut cum = vec![0u32; n + 1];
    ValidPrefix::new(nb).window_counts(n.max(1), 0, &mut cum[1..], |c| c as u32);
    cum
}

/// Fault in the pages of an output range just before it is written: one
/// `madvise(MADV_POPULATE_WRITE)` (Linux 5.14+; elsewhere, or where it
/// fails, the writes fault page by page as before) instead of a trap per
/// 4 KiB page, which on first touch cost more than the kernels here (64
/// windows of 10M rows are 1.25M pages; measured on the 2-vCPU Xeon VM, 16
/// columns of 10M float64: 3.0 s written plainly, 1.8 s populated a piece
/// at a time, as here). The pages come in zeroed and in cache, so the
/// writes that follow do not read memory either. Only whole pages inside
/// the range; small ranges are left to fault.
pub(super) fn populate<T>(v: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        const MADV_POPULATE_WRITE: i32 = 23;
        const PAGE: usize = 4096;
        let a = v.as_mut_ptr() as usize;
        let (s, e) = ((a + PAGE - 1) & !(PAGE - 1), (a + std::mem::size_of_val(v)) & !(PAGE - 1));
        if e >= s + 16 * PAGE {
            // SAFETY: whole pages inside `v`, which we own mutably; the
            // advice faults them in without changing their contents. The
            // result is ignored: failing leaves the ordinary page faults.
            unsafe { madvise(s as *mut std::ffi::c_void, e - s, MADV_POPULATE_WRITE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// Time windows (any `closed=` / `center=`) of sums, means and counts
/// (issue 36: they ran the FIFO loop over each row's frame, 18-20 ns a row
/// whatever the aggregation): row `i`'s window `[s, e)` from `frame`, its
/// sum a difference of the compensated prefix sums above, its count one
/// of the valid rows' running count. `None` (the caller runs the FIFO
/// loop) for other aggregations and sums and means of a column other than
/// float64. NaN and infinities are counted apart from the prefix sums;
/// rows a prefix's rounding or overflow may have spoilt are summed again
/// over their frame (`each_frame`'s `settle`).
///
/// The prefix restarts at a row whose window does not overlap the one
/// before (a gap: nothing before it reaches a later row), and after
/// [`FRAME_CHUNK`] rows once the rows it reads again (the window's) are at
/// most a quarter of those it covered. Where it restarts, and so every bit
/// of a row's result, depends only on the rows since the last gap: keyed
/// time rolling, which runs many keys in one call with a gap between
/// them, gives the bits of one call per key (`props/time.rs`
/// `a_gap_starts_afresh`). A prefix spans a few windows and `FRAME_CHUNK`
/// rows at most: the error class of [`many_sums`].
pub(super) fn frame_sums(values: &dyn Array, frame: &Frame, agg: AggKind, min_periods: usize, split: Split) -> Option<ArrayRef> {
    let nulls = values.logical_nulls();
    let n = values.len();
    match agg {
        AggKind::Count => Some(match &nulls {
            None => frame_counts(All, n, frame, min_periods, split),
            Some(nb) => frame_counts(Bitmap::new(nb), n, frame, min_periods, split),
        }),
        AggKind::Sum | AggKind::Mean => {
            let x = values.as_primitive_opt::<Float64Type>()?.values().as_ref();
            let mean = agg == AggKind::Mean;
            // Null when the window holds no valid row, as the FIFO's `lower`.
            let need = min_periods.max(1);
            Some(match &nulls {
                None => frame_means(All, x, frame, mean, need, split),
                Some(nb) => frame_means(Bitmap::new(nb), x, frame, mean, need, split),
            })
        }
        _ => None,
    }
}

/// Output rows a prefix covers before it may restart (not at a gap).
const FRAME_CHUNK: usize = 4096;

/// Whether row `i`, its frame starting at `s`, starts a new prefix when
/// the current one began at output row `a` and the row before ended at
/// `pe`: at a gap (nothing before reaches it), or after [`FRAME_CHUNK`]
/// rows once the window is at most a quarter of them. It depends only on
/// the rows since the last gap (keyed time rolling's bits; also
/// prefix_moments.rs `frame_vars`' chunks).
#[inline(always)]
pub(super) fn restarts(i: usize, s: usize, a: usize, pe: usize) -> bool {
    s >= pe || (i - a >= FRAME_CHUNK && 4 * (pe - s) <= i - a)
}

fn frame_counts<Va: Valid>(va: Va, n: usize, frame: &Frame, min_periods: usize, split: Split) -> ArrayRef {
    let mut out = super::buffer_to_fill::<i64>(n); // emit writes every row
    let words = Words::zeroed(n);
    in_parts(frame, n, split, &mut out[..], |r0, r1, hint, o| {
        each_frame::<Va, false, false>(va, &[], n, frame, (r0, r1, hint), &words, |i, c, _| {
            o[i - r0] = c as i64;
            c as usize >= min_periods
        })
    });
    super::assert_filled(&out);
    i64::to_arrow(out, Words::nulls(words, n))
}

fn frame_means<Va: Valid>(va: Va, x: &[f64], frame: &Frame, mean: bool, need: usize, split: Split) -> ArrayRef {
    // Whether a valid value is not finite.
    let odd = x.chunks(64).enumerate().any(|(q, c)| word_at(va, 64 * q, c.len()) & non_finite_bits(c) != 0);
    let n = x.len();
    let mut out = super::buffer_to_fill::<f64>(n); // emit writes every row
    let words = Words::zeroed(n);
    in_parts(frame, n, split, &mut out[..], |r0, r1, hint, o| {
        let emit = |i: usize, c: u32, s: f64| {
            o[i - r0] = if mean { s / c as f64 } else { s };
            c as usize >= need
        };
        match odd {
            false => each_frame::<Va, true, false>(va, x, n, frame, (r0, r1, hint), &words, emit),
            true => each_frame::<Va, true, true>(va, x, n, frame, (r0, r1, hint), &words, emit),
        }
    });
    super::assert_filled(&out);
    f64::to_arrow(out, Words::nulls(words, n))
}

/// `job(r0, r1, hint, out[r0..r1])` over parts of the `n` rows that start
/// where [`each_frame`]'s one pass restarts its prefix, on `split`'s
/// threads (a column under its `min_rows`: one part); `hint` is the frame
/// of the row before `r0`. A prefix, and every row's bits, depend only on
/// the rows since its restart, so the parts give the bits of one pass
/// (issue 36: time windows ran on one core, 1.2-1.5x polars on 2M rows;
/// 2.2-2.5x on two). The restarts are found first ([`restart_rows`]).
pub(super) fn in_parts<T: Send>(frame: &Frame, n: usize, split: Split, out: &mut [T], job: impl Fn(usize, usize, (usize, usize), &mut [T]) + Sync) {
    let threads = split.threads(n);
    if threads < 2 {
        return job(0, n, (0, 0), out);
    }
    let at = restart_rows(frame, n);
    let rows: Vec<usize> = at.iter().map(|r| r.0).collect();
    let cuts = super::cuts(n, threads, |r| Some(rows[rows.partition_point(|&b| b < r).min(rows.len() - 1)]));
    super::par_ranges(out, &cuts, |r0, r1, o| {
        let hint = if r0 == 0 { (0, 0) } else { at[rows.partition_point(|&b| b < r0)].1 };
        job(r0, r1, hint, o)
    });
}

/// (row, the frame of the row before) of every row where [`each_frame`]'s
/// one pass over `n` rows restarts its prefix, in order.
fn restart_rows(frame: &Frame, n: usize) -> Vec<(usize, (usize, usize))> {
    let mut at = vec![(0, (0, 0))];
    if let Frame::Time { ts, range, closed, center: false } = *frame {
        if closed.right() {
            // Row i's frame is [s_i, i + 1), s_i the first row at or above
            // `cut(i)` (no row leaves where it underflows): a gap is a row
            // whose frame holds no row before it, `ts[i - 1] < cut(i)`.
            // So the gaps are one compare a row, and between them a
            // restart is `FRAME_CHUNK` rows on, or the first row after
            // where the window's rows are a quarter of those since: a
            // binary search there, not a frame a row (the frames alone
            // were a third of a sum's time).
            let cut = |i: usize| ts[i].checked_sub(range).map(|lb| if closed.left() { lb } else { lb + 1 });
            let start = |i: usize| cut(i).map_or(0, |c| ts[..i].partition_point(|&t| t < c));
            let gap = |i: usize| cut(i).is_some_and(|c| ts[i - 1] < c);
            let (mut a, mut i) = (0usize, 1usize);
            while i < n {
                let chunk = (a + FRAME_CHUNK).min(n);
                if let Some(g) = (i..chunk).find(|&g| gap(g)) {
                    at.push((g, (start(g - 1), g)));
                    (a, i) = (g, g + 1);
                    continue;
                }
                i = chunk;
                let mut s = if i < n { start(i) } else { 0 };
                while i < n && !(gap(i) || 4 * (i - s) <= i - a) {
                    i += 1;
                    if i < n {
                        s = cut(i).map_or(s, |c| s + ts[s..i].partition_point(|&t| t < c));
                    }
                }
                if i < n {
                    at.push((i, (start(i - 1), i)));
                    (a, i) = (i, i + 1);
                }
            }
            return at;
        }
    }
    scanned_restarts(frame, n)
}

/// [`restart_rows`] by the frames of every row, as [`each_frame`] finds them.
fn scanned_restarts(frame: &Frame, n: usize) -> Vec<(usize, (usize, usize))> {
    let mut at = vec![(0, (0, 0))];
    let (mut s, mut e, mut a) = (0usize, 0usize, 0usize);
    for i in 0..n {
        let prev = (s, e);
        (s, e) = frame.bounds(i, n, s, e);
        if i > 0 && restarts(i, s, a, prev.1) {
            at.push((i, prev));
            a = i;
        }
    }
    at
}

/// Rows whose frames are found before their prefix is extended and read.
const FRAME_BLOCK: usize = 256;

/// `emit(i, valid rows, sum)` for each row's frame, in order (`SUMS`
/// false: the sum is 0, the values unread); its answers, whether the row
/// is valid, as bitmap words. `ODD`: some valid value is not finite; the
/// prefixes then sum the finite ones and count NaN, inf and -inf apart,
/// and a window holding one is what `FSum` gives it (NaN for a NaN or both
/// infinities, else the infinity): the finite rows' bits are the same
/// either way, so a column's NaN never changes another key's sums. When a
/// prefix restarts, and at the end, [`settle`] redoes the rows its rounding
/// or overflow may have spoilt. A block of rows' bounds
/// first, then per run of them without a restart the prefix extended in
/// one loop over the rows it adds, then the run's differences: the frame
/// scan's branches stay out of the loops that add and subtract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn each_frame<Va: Valid, const SUMS: bool, const ODD: bool>(
    va: Va,
    x: &[f64],
    n: usize,
    frame: &Frame,
    (r0, r1, hint): (usize, usize, (usize, usize)),
    words: &[AtomicU64],
    mut emit: impl FnMut(usize, u32, f64) -> bool,
) {
    let mut bits = PartBits::new(words);
    // The prefixes from row h0: the first t rows' rounded sum, their TwoSum
    // errors' sum and their valid rows.
    let (mut ph, mut pl, mut cl) = (vec![0.0f64], vec![0.0f64], vec![0u32]);
    let (mut run, mut comp, mut cnt) = (0.0f64, 0.0f64, 0u32);
    // ODD: the valid NaN, inf and -inf rows before each row of the prefix
    let (mut odds, mut odd) = (vec![[0u32; 3]], [0u32; 3]);
    // SUMS: the smallest |sum| the current prefix's rows emitted, for `settle`
    let mut low = f64::INFINITY;
    let (mut a, mut h0) = (r0, 0usize); // the prefix's first output row and first row
    let (mut sb, mut eb) = ([0usize; FRAME_BLOCK], [0usize; FRAME_BLOCK]);
    let (mut s, mut e) = hint; // the previous row's frame
    let mut i0 = r0;
    while i0 < r1 {
        let m = FRAME_BLOCK.min(r1 - i0);
        let e_last = e; // the end of the row before the block
        for j in 0..m {
            (s, e) = frame.bounds(i0 + j, n, s, e);
            (sb[j], eb[j]) = (s, e);
        }
        let mut j = 0;
        while j < m {
            // A run of rows j..k sharing the prefix.
            let mut k = j;
            while k < m {
                let (i, pe) = (i0 + k, if k > 0 { eb[k - 1] } else { e_last });
                // (a part starts where the whole column's pass restarts)
                let restart = i == r0 || restarts(i, sb[k], a, pe);
                if restart && k > j {
                    break;
                }
                if restart {
                    if SUMS && i > a {
                        settle(va, x, frame, (a, i, h0), (run, low), (&ph, &pl), &mut emit);
                        low = f64::INFINITY;
                    }
                    (a, h0, run, comp, cnt, odd) = (i, sb[k], 0.0, 0.0, 0, [0; 3]);
                    odds.truncate(1);
                    ph.truncate(1);
                    pl.truncate(1);
                    cl.truncate(1);
                }
                k += 1;
            }
            // Extend the prefix to the run's last end (ends never decrease):
            // written in place, 56 rows a validity read.
            let (lo, hi) = (h0 + cl.len() - 1, eb[k - 1]);
            if hi > lo {
                let base = cl.len();
                cl.resize(base + hi - lo, 0);
                if SUMS {
                    ph.resize(base + hi - lo, 0.0);
                    pl.resize(base + hi - lo, 0.0);
                }
                if ODD {
                    odds.resize(base + hi - lo, [0; 3]);
                }
                let mut t = lo;
                while t < hi {
                    let bits = va.bits(t);
                    let stop = hi.min(t + 56);
                    let at = base + t - lo;
                    if SUMS {
                        let fin = if ODD { bits & !non_finite_bits(&x[t..stop]) } else { bits };
                        if ODD {
                            for (q, (&v, o)) in x[t..stop].iter().zip(&mut odds[at..at + stop - t]).enumerate() {
                                if (bits & !fin) >> q & 1 != 0 {
                                    odd[if v.is_nan() { 0 } else if v > 0.0 { 1 } else { 2 }] += 1;
                                }
                                *o = odd;
                            }
                        }
                        let rows = x[t..stop].iter().zip(&mut ph[at..at + stop - t]).zip(&mut pl[at..at + stop - t]);
                        for (q, ((&v, h), l)) in rows.enumerate() {
                            let (r, err) = two_sum(run, if fin >> q & 1 != 0 { v } else { 0.0 });
                            run = r;
                            comp += err;
                            (*h, *l) = (run, comp);
                        }
                    }
                    for (q, c) in cl[at..at + stop - t].iter_mut().enumerate() {
                        cnt += (bits >> q & 1) as u32;
                        *c = cnt;
                    }
                    t = stop;
                }
            }
            for q in j..k {
                let (js, je) = (sb[q] - h0, eb[q] - h0);
                let mut sum = if SUMS { (ph[je] - ph[js]) + (pl[je] - pl[js]) } else { 0.0 };
                if ODD {
                    let (o1, o0) = (odds[je], odds[js]);
                    let (nan, pinf, ninf) = (o1[0] - o0[0], o1[1] - o0[1], o1[2] - o0[2]);
                    if nan > 0 || (pinf > 0 && ninf > 0) {
                        sum = f64::NAN;
                    } else if pinf > 0 {
                        sum = f64::INFINITY;
                    } else if ninf > 0 {
                        sum = f64::NEG_INFINITY;
                    }
                }
                if SUMS {
                    low = if sum.abs() < low { sum.abs() } else { low };
                }
                let i = i0 + q;
                bits.put(i, emit(i, cl[je] - cl[js], sum));
            }
            j = k;
        }
        i0 += m;
    }
    if SUMS && r1 > a {
        settle(va, x, frame, (a, r1, h0), (run, low), (&ph, &pl), &mut emit);
    }
    bits.end(r1);
}

/// The rows `[a, b)` of one prefix (row `a`'s frame starting at `h0`; the
/// prefix ended at `run`, and `low` the smallest `|sum|` they emitted)
/// whose sum the prefix may have spoilt, emitted again from `FSum`'s fold
/// over their frame (what the FIFO gives). A row's window has been
/// emitted already, so its frame and prefix sum are found again.
/// Two cases, both decided by the prefix's own rows, so a key of huge
/// values never changes another key's bits:
/// - the prefix overflowed (`run` not finite: the finite values' sum left
///   f64's range): each row that read an entry past it;
/// - the compensations' rounding ([`small_sums`]): only where values far
///   larger than a window's had met in the prefix (near 1e300 beside
///   1e-3: their rounding in `pl` lost the small values' sum, and the
///   rows read 0); on ordinary data no row is redone.
#[cold]
fn settle<Va: Valid>(
    va: Va,
    x: &[f64],
    frame: &Frame,
    (a, b, h0): (usize, usize, usize),
    (run, low): (f64, f64),
    (ph, pl): (&[f64], &[f64]),
    emit: &mut impl FnMut(usize, u32, f64) -> bool,
) {
    // A prefix that overflowed: the rows that read past it (NaN / inf
    // past the first entry that did).
    let over = !run.is_finite();
    let thr = small_sums(pl);
    let small = low < thr && !below_values(thr, x, va, h0, h0 + pl.len() - 1);
    if !small && !over {
        return;
    }
    let (n, (mut s, mut e)) = (x.len(), (h0, h0));
    for i in a..b {
        (s, e) = frame.bounds(i, n, s, e);
        let (js, je) = (s - h0, e - h0);
        // the sum the row emitted (without its non-finite values': a row
        // with one whose finite part is small is redone too, as `FSum`
        // gives it the same)
        let sum = (ph[je] - ph[js]) + (pl[je] - pl[js]);
        if (over && !(ph[je] + pl[je]).is_finite()) || (small && sum.abs() < thr) {
            let f = (s..e).filter(|&t| va.bits(t) & 1 != 0).fold(FSum::default(), |f, t| f.add(&FSum::lift(x[t])));
            emit(i, f.n as u32, f.value());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rolling::shape::Closed;

    /// The restarts found from the timestamps alone are those the frames
    /// of every row give (the one pass's): with gaps, runs of equal times,
    /// windows of a few and of thousands of rows, every `closed=`.
    #[test]
    fn time_restarts_equal_the_scanned_ones() {
        let mut st = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || crate::rolling::xorshift(&mut st);
        for case in 0..24 {
            let n = [1, 2, 5, 4_097, 9_000, 30_000][case % 6];
            let mut t = -(1i64 << 62) * (case % 2) as i64;
            let ts: Vec<i64> = (0..n)
                .map(|_| {
                    t += match next() % 100 { 0 => 5_000, 1..=30 => 0, _ => (next() % 4) as i64 };
                    t
                })
                .collect();
            for range in [1, 3, 40, 3_000, i64::MAX / 2] {
                for closed in [Closed::Right, Closed::Both, Closed::Left, Closed::Neither] {
                    let frame = Frame::Time { ts: &ts, range, closed, center: false };
                    assert_eq!(restart_rows(&frame, n), scanned_restarts(&frame, n), "n {n} range {range} {closed:?}");
                }
            }
        }
        // a row a time unit: windows of exactly `range` rows, so the
        // quarter rule's bound is met with equality
        let ts: Vec<i64> = (0..20_000).collect();
        for range in [1_024, 1_025, 2_000] {
            let frame = Frame::Time { ts: &ts, range, closed: Closed::Right, center: false };
            assert_eq!(restart_rows(&frame, ts.len()), scanned_restarts(&frame, ts.len()), "range {range}");
        }
    }
}
