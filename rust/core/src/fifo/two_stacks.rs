//! TwoStacks (SlideSide paper §2, Fig. 1; Hirzel et al. DEBS'17), laid out
//! flat as in Hammer Slide: one array of partials instead of two stacks of
//! nodes.
//!
//! `items[head..split]` is the *front* stack (older partials, next to evict)
//! and `items[split..]` the *back* stack (newer ones). The front keeps its
//! suffix aggregates in `rsuf` (built on flip, stored newest first so the
//! flip pushes in order); the back keeps only its running aggregate
//! (Hammer Slide's "top value only" optimisation). Evicting moves `head`;
//! when the front is empty the next evict *flips*: the evicted slots are
//! dropped and the back becomes the front with fresh suffix aggregates.
//! O(1) amortised insert/evict, O(1) query: `combine(front_agg, back_agg)`,
//! front first since it is older (operations need not commute).

use super::{FifoAggregator, New};
use crate::monoid::Monoid;

pub struct TwoStacks<M: Monoid> {
    /// Window partials (plus evicted ones before `head`, dropped on flip).
    items: Vec<M::Agg>,
    /// First live partial.
    head: usize,
    /// First partial of the back stack.
    split: usize,
    /// `rsuf[j]` = aggregate of `items[split-1-j .. split]`.
    rsuf: Vec<M::Agg>,
    /// Aggregate of `items[split..]`.
    back_agg: M::Agg,
    /// The most partials the window is expected to hold: `items` (window
    /// plus evicted slots not yet dropped) stays within twice that, `rsuf`
    /// within it, so their growth stops there.
    bound: usize,
}

impl<M: Monoid> TwoStacks<M> {
    pub fn with_capacity(capacity: usize) -> Self {
        let cap = capacity.min(1 << 20);
        TwoStacks {
            items: Vec::with_capacity(cap),
            head: 0,
            split: 0,
            rsuf: Vec::with_capacity(cap),
            back_agg: M::identity(),
            bound: usize::MAX,
        }
    }

    /// Aggregate of `items[i..split]`, `head <= i < split`.
    #[inline]
    fn front_from(&self, i: usize) -> &M::Agg {
        &self.rsuf[self.split - 1 - i]
    }

    /// Drop `items[..keep_from]` and make everything left the front stack.
    fn flip(&mut self, keep_from: usize) {
        self.items.drain(..keep_from);
        self.head = 0;
        self.split = self.items.len();
        self.rsuf.clear();
        reserve(&mut self.rsuf, self.split, self.bound);
        super::suffix_scan::<M>(&self.items, &mut self.rsuf);
        self.back_agg = M::identity();
    }
}

impl<M: Monoid> FifoAggregator<M> for TwoStacks<M> {
    #[inline]
    fn insert(&mut self, v: M::Agg) {
        M::combine_into(&mut self.back_agg, &v);
        reserve(&mut self.items, 1, self.bound.saturating_mul(2));
        self.items.push(v);
    }

    #[inline]
    fn evict(&mut self) {
        if self.head == self.split {
            if self.split == self.items.len() {
                return;
            }
            self.flip(self.head);
        }
        self.head += 1;
    }

    #[inline]
    fn query(&mut self) -> M::Agg {
        if self.head == self.split {
            self.back_agg.clone()
        } else {
            M::combine(self.front_from(self.head), &self.back_agg)
        }
    }

    fn query_last(&mut self, k: usize) -> M::Agg {
        let n = self.items.len();
        let k = k.min(n - self.head);
        let blen = n - self.split;
        if k > blen {
            // Spans into the front: its suffix aggregate is stored. O(1).
            M::combine(self.front_from(n - k), &self.back_agg)
        } else if k == blen {
            self.back_agg.clone()
        } else {
            // Inside the back stack, which keeps only its total: O(k).
            crate::monoid::fold::<M>(&self.items[n - k..])
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.items.len() - self.head
    }

    fn contents(&self) -> Vec<M::Agg> {
        self.items[self.head..].to_vec()
    }

    fn bulk_insert(&mut self, vs: &[M::Agg]) {
        for v in vs {
            M::combine_into(&mut self.back_agg, v);
        }
        reserve(&mut self.items, vs.len(), self.bound.saturating_mul(2));
        self.items.extend_from_slice(vs);
    }

    fn bulk_evict(&mut self, n: usize) {
        let n = n.min(self.len());
        if self.head + n <= self.split {
            self.head += n;
        } else {
            // Evicting into the back: rebuild once over what stays, O(len).
            self.flip(self.head + n);
        }
    }
}

impl<M: Monoid> New for TwoStacks<M> {
    fn new_with_capacity(capacity: usize) -> crate::Result<Self> {
        Ok(Self::with_capacity(capacity))
    }
    fn lazy(bound: usize) -> crate::Result<Self> {
        Ok(TwoStacks { bound, ..Self::with_capacity(0) })
    }
}

/// Room for `extra` more items in `v`, grown by [`super::next_capacity`]
/// (exact up to `bound`) rather than Vec's doubling.
#[inline]
fn reserve<T>(v: &mut Vec<T>, extra: usize, bound: usize) {
    let need = v.len() + extra;
    if need > v.capacity() {
        let cap = super::next_capacity(v.capacity(), need, bound);
        v.reserve_exact(cap - v.len());
    }
}
