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

/// Compensated float sum: `hi * 2^1000 + s + c` is the sum of the finite
/// inputs; `nan`, `pinf`, `ninf` count the non-finite ones; `n` counts
/// non-null rows.
///
/// `hi` keeps a sum whose value passes f64's range exact, so that evicting
/// the values that overflowed it gives back the finite sum (with `s + c`
/// alone the overflow is an inf, and inf - inf a NaN ever after). It stays
/// 0, and costs one predictable branch, until a sum of finite values
/// overflows: then both operands' `s` are split exactly into a multiple of
/// 2^1000 (into `hi`, an integer) and a rest below 2^1000 in magnitude,
/// whose sum cannot overflow. `hi` wraps modulo 2^64 (exact under
/// subtraction); its value is right while under 2^63, i.e. below 2^39
/// values near f64::MAX in one window. Measured (EPYC, 2M rows): the
/// named algorithms' sum / mean at 0.7x (Subtract-on-Evict) to 1.0x
/// (TwoStacks, SlideSide) of the unchecked sum; `auto`'s kernel
/// (rolling/sum.rs) does not use `FSum` on finite columns.
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct FSum {
    pub s: f64,
    pub c: f64,
    pub hi: i64,
    pub n: i64,
    pub nan: u32,
    pub pinf: u32,
    pub ninf: u32,
}

/// 2^1000 and 2^-1000: the unit of `FSum::hi`.
const BIG: f64 = f64::from_bits((1000 + 1023) << 52);
const INV_BIG: f64 = f64::from_bits((1023 - 1000) << 52);

/// `x = q * 2^1000 + r` exactly, `|r| < 2^1000` (`q` the integer part of
/// `x / 2^1000`: both scalings are exact for `|x| >= 2^1000`, and `r` is
/// the bits of `x` below 2^1000).
#[inline]
fn split_big(x: f64) -> (i64, f64) {
    if x.abs() < BIG {
        return (0, x);
    }
    let q = (x * INV_BIG).trunc();
    (q as i64, x - q * BIG)
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
    /// `self + sign * o`, with one branch on the common case: the finite
    /// parts' sum did not overflow and (taking out) the window is not empty.
    #[inline(always)]
    fn with_sign(&self, o: &Self, sign: f64) -> Self {
        let b = sign * o.s;
        let (s, e) = two_sum(self.s, b);
        let (hi, n, nan, pinf, ninf) = if sign > 0.0 {
            (self.hi.wrapping_add(o.hi), self.n + o.n, self.nan + o.nan, self.pinf + o.pinf, self.ninf + o.ninf)
        } else {
            (self.hi.wrapping_sub(o.hi), self.n - o.n, self.nan - o.nan, self.pinf - o.pinf, self.ninf - o.ninf)
        };
        let c = self.c + sign * o.c;
        if s.is_finite() && (sign > 0.0 || n != 0) {
            return FSum { s, c: c + e, hi, n, nan, pinf, ninf };
        }
        std::hint::cold_path();
        if sign < 0.0 && n == 0 {
            // An emptied window is exactly zero, whatever rounding is left.
            return FSum { n, nan, pinf, ninf, ..FSum::default() };
        }
        // `self.s` and `b` are finite (non-finite inputs are counted apart),
        // so their sum overflowed: move their multiples of 2^1000 to `hi`.
        let (qa, ra) = split_big(self.s);
        let (qb, rb) = split_big(b);
        let (s, e) = two_sum(ra, rb);
        FSum { s, c: c + e, hi: hi.wrapping_add(qa).wrapping_add(qb), n, nan, pinf, ninf }
    }
    /// The value: NaN if any NaN or both infinities, else the infinity, else
    /// the finite inputs' sum (±inf where it is beyond f64's range). One
    /// branch on the common case: all counts and `hi` zero.
    #[inline(always)]
    pub fn value(&self) -> f64 {
        if ((self.nan | self.pinf | self.ninf) as i64 | self.hi) == 0 {
            self.s + self.c
        } else {
            self.rare_value()
        }
    }
    #[cold]
    #[inline(never)]
    fn rare_value(&self) -> f64 {
        if self.nan > 0 || (self.pinf > 0 && self.ninf > 0) {
            f64::NAN
        } else if self.pinf > 0 {
            f64::INFINITY
        } else if self.ninf > 0 {
            f64::NEG_INFINITY
        } else {
            self.wide_value()
        }
    }
    /// `hi * 2^1000 + s + c` rounded, computed in units of 2^1000 (exact
    /// scalings), so a result past f64::MAX comes out ±inf.
    fn wide_value(&self) -> f64 {
        let (q, r) = split_big(self.s);
        let big = self.hi.wrapping_add(q);
        if big == 0 {
            return r + self.c;
        }
        if big.unsigned_abs() > 1 << 30 {
            // |r| < 2^1000 and `c` is far smaller: beyond f64's range.
            return f64::INFINITY.copysign(big as f64);
        }
        // `big` is exact in f64; the rest's scaling loses only bits far
        // below the result's last place (the result is at least 2^947).
        let (a, e) = two_sum(big as f64, r * INV_BIG);
        (a + (e + self.c * INV_BIG)) * BIG
    }
}

/// Shewchuk's exact sum (Python's `math.fsum`): non-overlapping partials,
/// in increasing magnitude, whose exact sum is the sum of every value added.
/// Adding `-x` takes `x` out exactly, so it slides; a window whose values
/// cancel holds no partial. Few partials (one or two on ordinary data, at
/// most about 40 over f64's whole range). The per-row sum kernel's exact
/// fallback (rolling/sum.rs `exact_rows`): `FSum` is an `s + c`, which
/// rounds at the largest magnitude it has held.
#[derive(Clone, Debug, Default)]
pub struct Partials {
    p: Vec<f64>,
}

impl Partials {
    /// Add a finite `x` (Shewchuk's grow-expansion, zero partials dropped).
    pub fn add(&mut self, mut x: f64) {
        let mut i = 0;
        for j in 0..self.p.len() {
            let mut y = self.p[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                self.p[i] = lo;
                i += 1;
            }
            x = hi;
        }
        self.p.truncate(i);
        if x != 0.0 {
            self.p.push(x);
        }
    }

    /// The sum, correctly rounded (`math.fsum`'s last step: the top
    /// partials added until one rounds, and a half-way case settled by the
    /// sign of the partial below). Not finite if a partial overflowed.
    pub fn value(&self) -> f64 {
        let p = &self.p;
        let Some(&top) = p.last() else { return 0.0 };
        let (mut hi, mut lo, mut n) = (top, 0.0, p.len() - 1);
        while n > 0 {
            let (x, y) = (hi, p[n - 1]);
            n -= 1;
            hi = x + y;
            lo = y - (hi - x);
            if lo != 0.0 {
                break;
            }
        }
        if n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            if y == x - hi {
                hi = x;
            }
        }
        hi
    }
}

impl SumAcc for FSum {
    #[inline(always)]
    fn n(&self) -> i64 {
        self.n
    }
    #[inline(always)]
    fn add(&self, o: &Self) -> Self {
        self.with_sign(o, 1.0)
    }
    #[inline(always)]
    fn sub(&self, o: &Self) -> Self {
        self.with_sign(o, -1.0)
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

    /// `Partials` is `math.fsum` (values from CPython's), rounds half-way
    /// cases as it does, and slides: once the huge values are taken out
    /// again the small ones' sum is exact, in any order.
    #[test]
    fn partials_are_fsum_and_slide() {
        let sum = |xs: &[f64]| {
            let mut p = Partials::default();
            xs.iter().for_each(|&x| p.add(x));
            p.value()
        };
        assert_eq!(sum(&[1e16, 1.0, 1e-16]), 10000000000000002.0);
        assert_eq!(sum(&[0.1; 10]), 1.0);
        assert_eq!(sum(&[1e300, 1.0, -1e300, 1e-300]), 1.0);
        assert_eq!(sum(&[]), 0.0);
        let mut st = 0x2545_F491_4F6C_DD1Du64;
        let mut p = Partials::default();
        let (mut small, mut bigs) = (0i64, Vec::new());
        for i in 0..5_000 {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            let k = (st % 2001) as i64 - 1000;
            if i % 97 == 0 {
                let b = (k as f64 + 0.37) * 1e299;
                bigs.push(b);
                p.add(b);
            } else {
                small += k;
                p.add(k as f64 / 16.0);
            }
        }
        for b in bigs.iter().rev() {
            p.add(-b);
        }
        assert_eq!(p.value(), small as f64 / 16.0);
    }

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

    /// A sum past f64::MAX is ±inf while it lasts, and exact again once the
    /// values that overflowed it leave; the checkpoint codec keeps `hi`,
    /// and reads the bytes of a sum without it as before `hi` existed.
    #[test]
    fn overflowing_sum_is_inf_then_exact_again() {
        use crate::codec::Codec;
        let m = f64::MAX;
        let xs = [m, m, m, 3.0, -m, 0.5];
        let mut acc = FSum::default();
        let mut seen = vec![];
        for &x in &xs {
            acc = acc.add(&FSum::lift(x));
            seen.push(acc.value());
        }
        assert_eq!(seen, vec![m, f64::INFINITY, f64::INFINITY, f64::INFINITY, f64::INFINITY, f64::INFINITY]);
        assert_ne!(acc.hi, 0);
        let mut bytes = vec![];
        acc.encode(&mut bytes);
        let back = FSum::decode(&mut &bytes[..]).unwrap();
        assert_eq!(back, acc);
        // the sum is 2m + 3.5: evict the maximum three times
        let mut acc = back;
        let mut seen = vec![];
        for _ in 0..3 {
            acc = acc.sub(&FSum::lift(m));
            seen.push(acc.value());
        }
        assert_eq!(seen, vec![m, 3.5, -m]);
        acc = acc.add(&FSum::lift(m));
        assert_eq!(acc.value(), 3.5);
        assert_eq!(FSum::lift(-m).add(&FSum::lift(-m)).value(), f64::NEG_INFINITY);
        // the halfway case rounds as IEEE: m + ulp(m) / 2 overflows
        let half = f64::from_bits((970 + 1023) << 52);
        assert_eq!(FSum::lift(m).add(&FSum::lift(half)).value(), f64::INFINITY);
        assert_eq!(FSum::lift(m).add(&FSum::lift(half / 2.0)).value(), m);
        // an old checkpoint's bytes (no `hi`) read as before
        let small = FSum::lift(2.5).add(&FSum::lift(f64::NAN));
        let mut bytes = vec![];
        small.encode(&mut bytes);
        assert_eq!(bytes.len(), 8 + 8 + 8 + 4 * 3);
        assert_eq!(FSum::decode(&mut &bytes[..]).unwrap(), small);
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
