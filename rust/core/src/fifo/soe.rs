//! Subtract-on-Evict (SlideSide paper §2; Hirzel et al. DEBS'17): keep the
//! window's partials in a ring buffer and one running aggregate; insert
//! combines the new partial in, evict takes the oldest out with
//! `M::inverse`. O(1) per step, one partial of state besides the buffer.
//! Needs an invertible operation: construction refuses any other.
//!
//! Drift: float inverses are not exact (a compensated `FSum` keeps the error
//! tiny, Chan's unmerge for var less so). To keep it bounded on long
//! streams the running aggregate is recomputed from the buffer once as many
//! evictions as the window holds have happened since the last recomputation:
//! a fold of `len()` partials every `len()` evictions, O(1) amortised, and
//! the error never accumulates over more than about two windows' worth of
//! steps.

use std::mem;

use super::{FifoAggregator, New};
use crate::monoid::Monoid;
use crate::Error;

pub struct SubtractOnEvict<M: Monoid> {
    /// Ring buffer of any length (a keyed stream sizes it to the window
    /// exactly); slots outside the window hold stale partials that are
    /// overwritten on insert.
    buf: Vec<M::Agg>,
    head: usize,
    len: usize,
    /// Aggregate of the window.
    acc: M::Agg,
    /// Evictions since `acc` was last recomputed from the buffer.
    since_rebuild: usize,
    /// The most partials the window is expected to hold (growth stops there).
    bound: usize,
}

impl<M: Monoid> SubtractOnEvict<M> {
    /// Slot of the `i`-th oldest partial, `i < buf.len()`.
    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        let j = self.head + i;
        if j >= self.buf.len() { j - self.buf.len() } else { j }
    }

    #[inline(always)]
    fn at(&self, i: usize) -> &M::Agg {
        &self.buf[self.slot(i)]
    }

    fn grow(&mut self) {
        let cap = super::next_capacity(self.buf.len(), self.len + 1, self.bound);
        let mut nb = Vec::with_capacity(cap);
        for i in 0..self.len {
            let j = self.slot(i);
            nb.push(mem::replace(&mut self.buf[j], M::identity()));
        }
        nb.resize(cap, M::identity());
        self.buf = nb;
        self.head = 0;
    }

    fn with_buffer(cap: usize, bound: usize) -> crate::Result<Self> {
        if !M::INVERTIBLE {
            return Err(Error::NotInvertible { algorithm: "soe", agg: M::NAME });
        }
        Ok(SubtractOnEvict {
            buf: vec![M::identity(); cap],
            head: 0,
            len: 0,
            acc: M::identity(),
            since_rebuild: 0,
            bound,
        })
    }

    /// Fold `n` partials starting `from` the oldest.
    fn fold_range(&self, from: usize, n: usize) -> M::Agg {
        let mut acc = M::identity();
        for i in from..from + n {
            M::combine_into(&mut acc, self.at(i));
        }
        acc
    }

    fn rebuild(&mut self) {
        self.acc = self.fold_range(0, self.len);
        self.since_rebuild = 0;
    }
}

impl<M: Monoid> FifoAggregator<M> for SubtractOnEvict<M> {
    #[inline]
    fn insert(&mut self, v: M::Agg) {
        if self.len == self.buf.len() {
            self.grow();
        }
        M::combine_into(&mut self.acc, &v);
        let i = self.slot(self.len);
        self.buf[i] = v;
        self.len += 1;
    }

    #[inline]
    fn evict(&mut self) {
        if self.len == 0 {
            return;
        }
        self.acc = M::inverse(&self.acc, &self.buf[self.head]);
        self.head = self.slot(1);
        self.len -= 1;
        self.since_rebuild += 1;
        if self.len == 0 {
            self.acc = M::identity();
            self.since_rebuild = 0;
        } else if self.since_rebuild >= self.len {
            self.rebuild();
        }
    }

    #[inline]
    fn query(&mut self) -> M::Agg {
        self.acc.clone()
    }

    fn query_last(&mut self, k: usize) -> M::Agg {
        let k = k.min(self.len);
        let drop = self.len - k;
        if drop == 0 {
            self.acc.clone()
        } else if drop < k {
            // Fewer partials to take out than to fold in.
            let mut a = M::inverse(&self.acc, self.at(0));
            for i in 1..drop {
                a = M::inverse(&a, self.at(i));
            }
            a
        } else {
            self.fold_range(drop, k)
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }

    fn contents(&self) -> Vec<M::Agg> {
        (0..self.len).map(|i| self.at(i).clone()).collect()
    }

    fn bulk_evict(&mut self, n: usize) {
        let n = n.min(self.len);
        if n * 2 <= self.len {
            for _ in 0..n {
                self.evict();
            }
        } else {
            // Most of the window goes: folding what stays is cheaper and exact.
            self.head = self.slot(n);
            self.len -= n;
            self.rebuild();
        }
    }
}

impl<M: Monoid> New for SubtractOnEvict<M> {
    fn new_with_capacity(capacity: usize) -> crate::Result<Self> {
        let cap = capacity.clamp(8, 1 << 20);
        Self::with_buffer(cap, cap)
    }
    fn lazy(bound: usize) -> crate::Result<Self> {
        Self::with_buffer(0, bound)
    }
}
