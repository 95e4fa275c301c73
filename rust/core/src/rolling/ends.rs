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
/// `min_periods` non-null rows, or (ignoring nulls) has none.
pub(crate) fn rolling_ends(values: &dyn Array, bounds: &[usize], ab: (isize, isize), agg: AggKind, min_periods: usize, step: usize) -> Result<ArrayRef> {
    assert!(is_end(agg) && step >= 1 && (step == 1 || bounds.len() <= 2));
    Ok(match DType::of(values.data_type())? {
        DType::I32 => ends::<Int32Type>(values.as_primitive(), bounds, ab, agg, min_periods, step),
        DType::I64 => ends::<Int64Type>(values.as_primitive(), bounds, ab, agg, min_periods, step),
        DType::F32 => ends::<Float32Type>(values.as_primitive(), bounds, ab, agg, min_periods, step),
        DType::F64 => ends::<Float64Type>(values.as_primitive(), bounds, ab, agg, min_periods, step),
    })
}

fn ends<P: ArrowPrimitiveType>(arr: &PrimitiveArray<P>, bounds: &[usize], (a, b): (isize, isize), agg: AggKind, mp: usize, step: usize) -> ArrayRef {
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
            Some(nb) if step == 1 => with_nulls(x, rows_of.get_or_insert_with(|| Rows::new(nb)), (s0, e), (a, b), agg, mp, &mut out, &mut keep),
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
        let w = &self.vp.words;
        let mut q = j / 64;
        let mut bits = w.get(q).map_or(0, |&v| v & !low_ones(j % 64));
        while bits == 0 {
            q += 1;
            match w.get(q) {
                Some(&v) => bits = v,
                None => return usize::MAX,
            }
        }
        64 * q + bits.trailing_zeros() as usize
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
fn with_nulls<N: Copy + Default>(x: &[N], rows: &mut Rows, (s0, e): (isize, isize), (a, b): (isize, isize), agg: AggKind, mp: usize, out: &mut Vec<N>, keep: &mut BooleanBufferBuilder) {
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
                    // a bit range as `first` / `last`; the values a row at a
                    // time from the next valid row at or after each start
                    // (again only once the start has passed it) or the last
                    // at or before each end.
                    bits.flush(keep);
                    let src = (i + b) as usize;
                    keep.append_packed_range(src..src + m, rows.any_in(w + 1));
                    if agg == AggKind::FirstNonNull {
                        let l0 = (i + a) as usize;
                        let mut nx = next.filter(|&v| v >= l0).unwrap_or_else(|| rows.next_valid(l0));
                        out.extend((l0..l0 + m).map(|l| {
                            if rows.valid(l) {
                                nx = l;
                            } else if nx < l {
                                nx = rows.next_valid(l);
                            }
                            if nx <= l + w {
                                x[nx]
                            } else {
                                N::default()
                            }
                        }));
                        next = Some(nx);
                    } else {
                        // The rows before the first end: scanned once.
                        let h0 = src;
                        if i + b - 1 > end {
                            if let Some(j) = prev_valid(&rows.vp.words, h0 - 1, (end + 1).max(i + a) as usize) {
                                last = j;
                            }
                        }
                        out.extend((h0..h0 + m).map(|h| {
                            if rows.valid(h) {
                                last = h;
                            }
                            if last != usize::MAX && last + w >= h {
                                x[last]
                            } else {
                                N::default()
                            }
                        }));
                        end = (h0 + m - 1) as isize;
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
