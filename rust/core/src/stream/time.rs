//! Time windows over an event-time column, in non-decreasing time order.
//!
//! * Hopping windows exactly as Spark's `F.window(ts, range, slide)`:
//!   `[start, start + range)` with `start` a multiple of `slide` since the
//!   epoch; a window is emitted when time passes its end (or at `flush`), and
//!   only if it holds at least one row. Many queries share one plan
//!   ([`crate::plan`], phases `range mod slide`), partials cut at every
//!   window start and end.
//!
//! Rows out of time order are refused with the first offending row named
//! (out-of-order streams with watermarks are a separate mechanism).
//! Long gaps between rows cost nothing: when every partial in the window is
//! empty, the plan jumps to the edge before the next row.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::codec::Codec;
use crate::engine::{AggKind, Column, FromArrow, ToArrow};
use crate::fifo::{FifoAggregator, Renew};
use crate::plan::{SharedPlan, Slide};
use crate::stream::op::{Saved, Clock, first_decrease, Emit, Rows, WindowOp};
use crate::{invalid, Error, Result};

/// A time-window query; times in the timestamp column's unit.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeSpec {
    pub agg: AggKind,
    pub range: i64,
    pub slide: i64,
    pub min_periods: u64,
}

/// The specs and plan every state of the same time queries shares (one
/// `Arc` for all keys of a keyed stream).
#[derive(Debug)]
pub struct TimePlan {
    pub specs: Vec<TimeSpec>,
    pub plan: SharedPlan,
}

impl TimePlan {
    pub fn new(specs: &[TimeSpec]) -> Result<Arc<TimePlan>> {
        let slides: Vec<Slide> = specs.iter().map(|s| Slide::time(s.range as u64, s.slide as u64)).collect();
        let plan = SharedPlan::build(&slides)?;
        Ok(Arc::new(TimePlan { specs: specs.to_vec(), plan }))
    }
}

/// Counts are (rows, non-null rows): a window is emitted if it holds a row;
/// min_periods counts non-null values.
pub struct TimeWindow<M: Saved, A: FifoAggregator<M>> {
    shared: Arc<TimePlan>,
    agg: A,
    cum: VecDeque<(u64, u64)>,
    base: (u64, u64),
    total: (u64, u64),
    cur: M::Agg,
    cur_count: (u64, u64),
    period_start: i64,
    edge_i: usize,
    last_ts: Option<i64>,
    flushed: bool,
}

impl<M: Saved, A: FifoAggregator<M>> TimeWindow<M, A> {
    /// A fresh state of these queries over the empty aggregator `agg`.
    pub fn with_agg(shared: Arc<TimePlan>, agg: A) -> Result<Self> {
        Ok(TimeWindow {
            agg,
            shared,
            cum: VecDeque::new(),
            base: (0, 0),
            total: (0, 0),
            cur: M::identity(),
            cur_count: (0, 0),
            period_start: 0,
            edge_i: 0,
            last_ts: None,
            flushed: false,
        })
    }
}

impl<M: Saved, A: FifoAggregator<M>> TimeWindow<M, A>
where
    M::Out: ToArrow,
{
    pub fn plan(&self) -> &Arc<TimePlan> {
        &self.shared
    }

    /// The aggregator of the window's partials.
    pub fn agg(&self) -> &A {
        &self.agg
    }

    /// Time of the last row pushed.
    pub fn last_time(&self) -> Option<i64> {
        self.last_ts
    }

    fn next_edge(&self) -> i64 {
        self.period_start + self.shared.plan.edges[self.edge_i] as i64
    }

    fn rows_in_window(&self) -> u64 {
        self.total.0 - self.base.0
    }

    /// Position the plan on the first edge after time `t`, empty.
    fn jump_to(&mut self, t: i64) {
        let plan = &self.shared.plan;
        let c = plan.composite as i64;
        self.period_start = t.div_euclid(c) * c;
        let off = (t - self.period_start) as u64;
        self.edge_i = plan.edges.partition_point(|&e| e <= off);
        if self.edge_i == plan.edges.len() {
            self.edge_i = 0;
            self.period_start += c;
        }
        self.agg.bulk_evict(self.agg.len());
        self.cum.clear();
        self.base = self.total;
    }

    /// Close the partial at the next edge and answer the queries firing there.
    fn close_edge(&mut self, em: &mut [Emit<M::Out>]) {
        let edge = self.next_edge();
        // `self.shared` borrowed field by field, not an Arc clone: this runs
        // per edge and key.
        let shared = &self.shared;
        let plan = &shared.plan;
        let p = std::mem::replace(&mut self.cur, M::identity());
        self.agg.insert(p);
        let c = std::mem::take(&mut self.cur_count);
        self.total = (self.total.0 + c.0, self.total.1 + c.1);
        let (len, cap) = (self.cum.len(), self.cum.capacity());
        if len == cap {
            // exact for a small window (VecDeque would double)
            self.cum.reserve_exact(crate::fifo::next_capacity(cap, len + 1, plan.w_size + 1) - len);
        }
        self.cum.push_back(self.total);
        while self.agg.len() > plan.w_size {
            self.agg.evict();
            self.base = self.cum.pop_front().unwrap_or(self.base);
        }
        for fire in &plan.fires[self.edge_i] {
            let k = fire.partials.min(self.cum.len());
            let before = if k == self.cum.len() { self.base } else { self.cum[self.cum.len() - 1 - k] };
            let (rows, valid) = (self.total.0 - before.0, self.total.1 - before.1);
            if rows == 0 {
                continue; // Spark emits only windows that hold a row
            }
            let spec = &shared.specs[fire.query];
            let a = self.agg.query_last(fire.partials);
            let ok = spec.min_periods == 0 || valid >= spec.min_periods;
            let (b, st, en) = &mut em[fire.query];
            b.push(if ok { M::lower(&a) } else { None });
            st.push(edge - spec.range);
            en.push(edge);
        }
        self.edge_i += 1;
        if self.edge_i == plan.edges.len() {
            self.edge_i = 0;
            self.period_start += plan.composite as i64;
        }
    }

    /// Close every edge at or before `t`.
    fn advance_to(&mut self, t: i64, em: &mut [Emit<M::Out>]) {
        while self.next_edge() <= t {
            if self.rows_in_window() == 0 && self.cur_count.0 == 0 {
                self.jump_to(t);
                return;
            }
            self.close_edge(em);
        }
    }

    /// Push rows whose times are already checked (non-null, non-decreasing
    /// from [`Self::last_time`]); windows they close go to `em`. argmax /
    /// argmin report `args` (one per row) if given, else the row's time.
    pub fn push_checked(&mut self, col: &Column<M::In>, ts: &[i64], args: Option<&[i64]>, em: &mut [Emit<M::Out>]) -> Result<()> {
        if self.flushed {
            return invalid!("this stream was flushed (end of stream); create a new one to push more rows");
        }
        for (i, &t) in ts.iter().enumerate() {
            if self.last_ts.is_none() {
                self.jump_to(t);
            }
            self.last_ts = Some(t);
            if t >= self.next_edge() {
                self.advance_to(t, em);
            }
            self.cur_count.0 += 1;
            if let Some(p) = col.lift::<M>(i, args.map_or(t, |a| a[i])) {
                M::combine_into(&mut self.cur, &p);
                self.cur_count.1 += col.is_valid(i) as u64;
            }
        }
        Ok(())
    }

    /// End of stream: close every window that holds a row.
    pub fn flush_into(&mut self, em: &mut [Emit<M::Out>]) {
        if !self.flushed && self.last_ts.is_some() {
            while self.cur_count.0 > 0 || self.rows_in_window() > 0 {
                self.close_edge(em);
            }
        }
        self.flushed = true;
    }

    /// Restore what `save` wrote into this fresh state.
    pub fn restore(&mut self, inp: &mut &[u8]) -> Result<()> {
        self.period_start = i64::decode(inp)?;
        self.edge_i = usize::decode(inp)?;
        self.last_ts = Option::<i64>::decode(inp)?;
        self.flushed = bool::decode(inp)?;
        self.cur = M::Agg::decode(inp)?;
        self.cur_count = <(u64, u64)>::decode(inp)?;
        self.total = <(u64, u64)>::decode(inp)?;
        self.base = <(u64, u64)>::decode(inp)?;
        let cum = Vec::<(u64, u64)>::decode(inp)?;
        let parts = Vec::<M::Agg>::decode(inp)?;
        if cum.len() != parts.len() || self.edge_i >= self.shared.plan.edges.len() {
            return Err(Error::Corrupt("checkpoint does not match these queries".into()));
        }
        self.cum = cum.into();
        self.agg.bulk_insert(&parts);
        Ok(())
    }
}

impl<M, A> WindowOp for TimeWindow<M, A>
where
    M: Saved,
    M::In: FromArrow + ToArrow + Codec + Send,
    M::Out: ToArrow,
    A: FifoAggregator<M> + Renew + Send,
{
    type In = M::In;
    type Out = M::Out;
    const TIMED: bool = true;
    const WATERMARKED: bool = false;
    fn queries(&self) -> usize {
        self.shared.specs.len()
    }
    fn fresh(&self) -> Result<Self> {
        let agg = self.agg.renew(self.shared.plan.w_size + 1)?;
        TimeWindow::with_agg(Arc::clone(&self.shared), agg)
    }
    fn check(&self, ts: &[i64]) -> Option<(usize, i64)> {
        first_decrease(ts, self.last_ts)
    }
    fn push(&mut self, rows: &Rows<'_, M::In>, _clock: Clock, em: &mut [Emit<M::Out>]) -> Result<()> {
        self.push_checked(&rows.col, rows.ts.unwrap_or(&[]), rows.args, em)
    }
    fn flush(&mut self, em: &mut [Emit<M::Out>]) {
        self.flush_into(em)
    }
    fn save(&self, out: &mut Vec<u8>) {
        self.period_start.encode(out);
        self.edge_i.encode(out);
        self.last_ts.encode(out);
        self.flushed.encode(out);
        self.cur.encode(out);
        self.cur_count.encode(out);
        self.total.encode(out);
        self.base.encode(out);
        self.cum.iter().copied().collect::<Vec<_>>().encode(out);
        self.agg.contents().encode(out);
    }
    fn restore(&mut self, inp: &mut &[u8]) -> Result<()> {
        TimeWindow::restore(self, inp)
    }
}
