//! FlatFAT, FIFO form (Reactive Aggregator paper, Tangwongsan et al. VLDB'15,
//! §4 and §5.1-5.2).
//!
//! A complete binary tree over `cap = 2^k` leaves kept in one flat array with
//! the heap numbering of §4.3: the root is `tree[1]`, node `i` has children
//! `2i` and `2i+1`, and leaf `j` is `tree[cap + j]`; every internal node holds
//! `combine(left, right)` (invariant 4.1). The leaves are the circular buffer
//! of §5.1.1 holding the window, with identity in the unused slots, so:
//!
//! * insert writes the leaf after the back and recomputes its path to the
//!   root (Algorithm 2 with one write): `log2 cap` combines;
//! * evict writes the identity into the front leaf and recomputes its path;
//! * query is the root when the buffer is not inverted, and
//!   `suffix(front) ⊕ prefix(back)` when it is (§5.1.2, the "inverted
//!   buffer"): the oldest partials come first, so non-commutative operations
//!   stay correct;
//! * `query_last(k)` is a range query over the leaves, split in two the same
//!   way when the range wraps;
//! * the capacity doubles when an insert finds the buffer full and halves
//!   when an eviction leaves it at most a quarter full (§5.1.1); a resize
//!   rebuilds the tree with Algorithm 1 (`new`, `cap - 1` combines).
//!
//! Bulk inserts and evictions write all their leaves first and then update
//! the affected internal nodes level by level (Algorithm 2), which costs
//! `O(m + m log(n/m))` combines instead of `m log n`.

use super::{FifoAggregator, New};
use crate::monoid::Monoid;

/// Largest capacity the hint may pre-allocate (the window may still grow).
const MAX_HINT: usize = 1 << 20;

pub struct FlatFat<M: Monoid> {
    /// `tree[0]` is unused; `tree[1]` is the root; leaves at `cap..2cap`.
    tree: Vec<M::Agg>,
    cap: usize,
    /// Leaf index (`0..cap`) of the oldest partial.
    front: usize,
    len: usize,
    /// Never shrink below the capacity asked for at construction.
    min_cap: usize,
}

impl<M: Monoid> FlatFat<M> {
    pub fn with_capacity(capacity: usize) -> Self {
        let cap = capacity.clamp(1, MAX_HINT).next_power_of_two().max(2);
        FlatFat { tree: vec![M::identity(); 2 * cap], cap, front: 0, len: 0, min_cap: cap }
    }

    /// Recompute the ancestors of node `i` (a leaf), bottom-up.
    #[inline]
    fn update_path(&mut self, mut i: usize) {
        i >>= 1;
        while i >= 1 {
            let v = M::combine(&self.tree[2 * i], &self.tree[2 * i + 1]);
            self.tree[i] = v;
            i >>= 1;
        }
    }

    /// Recompute the ancestors of the leaves `a..b` (`a < b <= cap`) level by
    /// level (RA Algorithm 2 for a contiguous run of writes).
    fn update_range(&mut self, a: usize, b: usize) {
        let (mut lo, mut hi) = (self.cap + a, self.cap + b - 1);
        while lo > 1 {
            lo >>= 1;
            hi >>= 1;
            for i in lo..=hi {
                let v = M::combine(&self.tree[2 * i], &self.tree[2 * i + 1]);
                self.tree[i] = v;
            }
        }
    }

    /// `a[j] ⊕ ... ⊕ a[cap-1]` (the symmetric of RA Algorithm 3).
    fn suffix(&self, j: usize) -> M::Agg {
        let mut v = self.cap + j;
        let mut acc = self.tree[v].clone();
        while v > 1 {
            if v & 1 == 0 {
                M::combine_into(&mut acc, &self.tree[v + 1]);
            }
            v >>= 1;
        }
        acc
    }

    /// `a[0] ⊕ ... ⊕ a[i]` (RA Algorithm 3).
    fn prefix(&self, i: usize) -> M::Agg {
        let mut v = self.cap + i;
        let mut acc = self.tree[v].clone();
        while v > 1 {
            if v & 1 == 1 {
                acc = M::combine(&self.tree[v - 1], &acc);
            }
            v >>= 1;
        }
        acc
    }

    /// `a[l] ⊕ ... ⊕ a[r-1]` for `l < r <= cap`, bottom-up, keeping the
    /// left and right parts apart so the order is preserved.
    fn range(&self, l: usize, r: usize) -> M::Agg {
        let (mut l, mut r) = (l + self.cap, r + self.cap);
        let mut left = M::identity();
        let mut right = M::identity();
        while l < r {
            if l & 1 == 1 {
                M::combine_into(&mut left, &self.tree[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                right = M::combine(&self.tree[r], &right);
            }
            l >>= 1;
            r >>= 1;
        }
        M::combine_into(&mut left, &right);
        left
    }

    /// Rebuild with `new_cap` leaves, the window moved to leaves `0..len`
    /// (RA Algorithm 1, `new`).
    #[cold]
    #[inline(never)]
    fn resize(&mut self, new_cap: usize) {
        debug_assert!(new_cap >= self.len && new_cap.is_power_of_two());
        let mut tree = vec![M::identity(); 2 * new_cap];
        let mask = self.cap - 1;
        for k in 0..self.len {
            let src = self.cap + ((self.front + k) & mask);
            tree[new_cap + k] = std::mem::replace(&mut self.tree[src], M::identity());
        }
        for i in (1..new_cap).rev() {
            tree[i] = M::combine(&tree[2 * i], &tree[2 * i + 1]);
        }
        self.tree = tree;
        self.cap = new_cap;
        self.front = 0;
    }

    #[cold]
    #[inline(never)]
    fn maybe_shrink(&mut self) {
        if self.cap > self.min_cap && self.len * 4 <= self.cap {
            let mut c = self.cap / 2;
            while c > self.min_cap && self.len * 4 <= c {
                c /= 2;
            }
            self.resize(c);
        }
    }

    /// Aggregate of the `k` partials starting at leaf `start` (`0 < k <= len`).
    fn run(&self, start: usize, k: usize) -> M::Agg {
        let end = start + k;
        if end <= self.cap {
            self.range(start, end)
        } else {
            // Inverted: the oldest part sits at the end of the leaves.
            let a = self.suffix(start);
            let b = self.prefix(end - self.cap - 1);
            M::combine(&a, &b)
        }
    }
}

impl<M: Monoid> FifoAggregator<M> for FlatFat<M> {
    fn insert(&mut self, v: M::Agg) {
        if self.len == self.cap {
            self.resize(self.cap * 2);
        }
        let leaf = self.cap + ((self.front + self.len) & (self.cap - 1));
        self.tree[leaf] = v;
        self.update_path(leaf);
        self.len += 1;
    }

    fn evict(&mut self) {
        if self.len == 0 {
            return;
        }
        let leaf = self.cap + self.front;
        self.tree[leaf] = M::identity();
        self.update_path(leaf);
        self.front = (self.front + 1) & (self.cap - 1);
        self.len -= 1;
        self.maybe_shrink();
    }

    fn query(&mut self) -> M::Agg {
        if self.len == 0 {
            M::identity()
        } else if self.front + self.len <= self.cap {
            // Not inverted: the unused leaves hold the identity.
            self.tree[1].clone()
        } else {
            let a = self.suffix(self.front);
            let b = self.prefix(self.front + self.len - self.cap - 1);
            M::combine(&a, &b)
        }
    }

    fn query_last(&mut self, k: usize) -> M::Agg {
        let k = k.min(self.len);
        if k == 0 {
            return M::identity();
        }
        if k == self.len {
            return self.query();
        }
        let start = (self.front + self.len - k) & (self.cap - 1);
        self.run(start, k)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn contents(&self) -> Vec<M::Agg> {
        let mask = self.cap - 1;
        (0..self.len).map(|k| self.tree[self.cap + ((self.front + k) & mask)].clone()).collect()
    }

    fn bulk_insert(&mut self, vs: &[M::Agg]) {
        let m = vs.len();
        if m == 0 {
            return;
        }
        if self.len + m > self.cap {
            let mut c = self.cap * 2;
            while self.len + m > c {
                c *= 2;
            }
            self.resize(c);
        }
        let start = (self.front + self.len) & (self.cap - 1);
        let first = m.min(self.cap - start);
        for (k, v) in vs.iter().enumerate() {
            self.tree[self.cap + ((start + k) & (self.cap - 1))] = v.clone();
        }
        self.update_range(start, start + first);
        if first < m {
            self.update_range(0, m - first);
        }
        self.len += m;
    }

    fn bulk_evict(&mut self, n: usize) {
        let n = n.min(self.len);
        if n == 0 {
            return;
        }
        let mask = self.cap - 1;
        for k in 0..n {
            self.tree[self.cap + ((self.front + k) & mask)] = M::identity();
        }
        let first = n.min(self.cap - self.front);
        self.update_range(self.front, self.front + first);
        if first < n {
            self.update_range(0, n - first);
        }
        self.front = (self.front + n) & mask;
        self.len -= n;
        self.maybe_shrink();
    }
}

impl<M: Monoid> New for FlatFat<M> {
    fn new_with_capacity(capacity: usize) -> crate::Result<Self> {
        Ok(Self::with_capacity(capacity))
    }
}
