//! General FlatFAT, exactly as the Reactive Aggregator paper gives it for
//! windows that are not FIFO (RA §4.2, §5.1):
//!
//! * a complete binary tree over `cap` leaves (cap a power of two) stored
//!   flat, root at index 1, children of `v` at `2v`, `2v+1`, leaf `i` at
//!   `cap + i` (RA §4.3);
//! * the leaves are a circular buffer from the front pointer F over `used`
//!   positions; an evicted slot is ⊥ (`None`, the neutral marker: `x ⊕ ⊥ =
//!   x`), so a slot may leave from anywhere and leave a hole (RA §5.1.1);
//! * `update` of m leaves is Algorithm 2: set the leaves, then rewrite each
//!   affected inner node once, level by level: at most m(1 + ⌈log(n/m)⌉) ⊕;
//! * the answer is the root when the buffer is not inverted, and
//!   suffix(F) ⊕ prefix(B) (Algorithm 3 and its mirror) when the back has
//!   wrapped around before the front: the "inverted buffer" of RA §5.1.2;
//! * on insert into a full buffer: compact if at most 3/4 of it holds
//!   tuples, else resize to double; after an eviction below 1/4: resize to
//!   half (RA §5.1.1), so each event costs O(1) amortised besides the tree
//!   path.
//!
//! Slot ids are kept per leaf (holes keep their id as a tombstone so the
//! ids stay sorted); while no id was skipped, a slot's leaf is found by
//! arithmetic, otherwise by binary search over the circular order.

use super::{absent, opt_combine, propagate, update_path, GeneralAggregator, NewGeneral};
use crate::monoid::Monoid;
use crate::Result;

const MIN_CAP: usize = 4;

pub struct GeneralFlatFat<M: Monoid> {
    /// `tree[1]` root, leaves at `cap..2cap`; ⊥ = None.
    tree: Vec<Option<M::Agg>>,
    keys: Vec<u64>,
    cap: usize,
    /// Front pointer F (oldest position) and positions in use from F
    /// (present slots and holes).
    front: usize,
    used: usize,
    /// Present (non-⊥) slots: n_tuples of RA §5.1.
    count: usize,
    /// `keys` are consecutive from the front (no id skipped).
    dense: bool,
    end: u64,
    /// Reused level lists of Algorithm 2 (no allocation per slide).
    scratch: (Vec<usize>, Vec<usize>),
}

impl<M: Monoid> NewGeneral for GeneralFlatFat<M> {
    fn new_general(window: usize) -> Result<Self> {
        let cap = crate::fifo::capacity_hint(window).next_power_of_two().max(MIN_CAP);
        Ok(Self::with_capacity(cap))
    }
}

impl<M: Monoid> GeneralFlatFat<M> {
    fn with_capacity(cap: usize) -> Self {
        GeneralFlatFat {
            tree: vec![None; 2 * cap],
            keys: vec![0; cap],
            cap,
            front: 0,
            used: 0,
            count: 0,
            dense: true,
            end: 0,
            scratch: (Vec::new(), Vec::new()),
        }
    }

    #[inline]
    fn phys(&self, logical: usize) -> usize {
        (self.front + logical) & (self.cap - 1)
    }

    /// Position of slot `id` (present or a hole), if any.
    fn locate(&self, id: u64) -> Option<usize> {
        if self.used == 0 {
            return None;
        }
        let first = self.keys[self.front];
        if id < first {
            return None;
        }
        if self.dense {
            let i = (id - first) as usize;
            return (i < self.used).then(|| self.phys(i));
        }
        let (mut lo, mut hi) = (0usize, self.used);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.keys[self.phys(mid)] < id {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo < self.used && self.keys[self.phys(lo)] == id).then(|| self.phys(lo))
    }

    fn update_path(&mut self, pos: usize) {
        update_path::<M>(&mut self.tree, self.cap, pos);
    }

    /// Algorithm 2, lines 3-9: the leaves at `positions` changed.
    fn propagate(&mut self, positions: &mut Vec<usize>) {
        propagate::<M>(&mut self.tree, self.cap, positions, &mut self.scratch);
    }

    /// Algorithm 1 over all leaves: n - 1 ⊕ at most.
    fn build_all(&mut self) {
        for v in (1..self.cap).rev() {
            self.tree[v] = opt_combine::<M>(&self.tree[2 * v], &self.tree[2 * v + 1]);
        }
    }

    /// RA resize: a new FlatFAT of `cap` leaves holding the present slots,
    /// no holes, F at 0.
    fn resize(&mut self, cap: usize) {
        let items = self.contents();
        let end = self.end;
        *self = Self::with_capacity(cap.max(MIN_CAP));
        self.end = end;
        for (i, (k, v)) in items.into_iter().enumerate() {
            self.keys[i] = k;
            self.tree[self.cap + i] = Some(v);
            self.used += 1;
            self.count += 1;
        }
        self.recheck_dense();
        self.build_all();
    }

    /// RA compact: shift present slots left over the holes, then rewrite the
    /// inner nodes above every leaf that changed (Algorithm 2's loop).
    fn compact(&mut self) {
        let mut changed = Vec::new();
        let mut dst = 0;
        for i in 0..self.used {
            let p = self.phys(i);
            if self.tree[self.cap + p].is_some() {
                let d = self.phys(dst);
                if d != p {
                    self.tree[self.cap + d] = self.tree[self.cap + p].take();
                    self.keys[d] = self.keys[p];
                    changed.push(d);
                    changed.push(p);
                }
                dst += 1;
            }
        }
        self.used = dst;
        self.recheck_dense();
        self.propagate(&mut changed);
    }

    fn recheck_dense(&mut self) {
        self.dense = (1..self.used).all(|i| self.keys[self.phys(i)] == self.keys[self.phys(0)] + i as u64);
    }

    /// Leaf for a new id at the back, making room first. The tree above it
    /// is not updated (callers do, one by one or in bulk).
    fn append_leaf(&mut self, id: u64, v: M::Agg, pending: &mut Vec<usize>) -> usize {
        if self.used == self.cap {
            // Rewrite the pending paths before the leaves move.
            self.propagate(pending);
            if 4 * self.count <= 3 * self.cap {
                self.compact();
            } else {
                self.resize(2 * self.cap);
            }
        }
        if self.used > 0 && id != self.keys[self.phys(self.used - 1)] + 1 {
            self.dense = false;
        }
        if self.used == 0 {
            self.dense = true;
        }
        let p = self.phys(self.used);
        self.keys[p] = id;
        self.tree[self.cap + p] = Some(v);
        self.used += 1;
        self.count += 1;
        self.end = id + 1;
        p
    }

    /// Drop ⊥ positions at the front, and shrink below 1/4 use.
    fn after_evict(&mut self) {
        while self.used > 0 && self.tree[self.cap + self.front].is_none() {
            self.front = (self.front + 1) & (self.cap - 1);
            self.used -= 1;
        }
        while self.used > 0 && self.tree[self.cap + self.phys(self.used - 1)].is_none() {
            self.used -= 1;
        }
        if self.used == 0 {
            self.front = 0;
            self.dense = true;
        }
        if self.cap > MIN_CAP && 4 * self.count < self.cap {
            self.resize(self.cap / 2);
        }
    }

    /// prefix(i) of RA Algorithm 3: leaves 0..=i.
    fn prefix(&self, i: usize) -> Option<M::Agg> {
        let mut v = self.cap + i;
        let mut a = self.tree[v].clone();
        while v > 1 {
            if v & 1 == 1 {
                a = opt_combine::<M>(&self.tree[v - 1], &a);
            }
            v /= 2;
        }
        a
    }

    /// suffix(i), the mirror of Algorithm 3: leaves i..cap.
    fn suffix(&self, i: usize) -> Option<M::Agg> {
        let mut v = self.cap + i;
        let mut a = self.tree[v].clone();
        while v > 1 {
            if v & 1 == 0 {
                a = opt_combine::<M>(&a, &self.tree[v + 1]);
            }
            v /= 2;
        }
        a
    }

    /// Capacity (tests of the resize policy).
    pub fn capacity(&self) -> usize {
        self.cap
    }
}

impl<M: Monoid> GeneralAggregator<M> for GeneralFlatFat<M> {
    fn insert(&mut self, id: u64, v: M::Agg) -> Result<()> {
        if id >= self.end {
            let mut none = Vec::new();
            let p = self.append_leaf(id, v, &mut none);
            self.update_path(p);
            return Ok(());
        }
        match self.locate(id) {
            Some(p) if self.tree[self.cap + p].is_some() => {
                M::combine_into(self.tree[self.cap + p].as_mut().unwrap(), &v);
                self.update_path(p);
                Ok(())
            }
            _ => absent("flatfat", id),
        }
    }

    fn bulk_insert(&mut self, ups: &[(u64, M::Agg)]) -> Result<()> {
        let mut pending = Vec::with_capacity(ups.len());
        for (id, v) in ups {
            if *id >= self.end {
                let p = self.append_leaf(*id, v.clone(), &mut pending);
                pending.push(p);
                continue;
            }
            match self.locate(*id) {
                Some(p) if self.tree[self.cap + p].is_some() => {
                    M::combine_into(self.tree[self.cap + p].as_mut().unwrap(), v);
                    pending.push(p);
                }
                _ => {
                    self.propagate(&mut pending);
                    return absent("flatfat", *id);
                }
            }
        }
        self.propagate(&mut pending);
        Ok(())
    }

    fn bulk_set(&mut self, ups: &[(u64, M::Agg)]) -> Result<()> {
        let mut pending = Vec::with_capacity(ups.len());
        for (id, v) in ups {
            match self.locate(*id) {
                Some(p) if self.tree[self.cap + p].is_some() => {
                    self.tree[self.cap + p] = Some(v.clone());
                    pending.push(p);
                }
                _ => {
                    self.propagate(&mut pending);
                    return absent("flatfat", *id);
                }
            }
        }
        self.propagate(&mut pending);
        Ok(())
    }

    fn evict(&mut self, id: u64) {
        if let Some(p) = self.locate(id) {
            if self.tree[self.cap + p].take().is_some() {
                self.count -= 1;
                self.update_path(p);
                self.after_evict();
            }
        }
    }

    fn evict_upto(&mut self, id: u64) {
        let mut pending = Vec::new();
        while self.used > 0 && self.keys[self.front] < id {
            let p = self.front;
            if self.tree[self.cap + p].take().is_some() {
                self.count -= 1;
                pending.push(p);
            }
            self.front = (self.front + 1) & (self.cap - 1);
            self.used -= 1;
        }
        self.propagate(&mut pending);
        self.after_evict();
    }

    fn query(&mut self) -> M::Agg {
        if self.used == 0 {
            return M::identity();
        }
        let a = if self.front + self.used <= self.cap {
            // Not inverted: every leaf outside the buffer is ⊥.
            self.tree[1].clone()
        } else {
            let back = self.phys(self.used - 1);
            opt_combine::<M>(&self.suffix(self.front), &self.prefix(back))
        };
        a.unwrap_or_else(M::identity)
    }

    fn len(&self) -> usize {
        self.count
    }

    fn end(&self) -> u64 {
        self.end
    }

    fn contents(&self) -> Vec<(u64, M::Agg)> {
        (0..self.used)
            .filter_map(|i| {
                let p = self.phys(i);
                self.tree[self.cap + p].as_ref().map(|v| (self.keys[p], v.clone()))
            })
            .collect()
    }
}
