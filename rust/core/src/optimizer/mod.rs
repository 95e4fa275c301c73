//! The WeaveShare multi-query optimizer and its edge counters (F1 paper,
//! Shein et al., CIKM'15).
//!
//! An aggregate continuous query (ACQ) is a [`Slide`]: range, slide and the
//! phase where its windows end, exactly as [`crate::plan`] runs it. Its
//! partial aggregates end at *edges*: every slide edge `phase + j*slide` and
//! every window start `edge - range` (the Pairs fragment edge, FlatFIT
//! §2.1/§2.3). Modulo the slide those are two residues, so a query is one or
//! two residue classes `x ≡ shift (mod slide)` — the paper's "shifts" (§3.2).
//! A set of queries sharing one plan has as edges the union of its classes;
//! its composite slide is the LCM of the slides, and the number of edges in
//! one composite slide is what [`count_edges`] computes — equal to
//! [`crate::plan::SharedPlan::edges_per_period`] for the same queries.
//!
//! Four exact counters, one file each:
//! * [`bitset`]: the Bit Set baseline (§2, §3.1): mark every edge of one
//!   period; refuses beyond [`bitset::MAX_BITS`] instead of allocating.
//! * [`f1`]: Formula 1, eq. 2, generalised to shifts by eq. 5 with the
//!   Overlap Check Formula (eq. 4).
//! * [`f1_memo`]: F1 with the GCD table of §3.3.
//! * [`fast`]: our own: recursion over the prime factors of the composite
//!   slide (CRT splitting), memoised, F1 for small sets.
//!
//! [`weaveshare`] is the optimizer of §2 (eq. 1) on top of them.

pub mod bitset;
pub mod f1;
pub mod f1_memo;
pub mod fast;
pub mod weaveshare;

pub use crate::plan::Slide;
use crate::plan::gcd;
use crate::{invalid, Result};

/// The residue class `x ≡ shift (mod slide)`, `shift < slide`: the edges of
/// one (slide, shift) pair of the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Class {
    pub slide: u64,
    pub shift: u64,
}

impl Class {
    /// Does every edge of `self` belong to `other` too? (`other.slide`
    /// divides `self.slide` and the shifts agree modulo it.)
    #[inline]
    pub fn within(&self, other: &Class) -> bool {
        self.slide % other.slide == 0 && self.shift % other.slide == other.shift
    }

    /// The Overlap Check Formula (eq. 4): two classes share edges iff their
    /// shift difference is a multiple of the GCD of their slides.
    #[inline]
    pub fn overlaps(&self, other: &Class) -> bool {
        self.shift.abs_diff(other.shift) % gcd(self.slide, other.slide) == 0
    }
}

/// Which exact edge counter to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    BitSet,
    F1,
    F1Memo,
    Fast,
}

impl Method {
    pub fn parse(name: &str) -> Result<Method> {
        Ok(match name {
            "bitset" => Method::BitSet,
            "f1" => Method::F1,
            "f1_memo" => Method::F1Memo,
            "fast" => Method::Fast,
            _ => return invalid!("unknown edge-count method {name:?}; use one of bitset, f1, f1_memo, fast"),
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Method::BitSet => "bitset",
            Method::F1 => "f1",
            Method::F1Memo => "f1_memo",
            Method::Fast => "fast",
        }
    }
}

/// The edges of one composite slide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeCount {
    /// Distinct edges in one composite slide.
    pub edges: u128,
    /// The composite slide: LCM of the slides.
    pub composite: u128,
}

impl EdgeCount {
    /// The same edges counted over a longer period `l` (a multiple of
    /// `self.composite`).
    pub fn over(&self, l: u128) -> EdgeCount {
        EdgeCount { edges: self.edges * (l / self.composite), composite: l }
    }

    /// Edges per unit (row or time unit).
    pub fn rate(&self) -> f64 {
        self.edges as f64 / self.composite as f64
    }
}

pub fn check(q: &Slide) -> Result<()> {
    if q.range == 0 || q.slide == 0 {
        return invalid!("range and slide must be positive, got range={} slide={}", q.range, q.slide);
    }
    Ok(())
}

/// The one or two classes of a query, as plan.rs places its edges: slide
/// edges at `phase mod slide`, window starts at `(phase - range) mod slide`.
pub fn query_classes(q: &Slide) -> Result<(Class, Option<Class>)> {
    check(q)?;
    let s = q.slide;
    let a = q.phase % s;
    let b = (a + s - q.range % s) % s;
    let c = Class { slide: s, shift: a };
    Ok(if a == b { (c, None) } else { (c, Some(Class { slide: s, shift: b })) })
}

/// All classes of the queries, with duplicates removed (sorted).
pub fn raw_classes(qs: &[Slide]) -> Result<Vec<Class>> {
    let mut out = Vec::with_capacity(2 * qs.len());
    for q in qs {
        let (a, b) = query_classes(q)?;
        out.push(a);
        out.extend(b);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The paper's precalculation (§4): drop duplicates and classes whose edges
/// another class already produces (multiples of other slides, with
/// compatible shifts). The union of edges is unchanged.
pub fn reduce(classes: &mut Vec<Class>) {
    classes.sort_unstable();
    classes.dedup();
    // Sorted by slide: a class can only lie within one of a smaller or
    // equal slide that comes before it.
    let mut kept: Vec<Class> = Vec::with_capacity(classes.len());
    for c in classes.iter() {
        if c.slide == 1 {
            kept.clear();
            kept.push(Class { slide: 1, shift: 0 });
            break;
        }
        if !kept.iter().any(|k| c.within(k)) {
            kept.push(*c);
        }
    }
    *classes = kept;
}

/// Reduced classes of a set of queries.
pub fn classes(qs: &[Slide]) -> Result<Vec<Class>> {
    let mut c = raw_classes(qs)?;
    reduce(&mut c);
    Ok(c)
}

pub fn lcm128(a: u128, b: u64) -> Option<u128> {
    let g = gcd(b, (a % b as u128) as u64);
    (a / g as u128).checked_mul(b as u128)
}

/// The composite slide of a set of classes, or an error when it does not
/// fit in 128 bits (then the count of one period cannot be given exactly;
/// [`fast::density`] still gives the edge rate).
pub fn composite(classes: &[Class]) -> Result<u128> {
    let mut l = 1u128;
    for c in classes {
        l = match lcm128(l, c.slide) {
            Some(l) => l,
            None => return invalid!("the composite slide (LCM of the slides) overflows 128 bits"),
        };
    }
    Ok(l)
}

/// Edges in one composite slide of these queries, by `method`.
pub fn count_edges(qs: &[Slide], method: Method) -> Result<EdgeCount> {
    if qs.is_empty() {
        return invalid!("count_edges needs at least one query");
    }
    let c = match method {
        Method::BitSet => return bitset::count(&raw_classes(qs)?),
        Method::F1 => f1::count(&classes(qs)?)?,
        Method::F1Memo => f1_memo::count(&classes(qs)?)?,
        Method::Fast => fast::count(&classes(qs)?)?,
    };
    // Dropping multiples can shrink the LCM; the composite slide is the
    // LCM of all the slides, a multiple of it.
    let l = composite(&raw_classes(qs)?)?;
    Ok(c.over(l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_classes_match_plan() {
        // range 7 slide 5: fragments 3 then 2 (paper §3.2): edges at 0, 3 mod 5.
        let (a, b) = query_classes(&Slide::count(7, 5)).unwrap();
        assert_eq!((a, b), (Class { slide: 5, shift: 0 }, Some(Class { slide: 5, shift: 3 })));
        let (a, b) = query_classes(&Slide::count(10, 5)).unwrap();
        assert_eq!((a, b), (Class { slide: 5, shift: 0 }, None));
    }

    #[test]
    fn reduce_drops_multiples() {
        let mut c = vec![
            Class { slide: 4, shift: 2 },
            Class { slide: 2, shift: 0 },
            Class { slide: 6, shift: 1 },
            Class { slide: 3, shift: 1 },
        ];
        reduce(&mut c);
        assert_eq!(c, vec![Class { slide: 2, shift: 0 }, Class { slide: 3, shift: 1 }]);
    }
}
