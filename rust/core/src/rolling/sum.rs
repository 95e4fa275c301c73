//! Rolling sum / mean / count.
//!
//! Floats: Subtract-on-Evict (SlideSide paper §2) with every step
//! error-free: `new - old = d + e1` and `s + d = s' + e2` (TwoSum), the
//! error terms go to a compensation `c`, so `s + c` is the window's sum up
//! to the rounding of `c` itself. Every block of `max(8 window, 4096)` rows
//! restarts from an exact recomputation of the window (a compensated sum
//! over 8 independent lanes, which vectorises), so nothing can accumulate
//! across the column. Only `s` and `c` are loop-carried, one add each, and
//! past the first window a block runs as two lanes (its halves).
//!
//! Non-finite values: a block whose rows (or the previous block's) hold
//! inf or NaN runs a slower loop that counts them apart, as `FSum` does, so
//! that evicting an inf restores the finite sum. Integers: exact wrapping
//! i64 Subtract-on-Evict.

use arrow_array::ArrayRef;

use super::{buffer, filled, validity, window_counts, FastNum};
use crate::engine::{Column, ToArrow};
use crate::ops::arith::two_sum;
use crate::ops::{FSum, Num, SumAcc};

/// Exact-ish sum of a slice as `(s, c)`: 8 Neumaier lanes (independent, so
/// the loop vectorises and is not latency bound), then merged with TwoSum.
#[inline]
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
pub(super) fn float_sums<T: Num>(x: &[T], window: usize) -> Vec<f64> {
    let n = x.len();
    let mut out = buffer::<f64>(n);
    // Restart often enough that `c`'s own rounding stays negligible, rarely
    // enough that the two recomputations of a window per block (one per
    // lane) cost a fraction of a pass.
    let block = window.saturating_mul(8).max(4096);
    let mut prev_bad = false;
    let mut b0 = 0;
    while b0 < n {
        let b1 = (b0 + block).min(n);
        let bad = !all_finite(&x[b0..b1]);
        // The block reads rows back to b0 - window, inside the previous block.
        if bad || prev_bad {
            counted_block(x, window, b0, b1, &mut out[b0..b1]);
        } else if b0 >= window && b1 - b0 >= 64 {
            finite_block2(x, window, b0, b1, &mut out[b0..b1]);
        } else {
            finite_block(x, window, b0, b1, &mut out[b0..b1]);
        }
        prev_bad = bad;
        b0 = b1;
    }
    out
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

/// `finite_block` for a block past the first window, as two independent
/// lanes (the block's two halves, each restarted exactly): the same
/// operations on `[f64; 2]`, which the SLP vectoriser packs, so the adds
/// that bound the scalar loop's throughput run two rows at a time.
#[inline(always)]
fn finite_block2<T: Num>(x: &[T], window: usize, b0: usize, b1: usize, out: &mut [f64]) {
    let h = (b1 - b0) / 2;
    let r1 = b0 + h;
    let (p0, q0) = exact_sum(&x[b0 - window..b0]);
    let (p1, q1) = exact_sum(&x[r1 - window..r1]);
    let (mut s, mut c) = ([p0, p1], [q0, q1]);
    let (o0, o1) = out.split_at_mut(h);
    let rows = o0
        .iter_mut()
        .zip(o1.iter_mut())
        .zip(x[b0..r1].iter().zip(&x[r1..r1 + h]))
        .zip(x[b0 - window..r1 - window].iter().zip(&x[r1 - window..r1 + h - window]));
    for (((oa, ob), (na, nb)), (da, db)) in rows {
        let new = [na.to_f64(), nb.to_f64()];
        let old = [da.to_f64(), db.to_f64()];
        let mut r = [0.0; 2];
        for k in 0..2 {
            let (d, e1) = two_sum(new[k], -old[k]);
            let (t, e2) = two_sum(s[k], d);
            s[k] = t;
            c[k] += e1 + e2;
            r[k] = s[k] + c[k];
        }
        *oa = r[0];
        *ob = r[1];
    }
    // An odd block leaves its last row to lane 1.
    if r1 + h < b1 {
        let i = b1 - 1;
        let (d, e1) = two_sum(x[i].to_f64(), -x[i - window].to_f64());
        let (t, e2) = two_sum(s[1], d);
        out[i - b0] = t + (c[1] + e1 + e2);
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
