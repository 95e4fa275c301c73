//! One FIFO aggregator of whichever algorithm the caller named, chosen at
//! run time: an enum over the eight algorithms of this module.
//!
//! Why: the stream layers (count windows, time windows, keyed states,
//! per-row rolling with a named algorithm) were generic over (operation,
//! algorithm), so each was compiled 72 x 8 = 576 times; they are now
//! compiled once per (operation, dtype) over `AnyFifo<M>`. The per-row
//! rolling loops (`rolling::rolling_with`, `rolling::time::rolling_time_with`)
//! stay instantiated per algorithm: they are small, and there a match per
//! row measured 1.75x slower. The algorithms
//! themselves are still monomorphised per operation, and a call reaches
//! one through a `match` on a discriminant that never changes for the
//! aggregator's life (perfectly predicted, and inlinable, unlike a virtual
//! call).

use super::{
    Algorithm, BInt, Daba, FifoAggregator, FlatFat, FlatFit, New, Recalc, SlideSide, SubtractOnEvict, TwoStacks,
};
use crate::monoid::Monoid;
use crate::Result;

pub enum AnyFifo<M: Monoid> {
    Recalc(Recalc<M>),
    Soe(SubtractOnEvict<M>),
    TwoStacks(TwoStacks<M>),
    Daba(Daba<M>),
    FlatFat(FlatFat<M>),
    BInt(BInt<M>),
    FlatFit(FlatFit<M>),
    SlideSide(SlideSide<M>),
}

/// `$body` with `$a` bound to the aggregator inside `$self`, whatever its
/// algorithm.
macro_rules! each {
    ($self:expr, |$a:ident| $body:expr) => {
        match $self {
            AnyFifo::Recalc($a) => $body,
            AnyFifo::Soe($a) => $body,
            AnyFifo::TwoStacks($a) => $body,
            AnyFifo::Daba($a) => $body,
            AnyFifo::FlatFat($a) => $body,
            AnyFifo::BInt($a) => $body,
            AnyFifo::FlatFit($a) => $body,
            AnyFifo::SlideSide($a) => $body,
        }
    };
}

impl<M: Monoid> AnyFifo<M> {
    /// `make::<A>()` for the concrete type `A` of `algo` (resolved: not
    /// `Auto`; checked: SoE only for invertible operations).
    fn build(algo: Algorithm, make: impl MakeWith) -> Result<Self> {
        algo.check::<M>()?;
        Ok(match algo {
            Algorithm::Recalc => AnyFifo::Recalc(make.make()?),
            Algorithm::Soe => AnyFifo::Soe(make.make()?),
            Algorithm::TwoStacks => AnyFifo::TwoStacks(make.make()?),
            Algorithm::Daba => AnyFifo::Daba(make.make()?),
            Algorithm::FlatFat => AnyFifo::FlatFat(make.make()?),
            Algorithm::BInt => AnyFifo::BInt(make.make()?),
            Algorithm::FlatFit => AnyFifo::FlatFit(make.make()?),
            Algorithm::SlideSide => AnyFifo::SlideSide(make.make()?),
            Algorithm::Auto => unreachable!("resolve the algorithm first"),
        })
    }

    /// An empty aggregator of `algo` with room for `capacity` partials
    /// ([`New::new_with_capacity`]).
    pub fn new(algo: Algorithm, capacity: usize) -> Result<Self> {
        Self::build(algo, Capacity(capacity))
    }

    /// An empty aggregator of `algo` for one key of a keyed stream
    /// ([`New::lazy`]).
    pub fn lazy(algo: Algorithm, bound: usize) -> Result<Self> {
        Self::build(algo, Lazy(bound))
    }

    pub fn algorithm(&self) -> Algorithm {
        match self {
            AnyFifo::Recalc(_) => Algorithm::Recalc,
            AnyFifo::Soe(_) => Algorithm::Soe,
            AnyFifo::TwoStacks(_) => Algorithm::TwoStacks,
            AnyFifo::Daba(_) => Algorithm::Daba,
            AnyFifo::FlatFat(_) => Algorithm::FlatFat,
            AnyFifo::BInt(_) => Algorithm::BInt,
            AnyFifo::FlatFit(_) => Algorithm::FlatFit,
            AnyFifo::SlideSide(_) => Algorithm::SlideSide,
        }
    }
}

/// A constructor call generic over the concrete algorithm type.
trait MakeWith {
    fn make<A: New>(&self) -> Result<A>;
}
struct Capacity(usize);
impl MakeWith for Capacity {
    fn make<A: New>(&self) -> Result<A> {
        A::new_with_capacity(self.0)
    }
}
struct Lazy(usize);
impl MakeWith for Lazy {
    fn make<A: New>(&self) -> Result<A> {
        A::lazy(self.0)
    }
}

impl<M: Monoid> FifoAggregator<M> for AnyFifo<M> {
    #[inline]
    fn insert(&mut self, v: M::Agg) {
        each!(self, |a| a.insert(v))
    }
    #[inline]
    fn evict(&mut self) {
        each!(self, |a| a.evict())
    }
    #[inline]
    fn query(&mut self) -> M::Agg {
        each!(self, |a| a.query())
    }
    #[inline]
    fn query_last(&mut self, k: usize) -> M::Agg {
        each!(self, |a| a.query_last(k))
    }
    #[inline]
    fn len(&self) -> usize {
        each!(self, |a| a.len())
    }
    fn contents(&self) -> Vec<M::Agg> {
        each!(self, |a| a.contents())
    }
    fn bulk_insert(&mut self, vs: &[M::Agg]) {
        each!(self, |a| a.bulk_insert(vs))
    }
    fn bulk_evict(&mut self, n: usize) {
        each!(self, |a| a.bulk_evict(n))
    }
}

/// An empty aggregator of the same algorithm as one the caller holds: what
/// a keyed stream needs for a new key, whether its states hold a concrete
/// algorithm type or an [`AnyFifo`].
pub trait Renew: Sized {
    fn renew(&self, bound: usize) -> Result<Self>;
}
impl<A: New> Renew for A {
    fn renew(&self, bound: usize) -> Result<Self> {
        A::lazy(bound)
    }
}
impl<M: Monoid> Renew for AnyFifo<M> {
    fn renew(&self, bound: usize) -> Result<Self> {
        AnyFifo::lazy(self.algorithm(), bound)
    }
}
