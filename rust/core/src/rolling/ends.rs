//! first / last (Spark's `first(v)` / `last(v)`, a null row is a row) and
//! their `ignorenulls` forms over count windows: each window's value is
//! one of its rows, so the kernel is a gather. Row `i` of a segment
//! `[s, e)` reads the rows `[max(i + a, s), min(i + b, e - 1)]` (the
//! shape's offsets, `shape.rs`); both ends only move forward as `i` does,
//! so the window's non-null count and its first / last non-null row
//! follow with two pointers, O(1) amortised a row. `min_periods` counts
//! the window's non-null rows, as every kernel does. No aggregation
//! structure and no padding: keyed rolling's segments, any shape and a
//! step run as one call (the FIFO kernels fold `Option`s row by row), and
//! a segment's full windows are a slice copy (with nulls: its validity
//! too, a bit range, [`with_nulls`]).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer, ScalarBuffer};

use super::valid::{in_window, low_ones, ValidPrefix};
use super::Split;
use crate::engine::{AggKind, DType};
use crate::Result;

/// The four aggregations this kernel runs.
pub(crate) fn is_end(agg: AggKind) -> bool {
    matches!(agg, AggKind::First | AggKind::Last | AggKind::FirstNonNull | AggKind::LastNonNull)
}

/// `agg` (one of [`is_end`]'s) of the windows `[i + a, i + b]` of each
/// segment `bounds[k]..bounds[k + 1]` of `values` alone (ascending from 0
/// to `values.len()`), for every `step`-th row of a segment (one segment
/// where `step > 1`); null where the window is empty, holds fewer than
/// `min_periods` non-null rows, or (ignoring nulls) has none. `split`:
/// the threads of a long `ignore_nulls` stretch ([`fill_stretch`]).
pub(crate) fn rolling_ends(values: &dyn Array, bounds: &[usize], ab: (isize, isize), agg: AggKind, min_periods: usize, step: usize, split: Split) -> Result<ArrayRef> {
    assert!(is_end(agg) && step >= 1 && (step == 1 || bounds.len() <= 2));
    Ok(match DType::of(values.data_type())? {
        DType::I32 => ends::<Int32Type>(values.as_primitive(), bounds, ab, agg, min_periods, step, split),
        DType::I64 => ends::<Int64Type>(values.as_primitive(), bounds, ab, agg, min_periods, step, split),
        DType::F32 => ends::<Float32Type>(values.as_primitive(), bounds, ab, agg, min_periods, step, split),
        DType::F64 => ends::<Float64Type>(values.as_primitive(), bounds, ab, agg, min_periods, step, split),
    })
}

fn ends<P: ArrowPrimitiveType>(arr: &PrimitiveArray<P>, bounds: &[usize], (a, b): (isize, isize), agg: AggKind, mp: usize, step: usize, split: Split) -> ArrayRef {
    let x = arr.values();
    let rows = bounds.windows(2).map(|s| (s[1] - s[0]).div_ceil(step)).sum::<usize>();
    let mut out: Vec<P::Native> = Vec::with_capacity(rows);
    let mut keep = BooleanBufferBuilder::new(rows);
    let oldest = matches!(agg, AggKind::First | AggKind::FirstNonNull);
    let nulls = arr.nulls().filter(|nb| nb.null_count() > 0);
    let mut rows_of = None;
    for s in bounds.windows(2) {
        let (s0, e) = (s[0] as isize, s[1] as isize);
        let at = |i: isize| ((i + a).max(s0), (i + b).min(e - 1));
        match nulls {
            None => {
                // Every row counts: a window keeps its value when it holds
                // `mp` rows; full windows in the middle are a slice copy.
                let full = (b - a + 1) as usize >= mp.max(1);
                let (m0, m1) = (s0 - a.min(0), e - b.max(0));
                let mut i = s0;
                while i < e {
                    let (lo, hi) = at(i);
                    if step == 1 && full && i >= m0 && i < m1 {
                        let src = if oldest { i + a } else { i + b } as usize;
                        let len = (m1 - i) as usize;
                        out.extend_from_slice(&x[src..src + len]);
                        keep.append_n(len, true);
                        i = m1;
                        continue;
                    }
                    let ok = lo <= hi && (hi - lo + 1) as usize >= mp;
                    out.push(if ok { x[if oldest { lo } else { hi } as usize] } else { P::Native::default() });
                    keep.append(ok);
                    i += step as isize;
                }
            }
            Some(nb) if step == 1 => with_nulls(x, rows_of.get_or_insert_with(|| Rows::new(nb)), (s0, e), (a, b), agg, mp, split, &mut out, &mut keep),
            Some(nb) => {
                let valid = |j: isize| nb.is_valid(j as usize);
                // `count`: the non-null rows of [l, h], rows below `l` left
                // (or were passed over before entering, under a step),
                // rows up to `h` entered.
                let (mut count, mut l, mut h) = (0usize, s0, s0 - 1);
                // The last non-null row at or before `h`; the first at or
                // after the window's start (a scan that only moves on).
                let (mut last_nn, mut first_nn) = (s0 - 1, s0);
                for i in (s0..e).step_by(step) {
                    let (lo, hi) = at(i);
                    while h < hi {
                        h += 1;
                        if valid(h) {
                            count += (h >= l) as usize;
                            last_nn = h;
                        }
                    }
                    while l < lo {
                        count -= (l <= h && valid(l)) as usize;
                        l += 1;
                    }
                    let pick = match agg {
                        _ if lo > hi => None,
                        AggKind::First => Some(lo),
                        AggKind::Last => Some(hi),
                        AggKind::FirstNonNull => {
                            first_nn = first_nn.max(lo);
                            while first_nn <= hi && !valid(first_nn) {
                                first_nn += 1;
                            }
                            Some(first_nn).filter(|&j| j <= hi)
                        }
                        _ => Some(last_nn).filter(|&j| j >= lo),
                    };
                    // a picked null row (first / last) is null
                    let pick = pick.filter(|&j| count >= mp && valid(j));
                    out.push(pick.map_or(P::Native::default(), |j| x[j as usize]));
                    keep.append(pick.is_some());
                }
            }
        }
    }
    let keep = NullBuffer::new(keep.finish());
    Arc::new(PrimitiveArray::<P>::new(ScalarBuffer::from(out), Some(keep).filter(|k| k.null_count() > 0)))
}

/// The column's validity as [`ValidPrefix`] has it (64 rows a word, and
/// the valid rows before each word), and where its bits start in the
/// null buffer's bytes (for the copies of [`with_nulls`]).
struct Rows<'a> {
    vp: ValidPrefix,
    bytes: &'a [u8],
    offset: usize,
    len: usize,
    /// Bit `j` set when a row of `(j - window, j]` is valid
    /// ([`in_window`]); made at its first use (a call has one window).
    any: Option<Buffer>,
}

impl<'a> Rows<'a> {
    fn new(nb: &'a NullBuffer) -> Self {
        Rows { vp: ValidPrefix::new(nb), bytes: nb.inner().values(), offset: nb.inner().offset(), len: nb.len(), any: None }
    }

    /// [`Rows::any`]'s bytes, for the call's windows of `window` rows.
    fn any_in(&mut self, window: usize) -> &[u8] {
        let (words, len) = (&self.vp.words, self.len);
        self.any.get_or_insert_with(|| Buffer::from_vec(in_window(words, len, window))).as_slice()
    }

    #[inline(always)]
    fn valid(&self, j: usize) -> bool {
        self.vp.words[j / 64] >> (j % 64) & 1 == 1
    }

    /// The first valid row at or after `j` (`usize::MAX` if none): a
    /// word at a time.
    #[inline(always)]
    fn next_valid(&self, j: usize) -> usize {
        next_valid(&self.vp.words, j).unwrap_or(usize::MAX)
    }
}

/// A segment's rows `[s0, e)` with nulls, every row (step 1), appended to
/// `out` / `keep` as [`ends`]' scalar loop has them (issue 36: that loop,
/// a bit test through the null buffer and a count update a row, ran first
/// and last at a twelfth of their null-free speed). The rows whose window
/// lies inside the segment, where `min_periods` is at most 1 (which a
/// valid picked row meets), run as one stretch: `first` / `last` copy the
/// values as the null-free path does and their validity as a bit range,
/// shifted by the window's offset; the `ignore_nulls` forms keep the next
/// valid row at or after the start (found a word at a time, again only
/// once the start passes it) or the last at or before the end. The other
/// rows pick from the validity words, and count the window's valid rows
/// from the prefix counts where `min_periods` asks.
#[allow(clippy::too_many_arguments)]
fn with_nulls<N: Copy + Default + Send + Sync>(x: &[N], rows: &mut Rows, (s0, e): (isize, isize), (a, b): (isize, isize), agg: AggKind, mp: usize, split: Split, out: &mut Vec<N>, keep: &mut BooleanBufferBuilder) {
    let oldest = matches!(agg, AggKind::First | AggKind::FirstNonNull);
    // The rows whose window lies inside the segment (`[m0, m1)`) run as
    // one stretch where `min_periods` asks nothing a picked valid row does
    // not give.
    let stretch = mp <= 1 && a <= b;
    let (m0, m1) = (s0 - a.min(0), e - b.max(0));
    // The next valid row at or after the window's start, and the last at
    // or before its end (`usize::MAX`: none), kept while they stay so:
    // both ends only move forward.
    let (mut next, mut last, mut end) = (None::<usize>, usize::MAX, s0 - 1);
    // The other rows' validity bits, appended 64 at a time.
    let mut bits = Bits::default();
    let mut i = s0;
    while i < e {
        if stretch && i >= m0 && i < m1 {
            let (w, m) = ((b - a) as usize, (m1 - i) as usize);
            match agg {
                AggKind::First | AggKind::Last => {
                    bits.flush(keep);
                    let src = (if oldest { i + a } else { i + b }) as usize;
                    out.extend_from_slice(&x[src..src + m]);
                    keep.append_packed_range(rows.offset + src..rows.offset + src + m, rows.bytes);
                }
                _ => {
                    // Valid where some row of the window is (bit `i + b` of
                    // the column's "valid in the `w + 1` rows up to here"),
                    // a bit range as `first` / `last`; the values by
                    // [`fill_stretch`].
                    bits.flush(keep);
                    let src = (i + b) as usize;
                    keep.append_packed_range(src..src + m, rows.any_in(w + 1));
                    if agg == AggKind::FirstNonNull {
                        fill_stretch::<N, true>(x, &rows.vp.words, (i + a) as usize, m, w, split, out);
                        next = None;
                    } else {
                        last = fill_stretch::<N, false>(x, &rows.vp.words, src, m, w, split, out);
                        end = (src + m - 1) as isize;
                    }
                }
            }
            i = m1;
            continue;
        }
        let (lo, hi) = ((i + a).max(s0), (i + b).min(e - 1));
        let pick = if lo > hi {
            None
        } else {
            let (l, h) = (lo as usize, hi as usize);
            match agg {
                AggKind::First => Some(l).filter(|&j| rows.valid(j)),
                AggKind::Last => Some(h).filter(|&j| rows.valid(j)),
                AggKind::FirstNonNull => {
                    let n = match next {
                        Some(v) if v >= l => v,
                        _ => rows.next_valid(l),
                    };
                    next = Some(n);
                    Some(n).filter(|&j| j <= h)
                }
                _ => {
                    if hi > end {
                        // The rows that came in since: a word at a time
                        // from the end down (one row a step, but the first).
                        let from = (end + 1).max(lo) as usize;
                        if let Some(j) = prev_valid(&rows.vp.words, h, from) {
                            last = j;
                        }
                        end = hi;
                    }
                    Some(last).filter(|&j| j != usize::MAX && j >= l)
                }
            }
            .filter(|_| mp <= 1 || rows.vp.before(h + 1) - rows.vp.before(l) >= mp)
        };
        out.push(pick.map_or(N::default(), |j| x[j]));
        bits.push(pick.is_some(), keep);
        i += 1;
    }
    bits.flush(keep);
}

/// The values of `m` rows of an `ignore_nulls` stretch into `out`'s spare
/// capacity: for `FIRST`, row `l0 + k` (`l0` the first window's start)
/// takes the first valid row of `[l0 + k, l0 + k + w]`, else the last
/// valid row of `[h0 + k - w, h0 + k]` (`h0 = from`, the first window's
/// end); the type's default where there is none (the row is null). A
/// word's rows are copied, as without nulls, and only its null rows look
/// for their pick, in the word's bits or the carry from the word before
/// (issue 36: a branch a row on its validity ran these at a third of the
/// null-free copy's speed with 10% nulls). Long stretches split over
/// threads, each finding its own first carry in the words. Returns the
/// last row's pick for `last` (`usize::MAX`: none, and for `first`).
fn fill_stretch<N: Copy + Default + Send + Sync, const FIRST: bool>(x: &[N], words: &[u64], from: usize, m: usize, w: usize, split: Split, out: &mut Vec<N>) -> usize {
    out.reserve(m);
    let dst = &mut out.spare_capacity_mut()[..m];
    let threads = split.threads(m);
    let carry = std::sync::atomic::AtomicUsize::new(usize::MAX);
    super::par_ranges(dst, &super::cuts(m, threads, |r| Some(r.saturating_sub((from + r) % 64))), |k0, k1, o| {
        let (r0, r1) = (from + k0, from + k1);
        if FIRST {
            fill_first(x, words, r0, r1, w, o);
        } else {
            let c = fill_last(x, words, r0, r1, w, o);
            if k1 == m {
                carry.store(c, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    // SAFETY: every one of the `m` rows was written above.
    unsafe { out.set_len(out.len() + m) };
    carry.into_inner()
}

/// [`fill_stretch`]'s `last` over rows `[r0, r1)` (each row's window
/// ends there), into `o`; the last row's pick. A word's rows are copied,
/// then its null rows take the last valid row before them.
fn fill_last<N: Copy + Default>(x: &[N], words: &[u64], r0: usize, r1: usize, w: usize, o: &mut [std::mem::MaybeUninit<N>]) -> usize {
    // The last valid row before the first: at most `w` rows back counts.
    let mut last = r0.checked_sub(1).and_then(|h| prev_valid(words, h, h.saturating_sub(w))).unwrap_or(usize::MAX);
    let mut r = r0;
    while r < r1 {
        let (q, e) = (r / 64, (r / 64 * 64 + 64).min(r1));
        // The word's rows in `[r, e)`.
        let span = low_ones(e - 64 * q) & !low_ones(r % 64);
        let valid = words[q] & span;
        copy(&x[r..e], &mut o[r - r0..e - r0]);
        let mut holes = span & !valid;
        while holes != 0 {
            let h = 64 * q + holes.trailing_zeros() as usize;
            holes &= holes - 1;
            let below = valid & low_ones(h % 64);
            let j = if below != 0 { 64 * q + 63 - below.leading_zeros() as usize } else { last };
            o[h - r0].write(if j != usize::MAX && j + w >= h { x[j] } else { N::default() });
        }
        if valid != 0 {
            last = 64 * q + 63 - valid.leading_zeros() as usize;
        }
        r = e;
    }
    last
}

/// [`fill_stretch`]'s `first` over rows `[r0, r1)` (each row's window
/// starts there), into `o`: a word's rows copied, then its null rows take
/// the first valid row after them, in the word or (found once for the
/// words it skips) after it. Forward, as `last`: a backward pass ran at
/// half its speed.
fn fill_first<N: Copy + Default>(x: &[N], words: &[u64], r0: usize, r1: usize, w: usize, o: &mut [std::mem::MaybeUninit<N>]) {
    // The first valid row at or after `ahead_of` (`usize::MAX`: none), so
    // at or after any row up to it too.
    let (mut ahead, mut ahead_of) = (usize::MAX, usize::MAX);
    let mut r = r0;
    while r < r1 {
        let (q, e) = (r / 64, (r / 64 * 64 + 64).min(r1));
        let span = low_ones(e - 64 * q) & !low_ones(r % 64);
        let word = words[q];
        copy(&x[r..e], &mut o[r - r0..e - r0]);
        let mut holes = span & !word;
        while holes != 0 {
            let l = 64 * q + holes.trailing_zeros() as usize;
            holes &= holes - 1;
            let above = word & !low_ones(l % 64 + 1);
            let j = if above != 0 {
                64 * q + above.trailing_zeros() as usize
            } else {
                let t = 64 * q + 64;
                if !(ahead_of <= t && t <= ahead) {
                    ahead = next_valid(words, t).unwrap_or(usize::MAX);
                    ahead_of = t;
                }
                ahead
            };
            o[l - r0].write(if j <= l + w { x[j] } else { N::default() });
        }
        r = e;
    }
}

/// `src` into the uninitialised `dst` (a memcpy).
#[inline(always)]
fn copy<N: Copy>(src: &[N], dst: &mut [std::mem::MaybeUninit<N>]) {
    for (d, &v) in dst.iter_mut().zip(src) {
        d.write(v);
    }
}

/// The first valid row at or after `j` in `words` (`None`: none), a word
/// at a time.
fn next_valid(words: &[u64], j: usize) -> Option<usize> {
    let mut q = j / 64;
    let mut bits = words.get(q).map_or(0, |&v| v & !low_ones(j % 64));
    while bits == 0 {
        q += 1;
        bits = *words.get(q)?;
    }
    Some(64 * q + bits.trailing_zeros() as usize)
}

/// Validity bits gathered a word at a time for a [`BooleanBufferBuilder`].
#[derive(Default)]
struct Bits {
    word: u64,
    len: usize,
}

impl Bits {
    #[inline(always)]
    fn push(&mut self, ok: bool, keep: &mut BooleanBufferBuilder) {
        self.word |= (ok as u64) << self.len;
        self.len += 1;
        if self.len == 64 {
            self.flush(keep);
        }
    }

    fn flush(&mut self, keep: &mut BooleanBufferBuilder) {
        if self.len > 0 {
            keep.append_packed_range(0..self.len, &self.word.to_le_bytes());
            (self.word, self.len) = (0, 0);
        }
    }
}

/// The last valid row of `[lo, hi]` in `words` (bit `j % 64` of word
/// `j / 64`: row `j`), a word at a time from `hi` down.
fn prev_valid(words: &[u64], hi: usize, lo: usize) -> Option<usize> {
    let mut q = hi / 64;
    let mut bits = words[q] & low_ones(hi % 64 + 1);
    loop {
        if bits != 0 {
            let j = 64 * q + 63 - bits.leading_zeros() as usize;
            return (j >= lo).then_some(j);
        }
        if q == 0 || 64 * q <= lo {
            return None;
        }
        q -= 1;
        bits = words[q];
    }
}
