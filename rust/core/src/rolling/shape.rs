//! Window shape, as pandas names it: `closed=` (which ends of the window are
//! in it), `center=` (the window centred on the row) and `step=` (only every
//! `step`-th row is output). docs/DESIGN.md "Window shape".
//!
//! Count windows follow pandas' `FixedWindowIndexer`: row `i`'s window is the
//! rows `[i + a, i + b]` clipped to the data, with `off = (w - 1) / 2` when
//! centred (else 0), `a = off + 1 - w - [left closed]`, `b = off - [right
//! open]`. That is a plain trailing window of `b - a + 1` rows shifted by
//! `b` rows, so it runs the same fast kernel as `rolling` on the values as
//! they are and shifts the result (one copy of the output: a slice and a
//! concatenation): `b = -1` puts the empty window first; centred, the last
//! `b` rows' windows, cut by the end of the data, are prefixes of the
//! rows they cover reversed: the same kernel over those rows reversed
//! (where ties go by position — argmax / argmin, collect, max / min's
//! earliest zero — over them in order followed by `b` nulls). Keyed rolling runs the same steps over many keys at once
//! ([`shaped_segments`]). Nulls are skipped by every
//! aggregation but `first` / `last` (`NULL_IS_ROW`); those, an empty window
//! (`w = 1, "neither"`), and a `step` much longer than the window (where
//! the plain kernel would compute rows nobody reads), run [`rolling_frames`]:
//! one FIFO aggregator driven by each row's `[start, end)` bounds, which
//! jumps over the rows between two output windows that do not overlap.
//!
//! Time windows follow pandas 3's `VariableWindowIndexer`, exactly: with
//! `t = ts[i]` and range `r`, the window holds the rows `j` with
//! * not centred: `ts[j] > t - r` (`>=` when left-closed) and `j <= i`
//!   (right-closed: by position, later rows of the same time are out) or
//!   `ts[j] < t` (right-open: by time, earlier rows of the same time are out);
//! * centred: `t - r/2 < ts[j] <= t + r/2`, each end closed or open as
//!   `closed` says, by time on both sides, compared exactly (doubled, in
//!   i128, no rounding of `r/2`).

use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, PrimitiveArray, UInt32Array};
use arrow_buffer::ScalarBuffer;
use std::sync::Arc;


use crate::engine::{AggKind, Column, DType, FromArrow, OutBuilder, ToArrow};
use crate::fifo::{Algorithm, FifoAggregator, New};
use crate::monoid::AggOp;
use crate::{invalid, Error, Result};

/// Which ends of the window are in it (pandas `closed=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Closed {
    /// `(start, end]`, the default.
    #[default]
    Right,
    /// `[start, end)`: for a count window, the `w` rows before the row.
    Left,
    /// `[start, end]`: one row (count) more than `right`.
    Both,
    /// `(start, end)`: one row (count) fewer than `right`.
    Neither,
}

impl Closed {
    pub fn parse(s: &str) -> Result<Closed> {
        Ok(match s {
            "right" => Closed::Right,
            "left" => Closed::Left,
            "both" => Closed::Both,
            "neither" => Closed::Neither,
            _ => return invalid!("closed must be 'right', 'left', 'both' or 'neither', got {s:?}"),
        })
    }
    #[inline]
    pub fn left(self) -> bool {
        matches!(self, Closed::Left | Closed::Both)
    }
    #[inline]
    pub fn right(self) -> bool {
        matches!(self, Closed::Right | Closed::Both)
    }
}

/// The shape keywords of `rolling` (pandas `closed`, `center`, `step`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub closed: Closed,
    pub center: bool,
    /// Output every `step`-th row (rows 0, step, 2*step, ...); >= 1.
    pub step: usize,
}

impl Default for Shape {
    fn default() -> Self {
        Shape { closed: Closed::Right, center: false, step: 1 }
    }
}

impl Shape {
    pub fn is_default(&self) -> bool {
        *self == Shape::default()
    }
    pub(crate) fn check(&self) -> Result<()> {
        if self.step == 0 {
            return invalid!("step must be a positive number of rows, got 0");
        }
        Ok(())
    }
    /// [`Self::row_offsets`] reaching at most `rows` rows either side: over
    /// segments of at most `rows` rows, each row's window holds the same
    /// rows of its segment (a window that passed a segment's end or start
    /// still does), and a run of short keys pads `rows` nulls between
    /// them, not the window's width.
    pub(crate) fn capped_offsets(&self, w: usize, rows: usize) -> (isize, isize) {
        let (a, b) = self.row_offsets(w);
        (a.max(-(rows as isize)), b.min(rows as isize))
    }
    /// Count window `w`: row `i`'s window is rows `[i + a, i + b]` (clipped),
    /// pandas' `FixedWindowIndexer`.
    pub fn row_offsets(&self, w: usize) -> (isize, isize) {
        // A window longer than any column clips as 2^60 rows does; capped,
        // the offsets and `i + offset` cannot overflow.
        let w = w.min(1 << 60) as isize;
        let off = if self.center { (w - 1) / 2 } else { 0 };
        (off + 1 - w - self.closed.left() as isize, off - !self.closed.right() as isize)
    }
}

/// Row `i`'s window `[start, end)`.
pub(crate) enum Frame<'a> {
    /// Rows `[i + a, i + b]`, clipped.
    Rows { a: isize, b: isize },
    /// The same, clipped to row `i`'s segment `bounds[k]..bounds[k + 1]`
    /// (ascending from 0 to n): many keys' windows in one pass.
    RowsIn { a: isize, b: isize, bounds: &'a [usize] },
    /// A time span over non-decreasing `ts` (module docs).
    Time { ts: &'a [i64], range: i64, closed: Closed, center: bool },
}

impl Frame<'_> {
    /// Bounds of row `i`'s window given the previous row's `(s, e)`: both
    /// only move forward, so the scans cost O(n) over the whole column.
    #[inline(always)]
    pub(crate) fn bounds(&self, i: usize, n: usize, s0: usize, e0: usize) -> (usize, usize) {
        match *self {
            Frame::Rows { a, b } => {
                let clip = |x: isize| x.clamp(0, n as isize) as usize;
                let (s, e) = (clip(i as isize + a), clip(i as isize + b + 1));
                (s, e.max(s))
            }
            Frame::RowsIn { a, b, bounds } => {
                let k = bounds.partition_point(|&x| x <= i) - 1;
                let clip = |x: isize| x.clamp(bounds[k] as isize, bounds[k + 1] as isize) as usize;
                let (s, e) = (clip(i as isize + a), clip(i as isize + b + 1));
                (s, e.max(s))
            }
            Frame::Time { ts, range, closed, center: false } => trailing_time(ts, range, closed, i, s0, e0),
            Frame::Time { ts, range, closed, center: true } => centred_time(ts, range, closed, n, i, s0, e0),
        }
    }
}

/// [`Frame::bounds`] of a time frame that ends at its row: one shape's
/// code, small enough to inline into a kernel's loop (the time max's loop
/// called the whole `bounds` a row: a quarter of its time).
#[inline(always)]
pub(crate) fn trailing_time(ts: &[i64], range: i64, closed: Closed, i: usize, s0: usize, e0: usize) -> (usize, usize) {
    // The default `rolling("5s")` path, in i64 as before shapes existed;
    // t - r below i64::MIN: no row is that old. Rows before `cut` leave
    // (`<= lb` is `< lb + 1`: lb < i64::MAX).
    let mut s = s0;
    if let Some(lb) = ts[i].checked_sub(range) {
        let cut = if closed.left() { lb } else { lb + 1 };
        s = advance(ts, s, i, |t| t < cut);
    }
    let e = if closed.right() {
        i + 1
    } else {
        let ti = ts[i];
        advance(ts, e0.max(s), i, |t| t < ti)
    };
    (s, e)
}

/// [`Frame::bounds`] of a centred time frame (`n` rows).
#[inline(always)]
pub(crate) fn centred_time(ts: &[i64], range: i64, closed: Closed, n: usize, i: usize, s0: usize, e0: usize) -> (usize, usize) {
    // Doubled, in i128, so that r/2 is exact and nothing overflows; `<= x`
    // as `< x + 1`.
    let (t, r) = (ts[i] as i128, range as i128);
    let lb = 2 * t - r + !closed.left() as i128;
    let s = advance(ts, s0, i, |v| 2 * (v as i128) < lb);
    let ub = 2 * t + r + closed.right() as i128;
    let e = advance(ts, e0.max(s), n, |v| 2 * (v as i128) < ub);
    (s, e)
}

/// The first row from `s` on (at most `end`, `end <= ts.len()`) whose time
/// does not `pass`, `pass` true up to some row of non-decreasing `ts` and
/// false after. A time window's ends move by a few rows a row, a count
/// that varies: a loop per row whose exit is a coin toss cost most of a
/// time window's time (issue 36: 10 of a count's 19 ms on 2M rows). So
/// four rows are tested at once, without a branch (their loads
/// independent), and the loop runs only past four.
#[inline(always)]
fn advance(ts: &[i64], mut s: usize, end: usize, pass: impl Fn(i64) -> bool) -> usize {
    if s >= end {
        return s;
    }
    let last = ts.len() - 1;
    let step = |d: usize| ((s + d < end) & pass(ts[(s + d).min(last)])) as usize;
    let k = step(0) + step(1) + step(2) + step(3);
    s += k;
    if k == 4 {
        while s < end && pass(ts[s]) {
            s += 1;
        }
    }
    s
}

/// Count-window rolling with a non-default shape (module docs); reached
/// through [`super::rolling_dyn`], which runs the default shape directly.
pub(crate) fn rolling_shaped(
    values: &dyn Array,
    window: usize,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
    shape: Shape,
) -> Result<ArrayRef> {
    super::check_window(window, min_periods)?;
    shape.check()?;
    let n = values.len();
    let dtype = DType::of(values.data_type())?;
    // Offsets capped to the column (the same windows): a centred tail's
    // `b` padding rows, or a window's buffers, never follow a huge window.
    let (a, b) = shape.capped_offsets(window, n.max(1));
    let len = (b - a + 1) as usize; // w - 1, w or w + 1 (or capped)
    let mp = min_periods.unwrap_or(0);
    let out_rows = n.div_ceil(shape.step);
    if mp > len {
        // `neither` holds w - 1 rows: never enough values.
        return Ok(arrow_array::new_null_array(&crate::engine::out_type(agg, dtype), out_rows));
    }
    if algo == Algorithm::Auto && super::ends::is_end(agg) {
        // a gather, whatever the shape and step
        return super::ends::rolling_ends(values, &[0, n], (a, b), agg, mp, shape.step, super::Split::default());
    }
    // first / last (a named algorithm) see a padding null as a row; an
    // empty window has no kernel; a step far longer than the window would
    // compute rows no one reads: the FIFO over the frames.
    let frames = len == 0 || matches!(agg, AggKind::First | AggKind::Last) || shape.step >= 8 * len;
    if frames {
        return rolling_frames_dyn(values, &Frame::Rows { a, b }, agg, min_periods, algo, shape.step);
    }
    // The fast kernel over the values as they are (padding them with nulls
    // would send a null-free column down the kernels' slower null path).
    let trailing = |col: &dyn Array, _: &[usize], len: usize| super::rolling_plain(col, len, agg, min_periods, algo).map(Some);
    let out_type = crate::engine::out_type(agg, dtype);
    let arg = matches!(agg, AggKind::ArgMax | AggKind::ArgMin);
    // Only sums, means and the moments (and count) reverse their cut
    // tails: the others' ties go by position (max / min keep the earliest
    // of tied zeros, -0.0 against 0.0).
    let by_position = !(super::segments::restarts(agg) || agg == AggKind::Count);
    let mut out = shaped_segments(values, &[0, n], (a, b), &out_type, mp, by_position, &trailing)?.expect("rolling_plain runs every window");
    if arg {
        out = positions_from_start(out, (a, b))?;
    }
    if shape.step > 1 {
        let idx = UInt32Array::from_iter_values((0..n).step_by(shape.step).map(|i| i as u32));
        out = arrow_select::take::take(out.as_ref(), &idx, None).map_err(|e| Error::Invalid(e.to_string()))?;
    }
    Ok(out)
}

/// Count windows of `shape` over each segment `bounds[k]..bounds[k + 1]`
/// of `values` alone (keyed rolling's keys, or the whole column), from
/// trailing windows: `trailing(col, bounds, len)` gives the windows of
/// `len` rows ending at each row of each segment of `col` alone (`None`:
/// it cannot, and neither can this). Row `i`'s window is the trailing one
/// ending at row `i + b` (module docs): `b = -1` puts the empty window
/// first; centred, the last `b` rows of a segment, cut by its end, run
/// for all segments in one more call, over the rows they cover reversed
/// (`by_position`: in order, followed by `b` nulls; argmax / argmin
/// positions of those rows then count from the rows they cover, and the
/// caller shifts them). `None` also for an empty window (`w = 1,
/// "neither"`), which has no trailing kernel.
pub(crate) fn shaped_segments(
    values: &dyn Array,
    bounds: &[usize],
    (a, b): (isize, isize),
    out_type: &arrow_schema::DataType,
    mp: usize,
    by_position: bool,
    trailing: &dyn Fn(&dyn Array, &[usize], usize) -> Result<Option<ArrayRef>>,
) -> Result<Option<ArrayRef>> {
    let n = values.len();
    let len = (b - a + 1) as usize; // w - 1, w or w + 1
    if mp > len {
        // `neither` holds w - 1 rows: never enough values.
        return Ok(Some(arrow_array::new_null_array(out_type, n)));
    }
    if len == 0 {
        return Ok(None);
    }
    let segs = bounds.windows(2).map(|s| (s[0], s[1])).filter(|s| s.1 > s.0);
    // Centred with every segment no longer than b rows (a window far wider
    // than its keys): every row is cut by its segment's end, none reads
    // the trailing windows.
    let full = match b > 0 && n > 0 && segs.clone().all(|(lo, hi)| hi - lo <= b as usize) {
        true => None,
        false => match trailing(values, bounds, len)? {
            Some(f) if b == 0 || n == 0 => return Ok(Some(f)),
            Some(f) => Some(f),
            None => return Ok(None),
        },
    };
    // The result is runs of rows `(part, first, rows)` of `full` (part 0)
    // and `more` (part 1), laid end to end.
    let (more, runs): (ArrayRef, Vec<Run>) = match b {
        b if b < 0 => {
            // left / neither, not centred: a segment's row j is full[j - 1],
            // its first row's window is empty (what a window of one null
            // gives).
            let empty = if mp > 0 {
                arrow_array::new_null_array(out_type, 1)
            } else {
                let Some(e) = trailing(&arrow_array::new_null_array(values.data_type(), 1), &[0, 1], 1)? else { return Ok(None) };
                e
            };
            let runs = segs.flat_map(|(lo, hi)| [(1, 0, 1), (0, lo, hi - lo - 1)]).collect();
            (empty, runs)
        }
        b => {
            // Centred: a segment's row j is full[j + b] while j + b is in
            // it. Its rows j from m on are cut by its end: rows
            // [max(j + a, 0), end), the segment's rows from t0 on. Those run
            // reversed (`tail`, one segment per segment), where each is a
            // prefix, so a trailing window of `len` rows (never shorter):
            // no padding, so a window far wider than its key costs the key's
            // rows, not the window's. `by_position` (ties go by position,
            // which reversing would flip): the rows from t0 on followed by
            // b nulls, where row j's window ends at j + b.
            let b = b as usize;
            let (mut take, mut tail_bounds, mut runs, mut at) = (Vec::new(), vec![0], Vec::new(), Vec::new());
            for (lo, hi) in segs {
                let nk = hi - lo;
                let m = nk.saturating_sub(b);
                let t0 = (m as isize + a).max(0) as usize;
                runs.extend([(0, lo + b, m), (1, at.len(), nk - m)]);
                let base = take.len();
                if by_position {
                    take.extend((lo + t0..hi).map(|r| Some(r as u32)));
                    take.extend(std::iter::repeat_n(None, b));
                    at.extend((m..nk).map(|j| (base + j + b - t0) as u32));
                } else {
                    take.extend((lo + t0..hi).rev().map(|r| Some(r as u32)));
                    // rows [s, nk) are the first nk - s of the reversed tail
                    at.extend((m..nk).map(|j| (base + nk - (j as isize + a).max(0) as usize - 1) as u32));
                }
                tail_bounds.push(take.len());
            }
            let err = |e: arrow_schema::ArrowError| Error::Invalid(e.to_string());
            let tail_in = arrow_select::take::take(values, &UInt32Array::from(take), None).map_err(err)?;
            let Some(tail) = trailing(tail_in.as_ref(), &tail_bounds, len)? else { return Ok(None) };
            // the cut rows in segment order, so the result's indices ascend
            // within each segment
            (arrow_select::take::take(tail.as_ref(), &UInt32Array::from(at), None).map_err(err)?, runs)
        }
    };
    let full = full.unwrap_or_else(|| more.slice(0, 0));
    Ok(Some(assemble(&[full.as_ref(), more.as_ref()], &runs)?))
}

/// A run of `rows` rows of part `part` from row `first`.
type Run = (usize, usize, usize);

/// The runs laid end to end: a concatenation of slices where they are few
/// (one column: two runs), else one gather (keys: runs per key).
fn assemble(parts: &[&dyn Array], runs: &[Run]) -> Result<ArrayRef> {
    let err = |e: arrow_schema::ArrowError| Error::Invalid(e.to_string());
    let runs: Vec<Run> = runs.iter().copied().filter(|r| r.2 > 0).collect();
    if runs.len() <= 16 {
        let slices: Vec<ArrayRef> = runs.iter().map(|&(p, f, r)| parts[p].slice(f, r)).collect();
        let refs: Vec<&dyn Array> = slices.iter().map(|s| s.as_ref()).collect();
        return match refs.is_empty() {
            true => Ok(parts[0].slice(0, 0)),
            false => arrow_select::concat::concat(&refs).map_err(err),
        };
    }
    let base: Vec<usize> = parts.iter().scan(0, |at, p| Some(std::mem::replace(at, *at + p.len()))).collect();
    let idx: Vec<u32> = runs.iter().flat_map(|&(p, f, r)| (base[p] + f) as u32..(base[p] + f + r) as u32).collect();
    let all = arrow_select::concat::concat(parts).map_err(err)?;
    arrow_select::take::take(all.as_ref(), &UInt32Array::from(idx), None).map_err(err)
}

/// argmax / argmin positions of [`shaped_segments`] over one column
/// (`by_position`), all counted from the column's start: the rows cut by
/// the end ran over the rows from `t0` on, so theirs count from there.
pub(crate) fn positions_from_start(out: ArrayRef, (a, b): (isize, isize)) -> Result<ArrayRef> {
    let n = out.len();
    let m = n.saturating_sub(b.max(0) as usize);
    let t0 = (m as isize + a).max(0) as usize;
    if b <= 0 || t0 == 0 {
        return Ok(out);
    }
    let cat = |parts: &[&dyn Array]| arrow_select::concat::concat(parts).map_err(|e| Error::Invalid(e.to_string()));
    cat(&[out.slice(0, m).as_ref(), shift_indices(out.slice(m, n - m).as_ref(), -(t0 as i64)).as_ref()])
}

/// argmax / argmin positions counted from row `by` of the column: rows.
fn shift_indices(a: &dyn Array, by: i64) -> ArrayRef {
    let a = a.as_any().downcast_ref::<PrimitiveArray<Int64Type>>().expect("arg* gives int64");
    let vals: Vec<i64> = a.values().iter().map(|&p| p - by).collect();
    Arc::new(PrimitiveArray::<Int64Type>::new(ScalarBuffer::from(vals), a.nulls().cloned()))
}

/// Rolling over arbitrary monotone frames with one FIFO aggregator.
pub(crate) fn rolling_frames_dyn(
    values: &dyn Array,
    frame: &Frame,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
    step: usize,
) -> Result<ArrayRef> {
    let dtype = DType::of(values.data_type())?;
    // Computed on the wide dtype (`DType::wide`), the result narrowed back.
    let wide = crate::engine::widen(values)?;
    let values = wide.as_deref().unwrap_or(values);
    let out = crate::with_wide_dtype!(dtype.wide(), |T| {
        let col = <T as FromArrow>::column(values)?;
        crate::with_op!(agg, T, |Op| rolling_frames_op::<Op>(&col, frame, min_periods.unwrap_or(0), algo, step))
    })?;
    Ok(crate::engine::narrow(out, &crate::engine::out_type(agg, dtype)))
}

fn rolling_frames_op<M>(col: &Column<M::In>, frame: &Frame, min_periods: usize, algo: Algorithm, step: usize) -> Result<ArrayRef>
where
    M: AggOp,
    M::Out: ToArrow,
{
    let algo = algo.resolve::<M>();
    algo.check::<M>()?;
    // A per-row hot loop: instantiated per algorithm, as `rolling`'s.
    crate::with_fifo!(algo, M, rolling_frames(col, frame, min_periods, step))
}

/// Row `i` (every `step`-th) aggregates its frame's rows `[s, e)`: insert
/// up to `e`, evict below `s`. A frame that starts past everything held
/// (non-overlapping windows under a long `step`) drops the content and
/// jumps, so the rows between windows are never inserted.
pub(crate) fn rolling_frames<M, A>(col: &Column<M::In>, frame: &Frame, min_periods: usize, step: usize) -> Result<ArrayRef>
where
    M: AggOp,
    M::Out: ToArrow,
    A: FifoAggregator<M> + New,
{
    let n = col.len();
    let cap = match *frame {
        Frame::Rows { a, b } | Frame::RowsIn { a, b, .. } => crate::fifo::capacity_hint(((b - a + 1).max(1) as usize).min(n + 1)),
        Frame::Time { .. } => 64,
    };
    let mut agg = A::new_with_capacity(cap)?;
    let mut out = OutBuilder::<M::Out>::with_capacity(n.div_ceil(step));
    let (mut lo, mut hi, mut valid) = (0usize, 0usize, 0usize);
    let mut i = 0;
    while i < n {
        let (s, e) = frame.bounds(i, n, lo, hi);
        if s >= hi && lo < hi {
            while lo < hi {
                agg.evict();
                lo += 1;
            }
            valid = 0;
        }
        if lo == hi {
            (lo, hi) = (s, s);
        }
        while hi < e {
            valid += col.is_valid(hi) as usize;
            agg.insert(col.lift::<M>(hi, hi as i64).unwrap_or_else(M::identity));
            hi += 1;
        }
        while lo < s {
            agg.evict();
            valid -= col.is_valid(lo) as usize;
            lo += 1;
        }
        let enough = min_periods == 0 || valid >= min_periods;
        out.push(if !enough {
            None
        } else if lo == hi {
            M::lower(&M::identity())
        } else {
            M::lower(&agg.query())
        });
        i += step;
    }
    Ok(out.finish())
}
