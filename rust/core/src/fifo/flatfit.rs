//! FlatFIT (Shein, Chrysanthis, Labrinidis, SSDBM'17), §3.2 Algorithm 1 with
//! the stack-free wReset of §3.3.
//!
//! As in the paper, two circular arrays of exactly the window's size (the
//! capacity hint; no power-of-two rounding) form a weighted jump table:
//! *Partials* `vals[i] = a[i] ⊕ ... ⊕ a[ptrs[i] - 1]` and *Pointers*
//! `ptrs[i]`, a ring index stored in 32 bits. A slot costs one partial plus
//! four bytes, against FlatFAT's two partials per power-of-two leaf (§4.2).
//!
//! * Insert writes the new partial at the back with a pointer to the next
//!   slot (Algorithm 1, lines 22-23).
//! * Evict just moves the front: pointers only point forward, so nothing in
//!   the window refers to an evicted slot.
//! * A query starting `d` partials before the back (`len` for `query`, `k`
//!   for `query_last(k)`, line 26) follows the pointers to the back, pushing
//!   the visited slots on the *Positions* stack (lines 30-34), then pops them
//!   newest first, combining `Partials[t] ⊕ answer` (older on the left, so
//!   non-commutative operations are right) and compressing the path:
//!   `Partials[t] = answer`, `Pointers[t] = back` (lines 35-44). The start of
//!   a whole-window query is not rewritten, as in the paper (it is the next
//!   to leave); a `query_last` start is, for the next multi-query. With the
//!   ranges 1..n asked at every slide (§4.1's max-multi-query) each query
//!   then costs one jump and one combine.
//! * wReset (§3.3): the newest `fresh` slots have never been compressed
//!   (their pointers are `i + 1`). When the walk reaches that run, it is
//!   aggregated backwards from the newest partial without the stack, each
//!   slot getting its suffix aggregate and a pointer to the back. With one
//!   query per slide this happens once every `n + 1` slides and costs `n - 1`
//!   combines; the other slides cost 1 or 2, so a slide costs 3 combines
//!   amortised (§4.1: `3(n - 1)` per period).
//! * The ring doubles when an insert finds it full and halves when at most a
//!   quarter is used (the paper's dynamic resize for non-FIFO windows, §3.1).
//!
//! `contents()` (checkpoints) needs partials whose suffix aggregates are the
//! window's, but compression overwrites *Partials*. For a selective operation
//! (max, min, first, last: `x ⊕ x = x`) the suffix aggregates themselves are
//! such partials: `S[s] ⊕ S[s+1] = a[s] ⊕ S[s+1] ⊕ S[s+1] = S[s]`, so every
//! future answer after a restore is unchanged, and no copy is kept. Other
//! operations keep the inserted partials in `raw`.

use super::{FifoAggregator, New};
use crate::monoid::Monoid;

/// Largest ring the hint may pre-allocate (the window may still grow). The
/// paper pre-allocates its window (up to 2^27); 2^24 slots is 192 MiB for f64.
const MAX_HINT: usize = 1 << 24;
/// Pointers are 32-bit ring indices.
const MAX_CAP: usize = 1 << 32;

pub struct FlatFit<M: Monoid> {
    /// *Partials*.
    vals: Vec<M::Agg>,
    /// *Pointers*: the ring index one past the last partial `vals[i]` covers.
    ptrs: Vec<u32>,
    /// The partials as inserted, for `contents()`; empty when `M::SELECTIVE`.
    raw: Vec<M::Agg>,
    cap: usize,
    /// Ring indices of the oldest partial and of the slot after the newest.
    head: usize,
    back: usize,
    len: usize,
    /// The newest `fresh` slots hold their own partial and point to the next
    /// slot (never compressed): the wReset run.
    fresh: usize,
    /// The *Positions* stack, kept to reuse its allocation.
    stack: Vec<u32>,
    min_cap: usize,
}

impl<M: Monoid> FlatFit<M> {
    pub fn with_capacity(capacity: usize) -> Self {
        let cap = capacity.clamp(1, MAX_HINT);
        FlatFit {
            vals: vec![M::identity(); cap],
            ptrs: vec![0; cap],
            raw: if M::SELECTIVE { Vec::new() } else { vec![M::identity(); cap] },
            cap,
            head: 0,
            back: 0,
            len: 0,
            fresh: 0,
            stack: Vec::new(),
            min_cap: cap,
        }
    }

    #[inline(always)]
    fn next(&self, i: usize) -> usize {
        if i + 1 == self.cap { 0 } else { i + 1 }
    }

    /// Ring index of the partial `d` before the back (`1 <= d <= cap`).
    #[inline(always)]
    fn before_back(&self, d: usize) -> usize {
        if d <= self.back { self.back - d } else { self.back + self.cap - d }
    }

    #[inline(always)]
    fn val(&self, i: usize) -> &M::Agg {
        debug_assert!(i < self.cap);
        // SAFETY: every ring index is below `cap == vals.len()`.
        unsafe { self.vals.get_unchecked(i) }
    }

    #[inline(always)]
    fn ptr(&self, i: usize) -> usize {
        debug_assert!(i < self.cap);
        // SAFETY: as in `val`.
        unsafe { *self.ptrs.get_unchecked(i) as usize }
    }

    /// Ring distance from `i` to the slot its pointer names, in `1..=cap`
    /// (`cap` when a whole-ring partial points back to itself).
    #[inline(always)]
    fn jump(&self, i: usize) -> usize {
        let p = self.ptr(i);
        if p > i { p - i } else { p + self.cap - i }
    }

    /// `Partials[t] = Partials[t] ⊕ Partials[next]`, pointing to the back.
    #[inline(always)]
    fn compress(&mut self, t: usize, next: usize) {
        let v = M::combine(self.val(t), self.val(next));
        debug_assert!(t < self.cap);
        // SAFETY: as in `val`.
        unsafe {
            *self.vals.get_unchecked_mut(t) = v;
            *self.ptrs.get_unchecked_mut(t) = self.back as u32;
        }
    }

    /// Aggregate of the newest `d0` partials, `1 <= d0 <= len` (Algorithm 1,
    /// lines 26-44, with the wReset of §3.3). `keep_start`: also compress
    /// the start.
    fn query_from(&mut self, d0: usize, keep_start: bool) -> M::Agg {
        let s = self.before_back(d0);
        // The walks of one jump, answered without the stack: `s` already
        // covers up to the back (range 1, or a range compressed this slide),
        // or it jumps to the newest partial (every query of a max-multi-query
        // slide, and most single-query slides, §4.1).
        let j = self.jump(s);
        if j >= d0 {
            debug_assert!(j == d0);
            return self.val(s).clone();
        }
        if j + 1 == d0 {
            let newest = self.before_back(1);
            if !keep_start {
                return M::combine(self.val(s), self.val(newest));
            }
            self.compress(s, newest);
            self.fresh = self.fresh.min(d0 - 1);
            return self.val(s).clone();
        }
        // Lines 30-34: walk the jump table down to the never-compressed run;
        // `d` counts the partials from `i` to the back.
        let (mut i, mut d) = (s, d0);
        while d > self.fresh {
            self.stack.push(i as u32);
            d -= self.jump(i);
            i = self.ptr(i);
        }
        // `top` is the oldest slot known to cover up to the back.
        let mut top;
        if d > 0 {
            // wReset (§3.3): the `d` slots from `i` are single partials;
            // aggregate them newest to oldest, leaving each a suffix aggregate.
            top = self.before_back(1);
            let mut top_d = 1;
            let stop_d = if self.stack.is_empty() && !keep_start { d0 - 1 } else { d };
            while top_d < stop_d {
                let t = if top == 0 { self.cap - 1 } else { top - 1 };
                self.compress(t, top);
                top = t;
                top_d += 1;
            }
            if top_d < d {
                // Only a whole-window query skips writing its start `s == i`.
                debug_assert!(top_d + 1 == d && i == s);
                self.fresh = 1;
                return M::combine(self.val(i), self.val(top));
            }
            if d > 1 {
                self.fresh = 1;
            }
        } else {
            // The walk jumped straight to the back: the last slot pushed
            // already covers up to it.
            top = self.stack.pop().expect("the walk pushed its start") as usize;
        }
        // Lines 35-44: pop newest first, answer = Partials[t] ⊕ answer.
        while let Some(t) = self.stack.pop() {
            let t = t as usize;
            if !keep_start && self.stack.is_empty() {
                debug_assert!(t == s);
                return M::combine(self.val(t), self.val(top));
            }
            self.compress(t, top);
            top = t;
        }
        self.val(top).clone()
    }

    /// Move the window to a ring of `new_cap` slots, oldest at index 0.
    #[cold]
    #[inline(never)]
    fn resize(&mut self, new_cap: usize) {
        assert!(new_cap <= MAX_CAP, "FlatFIT holds at most 2^32 partials; use another algorithm for larger windows");
        debug_assert!(new_cap > self.len);
        let (head, cap, len) = (self.head, self.cap, self.len);
        for p in self.ptrs.iter_mut() {
            // Pointers only point forward, into (front, back]: offset 0 from
            // the front can only be the back of a full ring.
            let off = (*p as usize + cap - head) % cap;
            *p = if off == 0 { len } else { off } as u32;
        }
        fn fit<T: Clone>(v: &mut Vec<T>, head: usize, new_cap: usize, fill: T) {
            v.rotate_left(head);
            v.resize(new_cap, fill);
            v.shrink_to_fit();
        }
        fit(&mut self.ptrs, head, new_cap, 0);
        fit(&mut self.vals, head, new_cap, M::identity());
        if !M::SELECTIVE {
            fit(&mut self.raw, head, new_cap, M::identity());
        }
        self.cap = new_cap;
        self.head = 0;
        self.back = len % new_cap;
    }

    #[cold]
    #[inline(never)]
    fn maybe_shrink(&mut self) {
        let mut c = self.cap;
        while c / 2 >= self.min_cap && self.len * 4 <= c {
            c /= 2;
        }
        if c < self.cap {
            self.resize(c);
        }
    }
}

impl<M: Monoid> FifoAggregator<M> for FlatFit<M> {
    #[inline]
    fn insert(&mut self, v: M::Agg) {
        if self.len == self.cap {
            self.resize(self.cap * 2);
        }
        let p = self.back;
        let next = self.next(p);
        if !M::SELECTIVE {
            self.raw[p] = v.clone();
        }
        self.vals[p] = v;
        self.ptrs[p] = next as u32;
        self.back = next;
        self.len += 1;
        self.fresh += 1;
    }

    #[inline]
    fn evict(&mut self) {
        if self.len > 0 {
            self.head = self.next(self.head);
            self.len -= 1;
            self.fresh = self.fresh.min(self.len);
            if self.len * 4 <= self.cap && self.cap > self.min_cap {
                self.maybe_shrink();
            }
        }
    }

    #[inline]
    fn query(&mut self) -> M::Agg {
        if self.len == 0 {
            return M::identity();
        }
        self.query_from(self.len, false)
    }

    #[inline]
    fn query_last(&mut self, k: usize) -> M::Agg {
        let k = k.min(self.len);
        if k == 0 {
            return M::identity();
        }
        self.query_from(k, k != self.len)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn contents(&self) -> Vec<M::Agg> {
        let idx = |k: usize| (self.head + k) % self.cap;
        if !M::SELECTIVE {
            return (0..self.len).map(|k| self.raw[idx(k)].clone()).collect();
        }
        // The suffix aggregates, newest first: S[k] = Partials[k] ⊕ S[k + jump].
        let mut out: Vec<M::Agg> = vec![M::identity(); self.len];
        for k in (0..self.len).rev() {
            let i = idx(k);
            let j = k + self.jump(i);
            debug_assert!(j <= self.len);
            out[k] = if j >= self.len { self.val(i).clone() } else { M::combine(self.val(i), &out[j]) };
        }
        out
    }

    fn bulk_evict(&mut self, n: usize) {
        let n = n.min(self.len);
        self.head = (self.head + n) % self.cap;
        self.len -= n;
        self.fresh = self.fresh.min(self.len);
        self.maybe_shrink();
    }
}

impl<M: Monoid> New for FlatFit<M> {
    fn new_with_capacity(capacity: usize) -> crate::Result<Self> {
        Ok(Self::with_capacity(capacity))
    }
}
