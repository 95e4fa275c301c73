//! FIFO final aggregators: the window is a queue of partials; insert at the
//! back, evict from the front, query the aggregate of all or of the newest k.
//!
//! One trait, [`FifoAggregator`], so tests and benchmarks run over every
//! algorithm alike. One file per algorithm, named as its paper names it:
//!
//! | file | algorithm | source |
//! | --- | --- | --- |
//! | `recalc.rs` | Naive / Recalc | FlatFIT paper §2.2 |
//! | `soe.rs` | Subtract-on-Evict | SlideSide paper §2 |
//! | `two_stacks.rs` | TwoStacks | SlideSide paper §2 |
//! | `daba.rs` | DABA (worst-case O(1)) | Tangwongsan et al. |
//! | `flatfat.rs` | FlatFAT, FIFO form | RA paper §4 |
//! | `bint.rs` | B-Int | FlatFIT paper §2.2 |
//! | `flatfit.rs` | FlatFIT, Algorithm 1 with wReset | FlatFIT paper §3 |
//! | `slideside.rs` | SlideSide (invertible and not) | SlideSide paper §3 |
//!
//! `any.rs` holds [`AnyFifo`], one of them chosen at run time, which the
//! stream layers use so that they compile once per operation.

use crate::monoid::Monoid;
use crate::{Error, Result};

pub mod any;
pub mod bint;
pub mod daba;
pub mod flatfat;
pub mod flatfit;
pub mod recalc;
pub mod slideside;
pub mod soe;
pub mod two_stacks;

pub use any::{AnyFifo, Renew};
pub use bint::BInt;
pub use daba::Daba;
pub use flatfat::FlatFat;
pub use flatfit::FlatFit;
pub use recalc::Recalc;
pub use slideside::SlideSide;
pub use soe::SubtractOnEvict;
pub use two_stacks::TwoStacks;

/// A FIFO window of partial aggregates.
///
/// `query` and `query_last` take `&mut self` because some algorithms
/// (FlatFIT's path compression) update their index while answering.
pub trait FifoAggregator<M: Monoid>: Send {
    /// Append the newest partial.
    fn insert(&mut self, v: M::Agg);
    /// Remove the oldest partial. Does nothing on an empty window.
    fn evict(&mut self);
    /// Aggregate of the whole window, oldest to newest; the identity if empty.
    fn query(&mut self) -> M::Agg;
    /// Aggregate of the newest `k` partials (`k` is clamped to `len()`).
    /// Shared multi-query plans answer a query of a shorter range with it.
    fn query_last(&mut self, k: usize) -> M::Agg;
    /// Partials currently in the window.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The partials in the window, oldest first (for checkpoints).
    fn contents(&self) -> Vec<M::Agg>;
    /// Append many partials; algorithms override when they can do better
    /// than one `insert` each.
    fn bulk_insert(&mut self, vs: &[M::Agg]) {
        for v in vs {
            self.insert(v.clone());
        }
    }
    /// Remove the `n` oldest partials.
    fn bulk_evict(&mut self, n: usize) {
        for _ in 0..n.min(self.len()) {
            self.evict();
        }
    }
}

/// The algorithm names of docs/DESIGN.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    Recalc,
    Soe,
    TwoStacks,
    Daba,
    FlatFat,
    BInt,
    FlatFit,
    SlideSide,
    Auto,
}

impl Algorithm {
    pub const ALL: [Algorithm; 8] = [
        Algorithm::Recalc,
        Algorithm::Soe,
        Algorithm::TwoStacks,
        Algorithm::Daba,
        Algorithm::FlatFat,
        Algorithm::BInt,
        Algorithm::FlatFit,
        Algorithm::SlideSide,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Recalc => "recalc",
            Algorithm::Soe => "soe",
            Algorithm::TwoStacks => "two_stacks",
            Algorithm::Daba => "daba",
            Algorithm::FlatFat => "flatfat",
            Algorithm::BInt => "bint",
            Algorithm::FlatFit => "flatfit",
            Algorithm::SlideSide => "slideside",
            Algorithm::Auto => "auto",
        }
    }

    pub fn parse(s: &str) -> Result<Algorithm> {
        let a = match s {
            "auto" => Algorithm::Auto,
            "cbix" => {
                return Err(Error::Invalid(
                    "algorithm 'cbix' is for out-of-order streams and is not available for FIFO windows yet".into(),
                ))
            }
            _ => match Algorithm::ALL.iter().find(|a| a.name() == s) {
                Some(a) => *a,
                None => {
                    return Err(Error::Invalid(format!(
                        "unknown algorithm '{s}'; expected one of auto, {}",
                        Algorithm::ALL.map(|a| a.name()).join(", ")
                    )))
                }
            },
        };
        Ok(a)
    }

    /// Whether this algorithm can run `M` (SoE needs an inverse).
    pub fn check<M: Monoid>(self) -> Result<()> {
        if self == Algorithm::Soe && !M::INVERTIBLE {
            return Err(Error::NotInvertible { algorithm: self.name(), agg: M::NAME });
        }
        Ok(())
    }

    /// What `auto` means for a FIFO window of partials: TwoStacks has O(1)
    /// amortised steps on flat arrays and no requirements on the operation.
    pub fn resolve<M: Monoid>(self) -> Algorithm {
        self.resolve_for::<M>(1)
    }

    /// `auto` for a structure answering `queries` window sizes: one size →
    /// TwoStacks, the fastest single window (SlideSide paper §4.3); several
    /// → SlideSide, one structure answering every size in O(1) amortised
    /// (§4.2; measured in benches/paper/slideside_multi.md).
    pub fn resolve_for<M: Monoid>(self, queries: usize) -> Algorithm {
        match self {
            Algorithm::Auto if queries > 1 => Algorithm::SlideSide,
            Algorithm::Auto => Algorithm::TwoStacks,
            a => a,
        }
    }
}

/// Build the aggregator `algo` for operation `M` behind a trait object (for
/// callers that hold one aggregator per batch, e.g. the raw Python classes);
/// `capacity` is a hint (the expected number of partials in the window).
pub fn build<M: Monoid>(algo: Algorithm, capacity: usize) -> Result<Box<dyn FifoAggregator<M>>> {
    let algo = algo.resolve::<M>();
    algo.check::<M>()?;
    crate::with_fifo!(algo, M, boxed(capacity))
}

fn boxed<M: Monoid, A: FifoAggregator<M> + New + 'static>(capacity: usize) -> Result<Box<dyn FifoAggregator<M>>> {
    Ok(Box::new(A::new_with_capacity(capacity)?))
}

/// [`build`] as a keyed stream builds one key's aggregator ([`New::lazy`]).
pub fn build_lazy<M: Monoid>(algo: Algorithm, bound: usize) -> Result<Box<dyn FifoAggregator<M>>> {
    let algo = algo.resolve::<M>();
    algo.check::<M>()?;
    crate::with_fifo!(algo, M, boxed_lazy(bound))
}

fn boxed_lazy<M: Monoid, A: FifoAggregator<M> + New + 'static>(bound: usize) -> Result<Box<dyn FifoAggregator<M>>> {
    Ok(Box::new(A::lazy(bound)?))
}

/// Call the generic function `$f::<$M, A>(args)` with `A` the concrete
/// aggregator type of `$algo` for monoid `$M`: static dispatch, no virtual
/// call per partial. `$algo` must already be resolved (not `Auto`).
#[macro_export]
macro_rules! with_fifo {
    ($algo:expr, $M:ty, $f:ident ( $($arg:expr),* $(,)? )) => {{
        use $crate::fifo::*;
        match $algo {
            Algorithm::Recalc => $f::<$M, Recalc<$M>>($($arg),*),
            Algorithm::Soe => $f::<$M, SubtractOnEvict<$M>>($($arg),*),
            Algorithm::TwoStacks => $f::<$M, TwoStacks<$M>>($($arg),*),
            Algorithm::Daba => $f::<$M, Daba<$M>>($($arg),*),
            Algorithm::FlatFat => $f::<$M, FlatFat<$M>>($($arg),*),
            Algorithm::BInt => $f::<$M, BInt<$M>>($($arg),*),
            Algorithm::FlatFit => $f::<$M, FlatFit<$M>>($($arg),*),
            Algorithm::SlideSide => $f::<$M, SlideSide<$M>>($($arg),*),
            Algorithm::Auto => unreachable!("resolve the algorithm first"),
        }
    }};
}

/// TwoStacks' flip: `out[j]` becomes the
/// aggregate of the newest `j + 1` items, i.e. the suffix scan of `items`
/// read from the back (older items on the left of every combine).
pub(crate) fn suffix_scan<M: Monoid>(items: &[M::Agg], out: &mut Vec<M::Agg>) {
    out.clear();
    if let Some(last) = items.last() {
        out.push(last.clone());
        for i in (0..items.len() - 1).rev() {
            let s = M::combine(&items[i], out.last().unwrap());
            out.push(s);
        }
    }
}

/// A capacity hint from a window size that may be huge (a range of 10^15
/// rows is a valid query): algorithms grow on demand, so never pre-allocate
/// more than this.
pub fn capacity_hint(partials: usize) -> usize {
    partials.min(1 << 16)
}

/// Construction from a capacity hint, shared by all algorithms so generic
/// code can build any of them. Fails only where the algorithm cannot run
/// the operation (SoE without an inverse).
pub trait New: Sized {
    fn new_with_capacity(capacity: usize) -> Result<Self>;
    /// An empty aggregator for one key of a keyed stream, whose window never
    /// holds more than about `bound` partials: it should allocate nothing
    /// until the first insert, then room for the bound at once when it is
    /// small (one allocation, no slack), growing geometrically otherwise.
    /// Algorithms that do not specialise start small.
    fn lazy(bound: usize) -> Result<Self> {
        Self::new_with_capacity(bound.min(4))
    }
}

/// The next capacity of a buffer that must hold `need` items and whose
/// live contents stay within `bound`: geometric from 16, but never past a
/// bound that suffices, so a small window costs one exact allocation and a
/// large one no more than twice its live contents.
pub fn next_capacity(cap: usize, need: usize, bound: usize) -> usize {
    let geo = cap.saturating_mul(2).max(16);
    let c = if need <= bound { geo.min(bound) } else { geo };
    c.max(need)
}
