//! Rolling var / std (sample, ddof = 1, Spark's `variance` / `stddev`; and
//! population), exact to a few ulps (docs/DESIGN.md "Rolling var / std").
//!
//! Blocks of `window` rows, as in [`super::block`] (van Herk / Gil-Werman):
//! the window ending at row `i` of block `b` is a suffix of block `b - 1`
//! followed by a prefix of block `b`, so each of its two partials sums rows
//! of that window only. Subtract-on-Evict cannot be made exact here: a
//! squared 1e8 that leaves the window leaves `eps^2 * 1e16` of rounding
//! behind even in double-double, about 1e-9 of the variance of a window of
//! values near 1e-3.
//!
//! A partial holds, in double-double (a sum and its TwoSum compensation),
//! `S1 = sum y` and `S2 = sum y^2` of `y = x - shift`, where `y^2 = p + e`
//! exactly (FMA, or Dekker's product without it), and the count. The shift
//! is `x` at block `b`'s first row, which every window of block `b` holds,
//! so `|y|` is at most the window's range. The result is
//! `M2 = S2 - 2 m S1 + n m^2` with `m = S1 / n` rounded: this equals
//! `sum (y - mean)^2 + n (m - mean)^2`, and the second term is
//! `O(eps^2 n mean^2)`, so `m` needs no more precision; the cancelling
//! `S2 - m S1` is one exact subtraction (Sterbenz) plus terms of size
//! `eps S2` each computed to their own relative `eps`. Result: `M2` within
//! a few ulps plus `O(eps^2 n (R^2 + range^2))`. The argument, step by step:
//!
//! 1. `y` is `x - shift` rounded once: a relative perturbation `<= eps` of
//!    each deviation from the shift changes `M2` by at most
//!    `2 eps sum |y_i - mean| |y_i| <= 4 sqrt(n) eps M2` (Cauchy-Schwarz and
//!    `|y_i| <= R <= 2 sqrt(M2)`); typically a few eps; the only
//!    first-order term.
//! 2. Each double-double partial (and the sum of the two, again by TwoSum)
//!    is within `O(n eps^2) sum y^2` of the exact sum, and
//!    `sum y^2 <= n R^2 <= 4n M2`: `O(n^2 eps^2) M2`, below 1e-19 relative
//!    for `n = 2^20`.
//! 3. `M2 = S2 - 2 m S1 + n m^2` holds for any `m`; with `m = S1 / n`
//!    rounded it equals `sum (y - mean)^2 + n (m - mean)^2`, the second term
//!    `<= n eps^2 R^2`. It is evaluated as
//!    `(s2 - ph) + ((c2 - pl) - m c1 - m r)` where `m s1 = ph + pl` and
//!    `r = S1 - n m` (its leading part exactly, both by FMA): `s2 - ph` is
//!    exact when the two are within a factor 2 (Sterbenz), else rounded
//!    relative to the result; the other terms are `O(eps S2)` each.
//! 4. The division by `n - ddof` and the square root add one rounding each.
//!
//! Speed: contiguous segments of the column run in lock step, one per
//! vector lane (the loop-carried adds of one segment would otherwise bound
//! it at one add latency per row): eight with AVX-512, four with AVX2 + FMA
//! (detected at run time), one portable, all from the same source through
//! the [`Lane`] trait.
//!
//! Non-finite values propagate through the sums: a window holding inf or
//! NaN gives NaN, as Spark and the generic `Moments` do. Null rows have
//! weight 0 (filled with the last finite value, so `y` stays finite); with
//! nulls a block's shift is its first valid row, and the rows before it are
//! redone from the previous block's last valid row ([`suffix_only_rows`]).
//!
//! Null-free columns first take a cheaper checked path ([`fast_run`], at
//! the end): sliding compensated sums with a per-row error bound, and this
//! exact kernel only for the blocks the bound cannot vouch for.

use arrow_array::ArrayRef;

use super::valid::{skip_mask, All, Bitmap, NoSink, NonFinite, Sink, Valid, Words};
use super::FastNum;
use crate::engine::{Column, ToArrow};
use crate::ops::Num;

/// Rolling variance (`ddof` 1 or 0), or its square root; `None` where a
/// square could overflow (a finite |x| >= 2^500, say: the caller takes
/// Chan's merge).
pub(super) fn rolling_var<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize, ddof: usize, sqrt: bool, threads: usize) -> Option<ArrayRef> {
    let n = col.len();
    // Both written in full (`filled` by `finite_filled_into`, `out` by the
    // kernel, the rows below `ddof + 1` values with garbage the validity
    // masks): neither is zeroed first (`buffer_to_fill`).
    let mut out = super::buffer_to_fill(n);
    let mut filled = if as_f64(col.values).is_some() { Vec::new() } else { super::buffer_to_fill(n) };
    if !var_column_into(col, window, ddof, sqrt, threads, &mut out, &mut filled, &mut Vec::new()) {
        return None;
    }
    super::assert_filled(&out);
    let nulls = super::out_nulls(col.nulls, n, window, min_periods.max(ddof + 1));
    Some(f64::to_arrow(out, nulls))
}

/// `nan="skip"` variance or std of a float64 column: its NaN rows
/// missing, as its null rows are, each job masking them as its rows come
/// into cache ([`fast_rows`]) instead of a NaN-to-null pass over the
/// column first; the jobs and masks of the nulls path, so the same bits.
/// A job without NaN runs as `nan="propagate"` runs it, unmasked (within
/// a few ulps of the masked kernel): a column without NaN gets its bits
/// at its speed. `None` (the caller takes the pass) for other types,
/// windows of one, or where a square could overflow.
pub(super) fn rolling_var_skip<T: Num>(col: &Column<T>, window: usize, min_periods: usize, ddof: usize, sqrt: bool, threads: usize) -> Option<ArrayRef> {
    let (x, n) = (as_f64(col.values)?, col.len());
    if window <= 1 {
        return None;
    }
    let first = !super::nan_seen(x);
    let mut out = super::buffer_to_fill(n);
    let words = Words::zeroed(n);
    let ok = match col.nulls {
        None => var_into_split(x, All, Words(&words, first), window, ddof as f64, sqrt, &mut out, threads),
        Some(nb) => var_into_split(x, Bitmap::new(nb), Words(&words, first), window, ddof as f64, sqrt, &mut out, threads),
    };
    if !ok {
        return None;
    }
    super::assert_filled(&out);
    let nulls = super::out_nulls(Words::validity(words, n, col.nulls).as_ref(), n, window, min_periods.max(ddof + 1));
    Some(f64::to_arrow(out, nulls))
}

/// The variance kernel over a column into `out`: f64 values as they are,
/// others (and columns with nulls) through `filled` ([`finite_filled`]),
/// null rows weighed 0 through `weights`; both are scratch, kept across
/// calls (keyed rolling's short keys, segments.rs). False where a square
/// could overflow ([`var_into`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn var_column_into<T: Num>(
    col: &Column<T>,
    window: usize,
    ddof: usize,
    sqrt: bool,
    threads: usize,
    out: &mut [f64],
    filled: &mut Vec<f64>,
    weights: &mut Vec<f64>,
) -> bool {
    // Every window one value: the exact kernel, on weights (the fast
    // path's check cannot pass a slid state there, see `fast_run`).
    let exact = window <= 1 && col.nulls.is_some();
    let x = match as_f64(col.values) {
        // f64 values read in place, with nulls too (the fast path masks
        // them with the bitmap).
        Some(x) if !exact => x,
        _ => {
            if filled.len() != col.len() {
                filled.clear();
                filled.resize(col.len(), 0.0);
            }
            finite_filled_into(col, filled);
            &filled[..]
        }
    };
    match col.nulls {
        None => var_into_split(x, All, NoSink, window, ddof as f64, sqrt, out, threads),
        Some(nb) if !exact => var_into_split(x, Bitmap::new(nb), NoSink, window, ddof as f64, sqrt, out, threads),
        Some(nb) => {
            weights.clear();
            weights.extend(nb.iter().map(|ok| ok as u8 as f64));
            var_into(x, Some(weights), window, ddof as f64, sqrt, out)
        }
    }
}

/// Whether every finite value's square (and a difference's) stays finite:
/// |x| below 2^500 (~3e150). Non-finite values propagate either way. Not a
/// pass of its own over null-free columns: the fast path bounds each
/// block's values by its shift and largest deviation, and only the blocks
/// that go to the exact kernel are scanned (inlined into the kernels, so
/// at their vector width).
#[inline(always)]
fn fits<T: Num>(xs: &[T]) -> bool {
    const LIMIT: u64 = 0x5F30_0000_0000_0000; // 2^500
    const INF: u64 = 0x7FF0_0000_0000_0000;
    // On the bits of |x|: finite and >= 2^500 is `LIMIT <= b < INF`, one
    // unsigned compare after a wrapping subtraction. Branch-free per
    // chunk, so it vectorises (an early exit per value cost as much as a
    // tenth of the variance kernel).
    xs.chunks(512).all(|c| {
        c.iter().fold(0u64, |a, v| {
            let b = v.to_f64().to_bits() & !(1u64 << 63);
            a | (b.wrapping_sub(LIMIT) < INF - LIMIT) as u64
        }) == 0
    })
}

/// The values as f64 without a copy when they are f64.
pub(super) fn as_f64<T: Num>(xs: &[T]) -> Option<&[f64]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>())
        // SAFETY: T is f64 (checked just above).
        .then(|| unsafe { std::slice::from_raw_parts(xs.as_ptr() as *const f64, xs.len()) })
}

/// The values as f64, null slots holding the last finite value before them
/// (the first finite value before any): a null has weight 0, a finite filler
/// keeps `0 * y` 0, and a filler near the data keeps the shift near it
/// (also the shared pass of `rolling_many`, prefix_moments.rs).
pub(super) fn finite_filled<T: Num>(col: &Column<T>) -> Vec<f64> {
    let mut out = super::buffer_to_fill(col.len());
    finite_filled_into(col, &mut out);
    super::assert_filled(&out);
    out
}

/// [`finite_filled`] into `out` (`col.len()` rows).
pub(super) fn finite_filled_into<T: Num>(col: &Column<T>, out: &mut [f64]) {
    match col.nulls {
        None => out.iter_mut().zip(col.values).for_each(|(o, v)| *o = v.to_f64()),
        Some(nb) => {
            // Leading nulls take the first finite value: a null row can be a
            // block's first row, whose value is the shift (0 there would
            // square values of 1e9 into the sums).
            let first = col.values.iter().zip(nb.iter()).map(|(v, ok)| (v.to_f64(), ok)).find(|&(f, ok)| ok && f.is_finite());
            let mut last = first.map_or(0.0, |(f, _)| f);
            for ((o, v), ok) in out.iter_mut().zip(col.values).zip(nb.iter()) {
                let f = v.to_f64();
                if ok {
                    *o = f;
                    if f.is_finite() {
                        last = f;
                    }
                } else {
                    *o = last;
                }
            }
        }
    }
}

/// [`var_into`] with the null-free fast path's rows split over up to
/// `threads` threads. Its blocks start from the sums of the window before
/// them (no state crosses a block), and the blocks, their lane groups and
/// which go exact depend on `n`, `window` and the lane width only, so the
/// rows are cut between groups and every thread count gives the bits of
/// one thread. Missing rows (`va`) are masked as the fast path loads
/// them: the same blocks, so the same split.
#[allow(clippy::too_many_arguments)]
pub(super) fn var_into_split<Va: Valid, K: Sink>(x: &[f64], va: Va, sink: K, window: usize, ddof: f64, sqrt: bool, out: &mut [f64], threads: usize) -> bool {
    let n = x.len();
    if Va::ALL && !K::SKIP && (threads <= 1 || window <= 1 || window > n) {
        return var_into(x, None, window, ddof, sqrt, out);
    }
    if n == 0 {
        return true;
    }
    let starts: Vec<usize> = fast_plan(n, window, lane_width()).iter().map(|j| j.0).collect();
    let cs = super::cuts(n, threads, |r| super::nearest(&starts, r));
    let big = std::sync::atomic::AtomicBool::new(false);
    // The threads call the level's wrapper (a closure would be compiled
    // without its features).
    super::par_ranges(out, &cs, |r0, r1, o| {
        if fast_rows_dispatch(x, va, sink, window, ddof, sqrt, r0, r1, o).is_none() {
            big.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
    !big.into_inner()
}

/// Lanes of the level [`var_into`] picks.
fn lane_width() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            return 8;
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return 4;
        }
    }
    1
}

/// [`fast_rows`] at the level [`var_into`] picks.
#[allow(clippy::too_many_arguments)]
fn fast_rows_dispatch<Va: Valid, K: Sink>(x: &[f64], va: Va, sink: K, window: usize, ddof: f64, sqrt: bool, r0: usize, r1: usize, out: &mut [f64]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the feature is present (it implies FMA).
            return unsafe { avx512::fast_rows(x, va, sink, window, ddof, sqrt, r0, r1, out) };
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the features are present.
            return unsafe { avx2::fast_rows(x, va, sink, window, ddof, sqrt, r0, r1, out) };
        }
    }
    fast_rows::<S<false>, S<false>, Va, K>(x, va, sink, window, ddof, sqrt, r0, r1, out)
}

/// `out[i]` = the variance (or std) of rows `(i - window, i]` of `x`
/// weighted by `wt` (1 / 0: valid / null; `None`: all valid). Rows whose
/// window holds `ddof` values or fewer get garbage, masked by the caller.
/// False (and `out` garbage) where a square could overflow ([`fits`]).
pub(super) fn var_into(x: &[f64], wt: Option<&[f64]>, window: usize, ddof: f64, sqrt: bool, out: &mut [f64]) -> bool {
    let n = x.len();
    assert!(out.len() == n && wt.is_none_or(|w| w.len() == n) && window >= 1 && window <= n.max(1));
    if n == 0 {
        return true;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the feature is present (it implies FMA).
            return unsafe { avx512::run(x, wt, window, ddof, sqrt, out) };
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the features are present.
            return unsafe { avx2::run(x, wt, window, ddof, sqrt, out) };
        }
    }
    run::<S<false>, S<false>>(x, wt, window, ddof, sqrt, out)
}

/// `V` for the lanes, `V1` for the rest (one segment).
#[inline(always)]
fn run<V: Lane, V1: Lane>(x: &[f64], wt: Option<&[f64]>, window: usize, ddof: f64, sqrt: bool, out: &mut [f64]) -> bool {
    let n = x.len();
    if wt.is_none() {
        return fast_run::<V, V1>(x, window, ddof, sqrt, out).is_some();
    }
    if !fits(x) {
        return false;
    }
    // Lanes only when every lane but the first starts a full window in
    // (then only lane 0's first block has partial windows).
    let len = n / V::K;
    let done = if V::K > 1 && len >= window.max(64) {
        let starts: Vec<usize> = (0..V::K).map(|k| k * len).collect();
        match wt {
            None => lanes::<V, false>(x, &[], window, &starts, len, ddof, sqrt, out),
            Some(w) => lanes::<V, true>(x, w, window, &starts, len, ddof, sqrt, out),
        }
        V::K * len
    } else {
        0
    };
    if done < n {
        match wt {
            None => lanes::<V1, false>(x, &[], window, &[done], n - done, ddof, sqrt, out),
            Some(w) => lanes::<V1, true>(x, w, window, &[done], n - done, ddof, sqrt, out),
        }
    }
    true
}

/// `K` f64 lanes: scalar (`K = 1`, FMA or Dekker's product) or one AVX2
/// vector. Only ever called inside [`run`]'s instantiation for its CPU.
pub(super) trait Lane: Copy {
    const K: usize;
    fn splat(v: f64) -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn sqrt(self) -> Self;
    /// `self * o = p + e` exactly.
    fn two_prod(self, o: Self) -> (Self, Self);
    /// Negative to 0, NaN kept.
    fn clamp0(self) -> Self;
    /// Bitwise and with an all-ones / all-zeros mask.
    fn and(self, m: Self) -> Self;
    fn or(self, m: Self) -> Self;
    /// `self` and not `m`, bitwise.
    fn andnot(self, m: Self) -> Self;
    fn abs(self) -> Self;
    /// The larger (either one where one is NaN: callers do not rely on it).
    fn max(self, o: Self) -> Self;
    /// The smaller (either one where one is NaN: callers do not rely on it).
    fn min(self, o: Self) -> Self;
    /// All-ones where `self <= o` (false for NaN), else zeros.
    fn le(self, o: Self) -> Self;
    /// `x[idx[k] + j]` in lane `k`.
    fn gather(x: &[f64], idx: &[usize], j: usize) -> Self;
    fn scatter(self, out: &mut [f64], idx: &[usize], j: usize);
    /// `*p.add(idx[k])` in lane `k`, unchecked (a hardware gather where
    /// there is one). Safety: every address in bounds.
    unsafe fn gather_raw(p: *const f64, idx: &[i64; 8]) -> Self;
    /// The reverse. Safety: every address in bounds, distinct.
    unsafe fn scatter_raw(self, p: *mut f64, idx: &[i64; 8]);
    fn load(p: &[f64]) -> Self;
    fn store(self, p: &mut [f64]);
    /// A `K x K` tile: `t[r]` holds `*p.add(idx[k] + r)` in lane `k`, for
    /// `r < K` (`K` contiguous rows of each lane's segment, transposed in
    /// registers: cheaper than `K` gathers). Safety: every address in bounds.
    unsafe fn load_tile(p: *const f64, idx: &[i64; 8]) -> [Self; 8];
    /// The reverse of [`Lane::load_tile`]. Safety: every address in bounds,
    /// distinct.
    unsafe fn store_tile(t: &[Self; 8], p: *mut f64, idx: &[i64; 8]);
    /// A `K x K` tile of weights: `t[r]` holds bit `r` of `w[k]` in lane
    /// `k` as 1.0 / 0.0 (a validity word per lane, [`weight_tile`]), by
    /// integer compares on the words loaded once (64 scalar bit tests a
    /// tile with eight lanes cost a third of the masked kernel).
    fn bits_tile(w: &[u64; 8]) -> [Self; 8];
}

/// One scalar lane (also the scalar loops of prefix_moments.rs).
#[derive(Clone, Copy)]
pub(super) struct S<const FMA: bool>(pub(super) f64);

impl<const FMA: bool> Lane for S<FMA> {
    const K: usize = 1;
    #[inline(always)]
    fn splat(v: f64) -> Self {
        S(v)
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        S(self.0 + o.0)
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        S(self.0 - o.0)
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        S(self.0 * o.0)
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        S(self.0 / o.0)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        S(self.0.sqrt())
    }
    #[inline(always)]
    fn two_prod(self, o: Self) -> (Self, Self) {
        let (a, b) = (self.0, o.0);
        let p = a * b;
        if FMA {
            (S(p), S(a.mul_add(b, -p)))
        } else {
            // Dekker / Veltkamp splitting.
            let split = |v: f64| {
                let c = 134_217_729.0 * v;
                let h = c - (c - v);
                (h, v - h)
            };
            let (ah, al) = split(a);
            let (bh, bl) = split(b);
            (S(p), S(((ah * bh - p) + ah * bl + al * bh) + al * bl))
        }
    }
    #[inline(always)]
    fn clamp0(self) -> Self {
        S(if self.0 < 0.0 { 0.0 } else { self.0 })
    }
    #[inline(always)]
    fn and(self, m: Self) -> Self {
        S(f64::from_bits(self.0.to_bits() & m.0.to_bits()))
    }
    #[inline(always)]
    fn or(self, m: Self) -> Self {
        S(f64::from_bits(self.0.to_bits() | m.0.to_bits()))
    }
    #[inline(always)]
    fn andnot(self, m: Self) -> Self {
        S(f64::from_bits(self.0.to_bits() & !m.0.to_bits()))
    }
    #[inline(always)]
    fn abs(self) -> Self {
        S(self.0.abs())
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        S(if o.0 > self.0 { o.0 } else { self.0 })
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        S(if o.0 < self.0 { o.0 } else { self.0 })
    }
    #[inline(always)]
    fn le(self, o: Self) -> Self {
        S(f64::from_bits(if self.0 <= o.0 { u64::MAX } else { 0 }))
    }
    #[inline(always)]
    fn gather(x: &[f64], idx: &[usize], j: usize) -> Self {
        S(x[idx[0] + j])
    }
    #[inline(always)]
    fn scatter(self, out: &mut [f64], idx: &[usize], j: usize) {
        out[idx[0] + j] = self.0;
    }
    #[inline(always)]
    unsafe fn gather_raw(p: *const f64, idx: &[i64; 8]) -> Self {
        S(*p.offset(idx[0] as isize))
    }
    #[inline(always)]
    unsafe fn scatter_raw(self, p: *mut f64, idx: &[i64; 8]) {
        *p.offset(idx[0] as isize) = self.0;
    }
    #[inline(always)]
    fn load(p: &[f64]) -> Self {
        S(p[0])
    }
    #[inline(always)]
    fn store(self, p: &mut [f64]) {
        p[0] = self.0;
    }
    #[inline(always)]
    unsafe fn load_tile(p: *const f64, idx: &[i64; 8]) -> [Self; 8] {
        let mut t = [S(0.0); 8];
        t[0] = S(*p.offset(idx[0] as isize));
        t
    }
    #[inline(always)]
    unsafe fn store_tile(t: &[Self; 8], p: *mut f64, idx: &[i64; 8]) {
        *p.offset(idx[0] as isize) = t[0].0;
    }
    #[inline(always)]
    fn bits_tile(w: &[u64; 8]) -> [Self; 8] {
        let mut t = [S(0.0); 8];
        t[0] = S((w[0] & 1) as f64);
        t
    }
}

/// The [`Lane`] methods that are one intrinsic each at both vector widths
/// (AVX2's `V4`, AVX-512's `V8`): the width's intrinsics in, the methods
/// out. Safety (every method): only called from code compiled with the
/// width's features, which its caller checked; slices are indexed checked.
#[cfg(target_arch = "x86_64")]
macro_rules! lane_common {
    ($V:ident, $k:expr, $set1:ident, $add:ident, $sub:ident, $mul:ident, $div:ident, $sqrt:ident, $fmsub:ident, $max:ident, $min:ident, $load:ident, $store:ident) => {
        #[inline(always)]
        fn splat(v: f64) -> Self {
            unsafe { $V($set1(v)) }
        }
        #[inline(always)]
        fn add(self, o: Self) -> Self {
            unsafe { $V($add(self.0, o.0)) }
        }
        #[inline(always)]
        fn sub(self, o: Self) -> Self {
            unsafe { $V($sub(self.0, o.0)) }
        }
        #[inline(always)]
        fn mul(self, o: Self) -> Self {
            unsafe { $V($mul(self.0, o.0)) }
        }
        #[inline(always)]
        fn div(self, o: Self) -> Self {
            unsafe { $V($div(self.0, o.0)) }
        }
        #[inline(always)]
        fn sqrt(self) -> Self {
            unsafe { $V($sqrt(self.0)) }
        }
        #[inline(always)]
        fn two_prod(self, o: Self) -> (Self, Self) {
            unsafe {
                let p = $mul(self.0, o.0);
                ($V(p), $V($fmsub(self.0, o.0, p)))
            }
        }
        #[inline(always)]
        fn max(self, o: Self) -> Self {
            unsafe { $V($max(self.0, o.0)) }
        }
        #[inline(always)]
        fn min(self, o: Self) -> Self {
            unsafe { $V($min(self.0, o.0)) }
        }
        #[inline(always)]
        fn load(p: &[f64]) -> Self {
            let p = &p[..$k];
            unsafe { $V($load(p.as_ptr())) }
        }
        #[inline(always)]
        fn store(self, p: &mut [f64]) {
            let p = &mut p[..$k];
            unsafe { $store(p.as_mut_ptr(), self.0) }
        }
    };
}

/// The entry points of one vector width, compiled with its features:
/// [`run`], [`fast_rows`] and (tests: how many blocks went exact)
/// [`fast_run`] on `$V` lanes, one scalar FMA lane for the rest.
#[cfg(target_arch = "x86_64")]
macro_rules! lane_entries {
    ($V:ident, $feat:literal) => {
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn run(x: &[f64], wt: Option<&[f64]>, window: usize, ddof: f64, sqrt: bool, out: &mut [f64]) -> bool {
            super::run::<$V, S<true>>(x, wt, window, ddof, sqrt, out)
        }

        #[allow(clippy::too_many_arguments)]
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn fast_rows<Va: super::Valid, K: super::Sink>(x: &[f64], va: Va, sink: K, window: usize, ddof: f64, sqrt: bool, r0: usize, r1: usize, out: &mut [f64]) -> Option<usize> {
            super::fast_rows::<$V, S<true>, Va, K>(x, va, sink, window, ddof, sqrt, r0, r1, out)
        }

        #[cfg(test)]
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn fast(x: &[f64], window: usize, ddof: f64, sqrt: bool, out: &mut [f64]) -> Option<usize> {
            super::fast_run::<$V, S<true>>(x, window, ddof, sqrt, out)
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{Lane, S};
    use crate::ops::reduce::transpose4 as transpose;

    // [`super::run`], [`super::fast_rows`] and (tests) [`super::fast_run`]
    // with V4 lanes.
    lane_entries!(V4, "avx2,fma");

    #[derive(Clone, Copy)]
    pub(super) struct V4(__m256d);

    // SAFETY (every method): only called from `run` above, compiled with
    // AVX2 and FMA, which the caller checked; slices are indexed checked.
    impl Lane for V4 {
        const K: usize = 4;
        lane_common!(V4, 4, _mm256_set1_pd, _mm256_add_pd, _mm256_sub_pd, _mm256_mul_pd, _mm256_div_pd, _mm256_sqrt_pd, _mm256_fmsub_pd, _mm256_max_pd, _mm256_min_pd, _mm256_loadu_pd, _mm256_storeu_pd);
        #[inline(always)]
        fn clamp0(self) -> Self {
            // maxpd returns its second operand when either is NaN.
            unsafe { V4(_mm256_max_pd(_mm256_setzero_pd(), self.0)) }
        }
        #[inline(always)]
        fn and(self, m: Self) -> Self {
            unsafe { V4(_mm256_and_pd(self.0, m.0)) }
        }
        #[inline(always)]
        fn or(self, m: Self) -> Self {
            unsafe { V4(_mm256_or_pd(self.0, m.0)) }
        }
        #[inline(always)]
        fn andnot(self, m: Self) -> Self {
            unsafe { V4(_mm256_andnot_pd(m.0, self.0)) }
        }
        #[inline(always)]
        fn abs(self) -> Self {
            unsafe { V4(_mm256_andnot_pd(_mm256_set1_pd(-0.0), self.0)) }
        }
        #[inline(always)]
        fn le(self, o: Self) -> Self {
            unsafe { V4(_mm256_cmp_pd::<_CMP_LE_OQ>(self.0, o.0)) }
        }
        #[inline(always)]
        fn gather(x: &[f64], idx: &[usize], j: usize) -> Self {
            unsafe { V4(_mm256_set_pd(x[idx[3] + j], x[idx[2] + j], x[idx[1] + j], x[idx[0] + j])) }
        }
        #[inline(always)]
        fn scatter(self, out: &mut [f64], idx: &[usize], j: usize) {
            let mut t = [0.0; 4];
            unsafe { _mm256_storeu_pd(t.as_mut_ptr(), self.0) };
            for k in 0..4 {
                out[idx[k] + j] = t[k];
            }
        }
        #[inline(always)]
        unsafe fn gather_raw(p: *const f64, idx: &[i64; 8]) -> Self {
            V4(_mm256_i64gather_pd::<8>(p, _mm256_loadu_si256(idx.as_ptr() as *const __m256i)))
        }
        #[inline(always)]
        unsafe fn scatter_raw(self, p: *mut f64, idx: &[i64; 8]) {
            let mut t = [0.0; 4];
            _mm256_storeu_pd(t.as_mut_ptr(), self.0);
            for k in 0..4 {
                *p.offset(idx[k] as isize) = t[k];
            }
        }
        #[inline(always)]
        unsafe fn load_tile(p: *const f64, idx: &[i64; 8]) -> [Self; 8] {
            let r = [
                _mm256_loadu_pd(p.offset(idx[0] as isize)),
                _mm256_loadu_pd(p.offset(idx[1] as isize)),
                _mm256_loadu_pd(p.offset(idx[2] as isize)),
                _mm256_loadu_pd(p.offset(idx[3] as isize)),
            ];
            let t = transpose(r);
            let z = _mm256_setzero_pd();
            [V4(t[0]), V4(t[1]), V4(t[2]), V4(t[3]), V4(z), V4(z), V4(z), V4(z)]
        }
        #[inline(always)]
        unsafe fn store_tile(t: &[Self; 8], p: *mut f64, idx: &[i64; 8]) {
            let r = transpose([t[0].0, t[1].0, t[2].0, t[3].0]);
            for k in 0..4 {
                _mm256_storeu_pd(p.offset(idx[k] as isize), r[k]);
            }
        }
        #[inline(always)]
        fn bits_tile(w: &[u64; 8]) -> [Self; 8] {
            unsafe {
                let wv = _mm256_loadu_si256(w.as_ptr() as *const __m256i);
                let one = _mm256_set1_pd(1.0);
                let z = V4(_mm256_setzero_pd());
                let mut t = [z; 8];
                for (r, o) in t.iter_mut().take(4).enumerate() {
                    let b = _mm256_set1_epi64x(1 << r);
                    *o = V4(_mm256_and_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(wv, b), b)), one));
                }
                t
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{Lane, S};

    // [`super::run`], [`super::fast_rows`] and (tests) [`super::fast_run`]
    // with V8 lanes.
    lane_entries!(V8, "avx512f,avx2,fma");

    #[derive(Clone, Copy)]
    pub(super) struct V8(__m512d);

    // SAFETY (every method): only called from `run` above, compiled with
    // AVX-512F, which the caller checked; slices are indexed checked.
    impl Lane for V8 {
        const K: usize = 8;
        lane_common!(V8, 8, _mm512_set1_pd, _mm512_add_pd, _mm512_sub_pd, _mm512_mul_pd, _mm512_div_pd, _mm512_sqrt_pd, _mm512_fmsub_pd, _mm512_max_pd, _mm512_min_pd, _mm512_loadu_pd, _mm512_storeu_pd);
        #[inline(always)]
        fn clamp0(self) -> Self {
            // max(x, 0) keeping NaN: zero where x < 0 (false for NaN).
            unsafe {
                let neg = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(self.0, _mm512_setzero_pd());
                V8(_mm512_mask_mov_pd(self.0, neg, _mm512_setzero_pd()))
            }
        }
        #[inline(always)]
        fn and(self, m: Self) -> Self {
            unsafe { V8(_mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(self.0), _mm512_castpd_si512(m.0)))) }
        }
        #[inline(always)]
        fn or(self, m: Self) -> Self {
            unsafe { V8(_mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(self.0), _mm512_castpd_si512(m.0)))) }
        }
        #[inline(always)]
        fn andnot(self, m: Self) -> Self {
            unsafe { V8(_mm512_castsi512_pd(_mm512_andnot_si512(_mm512_castpd_si512(m.0), _mm512_castpd_si512(self.0)))) }
        }
        #[inline(always)]
        fn abs(self) -> Self {
            unsafe { V8(_mm512_abs_pd(self.0)) }
        }
        #[inline(always)]
        fn le(self, o: Self) -> Self {
            unsafe {
                let m = _mm512_cmp_pd_mask::<_CMP_LE_OQ>(self.0, o.0);
                V8(_mm512_maskz_mov_pd(m, _mm512_castsi512_pd(_mm512_set1_epi64(-1))))
            }
        }
        #[inline(always)]
        fn gather(x: &[f64], idx: &[usize], j: usize) -> Self {
            let v: [f64; 8] = std::array::from_fn(|k| x[idx[k] + j]);
            unsafe { V8(_mm512_loadu_pd(v.as_ptr())) }
        }
        #[inline(always)]
        fn scatter(self, out: &mut [f64], idx: &[usize], j: usize) {
            let mut t = [0.0; 8];
            unsafe { _mm512_storeu_pd(t.as_mut_ptr(), self.0) };
            for k in 0..8 {
                out[idx[k] + j] = t[k];
            }
        }
        #[inline(always)]
        unsafe fn gather_raw(p: *const f64, idx: &[i64; 8]) -> Self {
            V8(_mm512_i64gather_pd::<8>(_mm512_loadu_si512(idx.as_ptr() as *const _), p as *const _))
        }
        #[inline(always)]
        unsafe fn scatter_raw(self, p: *mut f64, idx: &[i64; 8]) {
            _mm512_i64scatter_pd::<8>(p as *mut _, _mm512_loadu_si512(idx.as_ptr() as *const _), self.0)
        }
        #[inline(always)]
        unsafe fn load_tile(p: *const f64, idx: &[i64; 8]) -> [Self; 8] {
            let mut r = [_mm512_setzero_pd(); 8];
            for k in 0..8 {
                r[k] = _mm512_loadu_pd(p.offset(idx[k] as isize));
            }
            let t = transpose(r);
            [V8(t[0]), V8(t[1]), V8(t[2]), V8(t[3]), V8(t[4]), V8(t[5]), V8(t[6]), V8(t[7])]
        }
        #[inline(always)]
        unsafe fn store_tile(t: &[Self; 8], p: *mut f64, idx: &[i64; 8]) {
            let r = transpose([t[0].0, t[1].0, t[2].0, t[3].0, t[4].0, t[5].0, t[6].0, t[7].0]);
            for k in 0..8 {
                _mm512_storeu_pd(p.offset(idx[k] as isize), r[k]);
            }
        }
        #[inline(always)]
        fn bits_tile(w: &[u64; 8]) -> [Self; 8] {
            unsafe {
                let wv = _mm512_loadu_si512(w.as_ptr() as *const _);
                let one = _mm512_set1_pd(1.0);
                let mut t = [V8(one); 8];
                for (r, o) in t.iter_mut().enumerate() {
                    *o = V8(_mm512_maskz_mov_pd(_mm512_test_epi64_mask(wv, _mm512_set1_epi64(1 << r)), one));
                }
                t
            }
        }
    }

    /// 8 x 8 transpose (its own inverse): pairs of rows interleaved, then
    /// pairs of pairs, then halves (24 shuffles for 64 values). No
    /// closures: they would be compiled without the caller's AVX-512.
    #[inline(always)]
    unsafe fn transpose(r: [__m512d; 8]) -> [__m512d; 8] {
        // t[2i] = r[2i][0] r[2i+1][0] r[2i][2] r[2i+1][2] ..., t[2i+1] the
        // odd columns.
        let mut t = [_mm512_setzero_pd(); 8];
        for i in 0..4 {
            t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
        }
        // u[4h + c] holds columns c and c + 4 of rows 4h..4h+4.
        let lo = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
        let hi = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
        let mut u = [_mm512_setzero_pd(); 8];
        for h in 0..2 {
            for c in 0..4 {
                let (a, b) = (t[4 * h + (c & 1)], t[4 * h + 2 + (c & 1)]);
                u[4 * h + c] = _mm512_permutex2var_pd(a, if c < 2 { lo } else { hi }, b);
            }
        }
        // Column c from u[c % 4] (rows 0..4) and u[4 + c % 4] (rows 4..8).
        let lo4 = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
        let hi4 = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
        let mut o = [_mm512_setzero_pd(); 8];
        for c in 0..8 {
            o[c] = _mm512_permutex2var_pd(u[c % 4], if c < 4 { lo4 } else { hi4 }, u[4 + c % 4]);
        }
        o
    }
}

/// TwoSum of `a` and `-b` without the negation: `a - b = s + e` exactly.
#[inline(always)]
fn two_diff_v<V: Lane>(a: V, b: V) -> (V, V) {
    let s = a.sub(b);
    let bb = s.sub(a);
    (s, a.sub(s.sub(bb)).sub(b.add(bb)))
}

/// TwoSum on lanes: `a + b = s + e` exactly.
#[inline(always)]
fn two_sum_v<V: Lane>(a: V, b: V) -> (V, V) {
    let s = a.add(b);
    let bb = s.sub(a);
    (s, a.sub(s.sub(bb)).add(b.sub(bb)))
}

/// Partial sums per lane: `S1 = s1 + c1`, `S2 = s2 + c2`, count `n`.
#[derive(Clone, Copy)]
struct Acc<V> {
    s1: V,
    c1: V,
    s2: V,
    c2: V,
    n: V,
}

impl<V: Lane> Acc<V> {
    #[inline(always)]
    fn zero() -> Self {
        let z = V::splat(0.0);
        Acc { s1: z, c1: z, s2: z, c2: z, n: z }
    }

    /// Fold in `y` with weight `v` (`y` is already 0 where `v` is 0). The
    /// loop-carried chains are one add each.
    #[inline(always)]
    fn add(&mut self, y: V, v: V) {
        let (t, e) = two_sum_v(self.s1, y);
        self.s1 = t;
        self.c1 = self.c1.add(e);
        let (p, pe) = y.two_prod(y);
        let (t, e) = two_sum_v(self.s2, p);
        self.s2 = t;
        self.c2 = self.c2.add(e.add(pe));
        self.n = self.n.add(v);
    }
}

/// Suffix partials of a chunk, lane-interleaved (`K` values per entry).
struct Buf {
    s1: Vec<f64>,
    c1: Vec<f64>,
    s2: Vec<f64>,
    c2: Vec<f64>,
    n: Vec<f64>,
}

impl Buf {
    fn new(len: usize) -> Buf {
        Buf { s1: vec![0.0; len], c1: vec![0.0; len], s2: vec![0.0; len], c2: vec![0.0; len], n: vec![0.0; len] }
    }
    #[inline(always)]
    fn set<V: Lane>(&mut self, at: usize, a: &Acc<V>) {
        let o = at * V::K;
        a.s1.store(&mut self.s1[o..]);
        a.c1.store(&mut self.c1[o..]);
        a.s2.store(&mut self.s2[o..]);
        a.c2.store(&mut self.c2[o..]);
        a.n.store(&mut self.n[o..]);
    }
    #[inline(always)]
    fn get<V: Lane>(&self, at: usize) -> Acc<V> {
        let o = at * V::K;
        Acc {
            s1: V::load(&self.s1[o..]),
            c1: V::load(&self.c1[o..]),
            s2: V::load(&self.s2[o..]),
            c2: V::load(&self.c2[o..]),
            n: V::load(&self.n[o..]),
        }
    }
}

/// Rows a block's forward pass takes at a time: the suffixes it reads are
/// rebuilt per chunk from states saved every `CHUNK` rows, so the scratch
/// stays in L1 / L2 whatever the window (a whole window of suffixes would
/// be 160 bytes a row for 1M-row windows, all of it from memory).
const CHUNK: usize = 2048;

/// Rows `[starts[k], starts[k] + len)` for each lane `k` (`starts.len()` is
/// `V::K`), in lock step. Needs `starts[k] >= window` for `k >= 1`: only
/// lane 0 may hold the partial windows at the start.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn lanes<V: Lane, const NULLS: bool>(
    x: &[f64],
    wt: &[f64],
    window: usize,
    starts: &[usize],
    len: usize,
    ddof: f64,
    sqrt: bool,
    out: &mut [f64],
) {
    assert!(out.len() == x.len());
    lanes_at::<V, NULLS>(x, wt, window, starts, len, ddof, sqrt, out, 0)
}

/// [`lanes`] into `out` holding rows `[o0, o0 + out.len())` only.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn lanes_at<V: Lane, const NULLS: bool>(
    x: &[f64],
    wt: &[f64],
    window: usize,
    starts: &[usize],
    len: usize,
    ddof: f64,
    sqrt: bool,
    out: &mut [f64],
    o0: usize,
) {
    assert!(starts.len() == V::K && (!NULLS || wt.len() == x.len()));
    assert!(starts.iter().all(|&a| a + len <= x.len() && a >= o0 && a + len <= o0 + out.len()) && starts.iter().skip(1).all(|&a| a >= window));
    let k = V::K;
    let ch = CHUNK.min(window);
    let nchunks = window.div_ceil(ch);
    let mut local = Buf::new((ch + 1) * k);
    let mut bnd: Vec<Acc<V>> = vec![Acc::zero(); nchunks];
    let one = V::splat(1.0);
    let full_n = window as f64;
    let (inv_n, inv_d) = (V::splat(1.0 / full_n), V::splat(1.0 / (full_n - ddof)));
    let fulln = V::splat(full_n);
    let vddof = V::splat(ddof);
    let all = V::splat(f64::from_bits(u64::MAX));
    let mut base = vec![0usize; k];
    let mut base_out = vec![0usize; k];
    let mut prev = vec![0usize; k];
    let mut alts: [Option<(usize, usize)>; 8] = [None; 8];
    let mut off = 0;
    while off < len {
        let blen = (len - off).min(window);
        for q in 0..k {
            base[q] = starts[q] + off;
            base_out[q] = base[q] - o0;
            // The block before (absent only before row 0: masked out).
            prev[q] = base[q].saturating_sub(window);
        }
        let mask: V = if base[0] >= window {
            all
        } else {
            let m: Vec<f64> = base.iter().map(|&b| if b >= window { f64::from_bits(u64::MAX) } else { 0.0 }).collect();
            V::load(&m)
        };
        // The shift: the block's first row, which every window of the block
        // holds. With nulls, its first valid row `r` (every window of a row
        // from `r` on holds it); rows before `r` see only the block before,
        // and are redone below from its last valid row.
        let shift = if NULLS {
            let mut cv = [0.0; 8];
            for q in 0..k {
                let (r, l) = valid_ends(wt, base[q], blen, window);
                let row = r.or(l).unwrap_or(base[q]);
                cv[q] = x[row];
                alts[q] = match (r, l) {
                    (Some(r), Some(l)) if r > base[q] => Some((r, l)),
                    _ => None,
                };
            }
            V::load(&cv)
        } else {
            V::gather(x, &base, 0)
        };
        // Partial windows (lane 0's first block) or nulls: the count varies.
        let varying = NULLS || base[0] < window;
        // States of the suffixes at the chunk ends: bnd[c] holds offsets
        // [min((c + 1) ch, window), window) of the block before.
        if nchunks > 1 {
            let mut acc = Acc::<V>::zero();
            bnd[nchunks - 1] = acc;
            for o in (ch..window).rev() {
                let (y, v) = prev_row::<V, NULLS>(x, wt, &prev, o, mask, shift);
                acc.add(y, v);
                if o % ch == 0 {
                    bnd[o / ch - 1] = acc;
                }
            }
        }
        let mut acc = Acc::<V>::zero();
        let mut c0 = 0;
        while c0 < blen {
            let c1 = (c0 + ch).min(window);
            // Suffixes at offsets (c0, c1], at local index offset - c0.
            let mut sa = bnd[c0 / ch];
            local.set(c1 - c0, &sa);
            for o in (c0 + 1..c1).rev() {
                let (y, v) = prev_row::<V, NULLS>(x, wt, &prev, o, mask, shift);
                sa.add(y, v);
                local.set(o - c0, &sa);
            }
            for j in c0..c1.min(blen) {
                let v = if NULLS { V::gather(wt, &base, j) } else { one };
                let y = V::gather(x, &base, j).sub(shift);
                acc.add(if NULLS { y.mul(v) } else { y }, v);
                let p = local.get::<V>(j + 1 - c0);
                let (a1, e1) = two_sum_v(acc.s1, p.s1);
                let (a2, e2) = two_sum_v(acc.s2, p.s2);
                let lo1 = e1.add(acc.c1.add(p.c1));
                let lo2 = e2.add(acc.c2.add(p.c2));
                let r = if varying {
                    let cnt = acc.n.add(p.n);
                    finish(a1, lo1, a2, lo2, cnt, one.div(cnt), one.div(cnt.sub(vddof)), sqrt)
                } else {
                    finish(a1, lo1, a2, lo2, fulln, inv_n, inv_d, sqrt)
                };
                r.scatter(out, &base_out, j);
            }
            c0 = c1;
        }
        if NULLS {
            for q in 0..k {
                if let Some((r, l)) = alts[q] {
                    suffix_only_rows(x, wt, window, base[q], r, l, ddof, sqrt, out, o0);
                }
            }
        }
        off += window;
    }
}

/// The block `[base, base + blen)`'s first valid row, and the last valid
/// row of the window before it (none before row 0).
fn valid_ends(wt: &[f64], base: usize, blen: usize, window: usize) -> (Option<usize>, Option<usize>) {
    let r = (base..base + blen).find(|&i| wt[i] != 0.0);
    let l = if base >= window { (base - window..base).rev().find(|&i| wt[i] != 0.0) } else { None };
    (r, l)
}

/// Rows `[base, r)` of a block whose first valid row is `r`: their windows'
/// valid rows are all in the block before, a suffix of it, which holds its
/// last valid row `l`: sums shifted by `x[l]`, one reverse pass (scalar:
/// only blocks that start with a null come here).
#[allow(clippy::too_many_arguments)]
fn suffix_only_rows(x: &[f64], wt: &[f64], window: usize, base: usize, r: usize, l: usize, ddof: f64, sqrt: bool, out: &mut [f64], o0: usize) {
    type V = S<false>;
    let c = V::splat(x[l]);
    let mut acc = Acc::<V>::zero();
    // Row i's window starts at s = i + 1 - window: rows [s, base).
    for s in (base + 1 - window..base).rev() {
        let v = S(wt[s]);
        acc.add(S(x[s]).sub(c).mul(v), v);
        let i = s + window - 1;
        if i < r {
            let one = V::splat(1.0);
            out[i - o0] = finish(acc.s1, acc.c1, acc.s2, acc.c2, acc.n, one.div(acc.n), one.div(acc.n.sub(V::splat(ddof))), sqrt).0;
        }
    }
}

/// Row `prev[k] + o` of the block before, masked, as `(y, weight)`. A
/// function, not a closure: a closure would be compiled without the
/// caller's AVX2, its intrinsics left as calls.
#[inline(always)]
fn prev_row<V: Lane, const NULLS: bool>(x: &[f64], wt: &[f64], prev: &[usize], o: usize, mask: V, shift: V) -> (V, V) {
    let v = if NULLS { V::gather(wt, prev, o).and(mask) } else { mask.and(V::splat(1.0)) };
    let y = V::gather(x, prev, o).sub(shift);
    let y = if NULLS { y.mul(v) } else { y };
    (y.and(mask), v)
}

/// `M2 = S2 - 2 m S1 + n m^2` with `m = S1 / n` rounded (module comment),
/// divided by `n - ddof`; `S1 = s1 + c1`, `S2 = s2 + c2`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn finish<V: Lane>(s1: V, c1: V, s2: V, c2: V, n: V, inv_n: V, inv_d: V, sqrt: bool) -> V {
    out_of(m2_of(s1, c1, s2, c2, n, inv_n), inv_d, sqrt)
}

/// `M2` (unclamped) of the partials, as [`finish`] has it.
#[inline(always)]
pub(super) fn m2_of<V: Lane>(s1: V, c1: V, s2: V, c2: V, n: V, inv_n: V) -> V {
    let m = s1.mul(inv_n);
    // m S1 = ph + pl + m c1, exactly but for the last product.
    let (ph, pl) = m.two_prod(s1);
    // r = S1 - n m, small: its leading part exactly.
    let (q, qe) = n.two_prod(m);
    let r = s1.sub(q).sub(qe).add(c1);
    // S2 >= m S1 up to rounding: when they are close the subtraction is
    // exact (Sterbenz), else its rounding is relative to the result.
    let d = s2.sub(ph);
    d.add(c2.sub(pl).sub(m.mul(c1)).sub(m.mul(r)))
}

/// The variance (or std) from `M2`.
#[inline(always)]
fn out_of<V: Lane>(m2: V, inv_d: V, sqrt: bool) -> V {
    // Rounding can leave a zero variance a hair negative; NaN stays NaN.
    let v = m2.clamp0().mul(inv_d);
    if sqrt {
        v.sqrt()
    } else {
        v
    }
}

// ---------------------------------------------------------------------------
// The fast path (null-free columns): compensated Subtract-on-Evict on shifted
// values, checked row by row against an error bound; a block whose check
// fails anywhere is recomputed by the exact van Herk kernel above
// (docs/DESIGN.md §6 "Rolling var / std" has the argument).
//
// The column is cut into blocks of `blen >= window / 2` rows, `V::K` of
// them in lock step (one per lane), at least two such groups where that
// allows (threads cut between groups). A block starts from the compensated
// sums of the window before its first row (from row 0 for a block less
// than a window in), all shifted by `c = x[first row]`
// then slides: `y_new - y_old` and `y_new^2 - y_old^2` (products split
// exactly by FMA) go in through TwoSum, their errors into compensations,
// as the sum kernel (rolling/sum.rs); rows (the start window's too) come
// `K` per lane as tiles transposed in registers. Row `i` of a block has
// folded `k <= window + blen` rows;
// with `Y` the largest `|y|` read so far, the partials are off by at most
// `C Y^2` (`C` below, [`c_of`]: the compensations' own roundings, which
// grow as `k^2 u^2`; the head lane's first rows use their own count), and
// `y = fl(x - c)` itself is off by `u |y|` per row, which moves `M2` by at
// most `2 u sqrt(S2 M2) + u^2 S2`. Row `i` passes when that total is at
// most `FAST_TOL M2`. That test is monotone (smaller `M2`, larger `S2`
// or `Y` only make it harder), so the tiled rows are tested once per
// block, at their smallest `M2` and largest `S2` and final `Y`; NaN
// fails, and a non-finite value leaves the sums non-finite to the end.
// Overflow: a passing block read only values within `Y (1 + u)` of `c`,
// so `|c| + Y < 2^499` vouches for them; failing blocks are scanned
// ([`fits`]) before the exact kernel.

/// Relative error the fast path may leave in `M2` (the exact kernel's
/// is a few ulps; the spec is 1e-12, tests/test_rolling_exact.py).
const FAST_TOL: f64 = 2e-13;
const U: f64 = f64::EPSILON / 2.0;

/// Rows per block for `K` lanes over `n` rows: about four windows, fewer
/// where that leaves lanes idle, and at least [`MIN_GROUPS`] groups of `K`
/// blocks where each block still holds half a window. Below a window a
/// block pays a whole start window for fewer rows, but one group is one
/// thread: at window 2^20 on 10M rows and 8 lanes, one group of 1.25M-row
/// blocks ran on one thread (DESIGN §6).
fn fast_block(n: usize, window: usize, k: usize) -> Option<usize> {
    let target = (4 * window).max(256);
    let groups = n.div_ceil(k * target).max(MIN_GROUPS);
    let blen = n / (groups * k);
    (2 * blen >= window && blen >= 16).then_some(blen)
}

/// Groups of lanes the fast path's plan holds at least (where blocks of
/// half a window allow it): the threads split between groups.
const MIN_GROUPS: usize = 2;

/// The fast path over all of `x` (`window <= n`); returns how many blocks
/// went to the exact kernel, or `None` where a square could overflow
/// ([`fits`]: a passing block's values are within its largest `|y|` of its
/// shift; the blocks that go exact are scanned).
#[inline(always)]
fn fast_run<V: Lane, V1: Lane>(x: &[f64], window: usize, ddof: f64, sqrt: bool, out: &mut [f64]) -> Option<usize> {
    let n = x.len();
    if window == 1 {
        // Every window one value: the check cannot pass a slid state (it
        // leaves ~eps^2 y^2 where the answer is 0); the exact kernel is
        // cheap here.
        if !fits(x) {
            return None;
        }
        lanes::<V1, false>(x, &[], 1, &[0], n, ddof, sqrt, out);
        return Some(0);
    }
    fast_rows::<V, V1, All, NoSink>(x, All, NoSink, window, ddof, sqrt, 0, n, out)
}

/// The fast path's jobs over `n` rows for `k` lanes, as `(first row, rows
/// per block, lanes)`: groups of `k` blocks in lock step, then the rest
/// on one lane in blocks of at least `window` rows (the exact kernel needs
/// a block to start at row 0 or a window in). Depends on `n`, `window`
/// and `k` only.
fn fast_plan(n: usize, window: usize, k: usize) -> Vec<(usize, usize, usize)> {
    let mut jobs = Vec::new();
    let mut r0 = 0;
    if let Some(blen) = fast_block(n, window, k).filter(|_| k > 1) {
        while r0 + k * blen <= n {
            jobs.push((r0, blen, k));
            r0 += k * blen;
        }
    }
    let blen1 = (4 * window).max(256);
    while r0 < n {
        let len = if n - r0 < 2 * blen1 { n - r0 } else { blen1 };
        jobs.push((r0, len, 1));
        r0 += len;
    }
    jobs
}

/// The fast path's jobs that start in `[r0, r1)` (whole jobs: `r0`, `r1`
/// are job starts or `n`) into `out` (those rows), and the exact kernel
/// for their blocks that fail the check. `window >= 2`.
///
/// A job that fails and holds an inf / NaN (a valid one) runs again on its
/// valid finite rows (the others masked like nulls, [`NonFinite`]), and the
/// rows whose window holds one are set to NaN (issue 36: with 1% NaN every
/// block failed, and the exact kernel ran them at a sixth of the clean
/// speed). `hint`: the job before held one, so this one starts with the
/// scan; the kernel a job runs depends on its rows only, so the bits do
/// not depend on the hint (nor on the threads).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn fast_rows<V: Lane, V1: Lane, Va: Valid, K: Sink>(x: &[f64], va: Va, sink: K, window: usize, ddof: f64, sqrt: bool, r0: usize, r1: usize, out: &mut [f64]) -> Option<usize> {
    let n = x.len();
    let mut bad = 0;
    let mut hint = false;
    for (a, blen, k) in fast_plan(n, window, V::K) {
        if a < r0 || a >= r1 {
            continue;
        }
        if K::SKIP {
            // `nan="skip"`: the job as it is first, as `nan="propagate"`
            // runs it (the probe of its first rows, then the kernel's own
            // check, stop at an inf / NaN): a column without NaN costs no
            // mask. Else the job's own mask (its NaN rows missing), built
            // as its rows come into cache; either put in the column's.
            let (lo, hi) = (a.saturating_sub(window), a + k * blen);
            if sink.as_is() && first_job::<V, V1, Va>(x, va, window, a, blen, k, ddof, sqrt, out, r0)?.is_some_and(|b| b.is_empty()) {
                sink.put(va, a, hi);
                continue;
            }
            let mask = skip_mask(x, va, lo, hi);
            let local = Bitmap::local(&mask, lo);
            bad += rows_job::<V, V1, Bitmap>(x, local, window, a, blen, k, ddof, sqrt, out, r0, &mut hint)?;
            sink.put(local, a, hi);
        } else {
            bad += rows_job::<V, V1, Va>(x, va, window, a, blen, k, ddof, sqrt, out, r0, &mut hint)?;
        }
    }
    Some(bad)
}

/// [`fast_rows`]' job of `k` blocks of `blen` rows from `a`: how many
/// blocks went to the exact kernel.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn rows_job<V: Lane, V1: Lane, Va: Valid>(x: &[f64], va: Va, window: usize, a: usize, blen: usize, k: usize, ddof: f64, sqrt: bool, out: &mut [f64], r0: usize, hint: &mut bool) -> Option<usize> {
    let hi = a + k * blen;
    let first = if *hint { None } else { first_job::<V, V1, Va>(x, va, window, a, blen, k, ddof, sqrt, out, r0)? };
    if first.as_ref().is_some_and(|b| b.is_empty()) {
        return Some(0);
    }
    let nf = NonFinite::scan(x, va, a.saturating_sub(window), hi);
    *hint = nf.any;
    if !nf.any {
        let failed = match first {
            Some(f) => f,
            None => fast_job::<V, V1, Va>(x, va, window, a, blen, k, ddof, sqrt, out, r0, false)?,
        };
        for &(b, len) in &failed {
            exact_block::<V1, Va>(x, va, window, b, len, ddof, sqrt, out, r0)?;
        }
        return Some(failed.len());
    }
    let m = nf.marks(window, true);
    let fin = nf.finite();
    match m.kept(a, hi) {
        // No row of the job needs its sums.
        None => {
            out[a - r0..hi - r0].fill(f64::NAN);
            return Some(0);
        }
        // Only the rows between (a window of the column's first rows,
        // say, before its first NaN): the exact kernel over them.
        Some((k0, k1)) if k1 - k0 <= blen / 2 => {
            out[a - r0..k0 - r0].fill(f64::NAN);
            out[k1 - r0..hi - r0].fill(f64::NAN);
            exact_block::<V1, _>(x, fin, window, k0, k1 - k0, ddof, sqrt, out, r0)?;
            m.apply(k0, k1, &mut out[k0 - r0..k1 - r0]);
            return Some(1);
        }
        _ => {}
    }
    let failed = fast_job::<V, V1, _>(x, fin, window, a, blen, k, ddof, sqrt, out, r0, false)?;
    for &(b, len) in &failed {
        exact_block::<V1, _>(x, fin, window, b, len, ddof, sqrt, out, r0)?;
    }
    m.apply(a, hi, &mut out[a - r0..hi - r0]);
    Some(failed.len())
}

/// A job's unmasked attempt, which stops at the first inf / NaN its sums
/// meet ([`fast_job`] with `bail`): the blocks that failed, or `Some(None)`
/// where the probe of its first rows finds one (the attempt would stop at
/// once; only the speed depends on it); `None` as [`fast_job`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn first_job<V: Lane, V1: Lane, Va: Valid>(x: &[f64], va: Va, window: usize, a: usize, blen: usize, k: usize, ddof: f64, sqrt: bool, out: &mut [f64], o0: usize) -> Option<Option<Vec<(usize, usize)>>> {
    if super::valid::any_non_finite(x, va, a.saturating_sub(window), a + k * blen) {
        return Some(None);
    }
    fast_job::<V, V1, Va>(x, va, window, a, blen, k, ddof, sqrt, out, o0, true).map(Some)
}

/// One job of the fast path's plan (`k` blocks of `blen` rows from `a`)
/// over the rows `va` says are valid, into `out` (rows from `o0`): the
/// blocks `(first row, rows)` that failed the check (their rows garbage);
/// `None` where a passing block may hold a value whose square could
/// overflow.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn fast_job<V: Lane, V1: Lane, Va: Valid>(x: &[f64], va: Va, window: usize, a: usize, blen: usize, k: usize, ddof: f64, sqrt: bool, out: &mut [f64], o0: usize, bail: bool) -> Option<Vec<(usize, usize)>> {
    if k > 1 {
        let starts: [usize; 8] = std::array::from_fn(|q| a + q * blen);
        let (ok, big) = fast_lanes::<V, Va>(x, va, window, &starts[..V::K], blen, ddof, sqrt, out, o0, bail);
        return (!big).then(|| (0..V::K).filter(|&q| !ok[q]).map(|q| (starts[q], blen)).collect());
    }
    let (ok, big) = fast_lanes::<V1, Va>(x, va, window, &[a], blen, ddof, sqrt, out, o0, bail);
    (!big).then(|| if ok[0] { Vec::new() } else { vec![(a, blen)] })
}

/// The exact kernel for a block `[a, a + len)` that failed the fast path's
/// check, into `out` (rows from `o0`); `None` where a square could
/// overflow ([`fits`]).
#[allow(clippy::too_many_arguments)]
fn exact_block<V1: Lane, Va: Valid>(x: &[f64], va: Va, window: usize, a: usize, len: usize, ddof: f64, sqrt: bool, out: &mut [f64], o0: usize) -> Option<()> {
    if !Va::ALL {
        return exact_masked::<V1, Va>(x, va, window, a, len, ddof, sqrt, &mut out[a - o0..a + len - o0]).then_some(());
    }
    if !fits(&x[a.saturating_sub(window)..a + len]) {
        return None;
    }
    if a == 0 || a >= window {
        lanes_at::<V1, false>(x, &[], window, &[a], len, ddof, sqrt, out, o0);
    } else {
        // The exact kernel's blocks start at row 0 or a window in: from
        // row 0, the rows before the block into scratch.
        let mut tmp = vec![0.0; a + len];
        lanes_at::<V1, false>(x, &[], window, &[0], a + len, ddof, sqrt, &mut tmp, 0);
        out[a - o0..a + len - o0].copy_from_slice(&tmp[a..]);
    }
    Some(())
}

/// The exact kernel for the block `[a, a + len)` of a column with missing
/// rows, into `out` (its rows): its rows and the window before them as
/// weights and values with missing slots holding the last finite value
/// ([`finite_filled`]), both local to the block. False where a square
/// could overflow ([`fits`]).
#[allow(clippy::too_many_arguments)]
#[cold]
fn exact_masked<V1: Lane, Va: Valid>(x: &[f64], va: Va, window: usize, a: usize, len: usize, ddof: f64, sqrt: bool, out: &mut [f64]) -> bool {
    // The exact kernel's blocks start at row 0 or a window in.
    let lo = if a >= window { a - window } else { 0 };
    let m = a + len - lo;
    let wt: Vec<f64> = (lo..a + len).map(|i| (va.bits(i) & 1) as f64).collect();
    let first = (lo..a + len).map(|i| x[i]).zip(&wt).find(|&(f, &w)| w == 1.0 && f.is_finite()).map_or(0.0, |(f, _)| f);
    let mut last = first;
    let xs: Vec<f64> = (lo..a + len)
        .zip(&wt)
        .map(|(i, &w)| {
            if w == 1.0 && x[i].is_finite() {
                last = x[i];
            }
            if w == 1.0 { x[i] } else { last }
        })
        .collect();
    if !fits(&xs) {
        return false;
    }
    if lo == 0 && a > 0 {
        let mut tmp = vec![0.0; m];
        lanes_at::<V1, true>(&xs, &wt, window.min(m), &[0], m, ddof, sqrt, &mut tmp, 0);
        out.copy_from_slice(&tmp[a..]);
    } else {
        lanes_at::<V1, true>(&xs, &wt, window.min(m), &[a - lo], len, ddof, sqrt, out, a - lo);
    }
    true
}

/// Compensated running sums of `y` and `y^2` per lane, the largest `|y|`,
/// and the rows counted (valid rows in the window).
#[derive(Clone, Copy)]
struct Slide<V> {
    s1: V,
    c1: V,
    s2: V,
    c2: V,
    ymax: V,
    n: V,
}

impl<V: Lane> Slide<V> {
    /// Fold in `y` of weight `w` (nothing leaves).
    #[inline(always)]
    fn push(&mut self, y: V, w: V) {
        self.n = self.n.add(w);
        self.ymax = self.ymax.max(y.abs());
        let (t, e) = two_sum_v(self.s1, y);
        self.s1 = t;
        self.c1 = self.c1.add(e);
        let (p, q) = y.two_prod(y);
        let (t2, f) = two_sum_v(self.s2, p);
        self.s2 = t2;
        self.c2 = self.c2.add(f.add(q));
    }

    /// Fold in `ya`, take out `yb` (0 for nothing), of weights `wa`, `wb`.
    #[inline(always)]
    fn step(&mut self, ya: V, yb: V, wa: V, wb: V) {
        self.n = self.n.add(wa.sub(wb));
        self.ymax = self.ymax.max(ya.abs());
        let (d, e1) = two_diff_v(ya, yb);
        let (t, e2) = two_sum_v(self.s1, d);
        self.s1 = t;
        self.c1 = self.c1.add(e1.add(e2));
        let (pa, qa) = ya.two_prod(ya);
        let (pb, qb) = yb.two_prod(yb);
        let (d2, f1) = two_diff_v(pa, pb);
        let (t2, f2) = two_sum_v(self.s2, d2);
        self.s2 = t2;
        self.c2 = self.c2.add(f1.add(f2).add(qa.sub(qb)));
    }
}

/// `C` of the module comment after `k` folds into sums of at most `w`
/// squares: `2 (k + 2)^2 (w + 3) u^2 + 4 w u^2`.
#[inline(always)]
fn c_of(k: f64, w: f64) -> f64 {
    2.0 * (k + 2.0) * (k + 2.0) * (w + 3.0) * U * U + 4.0 * w * U * U
}

/// All-ones where the row passes the check (module comment): with
/// `rest = tol M2 - C Y^2`, `rest >= 0` and `4 u^2 S2 M2 <= rest^2`.
#[inline(always)]
fn passes<V: Lane>(m2: V, st: &Slide<V>, tol: V, cbig: V, u2x4: V) -> V {
    passes_at(m2, st.s2.add(st.c2), st.ymax, tol, cbig, u2x4)
}

/// [`passes`] for given `M2`, `S2` and `Y`. The check is `C Y^2 / M2 +
/// 2 u sqrt(S2 / M2) <= tol`, monotone: it passes every row whose `M2` is
/// at least, and `S2`, `Y` at most, those given.
#[inline(always)]
fn passes_at<V: Lane>(m2: V, s2: V, ymax: V, tol: V, cbig: V, u2x4: V) -> V {
    let rest = tol.mul(m2).sub(cbig.mul(ymax.mul(ymax)));
    V::splat(0.0).le(rest).and(u2x4.mul(s2).mul(m2).le(rest.mul(rest)))
}

/// Blocks `[starts[k], starts[k] + blen)` in lock step, one per lane; for
/// each lane whether every row passed the check (then its rows of `out` are
/// final), and whether a passing lane may hold a value whose square could
/// overflow (`|c| + Y >= 2^499`: every value read is within `Y (1 + u)` of
/// the shift `c`). Any starts (ascending) and length: a lane that starts
/// less than a window in has a partial start window (rows from 0; none for
/// the lane at row 0) and partial windows until row `window - 1`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn fast_lanes<V: Lane, Va: Valid>(
    x: &[f64],
    va: Va,
    window: usize,
    starts: &[usize],
    blen: usize,
    ddof: f64,
    sqrt: bool,
    out: &mut [f64],
    o0: usize,
    bail: bool,
) -> ([bool; 8], bool) {
    let k = V::K;
    assert!(starts.len() == k && window >= 1 && window <= x.len());
    assert!(starts.iter().all(|&a| a + blen <= x.len()));
    // `out` holds rows `[o0, o0 + out.len())`.
    assert!(starts.iter().all(|&a| a >= o0 && a + blen <= o0 + out.len()));
    let head = starts[0] == 0;
    let zero = V::splat(0.0);
    let all = V::splat(f64::from_bits(u64::MAX));
    // Lane q's window of its block's row j starts at offset j of its start
    // window `[starts[q] - window, starts[q])`, whose first `dead[q]` rows
    // lie before row 0 (read as 0: never added, never evicted).
    let dead: [usize; 8] = std::array::from_fn(|q| if q < k { window.saturating_sub(starts[q]) } else { 0 });
    // Offsets `[0, window)` in stretches over which the set of live lanes
    // is fixed (the distinct `dead` values cut them).
    let mut cutsv: Vec<usize> = dead[..k].iter().copied().filter(|&d| d > 0 && d < window).collect();
    cutsv.push(window);
    cutsv.sort_unstable();
    cutsv.dedup();
    // For a stretch starting at offset `o`: the live lanes, and per lane the
    // index that offset `o'` adds to (`starts[q] - window`: in bounds from
    // `dead[q]` on; dead lanes read rows `o' - o`, in bounds, masked).
    let stretch = |o: usize| -> ([f64; 8], [i64; 8]) {
        let m = std::array::from_fn(|q| if q < k && dead[q] <= o { f64::from_bits(u64::MAX) } else { 0.0 });
        let ib = std::array::from_fn(|q| if q < k && dead[q] <= o { starts[q] as i64 - window as i64 } else { -(o as i64) });
        (m, ib)
    };
    // The shift: the block's first row; with missing rows, its first valid
    // finite one (or the window before's last), as near the data.
    let c = if Va::ALL {
        V::gather(x, starts, 0)
    } else {
        V::load(&std::array::from_fn::<f64, 8, _>(|q| if q < k { shift_of(x, va, starts[q], blen, window) } else { 0.0 }))
    };
    let xp = x.as_ptr();
    let one = V::splat(1.0);
    // Start: the window before each block's first row, `K` rows per lane
    // at a time as tiles (no gathers).
    let mut st = Slide { s1: zero, c1: zero, s2: zero, c2: zero, ymax: zero, n: zero };
    let mut o = 0;
    for &e in &cutsv {
        let (m, ib) = stretch(o);
        let live = V::load(&m);
        while o + k <= e {
            // SAFETY: rows `ib[q] + o + t`, `t < K`: `starts[q] - window + o
            // + t` in `[0, starts[q])` for live lanes, `t` plus the offset
            // from the stretch's start, below `window <= x.len()`, for dead
            // ones.
            let tl = unsafe { V::load_tile(xp.add(o), &ib) };
            let tw = weight_tile::<V, Va>(va, &ib, o);
            for t in 0..k {
                let (y, w) = masked::<V, Va>(tl[t].sub(c), tw[t], Some(live));
                st.push(y, w);
            }
            o += k;
        }
        while o < e {
            // SAFETY: as above.
            let (y, w) = masked::<V, Va>(unsafe { V::gather_raw(xp.add(o), &ib) }.sub(c), weight_tile::<V, Va>(va, &ib, o)[0], Some(live));
            st.push(y, w);
            o += 1;
        }
    }
    // Bound constants (module comment): C Y^2 for the partials.
    let cbig1 = c_of((window + blen) as f64, window as f64);
    let cbig = V::splat(cbig1);
    let tol = V::splat(FAST_TOL - 4.0 * U);
    let u2x4 = V::splat(4.0 * U * U);
    let ok = all;
    let full_n = window as f64;
    let (fulln, inv_n, inv_d) = (V::splat(full_n), V::splat(1.0 / full_n), V::splat(1.0 / (full_n - ddof)));
    let vddof = V::splat(ddof);
    // Rows folded before the block per lane: row j of the block has folded
    // `before + j + 1` (counting only rows at or after row 0).
    let before = V::load(&std::array::from_fn::<f64, 8, _>(|q| if q < k { (window - dead[q]) as f64 } else { full_n }));
    let pc = Partial { before, fulln, wm1: V::splat(full_n - 1.0), one, vddof, cbig, tol, u2x4, a: V::splat(2.0 * U * U), b: V::splat(4.0 * U * U) };
    let near = window.min(blen);
    // Row offsets per lane, for the unchecked loads: rows `starts[q] + j`,
    // and for `j >= near` (so `j >= window`) `starts[q] + j - window`.
    let ia: [i64; 8] = std::array::from_fn(|q| if q < k { starts[q] as i64 } else { 0 });
    let io: [i64; 8] = std::array::from_fn(|q| if q < k { (starts[q] - o0) as i64 } else { 0 });
    let op = out.as_mut_ptr();
    let mut chk = Check { ok, m2min: V::splat(f64::MAX), s2max: zero };
    // Stretches of rows: the early ones (evicting the start window, cut
    // where a lane's evictions become live), then the rest.
    let mut ends: Vec<usize> = cutsv.iter().map(|&e| e.min(near)).collect();
    ends.push(blen);
    ends.dedup();
    let mut j = 0;
    // `bail`: the job is redone if its sums leave the finite (an inf / NaN
    // read, fast_rows scans and reruns it masked; else a square overflowed
    // and every block goes exact), so stop at the first checkpoint where
    // one has (issue 36: a column with 1% NaN ran each thread's first job
    // twice in full, half the time at window 2^20).
    let mut check_in = BAIL_ROWS;
    for &e in &ends {
        if j >= e {
            continue;
        }
        let early = j < near;
        let (m, ib) = stretch(j);
        let live = V::load(&m);
        // Some lane's window is partial (it evicts nothing yet).
        let partial = early && m[..k].iter().any(|v| v.to_bits() == 0);
        let row = Row { head, sqrt, partial, fulln, inv_n, inv_d };
        while j < e {
            if j + k <= e {
                // `K` rows per lane as tiles transposed in registers, not
                // gathers and scatters. The evicted rows: the start
                // window's (`early`, dead lanes masked) or the block's own.
                // SAFETY: rows `starts[q] + j + t`; `ib[q] + j + t` as in the
                // start (`j + t < near <= window`), or `starts[q] + j + t -
                // window` (`j >= near`, so `j >= window`), `t < K`.
                let ta = unsafe { V::load_tile(xp.add(j), &ia) };
                let wa = weight_tile::<V, Va>(va, &ia, j);
                let (tb, wb) = unsafe {
                    if early {
                        (V::load_tile(xp.add(j), &ib), weight_tile::<V, Va>(va, &ib, j))
                    } else {
                        (V::load_tile(xp.add(j - window), &ia), weight_tile::<V, Va>(va, &ia, j - window))
                    }
                };
                let mut r = [zero; 8];
                for t in 0..k {
                    let (ya, wat) = masked::<V, Va>(ta[t].sub(c), wa[t], None);
                    let (yb, wbt) = masked::<V, Va>(tb[t].sub(c), wb[t], early.then_some(live));
                    st.step(ya, yb, wat, wbt);
                    // Checked once, at the end, for the smallest `M2` and the
                    // largest `S2` and `Y` (`passes_at`): three operations a
                    // row instead of a dozen.
                    r[t] = row_out::<V, Va, true>(&st, j + t, &row, &pc, &mut chk);
                }
                // SAFETY: out rows `starts[q] + j + t - o0`, in bounds (asserted), distinct.
                unsafe { V::store_tile(&r, op.add(j), &io) };
                j += k;
                if bail {
                    check_in -= 1;
                    if check_in == 0 {
                        check_in = BAIL_ROWS;
                        if !all_finite(st.s1.add(st.s2)) {
                            return ([false; 8], false);
                        }
                    }
                }
                continue;
            }
            // SAFETY: as the tiles.
            let (ya, wat) = masked::<V, Va>(unsafe { V::gather_raw(xp.add(j), &ia) }.sub(c), weight_tile::<V, Va>(va, &ia, j)[0], None);
            let (yb, wbt) = if early {
                masked::<V, Va>(unsafe { V::gather_raw(xp.add(j), &ib) }.sub(c), weight_tile::<V, Va>(va, &ib, j)[0], Some(live))
            } else {
                masked::<V, Va>(unsafe { V::gather_raw(xp.add(j - window), &ia) }.sub(c), weight_tile::<V, Va>(va, &ia, j - window)[0], None)
            };
            st.step(ya, yb, wat, wbt);
            let r = row_out::<V, Va, false>(&st, j, &row, &pc, &mut chk);
            // SAFETY: out rows `starts[q] + j - o0`, in bounds (asserted), one per lane.
            unsafe { r.scatter_raw(op.add(j), &io) };
            j += 1;
        }
    }
    let Check { mut ok, m2min, s2max } = chk;
    // The tracked rows; `min` / `max` may drop a NaN `M2`, but a non-finite
    // value read leaves the sums non-finite for good (NaN once it leaves).
    let sums = st.s1.add(st.c1).add(st.s2).add(st.c2);
    let finite = sums.mul(zero).le(zero);
    ok = ok.and(finite).and(passes_at(m2min, s2max, st.ymax, tol, cbig, u2x4));
    let mut t = [0.0; 8];
    ok.store(&mut t);
    // A failing lane's values are scanned before the exact kernel; a
    // passing lane read only finite values.
    let mut small = [0.0; 8];
    c.abs().add(st.ymax).le(V::splat(HALF_LIMIT)).store(&mut small);
    let ok: [bool; 8] = std::array::from_fn(|q| q >= k || t[q].to_bits() == u64::MAX);
    (ok, (0..k).any(|q| ok[q] && small[q].to_bits() != u64::MAX))
}

/// Tiles between [`fast_lanes`]' checks for non-finite sums.
const BAIL_ROWS: u32 = 64;

/// Every lane of `v` finite.
#[inline(always)]
fn all_finite<V: Lane>(v: V) -> bool {
    let mut t = [0.0; 8];
    v.mul(V::splat(0.0)).le(V::splat(0.0)).store(&mut t);
    t[..V::K].iter().all(|f| f.to_bits() == u64::MAX)
}

/// `y` and its weight `w` (1 / 0) where `live`, `y` zeroed where the row
/// is missing (its slot may hold anything: masked, not multiplied).
/// (`live`: `None` where every lane is; without missing rows, the code
/// before issue 36.) Tried and measured without gain (Intel Xeon, one
/// thread, 1% nulls): AVX-512 mask registers for the weights, which cut
/// the tiled loop from 105 to 90 instructions, and the state stepped
/// through a whole tile before any row's result.
#[inline(always)]
fn masked<V: Lane, Va: Valid>(y: V, w: V, live: Option<V>) -> (V, V) {
    if Va::ALL {
        return (live.map_or(y, |l| y.and(l)), w);
    }
    let keep = V::splat(0.5).le(w);
    let keep = live.map_or(keep, |l| keep.and(l));
    (y.and(keep), live.map_or(w, |l| w.and(l)))
}

/// The weights (1 / 0) of rows `ib[q] + o + t` as a tile (`t[r]` holds
/// row `ib[q] + o + r` in lane `q`, `r < K`), read from `va` a word per
/// lane; ones without missing rows.
#[inline(always)]
fn weight_tile<V: Lane, Va: Valid>(va: Va, ib: &[i64; 8], o: usize) -> [V; 8] {
    if Va::ALL {
        return [V::splat(1.0); 8];
    }
    // A loop, not `array::from_fn`: its closure was compiled (and called
    // per tile) without the kernel's CPU features.
    let mut w = [0u64; 8];
    for q in 0..V::K {
        w[q] = va.bits((ib[q] + o as i64) as usize);
    }
    V::bits_tile(&w)
}

/// A block's shift with missing rows: its first valid finite row, else
/// the last one of the window before, else 0 (no value is read then).
fn shift_of<Va: Valid>(x: &[f64], va: Va, a: usize, blen: usize, window: usize) -> f64 {
    let ok = |i: &usize| va.bits(*i) & 1 == 1 && x[*i].is_finite();
    (a..a + blen).find(ok).or_else(|| (a.saturating_sub(window)..a).rev().find(ok)).map_or(0.0, |i| x[i])
}

/// The fast path's check so far: lanes whose every checked row passed,
/// and the smallest `M2` and largest `S2` of the rows left to check at the
/// end.
struct Check<V> {
    ok: V,
    m2min: V,
    s2max: V,
}

/// What a row's result needs besides the state.
struct Row<V> {
    head: bool,
    sqrt: bool,
    /// Some lane's window is partial (it evicts nothing yet).
    partial: bool,
    fulln: V,
    inv_n: V,
    inv_d: V,
}

/// Row `j`'s result from the state, and its part of the check: rows of
/// partial windows checked with their own `C` at once ([`partial_row`]),
/// the others at once or (`TRACK`, the tiled rows) at the end. Without
/// missing rows a full window holds `window` rows; with them it holds
/// `st.n`, and a window of one value or none (`n < 2`) is not checked: one
/// value's variance is 0 exactly (written so), none's is masked.
#[inline(always)]
fn row_out<V: Lane, Va: Valid, const TRACK: bool>(st: &Slide<V>, j: usize, row: &Row<V>, pc: &Partial<V>, chk: &mut Check<V>) -> V {
    if Va::ALL {
        if row.partial {
            let (r, pass) = partial_row(st, j, row.head, row.sqrt, pc);
            chk.ok = chk.ok.and(pass);
            return r;
        }
        let m2 = m2_of(st.s1, st.c1, st.s2, st.c2, row.fulln, row.inv_n);
        if TRACK {
            chk.m2min = chk.m2min.min(m2);
            chk.s2max = chk.s2max.max(st.s2.add(st.c2));
        } else {
            chk.ok = chk.ok.and(passes(m2, st, pc.tol, pc.cbig, pc.u2x4));
        }
        return out_of(m2, row.inv_d, row.sqrt);
    }
    let n = st.n;
    // `1 / n` and `1 / (n - ddof)` from one division (two a row measured a
    // sixth of the masked kernel): `q = 1 / (n (n - ddof))`, exact
    // products of whole numbers. `m = S1 / n` may be off by an ulp more
    // (`M2`'s formula holds for any `m`, module doc step 3), the result by
    // a rounding more; rows below two values (`q` infinite) are masked.
    // What is left of the division is 6-9% of the kernel (a multiply in
    // its place, a bound, measured so; rcp14 and Newton steps no faster).
    let nd = n.sub(pc.vddof);
    let q = pc.one.div(n.mul(nd));
    let m2 = m2_of(st.s1, st.c1, st.s2, st.c2, n, nd.mul(q));
    let two = V::splat(1.5).le(n);
    let r = out_of(m2, n.mul(q), row.sqrt).and(two);
    let cv = if row.partial { partial_c(j, pc) } else { pc.cbig };
    if TRACK && !row.partial {
        chk.m2min = chk.m2min.min(m2.and(two).or(V::splat(f64::MAX).andnot(two)));
        chk.s2max = chk.s2max.max(st.s2.add(st.c2));
    } else {
        chk.ok = chk.ok.and(passes(m2, st, pc.tol, cv, pc.u2x4).or(V::splat(f64::from_bits(u64::MAX)).andnot(two)));
    }
    r
}

/// Constants of [`partial_row`].
struct Partial<V> {
    before: V,
    fulln: V,
    wm1: V,
    one: V,
    vddof: V,
    cbig: V,
    tol: V,
    u2x4: V,
    /// `2 u^2`, `4 u^2`: [`c_of`] on lanes.
    a: V,
    b: V,
}

/// Row `j` of a stretch where some lane's window is partial: per lane its
/// count `f = before + j + 1` capped at the window (it has folded `f` rows,
/// summed at most `min(f, window)` squares), its own `C` where the window
/// is partial (the full one fails the first rows of long windows, and the
/// whole block went exact), the full block's elsewhere. The result and
/// whether each lane passes.
#[inline(always)]
fn partial_row<V: Lane>(st: &Slide<V>, j: usize, head: bool, sqrt: bool, p: &Partial<V>) -> (V, V) {
    let f = p.before.add(V::splat((j + 1) as f64));
    let n = f.min(p.fulln);
    let m2 = m2_of(st.s1, st.c1, st.s2, st.c2, n, p.one.div(n));
    let r = out_of(m2, p.one.div(n.sub(p.vddof)), sqrt);
    let mut pass = passes(m2, st, p.tol, partial_c(j, p), p.u2x4);
    if head && j == 0 {
        // One value: M2 comes out exactly 0 (S2 and m S1 are the same
        // rounded square), whatever the bound says.
        let mut m = [0.0; 8];
        m[0] = f64::from_bits(u64::MAX);
        pass = pass.or(V::load(&m));
    }
    (r, pass)
}

/// [`partial_row`]'s `C` per lane for row `j`: `c_of(f, f)` where the
/// lane has folded `f < window` rows, the full block's elsewhere.
#[inline(always)]
fn partial_c<V: Lane>(j: usize, p: &Partial<V>) -> V {
    let f = p.before.add(V::splat((j + 1) as f64));
    // c_of(f, f) = 2 (f + 2)^2 (f + 3) u^2 + 4 f u^2 where f < window.
    let f2 = f.add(V::splat(2.0));
    let cf = p.a.mul(f2).mul(f2).mul(f.add(V::splat(3.0))).add(p.b.mul(f));
    let part = f.le(p.wm1);
    let full = p.fulln.le(f);
    cf.and(part).or(p.cbig.and(full))
}

/// 2^499: `|c| + Y` below it keeps every value below 2^500 ([`fits`]).
const HALF_LIMIT: f64 = 1.636695303948071e150;

#[cfg(test)]
mod tests {
    use super::*;

    fn exact_var(xs: &[f64], ddof: f64) -> f64 {
        // Two-pass in double-double is plenty for a test oracle at these sizes.
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let m2: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
        m2 / (n - ddof)
    }

    /// A long window: the head lane's first rows hold few values, and a
    /// bound sized for the full window failed them (the whole first block
    /// then went to the exact kernel); every block passes on a random
    /// walk, and every lane width agrees with the exact kernel.
    #[test]
    fn long_window_head_passes() {
        let n = 2_500_000;
        let w = 1 << 20;
        let mut st = 0x0DDB_1A5E_5BAD_5EEDu64;
        let mut walk = 0.0;
        let x: Vec<f64> = (0..n)
            .map(|_| {
                st ^= st << 13;
                st ^= st >> 7;
                st ^= st << 17;
                walk += (st >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                walk
            })
            .collect();
        let mut want = vec![0.0; n];
        lanes::<S<false>, false>(&x, &[], w, &[0], n, 1.0, false, &mut want);
        let mut got = vec![0.0; n];
        assert_eq!(fast_run::<S<false>, S<false>>(&x, w, 1.0, false, &mut got), Some(0));
        let mut outs = vec![("scalar", got)];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                let mut o = vec![0.0; n];
                assert_eq!(unsafe { avx2::fast(&x, w, 1.0, false, &mut o) }, Some(0));
                outs.push(("avx2", o));
            }
            if std::is_x86_feature_detected!("avx512f") {
                let mut o = vec![0.0; n];
                assert_eq!(unsafe { avx512::fast(&x, w, 1.0, false, &mut o) }, Some(0));
                outs.push(("avx512", o));
            }
        }
        for (name, got) in outs {
            for i in 1..n {
                assert!((got[i] - want[i]).abs() <= 1e-12 * want[i], "{name} row {i}: {} vs {}", got[i], want[i]);
            }
        }
    }

    /// The limit, either sign; non-finite values fit (they propagate).
    /// `var_into` refuses a column with a value past it wherever it sits
    /// (a passing block, a block that goes exact, a block's shift, with
    /// nulls or not, at every lane width) and takes values just below
    /// 2^499.
    #[test]
    fn overflow_limit() {
        let lim = 2f64.powi(500);
        let below = f64::from_bits(lim.to_bits() - 1);
        for len in [1, 7, 512, 513, 2000] {
            for at in [0, len / 2, len - 1] {
                for (v, want) in
                    [(lim, false), (-lim, false), (f64::MAX, false), (below, true), (-below, true), (f64::INFINITY, true), (f64::NAN, true)]
                {
                    let mut x = vec![1.0; len];
                    x[at] = v;
                    assert_eq!(fits(&x), want, "{v} at {at} of {len}");
                }
            }
        }
        let n = 20_000;
        let ok_big = f64::from_bits(HALF_LIMIT.to_bits() - 1) / 2.0;
        for w in [1, 16, 1000, 6000] {
            for at in [0, 1, 777, 5_000, 12_345, n - 1] {
                for (v, want) in [(lim, false), (-1e300, false), (ok_big, true), (f64::NAN, true)] {
                    let mut x: Vec<f64> = (0..n).map(|i| (i % 7) as f64).collect();
                    x[at] = v;
                    let wt: Vec<f64> = (0..n).map(|i| (i % 5 != 1) as u8 as f64).collect();
                    let mut out = vec![0.0; n];
                    assert_eq!(var_into(&x, None, w, 1.0, false, &mut out), want, "auto {v} at {at} w {w}");
                    assert_eq!(var_into(&x, Some(&wt), w, 1.0, false, &mut out), want, "nulls {v} at {at} w {w}");
                    assert_eq!(run::<S<false>, S<false>>(&x, None, w, 1.0, false, &mut out), want, "scalar {v} at {at} w {w}");
                    #[cfg(target_arch = "x86_64")]
                    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                        assert_eq!(unsafe { avx2::run(&x, None, w, 1.0, false, &mut out) }, want, "avx2 {v} at {at} w {w}");
                    }
                }
            }
        }
    }

    /// Nulls (weight 0, finite filler) and NaN, several chunks and lanes.
    #[test]
    fn weights_and_nan_match_two_pass() {
        let n = 9_001;
        let mut st = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            st
        };
        let x: Vec<f64> = (0..n).map(|i| if i == 4_000 { f64::NAN } else { -3e8 + (next() >> 44) as f64 }).collect();
        let wt: Vec<f64> = (0..n).map(|_| (next() % 5 != 0) as u8 as f64).collect();
        for w in [2, 7, 2049, 2250] {
            for fma in [false, true] {
                let mut out = vec![0.0; n];
                if fma {
                    var_into(&x, Some(&wt), w, 1.0, true, &mut out);
                    #[cfg(target_arch = "x86_64")]
                    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                        let mut o2 = vec![0.0; n];
                        unsafe { avx2::run(&x, Some(&wt), w, 1.0, true, &mut o2) };
                        for i in 0..n {
                            let (a, b) = (o2[i], out[i]);
                            assert!(a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-12 * b.abs(), "avx2 w {w} row {i}");
                        }
                    }
                } else {
                    run::<S<false>, S<false>>(&x, Some(&wt), w, 1.0, true, &mut out);
                }
                for i in 0..n {
                    let lo = (i + 1).saturating_sub(w);
                    let vals: Vec<f64> = (lo..=i).filter(|&r| wt[r] == 1.0).map(|r| x[r]).collect();
                    if vals.len() < 2 {
                        continue;
                    }
                    let (got, want) = (out[i], exact_var(&vals, 1.0).sqrt());
                    assert!((got.is_nan() && want.is_nan()) || (got - want).abs() <= 1e-9 * want.abs(), "w {w} row {i}: {got} vs {want}");
                }
            }
        }
    }

    /// The checked fast path against the exact kernel alone, on data where
    /// it passes (random walk, 1e9 + noise) and where its check must send
    /// blocks to the exact kernel (1e8 and 1e-3 mixed, NaN, inf): 1e-12
    /// relative to the variance is beyond a plain running sum on the last
    /// three.
    #[test]
    fn fast_path_matches_exact_kernel() {
        let mut st = 0x1234_5678_9ABC_DEF1u64;
        let mut next = move || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            (st >> 11) as f64 / (1u64 << 53) as f64
        };
        let n = 12_345;
        let mut walk = 0.0;
        let sets: Vec<Vec<f64>> = vec![
            (0..n)
                .map(|_| {
                    walk += next() - 0.5;
                    walk
                })
                .collect(),
            (0..n).map(|_| 1e9 + next() - 0.5).collect(),
            (0..n).map(|i| if (i / 300) % 7 == 3 || next() < 0.01 { 1e8 * (1.0 + next()) } else { 1e-3 * (1.0 + next()) }).collect(),
            (0..n)
                .map(|i| {
                    if i == 5000 {
                        f64::NAN
                    } else if i == 9000 {
                        f64::INFINITY
                    } else {
                        next()
                    }
                })
                .collect(),
        ];
        for (si, x) in sets.iter().enumerate() {
            for w in [1, 2, 3, 16, 33, 100, 1000, 3001, n] {
                for ddof in [0.0, 1.0] {
                    if w == 1 && ddof == 1.0 {
                        continue;
                    }
                    let mut want = vec![0.0; n];
                    lanes::<S<false>, false>(x, &[], w, &[0], n, ddof, false, &mut want);
                    let mut outs = vec![];
                    let mut o = vec![0.0; n];
                    var_into(x, None, w, ddof, false, &mut o);
                    outs.push(("auto", o));
                    let mut o = vec![0.0; n];
                    let bad = fast_run::<S<false>, S<false>>(x, w, ddof, false, &mut o).unwrap();
                    // The check passes every block of the first two sets
                    // from window 16 on (two or three values of a walk can
                    // be closer than the shift's rounding: those blocks go
                    // exact), and sends some to the exact kernel where short
                    // windows of small values follow large ones. Blocks
                    // holding NaN / inf run again masked, their windows
                    // set to NaN (`fast_rows`), not exact: compared below.
                    let expect = match si {
                        0 | 1 => w < 16 || bad == 0,
                        2 => w == 1 || w > 100 || bad > 0,
                        _ => true,
                    };
                    assert!(expect, "set {si} w {w}: {bad} blocks exact");
                    outs.push(("scalar", o));
                    #[cfg(target_arch = "x86_64")]
                    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                        let mut o = vec![0.0; n];
                        unsafe { avx2::run(x, None, w, ddof, false, &mut o) };
                        outs.push(("avx2", o));
                    }
                    for (name, got) in outs {
                        for i in (ddof as usize)..n {
                            let (g, e) = (got[i], want[i]);
                            assert!(
                                (g.is_nan() && e.is_nan()) || (g - e).abs() <= 1e-12 * e.abs(),
                                "{name} set {si} w {w} ddof {ddof} row {i}: {g} vs {e}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn lanes_and_tail_match_two_pass() {
        let mut st = 0x9E37_79B9_7F4A_7C15u64;
        let x: Vec<f64> = (0..10_007)
            .map(|_| {
                st ^= st << 13;
                st ^= st >> 7;
                st ^= st << 17;
                1e6 + (st >> 40) as f64 / 1024.0
            })
            .collect();
        for w in [1, 2, 3, 16, 100, 1000, 2501, 10_007] {
            for fma in [false, true] {
                let ddof = if w == 1 { 0.0 } else { 1.0 };
                let mut out = vec![0.0; x.len()];
                if fma {
                    var_into(&x, None, w, ddof, false, &mut out);
                    #[cfg(target_arch = "x86_64")]
                    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                        let mut o2 = vec![0.0; x.len()];
                        unsafe { avx2::run(&x, None, w, ddof, false, &mut o2) };
                        for i in 1..x.len() {
                            assert!((o2[i] - out[i]).abs() <= 1e-12 * out[i].abs(), "avx2 w {w} row {i}");
                        }
                    }
                } else {
                    run::<S<false>, S<false>>(&x, None, w, ddof, false, &mut out);
                }
                for i in 1..x.len() {
                    let lo = (i + 1).saturating_sub(w);
                    let want = exact_var(&x[lo..=i], ddof);
                    let got = out[i];
                    assert!((got - want).abs() <= 1e-9 * want.abs().max(1e-300), "w {w} row {i}: {got} vs {want}");
                }
            }
        }
    }
}
