//! Formula 1 (F1 paper §3): the edges of a composite slide by
//! inclusion–exclusion instead of a Bit Set.
//!
//! Without fragments (eq. 2): `LCM_n Σ_i (-1)^(i+1) G1(n, i)`, where
//! `G1(n, i)` sums `1 / LCM` over all groups of `i` slides. With fragments
//! (§3.2, eq. 5) every query is one class per shift, and a group counts only
//! if every pair in it passes the Overlap Check Formula (eq. 4,
//! [`Class::overlaps`]); pairwise-compatible congruences have a common
//! solution (generalised CRT), `LCM_n / LCM(group)` of them per period.
//! We enumerate groups depth first and extend only compatible groups, which
//! visits exactly the non-discarded terms of eq. 5. Up to 2^n terms (§4).

use super::{composite, Class, EdgeCount};
use crate::plan::gcd;
use crate::{invalid, Result};

/// Refuse sets that need more inclusion–exclusion terms than this (2^28);
/// method "fast" does not have this limit.
pub const MAX_TERMS: u64 = 1 << 28;

pub fn count(classes: &[Class]) -> Result<EdgeCount> {
    count_with(classes, |l, s| gcd(s, (l % s as u128) as u64), gcd)
}

/// F1 with the GCD function supplied: `gcd_big(l, s)` = GCD of a running
/// LCM and a slide, `gcd_small(a, b)` for the Overlap Check (f1_memo passes
/// table look-ups).
pub(crate) fn count_with<B, S>(classes: &[Class], gcd_big: B, gcd_small: S) -> Result<EdgeCount>
where
    B: Fn(u128, u64) -> u64,
    S: Fn(u64, u64) -> u64,
{
    if classes.is_empty() {
        return invalid!("count_edges needs at least one query");
    }
    let l = composite(classes)?;
    if l > i128::MAX as u128 {
        return invalid!("the composite slide {l} is too large for exact F1 arithmetic; use method='fast' for the rate");
    }
    struct Walk<'a, B, S> {
        c: &'a [Class],
        l: u128,
        gcd_big: B,
        gcd_small: S,
        chosen: Vec<usize>,
        total: i128,
        terms: u64,
    }
    impl<B: Fn(u128, u64) -> u64, S: Fn(u64, u64) -> u64> Walk<'_, B, S> {
        fn go(&mut self, start: usize, lcm: u128, sign: i128) -> Result<()> {
            for j in start..self.c.len() {
                let cj = self.c[j];
                let ok = self.chosen.iter().all(|&k| {
                    let ck = self.c[k];
                    cj.shift.abs_diff(ck.shift) % (self.gcd_small)(cj.slide, ck.slide) == 0
                });
                if !ok {
                    continue;
                }
                // LCM of the group divides LCM_n, so it cannot overflow.
                let g = (self.gcd_big)(lcm, cj.slide);
                let lj = lcm / g as u128 * cj.slide as u128;
                let term = (self.l / lj) as i128;
                self.total = match self.total.checked_add(sign * term) {
                    Some(t) => t,
                    None => return invalid!("F1 partial sums overflow 128 bits; use method='fast'"),
                };
                self.terms += 1;
                if self.terms > MAX_TERMS {
                    return invalid!(
                        "F1 needs more than {MAX_TERMS} inclusion-exclusion terms for these {} edge classes; \
                         use method='fast'",
                        self.c.len()
                    );
                }
                self.chosen.push(j);
                self.go(j + 1, lj, -sign)?;
                self.chosen.pop();
            }
            Ok(())
        }
    }
    let mut w = Walk { c: classes, l, gcd_big, gcd_small, chosen: Vec::new(), total: 0, terms: 0 };
    w.go(0, 1, 1)?;
    Ok(EdgeCount { edges: w.total as u128, composite: l })
}

/// Number of F1 terms for a set (for the benchmarks' operation counts).
pub fn terms(classes: &[Class]) -> u64 {
    fn go(c: &[Class], chosen: &mut Vec<usize>, start: usize, n: &mut u64) {
        for j in start..c.len() {
            if chosen.iter().all(|&k| c[j].overlaps(&c[k])) {
                *n += 1;
                if *n > MAX_TERMS {
                    return;
                }
                chosen.push(j);
                go(c, chosen, j + 1, n);
                chosen.pop();
            }
        }
    }
    let mut n = 0;
    go(classes, &mut Vec::new(), 0, &mut n);
    n
}
