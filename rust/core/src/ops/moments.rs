//! var / std, sample (ddof=1, Spark's `variance`/`stddev`) and population.
//!
//! Partials are (count, mean, M2) merged with Chan et al.'s pairwise formula,
//! never the naive sum of squares, the mean kept in double-double, so
//! 1e9 + small noise keeps full precision.
//! Non-finite inputs are counted apart (any inf or NaN in the window gives
//! NaN, as in Spark).
//!
//! Not invertible, although RA Table 2 lists stddev as invertible through
//! (count, sum, sum of squares): that inverse is exactly the naive formula
//! this module avoids, and solving Chan's merge for the older half loses
//! ~eps x M2 of the whole window when a large value leaves, so a window of
//! small integers after a 1e6 reads 18.0001 instead of 18. Subtract-on-Evict
//! therefore refuses var/std, and SlideSide takes its non-invertible scheme.

use std::marker::PhantomData;

use super::Num;
use crate::monoid::{AggOp, Monoid};

#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct Moments {
    /// finite values folded in
    pub n: f64,
    /// The mean, as the unevaluated sum `mean + mean_lo` (double-double):
    /// Chan's `delta = mean_b - mean_a` then carries no rounding of the
    /// means into M2 (in plain f64 the variance was off by about
    /// ulp(|mean|) / std relative: 3e-2 on int64 values 1e15 +- 5).
    pub mean: f64,
    pub m2: f64,
    /// non-finite values folded in
    pub bad: u32,
    pub mean_lo: f64,
}

impl Moments {
    #[inline(always)]
    pub fn lift(x: f64) -> Moments {
        if x.is_finite() {
            Moments { n: 1.0, mean: x, m2: 0.0, bad: 0, mean_lo: 0.0 }
        } else {
            Moments { bad: 1, ..Moments::default() }
        }
    }

    /// Chan, Golub, LeVeque: merge two (n, mean, M2), the means in
    /// double-double: `delta` is the difference of the exact means to a
    /// rounding of `delta` itself (`b.mean - a.mean` is exact when they are
    /// within a factor 2, Sterbenz), and the new mean's TwoSum error goes
    /// to `mean_lo`.
    #[inline(always)]
    pub fn merge(a: &Moments, b: &Moments) -> Moments {
        let bad = a.bad + b.bad;
        if a.n == 0.0 {
            return Moments { bad, ..*b };
        }
        if b.n == 0.0 {
            return Moments { bad, ..*a };
        }
        let n = a.n + b.n;
        let delta = (b.mean - a.mean) + (b.mean_lo - a.mean_lo);
        let (mean, e) = super::arith::two_sum(a.mean, delta * (b.n / n));
        // not renormalised: `mean_lo` sums TwoSum errors, each at most half
        // an ulp of the mean, so it stays far below the mean
        let mean_lo = a.mean_lo + e;
        let m2 = a.m2 + b.m2 + delta * delta * (a.n * b.n / n);
        Moments { n, mean, m2, bad, mean_lo }
    }
}

/// The moments of a slice of finite values by the corrected two-pass
/// formula: `m0` the rounded mean, then `r = sum(x - m0)` and
/// `q = sum((x - m0)^2)`; the mean is `m0 + r / n` (kept in double-double)
/// and `M2 = q - r^2 / n`. The deviations are exact where the values lie
/// within a factor 2 of the mean (Sterbenz), so a large offset costs no
/// precision. `None` for an empty slice, a non-finite value, or squares
/// that overflow (the caller merges row by row, counting those apart).
fn pane_moments<T: Num>(xs: &[T]) -> Option<Moments> {
    const L: usize = 4;
    if xs.is_empty() {
        return None;
    }
    let n = xs.len() as f64;
    let mut s = [0.0f64; L];
    let mut it = xs.chunks_exact(L);
    for ch in &mut it {
        for k in 0..L {
            s[k] += ch[k].to_f64();
        }
    }
    let total = s.iter().sum::<f64>() + it.remainder().iter().map(|x| x.to_f64()).sum::<f64>();
    if !total.is_finite() {
        return None;
    }
    let m0 = total / n;
    let (mut r, mut q) = ([0.0f64; L], [0.0f64; L]);
    let mut it = xs.chunks_exact(L);
    for ch in &mut it {
        for k in 0..L {
            let d = ch[k].to_f64() - m0;
            r[k] += d;
            q[k] += d * d;
        }
    }
    let (mut r, mut q) = (r.iter().sum::<f64>(), q.iter().sum::<f64>());
    for x in it.remainder() {
        let d = x.to_f64() - m0;
        r += d;
        q += d * d;
    }
    if !q.is_finite() {
        return None;
    }
    let (mean, mean_lo) = super::arith::two_sum(m0, r / n);
    Some(Moments { n, mean, m2: (q - r * r / n).max(0.0), bad: 0, mean_lo })
}

/// `SAMPLE`: divide by n - 1 (null below 2 values, as Spark); `SQRT`: std.
pub struct Var<T, const SAMPLE: bool, const SQRT: bool>(PhantomData<T>);

impl<T: Num, const SAMPLE: bool, const SQRT: bool> Monoid for Var<T, SAMPLE, SQRT> {
    type Agg = Moments;
    const NAME: &'static str = match (SAMPLE, SQRT) {
        (true, false) => "var",
        (true, true) => "std",
        (false, false) => "var_pop",
        (false, true) => "std_pop",
    };
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> Moments {
        Moments::default()
    }
    #[inline(always)]
    fn combine(a: &Moments, b: &Moments) -> Moments {
        Moments::merge(a, b)
    }
}

impl<T: Num, const SAMPLE: bool, const SQRT: bool> AggOp for Var<T, SAMPLE, SQRT> {
    type In = T;
    type Out = f64;
    #[inline(always)]
    fn lift(x: T, _: i64) -> Moments {
        Moments::lift(x.to_f64())
    }
    /// A pane of rows at once: the corrected two-pass formula (Björck;
    /// Chan, Golub, LeVeque 1983 §3) in place of a merge per row, which was
    /// most of a stream's time.
    #[inline]
    fn fold_rows(acc: &mut Moments, xs: &[T], pos0: i64) {
        match pane_moments(xs) {
            Some(p) => Self::combine_into(acc, &p),
            None => crate::monoid::fold_each::<Self>(acc, xs, pos0),
        }
    }
    #[inline(always)]
    fn lower(a: &Moments) -> Option<f64> {
        let total = a.n + a.bad as f64;
        let ddof = if SAMPLE { 1.0 } else { 0.0 };
        if total <= ddof {
            return None;
        }
        let v = if a.bad > 0 { f64::NAN } else { a.m2 / (a.n - ddof) };
        Some(if SQRT { v.sqrt() } else { v })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pane folded at once equals the row-by-row merges, at a large
    /// offset too (where the rounded first mean alone leaves M2 ~1e-3 off),
    /// and with a non-finite value in it (counted apart, row by row).
    #[test]
    fn pane_fold_equals_row_merges() {
        type V = Var<i64, true, false>;
        let mut st = 0x2545_F491_4F6C_DD1Du64;
        let xs: Vec<i64> = (0..1000)
            .map(|_| {
                st ^= st << 13;
                st ^= st >> 7;
                st ^= st << 17;
                1_000_000_000_000_000 + (st % 11) as i64 - 5
            })
            .collect();
        let exact = {
            let m = xs.iter().map(|&x| (x - 1_000_000_000_000_000) as f64).sum::<f64>() / 1000.0;
            xs.iter().map(|&x| ((x - 1_000_000_000_000_000) as f64 - m).powi(2)).sum::<f64>() / 999.0
        };
        for pane in [1usize, 7, 10, 64, 1000] {
            let (mut folded, mut merged) = (Moments::default(), Moments::default());
            for c in xs.chunks(pane) {
                V::fold_rows(&mut folded, c, 0);
                for &x in c {
                    merged = Moments::merge(&merged, &V::lift(x, 0));
                }
            }
            for m in [folded, merged] {
                let v = V::lower(&m).unwrap();
                assert!((v - exact).abs() <= 1e-12 * exact, "pane {pane}: {v} vs {exact}");
            }
        }
        let mut acc = Moments::default();
        Var::<f64, true, false>::fold_rows(&mut acc, &[1.0, f64::INFINITY, 3.0], 0);
        assert_eq!((acc.n, acc.bad), (2.0, 1));
        assert!(Var::<f64, true, false>::lower(&acc).unwrap().is_nan());
    }

    #[test]
    fn chan_merge_keeps_precision_on_large_offsets() {
        let xs: Vec<f64> = (0..1000).map(|i| 1e9 + ((i * 7919) % 13) as f64 * 1e-3).collect();
        let mean = xs.iter().map(|x| x - 1e9).sum::<f64>() / xs.len() as f64;
        let exact = xs.iter().map(|x| (x - 1e9 - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
        let mut acc = Moments::default();
        for &x in &xs {
            acc = Moments::merge(&acc, &Moments::lift(x));
        }
        let got = <Var<f64, true, false> as AggOp>::lower(&acc).unwrap();
        // The double-double mean keeps the variance of the (quantised)
        // inputs to rounding; the naive sum of squares is off by orders of
        // magnitude here.
        assert!((got - exact).abs() <= 1e-12 * exact, "{got} vs {exact}");
        // a checkpoint keeps `mean_lo`, and reads partials saved without it
        use crate::codec::Codec;
        assert_ne!(acc.mean_lo, 0.0);
        let mut bytes = vec![];
        acc.encode(&mut bytes);
        assert_eq!(Moments::decode(&mut &bytes[..]).unwrap(), acc);
        let plain = Moments::lift(2.5);
        let mut bytes = vec![];
        plain.encode(&mut bytes);
        assert_eq!(bytes.len(), 3 * 8 + 4);
        assert_eq!(Moments::decode(&mut &bytes[..]).unwrap(), plain);
        let n = xs.len() as f64;
        let (s1, s2) = xs.iter().fold((0.0, 0.0), |(a, b), x| (a + x, b + x * x));
        let naive = (s2 - s1 * s1 / n) / (n - 1.0);
        assert!((naive - exact).abs() > 1e3 * (got - exact).abs());
    }
}
