//! Aggregation operations as lift / combine / lower over a monoid
//! (Reactive Aggregator paper, Tanaka-style "aggregation operation", §3, Table 1).
//!
//! * [`Monoid`] is the algebra the final aggregators work on: an associative
//!   `combine` with an `identity`. Its constants carry the algebraic properties
//!   of RA Table 2 so that an algorithm can refuse an operation it cannot run
//!   (Subtract-on-Evict needs `INVERTIBLE`, CBiX needs `COMMUTATIVE`).
//! * [`AggOp`] adds `lift` (one input row to a partial) and `lower` (a partial
//!   to the user's answer).
//!
//! Everything is static dispatch: the algorithms are generic over `M: Monoid`
//! and monomorphised per operation and dtype, so there is no virtual call per
//! element.
//!
//! Why `inverse` lives on `Monoid` behind a constant instead of a separate
//! `Invertible` trait: the Python layer chooses the algorithm at run time, and
//! without specialisation a factory generic over `M` could not build
//! `SubtractOnEvict<M>` only when `M: Invertible`. The constant is known at
//! compile time, so checking it costs nothing, and the algorithms that need it
//! refuse at construction with [`crate::Error::NotInvertible`].

use std::fmt::Debug;


/// An associative operation with an identity, over partial aggregates.
pub trait Monoid: 'static {
    /// A partial aggregate.
    type Agg: Clone + Debug + Send + Sync + 'static;

    /// Short name used in error messages ("max", "sum", ...).
    const NAME: &'static str;
    /// `combine(a, b) == combine(b, a)` for all partials (RA Table 2).
    const COMMUTATIVE: bool;
    /// `inverse` is implemented: `combine(inverse(combine(a, b), a), ...)`
    /// removes the oldest partial `a` from a window aggregate.
    const INVERTIBLE: bool = false;
    /// `combine` always returns one of its arguments (max, min, first, ...):
    /// folding newer partials into an old aggregate then usually changes
    /// nothing, which SlideSide's re-scan exploits (SlideSide §3.2).
    const SELECTIVE: bool = false;

    /// The identity: the aggregate of an empty window.
    fn identity() -> Self::Agg;
    /// `a` holds older rows than `b`.
    fn combine(a: &Self::Agg, b: &Self::Agg) -> Self::Agg;
    /// In-place `acc = combine(acc, b)`; override when it saves a clone.
    #[inline]
    fn combine_into(acc: &mut Self::Agg, b: &Self::Agg) {
        *acc = Self::combine(acc, b);
    }
    /// Exact equality of two partials; `false` when unknown (always safe).
    #[inline]
    fn same(_a: &Self::Agg, _b: &Self::Agg) -> bool {
        false
    }
    /// Remove the oldest partial `old` from the window aggregate `acc`.
    /// Only called when `INVERTIBLE` is true.
    fn inverse(_acc: &Self::Agg, _old: &Self::Agg) -> Self::Agg {
        unreachable!("{} is not invertible", Self::NAME)
    }
}

/// A full aggregation operation: lift, the monoid, lower (RA Table 1).
pub trait AggOp: Monoid {
    /// One input value (the dtype of the column).
    type In: Copy + Send + Sync + Debug + 'static;
    /// What the user sees.
    type Out: Clone + Debug + Send + Sync + 'static;
    /// `pos` is the absolute row position (or the argument column's value,
    /// encoded as i64, for argmax/argmin); other operations ignore it.
    fn lift(x: Self::In, pos: i64) -> Self::Agg;
    /// A null input row is skipped (it contributes the identity) by every
    /// operation but Spark's positional ones: `first` / `last` without
    /// `ignorenulls` take the frame's first / last *row*, null or not. Those
    /// set this and lift a null row with [`AggOp::lift_null`].
    const NULL_IS_ROW: bool = false;
    /// The partial of a null row (the identity unless `NULL_IS_ROW`).
    #[inline(always)]
    fn lift_null(_pos: i64) -> Self::Agg {
        Self::identity()
    }
    /// `None` means a null result (e.g. the max of an empty window).
    fn lower(a: &Self::Agg) -> Option<Self::Out>;
    /// Fold the null-free rows `xs` (row positions from `pos0`) into `acc`,
    /// oldest first: what partial aggregation does per batch. sum / count /
    /// mean / min / max override it with a SIMD pane reduction
    /// ([`crate::ops::reduce`]).
    #[inline]
    fn fold_rows(acc: &mut Self::Agg, xs: &[Self::In], pos0: i64) {
        fold_each::<Self>(acc, xs, pos0)
    }
}

/// [`AggOp::fold_rows`] row by row: each row lifted and combined in (the
/// default, and an override's fallback).
#[inline]
pub fn fold_each<M: AggOp + ?Sized>(acc: &mut M::Agg, xs: &[M::In], pos0: i64) {
    for (k, &x) in xs.iter().enumerate() {
        M::combine_into(acc, &M::lift(x, pos0 + k as i64));
    }
}

/// Fold a slice of partials left to right.
#[inline]
pub fn fold<M: Monoid>(xs: &[M::Agg]) -> M::Agg {
    let mut acc = M::identity();
    for x in xs {
        M::combine_into(&mut acc, x);
    }
    acc
}
