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
//! a few ulps plus `O(eps^2 n (R^2 + range^2))`, see docs/DESIGN.md.
//!
//! Speed: `LANES` contiguous segments of the column run in lock step, one
//! per vector lane (the loop-carried adds of one segment would otherwise
//! bound it at one add latency per row), compiled for AVX2 + FMA when the CPU
//! has them (detected at run time), the same source portable otherwise.
//!
//! Non-finite values propagate through the sums: a window holding inf or
//! NaN gives NaN, as Spark and the generic `Moments` do. Null rows have
//! weight 0 (filled with the last finite value, so `y` stays finite).

use arrow_array::ArrayRef;

use super::{buffer, validity, window_counts, FastNum};
use crate::engine::{Column, ToArrow};
use crate::ops::arith::two_sum;
use crate::ops::Num;

/// Segments in lock step.
const LANES: usize = 4;

/// Rolling variance (`ddof` 1 or 0), or its square root.
pub(super) fn rolling_var<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize, ddof: usize, sqrt: bool) -> ArrayRef {
    let n = col.len();
    let counts = col.nulls.map(|nb| window_counts(nb, window));
    let mut out = buffer::<f64>(n);
    let f64s: Option<&[f64]> = if col.nulls.is_none() { as_f64(col.values) } else { None };
    let owned: Vec<f64>;
    let x = match f64s {
        Some(x) => x,
        None => {
            owned = finite_filled(col);
            &owned
        }
    };
    let weights: Option<Vec<f64>> = col.nulls.map(|nb| nb.iter().map(|ok| ok as u8 as f64).collect());
    var_into(x, weights.as_deref(), window, ddof as f64, sqrt, &mut out);
    let nulls = validity(n, window, min_periods.max(ddof + 1), counts.as_deref());
    f64::to_arrow(out, nulls)
}

/// The values as f64 without a copy when they are f64.
fn as_f64<T: Num>(xs: &[T]) -> Option<&[f64]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>())
        // SAFETY: T is f64 (checked just above).
        .then(|| unsafe { std::slice::from_raw_parts(xs.as_ptr() as *const f64, xs.len()) })
}

/// The values as f64, null slots holding the last finite value before them
/// (0 at first): a null has weight 0, and a finite filler keeps `0 * y` 0.
fn finite_filled<T: Num>(col: &Column<T>) -> Vec<f64> {
    let mut out = buffer::<f64>(col.len());
    match col.nulls {
        None => out.iter_mut().zip(col.values).for_each(|(o, v)| *o = v.to_f64()),
        Some(nb) => {
            let mut last = 0.0;
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
    out
}

/// `out[i]` = the variance (or std) of rows `(i - window, i]` of `x`
/// weighted by `wt` (1 / 0: valid / null; `None`: all valid). Rows whose
/// window holds `ddof` values or fewer get garbage, masked by the caller.
pub(super) fn var_into(x: &[f64], wt: Option<&[f64]>, window: usize, ddof: f64, sqrt: bool, out: &mut [f64]) {
    let n = x.len();
    assert!(out.len() == n && wt.is_none_or(|w| w.len() == n) && window >= 1);
    if n == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the features are present.
            unsafe { avx2::run(x, wt, window, ddof, sqrt, out) };
            return;
        }
    }
    run::<false>(x, wt, window, ddof, sqrt, out);
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    /// [`super::run`] compiled with AVX2 and FMA (the lane arrays become
    /// vectors; `mul_add` one instruction).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn run(x: &[f64], wt: Option<&[f64]>, window: usize, ddof: f64, sqrt: bool, out: &mut [f64]) {
        super::run::<true>(x, wt, window, ddof, sqrt, out)
    }
}

#[inline(always)]
fn run<const FMA: bool>(x: &[f64], wt: Option<&[f64]>, window: usize, ddof: f64, sqrt: bool, out: &mut [f64]) {
    let n = x.len();
    // Lanes only when every lane but the first starts a full window in
    // (then only lane 0's first block has partial windows).
    let len = n / LANES;
    let done = if len >= window.max(64) {
        let starts: [usize; LANES] = std::array::from_fn(|k| k * len);
        match wt {
            None => lanes::<LANES, FMA, false>(x, &[], window, starts, len, ddof, sqrt, out),
            Some(w) => lanes::<LANES, FMA, true>(x, w, window, starts, len, ddof, sqrt, out),
        }
        LANES * len
    } else {
        0
    };
    if done < n {
        match wt {
            None => lanes::<1, FMA, false>(x, &[], window, [done], n - done, ddof, sqrt, out),
            Some(w) => lanes::<1, FMA, true>(x, w, window, [done], n - done, ddof, sqrt, out),
        }
    }
}

/// Exact product: `a * b = p + e`.
#[inline(always)]
fn two_prod<const FMA: bool>(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    if FMA {
        (p, a.mul_add(b, -p))
    } else {
        // Dekker / Veltkamp splitting.
        let split = |v: f64| {
            let c = 134_217_729.0 * v;
            let h = c - (c - v);
            (h, v - h)
        };
        let (ah, al) = split(a);
        let (bh, bl) = split(b);
        (p, ((ah * bh - p) + ah * bl + al * bh) + al * bl)
    }
}

/// Partial sums of `K` segments: `S1 = s1 + c1`, `S2 = s2 + c2`, count `n`.
#[derive(Clone, Copy)]
struct Acc<const K: usize> {
    s1: [f64; K],
    c1: [f64; K],
    s2: [f64; K],
    c2: [f64; K],
    n: [f64; K],
}

impl<const K: usize> Acc<K> {
    const ZERO: Self = Acc { s1: [0.0; K], c1: [0.0; K], s2: [0.0; K], c2: [0.0; K], n: [0.0; K] };

    /// Fold in `y` with weight `v` (`y` is already 0 where `v` is 0). Only
    /// `s1`, `s2`, `c1`, `c2` and `n` are loop-carried, one add each.
    #[inline(always)]
    fn add<const FMA: bool>(&mut self, y: [f64; K], v: [f64; K]) {
        for k in 0..K {
            let (t, e) = two_sum(self.s1[k], y[k]);
            self.s1[k] = t;
            self.c1[k] += e;
            let (p, pe) = two_prod::<FMA>(y[k], y[k]);
            let (t, e) = two_sum(self.s2[k], p);
            self.s2[k] = t;
            self.c2[k] += e + pe;
            self.n[k] += v[k];
        }
    }
}

/// Suffix partials of the previous block, per lane: entry `j` holds rows
/// `[start + j, start + window)` of that block; entry `window` is empty.
struct Suffix<const K: usize> {
    s1: Vec<[f64; K]>,
    c1: Vec<[f64; K]>,
    s2: Vec<[f64; K]>,
    c2: Vec<[f64; K]>,
    n: Vec<[f64; K]>,
}

impl<const K: usize> Suffix<K> {
    fn new(window: usize) -> Self {
        let z = || vec![[0.0; K]; window + 1];
        Suffix { s1: z(), c1: z(), s2: z(), c2: z(), n: z() }
    }

    #[inline(always)]
    fn set(&mut self, j: usize, a: &Acc<K>) {
        self.s1[j] = a.s1;
        self.c1[j] = a.c1;
        self.s2[j] = a.s2;
        self.c2[j] = a.c2;
        self.n[j] = a.n;
    }

    #[inline(always)]
    fn set_lane(&mut self, j: usize, k: usize, a: &Acc<1>) {
        self.s1[j][k] = a.s1[0];
        self.c1[j][k] = a.c1[0];
        self.s2[j][k] = a.s2[0];
        self.c2[j][k] = a.c2[0];
        self.n[j][k] = a.n[0];
    }
}

/// Rows `[starts[k], starts[k] + len)` for each lane `k`, in lock step.
/// Needs `starts[k] >= window` for `k >= 1` (only lane 0 may hold the
/// partial windows at the start).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn lanes<const K: usize, const FMA: bool, const NULLS: bool>(
    x: &[f64],
    wt: &[f64],
    window: usize,
    starts: [usize; K],
    len: usize,
    ddof: f64,
    sqrt: bool,
    out: &mut [f64],
) {
    assert!(starts.iter().all(|&a| a + len <= x.len()) && out.len() == x.len() && (!NULLS || wt.len() == x.len()));
    assert!(starts.iter().skip(1).all(|&a| a >= window));
    let weight = |i: usize| if NULLS { wt[i] } else { 1.0 };
    let mut suf = Suffix::<K>::new(window);
    // The suffixes of the rows before each lane (none before row 0), with
    // the shift of the lane's first block.
    for (k, &a) in starts.iter().enumerate() {
        let shift = x[a];
        let mut acc = Acc::<1>::ZERO;
        for j in (1..window).rev() {
            if a + j >= window {
                let r = a + j - window;
                let v = weight(r);
                acc.add::<FMA>([(x[r] - shift) * v], [v]);
            }
            suf.set_lane(j, k, &acc);
        }
    }
    let full_n = window as f64;
    let (inv_n, inv_d) = (1.0 / full_n, 1.0 / (full_n - ddof));
    let mut off = 0;
    while off < len {
        let blen = (len - off).min(window);
        let base: [usize; K] = std::array::from_fn(|k| starts[k] + off);
        let shift: [f64; K] = base.map(|b| x[b]);
        // Partial windows (lane 0's first block) or nulls: the count varies.
        let varying = NULLS || base[0] < window;
        let mut acc = Acc::<K>::ZERO;
        for j in 0..blen {
            let v: [f64; K] = base.map(|b| weight(b + j));
            let y: [f64; K] = std::array::from_fn(|k| (x[base[k] + j] - shift[k]) * v[k]);
            acc.add::<FMA>(y, v);
            let (p1, q1, p2, q2, pn) = (&suf.s1[j + 1], &suf.c1[j + 1], &suf.s2[j + 1], &suf.c2[j + 1], &suf.n[j + 1]);
            let r: [f64; K] = std::array::from_fn(|k| {
                let (a1, e1) = two_sum(acc.s1[k], p1[k]);
                let (a2, e2) = two_sum(acc.s2[k], p2[k]);
                let lo1 = e1 + (acc.c1[k] + q1[k]);
                let lo2 = e2 + (acc.c2[k] + q2[k]);
                let (iv, id) = if varying {
                    let cnt = acc.n[k] + pn[k];
                    (1.0 / cnt, 1.0 / (cnt - ddof))
                } else {
                    (inv_n, inv_d)
                };
                let cnt = if varying { acc.n[k] + pn[k] } else { full_n };
                finish::<FMA>(a1, lo1, a2, lo2, cnt, iv, id, sqrt)
            });
            for k in 0..K {
                out[base[k] + j] = r[k];
            }
        }
        // This block's suffixes for the next block, with its shift.
        if off + window < len {
            let shift: [f64; K] = base.map(|b| x[b + window]);
            let mut acc = Acc::<K>::ZERO;
            for j in (1..window).rev() {
                let v: [f64; K] = base.map(|b| weight(b + j));
                let y: [f64; K] = std::array::from_fn(|k| (x[base[k] + j] - shift[k]) * v[k]);
                acc.add::<FMA>(y, v);
                suf.set(j, &acc);
            }
        }
        off += window;
    }
}

/// `M2 = S2 - 2 m S1 + n m^2` with `m = S1 / n` rounded (module comment),
/// divided by `n - ddof`; `S1 = s1 + c1`, `S2 = s2 + c2`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn finish<const FMA: bool>(s1: f64, c1: f64, s2: f64, c2: f64, n: f64, inv_n: f64, inv_d: f64, sqrt: bool) -> f64 {
    let m = s1 * inv_n;
    // m S1 = ph + pl + m c1, exactly but for the last product.
    let (ph, pl) = two_prod::<FMA>(m, s1);
    // r = S1 - n m, small: its leading part exactly.
    let (q, qe) = two_prod::<FMA>(n, m);
    let r = ((s1 - q) - qe) + c1;
    // S2 >= m S1 up to rounding: when they are close the subtraction is
    // exact (Sterbenz), else its rounding is relative to the result.
    let d = s2 - ph;
    let m2 = d + (((c2 - pl) - m * c1) - m * r);
    // Rounding can leave a zero variance a hair negative; NaN stays NaN.
    let m2 = if m2 < 0.0 { 0.0 } else { m2 };
    let v = m2 * inv_d;
    if sqrt {
        v.sqrt()
    } else {
        v
    }
}

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
                } else {
                    run::<false>(&x, None, w, ddof, false, &mut out);
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
