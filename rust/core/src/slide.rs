//! A query's window shape as the planner and the slicers see it, and the
//! bound on one plan period: what `plan` and `partial/` both need, so
//! neither has to import the other's.

/// A query as the planner sees it, in rows (count windows) or time units.
/// Its windows end at `phase + j * slide`: count windows end at slide
/// multiples (`phase` 0); Spark's time windows start at slide multiples, so
/// they end at `range mod slide` past one (`phase = range % slide`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slide {
    pub range: u64,
    pub slide: u64,
    pub phase: u64,
}

impl Slide {
    pub fn count(range: u64, slide: u64) -> Slide {
        Slide { range, slide, phase: 0 }
    }
    pub fn time(range: u64, slide: u64) -> Slide {
        Slide { range, slide, phase: if slide == 0 { 0 } else { range % slide } }
    }
}

pub fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Edges of one period can be enumerated only if the period is not huge;
/// a plan over more edges than this is refused (a clear error, not an OOM).
pub const MAX_EDGES: u64 = 1 << 24;
