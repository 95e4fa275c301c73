//! The Bit Set baseline (F1 paper §2, §3.1, §3.2; WeaveShare's original
//! Weavability calculation): one bit per time unit of the composite slide;
//! every class marks its edges; the answer is the number of marked bits.
//! Time Σ LCM/s_i, space LCM bits — exponential in the number of distinct
//! slides (§4), which is what F1 removes.

use super::{composite, Class, EdgeCount};
use crate::{invalid, Result};

/// The largest Bit Set allocated: 2^30 bits (128 MiB). A composite slide
/// longer than this is refused with an error rather than exhausting memory
/// (the paper's Bit Set crashed "out of memory" on a 96 GB machine).
pub const MAX_BITS: u128 = 1 << 30;

pub fn count(classes: &[Class]) -> Result<EdgeCount> {
    if classes.is_empty() {
        return invalid!("count_edges needs at least one query");
    }
    let l = composite(classes).map_err(|_| {
        crate::Error::Invalid(format!(
            "the Bit Set would need more than {MAX_BITS} bits (the composite slide overflows 128 bits); \
             use method='f1' or 'fast'"
        ))
    })?;
    if l > MAX_BITS {
        return invalid!(
            "the Bit Set would need {l} bits, more than its bound of {MAX_BITS} (2^30 bits, 128 MiB); \
             use method='f1' or 'fast'"
        );
    }
    let n = l as usize;
    let mut bits = vec![0u64; n.div_ceil(64)];
    for c in classes {
        let mut i = c.shift as usize;
        let s = c.slide as usize;
        while i < n {
            bits[i >> 6] |= 1 << (i & 63);
            i += s;
        }
    }
    let edges: u64 = bits.iter().map(|w| w.count_ones() as u64).sum();
    Ok(EdgeCount { edges: edges as u128, composite: l })
}
