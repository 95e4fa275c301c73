//! The aggregation operations of docs/DESIGN.md ("Aggregations"), each a
//! zero-sized type implementing [`AggOp`](crate::AggOp) for the four input
//! dtypes. Grouped by family:
//!
//! * [`arith`]: count, sum, mean, geomean (invertible, commutative)
//! * [`order`]: min, max, maxcount, mincount, range, argmax, argmin
//! * [`moments`]: var / std, sample and population (Chan's merge)
//! * [`list`]: collect, first, last (Spark's, null rows included) and their `ignore_nulls` forms
//!
//! Semantics shared by all (docs/DESIGN.md "Nulls and NaN"): nulls never reach
//! `lift` (the caller uses the identity), NaN is greater than every number
//! for ordering operations and propagates through arithmetic ones.

pub mod arith;
pub mod list;
pub mod moments;
pub mod order;
pub mod reduce;

pub use arith::{Count, FSum, Geomean, ISum, Mean, Partials, Sum, SumAcc, WideSum};
pub use list::{Collect, First, FirstNonNull, Last, LastNonNull};
pub use moments::{Moments, Var};
pub use order::{ArgMax, ArgMin, Max, MaxCount, Min, MinCount, Range};

use std::fmt::Debug;

use crate::codec::Codec;

/// An input dtype: i32, i64, f32, f64.
pub trait Num: Copy + Send + Sync + Debug + PartialEq + Default + Codec + crate::engine::ToArrow + crate::engine::FromArrow + 'static {
    /// Arrow-style name, for messages.
    const DTYPE: &'static str;
    /// A key whose integer order is the total order slidewise uses: NaN above
    /// every number (Spark), all NaNs equal, `KEY_LOW` below and `KEY_HIGH`
    /// above every real key (the identities of max and min: "empty", never 0).
    type Key: Copy + Ord + Debug + Send + Sync + Codec + 'static;
    const KEY_LOW: Self::Key;
    const KEY_HIGH: Self::Key;
    /// The sum accumulator: exact wrapping i64 for integers, compensated f64
    /// with non-finite counts for floats.
    type Acc: SumAcc;
    /// Sum and range results: i64 for integers, f64 for floats.
    type Wide: Copy + Default + Send + Sync + Debug + PartialEq + crate::engine::ToArrow + 'static;

    /// The key of the total order: -0.0 and +0.0 share one key (the
    /// counting and position operations see them as one value).
    #[inline(always)]
    fn key(self) -> Self::Key {
        Self::tie(self.exact_key())
    }
    /// The key with the zero's sign kept: -0.0 gets the key just below
    /// +0.0's, so `from_key` gives the value back bit for bit (NaN: one
    /// quiet NaN). max / min carry these and compare them through [`Num::tie`]
    /// (docs/DESIGN.md §5.3: the earliest of tied rows wins, as Spark).
    fn exact_key(self) -> Self::Key;
    /// The key that order comparisons use: -0.0's exact key made +0.0's,
    /// every other key unchanged (identity for integers).
    fn tie(k: Self::Key) -> Self::Key;
    fn from_key(k: Self::Key) -> Self;
    fn to_f64(self) -> f64;
    fn range(max: Self, min: Self) -> Self::Wide;

    /// Pane reductions of a null-free slice (SIMD, [`crate::ops::reduce`]):
    /// the max / min key (the identity when empty) and the sum accumulator.
    fn pane_max(xs: &[Self]) -> Self::Key;
    fn pane_min(xs: &[Self]) -> Self::Key;
    fn pane_sum(xs: &[Self]) -> Self::Acc;
}

/// The [`Num`] pane methods, at the CPU's widest level.
macro_rules! pane_methods {
    () => {
        #[inline]
        fn pane_max(xs: &[Self]) -> Self::Key {
            crate::ops::reduce::PaneReduce::max_key(crate::ops::reduce::detected(), xs)
        }
        #[inline]
        fn pane_min(xs: &[Self]) -> Self::Key {
            crate::ops::reduce::PaneReduce::min_key(crate::ops::reduce::detected(), xs)
        }
        #[inline]
        fn pane_sum(xs: &[Self]) -> Self::Acc {
            crate::ops::reduce::PaneReduce::sum(crate::ops::reduce::detected(), xs)
        }
    };
}

macro_rules! float_num {
    ($t:ty, $bits:ty, $name:literal) => {
        impl Num for $t {
            const DTYPE: &'static str = $name;
            type Key = $bits;
            const KEY_LOW: $bits = 0;
            const KEY_HIGH: $bits = <$bits>::MAX;
            type Acc = FSum;
            type Wide = f64;
            #[inline(always)]
            fn exact_key(self) -> $bits {
                const SIGN: $bits = 1 << (<$bits>::BITS - 1);
                // One positive quiet NaN for all NaNs, so NaN is the largest
                // key.
                let b = if self.is_nan() { <$t>::NAN.to_bits() } else { self.to_bits() };
                // Flip negatives entirely, set the sign bit of positives: the
                // integer order then equals the numeric order, and 0 is unused
                // (−inf maps above it), so 0 and MAX are free for identities.
                // -0.0 maps to SIGN - 1, right below +0.0's SIGN.
                if b & SIGN != 0 { !b } else { b | SIGN }
            }
            #[inline(always)]
            fn tie(k: $bits) -> $bits {
                // -0.0 is 0.0 (IEEE equality, Spark, numpy): ties between
                // them count and resolve like any other tie.
                const SIGN: $bits = 1 << (<$bits>::BITS - 1);
                k + (k == SIGN - 1) as $bits
            }
            #[inline(always)]
            fn from_key(k: $bits) -> $t {
                const SIGN: $bits = 1 << (<$bits>::BITS - 1);
                if k & SIGN != 0 { <$t>::from_bits(k & !SIGN) } else { <$t>::from_bits(!k) }
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn range(max: $t, min: $t) -> f64 {
                max as f64 - min as f64
            }
            pane_methods!();
        }
    };
}
float_num!(f64, u64, "float64");
float_num!(f32, u32, "float32");

impl Num for i32 {
    const DTYPE: &'static str = "int32";
    type Key = i64;
    const KEY_LOW: i64 = i64::MIN;
    const KEY_HIGH: i64 = i64::MAX;
    type Acc = ISum;
    type Wide = i64;
    #[inline(always)]
    fn exact_key(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn tie(k: i64) -> i64 {
        k
    }
    #[inline(always)]
    fn from_key(k: i64) -> i32 {
        k as i32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn range(max: i32, min: i32) -> i64 {
        max as i64 - min as i64
    }
    pane_methods!();
}

impl Num for i64 {
    const DTYPE: &'static str = "int64";
    // Every i64 is a value, so the identities need a wider key.
    type Key = i128;
    const KEY_LOW: i128 = i128::MIN;
    const KEY_HIGH: i128 = i128::MAX;
    type Acc = ISum;
    type Wide = i64;
    #[inline(always)]
    fn exact_key(self) -> i128 {
        self as i128
    }
    #[inline(always)]
    fn tie(k: i128) -> i128 {
        k
    }
    #[inline(always)]
    fn from_key(k: i128) -> i64 {
        k as i64
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn range(max: i64, min: i64) -> i64 {
        max.wrapping_sub(min)
    }
    pane_methods!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_key_order_is_numeric_with_nan_on_top() {
        let xs = [f64::NEG_INFINITY, -1e300, -1.0, 0.0, 1e-300, 1.0, f64::INFINITY, f64::NAN, -f64::NAN];
        for w in xs.windows(2).take(xs.len() - 2) {
            assert!(w[0].key() < w[1].key(), "{:?}", w);
        }
        assert_eq!(f64::NAN.key(), (-f64::NAN).key());
        assert_eq!((-0.0f64).key(), 0.0f64.key());
        assert_eq!((-0.0f64).exact_key() + 1, 0.0f64.exact_key());
        assert_eq!(f64::tie((-0.0f64).exact_key()), 0.0f64.key());
        assert_eq!(f64::from_key((-0.0f64).exact_key()).to_bits(), (-0.0f64).to_bits());
        assert_eq!(f32::from_key((-0.0f32).exact_key()).to_bits(), (-0.0f32).to_bits());
        assert!((-5e-324f64).exact_key() < (-0.0f64).exact_key());
        for x in xs {
            assert!(x.key() > f64::KEY_LOW && x.key() < f64::KEY_HIGH);
            let back = f64::from_key(x.key());
            assert!(back.to_bits() == x.to_bits() || (x.is_nan() && back.is_nan()));
        }
        assert!((-1.5f32).key() < 2.5f32.key() && f32::NAN.key() > f32::INFINITY.key());
    }
}

// Checkpoint layout of the partials (docs/DESIGN.md §4): field by field.
// A field added after checkpoints existed (`FSum::hi`, `Moments::mean_lo`)
// rides on the last count before it: that count's top bit (counts never
// reach 2^31) says the field follows, and it is written only when not
// zero. So partials saved before the field existed read unchanged.
const EXTRA: u32 = 1 << 31;

fn encode_extra<E: Codec + Default + PartialEq>(count: u32, extra: E, out: &mut Vec<u8>) {
    let some = extra != E::default();
    (if some { count | EXTRA } else { count }).encode(out);
    if some {
        extra.encode(out);
    }
}

fn decode_extra<E: Codec + Default>(inp: &mut &[u8]) -> crate::Result<(u32, E)> {
    let count = u32::decode(inp)?;
    let extra = if count & EXTRA != 0 { E::decode(inp)? } else { E::default() };
    Ok((count & !EXTRA, extra))
}

impl Codec for FSum {
    fn encode(&self, out: &mut Vec<u8>) {
        ((self.s, self.c), (self.n, (self.nan, self.pinf))).encode(out);
        encode_extra(self.ninf, self.hi, out);
    }
    fn decode(inp: &mut &[u8]) -> crate::Result<Self> {
        let ((s, c), (n, (nan, pinf))) = Codec::decode(inp)?;
        let (ninf, hi) = decode_extra(inp)?;
        Ok(FSum { s, c, hi, n, nan, pinf, ninf })
    }
}
crate::codec_struct!(crate::ops::ISum { s, n });
crate::codec_struct!(crate::ops::WideSum { s, n });
impl Codec for Moments {
    fn encode(&self, out: &mut Vec<u8>) {
        ((self.n, self.mean), self.m2).encode(out);
        encode_extra(self.bad, self.mean_lo, out);
    }
    fn decode(inp: &mut &[u8]) -> crate::Result<Self> {
        let ((n, mean), m2) = Codec::decode(inp)?;
        let (bad, mean_lo) = decode_extra(inp)?;
        Ok(Moments { n, mean, m2, bad, mean_lo })
    }
}
