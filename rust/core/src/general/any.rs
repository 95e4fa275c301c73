//! One out-of-order aggregator of whichever algorithm the caller named,
//! chosen at run time (as [`crate::fifo::AnyFifo`] for FIFO windows): the
//! out-of-order time-window operator compiles once per (operation, dtype)
//! instead of once per algorithm too, and reaches the algorithm through a
//! `match` that never changes its arm.

use super::{Cbix, GeneralAggregator, GeneralFlatFat, GeneralRecalc, LateAlgorithm, NewGeneral, TwoStacksExt};
use crate::monoid::Monoid;
use crate::Result;

pub enum AnyGeneral<M: Monoid> {
    Cbix(Cbix<M>),
    FlatFat(GeneralFlatFat<M>),
    TwoStacks(TwoStacksExt<M>),
    Recalc(GeneralRecalc<M>),
}

macro_rules! each {
    ($self:expr, |$a:ident| $body:expr) => {
        match $self {
            AnyGeneral::Cbix($a) => $body,
            AnyGeneral::FlatFat($a) => $body,
            AnyGeneral::TwoStacks($a) => $body,
            AnyGeneral::Recalc($a) => $body,
        }
    };
}

impl<M: Monoid> AnyGeneral<M> {
    /// An empty aggregator of `algo` (resolved: not `Auto`) for windows of
    /// about `window` slots; refuses an operation the algorithm cannot run.
    pub fn new(algo: LateAlgorithm, window: usize) -> Result<Self> {
        algo.check::<M>()?;
        Ok(match algo {
            LateAlgorithm::Cbix => AnyGeneral::Cbix(NewGeneral::new_general(window)?),
            LateAlgorithm::FlatFat => AnyGeneral::FlatFat(NewGeneral::new_general(window)?),
            LateAlgorithm::TwoStacks => AnyGeneral::TwoStacks(NewGeneral::new_general(window)?),
            LateAlgorithm::Recalc => AnyGeneral::Recalc(NewGeneral::new_general(window)?),
            LateAlgorithm::Auto => unreachable!("resolve the algorithm first"),
        })
    }
}

impl<M: Monoid> GeneralAggregator<M> for AnyGeneral<M> {
    #[inline]
    fn insert(&mut self, id: u64, v: M::Agg) -> Result<()> {
        each!(self, |a| a.insert(id, v))
    }
    fn bulk_insert(&mut self, ups: &[(u64, M::Agg)]) -> Result<()> {
        each!(self, |a| a.bulk_insert(ups))
    }
    fn bulk_set(&mut self, ups: &[(u64, M::Agg)]) -> Result<()> {
        each!(self, |a| a.bulk_set(ups))
    }
    #[inline]
    fn evict(&mut self, id: u64) {
        each!(self, |a| a.evict(id))
    }
    #[inline]
    fn evict_upto(&mut self, id: u64) {
        each!(self, |a| a.evict_upto(id))
    }
    #[inline]
    fn query(&mut self) -> M::Agg {
        each!(self, |a| a.query())
    }
    #[inline]
    fn len(&self) -> usize {
        each!(self, |a| a.len())
    }
    #[inline]
    fn end(&self) -> u64 {
        each!(self, |a| a.end())
    }
    fn contents(&self) -> Vec<(u64, M::Agg)> {
        each!(self, |a| a.contents())
    }
}
