//! Shared execution plans for many count-window queries over one stream
//! (FlatFIT paper §2.3 and the BuildSharedPlan step of Algorithm 1).
//!
//! The composite slide is the LCM of the queries' slides. Within it, every
//! slide multiple of every query is an edge, and so is every window start
//! (the Pairs fragment edge `e - r`): then every window of every query
//! starts and ends on an edge, and is the combine of the partials between.
//! Edges repeat with the composite slide, so the plan records one period:
//! the edge offsets, which queries fire at each, and how many of the newest
//! partials each needs (`k`, constant per (query, edge)). `w_size` is the
//! largest `k`: the final aggregator never needs more partials than that.

pub use crate::partial::Slicing;
pub use crate::slide::{gcd, Slide, MAX_EDGES};
use crate::{invalid, Result};

/// Which query fires at an edge, and over how many of the newest closed
/// partials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fire {
    pub query: usize,
    pub partials: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedPlan {
    /// LCM of the slides.
    pub composite: u64,
    /// Edge offsets within one period, sorted, in `(0, composite]`: where a
    /// partial closes or a query fires.
    pub edges: Vec<u64>,
    /// Per edge: whether the open partial closes there (always under Pairs
    /// and Panes; under Cutty only at window starts, and a query firing at
    /// a non-cut edge adds the open partial to its closed ones).
    pub cut: Vec<bool>,
    /// The cut offsets alone, sorted.
    pub cuts: Vec<u64>,
    pub slicing: Slicing,
    /// Per edge: the queries answered there.
    pub fires: Vec<Vec<Fire>>,
    /// The most partials any query needs (the open one counted, for Cutty).
    pub w_size: usize,
}

/// LCM, or an error naming the bound when it would not fit.
pub fn lcm(a: u64, b: u64) -> Result<u64> {
    match (a / gcd(a, b)).checked_mul(b) {
        Some(l) => Ok(l),
        None => invalid!("the composite slide (LCM of the slides) overflows 64 bits"),
    }
}

impl SharedPlan {
    /// The plan under Pairs (the paper's choice).
    pub fn build(queries: &[Slide]) -> Result<SharedPlan> {
        SharedPlan::build_with(queries, Slicing::Pairs)
    }

    pub fn build_with(queries: &[Slide], slicing: Slicing) -> Result<SharedPlan> {
        if queries.is_empty() {
            return invalid!("a shared plan needs at least one query");
        }
        let mut composite = 1u64;
        for q in queries {
            if q.range == 0 || q.slide == 0 {
                return invalid!("range and slide must be positive, got range={} slide={}", q.range, q.slide);
            }
            composite = lcm(composite, q.slide)?;
        }
        let per_period: u64 = queries.iter().map(|q| 2 * (composite / q.slide)).sum();
        if per_period > MAX_EDGES {
            return invalid!(
                "the composite slide {composite} would hold up to {per_period} edges, more than the bound {MAX_EDGES}; \
                 split these queries into groups with compatible slides"
            );
        }
        // The points of one period under the slicing (FlatFIT §2.1; Pairs:
        // every slide edge and every window start), and the cuts among them.
        let fold = |x: u64| crate::partial::fold(x, composite);
        let pts = crate::partial::points(queries, composite, slicing)?;
        let (edges, cut) = (pts.at, pts.cut);
        let cuts: Vec<u64> = edges.iter().zip(&cut).filter(|(_, &c)| c).map(|(&e, _)| e).collect();
        let n = cuts.len() as u64;
        // Number of cuts in the half-open interval (e - r, e] of the
        // infinite periodic cut set: whole periods, then the remainder.
        let count_in = |e: u64, r: u64| -> usize {
            let whole = (r / composite) * n;
            let rem = r % composite;
            // cuts in (e - rem, e] within the period, wrapping below 0.
            let lo = e as i64 - rem as i64;
            let in_period = |a: i64, b: i64| -> u64 {
                // cuts x with a < x <= b, for 0 <= a <= b <= composite
                let hi = cuts.partition_point(|&x| x as i64 <= b);
                let low = cuts.partition_point(|&x| x as i64 <= a);
                (hi - low) as u64
            };
            let part = if lo >= 0 {
                in_period(lo, e as i64)
            } else {
                in_period(0, e as i64) + in_period(composite as i64 + lo, composite as i64)
            };
            (whole + part) as usize
        };
        let mut fires = vec![Vec::new(); edges.len()];
        let mut w_size = 0;
        for (qi, q) in queries.iter().enumerate() {
            for j in 1..=composite / q.slide {
                let e = fold(j * q.slide + q.phase % q.slide);
                let at = edges.binary_search(&e).expect("slide edge is an edge");
                let k = count_in(e, q.range);
                // A window ending mid-slice (Cutty) also holds the open
                // slice, which a flush closes into the aggregator: room for it.
                w_size = w_size.max(k + !cut[at] as usize);
                fires[at].push(Fire { query: qi, partials: k });
            }
        }
        Ok(SharedPlan { composite, edges, cut, cuts, fires, w_size, slicing })
    }

    /// Cuts `x` with `a < x <= b` in the infinite periodic cut set.
    pub fn edges_between(&self, a: u64, b: u64) -> u64 {
        if b <= a {
            return 0;
        }
        // cuts in (0, x]: whole periods, then a prefix of one.
        let upto = |x: u64| -> u64 {
            let n = self.cuts.len() as u64;
            (x / self.composite) * n + self.cuts.partition_point(|&e| e <= x % self.composite) as u64
        };
        upto(b) - upto(a)
    }

    /// Length of the partial that ends at edge index `i` of a period.
    pub fn partial_len(&self, i: usize) -> u64 {
        if i == 0 { self.edges[0] } else { self.edges[i] - self.edges[i - 1] }
    }

    /// Partials per period (the edge count of the composite slide).
    pub fn edges_per_period(&self) -> usize {
        self.edges.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flatfit_example_1() {
        // Slide 2 range 6, slide 4 range 8: composite 4, partials every 2
        // rows; the first query needs 3 partials, the second 4.
        let p = SharedPlan::build(&[Slide::count(6, 2), Slide::count(8, 4)]).unwrap();
        assert_eq!(p.composite, 4);
        assert_eq!(p.edges, vec![2, 4]);
        assert_eq!(p.fires[0], vec![Fire { query: 0, partials: 3 }]);
        assert_eq!(p.fires[1], vec![Fire { query: 0, partials: 3 }, Fire { query: 1, partials: 4 }]);
        assert_eq!(p.w_size, 4);
        assert_eq!(p.edges_between(0, 8), 4);
        assert_eq!(p.edges_between(3, 6), 2);
    }

    #[test]
    fn pairs_fragments_are_edges() {
        // range 5, slide 3: fragments of 1 and 2 rows (f2 = 2): edges 1, 3.
        let p = SharedPlan::build(&[Slide::count(5, 3)]).unwrap();
        assert_eq!(p.edges, vec![1, 3]);
        assert_eq!(p.fires[1], vec![Fire { query: 0, partials: 3 }]);
    }

    #[test]
    fn time_windows_end_at_their_phase() {
        // Spark window("10 min", "3 min"): starts at multiples of 3, ends at
        // 1 mod 3; edges at both.
        let p = SharedPlan::build(&[Slide::time(10, 3)]).unwrap();
        assert_eq!(p.edges, vec![1, 3]);
        assert_eq!(p.fires[0], vec![Fire { query: 0, partials: 7 }]);
    }

    #[test]
    fn huge_composite_is_refused() {
        let qs: Vec<Slide> = [1_000_003u64, 999_983, 1_000_033].iter().map(|&s| Slide::count(s, s)).collect();
        let e = SharedPlan::build(&qs).unwrap_err();
        assert!(e.to_string().contains("bound"), "{e}");
    }
}
