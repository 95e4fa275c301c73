//! Many rolling windows over one column at once (`rolling_many`): one shared
//! pass for max / min (here), sum / mean of float64 (prefix.rs) and var /
//! std (prefix_moments.rs), the single-window kernels for everything else.
//!
//! max / min are idempotent, so a window of any length `w` is the max of two
//! overlapping power-of-two blocks: with `k = floor(log2 w)` and the sparse
//! table level `L_k[j] = max(x[j .. j + 2^k))`,
//! `out[i] = max(L_k[i - w + 1], L_k[i - 2^k + 1])` — one vector max per
//! output row and window, whatever `w` is. The levels are built in place
//! (`L_{k+1}[j] = max(L_k[j], L_k[j + 2^k])`, reading ahead of the write) on
//! a chunk of rows plus the longest window's halo, so they stay in cache;
//! the windows are answered in increasing `k` between level steps. This is
//! SlideSide's "one combine per query per row" (docs/DESIGN.md "Performance
//! notes") with the shared scans replaced by the sparse table, which only an
//! idempotent operation allows.
//!
//! Semantics are those of [`super::extreme`] bit for bit: NaN largest,
//! -0.0 equal to 0.0, and of tied rows the earliest wins (its zero sign
//! kept, Spark's `greatest` fold). Every combine is `pick(older, newer)`,
//! which keeps the older on a tie: a level entry is then its block's
//! earliest extreme, and of the two blocks of a window the left (older)
//! one wins a tie — if the earliest extreme row is in the left block it
//! wins, and if not, the left block holds no tied row so the right block's
//! earliest is the window's. A chunk whose rows hold a NaN runs the
//! NaN-aware pick. Null rows are filled with a value that never wins (-inf
//! for max; +inf for min, NaN, the top, where the chunk holds a NaN) and
//! the output is masked where the window has fewer than
//! `max(min_periods, 1)` non-null rows. The partial windows at the start
//! (rows `i < w - 1`) are prefix maxima, computed once for all windows.

use arrow_array::{Array, ArrayRef};

use super::prefix::{columns, populate, split_rows};
use super::valid::{Bitmap, Valid};
use super::{buffer, check_window, FastNum};
use crate::ops::reduce::{detected, Level};

use crate::engine::{AggKind, Column, DType, FromArrow};
use crate::fifo::Algorithm;
use crate::Result;

/// Rolling `agg` for each of `windows` (any order, duplicates allowed; each
/// at least 1, at most `values.len()` after the caller's capping is not
/// needed: longer windows are capped here). One array per window, in order.
pub fn rolling_many_dyn(
    values: &dyn Array,
    windows: &[usize],
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
) -> Result<Vec<ArrayRef>> {
    let min = min_shared(agg, values.len());
    rolling_many_split(values, windows, agg, min_periods, algo, Tuning::default(), LONG, min)
}

/// Columns of at most this many rows (a short key) run sum, mean and the
/// moments a window at a time, on the single-window kernels: keyed
/// `rolling_many` batches such keys restarted per key (segments.rs), which
/// must give the bits of this call on the key alone. A short key's fixed
/// costs, not the shared pass, are what count there.
pub(crate) const PER_WINDOW_ROWS: usize = 64;

/// Fewest windows a shared pass takes: below it each window runs its own
/// kernel, which is faster. Measured (Intel Xeon, 2 vCPUs, quiet, shared
/// pass time / separate `rolling()` calls, windows spread in [16, 32768]):
/// at 100k-500k rows max 1.2-1.7x at 2-4 windows, 0.8-0.9x from 8; sum and
/// std 1.4-5.5x at 2-8 windows on 100k rows, 0.7-0.8x at 32; on 10M rows,
/// where `rolling()` splits its rows over threads, sum 1.2-1.3x still at
/// 16-32 windows, 0.96x at 64. Small columns (a keyed call's segments)
/// keep one call: there a call's fixed cost is what counts. Sum, mean and
/// the moments on at most [`PER_WINDOW_ROWS`] rows run a window at a time.
fn min_shared(agg: AggKind, n: usize) -> usize {
    let sums = matches!(agg, AggKind::Sum | AggKind::Mean);
    if n <= PER_WINDOW_ROWS && super::segments::restarts(agg) {
        usize::MAX
    } else if n < 1 << 16 {
        2
    } else if matches!(agg, AggKind::Max | AggKind::Min) {
        8
    } else if sums && n >= super::SPLIT_MIN_ROWS {
        64
    } else {
        16
    }
}

/// Knobs of the shared max / min pass; tests set them to force many chunks
/// and thread splits on small columns.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tuning {
    /// Output rows per chunk (`None`: from the longest window).
    pub chunk: Option<usize>,
    /// Threads, each a contiguous range of rows (`None`: by size, at most
    /// the available parallelism).
    pub threads: Option<usize>,
}

#[doc(hidden)]
pub fn rolling_many_tuned(
    values: &dyn Array,
    windows: &[usize],
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
    tuning: Tuning,
) -> Result<Vec<ArrayRef>> {
    rolling_many_split(values, windows, agg, min_periods, algo, tuning, LONG, 2)
}

/// Windows longer than this skip the shared passes (DESIGN §1.3): each
/// chunk of output (at most 2^16 - 2^17 rows) re-reads a halo as long as
/// the longest shared window, so a 1M-row window made every chunk read
/// ~9x its own rows (rolling_many([2^20], "std") took 2.3 s against 78 ms
/// for rolling()). A shared pass costs about one rolling() call per window
/// anyway (most of it is writing the output), so a long window loses
/// nothing on its own kernel, which is threaded. 2^15 keeps the halo at
/// most a quarter (half for var / std) of a full chunk and the README's
/// 64 windows in [1, 32768] all shared.
const LONG: usize = 1 << 15;

/// [`rolling_many_tuned`] with the long-window threshold and the fewest
/// windows a shared pass takes given (tests set them low to mix shared and
/// per-window windows on small columns).
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub fn rolling_many_split(
    values: &dyn Array,
    windows: &[usize],
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
    tuning: Tuning,
    long: usize,
    min_shared: usize,
) -> Result<Vec<ArrayRef>> {
    for &w in windows {
        check_window(w, min_periods)?;
    }
    let n = values.len();
    // A window longer than the data is the whole prefix.
    let ws: Vec<usize> = windows.iter().map(|&w| w.min(n.max(1))).collect();
    let shared: Vec<usize> = (0..ws.len()).filter(|&q| ws[q] <= long).collect();
    // One shared window alone gains nothing from the pass (which also runs
    // on one thread below 2^24 rows x windows) over its own kernel, nor do
    // a few ([`min_shared`]).
    if shared.len() < min_shared.max(2) {
        return many_shared(values, &ws, agg, min_periods, algo, tuning, false);
    }
    if shared.len() == ws.len() {
        return many_shared(values, &ws, agg, min_periods, algo, tuning, true);
    }
    let sws: Vec<usize> = shared.iter().map(|&q| ws[q]).collect();
    let mut outs: Vec<Option<ArrayRef>> = vec![None; ws.len()];
    for (&q, a) in shared.iter().zip(many_shared(values, &sws, agg, min_periods, algo, tuning, true)?) {
        outs[q] = Some(a);
    }
    for (q, o) in outs.iter_mut().enumerate() {
        if o.is_none() {
            *o = many_shared(values, &ws[q..q + 1], agg, min_periods, algo, tuning, false)?.pop();
        }
    }
    Ok(outs.into_iter().map(|a| a.expect("every window answered")).collect())
}

/// `ws` (capped) through the shared passes where `shared` and the
/// aggregate has one, else each through its own kernel.
fn many_shared(
    values: &dyn Array,
    ws: &[usize],
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
    tuning: Tuning,
    shared: bool,
) -> Result<Vec<ArrayRef>> {
    let dtype = DType::of(values.data_type())?;
    let n = values.len();
    let pass = shared && algo == Algorithm::Auto;
    if pass && matches!(agg, AggKind::Max | AggKind::Min) {
        return crate::with_dtype!(dtype, |T| {
            let col = <T as FromArrow>::column(values)?;
            let mp = min_periods.unwrap_or(0);
            Ok(if agg == AggKind::Max {
                many_extreme::<T, true>(&col, ws, mp, tuning)
            } else {
                many_extreme::<T, false>(&col, ws, mp, tuning)
            })
        });
    }
    if pass && matches!(agg, AggKind::Sum | AggKind::Mean) && dtype == DType::F64 {
        let col = <f64 as FromArrow>::column(values)?;
        let mp = min_periods.unwrap_or(0);
        if let Some(out) = super::prefix::many_sums(&col, ws, mp, agg == AggKind::Mean, threads_for(n, ws.len(), tuning), tuning.chunk) {
            return Ok(out);
        }
    }
    if pass && matches!(agg, AggKind::Var | AggKind::Std | AggKind::VarPop | AggKind::StdPop) {
        let mp = min_periods.unwrap_or(0);
        let (ddof, sqrt) = (matches!(agg, AggKind::Var | AggKind::Std) as usize, matches!(agg, AggKind::Std | AggKind::StdPop));
        let threads = threads_for(n, ws.len(), tuning);
        let out = crate::with_dtype!(dtype, |T| {
            let col = <T as FromArrow>::column(values)?;
            super::prefix_moments::many_vars(&col, ws, mp, ddof, sqrt, threads, tuning.chunk)
        });
        if let Some(out) = out {
            return Ok(out);
        }
    }
    ws.iter()
        .map(|&w| match min_periods {
            // Only possible for a window capped to the data: never enough
            // rows, all null of the aggregate's type.
            Some(m) if m > w => super::rolling_plain(values.slice(0, 0).as_ref(), w, agg, None, algo)
                .map(|empty| arrow_array::new_null_array(empty.data_type(), n)),
            _ => super::rolling_plain(values, w, agg, min_periods, algo),
        })
        .collect()
}

/// Threads for a shared pass: each a contiguous range of rows, only when
/// the output is large (most of the time is writing it, and first-touch
/// page faults run on the touching thread, so they are shared too); at most
/// 4 and the available parallelism.
fn threads_for(n: usize, windows: usize, tuning: Tuning) -> usize {
    let work = n.saturating_mul(windows.max(1));
    let auto = if work >= 1 << 24 { super::thread_cap() } else { 1 };
    tuning.threads.unwrap_or(auto).clamp(1, n.max(1))
}

/// Rows of output per chunk: enough that the halo (`wmax - 1` rows read
/// again) is a small share, few enough that the level buffer stays in L2.
fn chunk_rows(wmax: usize) -> usize {
    (4 * wmax).clamp(1 << 15, 1 << 17)
}

/// floor(log2 w), w >= 1.
#[inline]
fn level(w: usize) -> u32 {
    usize::BITS - 1 - w.leading_zeros()
}

fn many_extreme<T: FastNum, const MAX: bool>(col: &Column<T>, windows: &[usize], min_periods: usize, tuning: Tuning) -> Vec<ArrayRef> {
    let n = col.len();
    let wmax = windows.iter().copied().max().unwrap_or(1);
    let chunk = tuning.chunk.unwrap_or_else(|| chunk_rows(wmax)).max(1);
    let mut outs: Vec<Vec<T>> = windows.iter().map(|_| buffer::<T>(n)).collect();
    // Threads split the rows (each recomputes its first chunk's halo); only
    // worth it when the output is large. Most of the time is writing the
    // output, and first-touch page faults run on the touching thread, so
    // they are shared too.
    let threads = threads_for(n, windows.len(), tuning);
    if n > 0 && !windows.is_empty() {
        let level = detected();
        split_rows(&mut outs, n, threads, |r0, r1, mine| extreme_rows_at::<T, MAX>(level, col, windows, r0, r1, chunk, mine));
    }
    columns(outs, windows, min_periods.max(1), col.nulls, threads)
}

use super::extreme::pick;

/// [`extreme_rows`] compiled for the CPU's widest level (as the single-window
/// kernel, [`crate::ops::reduce::detected`]): the level steps and the
/// per-window selects are plain loops that the compiler vectorises, 2 lanes
/// of float64 wide without AVX, 8 with AVX-512. `SLIDEWISE_SIMD` caps it.
#[allow(clippy::too_many_arguments)]
fn extreme_rows_at<T: FastNum, const MAX: bool>(
    level: Level,
    col: &Column<T>,
    windows: &[usize],
    r0: usize,
    r1: usize,
    chunk: usize,
    outs: &mut [&mut [T]],
) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f")]
        unsafe fn avx512<T: FastNum, const MAX: bool>(c: &Column<T>, w: &[usize], r0: usize, r1: usize, k: usize, o: &mut [&mut [T]]) {
            extreme_rows::<T, MAX>(c, w, r0, r1, k, o)
        }
        #[target_feature(enable = "avx2")]
        unsafe fn avx2<T: FastNum, const MAX: bool>(c: &Column<T>, w: &[usize], r0: usize, r1: usize, k: usize, o: &mut [&mut [T]]) {
            extreme_rows::<T, MAX>(c, w, r0, r1, k, o)
        }
        // SAFETY: `detected()` found the CPU feature of the level.
        match level {
            Level::Avx512 => return unsafe { avx512::<T, MAX>(col, windows, r0, r1, chunk, outs) },
            Level::Avx2 => return unsafe { avx2::<T, MAX>(col, windows, r0, r1, chunk, outs) },
            Level::Portable => {}
        }
    }
    let _ = level;
    extreme_rows::<T, MAX>(col, windows, r0, r1, chunk, outs)
}

/// Fill `outs[q][i - r0]` for rows `i` in `[r0, r1)` (each `outs[q]` holds
/// exactly those rows), `windows[q]` already capped to the column.
#[inline(always)]
fn extreme_rows<T: FastNum, const MAX: bool>(
    col: &Column<T>,
    windows: &[usize],
    r0: usize,
    r1: usize,
    chunk: usize,
    outs: &mut [&mut [T]],
) {
    let x = col.values;
    let wmax = windows.iter().copied().max().unwrap_or(1);
    // Windows by level, so each level step answers its windows.
    let mut order: Vec<usize> = (0..windows.len()).collect();
    order.sort_by_key(|&q| windows[q]);

    // Partial windows at the start: prefix extremes (NaN-aware, exact for
    // every input), for rows below the longest window.
    let pre_end = r1.min(wmax - 1);
    if r0 < pre_end {
        let mut acc: Option<T> = None;
        for i in 0..pre_end {
            if col.is_valid(i) {
                acc = Some(acc.map_or(x[i], |a| pick::<T, MAX, true>(a, x[i])));
            }
            if i >= r0 {
                // No valid row yet: any value, the row is masked.
                let v = acc.unwrap_or(x[i]);
                for (q, &w) in windows.iter().enumerate() {
                    if i + 1 < w {
                        outs[q][i - r0] = v;
                    }
                }
            }
        }
    }

    let mut raw: Vec<T> = Vec::new();
    let mut a = r0;
    while a < r1 {
        let b = (a + chunk).min(r1);
        // Rows a window ending in [a, b) can read; rows before w - 1 were
        // answered above, so the halo never needs to reach below 0.
        let h0 = a.saturating_sub(wmax - 1);
        let m = b - h0;
        let has_nan = fill_raw::<T, MAX>(col, h0, b, &mut raw);
        if !has_nan {
            answer::<T, MAX, false>(&mut raw[..m], windows, &order, a, b, h0, r0, outs);
        } else {
            if let (false, Some(nb)) = (MAX, col.nulls) {
                // +inf would beat a NaN for min: nulls take the top.
                for (j, r) in raw[..m].iter_mut().enumerate() {
                    if !nb.is_valid(h0 + j) {
                        *r = T::TOP;
                    }
                }
            }
            answer::<T, MAX, true>(&mut raw[..m], windows, &order, a, b, h0, r0, outs);
        }
        a = b;
    }
}

/// Copy rows `[h0, b)` into `buf` with nulls filled with a value that
/// never wins; whether a NaN is among the valid rows.
#[inline(always)]
fn fill_raw<T: FastNum, const MAX: bool>(col: &Column<T>, h0: usize, b: usize, buf: &mut Vec<T>) -> bool {
    let fill = if MAX { T::LOWEST } else { T::HIGHEST };
    buf.clear();
    buf.reserve(b - h0);
    let xs = &col.values[h0..b];
    match col.nulls {
        None => buf.extend_from_slice(xs),
        Some(nb) => {
            // 32 rows' bits a read, a select a row (a bit test through the
            // buffer a row was most of the pass with nulls)
            let va = Bitmap::new(nb);
            for (q, c) in xs.chunks(32).enumerate() {
                let bits = va.bits(h0 + 32 * q);
                buf.extend(c.iter().enumerate().map(|(j, &v)| if bits >> j & 1 != 0 { v } else { fill }));
            }
        }
    }
    T::has_nan(buf)
}

/// The sparse-table pass over one chunk; `lv` holds rows `[h0, b)` as level
/// 0 and is overwritten level by level.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn answer<T: FastNum, const MAX: bool, const NAN: bool>(
    lv: &mut [T],
    windows: &[usize],
    order: &[usize],
    a: usize,
    b: usize,
    h0: usize,
    r0: usize,
    outs: &mut [&mut [T]],
) {
    let m = lv.len();
    let mut cur = 0u32;
    for &q in order {
        let w = windows[q];
        let k = level(w);
        while cur < k {
            // L_{cur+1}[j] = max(L_cur[j], L_cur[j + h]) for j + 2h <= m.
            let h = 1usize << cur;
            if 2 * h <= m {
                level_step::<T, MAX, NAN>(&mut lv[..m - h + 1], h);
            }
            cur += 1;
        }
        // Rows i in [max(a, w - 1), b): the two blocks [i-w+1, i-w+1+2^k)
        // and [i-2^k+1, i] (local indices minus h0).
        let s = a.max(w - 1);
        if s >= b {
            continue;
        }
        let p = 1usize << k;
        let out = &mut outs[q][s - r0..b - r0];
        populate(out);
        let left = &lv[s + 1 - w - h0..b + 1 - w - h0];
        let right = &lv[s + 1 - p - h0..b + 1 - p - h0];
        for ((o, &l), &r) in out.iter_mut().zip(left).zip(right) {
            *o = pick::<T, MAX, NAN>(l, r);
        }
    }
}

/// `lv[j] = max(lv[j], lv[j + h])` for `j + h < lv.len()`, in place. Going
/// forward, `lv[j + h]` is still the old level when read; the read-ahead goes
/// through a small copy so the compiler sees two disjoint slices and
/// vectorises.
#[inline(always)]
fn level_step<T: FastNum, const MAX: bool, const NAN: bool>(lv: &mut [T], h: usize) {
    const B: usize = 256;
    let len = lv.len() - h;
    let mut tmp = [lv[0]; B];
    let mut c = 0;
    while c < len {
        let e = (c + B).min(len);
        let t = &mut tmp[..e - c];
        t.copy_from_slice(&lv[c + h..e + h]);
        for (l, &r) in lv[c..e].iter_mut().zip(t.iter()) {
            *l = pick::<T, MAX, NAN>(*l, r);
        }
        c = e;
    }
}
