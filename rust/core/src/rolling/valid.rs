//! Where a kernel learns which rows are missing (issue 36): nowhere
//! ([`All`]: every row valid, every mask a constant that compiles away, so
//! clean data runs the code it ran before), or an Arrow validity bitmap
//! ([`Bitmap`], read in place, a 64-bit word at a time), or the values
//! themselves (the sum's finite values, `sum.rs` `Finite`). Kernels are
//! generic over it, one kernel per operation: they mask the values they
//! load instead of reading a filled copy.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::DataType;

/// Validity of the rows of one column.
pub trait Valid: Copy + Send + Sync {
    /// Every row valid (the masks are constants).
    const ALL: bool;
    /// Bit `j` set where row `r + j` is valid, for `j < 56` at least (a
    /// bitmap gives 57; the sum kernel uses 56 a read) and rows below the
    /// column's length; bits past those are unspecified.
    fn bits(self, r: usize) -> u64;
    /// Whether row `r` is valid: `bits(r)`'s first bit, which a bitmap
    /// reads as one byte (the time max's loops read a row's bit at a time).
    #[inline(always)]
    fn bit(self, r: usize) -> bool {
        self.bits(r) & 1 != 0
    }
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

    /// A kernel's own mask of rows `base..` (bit 0 of `bytes` is row
    /// `base`; rows below it are never read): `off` wraps to `-base`.
    pub(crate) fn local(bytes: &'a [u8], base: usize) -> Bitmap<'a> {
        Bitmap { bytes, off: base.wrapping_neg() }
    }
}

impl Valid for Bitmap<'_> {
    const ALL: bool = false;
    #[inline(always)]
    fn bits(self, r: usize) -> u64 {
        // An unaligned little-endian load at the row's byte, shifted by its
        // bit (at most 7): 57 bits of it are the rows' from `r` on. Near
        // the end, the load is of the last 8 bytes, shifted down to the
        // row's: no branch to a byte-wise copy (that was a call to memcpy
        // inside every masked kernel's loop, so the compiler kept the
        // loops' vector state on the stack across it: issue 36, a max's
        // running maximum went through memory every 8 rows).
        let p = self.off.wrapping_add(r);
        let b = p >> 3;
        let len = self.bytes.len();
        if len < 8 {
            return short_word(self.bytes, b) >> (p & 7);
        }
        let b8 = b.min(len - 8);
        let w = u64::from_le_bytes(self.bytes[b8..b8 + 8].try_into().unwrap());
        w.checked_shr(8 * (b - b8) as u32).unwrap_or(0) >> (p & 7)
    }
    #[inline(always)]
    fn bit(self, r: usize) -> bool {
        let p = self.off.wrapping_add(r);
        self.bytes[p >> 3] >> (p & 7) & 1 != 0
    }
}

/// The bytes of a bitmap shorter than 8 bytes from byte `b`, as a word.
#[cold]
#[inline(never)]
fn short_word(bytes: &[u8], b: usize) -> u64 {
    bytes.iter().skip(b).take(8).enumerate().fold(0, |w, (i, &x)| w | (x as u64) << (8 * i))
}

/// `nan="skip"`: the validity of a float column with its NaN values missing
/// too (`valid AND NOT isnan`), built a 64-row word at a time in one pass
/// over the values, its words ANDed with the column's validity words
/// (issue 36: the pyarrow passes this replaces cost as much as the kernel
/// after them). `None` when no valid row is NaN: nothing changes. The
/// kernels then read it as they read any validity. Long columns split
/// over threads at word boundaries (the pass cost as much as half the
/// mean kernel on one thread; the words do not depend on the split).
pub fn nan_as_null<T: Copy + PartialEq + Sync + 'static>(values: &[T], nulls: Option<&NullBuffer>) -> Option<NullBuffer> {
    let n = values.len();
    let nw = n.div_ceil(64);
    // Written in full below.
    let mut words: Vec<u64> = vec![0; nw];
    let found = std::sync::atomic::AtomicBool::new(false);
    let threads = super::Split::default().threads(n);
    super::par_ranges(&mut words[..], &super::cuts(nw, threads, Some), |w0, w1, out| {
        let (r0, r1) = (64 * w0, (64 * w1).min(n));
        let vals = values[r0..r1].chunks(64);
        let mut nan_valid = 0u64;
        let mut push = |o: &mut u64, c: &[T], valid: u64| {
            let nan = nan_bits(c);
            nan_valid |= valid & nan;
            *o = valid & !nan;
        };
        match nulls {
            None => out.iter_mut().zip(vals).for_each(|(o, c)| push(o, c, low_ones(c.len()))),
            Some(nb) => {
                let part = nb.inner().slice(r0, r1 - r0);
                let chunks = part.bit_chunks();
                let bits = chunks.iter().chain(std::iter::once(chunks.remainder_bits()));
                out.iter_mut().zip(vals).zip(bits).for_each(|((o, c), v)| push(o, c, v & low_ones(c.len())));
            }
        }
        if nan_valid != 0 {
            found.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
    if !found.into_inner() {
        return None;
    }
    let buf = arrow_buffer::Buffer::from_vec(words);
    Some(NullBuffer::new(arrow_buffer::BooleanBuffer::new(buf, 0, n)))
}

/// Bit `j` set where `c[j]` is NaN (`c` at most 64 values): 64 float64
/// by [`wide_bits`], else eight compares to a byte (the loop compiles to
/// vector compares and a move-mask, two values a compare on baseline
/// x86-64).
#[inline(always)]
pub(crate) fn nan_bits<T: Copy + PartialEq + 'static>(c: &[T]) -> u64 {
    if let Some(w) = wide_bits::<T, true>(c) {
        return w;
    }
    let mut w = 0u64;
    for (k, e) in c.chunks(8).enumerate() {
        #[allow(clippy::eq_op)] // v != v: NaN
        let b = e.iter().enumerate().fold(0u64, |b, (j, &v)| b | (((v != v) as u64) << j));
        w |= b << (8 * k);
    }
    w
}

/// The non-finite values of 64 float64 (`NAN`: the NaN), a bit each, by
/// the CPU's widest vector compares and masks: `None` for other chunks and
/// CPUs. The
/// portable loop, compiled for baseline x86-64, compared two values an
/// instruction and OR-reduced each byte (the scan was a fifth of
/// `nan="propagate"`'s time at window 16); one call per 64 rows, not
/// inlined (its features are not the caller's).
#[inline(always)]
fn wide_bits<T: 'static, const NAN: bool>(c: &[T]) -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    if c.len() == 64 && std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>() {
        use crate::ops::reduce::{detected, Level};
        let p = c.as_ptr() as *const f64;
        // SAFETY: 64 f64 at `p` (checked above), on a CPU with the level's
        // features (detected).
        return match detected() {
            Level::Avx512 => Some(unsafe { wide::bits512::<NAN>(p) }),
            Level::Avx2 => Some(unsafe { wide::bits256::<NAN>(p) }),
            Level::Portable => None,
        };
    }
    None
}

#[cfg(target_arch = "x86_64")]
mod wide {
    use std::arch::x86_64::*;

    const EXP: i64 = 0x7FF0_0000_0000_0000;

    /// [`super::wide_bits`] for AVX-512: a mask register per 8 values.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn bits512<const NAN: bool>(p: *const f64) -> u64 {
        let e = _mm512_set1_epi64(EXP);
        let mut w = 0u64;
        for k in 0..8 {
            let x = _mm512_loadu_pd(p.add(8 * k));
            let v = _mm512_castpd_si512(x);
            let m = if NAN { _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(x, x) } else { _mm512_cmpeq_epi64_mask(_mm512_and_si512(v, e), e) };
            w |= (m as u64) << (8 * k);
        }
        w
    }

    /// [`super::wide_bits`] for AVX2: a move-mask per 4 values.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn bits256<const NAN: bool>(p: *const f64) -> u64 {
        let e = _mm256_set1_epi64x(EXP);
        let mut w = 0u64;
        for k in 0..16 {
            let x = _mm256_loadu_pd(p.add(4 * k));
            let v = _mm256_castpd_si256(x);
            let m = if NAN { _mm256_cmp_pd::<_CMP_UNORD_Q>(x, x) } else { _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(v, e), e)) };
            w |= (_mm256_movemask_pd(m) as u64) << (4 * k);
        }
        w
    }
}

/// [`nan_as_null`] of a float32 / float64 array: the array with its NaN
/// rows null too, sharing its values buffer; `None` when nothing changes
/// (no valid NaN, or not a float column).
pub fn nan_to_null_dyn(values: &dyn Array) -> Option<ArrayRef> {
    fn with<T: ArrowPrimitiveType>(values: &dyn Array) -> Option<ArrayRef>
    where
        T::Native: PartialEq + Sync,
    {
        let a = values.as_primitive::<T>();
        let nb = nan_as_null(a.values(), a.nulls())?;
        Some(Arc::new(PrimitiveArray::<T>::new(a.values().clone(), Some(nb))))
    }
    match values.data_type() {
        DataType::Float64 => with::<Float64Type>(values),
        DataType::Float32 => with::<Float32Type>(values),
        _ => None,
    }
}

/// A validity bitmap's words and the valid rows before each word: the
/// valid rows in any window are then two lookups and two popcounts, so
/// each row's count is independent of the row before (a running count
/// a row was one serial chain: count with nulls ran at 0.28x of clean).
pub(crate) struct ValidPrefix {
    /// The bitmap's words (bit `i % 64` of word `i / 64`: row `i`), zero
    /// past its last row.
    pub(crate) words: Vec<u64>,
    /// `pre[q]`: valid rows before word `q` (one more than the words).
    pre: Vec<usize>,
}

impl ValidPrefix {
    pub(crate) fn new(nb: &NullBuffer) -> Self {
        let words = words_of(nb);
        let mut pre = Vec::with_capacity(words.len() + 1);
        let mut c = 0;
        pre.push(0);
        for &w in &words {
            c += w.count_ones() as usize;
            pre.push(c);
        }
        ValidPrefix { words, pre }
    }

    /// Valid rows before row `r` (at most the bitmap's length).
    #[inline(always)]
    pub(crate) fn before(&self, r: usize) -> usize {
        let q = r / 64;
        self.pre[q] + (self.words.get(q).copied().unwrap_or(0) & low_ones(r % 64)).count_ones() as usize
    }

    /// Rows `r0..` of `out` (those rows): the valid rows of each row's
    /// window of `window` rows (fewer at the start), as `C`. Row `i`'s is
    /// `before(i + 1) - before(i + 1 - window)`; 64 rows at a time, the
    /// prefixes at their first row and the 64 bits from each, then 8 rows
    /// a byte of each: a row adds its entries of [`BELOW`] for the two
    /// bytes, no row waits for the one before, and the eight compile to
    /// vector adds (two popcounts a row before: 0.55x of the clean
    /// count's speed; the byte table, read a row at a time: 0.65-0.74x;
    /// now 0.94-1.0x on one thread, 0.83-0.93x on two, AMD EPYC).
    pub(crate) fn window_counts<C>(&self, window: usize, r0: usize, out: &mut [C], conv: impl Fn(usize) -> C) {
        let r1 = r0 + out.len();
        let mut i = r0;
        while i < r1 {
            let a = i + 1;
            // Rows whose window starts at row 0 (partial) and the others
            // run apart: only the others take rows out.
            let full = a > window;
            let m = if full { (r1 - i).min(64) } else { (r1 - i).min(64).min(window - i) };
            let (cin, bin) = (self.before(a), bits_at(&self.words, a));
            let (cout, bout) = if full { (self.before(a - window), bits_at(&self.words, a - window)) } else { (0, 0) };
            // Valid rows in the window of the byte's first row (in >= out).
            let mut base = cin - cout;
            let mut groups = out[i - r0..i - r0 + m].chunks_exact_mut(8);
            let mut g = 0;
            // Whole bytes: eight rows of a fixed count, so they compile to
            // vector adds and stores (a loop over `chunks_mut` stayed
            // scalar, a byte load and a store a row).
            for o in &mut groups {
                let o: &mut [C; 8] = o.try_into().expect("8 rows");
                let (bi, bo) = ((bin >> (8 * g)) as u8, (bout >> (8 * g)) as u8);
                let (ti, to) = (&BELOW[bi as usize], &BELOW[bo as usize]);
                for t in 0..8 {
                    o[t] = conv(base + ti[t] - to[t]);
                }
                base = base + bi.count_ones() as usize - bo.count_ones() as usize;
                g += 1;
            }
            let rest = groups.into_remainder();
            if !rest.is_empty() {
                let (ti, to) = (&BELOW[(bin >> (8 * g)) as u8 as usize], &BELOW[(bout >> (8 * g)) as u8 as usize]);
                for (t, o) in rest.iter_mut().enumerate() {
                    *o = conv(base + ti[t] - to[t]);
                }
            }
            i += m;
        }
    }
}

/// `BELOW[b][t]`: the bits of byte `b` below bit `t` (how many rows of a
/// byte's eight came in, or went out, before row `t`). Entries as wide
/// as the counts (16 KB): eight rows are then two vector loads, a
/// subtraction and an add; bytes, widened a row at a time, kept the loop
/// scalar.
static BELOW: [[usize; 8]; 256] = {
    let mut t = [[0usize; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut j = 1;
        while j < 8 {
            t[b][j] = t[b][j - 1] + ((b >> (j - 1)) & 1);
            j += 1;
        }
        b += 1;
    }
    t
};

/// The output validity of a window aggregate that needs one valid row
/// (`min_periods` at most 1): row `i` is valid when some row of
/// `(i - window, i]` is ([`in_window`] of the validity words). `None` when
/// every row is valid.
pub(crate) fn any_in_window(nb: &NullBuffer, window: usize) -> Option<NullBuffer> {
    let n = nb.len();
    nulls_of_words(in_window(&words_of(nb), n, window), n)
}

/// A bitmap's words, 64 rows each from its first row (its offset
/// applied), zero past its last row.
fn words_of(nb: &NullBuffer) -> Vec<u64> {
    let chunks = nb.inner().bit_chunks();
    chunks.iter().chain(std::iter::once(chunks.remainder_bits())).take(nb.len().div_ceil(64)).collect()
}

/// Validity words (bit `i` of word `i / 64` for row `i`) as the validity
/// of `n` rows; `None` when every row is valid.
pub(crate) fn nulls_of_words(words: Vec<u64>, n: usize) -> Option<NullBuffer> {
    let b = NullBuffer::new(BooleanBuffer::new(arrow_buffer::Buffer::from_vec(words), 0, n));
    (b.null_count() > 0).then_some(b)
}

/// Row `j` of `len` rows (bit `j % 64` of word `j / 64`) set when some row
/// of `(j - window, j]` is set in `words` (rows before 0 are not). A word
/// at a time: the set bits smeared `window - 1` rows up (OR of the shifts,
/// doubling), carried over from the word before.
pub(crate) fn in_window(words: &[u64], len: usize, window: usize) -> Vec<u64> {
    let mut out = Vec::with_capacity(len.div_ceil(64));
    // Rows since the newest set row before this word, capped.
    let mut since = usize::MAX / 2;
    let mut left = len;
    for &v in words {
        if left == 0 {
            break;
        }
        let n = left.min(64);
        let v = v & low_ones(n);
        // Rows `j` of this word reached by the set row `since` before it:
        // `j + since < window` (since >= 1 counts from the word's row 0).
        let carried = if since < window { low_ones((window - since).min(64)) } else { 0 };
        out.push((smear(v, window) | carried) & low_ones(n));
        since = if v != 0 { (n - (63 - v.leading_zeros() as usize)).min(usize::MAX / 2) } else { since.saturating_add(n).min(usize::MAX / 2) };
        left -= n;
    }
    out
}

/// The 64 bits of `words` from bit `p` on (0 past the end).
#[inline(always)]
pub(crate) fn bits_at(words: &[u64], p: usize) -> u64 {
    let (q, s) = (p / 64, p % 64);
    let lo = words.get(q).copied().unwrap_or(0);
    if s == 0 {
        return lo;
    }
    (lo >> s) | (words.get(q + 1).copied().unwrap_or(0) << (64 - s))
}

/// Bit `j` set where `c[j]` is not finite (`c` at most 64 values), as
/// [`nan_bits`].
#[inline(always)]
pub(crate) fn non_finite_bits<T: crate::ops::Num>(c: &[T]) -> u64 {
    wide_bits::<T, false>(c).unwrap_or_else(|| non_finite_portable(c))
}

/// [`non_finite_bits`] on any CPU: eight compares to a byte.
#[inline(always)]
fn non_finite_portable<T: crate::ops::Num>(c: &[T]) -> u64 {
    const EXP: u64 = 0x7FF0_0000_0000_0000;
    let mut w = 0u64;
    for (k, e) in c.chunks(8).enumerate() {
        let b = e.iter().enumerate().fold(0u64, |b, (j, v)| b | (((v.to_f64().to_bits() & EXP == EXP) as u64) << j));
        w |= b << (8 * k);
    }
    w
}

/// Rows a job probes for an inf / NaN before its unmasked attempt (whose
/// start sums alone read a few windows), at most an eighth of the job's
/// rows: short jobs (variances at short windows) were read twice, the
/// probe a ninth of their time; their attempt wastes little if it meets one.
const PROBE: usize = 4096;

/// Whether a valid row among the first of `x[lo..hi)` (a job's rows, with
/// the window before), or in a 64-row word every [`PROBE_EVERY`] rows
/// after them, is not finite: a probe before the job's unmasked attempt,
/// which such a row would send to the scan anyway. The words find a run
/// of NaN as long as a sensor down (8,256 rows or more) anywhere in the
/// job, which the attempt would otherwise reach only after summing every
/// row before it (a job at long windows is millions of rows: with runs of
/// 10,000 NaN, `nan="propagate"` means and stds ran at half their clean
/// speed); they read under 1% of the rows.
pub(crate) fn any_non_finite<T: crate::ops::Num, Va: Valid>(x: &[T], va: Va, lo: usize, hi: usize) -> bool {
    let head = lo + PROBE.min((hi - lo) / 8);
    let bad = |r: usize, c: &[T]| non_finite_bits(c) & word_at(va, r, c.len()) != 0;
    x[lo..head].chunks(64).enumerate().any(|(q, c)| bad(lo + 64 * q, c))
        || (head..hi).step_by(PROBE_EVERY).any(|r| bad(r, &x[r..(r + 64).min(hi)]))
}

/// The stride of [`any_non_finite`]'s words past its first rows.
const PROBE_EVERY: usize = 1 << 13;

/// The valid rows of `x[lo..hi)` that are not finite, by kind, and those
/// that are (issue 36: `nan="propagate"` runs the masked kernels on the
/// finite rows, then marks the windows that hold the others, instead of
/// a scalar loop that counts them). Words of rows from `lo`.
pub(crate) struct NonFinite {
    pub(crate) lo: usize,
    pub(crate) len: usize,
    /// Valid and finite, as the bytes of a [`Bitmap::local`] from `lo`.
    pub(crate) finite: Vec<u8>,
    pub(crate) nan: Vec<u64>,
    /// Both empty when no valid row is infinite.
    pub(crate) pinf: Vec<u64>,
    pub(crate) ninf: Vec<u64>,
    /// Some valid row is not finite.
    pub(crate) any: bool,
}

impl NonFinite {
    /// One pass over `x[lo..hi)`, 64 rows a word ([`non_finite_bits`]).
    pub(crate) fn scan<T: crate::ops::Num, Va: Valid>(x: &[T], va: Va, lo: usize, hi: usize) -> NonFinite {
        let len = hi - lo;
        let words = len.div_ceil(64);
        let mut nf = NonFinite { lo, len, finite: Vec::with_capacity(8 * words), nan: Vec::with_capacity(words), pinf: Vec::with_capacity(words), ninf: Vec::with_capacity(words), any: false };
        let (mut acc, mut infs) = (0u64, 0u64);
        for (q, c) in x[lo..hi].chunks(64).enumerate() {
            // One compare a value (not finite: all exponent bits set), the
            // kinds told apart on the few rows found (three compares a
            // value were a third of the scan).
            let r = lo + 64 * q;
            let v = word_at(va, r, c.len());
            let bad = non_finite_bits(c) & v;
            let ok = v & !bad;
            let (mut a, mut p, mut m) = (0u64, 0u64, 0u64);
            let mut w = bad;
            while w != 0 {
                let j = w.trailing_zeros();
                let f = c[j as usize].to_f64();
                if f.is_nan() {
                    a |= 1 << j;
                } else if f > 0.0 {
                    p |= 1 << j;
                } else {
                    m |= 1 << j;
                }
                w &= w - 1;
            }
            acc |= bad;
            infs |= p | m;
            nf.nan.push(a);
            nf.pinf.push(p);
            nf.ninf.push(m);
            nf.finite.extend_from_slice(&ok.to_le_bytes());
        }
        nf.any = acc != 0;
        if infs == 0 {
            // None to mark: `marks` skips them.
            nf.pinf = Vec::new();
            nf.ninf = Vec::new();
        }
        nf
    }

    /// The valid finite rows, as a validity the kernels read.
    pub(crate) fn finite(&self) -> Bitmap<'_> {
        Bitmap::local(&self.finite, self.lo)
    }

    /// Which rows' windows hold a valid non-finite row, as the extended
    /// reals have it: for a sum (`var` false) NaN with a NaN or both
    /// infinities, else the infinity; for a variance NaN. Rows from `lo`.
    pub(crate) fn marks(&self, window: usize, var: bool) -> Marks {
        let nan = in_window(&self.nan, self.len, window);
        // No infinity (the usual case): no words to smear or mark.
        let infs = !self.pinf.is_empty();
        let (pinf, ninf) = if infs { (in_window(&self.pinf, self.len, window), in_window(&self.ninf, self.len, window)) } else { (Vec::new(), Vec::new()) };
        let mut m = Marks { lo: self.lo, keep: Vec::with_capacity(8 * nan.len()), pinf: Vec::new(), ninf: Vec::new() };
        for (q, &a) in nan.iter().enumerate() {
            let (p, n) = if infs { (pinf[q], ninf[q]) } else { (0, 0) };
            let bad = if var { a | p | n } else { a | (p & n) };
            let lm = low_ones(self.len - 64 * q);
            m.keep.extend_from_slice(&(!bad & lm).to_le_bytes());
            if !var && infs {
                m.pinf.push(p & !n & !a);
                m.ninf.push(n & !p & !a);
            }
        }
        m
    }

}

/// [`NonFinite::marks`]: `keep` (a [`Bitmap::local`] from `lo`) clear where
/// a row's result is NaN, which the kernels blend in as they store
/// ([`set_missing`] where they cannot); the sums' rows set to +inf and to
/// -inf (rare: a post-pass), words from `lo`.
pub(crate) struct Marks {
    lo: usize,
    keep: Vec<u8>,
    pinf: Vec<u64>,
    ninf: Vec<u64>,
}

impl Marks {
    pub(crate) fn keep(&self) -> Bitmap<'_> {
        Bitmap::local(&self.keep, self.lo)
    }

    /// The first and past the last row of `[b0, b1)` whose result is not
    /// NaN; `None` when every row's is (a window holding a NaN, or with a
    /// variance any non-finite value: the usual case from a window of a
    /// few hundred rows on with 1% NaN), so no kernel need run there, or
    /// only on the rows between.
    pub(crate) fn kept(&self, b0: usize, b1: usize) -> Option<(usize, usize)> {
        let k = self.keep();
        let word = |r: usize| k.bits(r) & low_ones((b1 - r).min(56));
        let first = (b0..b1).step_by(56).find_map(|r| Some(word(r)).filter(|&w| w != 0).map(|w| r + w.trailing_zeros() as usize))?;
        let last = (first..b1).step_by(56).filter_map(|r| Some(word(r)).filter(|&w| w != 0).map(|w| r + 63 - w.leading_zeros() as usize)).last()?;
        Some((first, last + 1))
    }

    /// Rows `[b0, b1)` of `out` (those rows; `b0 - lo` at least the
    /// window, or `lo` 0) set as [`NonFinite::marks`] says.
    pub(crate) fn apply(&self, b0: usize, b1: usize, out: &mut [f64]) {
        set_missing(self.keep(), b0, out);
        self.infinities(b0, b1, out);
    }

    /// Rows `[b0, b1)` of `out` (those rows) whose sum is an infinity.
    pub(crate) fn infinities(&self, b0: usize, b1: usize, out: &mut [f64]) {
        if self.pinf.is_empty() {
            return;
        }
        let mut i = b0;
        while i < b1 {
            let n = (b1 - i).min(64);
            let q = i - self.lo;
            let lm = low_ones(n);
            let o = &mut out[i - b0..i - b0 + n];
            for (mut w, v) in [(bits_at(&self.pinf, q) & lm, f64::INFINITY), (bits_at(&self.ninf, q) & lm, f64::NEG_INFINITY)] {
                while w != 0 {
                    o[w.trailing_zeros() as usize] = v;
                    w &= w - 1;
                }
            }
            i += n;
        }
    }
}

/// `out` (rows from `r0`) NaN where `keep` is clear: 56 rows a read, a
/// whole run filled at once.
pub(crate) fn set_missing<K: Valid>(keep: K, r0: usize, out: &mut [f64]) {
    if K::ALL {
        return;
    }
    let mut i = 0;
    while i < out.len() {
        let n = (out.len() - i).min(56);
        let bad = !keep.bits(r0 + i) & low_ones(n);
        let o = &mut out[i..i + n];
        if bad == low_ones(n) {
            o.fill(f64::NAN);
        } else {
            let mut w = bad;
            while w != 0 {
                o[w.trailing_zeros() as usize] = f64::NAN;
                w &= w - 1;
            }
        }
        i += n;
    }
}

/// The output validity of a window aggregate that needs `need` valid rows
/// (var / std: two): row `i` is valid when `(i - window, i]` holds at least
/// `need`. A word of 64 rows at a time from per-word prefix counts: the
/// rows every window of the word holds decide it when they have `need`
/// valid rows (most words with long windows), or every window is full and
/// the rows any of them holds miss too few to matter (short windows), else
/// from each row's count ([`ValidPrefix::window_counts`]). `None` when
/// every row is valid. (Before: a u32
/// count per row, three passes over 4 bytes a row; a tenth of the variance
/// kernel with nulls.)
pub(crate) fn at_least_in_window(nb: &NullBuffer, window: usize, need: usize) -> Option<NullBuffer> {
    let n = nb.len();
    let vp = ValidPrefix::new(nb);
    let (words, before) = (&vp.words, |r: usize| vp.before(r));
    let mut out = Vec::with_capacity(words.len());
    for q in 0..words.len() {
        let i0 = 64 * q;
        let len = (n - i0).min(64);
        // Rows every window of the word holds: [i0 + len - window, i0].
        let all = (len <= window && before(i0 + 1) - before((i0 + len).saturating_sub(window)) >= need)
            // Or every window full and missing at most `window - need` of
            // the rows any of them holds, [i0 + 1 - window, i0 + len)
            // (short windows with few nulls: the slide below ran for every
            // word, a sixth of the variance at window 16).
            || (need <= window && i0 + 1 >= window && len + window - 1 - (before(i0 + len) - before(i0 + 1 - window)) <= window - need);
        let w = if all {
            low_ones(len)
        } else {
            // Each row's count, as `window_counts` counts them.
            let mut c = [0usize; 64];
            vp.window_counts(window, i0, &mut c[..len], |k| k);
            c[..len].iter().enumerate().fold(0u64, |a, (j, &k)| a | (((k >= need) as u64) << j))
        };
        out.push(w);
    }
    nulls_of_words(out, n)
}

/// The validity of rows `[r, r + n)` (`n <= 64`) as one word, bit `j` for
/// row `r + j` (two reads: a read gives 57 rows).
#[inline(always)]
pub(crate) fn word_at<V: Valid>(va: V, r: usize, n: usize) -> u64 {
    let w = if V::ALL { u64::MAX } else { (va.bits(r) & low_ones(32)) | (va.bits(r + 32) << 32) };
    w & low_ones(n)
}

/// The validity of rows `[lo, hi)` with their NaN rows missing too
/// (`valid AND NOT isnan`, 64 rows a word), as the bytes of a
/// [`Bitmap::local`] from `lo`: a `nan="skip"` job's own mask, built as its
/// rows come into cache.
pub(crate) fn skip_mask<T: Copy + PartialEq + 'static, V: Valid>(x: &[T], va: V, lo: usize, hi: usize) -> Vec<u8> {
    let mut local = Vec::with_capacity((hi - lo).div_ceil(64) * 8);
    for (q, c) in x[lo..hi].chunks(64).enumerate() {
        local.extend_from_slice(&(word_at(va, lo + 64 * q, c.len()) & !nan_bits(c)).to_le_bytes());
    }
    local
}

/// Where a `nan="skip"` kernel puts the validity of the rows it read
/// (valid and not NaN, from the masks it builds a job or chunk at a time
/// while the values are in cache), for the output's validity: issue 36,
/// no NaN-to-null pass over the column first. Nowhere ([`NoSink`]) for the
/// other policies, which compile to the code before.
pub(crate) trait Sink: Copy + Send + Sync {
    const SKIP: bool;
    /// A job runs unmasked first ([`Words`]).
    fn as_is(self) -> bool {
        false
    }
    /// Rows `[a, b)`'s bits of `va` (each row put once).
    fn put<V: Valid>(self, va: V, a: usize, b: usize);
}

#[derive(Clone, Copy)]
pub(crate) struct NoSink;

impl Sink for NoSink {
    const SKIP: bool = false;
    #[inline(always)]
    fn put<V: Valid>(self, _: V, _: usize, _: usize) {}
}

/// The column's words, shared by the threads: a word a range fills is
/// stored, one it shares with a neighbour (on another thread, maybe) ORed
/// in (the words start zero). `.1`: the jobs run on the column as it is
/// first, and build a mask only if they meet a NaN (where a search saw
/// none: a column without NaN at `nan="propagate"`'s speed, where with
/// NaN in most jobs each would run twice).
#[derive(Clone, Copy)]
pub(crate) struct Words<'a>(pub(crate) &'a [AtomicU64], pub(crate) bool);

impl Words<'_> {
    /// `n` rows' words, all clear.
    pub(crate) fn zeroed(n: usize) -> Vec<AtomicU64> {
        (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect()
    }

    /// The words as the validity of `n` rows.
    pub(crate) fn into_nulls(words: Vec<AtomicU64>, n: usize) -> NullBuffer {
        let words: Vec<u64> = words.into_iter().map(AtomicU64::into_inner).collect();
        NullBuffer::new(BooleanBuffer::new(arrow_buffer::Buffer::from_vec(words), 0, n))
    }

    /// The words as validity, `None` when every row is valid
    /// ([`nulls_of_words`]).
    pub(crate) fn nulls(words: Vec<AtomicU64>, n: usize) -> Option<NullBuffer> {
        nulls_of_words(words.into_iter().map(AtomicU64::into_inner).collect(), n)
    }

    /// The validity a `nan="skip"` output derives from: the words
    /// ([`Words::into_nulls`]), or the column's own `nulls` where they
    /// clear no more rows (no NaN was masked: the words are `nulls AND NOT
    /// isnan`), so that it is the one `nan="propagate"` gives.
    pub(crate) fn validity(words: Vec<AtomicU64>, n: usize, nulls: Option<&NullBuffer>) -> Option<NullBuffer> {
        let nb = Words::into_nulls(words, n);
        if nb.null_count() == nulls.map_or(0, NullBuffer::null_count) {
            return nulls.cloned();
        }
        Some(nb)
    }
}

impl Sink for Words<'_> {
    const SKIP: bool = true;
    fn as_is(self) -> bool {
        self.1
    }
    fn put<V: Valid>(self, va: V, a: usize, b: usize) {
        let mut r = a;
        while r < b {
            let q = r / 64;
            let e = (64 * q + 64).min(b);
            let w = word_at(va, r, e - r) << (r - 64 * q);
            if e - r == 64 {
                self.0[q].store(w, Ordering::Relaxed);
            } else {
                self.0[q].fetch_or(w, Ordering::Relaxed);
            }
            r = e;
        }
    }
}

/// A part's validity bits, its rows in order, into the column's shared
/// words (a thread's part of `Words::zeroed`): a word at a time, ORed in,
/// since a part's first and last words may be its neighbours' too.
pub(crate) struct PartBits<'a> {
    words: &'a [AtomicU64],
    word: u64,
}

impl<'a> PartBits<'a> {
    pub(crate) fn new(words: &'a [AtomicU64]) -> PartBits<'a> {
        PartBits { words, word: 0 }
    }

    /// Row `i`'s bit (rows in order, each once).
    #[inline(always)]
    pub(crate) fn put(&mut self, i: usize, ok: bool) {
        self.word |= (ok as u64) << (i & 63);
        if i & 63 == 63 {
            self.words[i >> 6].fetch_or(std::mem::take(&mut self.word), Ordering::Relaxed);
        }
    }

    /// After the part's last row, `r1 - 1`.
    pub(crate) fn end(self, r1: usize) {
        if r1 & 63 != 0 {
            self.words[r1 >> 6].fetch_or(self.word, Ordering::Relaxed);
        }
    }
}

/// The lowest `k` bits set (`k <= 64`).
#[inline(always)]
pub(crate) fn low_ones(k: usize) -> u64 {
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

    #[test]
    fn nan_as_null_is_valid_and_not_nan() {
        let mut st = 0x2545_F491_4F6C_DD1Du64;
        for n in [0usize, 1, 7, 8, 63, 64, 65, 130, 1000, (1 << 20) + 4_099] {
            // (the last: split over threads at word boundaries)
            for p_nan in [0.0, 0.01, 0.5, 1.0] {
                let mut x = Vec::with_capacity(n);
                let mut ok = Vec::with_capacity(n);
                for _ in 0..n {
                    st ^= st << 13;
                    st ^= st >> 7;
                    st ^= st << 17;
                    let u = (st >> 11) as f64 / (1u64 << 53) as f64;
                    x.push(if u < p_nan { f64::NAN } else { u });
                    ok.push(st % 3 != 0);
                }
                for off in [0usize, 5] {
                    let mut all = vec![true; off];
                    all.extend(&ok);
                    let nb = NullBuffer::new(BooleanBuffer::from(all).slice(off, n));
                    for (nulls, valid) in [(None, vec![true; n]), (Some(&nb), ok.clone())] {
                        let want: Vec<bool> = (0..n).map(|i| valid[i] && !x[i].is_nan()).collect();
                        let got = nan_as_null(&x, nulls);
                        let changed = (0..n).any(|i| valid[i] && x[i].is_nan());
                        assert_eq!(got.is_some(), changed, "n {n} p {p_nan} off {off}");
                        if let Some(g) = got {
                            assert_eq!((0..n).map(|i| g.is_valid(i)).collect::<Vec<_>>(), want, "n {n} p {p_nan} off {off}");
                        }
                        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                        assert_eq!(nan_as_null(&x32, nulls).map(|g| (0..n).map(|i| g.is_valid(i)).collect::<Vec<_>>()), changed.then(|| want.clone()));
                    }
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn wide_non_finite_and_nan_bits_equal_the_portable_loop() {
        // Every class of float64: zeros, subnormals, the largest, infinities,
        // quiet and signalling NaN with payloads, both signs.
        let specials = [0.0, -0.0, 1.5, -2.0, 5e-324, f64::MAX, f64::MIN, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -f64::NAN,
            f64::from_bits(0x7FF0_0000_0000_0001), f64::from_bits(0xFFF8_0000_0000_1234), f64::from_bits(0x7FEF_FFFF_FFFF_FFFF)];
        let mut st = 0x2545_F491_4F6C_DD1Du64;
        for round in 0..500 {
            let c: Vec<f64> = (0..64)
                .map(|_| {
                    st ^= st << 13;
                    st ^= st >> 7;
                    st ^= st << 17;
                    // Sparse to dense non-finite values as the rounds go.
                    if (st % 500) as usize <= round { specials[(st >> 32) as usize % specials.len()] } else { f64::from_bits(st >> 2) }
                })
                .collect();
            let want = non_finite_portable(&c);
            assert_eq!(want, c.iter().enumerate().fold(0u64, |w, (j, v)| w | ((!v.is_finite() as u64) << j)));
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: 64 f64, AVX2 present.
                assert_eq!(unsafe { wide::bits256::<false>(c.as_ptr()) }, want, "avx2, round {round}");
            }
            if std::is_x86_feature_detected!("avx512f") {
                // SAFETY: 64 f64, AVX-512 present.
                assert_eq!(unsafe { wide::bits512::<false>(c.as_ptr()) }, want, "avx512, round {round}");
            }
            assert_eq!(non_finite_bits(&c), want);
            // The NaN alone (`nan="skip"`'s masks).
            let nan = c.iter().enumerate().fold(0u64, |w, (j, v)| w | ((v.is_nan() as u64) << j));
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: as above.
                assert_eq!(unsafe { wide::bits256::<true>(c.as_ptr()) }, nan, "avx2 NaN, round {round}");
            }
            if std::is_x86_feature_detected!("avx512f") {
                // SAFETY: as above.
                assert_eq!(unsafe { wide::bits512::<true>(c.as_ptr()) }, nan, "avx512 NaN, round {round}");
            }
            assert_eq!(nan_bits(&c), nan);
        }
    }

    /// A bitmap's one-row read is its row's bit, at every offset into the
    /// buffer and up to its last row.
    #[test]
    fn a_bitmaps_bit_is_its_row() {
        let mut st = 0x9E37_79B9_7F4A_7C15u64;
        for n in [1usize, 7, 8, 9, 64, 65, 200] {
            for off in [0usize, 1, 5, 8, 13] {
                let bits: Vec<bool> = (0..n + off).map(|_| crate::rolling::xorshift(&mut st) % 3 != 0).collect();
                let nb = NullBuffer::new(BooleanBuffer::from(bits.clone()).slice(off, n));
                let b = Bitmap::new(&nb);
                for r in 0..n {
                    assert_eq!(b.bit(r), bits[off + r], "n {n} off {off} row {r}");
                    assert_eq!(b.bit(r), b.bits(r) & 1 != 0, "n {n} off {off} row {r}");
                }
            }
        }
    }

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
                        for need in [2usize, 3, 7] {
                            let got = at_least_in_window(&nb, w, need);
                            for i in 0..n {
                                let k = ((i + 1).saturating_sub(w)..=i).filter(|&r| bits[r]).count();
                                assert_eq!(got.as_ref().map_or(true, |g| g.is_valid(i)), k >= need, "at least {need}: n {n} p {p} w {w} off {off} row {i}");
                            }
                        }
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
