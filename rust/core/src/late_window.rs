//! Time windows over an out-of-order stream, with a watermark.
//!
//! Windows are Spark's `F.window(ts, range, slide)` exactly as in
//! [`crate::time_window`]: `[start, start + range)`, `start` a multiple of
//! `slide`, emitted only if they hold a row. Rows may arrive in any order:
//!
//! * the watermark is the largest event time seen minus `lateness`;
//! * a row at or after the watermark is on time and updates its windows;
//! * a window is emitted, final, once the watermark reaches its end (no row
//!   that is still on time can fall in it any more);
//! * a row behind the watermark is never dropped silently: it is kept and
//!   handed back by [`LateWindowOp::take_late`], so that
//!   rows in = rows on time + rows reported late;
//! * `flush` emits every remaining window that holds a row.
//!
//! Partials are the slices of the queries' shared plan ([`crate::plan`]):
//! every window starts and ends on a slice edge. The slices of each query's
//! next window live in a general aggregator ([`crate::general`]: CBiX,
//! general FlatFAT, Two-Stacks extended or recalc); on-time rows for those
//! slices are late partials that update them in place (a bulk update per
//! batch, RA Algorithm 2), slices further ahead wait in a sparse store and
//! enter the aggregator as the window slides. Emission happens at the end of
//! each batch: a window is final as soon as the watermark passes its end, so
//! emitting later changes nothing, and results do not depend on how the
//! stream is cut into batches.
//!
//! Order-sensitive operations (first, last, collect, argmax/argmin ties)
//! see the rows of a window in event-time order, ties in arrival order: each
//! slice keeps its lifted rows sorted, re-folds when a row lands inside it,
//! and the aggregator's slot is replaced (`bulk_set`) rather than folded.
//! Nulls count as rows (a window with only nulls is emitted) but not as
//! values (`min_periods`), as in `time_window`.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;

use crate::codec::Codec;
use crate::engine::{DType, FromArrow, OutBuilder, ToArrow};
use crate::general::{AnyGeneral, GeneralAggregator, LateAlgorithm};
use crate::monoid::AggOp;
use crate::plan::{SharedPlan, Slide};
use crate::time_window::{TimeSpec, TimeWindowOp};
use crate::window::WindowBatch;
use crate::{invalid, Error, Result};

/// Rows seen so far: `rows_in == on_time + late`, always.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LateCounts {
    pub rows_in: u64,
    pub on_time: u64,
    pub late: u64,
}

/// Late rows handed back: their values (the input dtype, nulls kept) and
/// event times, in arrival order.
pub struct LateRows {
    pub values: ArrayRef,
    pub ts: ArrayRef,
}

/// A [`TimeWindowOp`] over out-of-order rows, plus the rows it refused.
pub trait LateWindowOp: TimeWindowOp {
    /// The late rows since the last call.
    fn take_late(&mut self) -> LateRows;
    fn counts(&self) -> LateCounts;
    /// Largest event time seen minus lateness; `None` before the first row.
    fn watermark(&self) -> Option<i64>;
}

pub fn build_late(specs: &[TimeSpec], lateness: i64, dtype: DType, algo: LateAlgorithm) -> Result<Box<dyn LateWindowOp>> {
    make(specs, lateness, dtype, algo, None)
}

pub fn load_late(
    specs: &[TimeSpec],
    lateness: i64,
    dtype: DType,
    algo: LateAlgorithm,
    bytes: &mut &[u8],
) -> Result<Box<dyn LateWindowOp>> {
    make(specs, lateness, dtype, algo, Some(bytes))
}

fn make(
    specs: &[TimeSpec],
    lateness: i64,
    dtype: DType,
    algo: LateAlgorithm,
    saved: Option<&mut &[u8]>,
) -> Result<Box<dyn LateWindowOp>> {
    if lateness < 0 {
        return invalid!("lateness must be >= 0, got {lateness}");
    }
    for s in specs {
        if s.range <= 0 || s.slide <= 0 {
            return invalid!("time range and slide must be positive, got range={} slide={}", s.range, s.slide);
        }
    }
    let agg = crate::window::common_agg(specs.iter().map(|s| s.agg))?;
    crate::with_dtype!(dtype, |T| crate::with_op!(agg, T, |Op| build_op::<Op>(specs, lateness, algo, saved)))
}

fn build_op<M>(specs: &[TimeSpec], lateness: i64, algo: LateAlgorithm, saved: Option<&mut &[u8]>) -> Result<Box<dyn LateWindowOp>>
where
    M: AggOp,
    M::In: FromArrow + ToArrow + Codec,
    M::Out: ToArrow,
{
    let algo = algo.resolve::<M>();
    algo.check::<M>()?;
    let slides: Vec<Slide> = specs.iter().map(|s| Slide::time(s.range as u64, s.slide as u64)).collect();
    let plan = SharedPlan::build(&slides)?;
    let queries = specs
        .iter()
        .map(|_| Ok(QState { agg: AnyGeneral::new(algo, plan.w_size.max(1))?, j: None, lo: 0, hi: 0, rows: 0, valid: 0, pending: Vec::new() }))
        .collect::<Result<Vec<_>>>()?;
    let mut w = LateWindow::<M, AnyGeneral<M>> {
        specs: specs.to_vec(),
        lateness,
        plan,
        store: BTreeMap::new(),
        queries,
        max_ts: None,
        counts: LateCounts::default(),
        late_ts: Vec::new(),
        late_vals: Vec::new(),
        flushed: false,
    };
    if let Some(bytes) = saved {
        w.restore(bytes)?;
    }
    Ok(Box::new(w))
}

/// One slice of event time: rows, non-null rows, the ⊕ of its values, and
/// for order-sensitive operations its lifted values sorted by event time.
struct Slice<M: AggOp> {
    rows: u64,
    valid: u64,
    agg: M::Agg,
    items: Vec<(i64, M::Agg)>,
}

/// One query: its next window `j` (`[j*slide, j*slide + range)`), whose
/// slices `lo..hi` are in `agg`, and the window's row counts.
struct QState<M: AggOp, A> {
    agg: A,
    j: Option<i64>,
    lo: i64,
    hi: i64,
    rows: u64,
    valid: u64,
    /// Updates for `agg` gathered during a batch: (slot, delta) for
    /// commutative ops, (slot, _) to re-read for the others.
    pending: Vec<(u64, M::Agg)>,
}

pub struct LateWindow<M: AggOp, A> {
    specs: Vec<TimeSpec>,
    lateness: i64,
    plan: SharedPlan,
    store: BTreeMap<i64, Slice<M>>,
    queries: Vec<QState<M, A>>,
    max_ts: Option<i64>,
    counts: LateCounts,
    late_ts: Vec<i64>,
    late_vals: Vec<Option<M::In>>,
    flushed: bool,
}

/// Slice ids are signed (times before the epoch); aggregators take u64 ids:
/// flipping the sign bit keeps the order.
#[inline]
fn uid(id: i64) -> u64 {
    (id as u64) ^ (1 << 63)
}

type Em<O> = Vec<(OutBuilder<O>, Vec<i64>, Vec<i64>)>;

impl<M, A> LateWindow<M, A>
where
    M: AggOp,
    M::In: ToArrow + Codec,
    M::Out: ToArrow,
    A: GeneralAggregator<M>,
{
    /// The slice holding time `t`.
    fn slice_of(&self, t: i64) -> i64 {
        let c = self.plan.composite as i64;
        let e = self.plan.edges.len() as i64;
        let mut p = t.div_euclid(c);
        let off = (t - p * c) as u64;
        let mut i = self.plan.edges.partition_point(|&x| x <= off) as i64;
        if i == e {
            p += 1;
            i = 0;
        }
        p * e + i
    }

    /// Exclusive end time of slice `id`.
    fn slice_end(&self, id: i64) -> i64 {
        let e = self.plan.edges.len() as i64;
        id.div_euclid(e).saturating_mul(self.plan.composite as i64) + self.plan.edges[id.rem_euclid(e) as usize] as i64
    }

    fn watermark_at(&self) -> Option<i64> {
        self.max_ts.map(|m| m.saturating_sub(self.lateness))
    }

    fn win(&self, q: usize, j: i64) -> (i64, i64) {
        let s = &self.specs[q];
        let start = j.saturating_mul(s.slide);
        (start, start.saturating_add(s.range))
    }

    /// First window of query `q` whose end is after `t`.
    fn first_ending_after(&self, q: usize, t: i64) -> i64 {
        let s = &self.specs[q];
        (t.saturating_sub(s.range)).div_euclid(s.slide) + 1
    }

    /// Slot value of slice `id` for an aggregator.
    fn slot(&self, id: i64) -> (M::Agg, u64, u64) {
        match self.store.get(&id) {
            Some(s) => (s.agg.clone(), s.rows, s.valid),
            None => (M::identity(), 0, 0),
        }
    }

    /// Put query `q` on window `j`: slide its aggregator (evict the slices
    /// before the window, insert the new ones from the store).
    fn position(&mut self, q: usize, j: i64) {
        let (start, end) = self.win(q, j);
        let (lo, hi) = (self.slice_of(start), self.slice_of(end - 1) + 1);
        let st = &self.queries[q];
        let fresh = st.j.is_none() || lo >= st.hi;
        if fresh {
            let st = &mut self.queries[q];
            st.agg.evict_upto(u64::MAX);
            st.rows = 0;
            st.valid = 0;
            st.lo = lo;
            st.hi = lo;
        } else {
            let old_lo = st.lo;
            let mut r = (0, 0);
            for id in old_lo..lo {
                if let Some(s) = self.store.get(&id) {
                    r = (r.0 + s.rows, r.1 + s.valid);
                }
            }
            let st = &mut self.queries[q];
            st.agg.evict_upto(uid(lo));
            st.rows -= r.0;
            st.valid -= r.1;
            st.lo = lo;
        }
        let from = self.queries[q].hi;
        for id in from..hi {
            let (a, rows, valid) = self.slot(id);
            let st = &mut self.queries[q];
            st.agg.insert(uid(id), a).expect("slices are appended in order");
            st.rows += rows;
            st.valid += valid;
        }
        let st = &mut self.queries[q];
        st.hi = hi;
        st.j = Some(j);
    }

    /// Apply the batch's updates to query `q`'s aggregator.
    fn apply_pending(&mut self, q: usize) {
        let mut ups = std::mem::take(&mut self.queries[q].pending);
        if ups.is_empty() {
            return;
        }
        if M::COMMUTATIVE {
            self.queries[q].agg.bulk_insert(&ups).expect("pending slots are in the window");
        } else {
            ups.sort_unstable_by_key(|u| u.0);
            ups.dedup_by_key(|u| u.0);
            for u in ups.iter_mut() {
                let id = (u.0 ^ (1 << 63)) as i64;
                u.1 = self.store.get(&id).map_or_else(M::identity, |s| s.agg.clone());
            }
            self.queries[q].agg.bulk_set(&ups).expect("pending slots are in the window");
        }
        ups.clear();
        self.queries[q].pending = ups;
    }

    /// Emit every window of `q` ending at or before `upto` (all windows
    /// holding rows when `upto` is None), skipping runs of empty windows.
    fn emit(&mut self, q: usize, upto: Option<i64>, em: &mut Em<M::Out>) {
        let Some(mut j) = self.queries[q].j else { return };
        loop {
            let (start, end) = self.win(q, j);
            if upto.is_some_and(|wm| end > wm) {
                break;
            }
            let st = &mut self.queries[q];
            if st.rows > 0 {
                let spec = &self.specs[q];
                let a = st.agg.query();
                let ok = spec.min_periods == 0 || st.valid >= spec.min_periods;
                let (b, s, e) = &mut em[q];
                b.push(if ok { M::lower(&a) } else { None });
                s.push(start);
                e.push(end);
            }
            // The next window if it holds a row, else jump to the first
            // window that can hold the next row (runs of empty windows
            // cost nothing, as in time_window).
            let (s1, e1) = self.win(q, j + 1);
            let (lo1, hi1) = (self.slice_of(s1), self.slice_of(e1 - 1) + 1);
            let next_row = self.store.range(lo1..).next().map(|(&id, _)| id);
            j = match (next_row, upto) {
                (Some(id), _) if id < hi1 => j + 1,
                (Some(id), _) => {
                    // Never past the first window the watermark has not
                    // reached: on-time rows may still arrive for it.
                    let t = self.first_ending_after(q, self.slice_end(id - 1));
                    let open = upto.map_or(t, |wm| self.first_ending_after(q, wm));
                    t.min(open).max(j + 1)
                }
                (None, Some(wm)) => self.first_ending_after(q, wm).max(j + 1),
                (None, None) => return,
            };
            self.position(q, j);
        }
    }

    /// Fold a run of on-time rows of slice `id` into the store and into the
    /// aggregators whose next window holds the slice.
    fn add_run(&mut self, id: i64, delta: Option<M::Agg>, rows: u64, valid: u64, items: &mut Vec<(i64, M::Agg)>) {
        let slice = self.store.entry(id).or_insert_with(|| Slice { rows: 0, valid: 0, agg: M::identity(), items: Vec::new() });
        slice.rows += rows;
        slice.valid += valid;
        if !M::COMMUTATIVE {
            let mut resort = false;
            for it in items.drain(..) {
                let at = slice.items.partition_point(|x| x.0 <= it.0);
                resort |= at != slice.items.len();
                slice.items.insert(at, it);
            }
            if resort {
                slice.agg = crate::monoid::fold::<M>(&slice.items.iter().map(|x| x.1.clone()).collect::<Vec<_>>());
            } else if let Some(d) = &delta {
                M::combine_into(&mut slice.agg, d);
            }
        } else if let Some(d) = &delta {
            M::combine_into(&mut slice.agg, d);
        }
        for st in self.queries.iter_mut() {
            if st.j.is_some() && st.lo <= id && id < st.hi {
                st.rows += rows;
                st.valid += valid;
                if let Some(d) = &delta {
                    match st.pending.last_mut() {
                        Some(last) if last.0 == uid(id) => M::combine_into(&mut last.1, d),
                        _ => st.pending.push((uid(id), d.clone())),
                    }
                }
            }
        }
    }

    fn emitted(&self) -> Em<M::Out> {
        (0..self.specs.len()).map(|_| (OutBuilder::with_capacity(16), Vec::new(), Vec::new())).collect()
    }

    /// Drop slices no query needs any more.
    fn trim_store(&mut self) {
        if let Some(min_lo) = self.queries.iter().filter(|q| q.j.is_some()).map(|q| q.lo).min() {
            while let Some((&id, _)) = self.store.first_key_value() {
                if id >= min_lo {
                    break;
                }
                self.store.pop_first();
            }
        }
    }

    fn restore(&mut self, inp: &mut &[u8]) -> Result<()> {
        self.max_ts = Option::<i64>::decode(inp)?;
        self.flushed = bool::decode(inp)?;
        let c = <(u64, (u64, u64))>::decode(inp)?;
        self.counts = LateCounts { rows_in: c.0, on_time: c.1 .0, late: c.1 .1 };
        self.late_ts = Vec::<i64>::decode(inp)?;
        self.late_vals = Vec::<Option<M::In>>::decode(inp)?;
        if self.late_ts.len() != self.late_vals.len() {
            return Err(Error::Corrupt("late rows do not match".into()));
        }
        let n = usize::decode(inp)?;
        for _ in 0..n {
            let id = i64::decode(inp)?;
            let (rows, valid) = <(u64, u64)>::decode(inp)?;
            let agg = M::Agg::decode(inp)?;
            let items = Vec::<(i64, M::Agg)>::decode(inp)?;
            self.store.insert(id, Slice { rows, valid, agg, items });
        }
        let js = Vec::<Option<i64>>::decode(inp)?;
        if js.len() != self.queries.len() {
            return Err(Error::Corrupt("checkpoint does not match these queries".into()));
        }
        for (q, j) in js.into_iter().enumerate() {
            if let Some(j) = j {
                self.position(q, j);
            }
        }
        Ok(())
    }
}

fn finish<O: ToArrow>(em: Em<O>) -> Vec<WindowBatch> {
    em.into_iter().map(|(b, start, end)| WindowBatch { start, end, values: b.finish() }).collect()
}

impl<M, A> TimeWindowOp for LateWindow<M, A>
where
    M: AggOp,
    M::In: FromArrow + ToArrow + Codec,
    M::Out: ToArrow,
    A: GeneralAggregator<M>,
{
    fn push(&mut self, values: &dyn Array, ts: &dyn Array) -> Result<Vec<WindowBatch>> {
        if self.flushed {
            return invalid!("this stream was flushed (end of stream); create a new one to push more rows");
        }
        let col = <M::In as FromArrow>::column(values)?;
        let tcol = i64::column(ts)?;
        if tcol.len() != col.len() {
            return invalid!("time column has {} rows, value column {}", tcol.len(), col.len());
        }
        if let Some(n) = tcol.nulls {
            if let Some(i) = (0..tcol.len()).find(|&i| n.is_null(i)) {
                return invalid!("timestamp of row {i} is null; every row needs an event time");
            }
        }
        // Runs of consecutive on-time rows in one slice are folded first.
        let mut run: Option<(i64, i64, i64)> = None; // (id, start, end)
        let mut delta: Option<M::Agg> = None;
        let (mut rows, mut valid) = (0u64, 0u64);
        let mut items = Vec::new();
        for (i, &t) in tcol.values.iter().enumerate() {
            self.counts.rows_in += 1;
            if self.watermark_at().is_some_and(|wm| t < wm) {
                self.counts.late += 1;
                self.late_ts.push(t);
                self.late_vals.push(col.is_valid(i).then(|| col.values[i]));
                continue;
            }
            self.counts.on_time += 1;
            if self.max_ts.is_none() {
                let wm = t.saturating_sub(self.lateness);
                for q in 0..self.queries.len() {
                    let j = self.first_ending_after(q, wm);
                    self.position(q, j);
                }
            }
            self.max_ts = Some(self.max_ts.map_or(t, |m| m.max(t)));
            if !run.is_some_and(|(_, s, e)| s <= t && t < e) {
                if let Some((id, _, _)) = run {
                    self.add_run(id, delta.take(), rows, valid, &mut items);
                }
                let id = self.slice_of(t);
                run = Some((id, self.slice_end(id - 1), self.slice_end(id)));
                (rows, valid) = (0, 0);
            }
            rows += 1;
            if col.is_valid(i) {
                valid += 1;
                let p = M::lift(col.values[i], t);
                if !M::COMMUTATIVE {
                    items.push((t, p.clone()));
                }
                match &mut delta {
                    Some(d) => M::combine_into(d, &p),
                    None => delta = Some(p),
                }
            }
        }
        if let Some((id, _, _)) = run {
            self.add_run(id, delta.take(), rows, valid, &mut items);
        }
        let mut em = self.emitted();
        let wm = self.watermark_at();
        for q in 0..self.queries.len() {
            self.apply_pending(q);
            if let Some(wm) = wm {
                self.emit(q, Some(wm), &mut em);
            }
        }
        self.trim_store();
        Ok(finish(em))
    }

    fn flush(&mut self) -> Result<Vec<WindowBatch>> {
        let mut em = self.emitted();
        if !self.flushed {
            for q in 0..self.queries.len() {
                self.apply_pending(q);
                self.emit(q, None, &mut em);
            }
            self.store.clear();
        }
        self.flushed = true;
        Ok(finish(em))
    }

    fn save(&self, out: &mut Vec<u8>) {
        self.max_ts.encode(out);
        self.flushed.encode(out);
        (self.counts.rows_in, (self.counts.on_time, self.counts.late)).encode(out);
        self.late_ts.encode(out);
        self.late_vals.encode(out);
        self.store.len().encode(out);
        for (id, s) in &self.store {
            id.encode(out);
            (s.rows, s.valid).encode(out);
            s.agg.encode(out);
            s.items.encode(out);
        }
        self.queries.iter().map(|q| q.j).collect::<Vec<_>>().encode(out);
    }

    fn out_type(&self) -> DataType {
        M::Out::data_type()
    }
}

impl<M, A> LateWindowOp for LateWindow<M, A>
where
    M: AggOp,
    M::In: FromArrow + ToArrow + Codec,
    M::Out: ToArrow,
    A: GeneralAggregator<M>,
{
    fn take_late(&mut self) -> LateRows {
        let ts = std::mem::take(&mut self.late_ts);
        let vals = std::mem::take(&mut self.late_vals);
        let nulls = NullBuffer::from(vals.iter().map(|v| v.is_some()).collect::<Vec<bool>>());
        let values = M::In::to_arrow(vals.into_iter().map(|v| v.unwrap_or_else(M::In::null_value)).collect(), Some(nulls));
        LateRows { values, ts: Arc::new(Int64Array::from(ts)) }
    }

    fn counts(&self) -> LateCounts {
        self.counts
    }

    fn watermark(&self) -> Option<i64> {
        self.watermark_at()
    }
}
