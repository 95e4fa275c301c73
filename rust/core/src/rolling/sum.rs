//! Rolling sum / mean / count.
//!
//! Floats: Subtract-on-Evict (SlideSide paper §2) with every step
//! error-free: `new - old = d + e1` and `s + d = s' + e2` (TwoSum), the
//! error terms go to a compensation `c`, so `s + c` is the window's sum up
//! to the rounding of `c` itself. `d, e1` are off the loop-carried chain,
//! which is one add for `s` and one for `c` per row. The column runs as
//! segments of at most `max(8 window, 65536)` rows, each restarted from an
//! exact recomputation of its first window (so nothing accumulates across
//! the column), four at a time: the four chains interleave, and on x86-64
//! with AVX2 (detected at run time) they are the four lanes of one vector.
//!
//! Non-finite values: any inf / NaN a segment reads makes its TwoSum
//! errors, hence `c`, NaN; such a segment is redone by a slower loop that
//! counts them apart, as `FSum` does, so that evicting an inf restores the
//! finite sum (finite columns pay no pre-check pass). Integers: exact wrapping
//! i64 Subtract-on-Evict.

use arrow_array::ArrayRef;

use super::{buffer, filled, validity, window_counts, FastNum};
use crate::engine::{Column, ToArrow};
use crate::ops::arith::two_sum;
use crate::ops::{FSum, Num, SumAcc};

/// Exact-ish sum of a slice as `(s, c)`: 8 Neumaier lanes (independent, so
/// the loop vectorises and is not latency bound), then merged with TwoSum.
#[inline(always)]
fn exact_sum<T: Num>(xs: &[T]) -> (f64, f64) {
    const L: usize = 8;
    let mut s = [0.0f64; L];
    let mut c = [0.0f64; L];
    let mut it = xs.chunks_exact(L);
    for ch in &mut it {
        for k in 0..L {
            let (t, e) = two_sum(s[k], ch[k].to_f64());
            s[k] = t;
            c[k] += e;
        }
    }
    for (k, v) in it.remainder().iter().enumerate() {
        let (t, e) = two_sum(s[k], v.to_f64());
        s[k] = t;
        c[k] += e;
    }
    let (mut ss, mut cc) = (0.0, 0.0);
    for k in 0..L {
        let (t, e) = two_sum(ss, s[k]);
        ss = t;
        cc += e + c[k];
    }
    (ss, cc)
}

fn all_finite<T: Num>(xs: &[T]) -> bool {
    // Branch-free fold per chunk (vectorises); `x - x` is NaN exactly for
    // inf and NaN.
    xs.chunks(512).all(|c| c.iter().fold(true, |a, v| a & { let f = v.to_f64(); (f - f) == 0.0 }))
}

/// Rolling sums of a null-free (or null-zeroed) float column, as f64.
///
/// The column splits into the insert-only rows `[0, window)` and the
/// sliding rows `[window, n)`; each region runs in groups of four
/// segments, each segment restarted from an exact recomputation of its
/// first window ([`group`]). A segment whose compensation comes out NaN
/// met an inf / NaN (or overflowed) and is redone by [`counted_block`],
/// so finite columns pay no separate pre-check pass.
pub(super) fn float_sums<T: Num>(x: &[T], window: usize) -> Vec<f64> {
    let n = x.len();
    let mut out = buffer::<f64>(n);
    let a = window.min(n);
    region(x, window, 0, a, &mut out);
    region(x, window, a, n, &mut out);
    out
}

/// Rows `[r0, r1)`, all insert-only (`r1 <= window`) or all sliding.
fn region<T: Num>(x: &[T], window: usize, r0: usize, r1: usize, out: &mut [f64]) {
    let len = r1 - r0;
    // Segments long enough that restarting costs at most an eighth of a
    // pass, short enough that the compensation's own rounding stays
    // negligible; a multiple of 4 rows (the transpose tile).
    let cap = window.saturating_mul(8).max(1 << 16);
    let segs = len.div_ceil(cap).next_multiple_of(4).max(4);
    let seg = len / segs / 4 * 4;
    let mut b0 = r0;
    if seg >= 16 {
        for _ in 0..segs / 4 {
            let ok = group(x, window, b0, seg, r0 < window, out);
            for (k, good) in ok.into_iter().enumerate() {
                let s0 = b0 + k * seg;
                if !good {
                    counted_block(x, window, s0, s0 + seg, &mut out[s0..s0 + seg]);
                }
            }
            b0 += 4 * seg;
        }
    }
    // The tail (or a short region): the scalar kernel.
    if b0 < r1 {
        if all_finite(&x[b0.saturating_sub(window)..r1]) {
            finite_block(x, window, b0, r1, &mut out[b0..r1]);
        } else {
            counted_block(x, window, b0, r1, &mut out[b0..r1]);
        }
    }
}

/// Four segments `[b0 + k seg, b0 + (k+1) seg)`: per segment, whether it
/// stayed finite (else its rows are garbage and must be redone).
fn group<T: Num>(x: &[T], window: usize, b0: usize, seg: usize, insert_only: bool, out: &mut [f64]) -> [bool; 4] {
    #[cfg(target_arch = "x86_64")]
    {
        if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>() && std::is_x86_feature_detected!("avx2") {
            // SAFETY: T is f64 (same type, checked above), and AVX2 is present.
            let xf = unsafe { std::slice::from_raw_parts(x.as_ptr() as *const f64, x.len()) };
            return unsafe {
                if insert_only {
                    avx2::group::<true>(xf, window, b0, seg, out)
                } else {
                    avx2::group::<false>(xf, window, b0, seg, out)
                }
            };
        }
    }
    group_portable(x, window, b0, seg, insert_only, out)
}

/// Start state of the segment beginning at row `r`: the exact sum of its
/// first window's rows before `r`.
#[inline(always)]
fn start_state<T: Num>(x: &[T], window: usize, r: usize) -> (f64, f64) {
    exact_sum(&x[r.saturating_sub(window)..r])
}

/// The portable group: four scalar chains side by side (independent, so
/// their latencies overlap).
fn group_portable<T: Num>(x: &[T], window: usize, b0: usize, seg: usize, insert_only: bool, out: &mut [f64]) -> [bool; 4] {
    let mut s = [0.0; 4];
    let mut c = [0.0; 4];
    for k in 0..4 {
        (s[k], c[k]) = start_state(x, window, b0 + k * seg);
    }
    for j in 0..seg {
        for k in 0..4 {
            let i = b0 + k * seg + j;
            let (d, e1) = if insert_only { (x[i].to_f64(), 0.0) } else { two_sum(x[i].to_f64(), -x[i - window].to_f64()) };
            let (t, e2) = two_sum(s[k], d);
            s[k] = t;
            c[k] += e1 + e2;
            out[i] = s[k] + c[k];
        }
    }
    c.map(|v| v.is_finite())
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The group kernel on AVX2: lane `k` of every vector is segment `k`,
    //! so the loop-carried adds (`s`, `c`) run four segments at once. Rows
    //! come in 4x4 tiles (four rows of each segment), transposed in
    //! registers on the way in and out.
    use std::arch::x86_64::*;

    #[inline(always)]
    unsafe fn transpose(r: [__m256d; 4]) -> [__m256d; 4] {
        let t0 = _mm256_unpacklo_pd(r[0], r[1]);
        let t1 = _mm256_unpackhi_pd(r[0], r[1]);
        let t2 = _mm256_unpacklo_pd(r[2], r[3]);
        let t3 = _mm256_unpackhi_pd(r[2], r[3]);
        [
            _mm256_permute2f128_pd(t0, t2, 0x20),
            _mm256_permute2f128_pd(t1, t3, 0x20),
            _mm256_permute2f128_pd(t0, t2, 0x31),
            _mm256_permute2f128_pd(t1, t3, 0x31),
        ]
    }

    #[inline(always)]
    unsafe fn tile(p: *const f64, seg: usize) -> [__m256d; 4] {
        transpose([
            _mm256_loadu_pd(p),
            _mm256_loadu_pd(p.add(seg)),
            _mm256_loadu_pd(p.add(2 * seg)),
            _mm256_loadu_pd(p.add(3 * seg)),
        ])
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn group<const INSERT_ONLY: bool>(
        x: &[f64],
        window: usize,
        b0: usize,
        seg: usize,
        out: &mut [f64],
    ) -> [bool; 4] {
        let mut s0 = [0.0; 4];
        let mut c0 = [0.0; 4];
        for k in 0..4 {
            (s0[k], c0[k]) = super::start_state(x, window, b0 + k * seg);
        }
        assert!(b0 + 4 * seg <= x.len() && out.len() == x.len() && (INSERT_ONLY || b0 >= window));
        let mut s = _mm256_loadu_pd(s0.as_ptr());
        let mut c = _mm256_loadu_pd(c0.as_ptr());
        let xin = x.as_ptr().add(b0);
        let xout = if INSERT_ONLY { xin } else { x.as_ptr().add(b0 - window) };
        let o = out.as_mut_ptr().add(b0);
        let mut j = 0;
        while j < seg {
            let a = tile(xin.add(j), seg);
            let b = if INSERT_ONLY { a } else { tile(xout.add(j), seg) };
            let mut r = [_mm256_setzero_pd(); 4];
            for t in 0..4 {
                // d + e1 = a - b exactly (TwoSum), off the chain.
                let (d, e1) = if INSERT_ONLY {
                    (a[t], _mm256_setzero_pd())
                } else {
                    let d = _mm256_sub_pd(a[t], b[t]);
                    let bb = _mm256_sub_pd(d, a[t]);
                    let e1 = _mm256_sub_pd(_mm256_sub_pd(a[t], _mm256_sub_pd(d, bb)), _mm256_add_pd(b[t], bb));
                    (d, e1)
                };
                // s' + e2 = s + d exactly.
                let t2 = _mm256_add_pd(s, d);
                let bb = _mm256_sub_pd(t2, s);
                let e2 = _mm256_add_pd(_mm256_sub_pd(s, _mm256_sub_pd(t2, bb)), _mm256_sub_pd(d, bb));
                s = t2;
                c = _mm256_add_pd(c, if INSERT_ONLY { e2 } else { _mm256_add_pd(e1, e2) });
                r[t] = _mm256_add_pd(s, c);
            }
            let r = transpose(r);
            for (k, v) in r.into_iter().enumerate() {
                _mm256_storeu_pd(o.add(k * seg + j), v);
            }
            j += 4;
        }
        let mut cf = [0.0; 4];
        _mm256_storeu_pd(cf.as_mut_ptr(), c);
        [0, 1, 2, 3].map(|k| cf[k].is_finite() && c0[k].is_finite())
    }
}

#[inline(always)]
fn finite_block<T: Num>(x: &[T], window: usize, b0: usize, b1: usize, out: &mut [f64]) {
    let (mut s, mut c) = exact_sum(&x[b0.saturating_sub(window)..b0]);
    // Rows before `window` only insert (partial windows at the start).
    let mid = window.clamp(b0, b1);
    for (o, v) in out[..mid - b0].iter_mut().zip(&x[b0..mid]) {
        let (t, e) = two_sum(s, v.to_f64());
        s = t;
        c += e;
        *o = s + c;
    }
    if mid == b1 {
        return;
    }
    let new = &x[mid..b1];
    let old = &x[mid - window..b1 - window];
    for ((o, a), b) in out[mid - b0..].iter_mut().zip(new).zip(old) {
        let (d, e1) = two_sum(a.to_f64(), -b.to_f64());
        let (t, e2) = two_sum(s, d);
        s = t;
        c += e1 + e2;
        *o = s + c;
    }
}

/// The same with non-finite values counted apart (`FSum`), per row.
#[cold]
fn counted_block<T: Num>(x: &[T], window: usize, b0: usize, b1: usize, out: &mut [f64]) {
    let mut acc = FSum::default();
    for v in &x[b0.saturating_sub(window)..b0] {
        acc = acc.add(&FSum::lift(v.to_f64()));
    }
    for i in b0..b1 {
        acc = acc.add(&FSum::lift(x[i].to_f64()));
        if i >= window {
            acc = acc.sub(&FSum::lift(x[i - window].to_f64()));
        }
        out[i - b0] = acc.value();
    }
}

/// Rolling sums of an integer column: exact, wrapping on i64 overflow.
pub(super) fn int_sums<T: Num + Into<i64>>(x: &[T], window: usize) -> Vec<i64> {
    let n = x.len();
    let mut out = buffer::<i64>(n);
    let mid = window.min(n);
    let mut s = 0i64;
    for (o, &v) in out[..mid].iter_mut().zip(&x[..mid]) {
        s = s.wrapping_add(v.into());
        *o = s;
    }
    for ((o, &a), &b) in out[mid..].iter_mut().zip(&x[mid..]).zip(&x[..n - mid]) {
        s = s.wrapping_add(a.into().wrapping_sub(b.into()));
        *o = s;
    }
    out
}

fn sums_of<T: FastNum>(col: &Column<T>, window: usize) -> Vec<T::Wide> {
    match col.nulls {
        None => T::window_sums(col.values, window),
        Some(_) => T::window_sums(&filled(col, T::default()), window),
    }
}

pub(super) fn rolling_sum<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize) -> ArrayRef {
    let counts = col.nulls.map(|nb| window_counts(nb, window));
    let out = sums_of(col, window);
    let nulls = validity(col.len(), window, min_periods.max(1), counts.as_deref());
    <T::Wide as ToArrow>::to_arrow(out, nulls)
}

pub(super) fn rolling_mean<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize) -> ArrayRef {
    let counts = col.nulls.map(|nb| window_counts(nb, window));
    let sums = sums_of(col, window);
    let out: Vec<f64> = match &counts {
        None => sums.iter().enumerate().map(|(i, &s)| T::wide_f64(s) / (i + 1).min(window) as f64).collect(),
        Some(c) => sums.iter().zip(c).map(|(&s, &k)| T::wide_f64(s) / k as f64).collect(),
    };
    let nulls = validity(col.len(), window, min_periods.max(1), counts.as_deref());
    f64::to_arrow(out, nulls)
}

/// count never is null for lack of rows (an empty window counts 0), only
/// below `min_periods`.
pub(super) fn rolling_count<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize) -> ArrayRef {
    let n = col.len();
    let (out, counts) = match col.nulls {
        None => ((0..n).map(|i| (i + 1).min(window) as i64).collect::<Vec<i64>>(), None),
        Some(nb) => {
            let c = window_counts(nb, window);
            (c.iter().map(|&k| k as i64).collect(), Some(c))
        }
    };
    let nulls = validity(n, window, min_periods, counts.as_deref());
    i64::to_arrow(out, nulls)
}
