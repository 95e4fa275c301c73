//! Ordering operations over the total-order key of [`Num`]: NaN above every
//! number, identities strictly outside the data (never 0: data may be
//! negative). None is invertible (RA Table 2); max/min/maxcount/mincount/range
//! are commutative. argmax/argmin take the oldest of equal extremes, which
//! makes them order-sensitive.
//!
//! max / min carry the exact key ([`Num::exact_key`]: the zero's sign kept)
//! and compare through [`Num::tie`] (-0.0 == 0.0); on a tie `combine` keeps
//! its left, older, argument. So the result is the value of the earliest
//! row among those tied at the extreme: Spark's `greatest` / `least` fold
//! over the frame (docs/DESIGN.md §5.3). They stay `COMMUTATIVE` (as values,
//! -0.0 == 0.0): CBiX and the late path may fold out of row order, where
//! only the sign of a zero tie can differ (§6).

use std::marker::PhantomData;

use super::Num;
use crate::monoid::{AggOp, Monoid};

/// Maximum; NaN if the window holds a NaN (Spark).
pub struct Max<T>(PhantomData<T>);
impl<T: Num> Monoid for Max<T> {
    type Agg = T::Key;
    const NAME: &'static str = "max";
    const SELECTIVE: bool = true;
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> T::Key {
        T::KEY_LOW
    }
    #[inline(always)]
    fn same(a: &Self::Agg, b: &Self::Agg) -> bool {
        a == b
    }
    #[inline(always)]
    fn combine(a: &T::Key, b: &T::Key) -> T::Key {
        // The newer `b` only when strictly greater: ties keep the older.
        if T::tie(*b) > T::tie(*a) { *b } else { *a }
    }
}
impl<T: Num> AggOp for Max<T> {
    type In = T;
    type Out = T;
    #[inline(always)]
    fn lift(x: T, _: i64) -> T::Key {
        x.exact_key()
    }
    #[inline(always)]
    fn lower(a: &T::Key) -> Option<T> {
        (*a != T::KEY_LOW).then(|| T::from_key(*a))
    }
    #[inline]
    fn fold_rows(acc: &mut T::Key, xs: &[T], _: i64) {
        Self::combine_into(acc, &T::pane_max(xs));
    }
}

/// Minimum; NaN only if every value is NaN (Spark).
pub struct Min<T>(PhantomData<T>);
impl<T: Num> Monoid for Min<T> {
    type Agg = T::Key;
    const NAME: &'static str = "min";
    const SELECTIVE: bool = true;
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> T::Key {
        T::KEY_HIGH
    }
    #[inline(always)]
    fn same(a: &Self::Agg, b: &Self::Agg) -> bool {
        a == b
    }
    #[inline(always)]
    fn combine(a: &T::Key, b: &T::Key) -> T::Key {
        if T::tie(*b) < T::tie(*a) { *b } else { *a }
    }
}
impl<T: Num> AggOp for Min<T> {
    type In = T;
    type Out = T;
    #[inline(always)]
    fn lift(x: T, _: i64) -> T::Key {
        x.exact_key()
    }
    #[inline(always)]
    fn lower(a: &T::Key) -> Option<T> {
        (*a != T::KEY_HIGH).then(|| T::from_key(*a))
    }
    #[inline]
    fn fold_rows(acc: &mut T::Key, xs: &[T], _: i64) {
        Self::combine_into(acc, &T::pane_min(xs));
    }
}

/// How many rows hold the maximum (ties counted; NaNs are equal).
pub struct MaxCount<T>(PhantomData<T>);
impl<T: Num> Monoid for MaxCount<T> {
    type Agg = (T::Key, i64);
    const NAME: &'static str = "maxcount";
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> (T::Key, i64) {
        (T::KEY_LOW, 0)
    }
    #[inline(always)]
    fn combine(a: &(T::Key, i64), b: &(T::Key, i64)) -> (T::Key, i64) {
        if a.0 == b.0 {
            (a.0, a.1 + b.1)
        } else if b.0 > a.0 {
            *b
        } else {
            *a
        }
    }
}
impl<T: Num> AggOp for MaxCount<T> {
    type In = T;
    type Out = i64;
    #[inline(always)]
    fn lift(x: T, _: i64) -> (T::Key, i64) {
        (x.key(), 1)
    }
    #[inline(always)]
    fn lower(a: &(T::Key, i64)) -> Option<i64> {
        (a.1 > 0).then_some(a.1)
    }
}

/// How many rows hold the minimum.
pub struct MinCount<T>(PhantomData<T>);
impl<T: Num> Monoid for MinCount<T> {
    type Agg = (T::Key, i64);
    const NAME: &'static str = "mincount";
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> (T::Key, i64) {
        (T::KEY_HIGH, 0)
    }
    #[inline(always)]
    fn combine(a: &(T::Key, i64), b: &(T::Key, i64)) -> (T::Key, i64) {
        if a.0 == b.0 {
            (a.0, a.1 + b.1)
        } else if b.0 < a.0 {
            *b
        } else {
            *a
        }
    }
}
impl<T: Num> AggOp for MinCount<T> {
    type In = T;
    type Out = i64;
    #[inline(always)]
    fn lift(x: T, _: i64) -> (T::Key, i64) {
        (x.key(), 1)
    }
    #[inline(always)]
    fn lower(a: &(T::Key, i64)) -> Option<i64> {
        (a.1 > 0).then_some(a.1)
    }
}

/// max - min, as i64 for integers and f64 for floats; NaN if a NaN is present.
pub struct Range<T>(PhantomData<T>);
impl<T: Num> Monoid for Range<T> {
    type Agg = (T::Key, T::Key);
    const NAME: &'static str = "range";
    const SELECTIVE: bool = true;
    const COMMUTATIVE: bool = true;
    #[inline(always)]
    fn identity() -> (T::Key, T::Key) {
        (T::KEY_LOW, T::KEY_HIGH)
    }
    #[inline(always)]
    fn same(a: &Self::Agg, b: &Self::Agg) -> bool {
        a == b
    }
    #[inline(always)]
    fn combine(a: &(T::Key, T::Key), b: &(T::Key, T::Key)) -> (T::Key, T::Key) {
        (a.0.max(b.0), a.1.min(b.1))
    }
}
impl<T: Num> AggOp for Range<T> {
    type In = T;
    type Out = T::Wide;
    #[inline(always)]
    fn lift(x: T, _: i64) -> (T::Key, T::Key) {
        (x.key(), x.key())
    }
    #[inline(always)]
    fn lower(a: &(T::Key, T::Key)) -> Option<T::Wide> {
        (a.0 != T::KEY_LOW).then(|| T::range(T::from_key(a.0), T::from_key(a.1)))
    }
}

/// The position (or argument) of the maximum; the oldest of equal maxima.
/// `Agg = (key, pos)`; `pos` is what `lift` was given.
pub struct ArgMax<T>(PhantomData<T>);
impl<T: Num> Monoid for ArgMax<T> {
    type Agg = (T::Key, i64);
    const NAME: &'static str = "argmax";
    const SELECTIVE: bool = true;
    const COMMUTATIVE: bool = false;
    #[inline(always)]
    fn identity() -> (T::Key, i64) {
        (T::KEY_LOW, 0)
    }
    #[inline(always)]
    fn same(a: &Self::Agg, b: &Self::Agg) -> bool {
        a == b
    }
    #[inline(always)]
    fn combine(a: &(T::Key, i64), b: &(T::Key, i64)) -> (T::Key, i64) {
        // `a` is older: the newer one wins only when strictly greater.
        if b.0 > a.0 { *b } else { *a }
    }
}
impl<T: Num> AggOp for ArgMax<T> {
    type In = T;
    type Out = i64;
    #[inline(always)]
    fn lift(x: T, pos: i64) -> (T::Key, i64) {
        (x.key(), pos)
    }
    #[inline(always)]
    fn lower(a: &(T::Key, i64)) -> Option<i64> {
        (a.0 != T::KEY_LOW).then_some(a.1)
    }
}

/// The position (or argument) of the minimum; the oldest of equal minima.
pub struct ArgMin<T>(PhantomData<T>);
impl<T: Num> Monoid for ArgMin<T> {
    type Agg = (T::Key, i64);
    const NAME: &'static str = "argmin";
    const SELECTIVE: bool = true;
    const COMMUTATIVE: bool = false;
    #[inline(always)]
    fn identity() -> (T::Key, i64) {
        (T::KEY_HIGH, 0)
    }
    #[inline(always)]
    fn same(a: &Self::Agg, b: &Self::Agg) -> bool {
        a == b
    }
    #[inline(always)]
    fn combine(a: &(T::Key, i64), b: &(T::Key, i64)) -> (T::Key, i64) {
        if b.0 < a.0 { *b } else { *a }
    }
}
impl<T: Num> AggOp for ArgMin<T> {
    type In = T;
    type Out = i64;
    #[inline(always)]
    fn lift(x: T, pos: i64) -> (T::Key, i64) {
        (x.key(), pos)
    }
    #[inline(always)]
    fn lower(a: &(T::Key, i64)) -> Option<i64> {
        (a.0 != T::KEY_HIGH).then_some(a.1)
    }
}
