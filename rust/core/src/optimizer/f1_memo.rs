//! F1 with memoised GCDs (F1 paper §3.3, "F1 + Opt"): a table of the GCDs
//! of all pairs below [`TABLE`], built once. A GCD of a larger number `a`
//! and a tabled `b` is one remainder then a look-up — Euclid's first step,
//! `gcd(a, b) = gcd(b, a mod b)` — "taking advantage of the recursive
//! nature of the Euclidean algorithm".

use std::sync::OnceLock;

use super::{f1, Class, EdgeCount};
use crate::plan::gcd;
use crate::Result;

/// Slides below this are tabled: 2048² u16 entries = 8 MiB (the paper used
/// 4 GB for 32,768; ours is sized for a shared machine).
pub const TABLE: usize = 2048;

fn table() -> &'static [u16] {
    static T: OnceLock<Vec<u16>> = OnceLock::new();
    T.get_or_init(|| {
        let n = TABLE;
        let mut t = vec![0u16; n * n];
        // Row by row, each entry from an earlier one: gcd(a, b) = gcd(b, a mod b).
        for a in 0..n {
            for b in 0..=a {
                let g = if b == 0 { a as u16 } else { t[b * n + a % b] };
                t[a * n + b] = g;
                t[b * n + a] = g;
            }
        }
        t
    })
}

#[inline]
fn gcd_small(t: &[u16], a: u64, b: u64) -> u64 {
    if (a as usize) < TABLE && (b as usize) < TABLE {
        t[a as usize * TABLE + b as usize] as u64
    } else if (b as usize) < TABLE {
        t[b as usize * TABLE + (a % b) as usize] as u64
    } else if (a as usize) < TABLE {
        t[a as usize * TABLE + (b % a) as usize] as u64
    } else {
        gcd(a, b)
    }
}

pub fn count(classes: &[Class]) -> Result<EdgeCount> {
    let t = table();
    f1::count_with(
        classes,
        |l, s| {
            if (s as usize) < TABLE {
                t[s as usize * TABLE + (l % s as u128) as usize] as u64
            } else {
                gcd(s, (l % s as u128) as u64)
            }
        },
        |a, b| gcd_small(t, a, b),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn table_is_gcd() {
        let t = super::table();
        for (a, b) in [(0, 5), (12, 18), (2047, 1023), (1024, 768), (7, 0)] {
            assert_eq!(t[a * super::TABLE + b] as u64, crate::plan::gcd(a as u64, b as u64));
        }
    }
}
