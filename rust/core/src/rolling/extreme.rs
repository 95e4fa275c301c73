//! Rolling max / min / range: van Herk / Gil-Werman (the block kernel of
//! [`super::block`] with the combine a plain max) on the raw values.
//!
//! * Ties: every combine is `pick(older, newer)` and takes the newer only
//!   when strictly greater (`if b > a { b } else { a }`, one `maxsd` with
//!   the older operand second), so of rows tied at the extreme the earliest
//!   wins: -0.0 and +0.0 compare equal and the earliest one's sign is
//!   kept, as Spark's `greatest` fold (docs/DESIGN.md §5.3). The van Herk
//!   split keeps row order: suffix (older) on the left, prefix on the right.
//! * NaN is above every number. Raw float `>` ignores NaN, so a chunk of
//!   about 4096 rows holding a NaN (checked while it is in cache) runs the
//!   same kernel with a NaN-aware pick (two more compares); integers never
//!   do.
//! * The prefix scan of a block is written straight into the output; the
//!   suffix scan of the previous block runs backwards and combines into it
//!   in the same pass, so there is no temporary array and no branch per row.
//! * Compiled three times (portable, AVX2, AVX-512F) and picked at run time
//!   as the pane reductions ([`crate::ops::reduce::detected`]).
//! * Nulls: filled with the bottom (-inf, MIN) for max and the top (NaN,
//!   MAX) for min, which never beat a real value, and the
//!   output is masked where the window has no non-null row (or fewer than
//!   `min_periods`).

use arrow_array::ArrayRef;

use super::{buffer, filled, validity, window_counts, FastNum};
use crate::engine::{Column, ToArrow};
use crate::ops::reduce::{detected, Level};

/// max when `MAX`, else min, of the older `a` and the newer `b`, as a
/// branch-free select: `b` only when strictly better, so ties keep `a`.
/// With `NAN`, NaN counts as above every number.
#[inline(always)]
pub(super) fn pick<T: FastNum, const MAX: bool, const NAN: bool>(a: T, b: T) -> T {
    let wins = if MAX { b > a } else { b < a };
    let wins = if NAN { wins | T::nan_beats::<MAX>(a, b) } else { wins };
    if wins {
        b
    } else {
        a
    }
}

/// Running max of `x` (mapped by `f`) on top of `p`, written to `out`
/// (same length); returns the max of `p` and all of `x`.
///
/// Rows go in fours: the running max of the four is off the loop-carried
/// chain, which then has one select (4 cycles of latency) per four rows
/// instead of per row; the other selects are independent and run at two
/// per cycle.
#[inline(always)]
fn prefix_into<T: FastNum, const MAX: bool, const NAN: bool>(x: &[T], out: &mut [T], mut p: T) -> T {
    let mut oc = out.chunks_exact_mut(4);
    let mut xc = x.chunks_exact(4);
    for (o, v) in (&mut oc).zip(&mut xc) {
        let a = v[0];
        let ab = pick::<T, MAX, NAN>(a, v[1]);
        let abc = pick::<T, MAX, NAN>(ab, v[2]);
        let abcd = pick::<T, MAX, NAN>(abc, v[3]);
        o[0] = pick::<T, MAX, NAN>(p, a);
        o[1] = pick::<T, MAX, NAN>(p, ab);
        o[2] = pick::<T, MAX, NAN>(p, abc);
        p = pick::<T, MAX, NAN>(p, abcd);
        o[3] = p;
    }
    for (o, &v) in oc.into_remainder().iter_mut().zip(xc.remainder()) {
        p = pick::<T, MAX, NAN>(p, v);
        *o = p;
    }
    p
}

/// Backward scan: `out[k]` takes the max of itself, `mid`, and the suffix
/// `x[k..]` on top of `s` (the max of what lies after `x`); returns the
/// max of `s` and all of `x`. `mid` is a constant of the caller's (the
/// two-level kernel's whole sub-blocks; the bottom, a no-op, otherwise).
#[inline(always)]
fn suffix_into<T: FastNum, const MAX: bool, const NAN: bool>(x: &[T], out: &mut [T], mut s: T, mid: T) -> T {
    let mut oc = out.rchunks_exact_mut(4);
    let mut xc = x.rchunks_exact(4);
    for (o, v) in (&mut oc).zip(&mut xc) {
        let d = v[3];
        let cd = pick::<T, MAX, NAN>(v[2], d);
        let bcd = pick::<T, MAX, NAN>(v[1], cd);
        let abcd = pick::<T, MAX, NAN>(v[0], bcd);
        o[3] = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(d, s), mid), o[3]);
        o[2] = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(cd, s), mid), o[2]);
        o[1] = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(bcd, s), mid), o[1]);
        s = pick::<T, MAX, NAN>(abcd, s);
        o[0] = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(s, mid), o[0]);
    }
    for (o, &v) in oc.into_remainder().iter_mut().zip(xc.remainder()).rev() {
        s = pick::<T, MAX, NAN>(v, s);
        *o = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(s, mid), *o);
    }
    s
}

/// One block `[start, end)` (`end - start <= window`, `start` a multiple of
/// `window`); `out[k]` is row `start + k`.
#[inline(always)]
fn van_herk<T: FastNum, const MAX: bool, const NAN: bool>(x: &[T], out: &mut [T], start: usize, end: usize, window: usize, id: T) {
    prefix_into::<T, MAX, NAN>(&x[start..end], out, id);
    if start == 0 {
        return;
    }
    // Row i = j + window - 1 takes the suffix from j to the end of the
    // previous block; rows past `end` (a short last block) only accumulate.
    let lo = start + 1 - window;
    let mid = (end + 1 - window).min(start);
    let mut s = id;
    for &v in x[mid..start].iter().rev() {
        s = pick::<T, MAX, NAN>(v, s);
    }
    suffix_into::<T, MAX, NAN>(&x[lo..mid], &mut out[..mid - lo], s, id);
}

/// Sub-block of the two-level kernel: 16k rows (128 KB of f64), so the
/// rows being combined stay in L2.
const SUB: usize = 1 << 14;
/// Windows from here on take the two-level kernel: a van Herk block of
/// the window itself no longer fits in L2, and its suffix pass would
/// re-read the block and its output from memory.
const TWO_LEVEL_FROM: usize = 1 << 17;

/// Rolling max / min for windows of at least `4 * sub` rows, on raw values
/// (false, with `out` partly written, at the first sub-block holding a NaN
/// : the caller then takes the per-chunk path).
///
/// The rows are cut into sub-blocks of `sub` rows. The window `[j, i]` is a
/// suffix of sub-block `a` (of `j`), the whole sub-blocks between (their
/// maxima `m`, a few dozen), and a prefix of sub-block `b` (of `i`). The
/// prefixes are written a sub-block at a time; then, for each sub-block
/// `a`, one backward scan over it combines its suffixes into the outputs
/// `window - 1` rows on, which were written moments earlier and are still
/// in L2. Each input row is read twice and each output row written once
/// from memory (the one-level kernel also re-reads and re-writes the
/// output).
#[inline(always)]
fn extreme_two_level<T: FastNum, const MAX: bool>(x: &[T], window: usize, sub: usize, out: &mut [T]) -> bool {
    debug_assert!(sub >= 1 && window >= 4 * sub);
    let n = x.len();
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    let mut m: Vec<T> = Vec::with_capacity(n.div_ceil(sub));
    if n < window {
        return prefixes::<T, MAX>(x, window, sub, &mut m, out, n);
    }
    // j: the first row of a full window; its output row is j + window - 1.
    let last_j = n - window;
    for a in 0..=last_j / sub {
        let (jlo, jend) = (a * sub, (a + 1) * sub);
        let jhi = jend.min(last_j + 1);
        // Output rows jlo+window-1 .. jhi+window-1 lie in sub-blocks b1
        // and (from row i_split) b1 + 1.
        let b1 = (jlo + window - 1) / sub;
        let j_split = ((b1 + 1) * sub + 1 - window).min(jhi);
        if !prefixes::<T, MAX>(x, window, sub, &mut m, out, jhi + window - 1) {
            return false;
        }
        let mid1 = fold::<T, MAX>(&m[a + 1..b1], id);
        let mid2 = if j_split < jhi { pick::<T, MAX, false>(mid1, m[b1]) } else { mid1 };
        // Sub-block a is whole (j <= n - window < n - sub); rows past last_j
        // only accumulate.
        let s = fold::<T, MAX>(&x[jhi..jend], id);
        let w1 = window - 1;
        let s = suffix_into::<T, MAX, false>(&x[j_split..jhi], &mut out[j_split + w1..jhi + w1], s, mid2);
        suffix_into::<T, MAX, false>(&x[jlo..j_split], &mut out[jlo + w1..j_split + w1], s, mid1);
    }
    true
}

/// Prefixes of every sub-block up to row `upto` (their maxima pushed to
/// `m`); rows before `window - 1` (partial windows) also take the
/// sub-blocks before. False at a sub-block holding a NaN. A function, not a
/// closure, so it inlines into each level's wrapper with its features.
#[inline(always)]
fn prefixes<T: FastNum, const MAX: bool>(x: &[T], window: usize, sub: usize, m: &mut Vec<T>, out: &mut [T], upto: usize) -> bool {
    let n = x.len();
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    while m.len() * sub < upto.min(n) {
        let (r0, r1) = (m.len() * sub, ((m.len() + 1) * sub).min(n));
        if T::has_nan(&x[r0..r1]) {
            return false;
        }
        m.push(prefix_into::<T, MAX, false>(&x[r0..r1], &mut out[r0..r1], id));
        if r0 + 1 < window {
            let before = fold::<T, MAX>(&m[..m.len() - 1], id);
            for o in &mut out[r0..r1.min(window - 1)] {
                *o = pick::<T, MAX, false>(before, *o);
            }
        }
    }
    true
}

#[inline(always)]
fn fold<T: FastNum, const MAX: bool>(xs: &[T], id: T) -> T {
    xs.iter().fold(id, |a, &v| pick::<T, MAX, false>(a, v))
}

/// Rolling max (`MAX`) or min of a plain slice, no nulls.
pub(super) fn extreme_values<T: FastNum, const MAX: bool>(x: &[T], window: usize) -> Vec<T> {
    extreme_values_at::<T, MAX>(detected(), x, window)
}

/// [`extreme_values`] compiled for `level` (capped to what the CPU has):
/// tests run every level, benchmarks compare them.
pub fn extreme_values_at<T: FastNum, const MAX: bool>(level: Level, x: &[T], window: usize) -> Vec<T> {
    let mut out = buffer::<T>(x.len());
    match level {
        // SAFETY: a level runs only when `detected()` found the CPU
        // feature.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 if detected() == Level::Avx512 => unsafe { kernel_avx512::<T, MAX>(x, window, &mut out) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 | Level::Avx512 if detected() != Level::Portable => unsafe { kernel_avx2::<T, MAX>(x, window, &mut out) },
        _ => kernel::<T, MAX>(x, window, &mut out),
    }
    out
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2<T: FastNum, const MAX: bool>(x: &[T], window: usize, out: &mut [T]) {
    kernel::<T, MAX>(x, window, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn kernel_avx512<T: FastNum, const MAX: bool>(x: &[T], window: usize, out: &mut [T]) {
    kernel::<T, MAX>(x, window, out)
}

/// The single source of every level (inlined into each wrapper).
#[inline(always)]
fn kernel<T: FastNum, const MAX: bool>(x: &[T], window: usize, out: &mut [T]) {
    let n = x.len();
    if window >= TWO_LEVEL_FROM && extreme_two_level::<T, MAX>(x, window, SUB, out) {
        return;
    }
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    // Chunks for the NaN check: whole blocks, about 4096 rows.
    let chunk = window * (4096 / window).max(1);
    let mut prev_nan = false;
    let mut c0 = 0;
    while c0 < n {
        let c1 = (c0 + chunk).min(n);
        let nan = T::has_nan(&x[c0..c1]);
        let mut start = c0;
        while start < c1 {
            let end = (start + window).min(n);
            // A block reads itself and the block before it, which lies in
            // the previous chunk only for the first block of this one.
            if nan || (start == c0 && prev_nan) {
                // The identity must not beat a NaN: min starts from the top.
                let id_nan = if MAX { T::LOWEST } else { T::TOP };
                van_herk::<T, MAX, true>(x, &mut out[start..end], start, end, window, id_nan);
            } else {
                van_herk::<T, MAX, false>(x, &mut out[start..end], start, end, window, id);
            }
            start = end;
        }
        prev_nan = nan;
        c0 = c1;
    }
}

fn extreme_of<T: FastNum, const MAX: bool>(col: &Column<T>, window: usize) -> Vec<T> {
    match col.nulls {
        None => extreme_values::<T, MAX>(col.values, window),
        Some(_) => extreme_values::<T, MAX>(&filled(col, if MAX { T::LOWEST } else { T::TOP }), window),
    }
}

pub(super) fn rolling_extreme<T: FastNum, const MAX: bool>(col: &Column<T>, window: usize, min_periods: usize) -> ArrayRef {
    let counts = col.nulls.map(|nb| window_counts(nb, window));
    let out = extreme_of::<T, MAX>(col, window);
    let nulls = validity(col.len(), window, min_periods.max(1), counts.as_deref());
    T::to_arrow(out, nulls)
}

/// range = max - min, from the two kernels above.
pub(super) fn rolling_range<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize) -> ArrayRef {
    let counts = col.nulls.map(|nb| window_counts(nb, window));
    let hi = extreme_of::<T, true>(col, window);
    let lo = extreme_of::<T, false>(col, window);
    let out: Vec<T::Wide> = hi.iter().zip(&lo).map(|(&a, &b)| T::range(a, b)).collect();
    let nulls = validity(col.len(), window, min_periods.max(1), counts.as_deref());
    <T::Wide as ToArrow>::to_arrow(out, nulls)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rolling max / min by a monotonic deque: O(n), independent of blocks.
    fn deque<const MAX: bool>(x: &[f64], w: usize) -> Vec<f64> {
        let mut q = std::collections::VecDeque::new();
        let mut out = Vec::with_capacity(x.len());
        for (i, &v) in x.iter().enumerate() {
            while q.back().is_some_and(|&j: &usize| if MAX { x[j] <= v } else { x[j] >= v }) {
                q.pop_back();
            }
            q.push_back(i);
            if q[0] + w <= i {
                q.pop_front();
            }
            out.push(x[q[0]]);
        }
        out
    }

    fn data(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 40) % 1000) as f64 - 500.0 // ties on purpose
            })
            .collect()
    }

    #[test]
    fn two_level_equals_deque_on_small_sub_blocks() {
        for (seed, n) in [(1, 0), (2, 1), (3, 37), (4, 200), (5, 203)] {
            let x = data(n, seed);
            for sub in [1, 2, 3, 4, 7] {
                for w in 4 * sub..n + 6 {
                    let mut out = vec![0.0; n];
                    assert!(extreme_two_level::<f64, true>(&x, w, sub, &mut out));
                    assert_eq!(out, deque::<true>(&x, w), "max n={n} sub={sub} w={w}");
                    assert!(extreme_two_level::<f64, false>(&x, w, sub, &mut out));
                    assert_eq!(out, deque::<false>(&x, w), "min n={n} sub={sub} w={w}");
                }
            }
        }
    }

    #[test]
    fn large_windows_take_two_levels_and_fall_back_on_nan() {
        let n = TWO_LEVEL_FROM + 5 * SUB + 123;
        let mut x = data(n, 9);
        for w in [TWO_LEVEL_FROM, TWO_LEVEL_FROM + SUB / 3, n - 1, n + 10] {
            assert_eq!(extreme_values::<f64, true>(&x, w), deque::<true>(&x, w), "w={w}");
        }
        // A NaN (the largest in the key order) two sub-blocks in: the
        // two-level pass gives up and the per-chunk path handles it.
        let w = TWO_LEVEL_FROM;
        x[2 * SUB + 5] = f64::NAN;
        let out = extreme_values::<f64, true>(&x, w);
        for (i, o) in out.iter().enumerate() {
            let has_nan = i >= 2 * SUB + 5 && i < 2 * SUB + 5 + w;
            assert_eq!(o.is_nan(), has_nan, "row {i}");
        }
    }
}
