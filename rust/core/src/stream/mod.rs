//! The stream spine: every continuous query, over count, time or session
//! windows, keyed or not, in order or out of order, runs through one
//! batch-level [`Stream`].
//!
//! * [`spec`]: what a stream computes ([`StreamSpec`]), every argument
//!   check, and which queries share an operator (a *group*).
//! * [`op`]: [`op::WindowOp`], the state of one partition (the whole stream
//!   or one key), implemented once per window kind: [`count`] (count
//!   windows over Pairs / Panes / Cutty partials), [`time`] (time windows,
//!   rows in order), [`late`] (time windows, rows out of order, general
//!   aggregators), [`session`] (session windows, either order).
//! * [`driver`]: runs one group's operator over the stream's partitions.
//! * This module: the spine. It owns what is the stream's and not a
//!   group's: the key index, the watermark, the late-row decision, the row
//!   counts and end of stream. [`checkpoint`] saves and restores it.
//!
//! Dispatch: building a stream picks, per group, one type monomorphised per
//! (operation, dtype) and boxes it; a push is one virtual call per group,
//! then static calls per partition (docs/DESIGN.md §2).
//!
//! The watermark (out-of-order streams, `lateness`): the largest event time
//! seen over every key, minus the lateness, as Spark Structured Streaming's
//! `withWatermark`. Like Spark's, it moves once per batch: a batch's rows are
//! judged late against the watermark the batch found, and after the batch
//! every window ending at or before the new watermark is emitted. A row is
//! late when a query's last window that could hold it ends at or before the
//! watermark; late rows are aggregated by no query and come back from
//! [`Stream::take_late`], so rows in = rows aggregated + rows late.

pub mod checkpoint;
pub mod count;
pub(crate) mod driver;
pub mod late;
pub mod op;
pub mod session;
pub mod spec;
pub mod time;

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array};
use arrow_schema::DataType;

use crate::engine::{DType, FromArrow, ToArrow};
use crate::fifo::AnyFifo;
use crate::general::LateAlgorithm;
use crate::keys::{partition, KeyIndex, Partition};
use crate::monoid::AggOp;
use op::Saved;
use crate::{invalid, Error, Result};
use count::{CountPlan, CountSpec, SharedWindow};
use driver::{Driver, GroupBatch, GroupOp};
pub use driver::Windows;
use late::{LatePlan, LateWindow};
use session::{SessionPlan, SessionSpec, SessionWindow};
pub use spec::{Kind, QuerySpec, StreamSpec, Window};
use spec::Algo;
use time::{TimePlan, TimeSpec, TimeWindow};

/// One batch: the value column, the event-time column (time and session
/// windows, non-null; any integer time unit), the key column (keyed
/// streams) and, per query, the argmax / argmin argument column (or none).
pub struct Batch<'a> {
    pub values: &'a dyn Array,
    pub time: Option<&'a dyn Array>,
    pub keys: Option<&'a dyn Array>,
    pub args: Vec<Option<&'a [i64]>>,
}

impl<'a> Batch<'a> {
    pub fn new(values: &'a dyn Array) -> Self {
        Batch { values, time: None, keys: None, args: Vec::new() }
    }
}

/// One query's windows from a push or flush: the key of each window (keyed
/// streams), bounds (row positions for count windows, times otherwise),
/// values.
#[derive(Debug)]
pub struct QueryWindows {
    pub keys: Option<ArrayRef>,
    pub start: Vec<i64>,
    pub end: Vec<i64>,
    pub values: ArrayRef,
}

/// Late rows: key (keyed streams), event time and value, in arrival order.
pub struct LateRows {
    pub keys: Option<ArrayRef>,
    pub ts: ArrayRef,
    pub values: ArrayRef,
}

/// Rows pushed so far: `rows_in == on_time + late`, always.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub rows_in: u64,
    pub on_time: u64,
    pub late: u64,
}

/// A running stream, behind one virtual call per batch.
pub trait Stream: Send {
    /// The windows this batch completed, one entry per query in spec order.
    fn push(&mut self, batch: &Batch<'_>) -> Result<Vec<QueryWindows>>;
    /// End of stream: every window still holding a row (count windows: the
    /// tail window, cut at the rows seen). Pushing afterwards is an error.
    fn flush(&mut self) -> Result<Vec<QueryWindows>>;
    /// The late rows since the last call.
    fn take_late(&mut self) -> LateRows;
    fn counts(&self) -> Counts;
    /// Out-of-order streams: the watermark; `None` before the first row.
    fn watermark(&self) -> Option<i64>;
    /// Distinct keys seen (keyed streams).
    fn num_keys(&self) -> usize;
    /// Number of operators the queries run on (groups sharing a plan).
    fn groups(&self) -> usize;
    /// The output type of query `q`'s values.
    fn out_type(&self, q: usize) -> DataType;
    /// A checkpoint: [`restore`] with the same spec gives this stream back.
    fn save(&self) -> Vec<u8>;
}

/// A new stream of `spec`.
pub fn build(spec: &StreamSpec) -> Result<Box<dyn Stream>> {
    Ok(Box::new(Spine::new(spec)?))
}

/// The stream a [`Stream::save`] of the same spec wrote.
pub fn restore(spec: &StreamSpec, bytes: &[u8]) -> Result<Box<dyn Stream>> {
    let mut s = Spine::new(spec)?;
    checkpoint::restore(&mut s, bytes)?;
    Ok(Box::new(s))
}

struct Group {
    queries: Vec<usize>,
    op: Box<dyn GroupOp>,
}

pub(crate) struct Spine {
    spec: StreamSpec,
    groups: Vec<Group>,
    index: KeyIndex,
    slot: Vec<u32>,
    max_ts: Option<i64>,
    counts: Counts,
    flushed: bool,
}

impl Spine {
    fn new(spec: &StreamSpec) -> Result<Spine> {
        spec.check()?;
        let algo = spec.algo()?;
        let groups = spec
            .groups()?
            .into_iter()
            .enumerate()
            .map(|(i, queries)| {
                let op = build_group(spec, &queries, algo, i == 0)?;
                Ok(Group { queries, op })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Spine {
            spec: spec.clone(),
            groups,
            index: KeyIndex::new(),
            slot: Vec::new(),
            max_ts: None,
            counts: Counts::default(),
            flushed: false,
        })
    }

    fn wm(&self) -> Option<i64> {
        let l = self.spec.lateness?;
        self.max_ts.map(|m| m.saturating_sub(l))
    }

    /// Per-group results to per-query results in spec order.
    fn gather_out(&self, per_group: Vec<Vec<Windows>>) -> Vec<QueryWindows> {
        let mut out: Vec<Option<QueryWindows>> = (0..self.spec.queries.len()).map(|_| None).collect();
        for (g, wins) in self.groups.iter().zip(per_group) {
            for (&q, w) in g.queries.iter().zip(wins) {
                let keys = self.spec.keyed.then(|| self.index.take(&w.keys));
                // Computed on the wide dtype (`DType::wide`): back to the
                // type the operation gives over the stream's dtype.
                let values = crate::engine::narrow(w.values, &self.out_type(q));
                out[q] = Some(QueryWindows { keys, start: w.start, end: w.end, values });
            }
        }
        out.into_iter().map(|w| w.expect("every query is in a group")).collect()
    }
}

/// The rows of `sel` (input row numbers, in order) grouped by key id.
fn partition_rows(ids: Option<&[u32]>, sel: &[u32], slot: &mut Vec<u32>) -> Partition {
    match ids {
        Some(ids) => {
            let sub: Vec<u32> = sel.iter().map(|&i| ids[i as usize]).collect();
            let mut p = partition(&sub, slot);
            for x in p.perm.iter_mut() {
                *x = sel[*x as usize];
            }
            p
        }
        None => Partition { perm: sel.to_vec(), bounds: vec![0, sel.len()], seg_key: vec![0] },
    }
}

impl Stream for Spine {
    fn push(&mut self, b: &Batch<'_>) -> Result<Vec<QueryWindows>> {
        if self.flushed {
            return invalid!("this stream was flushed (end of stream); create a new one to push more rows");
        }
        let n = b.values.len();
        let dt = DType::of(b.values.data_type())?;
        if dt != self.spec.dtype {
            return Err(Error::Type(format!(
                "this stream's value column is {}, got a {} batch",
                self.spec.dtype.name(),
                dt.name()
            )));
        }
        let ts = match (self.spec.timed(), b.time) {
            (true, Some(t)) => Some(crate::engine::event_times(t, n)?),
            (true, None) => return invalid!("time and session windows need a time column"),
            (false, _) => None,
        };
        if !b.args.is_empty() && b.args.len() != self.spec.queries.len() {
            return invalid!("args has {} entries for {} queries", b.args.len(), self.spec.queries.len());
        }
        for a in b.args.iter().flatten() {
            if a.len() != n {
                return invalid!("argument column has {} rows, value column {n}", a.len());
            }
        }
        let ids = match (self.spec.keyed, b.keys) {
            (true, Some(k)) => {
                if k.len() != n {
                    return invalid!("key column has {} rows, value column {n}", k.len());
                }
                Some(self.index.ids(k)?)
            }
            (true, None) => return invalid!("a keyed stream needs a key column"),
            (false, _) => None,
        };
        // Late rows: judged against the watermark the batch found.
        let wm_before = self.wm();
        let mut late = Vec::new();
        if let (Some(wm), Some(ts)) = (wm_before, ts) {
            late.extend((0..n as u32).filter(|&i| self.spec.is_late(ts[i as usize], wm)));
        }
        let part = if ids.is_some() || !late.is_empty() {
            let mut on_time = vec![true; n];
            for &i in &late {
                on_time[i as usize] = false;
            }
            let sel: Vec<u32> = (0..n as u32).filter(|&i| on_time[i as usize]).collect();
            Some(partition_rows(ids.as_deref(), &sel, &mut self.slot))
        } else {
            None
        };
        // The largest time so far, and the watermark after this batch.
        let max_ts = match (self.spec.lateness, ts) {
            (Some(_), Some(ts)) => ts.iter().copied().max().into_iter().chain(self.max_ts).max(),
            _ => self.max_ts,
        };
        let wm_after = self.spec.lateness.and_then(|l| max_ts.map(|m| m.saturating_sub(l)));
        // The groups run on the wide dtype (`DType::wide`): one conversion
        // per batch for int32 / float32 values, none otherwise.
        let wide = crate::engine::widen(b.values)?;
        let gb = GroupBatch {
            values: wide.as_deref().unwrap_or(b.values),
            ts,
            args: None,
            part: part.as_ref(),
            ids: ids.as_deref(),
            late: &late,
            keys: self.index.len(),
            wm_before,
            wm_after,
        };
        // Check every group's order rule before any group changes.
        for g in &self.groups {
            if let Some((row, key, t, prev)) = g.op.check(&gb)? {
                let k = self.spec.keyed.then(|| self.index.describe(key));
                return Err(crate::engine::time_order_error(row, k, t, prev));
            }
        }
        let mut per_group = Vec::with_capacity(self.groups.len());
        for g in &mut self.groups {
            let args = b.args.get(g.queries[0]).copied().flatten();
            let gb = GroupBatch { args, ..gb };
            per_group.push(g.op.push(&gb)?);
        }
        self.max_ts = max_ts;
        self.counts.rows_in += n as u64;
        self.counts.late += late.len() as u64;
        self.counts.on_time += (n - late.len()) as u64;
        Ok(self.gather_out(per_group))
    }

    fn flush(&mut self) -> Result<Vec<QueryWindows>> {
        let per_group = if self.flushed {
            self.groups.iter().map(|g| empty_windows(g)).collect()
        } else {
            self.groups.iter_mut().map(|g| g.op.flush()).collect()
        };
        self.flushed = true;
        Ok(self.gather_out(per_group))
    }

    fn take_late(&mut self) -> LateRows {
        let l = self.groups[0].op.take_late();
        LateRows {
            keys: self.spec.keyed.then(|| self.index.take(&l.keys)),
            ts: Arc::new(Int64Array::from(l.ts)),
            values: crate::engine::narrow(l.values, &self.spec.dtype.arrow_type()),
        }
    }

    fn counts(&self) -> Counts {
        self.counts
    }

    fn watermark(&self) -> Option<i64> {
        self.wm()
    }

    fn num_keys(&self) -> usize {
        self.index.len()
    }

    fn groups(&self) -> usize {
        self.groups.len()
    }

    fn out_type(&self, q: usize) -> DataType {
        crate::engine::out_type(self.spec.queries[q].agg, self.spec.dtype)
    }

    fn save(&self) -> Vec<u8> {
        checkpoint::save(self)
    }
}

fn empty_windows(g: &Group) -> Vec<Windows> {
    let v = arrow_array::new_empty_array(&g.op.out_type());
    g.queries.iter().map(|_| Windows { keys: Vec::new(), start: Vec::new(), end: Vec::new(), values: v.clone() }).collect()
}

/// Number of distinct window sizes (`auto` picks a multi-query structure
/// for several).
fn distinct<T: Ord>(it: impl Iterator<Item = T>) -> usize {
    let mut v: Vec<T> = it.collect();
    v.sort_unstable();
    v.dedup();
    v.len()
}

fn build_group(spec: &StreamSpec, queries: &[usize], algo: Algo, first: bool) -> Result<Box<dyn GroupOp>> {
    let qs: Vec<&QuerySpec> = queries.iter().map(|&i| &spec.queries[i]).collect();
    let agg = qs[0].agg;
    let keeps_late = first && spec.lateness.is_some();
    // Built for the wide dtype (`DType::wide`): `push` widens each batch.
    crate::with_wide_dtype!(spec.dtype.wide(), |T| crate::with_op!(agg, T, |Op| group_op::<Op>(spec, &qs, algo, keeps_late)))
}

fn group_op<M>(spec: &StreamSpec, qs: &[&QuerySpec], algo: Algo, keeps_late: bool) -> Result<Box<dyn GroupOp>>
where
    M: Saved,
    M::In: FromArrow + ToArrow + crate::codec::Codec + Send,
    M::Out: ToArrow,
{
    let keyed = spec.keyed;
    match (qs[0].window.kind(), algo) {
        (Kind::Count, Algo::Fifo(a)) => {
            let specs: Vec<CountSpec> = qs
                .iter()
                .map(|q| match q.window {
                    Window::Count { range, slide } => CountSpec { agg: q.agg, range, slide, min_periods: q.min_periods },
                    _ => unreachable!("a group has one window kind"),
                })
                .collect();
            let a = fifo_algo::<M>(a, keyed, distinct(specs.iter().map(|s| s.range)));
            let proto = SharedWindow::<M, AnyFifo<M>>::with_agg(CountPlan::new(&specs, spec.slicing)?, AnyFifo::new(a, 1)?)?;
            Ok(Box::new(Driver::new(proto, keyed, keeps_late)?))
        }
        (Kind::Time, algo) => {
            let specs: Vec<TimeSpec> = qs
                .iter()
                .map(|q| match q.window {
                    Window::Time { range, slide } => TimeSpec { agg: q.agg, range, slide, min_periods: q.min_periods },
                    _ => unreachable!("a group has one window kind"),
                })
                .collect();
            match algo {
                Algo::Fifo(a) => {
                    let a = fifo_algo::<M>(a, keyed, distinct(specs.iter().map(|s| s.range)));
                    let proto = TimeWindow::<M, AnyFifo<M>>::with_agg(TimePlan::new(&specs)?, AnyFifo::new(a, 1)?)?;
                    Ok(Box::new(Driver::new(proto, keyed, keeps_late)?))
                }
                Algo::Late(a) => {
                    let mut plan = LatePlan::new(&specs, a.resolve::<M>())?;
                    // Per key, `auto` keeps small windows' slices in a plain
                    // vector (recalc, O(window) per emitted window): CBiX's
                    // checkpoint blocks and tree cost ~3 KB a key for a
                    // window of 10 slices, recalc about its live slices.
                    if keyed && a == LateAlgorithm::Auto && plan.plan.w_size <= KEYED_RECALC_SLICES {
                        Arc::get_mut(&mut plan).expect("just built").algo = LateAlgorithm::Recalc;
                    }
                    plan.algo.check::<M>()?;
                    let proto = LateWindow::<M>::new(plan);
                    Ok(Box::new(Driver::new(proto, keyed, keeps_late)?))
                }
            }
        }
        (Kind::Session, algo) => {
            let specs: Vec<SessionSpec> = qs
                .iter()
                .map(|q| match q.window {
                    Window::Session { gap } => SessionSpec { agg: q.agg, gap, min_periods: q.min_periods },
                    _ => unreachable!("a group has one window kind"),
                })
                .collect();
            let proto = SessionWindow::<M>::new(SessionPlan::new(&specs, matches!(algo, Algo::Late(_))));
            Ok(Box::new(Driver::new(proto, keyed, keeps_late)?))
        }
        (Kind::Count, Algo::Late(_)) => invalid!("count windows are never out of order"),
    }
}

/// Out-of-order keyed streams: `auto` runs recalc up to this many slices a
/// window.
const KEYED_RECALC_SLICES: usize = 32;

/// What `auto` means for a FIFO window: several window sizes over one
/// structure pick a multi-query one. Per key, one window of a sum, count or
/// mean runs Subtract-on-Evict: its single ring of partials is the smallest
/// state (TwoStacks keeps evicted slots until a flip plus a suffix aggregate
/// per front partial), which is what a stream of many keys pays for; these
/// inverses are exact (integers) or compensated (float sums).
pub fn fifo_algo<M: AggOp>(algo: crate::fifo::Algorithm, keyed: bool, ranges: usize) -> crate::fifo::Algorithm {
    use crate::fifo::Algorithm;
    let small = keyed && ranges == 1 && M::INVERTIBLE && matches!(M::NAME, "sum" | "count" | "mean");
    if algo == Algorithm::Auto && small {
        Algorithm::Soe
    } else {
        algo.resolve_for::<M>(ranges)
    }
}
