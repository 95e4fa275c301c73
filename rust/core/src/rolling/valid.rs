//! Where a kernel learns which rows are missing (issue 36): nowhere
//! ([`All`]: every row valid, every mask a constant that compiles away, so
//! clean data runs the code it ran before), or an Arrow validity bitmap
//! ([`Bitmap`], read in place, a 64-bit word at a time), or the values
//! themselves (the sum's finite values, `sum.rs` `Finite`). Kernels are
//! generic over it, one kernel per operation: they mask the values they
//! load instead of reading a filled copy.

use arrow_buffer::{BooleanBufferBuilder, NullBuffer};

/// Validity of the rows of one column.
pub trait Valid: Copy + Send + Sync {
    /// Every row valid (the masks are constants).
    const ALL: bool;
    /// Bit `j` set where row `r + j` is valid, for `j < 8` at least (what
    /// the kernels read a call: a bitmap gives 57) and rows below the
    /// column's length; bits past those are unspecified.
    fn bits(self, r: usize) -> u64;
}

#[derive(Clone, Copy)]
pub struct All;

impl Valid for All {
    const ALL: bool = true;
    #[inline(always)]
    fn bits(self, _: usize) -> u64 {
        u64::MAX
    }
}

/// An Arrow validity bitmap (LSB first, from bit `off`), borrowed.
#[derive(Clone, Copy)]
pub struct Bitmap<'a> {
    bytes: &'a [u8],
    off: usize,
}

impl<'a> Bitmap<'a> {
    pub(crate) fn new(nb: &'a NullBuffer) -> Bitmap<'a> {
        Bitmap { bytes: nb.inner().values(), off: nb.inner().offset() }
    }
}

impl Valid for Bitmap<'_> {
    const ALL: bool = false;
    #[inline(always)]
    fn bits(self, r: usize) -> u64 {
        // An unaligned little-endian load at the row's byte, shifted by its
        // bit (at most 7): 57 bits of it are the rows' from `r` on.
        let p = self.off + r;
        let b = p >> 3;
        let w = match self.bytes.get(b..b + 8) {
            Some(s) => u64::from_le_bytes(s.try_into().unwrap()),
            None => {
                let mut t = [0u8; 8];
                let s = &self.bytes[b.min(self.bytes.len())..];
                t[..s.len()].copy_from_slice(s);
                u64::from_le_bytes(t)
            }
        };
        w >> (p & 7)
    }
}

/// The output validity of a window aggregate that needs one valid row
/// (`min_periods` at most 1): row `i` is valid when some row of
/// `(i - window, i]` is. A word at a time: the valid rows' bits smeared
/// `window - 1` rows up (OR of the shifts, doubling), carried over from
/// the word before. `None` when every row is valid.
pub(crate) fn any_in_window(nb: &NullBuffer, window: usize) -> Option<NullBuffer> {
    let n = nb.len();
    let chunks = nb.inner().bit_chunks();
    let words = chunks.iter().chain(std::iter::once(chunks.remainder_bits()));
    let mut out = BooleanBufferBuilder::new(n);
    // `last`: rows since the newest valid row before this word, capped.
    let mut since = usize::MAX / 2;
    let mut left = n;
    for v in words {
        if left == 0 {
            break;
        }
        let len = left.min(64);
        let v = if len < 64 { v & ((1u64 << len) - 1) } else { v };
        // Rows `j` of this word reached by the valid row `since` before it:
        // `j + since < window` (since >= 1 counts from the word's row 0).
        let carried = if since < window { low_ones((window - since).min(64)) } else { 0 };
        let own = smear(v, window);
        let w = own | carried;
        out.append_packed_range(0..len, &w.to_le_bytes());
        since = if v != 0 { (len - (63 - v.leading_zeros() as usize)).min(usize::MAX / 2) } else { since.saturating_add(len).min(usize::MAX / 2) };
        left -= len;
    }
    let b = NullBuffer::new(out.finish());
    (b.null_count() > 0).then_some(b)
}

/// The lowest `k` bits set (`k <= 64`).
#[inline(always)]
fn low_ones(k: usize) -> u64 {
    if k >= 64 {
        u64::MAX
    } else {
        (1u64 << k) - 1
    }
}

/// `v | v << 1 | ... | v << (window - 1)` (bits past 63 dropped).
#[inline(always)]
fn smear(v: u64, window: usize) -> u64 {
    if window >= 64 {
        // Every bit above the lowest set one.
        return if v == 0 { 0 } else { !((v & v.wrapping_neg()) - 1) };
    }
    let mut a = v;
    let mut r = 1;
    while 2 * r <= window {
        a |= a << r;
        r *= 2;
    }
    // `a` covers shifts 0..r; the rest up to `window - 1`.
    if r < window {
        a |= a << (window - r);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_buffer::BooleanBuffer;

    #[test]
    fn any_in_window_matches_a_count() {
        let mut st = 0x9E37_79B9_7F4A_7C15u64;
        for n in [0usize, 1, 63, 64, 65, 200, 1000] {
            for p in [0.0, 0.01, 0.5, 0.97, 1.0] {
                let bits: Vec<bool> = (0..n)
                    .map(|i| {
                        st ^= st << 13;
                        st ^= st >> 7;
                        st ^= st << 17;
                        // runs of nulls as well as scattered ones
                        ((st >> 11) as f64 / (1u64 << 53) as f64) >= p && (i / 150) % 3 != 1
                    })
                    .collect();
                for off in [0usize, 3] {
                    let mut all = vec![true; off];
                    all.extend(&bits);
                    let nb = NullBuffer::new(BooleanBuffer::from(all).slice(off, n));
                    for w in [1, 2, 3, 5, 8, 31, 63, 64, 65, 100, 500] {
                        let got = any_in_window(&nb, w);
                        for i in 0..n {
                            let want = (i + 1).saturating_sub(w)..=i;
                            let want = want.into_iter().any(|r| bits[r]);
                            assert_eq!(got.as_ref().map_or(true, |g| g.is_valid(i)), want, "n {n} p {p} w {w} off {off} row {i}");
                        }
                        let bm = Bitmap::new(&nb);
                        for r in (0..n).step_by(7) {
                            let b = bm.bits(r);
                            for j in 0..56.min(n - r) {
                                assert_eq!(b >> j & 1 == 1, bits[r + j], "bits({r}) bit {j}");
                            }
                        }
                    }
                }
            }
        }
    }
}
