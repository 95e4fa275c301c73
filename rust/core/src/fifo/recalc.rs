//! Naive / Recalc (FlatFIT paper §2.2): keep the partials in a ring buffer and
//! fold the whole window on every query. O(n) per query; the oracle every
//! other algorithm is tested against.

use std::collections::VecDeque;

use super::FifoAggregator;
use crate::monoid::Monoid;

pub struct Recalc<M: Monoid> {
    buf: VecDeque<M::Agg>,
}

impl<M: Monoid> Recalc<M> {
    pub fn with_capacity(capacity: usize) -> Self {
        Recalc { buf: VecDeque::with_capacity(capacity.min(1 << 20)) }
    }
}

impl<M: Monoid> FifoAggregator<M> for Recalc<M> {
    fn insert(&mut self, v: M::Agg) {
        self.buf.push_back(v);
    }
    fn evict(&mut self) {
        self.buf.pop_front();
    }
    fn query(&mut self) -> M::Agg {
        let mut acc = M::identity();
        for v in &self.buf {
            M::combine_into(&mut acc, v);
        }
        acc
    }
    fn query_last(&mut self, k: usize) -> M::Agg {
        let mut acc = M::identity();
        for v in self.buf.iter().skip(self.buf.len().saturating_sub(k)) {
            M::combine_into(&mut acc, v);
        }
        acc
    }
    fn len(&self) -> usize {
        self.buf.len()
    }
    fn contents(&self) -> Vec<M::Agg> {
        self.buf.iter().cloned().collect()
    }
}

impl<M: Monoid> super::New for Recalc<M> {
    fn new_with_capacity(capacity: usize) -> crate::Result<Self> {
        Ok(Self::with_capacity(capacity))
    }
}

/// Temporary stand-in used while an algorithm's file is being written.
#[macro_export]
macro_rules! stub_algorithm {
    ($t:ident) => {
        pub struct $t<M: $crate::Monoid>($crate::fifo::Recalc<M>);
        impl<M: $crate::Monoid> $crate::fifo::New for $t<M> {
            fn new_with_capacity(c: usize) -> $crate::Result<Self> {
                Ok($t($crate::fifo::Recalc::with_capacity(c)))
            }
        }
        impl<M: $crate::Monoid> $crate::fifo::FifoAggregator<M> for $t<M> {
            fn insert(&mut self, v: M::Agg) { self.0.insert(v) }
            fn evict(&mut self) { self.0.evict() }
            fn query(&mut self) -> M::Agg { self.0.query() }
            fn query_last(&mut self, k: usize) -> M::Agg { self.0.query_last(k) }
            fn len(&self) -> usize { self.0.len() }
            fn contents(&self) -> Vec<M::Agg> { self.0.contents() }
        }
    };
}
