//! SlideSide (SlideSide paper §3): TwoStacks extended so that one stream
//! answers many window sizes, i.e. `query_last(k)` for several `k`, from
//! shared prefix and suffix scans over one array of partials.
//!
//! Layout (paper Fig. 2, Algorithm 1): `items` holds the partials (the
//! paper's *elements*). `items[head..split]` is the front: its suffix scan
//! `suf` (the paper's *frontStack*) is computed when it is formed.
//! `items[split..]` is the back: its prefix scan `pre` (the paper's
//! *backStack*, `pre[0]` the identity) grows with every insert
//! (Algorithm 2, line 6). A flip (Algorithm 2, lines 2-4; `seal` below)
//! makes the whole window the front. The paper flips when its circular buffer of the
//! largest window size wraps; a FIFO of varying length flips when the front
//! runs empty, as TwoStacks does. `query_last(k)` follows Algorithm 3 with
//! `i = len - k` the start of the range:
//!
//! * the range starts in the front (the paper's "wrapped" case c):
//!   `suf(i) ⊕ pre[last]`, O(1);
//! * it is exactly the back (case a): `pre[last]`, O(1);
//! * it starts inside the back (case b): with an inverse (§3.1)
//!   `pre[last] ⊖ pre[start]`, O(1).
//!
//! Non-invertible operations (§3.2): the paper overlays the queries' stacks
//! and re-runs the suffix scan whenever the smallest window starts to evict,
//! stopping the propagation "if our computations do not alter the aggregate
//! values" (the HammerSlide optimisation). Here a range that falls inside
//! the back *seals* it: the back is suffix-scanned once and becomes part of
//! the front, and the older front entries absorb the back's total
//! `suf[i] ⊕ B`, newest first, stopping at the first entry that does not
//! change. The stop is exact for every monoid (associativity: every older
//! entry is `items[j..i] ⊕ suf[i]`); for selective operations (max, min,
//! first, ...) it comes almost at once, so a seal costs O(back) and every
//! partial is scanned once: O(1) amortised per insert. For the others a
//! seal costs O(len), so a range inside the back is folded, O(k), unless
//! the window is small enough (`len <= k²`) that sealing is the cheaper.
//!
//! Layout: `suf[i]` (for `head <= i < split`, indexed like `items`) is the
//! aggregate of `items[i..split]`, so a seal appends to it and never moves
//! it; evicted slots are reclaimed when they make up half of the arrays.

use super::{FifoAggregator, New};
use crate::monoid::Monoid;

/// Reclaim evicted slots only past this many (amortises the memmove).
const MIN_RECLAIM: usize = 1024;

pub struct SlideSide<M: Monoid> {
    items: Vec<M::Agg>,
    head: usize,
    split: usize,
    /// `suf[i]` = aggregate of `items[i..split]`, `head <= i < split`.
    suf: Vec<M::Agg>,
    /// `pre[j]` = aggregate of `items[split .. split+j]` (prefix scan).
    pre: Vec<M::Agg>,
    /// Evicted slots tolerated before reclaiming ([`MIN_RECLAIM`]; one
    /// key's window of a keyed stream: its bound, so a small window does
    /// not keep a thousand dead partials).
    min_reclaim: usize,
}

impl<M: Monoid> SlideSide<M> {
    pub fn with_capacity(capacity: usize) -> Self {
        let cap = capacity.min(1 << 20);
        let mut pre = Vec::with_capacity(cap + 1);
        pre.push(M::identity());
        SlideSide { items: Vec::with_capacity(cap), head: 0, split: 0, suf: Vec::with_capacity(cap), pre, min_reclaim: MIN_RECLAIM }
    }

    #[inline(always)]
    fn back_agg(&self) -> &M::Agg {
        self.pre.last().unwrap()
    }

    /// Make the whole window the front (the paper's suffix-scan phase),
    /// scanning only the back and what its total changes in the front.
    fn seal(&mut self) {
        let n = self.items.len();
        if self.split == n {
            return;
        }
        let b = self.back_agg().clone();
        let old = self.split;
        // Suffix scan of the back, appended after the front's entries.
        self.suf.truncate(old);
        self.suf.extend_from_slice(&self.items[old..]);
        for i in (old..n - 1).rev() {
            let s = M::combine(&self.items[i], &self.suf[i + 1]);
            self.suf[i] = s;
        }
        // The front absorbs the back's total, newest first, until an entry
        // stays the same (then every older one does too).
        for i in (self.head..old).rev() {
            let v = M::combine(&self.suf[i], &b);
            if M::same(&v, &self.suf[i]) {
                break;
            }
            self.suf[i] = v;
        }
        self.split = n;
        self.pre.truncate(1);
        self.reclaim();
    }

    /// Drop evicted slots once they are half of the arrays: O(1) amortised.
    fn reclaim(&mut self) {
        if self.head >= self.min_reclaim && self.head * 2 >= self.items.len() {
            let h = self.head;
            self.items.drain(..h);
            self.suf.drain(..h.min(self.suf.len()));
            self.split -= h;
            self.head = 0;
        }
    }
}

impl<M: Monoid> FifoAggregator<M> for SlideSide<M> {
    #[inline]
    fn insert(&mut self, v: M::Agg) {
        let p = M::combine(self.back_agg(), &v);
        self.pre.push(p);
        self.items.push(v);
    }

    #[inline]
    fn evict(&mut self) {
        if self.head == self.split {
            if self.split == self.items.len() {
                return;
            }
            self.seal();
        }
        self.head += 1;
    }

    #[inline]
    fn query(&mut self) -> M::Agg {
        if self.head == self.split {
            self.back_agg().clone()
        } else {
            M::combine(&self.suf[self.head], self.back_agg())
        }
    }

    fn query_last(&mut self, k: usize) -> M::Agg {
        let n = self.items.len();
        let k = k.min(n - self.head);
        let blen = n - self.split;
        if k == 0 {
            M::identity()
        } else if k > blen {
            M::combine(&self.suf[n - k], self.back_agg())
        } else if k == blen {
            self.back_agg().clone()
        } else if M::INVERTIBLE {
            M::inverse(self.back_agg(), &self.pre[blen - k])
        } else if M::SELECTIVE || n - self.head <= k.saturating_mul(k) {
            // A seal may reclaim evicted slots: index from the new end.
            self.seal();
            self.suf[self.items.len() - k].clone()
        } else {
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
    }

    fn bulk_evict(&mut self, n: usize) {
        let n = n.min(self.len());
        if self.head + n > self.split {
            self.seal();
        }
        self.head += n;
        if self.head == self.items.len() {
            // Empty: start over (keeps the arrays from growing forever).
            self.items.clear();
            self.suf.clear();
            self.head = 0;
            self.split = 0;
        }
    }
}

impl<M: Monoid> New for SlideSide<M> {
    fn new_with_capacity(capacity: usize) -> crate::Result<Self> {
        Ok(Self::with_capacity(capacity))
    }
    fn lazy(bound: usize) -> crate::Result<Self> {
        // Reclaiming every `bound` evictions moves at most as many slots:
        // still O(1) amortised.
        Ok(SlideSide { min_reclaim: bound.clamp(16, MIN_RECLAIM), ..Self::with_capacity(bound.min(4)) })
    }
}
