//! DABA, the De-Amortized Banker's Aggregator (Tangwongsan, Hirzel,
//! Schneider, "Low-latency sliding-window aggregation in worst-case constant
//! time", DEBS 2017, the DABA algorithm and its `fixup`): TwoStacks whose
//! flip is spread over the following operations, so insert, evict and
//! query each take O(1) combines in the worst case (at most 3, 2 and 1).
//! No inverse, no commutativity: every combine keeps older partials on the
//! left.
//!
//! One queue of `(val, agg)` slots (a `VecDeque`, i.e. a flat ring buffer)
//! and the paper's pointers, kept as absolute positions (`f` is the oldest
//! slot, `e = f + len` one past the newest):
//!
//! ```text
//!   f        l        r        a        b        e
//!   | front  | L      | R      | A      | back   |
//! ```
//!
//! * `[f, l)`: `agg` = aggregate from the slot up to `b` (ready front).
//! * `[l, r)`: `agg` = aggregate from the slot up to `r` (old front, L).
//! * `[r, a)`: `agg` = aggregate from `r` up to the slot (old back, R).
//! * `[a, b)`: `agg` = aggregate from the slot up to `b` (new suffixes, A).
//! * `[b, e)`: `agg` = aggregate from `b` up to the slot (the back).
//!
//! with `|l..r| == |r..a|` and `|l..b| + 1 == |f..b| - |b..e|`. After every
//! insert or evict, `fixup` does one step of the flip: `a` moves left one
//! slot computing a suffix (R turns into A), and `l` moves right turning an
//! L slot into a front slot by combining in `agg(r..b)`, which is fixed for
//! the whole flip and cached in `ra` when the flip starts (the "cached
//! R + A" variant of the authors' reference code). When `l` reaches `b` the
//! flip is done: the next fixup starts a new one with the back gathered so
//! far. The sizes invariant guarantees it completes before the front runs
//! out, so no operation ever waits for a whole flip.

use std::collections::VecDeque;

use super::{FifoAggregator, New};
use crate::monoid::Monoid;

struct Slot<A> {
    val: A,
    agg: A,
}

pub struct Daba<M: Monoid> {
    q: VecDeque<Slot<M::Agg>>,
    f: usize,
    l: usize,
    r: usize,
    a: usize,
    b: usize,
    /// `agg(r..b)` as of the last flip (constant while `l < r`).
    ra: M::Agg,
}

impl<M: Monoid> Daba<M> {
    pub fn with_capacity(capacity: usize) -> Self {
        Daba {
            q: VecDeque::with_capacity(capacity.min(1 << 20)),
            f: 0,
            l: 0,
            r: 0,
            a: 0,
            b: 0,
            ra: M::identity(),
        }
    }

    #[inline(always)]
    fn e(&self) -> usize {
        self.f + self.q.len()
    }

    #[inline(always)]
    fn slot(&self, i: usize) -> &Slot<M::Agg> {
        &self.q[i - self.f]
    }

    #[inline(always)]
    fn back_agg(&self) -> Option<&M::Agg> {
        (self.b != self.e()).then(|| &self.q[self.q.len() - 1].agg)
    }

    #[inline]
    fn flip(&mut self) {
        let e = self.e();
        self.l = self.f;
        self.r = self.b;
        self.a = e;
        self.b = e;
        // agg(r..b) = the old back's total (its last prefix).
        self.ra = if self.r == e { M::identity() } else { self.slot(e - 1).agg.clone() };
    }

    /// One step of the incremental flip (the paper's `fixup`).
    #[inline]
    fn fixup(&mut self) {
        if self.l == self.b {
            self.flip();
        }
        if self.f == self.b {
            return; // empty front: nothing to do
        }
        if self.a != self.r {
            // R -> A: a moves left, its slot gets the suffix up to b.
            self.a -= 1;
            let i = self.a - self.f;
            let agg = if self.a + 1 == self.b {
                self.q[i].val.clone()
            } else {
                M::combine(&self.q[i].val, &self.q[i + 1].agg)
            };
            self.q[i].agg = agg;
        }
        if self.l != self.r {
            // L -> front: suffix up to r, combined with agg(r..b).
            let i = self.l - self.f;
            M::combine_into(&mut self.q[i].agg, &self.ra);
            self.l += 1;
        } else {
            // L and R are empty: the slot at l already holds its suffix up to b.
            self.l += 1;
            self.r += 1;
            self.a += 1;
        }
    }

    fn fold_vals(&self, from: usize, to: usize) -> M::Agg {
        let mut acc = M::identity();
        for s in self.q.range(from - self.f..to - self.f) {
            M::combine_into(&mut acc, &s.val);
        }
        acc
    }
}

impl<M: Monoid> FifoAggregator<M> for Daba<M> {
    #[inline]
    fn insert(&mut self, v: M::Agg) {
        let agg = match self.back_agg() {
            Some(back) => M::combine(back, &v),
            None => v.clone(),
        };
        self.q.push_back(Slot { val: v, agg });
        self.fixup();
    }

    #[inline]
    fn evict(&mut self) {
        if self.q.pop_front().is_none() {
            return;
        }
        self.f += 1;
        self.fixup();
    }

    #[inline]
    fn query(&mut self) -> M::Agg {
        let front = (self.f != self.b).then(|| &self.q[0].agg);
        match (front, self.back_agg()) {
            (Some(x), Some(y)) => M::combine(x, y),
            (Some(x), None) | (None, Some(x)) => x.clone(),
            (None, None) => M::identity(),
        }
    }

    /// O(1) when the newest `k` start in the front or A part, O(k) inside
    /// the back or R part (those slots hold prefixes, not suffixes).
    fn query_last(&mut self, k: usize) -> M::Agg {
        let e = self.e();
        let k = k.min(self.q.len());
        if k == 0 {
            return M::identity();
        }
        let i = e - k;
        if i >= self.b {
            return if i == self.b { self.back_agg().unwrap().clone() } else { self.fold_vals(i, e) };
        }
        // agg(i..b), then the back.
        let front = if i < self.l || i >= self.a {
            self.slot(i).agg.clone()
        } else if i < self.r {
            M::combine(&self.slot(i).agg, &self.ra)
        } else {
            let mut x = self.fold_vals(i, self.a);
            if self.a < self.b {
                M::combine_into(&mut x, &self.slot(self.a).agg);
            }
            x
        };
        match self.back_agg() {
            Some(back) => M::combine(&front, back),
            None => front,
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.q.len()
    }

    fn contents(&self) -> Vec<M::Agg> {
        self.q.iter().map(|s| s.val.clone()).collect()
    }
}

impl<M: Monoid> New for Daba<M> {
    fn new_with_capacity(capacity: usize) -> crate::Result<Self> {
        Ok(Self::with_capacity(capacity))
    }
}
