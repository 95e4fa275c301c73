//! Naive recomputation (what Flink and Cloud Dataflow do by default, CBiX
//! §3.2.2): keep the slots, fold all of them on every query. O(n) per query;
//! the oracle the other general aggregators are tested against.

use std::collections::VecDeque;

use super::{absent, GeneralAggregator, NewGeneral};
use crate::monoid::Monoid;
use crate::Result;

pub struct GeneralRecalc<M: Monoid> {
    slots: VecDeque<(u64, M::Agg)>,
    end: u64,
}

impl<M: Monoid> NewGeneral for GeneralRecalc<M> {
    fn new_general(_window: usize) -> Result<Self> {
        Ok(GeneralRecalc { slots: VecDeque::new(), end: 0 })
    }
}

impl<M: Monoid> GeneralRecalc<M> {
    fn find(&self, id: u64) -> Option<usize> {
        self.slots.binary_search_by_key(&id, |s| s.0).ok()
    }
}

impl<M: Monoid> GeneralAggregator<M> for GeneralRecalc<M> {
    fn insert(&mut self, id: u64, v: M::Agg) -> Result<()> {
        if id >= self.end {
            self.slots.push_back((id, v));
            self.end = id + 1;
            return Ok(());
        }
        match self.find(id) {
            Some(i) => {
                M::combine_into(&mut self.slots[i].1, &v);
                Ok(())
            }
            None => absent("recalc", id),
        }
    }

    fn bulk_set(&mut self, ups: &[(u64, M::Agg)]) -> Result<()> {
        for (id, v) in ups {
            match self.find(*id) {
                Some(i) => self.slots[i].1 = v.clone(),
                None => return absent("recalc", *id),
            }
        }
        Ok(())
    }

    fn evict(&mut self, id: u64) {
        if let Some(i) = self.find(id) {
            self.slots.remove(i);
        }
    }

    fn evict_upto(&mut self, id: u64) {
        while self.slots.front().is_some_and(|s| s.0 < id) {
            self.slots.pop_front();
        }
    }

    fn query(&mut self) -> M::Agg {
        let mut acc: Option<M::Agg> = None;
        for (_, v) in &self.slots {
            super::opt_combine_into::<M>(&mut acc, v);
        }
        acc.unwrap_or_else(M::identity)
    }

    fn len(&self) -> usize {
        self.slots.len()
    }

    fn end(&self) -> u64 {
        self.end
    }

    fn contents(&self) -> Vec<(u64, M::Agg)> {
        self.slots.iter().cloned().collect()
    }
}
