//! Count windows over a stream: `range` r and `slide` s in rows. After every
//! s-th row, the aggregate of the last r rows (fewer at the start).
//!
//! Partial aggregation is Pairs (FlatFIT paper §2.1, after Krishnamurthy et
//! al.): with `f2 = r mod s` and `f1 = s - f2`, each slide is cut into two
//! fragments of f1 and f2 rows (one of s rows when f2 = 0), so every window
//! starts and ends on a fragment edge and is the combine of the newest
//! `2*floor(r/s) + 1` fragments (`r/s` when f2 = 0). Rows are folded into the
//! open fragment; only fragments reach the final aggregator.
//!
//! End of stream (`flush`): the rows after the last slide edge are emitted in
//! the window the next slide would close, cut to the rows that arrived
//! (`window_end` = rows seen), so no row is left out of every window (rows
//! in the gaps of a slide > range belong to no window by definition).

use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use crate::codec::Codec;
use crate::engine::{AggKind, DType, FromArrow, OutBuilder, ToArrow};
use crate::fifo::{Algorithm, FifoAggregator, New};
use crate::monoid::AggOp;
use crate::{invalid, Error, Result};

/// A count-window query.
#[derive(Clone, Debug, PartialEq)]
pub struct CountSpec {
    pub agg: AggKind,
    pub range: u64,
    pub slide: u64,
    /// 0: no minimum (nulls only where the operation gives null).
    pub min_periods: u64,
}

impl CountSpec {
    pub fn check(&self) -> Result<()> {
        if self.range == 0 {
            return invalid!("range must be a positive number of rows, got 0");
        }
        if self.slide == 0 {
            return invalid!("slide must be a positive number of rows, got 0");
        }
        if self.min_periods > self.range {
            return invalid!("min_periods ({}) must be <= range ({})", self.min_periods, self.range);
        }
        Ok(())
    }

    /// Fragments per window under Pairs.
    pub fn partials_per_window(&self) -> usize {
        let q = (self.range / self.slide) as usize;
        if self.range % self.slide == 0 { q } else { 2 * q + 1 }
    }
}

/// The windows one push (or flush) completed.
pub struct WindowBatch {
    /// Row positions `[start, end)` counted from 0.
    pub start: Vec<i64>,
    pub end: Vec<i64>,
    pub values: ArrayRef,
}

/// One query's state, behind one virtual call per batch.
pub trait CountWindowOp: Send {
    /// `args`: for argmax/argmin with an argument column, that column's values
    /// (as i64) for each row of `values`; otherwise the row position is used.
    fn push(&mut self, values: &dyn Array, args: Option<&[i64]>) -> Result<WindowBatch>;
    fn flush(&mut self) -> Result<WindowBatch>;
    fn save(&self, out: &mut Vec<u8>);
    fn out_type(&self) -> DataType;
    fn rows_seen(&self) -> u64;
}

/// Build the state of one query over a column of `dtype`.
pub fn build(spec: &CountSpec, dtype: DType, algo: Algorithm) -> Result<Box<dyn CountWindowOp>> {
    spec.check()?;
    crate::with_dtype!(dtype, |T| crate::with_op!(spec.agg, T, |Op| build_op::<Op>(spec, algo, None)))
}

/// Restore what [`CountWindowOp::save`] wrote.
pub fn load(spec: &CountSpec, dtype: DType, algo: Algorithm, bytes: &mut &[u8]) -> Result<Box<dyn CountWindowOp>> {
    spec.check()?;
    crate::with_dtype!(dtype, |T| crate::with_op!(spec.agg, T, |Op| build_op::<Op>(spec, algo, Some(bytes))))
}

fn build_op<M>(spec: &CountSpec, algo: Algorithm, saved: Option<&mut &[u8]>) -> Result<Box<dyn CountWindowOp>>
where
    M: AggOp,
    M::In: FromArrow,
    M::Out: ToArrow,
{
    let algo = algo.resolve::<M>();
    algo.check::<M>()?;
    crate::with_fifo!(algo, M, new_window(spec, saved))
}

fn new_window<M, A>(spec: &CountSpec, saved: Option<&mut &[u8]>) -> Result<Box<dyn CountWindowOp>>
where
    M: AggOp,
    M::In: FromArrow,
    M::Out: ToArrow,
    A: FifoAggregator<M> + New + 'static,
{
    let mut w = CountWindow::<M, A>::new(spec.clone())?;
    if let Some(bytes) = saved {
        w.restore(bytes)?;
    }
    Ok(Box::new(w))
}

pub struct CountWindow<M: AggOp, A: FifoAggregator<M>> {
    spec: CountSpec,
    /// Fragment lengths within a slide: [f1, f2] (f2 = 0: one fragment).
    frag: [u64; 2],
    agg: A,
    /// Non-null rows per fragment in the window, for min_periods.
    counts: std::collections::VecDeque<u64>,
    count_sum: u64,
    /// The open fragment.
    cur: M::Agg,
    cur_count: u64,
    /// Rows seen so far.
    pos: u64,
    flushed: bool,
}

impl<M: AggOp, A: FifoAggregator<M> + New> CountWindow<M, A> {
    pub fn new(spec: CountSpec) -> Result<Self> {
        let f2 = spec.range % spec.slide;
        let frag = if f2 == 0 { [spec.slide, 0] } else { [spec.slide - f2, f2] };
        let cap = spec.partials_per_window() + 1;
        Ok(CountWindow {
            agg: A::new_with_capacity(cap)?,
            spec,
            frag,
            counts: Default::default(),
            count_sum: 0,
            cur: M::identity(),
            cur_count: 0,
            pos: 0,
            flushed: false,
        })
    }
}

impl<M: AggOp, A: FifoAggregator<M>> CountWindow<M, A>
where
    M::Out: ToArrow,
{
    /// Row offset within the slide where the open fragment ends.
    #[inline]
    fn fragment_end(&self, in_slide: u64) -> u64 {
        if self.frag[1] == 0 || in_slide >= self.frag[0] { self.spec.slide } else { self.frag[0] }
    }

    fn close_fragment(&mut self) {
        let p = std::mem::replace(&mut self.cur, M::identity());
        self.agg.insert(p);
        self.counts.push_back(self.cur_count);
        self.count_sum += self.cur_count;
        self.cur_count = 0;
    }

    fn emit(&mut self, end: u64, out: &mut OutBuilder<M::Out>, starts: &mut Vec<i64>, ends: &mut Vec<i64>, window_end: u64) {
        let keep = self.spec.partials_per_window();
        while self.agg.len() > keep {
            self.agg.evict();
            self.count_sum -= self.counts.pop_front().unwrap_or(0);
        }
        let a = self.agg.query();
        let ok = self.spec.min_periods == 0 || self.count_sum >= self.spec.min_periods;
        out.push(if ok { M::lower(&a) } else { None });
        starts.push(end.saturating_sub(self.spec.range) as i64);
        ends.push(window_end as i64);
    }

    fn restore(&mut self, inp: &mut &[u8]) -> Result<()> {
        self.pos = u64::decode(inp)?;
        self.flushed = bool::decode(inp)?;
        self.cur = M::Agg::decode(inp)?;
        self.cur_count = u64::decode(inp)?;
        let counts = Vec::<u64>::decode(inp)?;
        let parts = Vec::<M::Agg>::decode(inp)?;
        if counts.len() != parts.len() {
            return Err(Error::Corrupt("partials and counts differ in length".into()));
        }
        self.count_sum = counts.iter().sum();
        self.counts = counts.into();
        self.agg.bulk_insert(&parts);
        Ok(())
    }
}

impl<M, A> CountWindowOp for CountWindow<M, A>
where
    M: AggOp,
    M::In: FromArrow,
    M::Out: ToArrow,
    A: FifoAggregator<M>,
{
    fn push(&mut self, values: &dyn Array, args: Option<&[i64]>) -> Result<WindowBatch> {
        if self.flushed {
            return invalid!("this stream was flushed (end of stream); create a new one to push more rows");
        }
        let col = <M::In as FromArrow>::column(values)?;
        if let Some(a) = args {
            if a.len() != col.len() {
                return invalid!("argument column has {} rows, value column {}", a.len(), col.len());
            }
        }
        let s = self.spec.slide;
        let n = col.len() as u64;
        let mut out = OutBuilder::<M::Out>::with_capacity((n / s + 1) as usize);
        let (mut starts, mut ends) = (Vec::new(), Vec::new());
        let mut i = 0u64;
        while i < n {
            // Fold the rows of the open fragment that this batch holds.
            let in_slide = self.pos % s;
            let fend = self.fragment_end(in_slide);
            let take = (fend - in_slide).min(n - i);
            for j in i..i + take {
                let j = j as usize;
                if col.is_valid(j) {
                    let pos = match args {
                        Some(a) => a[j],
                        None => (self.pos + (j as u64 - i)) as i64,
                    };
                    let p = M::lift(col.values[j], pos);
                    M::combine_into(&mut self.cur, &p);
                    self.cur_count += 1;
                }
            }
            i += take;
            self.pos += take;
            if in_slide + take == fend {
                self.close_fragment();
                if fend == s {
                    let end = self.pos;
                    self.emit(end, &mut out, &mut starts, &mut ends, end);
                }
            }
        }
        Ok(WindowBatch { start: starts, end: ends, values: out.finish() })
    }

    fn flush(&mut self) -> Result<WindowBatch> {
        let mut out = OutBuilder::<M::Out>::with_capacity(1);
        let (mut starts, mut ends) = (Vec::new(), Vec::new());
        let s = self.spec.slide;
        let in_slide = self.pos % s;
        if !self.flushed && in_slide != 0 {
            // Close the open fragment, and an empty second one if the slide
            // has two, so the window aligns with the next slide edge.
            let second_pending = self.frag[1] != 0 && in_slide < self.frag[0];
            self.close_fragment();
            if second_pending {
                self.close_fragment();
            }
            let end = self.pos - in_slide + s;
            let pos = self.pos;
            // With slide > range the tail may lie in the gap between windows:
            // then no window covers it, by the query's own definition.
            if end.saturating_sub(self.spec.range) < pos {
                self.emit(end, &mut out, &mut starts, &mut ends, pos);
            }
        }
        self.flushed = true;
        Ok(WindowBatch { start: starts, end: ends, values: out.finish() })
    }

    fn save(&self, out: &mut Vec<u8>) {
        self.pos.encode(out);
        self.flushed.encode(out);
        self.cur.encode(out);
        self.cur_count.encode(out);
        self.counts.iter().copied().collect::<Vec<u64>>().encode(out);
        self.agg.contents().encode(out);
    }

    fn out_type(&self) -> DataType {
        M::Out::data_type()
    }

    fn rows_seen(&self) -> u64 {
        self.pos
    }
}
