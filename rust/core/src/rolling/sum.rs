//! Rolling sum / mean / count.
//!
//! Floats: Subtract-on-Evict (SlideSide paper §2) with every step
//! error-free: `new - old = d + e1` and `s + d = s' + e2` (TwoSum), the
//! error terms go to a compensation `c`, so `s + c` is the window's sum up
//! to the rounding of `c` itself. `d, e1` are off the loop-carried chain,
//! which is one add for `s` and one for `c` per row. The column runs as
//! segments of at most `max(16 window, 2^20)` rows, each started from an
//! exact sum of the window before it (the first from an empty window at row
//! 0, a group's first from the previous group's last chain), so error
//! accumulates over at most two segments; four at a time: the four chains interleave, and on x86-64
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
/// The column runs in groups of four segments, each segment a chain
/// started from the exact sum of the window before its first row ([`group`]).
/// When the window is at most a quarter of the column, the first segment
/// starts at row 0 from an empty window (its first `window` rows evict
/// nothing), so it needs no recomputation; otherwise the insert-only rows
/// `[0, window)` and the sliding rows run as two regions. A segment whose
/// compensation comes out NaN met an inf / NaN (or overflowed) and is
/// redone by [`counted_block`], so finite columns pay no pre-check pass.
pub(super) fn float_sums<T: Num>(x: &[T], window: usize) -> Vec<f64> {
    float_sums_scaled(x, window, 1.0)
}

/// The sums times `scale`, multiplied as they are stored (a mean needs no
/// second pass over the output; `scale = 1` changes nothing).
pub(super) fn float_sums_scaled<T: Num>(x: &[T], window: usize, scale: f64) -> Vec<f64> {
    let n = x.len();
    let mut out = buffer::<f64>(n);
    region(x, window, 0, n, scale, &mut out);
    out
}

/// Rows `[r0, r1)`, with `r0 == 0` or `r0 >= window`.
fn region<T: Num>(x: &[T], window: usize, r0: usize, r1: usize, scale: f64, out: &mut [f64]) {
    let len = r1 - r0;
    // Segments long enough that the restarts (three windows read per
    // group: the first segment continues the previous group's last chain)
    // cost little, short enough that an inf / NaN sends only a bounded
    // part of the column to the slow loop; the compensation's own rounding
    // stays negligible at these lengths. A multiple of 4 rows (the tile).
    let cap = window.saturating_mul(16).max(1 << 20);
    let segs = len.div_ceil(cap).next_multiple_of(4).max(4);
    let seg = len / segs / 4 * 4;
    let mode = if r1 <= window {
        INSERT
    } else if r0 < window {
        if seg < window {
            // Segments shorter than the window: the later segments' first
            // windows would reach before row 0; split at the window.
            let a = window.min(r1);
            region(x, window, r0, a, scale, out);
            region(x, window, a, r1, scale, out);
            return;
        }
        PAD0
    } else {
        SLIDE
    };
    let mut b0 = r0;
    // The state after the previous group's last row, i.e. the exact start
    // state of the next row (when that chain stayed finite).
    let mut carry: Option<(f64, f64)> = None;
    if seg >= 16 {
        for g in 0..segs / 4 {
            let mut st = [(0.0, 0.0); 4];
            for (k, v) in st.iter_mut().enumerate() {
                *v = match carry {
                    Some(c) if k == 0 => c,
                    _ => start_state(x, window, b0 + k * seg),
                };
            }
            let m = if g == 0 { mode } else if mode == PAD0 { SLIDE } else { mode };
            let (ok, end) = group(x, window, b0, seg, m, st, scale, out);
            carry = if ok[3] { Some(end) } else { None };
            for (k, good) in ok.into_iter().enumerate() {
                let s0 = b0 + k * seg;
                if !good {
                    counted_block(x, window, s0, s0 + seg, scale, &mut out[s0..s0 + seg]);
                }
            }
            b0 += 4 * seg;
        }
    }
    // The tail (or a short region): the scalar kernel.
    if b0 < r1 {
        let finite = match carry {
            Some(_) => all_finite(&x[b0..r1]) && all_finite(&x[b0.max(window) - window..r1.max(window) - window]),
            None => all_finite(&x[b0.saturating_sub(window)..r1]),
        };
        if finite {
            finite_block(x, window, b0, r1, carry, scale, &mut out[b0..r1]);
        } else {
            counted_block(x, window, b0, r1, scale, &mut out[b0..r1]);
        }
    }
}

/// Group modes: every row slides; every row only inserts (`r1 <= window`);
/// the first segment starts at row 0 and inserts only for its first
/// `window` rows, the others slide (needs `seg >= window`).
const SLIDE: u8 = 0;
const INSERT: u8 = 1;
const PAD0: u8 = 2;

/// Four segments `[b0 + k seg, b0 + (k+1) seg)` from start states `st`:
/// per segment, whether it stayed finite (else its rows are garbage and
/// must be redone), and the last segment's end state.
fn group<T: Num>(
    x: &[T],
    window: usize,
    b0: usize,
    seg: usize,
    mode: u8,
    st: [(f64, f64); 4],
    scale: f64,
    out: &mut [f64],
) -> ([bool; 4], (f64, f64)) {
    assert!(b0 + 4 * seg <= x.len() && out.len() == x.len());
    assert!(match mode {
        SLIDE => b0 >= window,
        INSERT => b0 + 4 * seg <= window,
        _ => b0 == 0 && seg >= window,
    });
    let fin = st.map(|(s, c)| s.is_finite() && c.is_finite());
    #[cfg(target_arch = "x86_64")]
    {
        if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>() && std::is_x86_feature_detected!("avx2") {
            // SAFETY: T is f64 (same type, checked above), AVX2 is present,
            // and the bounds the kernel relies on are asserted above.
            let xf = unsafe { std::slice::from_raw_parts(x.as_ptr() as *const f64, x.len()) };
            let (ok, end) = unsafe {
                match mode {
                    SLIDE => avx2::group::<SLIDE>(xf, window, b0, seg, st, scale, out),
                    INSERT => avx2::group::<INSERT>(xf, window, b0, seg, st, scale, out),
                    _ => avx2::group::<PAD0>(xf, window, b0, seg, st, scale, out),
                }
            };
            return ([0, 1, 2, 3].map(|k| ok[k] && fin[k]), end);
        }
    }
    let (ok, end) = group_portable(x, window, b0, seg, st, scale, out);
    ([0, 1, 2, 3].map(|k| ok[k] && fin[k]), end)
}

/// Start state of the segment beginning at row `r`: the exact sum of its
/// first window's rows before `r`.
fn start_state<T: Num>(x: &[T], window: usize, r: usize) -> (f64, f64) {
    let xs = &x[r.saturating_sub(window)..r];
    #[cfg(target_arch = "x86_64")]
    {
        if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>() && std::is_x86_feature_detected!("avx2") {
            // SAFETY: T is f64 (checked above), and AVX2 is present.
            return unsafe { avx2::exact_sum(std::slice::from_raw_parts(xs.as_ptr() as *const f64, xs.len())) };
        }
    }
    exact_sum(xs)
}

/// The portable group: four scalar chains side by side (independent, so
/// their latencies overlap).
fn group_portable<T: Num>(
    x: &[T],
    window: usize,
    b0: usize,
    seg: usize,
    st: [(f64, f64); 4],
    scale: f64,
    out: &mut [f64],
) -> ([bool; 4], (f64, f64)) {
    let mut s = st.map(|v| v.0);
    let mut c = st.map(|v| v.1);
    for j in 0..seg {
        for k in 0..4 {
            let i = b0 + k * seg + j;
            let old = if i >= window { x[i - window].to_f64() } else { 0.0 };
            let (d, e1) = two_sum(x[i].to_f64(), -old);
            let (t, e2) = two_sum(s[k], d);
            s[k] = t;
            c[k] += e1 + e2;
            out[i] = (s[k] + c[k]) * scale;
        }
    }
    (c.map(|v| v.is_finite()), (s[3], c[3]))
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The group kernel on AVX2: lane `k` of every vector is segment `k`,
    //! so the loop-carried adds (`s`, `c`) run four segments at once. Rows
    //! come in 4x4 tiles (four rows of each segment), transposed in
    //! registers on the way in and out.
    use std::arch::x86_64::*;

    use super::{INSERT, PAD0};
    use crate::ops::reduce::transpose4 as transpose;

    #[inline(always)]
    unsafe fn tile(p: *const f64, seg: usize) -> [__m256d; 4] {
        transpose([
            _mm256_loadu_pd(p),
            _mm256_loadu_pd(p.add(seg)),
            _mm256_loadu_pd(p.add(2 * seg)),
            _mm256_loadu_pd(p.add(3 * seg)),
        ])
    }

    /// Evicted values of rows `i..i + 4` of a segment starting at row 0:
    /// zero before row `window`.
    #[inline(always)]
    unsafe fn old_row0(x: &[f64], i: usize, window: usize) -> __m256d {
        if i >= window {
            _mm256_loadu_pd(x.as_ptr().add(i - window))
        } else if i + 4 <= window {
            _mm256_setzero_pd()
        } else {
            let v: [f64; 4] = std::array::from_fn(|t| if i + t >= window { x[i + t - window] } else { 0.0 });
            _mm256_loadu_pd(v.as_ptr())
        }
    }

    /// [`super::exact_sum`] compiled for AVX2 (its lanes fill two vectors).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn exact_sum(xs: &[f64]) -> (f64, f64) {
        super::exact_sum(xs)
    }

    /// Bounds are the caller's (`super::group` asserts them).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn group<const MODE: u8>(
        x: &[f64],
        window: usize,
        b0: usize,
        seg: usize,
        st: [(f64, f64); 4],
        scale: f64,
        out: &mut [f64],
    ) -> ([bool; 4], (f64, f64)) {
        let s0 = st.map(|v| v.0);
        let c0 = st.map(|v| v.1);
        let mut s = _mm256_loadu_pd(s0.as_ptr());
        let mut c = _mm256_loadu_pd(c0.as_ptr());
        let sc = _mm256_set1_pd(scale);
        let xin = x.as_ptr().add(b0);
        let o = out.as_mut_ptr().add(b0);
        let mut j = 0;
        while j < seg {
            let a = tile(xin.add(j), seg);
            let b = match MODE {
                INSERT => a,
                // Lanes 1..3 slide from their first row (seg >= window).
                PAD0 => {
                    let p = xin.add(j + seg - window);
                    transpose([
                        old_row0(x, b0 + j, window),
                        _mm256_loadu_pd(p),
                        _mm256_loadu_pd(p.add(seg)),
                        _mm256_loadu_pd(p.add(2 * seg)),
                    ])
                }
                _ => tile(xin.add(j).sub(window), seg),
            };
            let mut r = [_mm256_setzero_pd(); 4];
            for t in 0..4 {
                // d + e1 = a - b exactly (TwoSum), off the chain.
                let (d, e1) = if MODE == INSERT {
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
                c = _mm256_add_pd(c, if MODE == INSERT { e2 } else { _mm256_add_pd(e1, e2) });
                r[t] = _mm256_mul_pd(_mm256_add_pd(s, c), sc);
            }
            let r = transpose(r);
            for (k, v) in r.into_iter().enumerate() {
                _mm256_storeu_pd(o.add(k * seg + j), v);
            }
            j += 4;
        }
        let mut sf = [0.0; 4];
        let mut cf = [0.0; 4];
        _mm256_storeu_pd(sf.as_mut_ptr(), s);
        _mm256_storeu_pd(cf.as_mut_ptr(), c);
        (cf.map(|v| v.is_finite()), (sf[3], cf[3]))
    }
}

#[inline(always)]
fn finite_block<T: Num>(x: &[T], window: usize, b0: usize, b1: usize, start: Option<(f64, f64)>, scale: f64, out: &mut [f64]) {
    let (mut s, mut c) = start.unwrap_or_else(|| exact_sum(&x[b0.saturating_sub(window)..b0]));
    // Rows before `window` only insert (partial windows at the start).
    let mid = window.clamp(b0, b1);
    for (o, v) in out[..mid - b0].iter_mut().zip(&x[b0..mid]) {
        let (t, e) = two_sum(s, v.to_f64());
        s = t;
        c += e;
        *o = (s + c) * scale;
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
        *o = (s + c) * scale;
    }
}

/// The same with non-finite values counted apart (`FSum`), per row.
#[cold]
fn counted_block<T: Num>(x: &[T], window: usize, b0: usize, b1: usize, scale: f64, out: &mut [f64]) {
    let mut acc = FSum::default();
    for v in &x[b0.saturating_sub(window)..b0] {
        acc = acc.add(&FSum::lift(v.to_f64()));
    }
    for i in b0..b1 {
        acc = acc.add(&FSum::lift(x[i].to_f64()));
        if i >= window {
            acc = acc.sub(&FSum::lift(x[i - window].to_f64()));
        }
        out[i - b0] = acc.value() * scale;
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
    if col.nulls.is_none() && std::any::TypeId::of::<T::Wide>() == std::any::TypeId::of::<f64>() {
        // Floats without nulls: the kernel scales by 1 / window as it
        // stores (no second pass); the partial windows at the start are
        // rescaled (within 3 ulps of sum / count).
        let w = window as f64;
        let mut out = float_sums_scaled(col.values, window, 1.0 / w);
        let k = window.min(out.len());
        for (i, o) in out[..k].iter_mut().enumerate() {
            *o = *o * w / (i + 1) as f64;
        }
        let nulls = validity(col.len(), window, min_periods.max(1), None);
        return f64::to_arrow(out, nulls);
    }
    // Divide in place: a second output buffer would cost as much in page
    // faults as the sums themselves.
    let mut out = T::into_f64s(sums_of(col, window));
    match &counts {
        None => {
            let k = window.min(out.len());
            for (i, o) in out[..k].iter_mut().enumerate() {
                *o /= (i + 1) as f64;
            }
            let w = window as f64;
            out[k..].iter_mut().for_each(|o| *o /= w);
        }
        Some(c) => out.iter_mut().zip(c).for_each(|(o, &k)| *o /= k as f64),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Several groups (the carried start state), with inf / NaN in
    /// segments and start windows, against the counted loop.
    #[test]
    fn groups_with_non_finite_match_counted() {
        let n = 5_000_000;
        let mut st = 0x2545_F491_4F6C_DD1Du64;
        let mut x: Vec<f64> = (0..n)
            .map(|_| {
                st ^= st << 13;
                st ^= st >> 7;
                st ^= st << 17;
                (st >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            })
            .collect();
        for (i, v) in [(1_300_000, f64::NAN), (2_499_990, f64::INFINITY), (3_000_005, f64::NEG_INFINITY)] {
            x[i] = v;
        }
        for w in [16, 1000, 300_000] {
            let got = float_sums(&x, w);
            let mut want = vec![0.0; n];
            counted_block(&x, w, 0, n, 1.0, &mut want);
            for i in 0..n {
                let (a, b) = (got[i], want[i]);
                assert!(a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-9 * b.abs().max(1.0), "w {w} row {i}: {a} vs {b}");
            }
        }
    }
}
