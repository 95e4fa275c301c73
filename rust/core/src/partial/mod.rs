//! Partial aggregation (FlatFIT paper §2.1): how a stream is sliced into
//! partials before the final aggregator sees them. Three slicings, one file
//! each, all producing the cut points of one period of a shared plan
//! ([`crate::plan`]):
//!
//! * [`panes`]: Panes (Li et al.): equal panes of `gcd(range, slide)` rows
//!   (over all queries: the gcd of all of them); `range / gcd` partials per
//!   window.
//! * [`pairs`]: Pairs (Krishnamurthy et al.): per query the two fragments
//!   `range mod slide` and `slide - range mod slide`, i.e. a cut at every
//!   window end and every window start; `2 floor(range/slide) + 1` partials
//!   per window. The default, as in the paper.
//! * [`cutty`]: Cutty slicing (Carbone et al.): a cut only where a window
//!   starts; a window end inside a slice is answered from the closed slices
//!   plus the open slice's running value, so `floor(range/slide) + 1`
//!   partials per window.
//!
//! Every slicing gives the same answers (each window is the combine of the
//! rows it covers, only the grouping differs); they differ in partials per
//! window (final-aggregation work, memory) and cuts per row.
//!
//! [`crate::ops::reduce`]: folding a batch's rows into the open partial, SIMD with
//! run-time CPU-feature dispatch for sum / count / min / max / mean.

pub mod cutty;
pub mod pairs;
pub mod panes;


use crate::slide::Slide;
use crate::{invalid, Result};

/// Which partial aggregation a shared plan uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Slicing {
    #[default]
    Pairs,
    Panes,
    Cutty,
}

impl Slicing {
    pub const ALL: [Slicing; 3] = [Slicing::Pairs, Slicing::Panes, Slicing::Cutty];

    pub fn name(self) -> &'static str {
        match self {
            Slicing::Pairs => "pairs",
            Slicing::Panes => "panes",
            Slicing::Cutty => "cutty",
        }
    }

    pub fn parse(s: &str) -> Result<Slicing> {
        match Slicing::ALL.iter().find(|x| x.name() == s) {
            Some(&x) => Ok(x),
            None => invalid!("unknown partial aggregation '{s}'; expected one of pairs, panes, cutty"),
        }
    }
}

/// One period of a plan's points: sorted, deduplicated offsets in
/// `(0, composite]` where a partial closes (`cut`) or a query fires (every
/// window end is a point; under Pairs and Panes every point is a cut).
pub struct Points {
    pub at: Vec<u64>,
    pub cut: Vec<bool>,
}

/// Fold an offset into `(0, composite]`.
#[inline]
pub(crate) fn fold(x: u64, composite: u64) -> u64 {
    let m = x % composite;
    if m == 0 { composite } else { m }
}

/// Window ends of `q` in one period, folded.
pub(crate) fn window_ends(q: &Slide, composite: u64) -> impl Iterator<Item = u64> + '_ {
    (1..=composite / q.slide).map(move |j| fold(j * q.slide + q.phase % q.slide, composite))
}

/// Window starts of `q` in one period (`end - range`, folded).
pub(crate) fn window_starts(q: &Slide, composite: u64) -> impl Iterator<Item = u64> + '_ {
    window_ends(q, composite).map(move |e| fold(e + composite - q.range % composite, composite))
}

/// The points of one period under `slicing`.
pub fn points(queries: &[Slide], composite: u64, slicing: Slicing) -> Result<Points> {
    match slicing {
        Slicing::Pairs => Ok(all_cuts(pairs::cuts(queries, composite))),
        Slicing::Panes => Ok(all_cuts(panes::cuts(queries, composite)?)),
        Slicing::Cutty => Ok(cutty::points(queries, composite)),
    }
}

fn all_cuts(mut at: Vec<u64>) -> Points {
    at.sort_unstable();
    at.dedup();
    let cut = vec![true; at.len()];
    Points { at, cut }
}
