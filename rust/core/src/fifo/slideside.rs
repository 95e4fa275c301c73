//! SlideSide (SlideSide paper §3): TwoStacks extended so that one stream
//! answers many window sizes, i.e. `query_last(k)` for several `k`, from
//! shared prefix and suffix scans over one array of partials.
//!
//! Layout (paper Fig. 2, Algorithm 1): `items` holds the partials (the
//! paper's *elements*; evicted slots before `head` are dropped on flip).
//! `items[head..split]` is the front: its suffix scan `rsuf` (the paper's
//! *frontStack*, stored newest first) is computed when it is formed.
//! `items[split..]` is the back: its prefix scan `pre` (the paper's
//! *backStack*, `pre[0]` the identity) grows with every insert
//! (Algorithm 2, line 6). A flip (Algorithm 2, lines 2-4) makes the whole
//! window the front. The paper flips when its circular buffer of the
//! largest window size wraps; a FIFO of varying length flips when the front
//! runs empty, as TwoStacks does. `query_last(k)` follows Algorithm 3 with
//! `i = len - k` the start of the range:
//!
//! * the range starts in the front (the paper's "wrapped" case c):
//!   `rsuf(i) ⊕ pre[last]`, O(1);
//! * it is exactly the back (case a): `pre[last]`, O(1);
//! * it starts inside the back (case b): with an inverse (§3.1)
//!   `pre[last] ⊖ pre[start]`, O(1).
//!
//! Non-invertible operations (§3.2): the paper shares the stacks between
//! the queries and "triggers the suffix-scan every time the query with the
//! smallest window size starts to evict", so that every range reaches into
//! the front. The trait does not announce the window sizes, so this tracks
//! the smallest `k` asked for that fell inside the back (`min_k`) and flips
//! early once the back grows past it, as long as that costs O(1) amortised
//! (a flip is O(len) every `min_k` inserts, done only while
//! `len <= EARLY_FLIP_RATIO * min_k`). Otherwise a range inside the back is
//! folded, O(k).

use super::{FifoAggregator, New};
use crate::monoid::Monoid;

/// Early flips (non-invertible case) cost at most this many combines per
/// insert, amortised.
const EARLY_FLIP_RATIO: usize = 8;

pub struct SlideSide<M: Monoid> {
    items: Vec<M::Agg>,
    head: usize,
    split: usize,
    /// `rsuf[j]` = aggregate of `items[split-1-j .. split]` (suffix scan).
    rsuf: Vec<M::Agg>,
    /// `pre[j]` = aggregate of `items[split .. split+j]` (prefix scan).
    pre: Vec<M::Agg>,
    /// Smallest `k` of a `query_last` that fell inside the back (non-invertible).
    min_k: usize,
}

impl<M: Monoid> SlideSide<M> {
    pub fn with_capacity(capacity: usize) -> Self {
        let cap = capacity.min(1 << 20);
        let mut pre = Vec::with_capacity(cap + 1);
        pre.push(M::identity());
        SlideSide {
            items: Vec::with_capacity(cap),
            head: 0,
            split: 0,
            rsuf: Vec::with_capacity(cap),
            pre,
            min_k: usize::MAX,
        }
    }

    #[inline(always)]
    fn back_agg(&self) -> &M::Agg {
        self.pre.last().unwrap()
    }

    /// Aggregate of `items[i..split]`, `head <= i < split`.
    #[inline(always)]
    fn front_from(&self, i: usize) -> &M::Agg {
        &self.rsuf[self.split - 1 - i]
    }

    /// Drop `items[..keep_from]`; the rest becomes the front (suffix scan).
    fn flip(&mut self, keep_from: usize) {
        self.items.drain(..keep_from);
        self.head = 0;
        self.split = self.items.len();
        super::suffix_scan::<M>(&self.items, &mut self.rsuf);
        self.pre.truncate(1);
    }

    /// §3.2: keep the back no longer than the smallest range asked for, when
    /// that is cheap enough.
    #[inline]
    fn maybe_flip_early(&mut self) {
        if !M::INVERTIBLE
            && self.pre.len() - 1 > self.min_k
            && self.len() <= EARLY_FLIP_RATIO.saturating_mul(self.min_k)
        {
            self.flip(self.head);
        }
    }
}

impl<M: Monoid> FifoAggregator<M> for SlideSide<M> {
    #[inline]
    fn insert(&mut self, v: M::Agg) {
        let p = M::combine(self.back_agg(), &v);
        self.pre.push(p);
        self.items.push(v);
        if !M::INVERTIBLE && self.min_k != usize::MAX {
            self.maybe_flip_early();
        }
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
            self.back_agg().clone()
        } else {
            M::combine(self.front_from(self.head), self.back_agg())
        }
    }

    fn query_last(&mut self, k: usize) -> M::Agg {
        let n = self.items.len();
        let k = k.min(n - self.head);
        let blen = n - self.split;
        if k == 0 {
            M::identity()
        } else if k > blen {
            M::combine(self.front_from(n - k), self.back_agg())
        } else if k == blen {
            self.back_agg().clone()
        } else if M::INVERTIBLE {
            M::inverse(self.back_agg(), &self.pre[blen - k])
        } else {
            self.min_k = self.min_k.min(k);
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
        self.pre.reserve(vs.len());
        for v in vs {
            let p = M::combine(self.back_agg(), v);
            self.pre.push(p);
        }
        self.items.extend_from_slice(vs);
        if !M::INVERTIBLE && self.min_k != usize::MAX {
            self.maybe_flip_early();
        }
    }

    fn bulk_evict(&mut self, n: usize) {
        let n = n.min(self.len());
        if self.head + n <= self.split {
            self.head += n;
        } else {
            self.flip(self.head + n);
        }
    }
}

impl<M: Monoid> New for SlideSide<M> {
    fn new_with_capacity(capacity: usize) -> crate::Result<Self> {
        Ok(Self::with_capacity(capacity))
    }
}
