//! Cutty slicing (FlatFIT paper §2.1, Figure 3; Carbone et al., CIKM 2016):
//! a slice starts only where some window starts. A window end that is not
//! a cut is answered mid-slice: the closed slices inside the window, then
//! the open slice's running value (it began at a window start, which is at
//! or after this window's start, so it lies inside the window). Half the
//! partials of Pairs; the price is one extra combine per such answer.

use super::{window_ends, window_starts, Points};
use crate::slide::Slide;

/// Points of one period: every window start (a cut) and every window end
/// (a fire point, a cut only if some window starts there too).
pub fn points(queries: &[Slide], composite: u64) -> Points {
    let mut starts: Vec<u64> = queries.iter().flat_map(|q| window_starts(q, composite)).collect();
    starts.sort_unstable();
    starts.dedup();
    let mut at: Vec<u64> = queries.iter().flat_map(|q| window_ends(q, composite)).chain(starts.iter().copied()).collect();
    at.sort_unstable();
    at.dedup();
    let cut = at.iter().map(|x| starts.binary_search(x).is_ok()).collect();
    Points { at, cut }
}
