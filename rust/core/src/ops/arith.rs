//! count, sum, mean, geomean: invertible and commutative (RA Table 2), so
//! Subtract-on-Evict may run them.
//!
//! Float sums are not associative. `FSum` keeps a Neumaier-compensated sum
//! (the running error term is exact per step, TwoSum) and counts non-finite
//! inputs apart from the finite sum, so that evicting an `inf` or `NaN`
//! restores the exact finite state instead of leaving `inf - inf = NaN`
//! behind: the inverse is exact up to the compensated rounding.

use std::marker::PhantomData;

use super::Num;
use crate::monoid::{AggOp, Monoid};

/// Accumulator behind sum and mean.
pub trait SumAcc: Copy + Default + std::fmt::Debug + Send + Sync + crate::codec::Codec + 'static {
    /// Non-null rows folded in.
    fn n(&self) -> i64;
    fn add(&self, o: &Self) -> Self;
    fn sub(&self, o: &Self) -> Self;
    fn as_f64(&self) -> f64;
}

/// Exact integer sum (wrapping on i64 overflow, as Spark with ANSI off) and count.
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct ISum {
    pub s: i64,
    pub n: i64,
}

impl SumAcc for ISum {
    #[inline(always)]
    fn n(&self) -> i64 {
        self.n
    }
    #[inline(always)]
    fn add(&self, o: &Self) -> Self {
        ISum { s: self.s.wrapping_add(o.s), n: self.n + o.n }
    }
    #[inline(always)]
    fn sub(&self, o: &Self) -> Self {
        ISum { s: self.s.wrapping_sub(o.s), n: self.n - o.n }
    }
    #[inline(always)]
    fn as_f64(&self) -> f64 {
        self.s as f64
    }
}

/// Exact integer sum in i128 and count: the mean's accumulator for integer
/// inputs. A mean is not an int64 result and must not wrap (Spark averages
/// longs in double, pandas in float64: both give `2^62` for three rows of
/// `2^62`, where a wrapped i64 sum gives `-2^62 / 3`). Exact for any window
/// of fewer than 2^64 rows, so its inverse is exact too.
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct WideSum {
    pub s: i128,
    pub n: i64,
}

impl SumAcc for WideSum {
    #[inline(always)]
    fn n(&self) -> i64 {
        self.n
    }
    #[inline(always)]
    fn add(&self, o: &Self) -> Self {
        WideSum { s: self.s + o.s, n: self.n + o.n }
    }
    #[inline(always)]
    fn sub(&self, o: &Self) -> Self {
        WideSum { s: self.s - o.s, n: self.n - o.n }
    }
    #[inline(always)]
    fn as_f64(&self) -> f64 {
        // rounded once (`as` rounds to nearest)
        self.s as f64
    }
}

/// The exact sum of integers as i128: each split into its high and low 32
/// bits, each half summed in i64 lanes, which cannot overflow below 2^31
/// values per chunk (so the loop vectorises).
pub fn wide_sum<T: Copy + Into<i64>>(xs: &[T]) -> WideSum {
    let mut s: i128 = 0;
    for c in xs.chunks(1 << 30) {
        let (hi, lo) = c.iter().fold((0i64, 0i64), |(h, l), &v| {
            let v: i64 = v.into();
            (h + (v >> 32), l + (v & 0xFFFF_FFFF))
        });
        s += ((hi as i128) << 32) + lo as i128;
    }
    WideSum { s, n: xs.len() as i64 }
}

/// Compensated float sum: `s + c` is the sum of the finite inputs; `nan`,
/// `pinf`, `ninf` count the non-finite ones; `n` counts non-null rows.
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct FSum {
    pub s: f64,
    pub c: f64,
    pub n: i64,
    pub nan: u32,
    pub pinf: u32,
    pub ninf: u32,
}

/// Knuth's TwoSum: `a + b = s + e` exactly.
#[inline(always)]
pub fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

impl FSum {
    #[inline(always)]
    pub fn lift(x: f64) -> FSum {
        let mut r = FSum { n: 1, ..FSum::default() };
        if x.is_finite() {
            r.s = x;
        } else if x.is_nan() {
            r.nan = 1;
        } else if x > 0.0 {
            r.pinf = 1;
        } else {
            r.ninf = 1;
        }
        r
    }
    #[inline(always)]
    fn with_sign(&self, o: &Self, sign: f64, n: i64) -> Self {
        let (s, e) = two_sum(self.s, sign * o.s);
        FSum {
            s,
            c: self.c + sign * o.c + e,
            n,
            nan: 0,
            pinf: 0,
            ninf: 0,
        }
    }
    /// The value: NaN if any NaN or both infinities, else the infinity, else s + c.
    #[inline(always)]
    pub fn value(&self) -> f64 {
        if self.nan > 0 || (self.pinf > 0 && self.ninf > 0) {
            f64::NAN
        } else if self.pinf > 0 {
            f64::INFINITY
        } else if self.ninf > 0 {
            f64::NEG_INFINITY
        } else {
            self.s + self.c
        }
    }
}

impl SumAcc for FSum {
    #[inline(always)]
    fn n(&self) -> i64 {
        self.n
    }
    #[inline(always)]
    fn add(&self, o: &Self) -> Self {
        let mut r = self.with_sign(o, 1.0, self.n + o.n);
        r.nan = self.nan + o.nan;
        r.pinf = self.pinf + o.pinf;
        r.ninf = self.ninf + o.ninf;
        r
    }
    #[inline(always)]
    fn sub(&self, o: &Self) -> Self {
        let mut r = self.with_sign(o, -1.0, self.n - o.n);
        r.nan = self.nan - o.nan;
        r.pinf = self.pinf - o.pinf;
        r.ninf = self.ninf - o.ninf;
        // An empty window is exactly zero, whatever rounding is left over.
        if r.n == 0 {
            r.s = 0.0;
            r.c = 0.0;
        }
        r
    }
    #[inline(always)]
    fn as_f64(&self) -> f64 {
        self.value()
    }
}

/// Lift a value of any dtype into its sum accumulator, and into its mean's
/// (the sum's for floats; [`WideSum`] for integers).
pub trait LiftSum: Num {
    type MeanAcc: SumAcc;
    fn lift_sum(self) -> Self::Acc;
    fn lower_sum(a: &Self::Acc) -> Self::Wide;
    fn lift_mean(self) -> Self::MeanAcc;
    /// A pane's rows folded into one mean accumulator.
    fn pane_mean(xs: &[Self]) -> Self::MeanAcc;
}
/// Floats: the mean sums as the sum does (`FSum`).
macro_rules! float_lift {
    ($t:ty) => {
        impl LiftSum for $t {
            type MeanAcc = FSum;
            #[inline(always)]
            fn lift_sum(self) -> FSum {
                FSum::lift(self as f64)
            }
            #[inline(always)]
            fn lower_sum(a: &FSum) -> f64 {
                a.value()
            }
            #[inline(always)]
            fn lift_mean(self) -> FSum {
                self.lift_sum()
            }
            #[inline]
            fn pane_mean(xs: &[$t]) -> FSum {
                Self::pane_sum(xs)
            }
        }
    };
}
float_lift!(f64);
float_lift!(f32);

/// Integers: the sum wraps in i64 (`ISum`), the mean does not (`WideSum`).
macro_rules! int_lift {
    ($t:ty) => {
        impl LiftSum for $t {
            type MeanAcc = WideSum;
            #[inline(always)]
            fn lift_sum(self) -> ISum {
                ISum { s: self as i64, n: 1 }
            }
            #[inline(always)]
            fn lower_sum(a: &ISum) -> i64 {
                a.s
            }
            #[inline(always)]
            fn lift_mean(self) -> WideSum {
                WideSum { s: self as i128, n: 1 }
            }
            #[inline]
            fn pane_mean(xs: &[$t]) -> WideSum {
                wide_sum(xs)
            }
        }
    };
}
int_lift!(i32);
int_lift!(i64);

/// Number of non-null rows. Never null: an empty window counts 0 (Spark).
pub struct Count<T>(PhantomData<T>);
impl<T: Num> Monoid for Count<T> {
    type Agg = i64;
    const NAME: &'static str = "count";
    const COMMUTATIVE: bool = true;
    const INVERTIBLE: bool = true;
    #[inline(always)]
    fn identity() -> i64 {
        0
    }
    #[inline(always)]
    fn combine(a: &i64, b: &i64) -> i64 {
        a + b
    }
    #[inline(always)]
    fn inverse(acc: &i64, old: &i64) -> i64 {
        acc - old
    }
}
impl<T: Num> AggOp for Count<T> {
    type In = T;
    type Out = i64;
    #[inline(always)]
    fn lift(_: T, _: i64) -> i64 {
        1
    }
    #[inline(always)]
    fn lower(a: &i64) -> Option<i64> {
        Some(*a)
    }
    #[inline]
    fn fold_rows(acc: &mut i64, xs: &[T], _: i64) {
        *acc += xs.len() as i64;
    }
}

/// Sum: i64 for integer input, f64 (compensated) for float input; null when
/// the window holds no non-null row.
pub struct Sum<T>(PhantomData<T>);
impl<T: Num + LiftSum> Monoid for Sum<T> {
    type Agg = T::Acc;
    const NAME: &'static str = "sum";
    const COMMUTATIVE: bool = true;
    const INVERTIBLE: bool = true;
    #[inline(always)]
    fn identity() -> T::Acc {
        T::Acc::default()
    }
    #[inline(always)]
    fn combine(a: &T::Acc, b: &T::Acc) -> T::Acc {
        a.add(b)
    }
    #[inline(always)]
    fn inverse(acc: &T::Acc, old: &T::Acc) -> T::Acc {
        acc.sub(old)
    }
}
impl<T: LiftSum> AggOp for Sum<T> {
    type In = T;
    type Out = T::Wide;
    #[inline(always)]
    fn lift(x: T, _: i64) -> T::Acc {
        x.lift_sum()
    }
    #[inline(always)]
    fn lower(a: &T::Acc) -> Option<T::Wide> {
        (a.n() > 0).then(|| T::lower_sum(a))
    }
    #[inline]
    fn fold_rows(acc: &mut T::Acc, xs: &[T], _: i64) {
        Self::combine_into(acc, &T::pane_sum(xs));
    }
}

/// Arithmetic mean as f64.
pub struct Mean<T>(PhantomData<T>);
impl<T: LiftSum> Monoid for Mean<T> {
    type Agg = T::MeanAcc;
    const NAME: &'static str = "mean";
    const COMMUTATIVE: bool = true;
    const INVERTIBLE: bool = true;
    #[inline(always)]
    fn identity() -> T::MeanAcc {
        T::MeanAcc::default()
    }
    #[inline(always)]
    fn combine(a: &T::MeanAcc, b: &T::MeanAcc) -> T::MeanAcc {
        a.add(b)
    }
    #[inline(always)]
    fn inverse(acc: &T::MeanAcc, old: &T::MeanAcc) -> T::MeanAcc {
        acc.sub(old)
    }
}
impl<T: LiftSum> AggOp for Mean<T> {
    type In = T;
    type Out = f64;
    #[inline(always)]
    fn lift(x: T, _: i64) -> T::MeanAcc {
        x.lift_mean()
    }
    #[inline(always)]
    fn lower(a: &T::MeanAcc) -> Option<f64> {
        (a.n() > 0).then(|| a.as_f64() / a.n() as f64)
    }
    #[inline]
    fn fold_rows(acc: &mut T::MeanAcc, xs: &[T], _: i64) {
        Self::combine_into(acc, &T::pane_mean(xs));
    }
}

/// Geometric mean, exp(mean(ln x)): 0 if any value is 0, NaN if any is
/// negative or NaN (as scipy.stats.gmean).
pub struct Geomean<T>(PhantomData<T>);
impl<T: Num> Monoid for Geomean<T> {
    type Agg = FSum;
    const NAME: &'static str = "geomean";
    const COMMUTATIVE: bool = true;
    const INVERTIBLE: bool = true;
    #[inline(always)]
    fn identity() -> FSum {
        FSum::default()
    }
    #[inline(always)]
    fn combine(a: &FSum, b: &FSum) -> FSum {
        a.add(b)
    }
    #[inline(always)]
    fn inverse(acc: &FSum, old: &FSum) -> FSum {
        acc.sub(old)
    }
}
impl<T: Num> AggOp for Geomean<T> {
    type In = T;
    type Out = f64;
    #[inline(always)]
    fn lift(x: T, _: i64) -> FSum {
        FSum::lift(x.to_f64().ln())
    }
    #[inline(always)]
    fn lower(a: &FSum) -> Option<f64> {
        (a.n > 0).then(|| (a.value() / a.n as f64).exp())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pane fold of integer means is the exact sum, at the types'
    /// limits too (where an i64 sum wraps).
    #[test]
    fn wide_sum_is_exact() {
        let mut st = 0x9E37_79B9_7F4A_7C15u64;
        for len in [0usize, 1, 2, 7, 64, 1000] {
            let xs: Vec<i64> = (0..len)
                .map(|i| {
                    st ^= st << 13;
                    st ^= st >> 7;
                    st ^= st << 17;
                    match i % 4 {
                        0 => i64::MAX,
                        1 => i64::MIN,
                        2 => st as i64,
                        _ => (st % 100) as i64 - 50,
                    }
                })
                .collect();
            let want: i128 = xs.iter().map(|&x| x as i128).sum();
            assert_eq!(wide_sum(&xs), WideSum { s: want, n: len as i64 }, "len {len}");
            let small: Vec<i32> = xs.iter().map(|&x| x as i32).collect();
            assert_eq!(wide_sum(&small).s, small.iter().map(|&x| x as i128).sum::<i128>());
        }
        // the mean of three 2^62 is 2^62, not a wrapped sum over 3
        let m = WideSum { s: 3 * (1i128 << 62), n: 3 };
        assert_eq!(Mean::<i64>::lower(&m), Some(2f64.powi(62)));
    }

    #[test]
    fn evicting_infinities_and_nan_restores_the_finite_sum() {
        let xs = [1.0, f64::INFINITY, f64::NAN, f64::NEG_INFINITY, 2.5];
        let parts: Vec<FSum> = xs.iter().map(|&x| FSum::lift(x)).collect();
        let mut acc = FSum::default();
        for p in &parts {
            acc = acc.add(p);
        }
        assert!(acc.value().is_nan());
        for p in &parts[..4] {
            acc = acc.sub(p);
        }
        assert_eq!(acc.value(), 2.5);
        assert_eq!(acc.n, 1);
    }

    #[test]
    fn compensated_sum_keeps_small_terms_next_to_large_ones() {
        let mut acc = FSum::default();
        for i in 0..1000 {
            acc = acc.add(&FSum::lift(if i % 2 == 0 { 1e16 } else { 1.0 }));
        }
        for i in 0..1000 {
            if i % 2 == 0 {
                acc = acc.sub(&FSum::lift(1e16));
            }
        }
        assert_eq!(acc.value(), 500.0);
    }
}
