//! Pairs (FlatFIT paper §2.1, Figure 2; Krishnamurthy et al.): each slide is
//! cut into the fragments `f1 = range mod slide` and `f2 = slide - f1`, which
//! is a cut at every window end and at every window start (`end - range`).
//! Over many queries: the union of their cuts.

use super::{window_ends, window_starts};
use crate::slide::Slide;

/// Cut offsets of one period (unsorted, may repeat).
pub fn cuts(queries: &[Slide], composite: u64) -> Vec<u64> {
    let mut out = Vec::new();
    for q in queries {
        out.extend(window_ends(q, composite));
        out.extend(window_starts(q, composite));
    }
    out
}
