//! FlatFIT (Shein, Chrysanthis, Labrinidis, SSDBM'17), §3.2 Algorithm 1 with
//! the stack-free wReset of §3.3.
//!
//! Two circular arrays, *Partials* and *Pointers* (here one array of slots,
//! so that a jump reads one cache line), form a weighted jump table: slot
//! `i` holds `Partials[i] = a[i] ⊕ ... ⊕ a[Pointers[i] - 1]`. Positions are
//! absolute (the ring index is `pos mod cap`), so a pointer never needs
//! rewriting when the ring is resized.
//!
//! * Insert writes the new partial at the back with a pointer to the next
//!   position (Algorithm 1, lines 22-23).
//! * Evict just moves the front: pointers only point forward, so nothing in
//!   the window refers to an evicted slot.
//! * A query from position `s` (the front for `query`, `back - k` for
//!   `query_last(k)`, Algorithm 1 line 26) follows the pointers to the back,
//!   pushing the visited positions on the *Positions* stack (lines 30-34),
//!   then pops them newest first, combining `Partials[t] ⊕ answer` (older on
//!   the left, so non-commutative operations are right) and compressing the
//!   path: `Partials[t] = answer`, `Pointers[t] = back` (lines 35-44). The
//!   start of a whole-window query is not rewritten, as in the paper (it is
//!   the next to leave); a `query_last` start is, for the next multi-query.
//! * wReset (§3.3): the positions `[fresh, back)` have never been compressed
//!   (their pointers are `i + 1`). When the walk reaches that run, it is
//!   aggregated backwards from the newest partial without the stack, each
//!   slot getting its suffix aggregate and a pointer to the back. With one
//!   query per slide this happens once every `n + 1` slides and costs `n - 1`
//!   combines; the other slides cost 1 or 2, so a slide costs 3 combines
//!   amortised (§4.1: `3(n - 1)` per period).
//! * The ring doubles when an insert finds it full and halves when at most a
//!   quarter is used (the paper's dynamic resize for non-FIFO windows, §3.1).

use super::{FifoAggregator, New};
use crate::monoid::Monoid;

const MAX_HINT: usize = 1 << 20;

#[derive(Clone)]
struct Slot<A> {
    val: A,
    /// Absolute position one past the last partial `val` covers.
    ptr: usize,
}

pub struct FlatFit<M: Monoid> {
    slots: Vec<Slot<M::Agg>>,
    /// The partials as inserted, only for `contents()`: compression
    /// overwrites *Partials* with path aggregates, which cannot be undone.
    raw: Vec<M::Agg>,
    mask: usize,
    /// Absolute positions: the oldest partial and one past the newest.
    front: usize,
    back: usize,
    /// Every slot in `[fresh, back)` holds its own partial and points to the
    /// next position (never compressed): the wReset run.
    fresh: usize,
    /// The *Positions* stack, kept to reuse its allocation.
    stack: Vec<usize>,
    min_cap: usize,
}

impl<M: Monoid> FlatFit<M> {
    pub fn with_capacity(capacity: usize) -> Self {
        let cap = capacity.clamp(1, MAX_HINT).next_power_of_two().max(2);
        FlatFit {
            slots: vec![Slot { val: M::identity(), ptr: 0 }; cap],
            raw: vec![M::identity(); cap],
            mask: cap - 1,
            front: 0,
            back: 0,
            fresh: 0,
            stack: Vec::new(),
            min_cap: cap,
        }
    }

    #[inline(always)]
    fn slot(&self, pos: usize) -> &Slot<M::Agg> {
        // SAFETY: `mask == slots.len() - 1` and `slots.len()` is a power of two.
        unsafe { self.slots.get_unchecked(pos & self.mask) }
    }

    #[inline(always)]
    fn slot_mut(&mut self, pos: usize) -> &mut Slot<M::Agg> {
        // SAFETY: as in `slot`.
        unsafe { self.slots.get_unchecked_mut(pos & self.mask) }
    }

    /// `slot[t] = slot[t] ⊕ slot[next]`, pointing to the back.
    #[inline(always)]
    fn compress(&mut self, t: usize, next: usize, back: usize) {
        let v = M::combine(&self.slot(t).val, &self.slot(next).val);
        let s = self.slot_mut(t);
        s.val = v;
        s.ptr = back;
    }

    /// Aggregate of `[s, back)`, `front <= s < back` (Algorithm 1, lines
    /// 26-44, with the wReset of §3.3). `keep_start`: also compress `s`.
    fn query_from(&mut self, s: usize, keep_start: bool) -> M::Agg {
        let back = self.back;
        let fresh = self.fresh.max(s);
        // Lines 30-34: walk the jump table down to the never-compressed run.
        let mut i = s;
        while i < fresh {
            self.stack.push(i);
            i = self.slot(i).ptr;
        }
        // `top` is the oldest position whose slot covers `[top, back)`.
        let mut top;
        if i < back {
            // wReset (§3.3): `[i, back)` are single partials; aggregate them
            // newest to oldest, leaving each a suffix aggregate.
            top = back - 1;
            let stop = if self.stack.is_empty() && !keep_start { s + 1 } else { i };
            while top > stop {
                self.compress(top - 1, top, back);
                top -= 1;
            }
            if top > i {
                // Only a whole-window query skips writing its start `s == i`.
                debug_assert!(top == i + 1 && i == s);
                self.fresh = back - 1;
                return M::combine(&self.slot(i).val, &self.slot(top).val);
            }
            if i + 1 < back {
                self.fresh = back - 1;
            }
        } else {
            // The walk jumped straight to the back: the last slot pushed
            // already covers up to it.
            top = self.stack.pop().expect("the walk pushed its start");
        }
        // Lines 35-44: pop newest first, answer = Partials[t] ⊕ answer.
        while let Some(t) = self.stack.pop() {
            if t == s && !keep_start {
                debug_assert!(self.stack.is_empty());
                return M::combine(&self.slot(t).val, &self.slot(top).val);
            }
            self.compress(t, top, back);
            top = t;
        }
        self.slot(top).val.clone()
    }

    #[cold]
    #[inline(never)]
    fn resize(&mut self, new_cap: usize) {
        debug_assert!(new_cap >= self.back - self.front && new_cap.is_power_of_two());
        let mut slots = vec![Slot { val: M::identity(), ptr: 0 }; new_cap];
        let mut raw = vec![M::identity(); new_cap];
        let new_mask = new_cap - 1;
        for p in self.front..self.back {
            let old = self.slot_mut(p);
            let ptr = old.ptr;
            let val = std::mem::replace(&mut old.val, M::identity());
            slots[p & new_mask] = Slot { val, ptr };
            raw[p & new_mask] = std::mem::replace(&mut self.raw[p & self.mask], M::identity());
        }
        self.slots = slots;
        self.raw = raw;
        self.mask = new_mask;
    }

    #[cold]
    #[inline(never)]
    fn maybe_shrink(&mut self) {
        let len = self.back - self.front;
        let cap = self.mask + 1;
        if cap > self.min_cap && len * 4 <= cap {
            let mut c = cap / 2;
            while c > self.min_cap && len * 4 <= c {
                c /= 2;
            }
            self.resize(c);
        }
    }
}

impl<M: Monoid> FifoAggregator<M> for FlatFit<M> {
    #[inline]
    fn insert(&mut self, v: M::Agg) {
        if self.back - self.front > self.mask {
            self.resize((self.mask + 1) * 2);
        }
        let p = self.back;
        self.raw[p & self.mask] = v.clone();
        *self.slot_mut(p) = Slot { val: v, ptr: p + 1 };
        self.back = p + 1;
    }

    #[inline]
    fn evict(&mut self) {
        if self.back > self.front {
            self.front += 1;
            if self.back - self.front <= (self.mask + 1) / 4 {
                self.maybe_shrink();
            }
        }
    }

    #[inline]
    fn query(&mut self) -> M::Agg {
        if self.back == self.front {
            return M::identity();
        }
        self.query_from(self.front, false)
    }

    fn query_last(&mut self, k: usize) -> M::Agg {
        let k = k.min(self.back - self.front);
        if k == 0 {
            return M::identity();
        }
        let s = self.back - k;
        self.query_from(s, s != self.front)
    }

    fn len(&self) -> usize {
        self.back - self.front
    }

    fn contents(&self) -> Vec<M::Agg> {
        (self.front..self.back).map(|p| self.raw[p & self.mask].clone()).collect()
    }

    fn bulk_evict(&mut self, n: usize) {
        self.front += n.min(self.back - self.front);
        self.maybe_shrink();
    }
}

impl<M: Monoid> New for FlatFit<M> {
    fn new_with_capacity(capacity: usize) -> crate::Result<Self> {
        Ok(Self::with_capacity(capacity))
    }
}
