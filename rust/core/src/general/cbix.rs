//! CBiX, the checkpoint-based bidirectional index (CBiX paper §4).
//!
//! The window of n partitions (p-values) is cut into k checkpoints of
//! m = ⌈n/k⌉ partitions (Definition 4.1):
//! * the oldest checkpoint has a binary tree over its p-values; its root is
//!   the b-value. Evictions and late partials there cost a tree path,
//!   log(m) ⊕ (Equations 1-2);
//! * every other checkpoint keeps only its c-value, the ⊕ of its p-values,
//!   and one g-value is the ⊕ of all those c-values. A late partial there
//!   costs three ⊕: into its p-value, its c-value and the g-value
//!   (Equations 3-5);
//! * when the oldest checkpoint has been evicted entirely, a tree is built
//!   over the next one (Equation 6) and the g-value recomputed from the
//!   c-values (Equation 7);
//! * the answer is b-value ⊕ g-value (Equation 8).
//!
//! Folding a late partial into c and g puts it out of position, so CBiX is
//! only sound for commutative operations; construction refuses the others.
//!
//! k follows Theorem 4.1, k = √(n (p1 + 2) / (2 ln 10)) with p1 = 0 unless
//! given ([`Cbix::with_k`]). The window may grow past n; then CBiX is rebuilt
//! for twice the size (amortised O(1) per slot).
//!
//! Checkpoints are fixed blocks of slot ids (`id / m`, m a power of two);
//! at least k + 1 of them are kept in a ring (a power-of-two number of
//! blocks) because a window of k·m slots may straddle k + 1 blocks.

use super::{absent, opt_combine, opt_combine_into, propagate, update_path, GeneralAggregator, NewGeneral};
use crate::monoid::Monoid;
use crate::{Error, Result};

pub struct Cbix<M: Monoid> {
    m: usize,
    k: usize,
    /// log2(m).
    shift: u32,
    /// p-values, a ring of blocks·m slots indexed by `id mod`.
    p: Vec<Option<M::Agg>>,
    /// c-values, a ring of blocks (>= k + 1, a power of two) indexed by block.
    c: Vec<Option<M::Agg>>,
    g: Option<M::Agg>,
    /// Tree over the oldest checkpoint: leaves at `tm..2tm`, root at 1.
    tree: Vec<Option<M::Agg>>,
    tm: usize,
    /// The block of the tree (the oldest checkpoint).
    tree_block: u64,
    /// Every id below `lo` is evicted.
    lo: u64,
    end: u64,
    count: usize,
    /// Theorem 4.1's p1 estimate this instance was sized for.
    p1: f64,
    pending: Vec<usize>,
    /// Reused level buffers of `propagate` (no allocation per slide).
    scratch: (Vec<usize>, Vec<usize>),
}

/// Theorem 4.1 (as printed: log base 10): the number of checkpoints that
/// minimises the ⊕ per slide for a window of `n` partitions with `p1` late
/// partials per slide in the oldest checkpoint.
pub fn theorem_4_1_k(n: usize, p1: f64) -> usize {
    let k = (n as f64 * (p1 + 2.0) / (2.0 * std::f64::consts::LN_10)).sqrt().round() as usize;
    k.clamp(1, n.max(1))
}

impl<M: Monoid> NewGeneral for Cbix<M> {
    fn new_general(window: usize) -> Result<Self> {
        let n = window.max(1);
        Self::with_k(n, theorem_4_1_k(n, 0.0))
    }
}

impl<M: Monoid> Cbix<M> {
    /// A CBiX for windows of `n` partitions in `k` checkpoints.
    pub fn with_k(n: usize, k: usize) -> Result<Self> {
        if !M::COMMUTATIVE {
            return Err(Error::NotCommutative { algorithm: "cbix", agg: M::NAME });
        }
        let n = n.max(1);
        // Checkpoints of a power-of-two size m (the one nearest above n/k,
        // so k may shrink by up to half) in a ring of a power-of-two number
        // of blocks >= k + 1: every slot, block and leaf index is then a
        // shift or a mask. Divisions by a run-time m cost more per slide
        // than CBiX's few ⊕ on a cheap ⊕ such as sum.
        let m = n.div_ceil(k.clamp(1, n)).next_power_of_two();
        let k = n.div_ceil(m);
        let blocks = (k + 1).next_power_of_two();
        let tm = m;
        Ok(Cbix {
            m,
            k,
            shift: m.trailing_zeros(),
            p: vec![None; blocks * m],
            c: vec![None; blocks],
            g: None,
            tree: vec![None; 2 * tm],
            tm,
            tree_block: 0,
            lo: 0,
            end: 0,
            count: 0,
            p1: 0.0,
            pending: Vec::new(),
            scratch: (Vec::new(), Vec::new()),
        })
    }

    /// Checkpoints and their size (reports).
    pub fn shape(&self) -> (usize, usize) {
        (self.k, self.m)
    }

    #[inline]
    fn block(&self, id: u64) -> u64 {
        id >> self.shift
    }
    #[inline]
    fn pi(&self, id: u64) -> usize {
        (id & (self.p.len() as u64 - 1)) as usize
    }
    #[inline]
    fn ci(&self, b: u64) -> usize {
        (b & (self.c.len() as u64 - 1)) as usize
    }
    #[inline]
    fn leaf(&self, id: u64) -> usize {
        (id & (self.m as u64 - 1)) as usize
    }
    fn last_block(&self) -> u64 {
        if self.end == 0 { 0 } else { self.block(self.end - 1) }
    }

    fn update_path(&mut self, leaf: usize) {
        update_path::<M>(&mut self.tree, self.tm, leaf);
    }

    /// RA Algorithm 2 over the tree's changed leaves (`pending`).
    fn propagate(&mut self) {
        propagate::<M>(&mut self.tree, self.tm, &mut self.pending, &mut self.scratch);
    }

    /// Equation 6: the tree over block `b` (RA Algorithm 1, m - 1 ⊕ at most).
    fn build_tree(&mut self, b: u64) {
        let base = b * self.m as u64;
        for i in 0..self.tm {
            self.tree[self.tm + i] = if i < self.m { self.p[self.pi(base + i as u64)].clone() } else { None };
        }
        for v in (1..self.tm).rev() {
            self.tree[v] = opt_combine::<M>(&self.tree[2 * v], &self.tree[2 * v + 1]);
        }
        self.tree_block = b;
    }

    /// Equation 7: g = ⊕ of the c-values after the oldest checkpoint.
    fn recompute_g(&mut self) {
        let mut g = None;
        for b in self.tree_block + 1..=self.last_block() {
            g = opt_combine::<M>(&g, &self.c[self.ci(b)]);
        }
        self.g = g;
    }

    /// c-value of block `b` from its p-values (after a set or a hole).
    fn recompute_c(&mut self, b: u64) {
        let base = b * self.m as u64;
        let mut c = None;
        for i in 0..self.m as u64 {
            c = opt_combine::<M>(&c, &self.p[self.pi(base + i)]);
        }
        let ci = self.ci(b);
        self.c[ci] = c;
    }

    fn clear_block(&mut self, b: u64) {
        let base = b * self.m as u64;
        for i in 0..self.m as u64 {
            let pi = self.pi(base + i);
            if self.p[pi].take().is_some() && base + i >= self.lo {
                self.count -= 1;
            }
        }
        let ci = self.ci(b);
        self.c[ci] = None;
    }

    /// Empty window positioned at `id`.
    fn reset_at(&mut self, id: u64) {
        self.p.iter_mut().for_each(|x| *x = None);
        self.c.iter_mut().for_each(|x| *x = None);
        self.tree.iter_mut().for_each(|x| *x = None);
        self.g = None;
        self.count = 0;
        self.lo = id;
        self.tree_block = self.block(id);
    }

    /// Rebuild for a window of at least `n` slots (the window outgrew k·m).
    fn grow(&mut self, n: usize) {
        let items = self.contents();
        let (lo, end, p1) = (self.lo, self.end, self.p1);
        let k = theorem_4_1_k(n, p1);
        *self = Self::with_k(n, k).expect("commutative");
        self.p1 = p1;
        self.reset_at(lo);
        for (id, v) in items {
            self.append(id, v);
        }
        self.end = self.end.max(end);
    }

    fn append(&mut self, id: u64, v: M::Agg) {
        if self.count == 0 && self.block(id) > self.tree_block + self.k as u64 {
            // Nothing left in the window: restart at the new slot.
            self.reset_at(self.lo.max(id - self.leaf(id) as u64));
            self.end = self.tree_block * self.m as u64;
        }
        if self.block(id) > self.tree_block + self.k as u64 {
            let span = (id - self.lo + 1) as usize;
            self.grow((2 * (self.k * self.m)).max(span + self.m));
            return self.append(id, v);
        }
        // Blocks entered for the first time in this lap start empty.
        let first_new = if self.end == 0 { self.block(id) } else { self.last_block() + 1 };
        for b in first_new..=self.block(id) {
            if b != self.tree_block || self.end == 0 {
                self.clear_block(b);
            }
        }
        let b = self.block(id);
        let pi = self.pi(id);
        self.p[pi] = Some(v.clone());
        if b == self.tree_block {
            let l = self.leaf(id);
            self.tree[self.tm + l] = Some(v);
            self.update_path(l);
        } else {
            let ci = self.ci(b);
            opt_combine_into::<M>(&mut self.c[ci], &v);
            opt_combine_into::<M>(&mut self.g, &v);
        }
        self.end = id + 1;
        self.count += 1;
    }

    /// Fold a late partial into a present slot; tree leaves are left for
    /// the caller to propagate (`pending`), and a block outside the tree
    /// is returned, for the caller to fold its c-value and g again in slot
    /// order ([`Cbix::refold`]).
    fn fold(&mut self, id: u64, v: &M::Agg) -> Result<Option<u64>> {
        let pi = self.pi(id);
        if id < self.lo || self.p[pi].is_none() {
            return absent("cbix", id).map(|()| None);
        }
        M::combine_into(self.p[pi].as_mut().unwrap(), v);
        let b = self.block(id);
        if b == self.tree_block {
            let l = self.leaf(id);
            self.tree[self.tm + l] = self.p[pi].clone();
            self.pending.push(l);
            return Ok(None);
        }
        Ok(Some(b))
    }

    /// The c-values of `blocks` (sorted) and g, folded again in slot order:
    /// a late partial combined in last would come after the slots after
    /// it, and a min's or max's tie between 0.0 and -0.0 keeps the
    /// earliest row's sign (docs/DESIGN.md §5.3; a seed of
    /// props/general.rs read -0.0 as 0.0).
    fn refold(&mut self, blocks: &mut Vec<u64>) {
        blocks.dedup();
        for &b in blocks.iter() {
            self.recompute_c(b);
        }
        if !blocks.is_empty() {
            self.recompute_g();
        }
    }
}

impl<M: Monoid> GeneralAggregator<M> for Cbix<M> {
    fn insert(&mut self, id: u64, v: M::Agg) -> Result<()> {
        if id >= self.end {
            self.append(id, v);
            return Ok(());
        }
        let mut dirty: Vec<u64> = self.fold(id, &v)?.into_iter().collect();
        self.refold(&mut dirty);
        self.propagate();
        Ok(())
    }

    fn bulk_insert(&mut self, ups: &[(u64, M::Agg)]) -> Result<()> {
        let (mut r, mut dirty) = (Ok(()), Vec::new());
        for (id, v) in ups {
            if *id >= self.end {
                self.propagate();
                self.append(*id, v.clone());
            } else {
                match self.fold(*id, v) {
                    Ok(b) => dirty.extend(b),
                    Err(e) => {
                        r = Err(e);
                        break;
                    }
                }
            }
        }
        dirty.sort_unstable();
        self.refold(&mut dirty);
        self.propagate();
        r
    }

    fn bulk_set(&mut self, ups: &[(u64, M::Agg)]) -> Result<()> {
        let mut dirty = Vec::new();
        for (id, v) in ups {
            let pi = self.pi(*id);
            if *id < self.lo || *id >= self.end || self.p[pi].is_none() {
                self.propagate();
                return absent("cbix", *id);
            }
            self.p[pi] = Some(v.clone());
            let b = self.block(*id);
            if b == self.tree_block {
                let l = self.leaf(*id);
                self.tree[self.tm + l] = Some(v.clone());
                self.pending.push(l);
            } else {
                dirty.push(b);
            }
        }
        self.propagate();
        dirty.sort_unstable();
        self.refold(&mut dirty);
        Ok(())
    }

    fn evict(&mut self, id: u64) {
        if id < self.lo || id >= self.end {
            return;
        }
        let pi = self.pi(id);
        if self.p[pi].take().is_none() {
            return;
        }
        self.count -= 1;
        let b = self.block(id);
        if b == self.tree_block {
            let l = self.leaf(id);
            self.tree[self.tm + l] = None;
            self.update_path(l);
        } else {
            // No inverse: the checkpoint and the g-value are recomputed.
            self.recompute_c(b);
            self.recompute_g();
        }
    }

    fn evict_upto(&mut self, id: u64) {
        if id <= self.lo {
            return;
        }
        if id >= self.end {
            // Everything goes; later slots are appended at or after `end`.
            self.reset_at(self.end);
            return;
        }
        let nb = self.block(id);
        if nb == self.tree_block {
            // Equation 1: purge from the tree, one path per partition.
            for x in self.lo..id {
                let pi = self.pi(x);
                if self.p[pi].take().is_some() {
                    self.count -= 1;
                    let l = self.leaf(x);
                    self.tree[self.tm + l] = None;
                    self.pending.push(l);
                }
            }
            self.lo = id;
            self.propagate();
            return;
        }
        // The oldest checkpoint (and maybe more) left the window entirely.
        for b in self.tree_block..nb {
            self.clear_block(b);
        }
        let base = nb * self.m as u64;
        for x in base.max(self.lo)..id {
            let pi = self.pi(x);
            if self.p[pi].take().is_some() {
                self.count -= 1;
            }
        }
        self.lo = id;
        self.build_tree(nb);
        let ci = self.ci(nb);
        self.c[ci] = None;
        self.recompute_g();
    }

    fn query(&mut self) -> M::Agg {
        opt_combine::<M>(&self.tree[1], &self.g).unwrap_or_else(M::identity)
    }

    fn len(&self) -> usize {
        self.count
    }

    fn end(&self) -> u64 {
        self.end
    }

    fn contents(&self) -> Vec<(u64, M::Agg)> {
        (self.lo..self.end).filter_map(|id| self.p[self.pi(id)].clone().map(|v| (id, v))).collect()
    }
}
