//! Pane reduction: fold a batch's null-free rows into a partial, for sum /
//! count / mean / min / max over f64 / f32 / i64 / i32 (FlatFIT §2.1: the
//! per-row work of partial aggregation, before any final aggregation).
//!
//! One source per reduction, written as eight independent lanes (so it is
//! not latency bound and vectorises), compiled three times: for AVX-512F,
//! for AVX2 and portable; the widest the CPU has is picked at run time
//! (`is_x86_feature_detected!`, once). Rust never reassociates or contracts
//! float operations, so every path performs the same operations in the same
//! order and gives bit-identical results (tested against the portable one).
//!
//! Semantics as the operations of [`crate::ops`]: min / max on the ordered
//! keys (NaN largest, -0.0 == 0.0), returning the exact key of the earliest
//! row tied at the extreme (the lanes interleave rows, so when the extreme
//! is a zero, the first zero of the slice is looked up after the fold); integer sums exact wrapping i64; float
//! sums Neumaier-compensated per lane (TwoSum), lanes merged with
//! [`SumAcc::add`]; a slice whose lanes meet an inf / NaN (or overflow) is
//! redone row by row with [`FSum`]'s non-finite counts.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::ops::arith::{two_sum, FSum, ISum, SumAcc};

const LANES: usize = 8;

/// An instruction-set level the reductions are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Portable,
    Avx2,
    Avx512,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512f",
        }
    }
}

static DETECTED: AtomicU8 = AtomicU8::new(0);

/// The widest level this CPU runs (cached after the first call; inlined:
/// the inf / NaN scan asks once per 64 rows).
#[inline]
pub fn detected() -> Level {
    match DETECTED.load(Ordering::Relaxed) {
        1 => Level::Portable,
        2 => Level::Avx2,
        3 => Level::Avx512,
        _ => {
            let l = detect();
            DETECTED.store(match l { Level::Portable => 1, Level::Avx2 => 2, Level::Avx512 => 3 }, Ordering::Relaxed);
            l
        }
    }
}

/// The CPU's widest level, capped by `SLIDEWISE_SIMD=portable|avx2`
/// (read once; for measuring the narrower kernels on a wider CPU).
fn detect() -> Level {
    let cap = match std::env::var("SLIDEWISE_SIMD").as_deref() {
        Ok("portable") => Level::Portable,
        Ok("avx2") => Level::Avx2,
        _ => Level::Avx512,
    };
    let cpu = cpu_level();
    if cap as u8 <= cpu as u8 { cap } else { cpu }
}

fn cpu_level() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Level::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Level::Avx2;
        }
    }
    Level::Portable
}

/// 4 x 4 f64 transpose in AVX2 registers (its own inverse): the tiles of
/// the rolling sum and variance kernels, four rows of each of four lanes'
/// segments. One copy for both; inlined into callers compiled with AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn transpose4(r: [std::arch::x86_64::__m256d; 4]) -> [std::arch::x86_64::__m256d; 4] {
    use std::arch::x86_64::*;
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

/// Every level this CPU can run, portable first (for tests and benches).
pub fn available() -> Vec<Level> {
    let top = detected();
    [Level::Portable, Level::Avx2, Level::Avx512].into_iter().filter(|&l| l as u8 <= top as u8).collect()
}

/// The reductions of one dtype, at a given level.
pub trait PaneReduce: Copy {
    type Key;
    type Acc;
    fn max_key(level: Level, xs: &[Self]) -> Self::Key;
    fn min_key(level: Level, xs: &[Self]) -> Self::Key;
    fn sum(level: Level, xs: &[Self]) -> Self::Acc;
}

// ---------------------------------------------------------------------------
// The single sources (inlined into each level's wrapper).

macro_rules! float_key {
    ($name:ident, $t:ty, $bits:ty) => {
        /// `Num::key`, branch-free so it vectorises.
        #[inline(always)]
        fn $name(x: $t) -> $bits {
            const SIGN: $bits = 1 << (<$bits>::BITS - 1);
            let b = x.to_bits();
            let b = if x != x { <$t>::NAN.to_bits() } else { b };
            let b = if x == 0.0 { 0 } else { b };
            let neg = ((b & SIGN) >> (<$bits>::BITS - 1)).wrapping_neg(); // all ones if negative
            (b ^ neg) | (SIGN & !neg)
        }
    };
}
float_key!(key64, f64, u64);
float_key!(key32, f32, u32);

#[inline(always)]
fn fold_lanes<X: Copy, K: Copy + Ord>(xs: &[X], id: K, key: impl Fn(X) -> K, max: bool) -> K {
    let pick = |a: K, b: K| if max { if b > a { b } else { a } } else if b < a { b } else { a };
    let mut acc = [id; LANES];
    let mut it = xs.chunks_exact(LANES);
    for c in &mut it {
        for l in 0..LANES {
            acc[l] = pick(acc[l], key(c[l]));
        }
    }
    let mut r = id;
    for &x in it.remainder() {
        r = pick(r, key(x));
    }
    acc.into_iter().fold(r, pick)
}

/// Compensated lanes over f64 values; `None` when a lane went non-finite.
#[inline(always)]
fn fsum_lanes<X: Copy>(xs: &[X], f: impl Fn(X) -> f64) -> Option<FSum> {
    let mut s = [0.0f64; LANES];
    let mut c = [0.0f64; LANES];
    let mut it = xs.chunks_exact(LANES);
    for ch in &mut it {
        for l in 0..LANES {
            let (t, e) = two_sum(s[l], f(ch[l]));
            s[l] = t;
            c[l] += e;
        }
    }
    let mut fin = true;
    for l in 0..LANES {
        fin &= s[l].is_finite() & c[l].is_finite();
    }
    if !fin {
        return None;
    }
    let mut acc = FSum::default();
    for l in 0..LANES {
        acc = acc.add(&FSum { s: s[l], c: c[l], ..FSum::default() });
    }
    for &x in it.remainder() {
        acc = acc.add(&FSum::lift(f(x)));
    }
    let r = FSum { n: xs.len() as i64, ..acc };
    (r.s.is_finite() && r.c.is_finite() && r.nan == 0 && r.pinf == 0 && r.ninf == 0).then_some(r)
}

/// Row by row, counting non-finite values apart (the exact fallback).
fn fsum_rows<X: Copy>(xs: &[X], f: impl Fn(X) -> f64) -> FSum {
    xs.iter().fold(FSum::default(), |a, &x| a.add(&FSum::lift(f(x))))
}

#[inline(always)]
fn isum_lanes<X: Copy>(xs: &[X], f: impl Fn(X) -> i64) -> ISum {
    let mut s = [0i64; LANES];
    let mut it = xs.chunks_exact(LANES);
    for ch in &mut it {
        for l in 0..LANES {
            s[l] = s[l].wrapping_add(f(ch[l]));
        }
    }
    let mut r = s.iter().fold(0i64, |a, &b| a.wrapping_add(b));
    for &x in it.remainder() {
        r = r.wrapping_add(f(x));
    }
    ISum { s: r, n: xs.len() as i64 }
}

// ---------------------------------------------------------------------------
// One wrapper per (source, level); `run!` picks the wrapper.

macro_rules! levels {
    ($name:ident, $x:ty, $out:ty, |$xs:ident| $body:expr) => {
        mod $name {
            use super::*;
            #[inline(always)]
            fn body($xs: &[$x]) -> $out {
                $body
            }
            pub(super) fn portable(xs: &[$x]) -> $out {
                body(xs)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            pub(super) unsafe fn avx2(xs: &[$x]) -> $out {
                body(xs)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f")]
            pub(super) unsafe fn avx512(xs: &[$x]) -> $out {
                body(xs)
            }
            pub(super) fn run(level: Level, xs: &[$x]) -> $out {
                match level {
                    // SAFETY: a level above portable is only ever passed when
                    // `detected()` found the CPU feature (`available()`).
                    #[cfg(target_arch = "x86_64")]
                    Level::Avx512 if detected() == Level::Avx512 => unsafe { avx512(xs) },
                    #[cfg(target_arch = "x86_64")]
                    Level::Avx2 | Level::Avx512 if detected() != Level::Portable => unsafe { avx2(xs) },
                    _ => portable(xs),
                }
            }
        }
    };
}

levels!(max_f64, f64, u64, |xs| fold_lanes(xs, 0u64, key64, true));
levels!(min_f64, f64, u64, |xs| fold_lanes(xs, u64::MAX, key64, false));
levels!(max_f32, f32, u32, |xs| fold_lanes(xs, 0u32, key32, true));
levels!(min_f32, f32, u32, |xs| fold_lanes(xs, u32::MAX, key32, false));
levels!(max_i64, i64, i64, |xs| fold_lanes(xs, i64::MIN, |x| x, true));
levels!(min_i64, i64, i64, |xs| fold_lanes(xs, i64::MAX, |x| x, false));
levels!(max_i32, i32, i32, |xs| fold_lanes(xs, i32::MIN, |x| x, true));
levels!(min_i32, i32, i32, |xs| fold_lanes(xs, i32::MAX, |x| x, false));
levels!(sum_f64, f64, Option<FSum>, |xs| fsum_lanes(xs, |x| x));
levels!(sum_f32, f32, Option<FSum>, |xs| fsum_lanes(xs, |x| x as f64));
levels!(sum_i64, i64, ISum, |xs| isum_lanes(xs, |x| x));
levels!(sum_i32, i32, ISum, |xs| isum_lanes(xs, |x| x as i64));

/// The lanes fold tie keys (-0.0 == 0.0); when the extreme `k` is zero,
/// the earliest zero's sign decides (Spark's left-to-right fold keeps it).
#[inline]
fn first_zero<T: crate::ops::Num + PartialEq + Default>(xs: &[T], k: T::Key) -> T::Key {
    if k != T::default().key() {
        return k;
    }
    xs.iter().find(|&&x| x == T::default()).map_or(k, |&x| x.exact_key())
}

impl PaneReduce for f64 {
    type Key = u64;
    type Acc = FSum;
    fn max_key(level: Level, xs: &[f64]) -> u64 {
        first_zero(xs, max_f64::run(level, xs))
    }
    fn min_key(level: Level, xs: &[f64]) -> u64 {
        first_zero(xs, min_f64::run(level, xs))
    }
    fn sum(level: Level, xs: &[f64]) -> FSum {
        sum_f64::run(level, xs).unwrap_or_else(|| fsum_rows(xs, |x| x))
    }
}

impl PaneReduce for f32 {
    type Key = u32;
    type Acc = FSum;
    fn max_key(level: Level, xs: &[f32]) -> u32 {
        first_zero(xs, max_f32::run(level, xs))
    }
    fn min_key(level: Level, xs: &[f32]) -> u32 {
        first_zero(xs, min_f32::run(level, xs))
    }
    fn sum(level: Level, xs: &[f32]) -> FSum {
        sum_f32::run(level, xs).unwrap_or_else(|| fsum_rows(xs, |x| x as f64))
    }
}

// Integer keys are the values widened (`Num::key`); an empty slice gives
// the identity key.
impl PaneReduce for i64 {
    type Key = i128;
    type Acc = ISum;
    fn max_key(level: Level, xs: &[i64]) -> i128 {
        if xs.is_empty() { i128::MIN } else { max_i64::run(level, xs) as i128 }
    }
    fn min_key(level: Level, xs: &[i64]) -> i128 {
        if xs.is_empty() { i128::MAX } else { min_i64::run(level, xs) as i128 }
    }
    fn sum(level: Level, xs: &[i64]) -> ISum {
        sum_i64::run(level, xs)
    }
}

impl PaneReduce for i32 {
    type Key = i64;
    type Acc = ISum;
    fn max_key(level: Level, xs: &[i32]) -> i64 {
        if xs.is_empty() { i64::MIN } else { max_i32::run(level, xs) as i64 }
    }
    fn min_key(level: Level, xs: &[i32]) -> i64 {
        if xs.is_empty() { i64::MAX } else { min_i32::run(level, xs) as i64 }
    }
    fn sum(level: Level, xs: &[i32]) -> ISum {
        sum_i32::run(level, xs)
    }
}

/// Pane partials of `xs` cut at `ends` (exclusive, increasing, last =
/// `xs.len()`): what the window operator does per batch, as one call, for
/// benchmarks against numpy's `reduceat`.
pub fn reduce_panes<T: PaneReduce, R>(level: Level, xs: &[T], ends: &[usize], f: impl Fn(Level, &[T]) -> R) -> Vec<R> {
    let mut out = Vec::with_capacity(ends.len());
    let mut a = 0;
    for &e in ends {
        out.push(f(level, &xs[a..e]));
        a = e;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Num;

    /// Lanes that are finite alone but overflow when merged: the pane's sum
    /// is the exact sum, at every level.
    #[test]
    fn pane_sum_whose_lanes_overflow_when_merged() {
        let m = f64::MAX;
        for level in [Level::Portable, detected()] {
            // one chunk (a maximum per lane), then a remainder of -MAX rows
            let xs: Vec<f64> = [vec![m; LANES], vec![-m; LANES - 1]].concat();
            assert_eq!(f64::sum(level, &xs).value(), m, "{level:?}");
            let xs: Vec<f64> = [vec![m; LANES], vec![-m; LANES - 2]].concat();
            assert_eq!(f64::sum(level, &xs).value(), f64::INFINITY, "{level:?}");
            let s = f64::sum(level, &[vec![m; LANES], vec![0.5; LANES]].concat());
            let back = s.sub(&FSum::lift(m).add(&FSum::lift(m))).sub(&f64::sum(level, &vec![m; LANES - 2]));
            assert_eq!(back.value(), 0.5 * LANES as f64, "{level:?}");
        }
    }

    #[test]
    fn branch_free_key_is_num_key() {
        for x in [0.0, -0.0, 1.5, -1.5, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -f64::NAN, f64::MIN_POSITIVE, -5e-324] {
            assert_eq!(key64(x), x.key(), "{x}");
            assert_eq!(key32(x as f32), (x as f32).key(), "{x}");
        }
    }
}
