//! Two-Stacks extended to out-of-order streams by recomputing the affected
//! entries (CBiX paper §3.3), the baseline that paper names.
//!
//! Front stack (older slots, top = oldest): `faggs[j]` is the ⊕ of front
//! items `j` down to the newest front item, so the top holds the whole
//! front. Back stack (newer slots): `baggs[i]` is the ⊕ of back items 0..=i.
//! Eviction pops the front (flipping the back over when the front is empty);
//! insertion pushes the back. A late partial into a slot recomputes every
//! running aggregate that covers it: the entries above it in its stack —
//! (n+1)/4 on average by the paper's count, p·(n+1)/4 per slide.
//!
//! Slots are dense from `lo`; ids skipped over are ⊥ (None) entries.

use super::{absent, opt_combine, GeneralAggregator, NewGeneral};
use crate::monoid::Monoid;
use crate::Result;

pub struct TwoStacksExt<M: Monoid> {
    /// Front values, index 0 = newest front slot, last = oldest (id `lo`).
    fvals: Vec<Option<M::Agg>>,
    faggs: Vec<Option<M::Agg>>,
    /// Back values, index 0 = oldest back slot.
    bvals: Vec<Option<M::Agg>>,
    baggs: Vec<Option<M::Agg>>,
    lo: u64,
    end: u64,
    count: usize,
}

impl<M: Monoid> NewGeneral for TwoStacksExt<M> {
    fn new_general(window: usize) -> Result<Self> {
        let c = crate::fifo::capacity_hint(window);
        Ok(TwoStacksExt {
            fvals: Vec::with_capacity(c),
            faggs: Vec::with_capacity(c),
            bvals: Vec::with_capacity(c),
            baggs: Vec::with_capacity(c),
            lo: 0,
            end: 0,
            count: 0,
        })
    }
}

impl<M: Monoid> TwoStacksExt<M> {
    fn clear_at(&mut self, id: u64) {
        self.fvals.clear();
        self.faggs.clear();
        self.bvals.clear();
        self.baggs.clear();
        self.lo = id;
        self.end = self.end.max(id);
        self.count = 0;
    }

    fn push_back(&mut self, v: Option<M::Agg>) {
        let a = match self.baggs.last() {
            Some(prev) => opt_combine::<M>(prev, &v),
            None => v.clone(),
        };
        self.bvals.push(v);
        self.baggs.push(a);
    }

    /// Move the back stack onto the front (TwoStacks' flip).
    fn flip(&mut self) {
        debug_assert!(self.fvals.is_empty());
        self.baggs.clear();
        while let Some(v) = self.bvals.pop() {
            let a = match self.faggs.last() {
                Some(prev) => opt_combine::<M>(&v, prev),
                None => v.clone(),
            };
            self.fvals.push(v);
            self.faggs.push(a);
        }
    }

    fn pop_front(&mut self) {
        if self.fvals.is_empty() {
            self.flip();
        }
        if let Some(v) = self.fvals.pop() {
            self.faggs.pop();
            self.count -= v.is_some() as usize;
            self.lo += 1;
        }
    }

    /// Recompute front aggregates from index `j` up to the top.
    fn refresh_front(&mut self, j: usize) {
        for x in j..self.fvals.len() {
            self.faggs[x] =
                if x == 0 { self.fvals[0].clone() } else { opt_combine::<M>(&self.fvals[x], &self.faggs[x - 1]) };
        }
    }

    fn refresh_back(&mut self, i: usize) {
        for x in i..self.bvals.len() {
            self.baggs[x] =
                if x == 0 { self.bvals[0].clone() } else { opt_combine::<M>(&self.baggs[x - 1], &self.bvals[x]) };
        }
    }

    /// The entry of `id`: (in front?, index).
    fn entry(&mut self, id: u64) -> Option<(bool, usize)> {
        if id < self.lo || id >= self.end {
            return None;
        }
        let off = (id - self.lo) as usize;
        let nf = self.fvals.len();
        let (front, i) = if off < nf { (true, nf - 1 - off) } else { (false, off - nf) };
        let present = if front { self.fvals[i].is_some() } else { self.bvals[i].is_some() };
        present.then_some((front, i))
    }

    fn apply(&mut self, id: u64, v: &M::Agg, set: bool) -> Result<()> {
        match self.entry(id) {
            Some((true, j)) => {
                let slot = self.fvals[j].as_mut().unwrap();
                if set { *slot = v.clone() } else { M::combine_into(slot, v) }
                self.refresh_front(j);
                Ok(())
            }
            Some((false, i)) => {
                let slot = self.bvals[i].as_mut().unwrap();
                if set { *slot = v.clone() } else { M::combine_into(slot, v) }
                self.refresh_back(i);
                Ok(())
            }
            None => absent("two_stacks", id),
        }
    }
}

impl<M: Monoid> GeneralAggregator<M> for TwoStacksExt<M> {
    fn insert(&mut self, id: u64, v: M::Agg) -> Result<()> {
        if id >= self.end {
            if self.count == 0 {
                self.clear_at(id);
            }
            while self.end < id {
                self.push_back(None);
                self.end += 1;
            }
            self.push_back(Some(v));
            self.end = id + 1;
            self.count += 1;
            return Ok(());
        }
        self.apply(id, &v, false)
    }

    fn bulk_set(&mut self, ups: &[(u64, M::Agg)]) -> Result<()> {
        for (id, v) in ups {
            self.apply(*id, v, true)?;
        }
        Ok(())
    }

    fn evict(&mut self, id: u64) {
        match self.entry(id) {
            Some((true, j)) => {
                self.fvals[j] = None;
                self.count -= 1;
                self.refresh_front(j);
            }
            Some((false, i)) => {
                self.bvals[i] = None;
                self.count -= 1;
                self.refresh_back(i);
            }
            None => {}
        }
    }

    fn evict_upto(&mut self, id: u64) {
        if id >= self.end {
            // Everything goes; later slots are appended at or after `end`.
            self.clear_at(self.end);
            return;
        }
        while self.lo < id {
            self.pop_front();
        }
    }

    fn query(&mut self) -> M::Agg {
        let f = self.faggs.last().cloned().flatten();
        let b = self.baggs.last().cloned().flatten();
        opt_combine::<M>(&f, &b).unwrap_or_else(M::identity)
    }

    fn len(&self) -> usize {
        self.count
    }

    fn end(&self) -> u64 {
        self.end
    }

    fn contents(&self) -> Vec<(u64, M::Agg)> {
        let nf = self.fvals.len();
        let front = self.fvals.iter().rev().enumerate().map(|(o, v)| (o, v));
        let back = self.bvals.iter().enumerate().map(|(i, v)| (nf + i, v));
        front
            .chain(back)
            .filter_map(|(o, v)| v.clone().map(|v| (self.lo + o as u64, v)))
            .collect()
    }
}
