//! B-Int, base intervals (Arasu & Widom, VLDB'04), as described in the
//! FlatFIT paper (Shein et al. SSDBM'17) §2.2 and Figure 5.
//!
//! Level `l` holds the dyadic intervals of length `2^l` over absolute
//! positions, `[j 2^l, (j+1) 2^l)`, each in a circular array of `cap >> l`
//! slots (`cap = 2^k` bounds the window; the top level is one interval of the
//! whole range). All levels live in one flat array: level `l` occupies
//! `[cap >> l, 2 (cap >> l))`, so the interval of level `l` holding position
//! `p` is `(cap + p mod cap) >> l`, and its two halves are at `2i`, `2i+1`.
//!
//! * Insert (§2.2: "B-Int only updates the intervals that end with the
//!   inserted value"): write the level-0 interval, then recompute the
//!   intervals of the levels whose interval ends at this position, i.e. one
//!   per trailing one bit of the position (amortised 1, at most `k`).
//! * Evict moves the front; intervals that reach before it are never read.
//! * Query decomposes the window `[front, back)` into the fewest dyadic
//!   intervals lying wholly inside it (greedy from the left: the longest
//!   aligned interval that fits), at most `2 log2 n`, and combines them
//!   oldest first. `query_last(k)` is the same on `[back - k, back)`.
//! * The capacity doubles when an insert finds the window full and halves
//!   when at most a quarter is used; a resize replays the inserts.
//!
//! An interval is recomputed only when its last position arrives, from
//! halves that were complete by then; slots are overwritten only `cap`
//! positions later, and the window never holds more than `cap` partials, so
//! every interval inside the window is current.

use super::{FifoAggregator, New};
use crate::monoid::Monoid;

const MAX_HINT: usize = 1 << 20;

pub struct BInt<M: Monoid> {
    /// `tree[1]` is the top level; level 0 at `cap..2cap`.
    tree: Vec<M::Agg>,
    cap: usize,
    log: u32,
    /// Absolute positions: the oldest partial and one past the newest.
    front: usize,
    back: usize,
    min_cap: usize,
}

impl<M: Monoid> BInt<M> {
    pub fn with_capacity(capacity: usize) -> Self {
        let cap = capacity.clamp(1, MAX_HINT).next_power_of_two().max(2);
        BInt {
            tree: vec![M::identity(); 2 * cap],
            cap,
            log: cap.trailing_zeros(),
            front: 0,
            back: 0,
            min_cap: cap,
        }
    }

    /// Store the partial of position `self.back` and update the intervals
    /// that end there.
    #[inline]
    fn put(&mut self, v: M::Agg) {
        let p = self.back;
        let mut i = self.cap + (p & (self.cap - 1));
        self.tree[i] = v;
        let mut q = p + 1;
        while q & 1 == 0 && i > 1 {
            i >>= 1;
            q >>= 1;
            let v = M::combine(&self.tree[2 * i], &self.tree[2 * i + 1]);
            self.tree[i] = v;
        }
        self.back = p + 1;
    }

    /// Aggregate of positions `[a, b)` inside the window, from base intervals.
    fn range(&self, mut a: usize, b: usize) -> M::Agg {
        let mut acc = M::identity();
        let mask = self.cap - 1;
        while a < b {
            // Longest interval aligned at `a` that fits in `[a, b)`.
            let fit = usize::BITS - 1 - (b - a).leading_zeros();
            let l = a.trailing_zeros().min(fit).min(self.log);
            M::combine_into(&mut acc, &self.tree[(self.cap + (a & mask)) >> l]);
            a += 1 << l;
        }
        acc
    }

    /// Rebuild with `new_cap` slots per level 0 by replaying the inserts.
    #[cold]
    #[inline(never)]
    fn resize(&mut self, new_cap: usize) {
        let old = std::mem::replace(&mut self.tree, vec![M::identity(); 2 * new_cap]);
        let (old_cap, front, back) = (self.cap, self.front, self.back);
        self.cap = new_cap;
        self.log = new_cap.trailing_zeros();
        self.back = front;
        let mut old = old;
        for p in front..back {
            let v = std::mem::replace(&mut old[old_cap + (p & (old_cap - 1))], M::identity());
            self.put(v);
        }
    }

    #[cold]
    #[inline(never)]
    fn maybe_shrink(&mut self) {
        let len = self.back - self.front;
        if self.cap > self.min_cap && len * 4 <= self.cap {
            let mut c = self.cap / 2;
            while c > self.min_cap && len * 4 <= c {
                c /= 2;
            }
            self.resize(c);
        }
    }
}

impl<M: Monoid> FifoAggregator<M> for BInt<M> {
    fn insert(&mut self, v: M::Agg) {
        if self.back - self.front == self.cap {
            self.resize(self.cap * 2);
        }
        self.put(v);
    }

    fn evict(&mut self) {
        if self.back > self.front {
            self.front += 1;
            self.maybe_shrink();
        }
    }

    fn query(&mut self) -> M::Agg {
        self.range(self.front, self.back)
    }

    fn query_last(&mut self, k: usize) -> M::Agg {
        let k = k.min(self.back - self.front);
        self.range(self.back - k, self.back)
    }

    fn len(&self) -> usize {
        self.back - self.front
    }

    fn contents(&self) -> Vec<M::Agg> {
        let mask = self.cap - 1;
        (self.front..self.back).map(|p| self.tree[self.cap + (p & mask)].clone()).collect()
    }

    fn bulk_evict(&mut self, n: usize) {
        self.front += n.min(self.back - self.front);
        self.maybe_shrink();
    }
}

impl<M: Monoid> New for BInt<M> {
    fn new_with_capacity(capacity: usize) -> crate::Result<Self> {
        Ok(Self::with_capacity(capacity))
    }
}
