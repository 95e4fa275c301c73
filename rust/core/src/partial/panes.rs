//! Panes (FlatFIT paper §2.1, Figure 1; Li et al.): equal panes of
//! `gcd(range, slide)` rows, so every window start and end falls on a pane
//! edge and a window is `range / gcd` panes. Over many queries the pane is
//! the gcd of all their ranges, slides (and phases): more partials than
//! Pairs when a range is not a multiple of its slide, none of them uneven.

use crate::slide::{gcd, Slide, MAX_EDGES};
use crate::{invalid, Result};

/// The pane length shared by all queries.
pub fn pane(queries: &[Slide]) -> u64 {
    queries.iter().fold(0, |g, q| gcd(gcd(gcd(g, q.range), q.slide), q.phase))
}

/// Pane edges of one period: every multiple of the pane.
pub fn cuts(queries: &[Slide], composite: u64) -> Result<Vec<u64>> {
    let g = pane(queries).max(1);
    let n = composite / g;
    if n > MAX_EDGES {
        return invalid!(
            "panes of {g} rows over the composite slide {composite} would be {n} partials per period, more than the \
             bound {MAX_EDGES}; use partial='pairs' or 'cutty'"
        );
    }
    Ok((1..=n).map(|j| j * g).collect())
}
