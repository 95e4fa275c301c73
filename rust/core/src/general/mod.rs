//! General (out-of-order) final aggregators: the window is a sequence of
//! slots named by increasing ids (slices of event time), and besides FIFO
//! insert/evict a slot anywhere in the window can change when a late row
//! arrives (RA paper §5.1, CBiX paper §3-4).
//!
//! | file | algorithm | source |
//! | --- | --- | --- |
//! | `recalc.rs` | naive recomputation (the test oracle) | CBiX §3.2.2 |
//! | `flatfat.rs` | general FlatFAT: ⊥ holes, compact, resize, inverted buffer | RA §4.2, §5.1 |
//! | `cbix.rs` | CBiX: checkpoints, b/c/g-values (commutative ops only) | CBiX §4 |
//! | `two_stacks_ext.rs` | Two-Stacks extended with recomputation | CBiX §3.3 |
//!
//! Contract shared by all (so tests and benchmarks run over all alike):
//! * ids only grow at the back: `insert(id, v)` with `id >= end()` appends a
//!   new slot (ids skipped over are absent, not empty);
//! * `insert(id, v)` on a present slot folds `v` into it: `slot = slot ⊕ v`
//!   (a late partial; for a commutative op its position does not matter);
//! * `set` replaces present slots (order-sensitive ops re-fold a slice and
//!   hand over its new value);
//! * `evict(id)` removes one slot anywhere (a ⊥ hole), `evict_upto(id)`
//!   every slot with a smaller id (FIFO eviction);
//! * `query()` is the ⊕ of the present slots in id order.
//!
//! Everything is generic over [`Monoid`] and monomorphised. The
//! out-of-order stream holds an [`AnyGeneral`] (`any.rs`): the algorithm is
//! picked once per stream, never per element.

use std::cell::Cell;

use crate::monoid::Monoid;
use crate::{invalid, Error, Result};

pub mod any;
pub mod cbix;
pub mod flatfat;
pub mod recalc;
pub mod two_stacks_ext;

pub use any::AnyGeneral;
pub use cbix::Cbix;
pub use flatfat::GeneralFlatFat;
pub use recalc::GeneralRecalc;
pub use two_stacks_ext::TwoStacksExt;

/// A window of slots with ids, updated anywhere (see the module docs).
pub trait GeneralAggregator<M: Monoid>: Send {
    /// Append a slot (`id >= end()`) or fold `v` into slot `id`. An `id`
    /// below `end()` that is not present (evicted or skipped) is an error.
    fn insert(&mut self, id: u64, v: M::Agg) -> Result<()>;
    /// Many inserts at once; trees update each inner node once (RA
    /// Algorithm 2). `ups` in any order; the same id may repeat (folded in
    /// the order given).
    fn bulk_insert(&mut self, ups: &[(u64, M::Agg)]) -> Result<()> {
        for (id, v) in ups {
            self.insert(*id, v.clone())?;
        }
        Ok(())
    }
    /// Replace the values of present slots.
    fn bulk_set(&mut self, ups: &[(u64, M::Agg)]) -> Result<()>;
    /// Remove slot `id` if present.
    fn evict(&mut self, id: u64);
    /// Remove every slot with an id below `id`.
    fn evict_upto(&mut self, id: u64);
    /// ⊕ of the present slots in id order; the identity if none.
    fn query(&mut self) -> M::Agg;
    /// Present slots.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// One past the largest id ever inserted (0 at first).
    fn end(&self) -> u64;
    /// The present slots, oldest first (checkpoints, tests).
    fn contents(&self) -> Vec<(u64, M::Agg)>;
}

/// Construction, shared so generic code can build any of them. `window` is
/// the expected number of slots (CBiX sizes its checkpoints from it).
pub trait NewGeneral: Sized {
    fn new_general(window: usize) -> Result<Self>;
}

/// The algorithm names for out-of-order streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LateAlgorithm {
    Cbix,
    FlatFat,
    TwoStacks,
    Recalc,
    Auto,
}

impl LateAlgorithm {
    pub const ALL: [LateAlgorithm; 4] =
        [LateAlgorithm::Cbix, LateAlgorithm::FlatFat, LateAlgorithm::TwoStacks, LateAlgorithm::Recalc];

    pub fn name(self) -> &'static str {
        match self {
            LateAlgorithm::Cbix => "cbix",
            LateAlgorithm::FlatFat => "flatfat",
            LateAlgorithm::TwoStacks => "two_stacks",
            LateAlgorithm::Recalc => "recalc",
            LateAlgorithm::Auto => "auto",
        }
    }

    pub fn parse(s: &str) -> Result<LateAlgorithm> {
        if s == "auto" {
            return Ok(LateAlgorithm::Auto);
        }
        LateAlgorithm::ALL.iter().copied().find(|a| a.name() == s).ok_or_else(|| {
            Error::Invalid(format!(
                "algorithm '{s}' cannot run an out-of-order stream (lateness=...); expected one of auto, {}",
                LateAlgorithm::ALL.map(|a| a.name()).join(", ")
            ))
        })
    }

    /// `auto`: CBiX where it may run (commutative ops), else general FlatFAT.
    pub fn resolve<M: Monoid>(self) -> LateAlgorithm {
        match self {
            LateAlgorithm::Auto if M::COMMUTATIVE => LateAlgorithm::Cbix,
            LateAlgorithm::Auto => LateAlgorithm::FlatFat,
            a => a,
        }
    }

    /// CBiX folds late values into its c- and g-values out of position
    /// (CBiX §4.3, Equations 4-5): only sound for commutative ops.
    pub fn check<M: Monoid>(self) -> Result<()> {
        if self == LateAlgorithm::Cbix && !M::COMMUTATIVE {
            return Err(Error::NotCommutative { algorithm: "cbix", agg: M::NAME });
        }
        Ok(())
    }
}

/// Build `algo` for `M` behind a trait object (tests, benches).
pub fn build<M: Monoid>(algo: LateAlgorithm, window: usize) -> Result<Box<dyn GeneralAggregator<M>>> {
    let algo = algo.resolve::<M>();
    algo.check::<M>()?;
    crate::with_general!(algo, M, boxed(window))
}

fn boxed<M: Monoid, A: GeneralAggregator<M> + NewGeneral + 'static>(window: usize) -> Result<Box<dyn GeneralAggregator<M>>> {
    Ok(Box::new(A::new_general(window)?))
}

/// Call `$f::<$M, A>(args)` with `A` the aggregator type of `$algo` (already
/// resolved): static dispatch.
#[macro_export]
macro_rules! with_general {
    ($algo:expr, $M:ty, $f:ident ( $($arg:expr),* $(,)? )) => {{
        use $crate::general::*;
        match $algo {
            LateAlgorithm::Cbix => $f::<$M, Cbix<$M>>($($arg),*),
            LateAlgorithm::FlatFat => $f::<$M, GeneralFlatFat<$M>>($($arg),*),
            LateAlgorithm::TwoStacks => $f::<$M, TwoStacksExt<$M>>($($arg),*),
            LateAlgorithm::Recalc => $f::<$M, GeneralRecalc<$M>>($($arg),*),
            LateAlgorithm::Auto => unreachable!("resolve the algorithm first"),
        }
    }};
}

pub(crate) fn absent(algorithm: &str, id: u64) -> Result<()> {
    invalid!("{algorithm}: slot {id} is not in the window (evicted, or skipped when a later slot was appended)")
}

/// ⊕ with ⊥ (None) as the neutral marker of RA §5.1.1: `x ⊕ ⊥ = x`,
/// `⊥ ⊕ y = y`, and no ⊕ call is spent on it.
#[inline]
pub(crate) fn opt_combine<M: Monoid>(a: &Option<M::Agg>, b: &Option<M::Agg>) -> Option<M::Agg> {
    match (a, b) {
        (Some(x), Some(y)) => Some(M::combine(x, y)),
        (Some(x), None) => Some(x.clone()),
        (None, y) => y.clone(),
    }
}

/// Rewrite the path from leaf `leaf` of a FlatFAT-layout tree (root at 1,
/// leaf `p` at `leaves + p`) to the root.
pub(crate) fn update_path<M: Monoid>(tree: &mut [Option<M::Agg>], leaves: usize, leaf: usize) {
    let mut v = (leaves + leaf) / 2;
    while v >= 1 {
        tree[v] = opt_combine::<M>(&tree[2 * v], &tree[2 * v + 1]);
        v /= 2;
    }
}

/// RA Algorithm 2, lines 3-9, shared by general FlatFAT and CBiX's block
/// trees: the leaves at `changed` were rewritten; recompute every inner
/// node above them once, level by level, so paths that meet share their
/// upper nodes. One leaf (the usual slide) is one path. `changed` is left
/// empty; `scratch` holds the two level lists, reused across calls.
pub(crate) fn propagate<M: Monoid>(
    tree: &mut [Option<M::Agg>],
    leaves: usize,
    changed: &mut Vec<usize>,
    scratch: &mut (Vec<usize>, Vec<usize>),
) {
    if let [leaf] = changed[..] {
        changed.clear();
        return update_path::<M>(tree, leaves, leaf);
    }
    let (w, nx) = scratch;
    w.clear();
    w.extend(changed.drain(..).map(|p| (leaves + p) / 2));
    w.sort_unstable();
    w.dedup();
    // A one-leaf tree has no inner node (its parent index is 0).
    while !w.is_empty() && w[0] >= 1 {
        nx.clear();
        for &v in w.iter() {
            tree[v] = opt_combine::<M>(&tree[2 * v], &tree[2 * v + 1]);
            if v > 1 && nx.last() != Some(&(v / 2)) {
                nx.push(v / 2);
            }
        }
        std::mem::swap(w, nx);
    }
}

/// `acc = acc ⊕ b` with ⊥.
#[inline]
pub(crate) fn opt_combine_into<M: Monoid>(acc: &mut Option<M::Agg>, b: &M::Agg) {
    match acc {
        Some(a) => M::combine_into(a, b),
        None => *acc = Some(b.clone()),
    }
}

thread_local! {
    static OPS: Cell<u64> = const { Cell::new(0) };
}

/// An op-counting wrapper: the same monoid, counting every ⊕ call on this
/// thread (the CBiX paper's cost model, Table 1).
pub struct Counted<M>(std::marker::PhantomData<M>);

impl<M: Monoid> Counted<M> {
    /// ⊕ calls on this thread since the last reset.
    pub fn ops() -> u64 {
        OPS.with(|c| c.get())
    }
    pub fn reset() {
        OPS.with(|c| c.set(0))
    }
}

impl<M: Monoid> Monoid for Counted<M> {
    type Agg = M::Agg;
    const NAME: &'static str = M::NAME;
    const COMMUTATIVE: bool = M::COMMUTATIVE;
    const INVERTIBLE: bool = M::INVERTIBLE;
    fn identity() -> M::Agg {
        M::identity()
    }
    #[inline]
    fn combine(a: &M::Agg, b: &M::Agg) -> M::Agg {
        OPS.with(|c| c.set(c.get() + 1));
        M::combine(a, b)
    }
    #[inline]
    fn combine_into(acc: &mut M::Agg, b: &M::Agg) {
        OPS.with(|c| c.set(c.get() + 1));
        M::combine_into(acc, b)
    }
    fn inverse(acc: &M::Agg, old: &M::Agg) -> M::Agg {
        M::inverse(acc, old)
    }
}
