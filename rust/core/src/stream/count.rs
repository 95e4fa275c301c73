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
//! Many queries over one stream share one plan ([`crate::plan`], FlatFIT
//! §2.3): one set of partials cut at the union of their edges, one final
//! aggregator sized by the longest range, and `query_last(k)` per query at
//! the edges where it fires. A single query is the plan of one query, whose
//! edges are exactly its Pairs fragments.
//!
//! End of stream (`flush`): the rows after the last slide edge are emitted in
//! the window the next slide would close, cut to the rows that arrived
//! (`window_end` = rows seen), so no row is left out of every window (rows
//! in the gaps of a slide > range belong to no window by definition).

use std::collections::VecDeque;
use std::sync::Arc;

use crate::codec::Codec;
use crate::engine::{AggKind, Column, FromArrow, ToArrow};
use crate::fifo::{FifoAggregator, New, Renew};
use crate::plan::{SharedPlan, Slicing, Slide};
use crate::stream::op::{Saved, Clock, Emit, Rows, WindowOp};
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

/// Whether rows `[a, b)` are all non-null (no buffer clone: per pane).
fn all_valid(nb: &arrow_buffer::NullBuffer, a: usize, b: usize) -> bool {
    let bits = arrow_buffer::bit_chunk_iterator::UnalignedBitChunk::new(nb.buffer().as_slice(), nb.offset() + a, b - a);
    bits.count_ones() == b - a
}

/// What every state of the same queries shares: the specs and the plan
/// (with its slicing). Behind one `Arc`, so a keyed stream's per-key states
/// cost only their live partials (RA paper §5.4: one aggregator instance
/// per key).
#[derive(Debug)]
pub struct CountPlan {
    pub specs: Vec<CountSpec>,
    pub plan: SharedPlan,
    /// Whether any query has a min_periods: only then do states keep the
    /// per-partial row counts (`cum`).
    pub counts: bool,
}

impl CountPlan {
    pub fn new(specs: &[CountSpec], slicing: Slicing) -> Result<Arc<CountPlan>> {
        let slides: Vec<Slide> = specs.iter().map(|s| Slide::count(s.range, s.slide)).collect();
        let plan = SharedPlan::build_with(&slides, slicing)?;
        let counts = specs.iter().any(|s| s.min_periods > 0);
        Ok(Arc::new(CountPlan { specs: specs.to_vec(), plan, counts }))
    }
}

pub struct SharedWindow<M: Saved, A: FifoAggregator<M>> {
    shared: Arc<CountPlan>,
    agg: A,
    /// Cumulative non-null row count at the end of each partial in the
    /// window, and before the oldest one: min_periods in O(1) per query.
    /// Empty unless the plan has `counts` (8 bytes a partial saved).
    cum: VecDeque<u64>,
    cum_base: u64,
    total: u64,
    /// The open partial.
    cur: M::Agg,
    cur_count: u64,
    /// Rows seen, the row where the current plan period started, and the
    /// index of the next edge in the period.
    pos: u64,
    period_start: u64,
    edge_i: usize,
    flushed: bool,
}

impl<M: Saved, A: FifoAggregator<M> + New> SharedWindow<M, A> {
    /// A fresh state for one key of a keyed stream: no allocation until it
    /// has rows, then room for its window ([`New::lazy`]).
    pub fn lazy(shared: Arc<CountPlan>) -> Result<Self> {
        let bound = shared.plan.w_size + 1;
        Self::with_agg(shared, A::lazy(bound)?)
    }
}

impl<M: Saved, A: FifoAggregator<M>> SharedWindow<M, A> {
    /// A fresh state of these queries over the empty aggregator `agg`.
    pub fn with_agg(shared: Arc<CountPlan>, agg: A) -> Result<Self> {
        Ok(SharedWindow {
            agg,
            shared,
            cum: VecDeque::new(),
            cum_base: 0,
            total: 0,
            cur: M::identity(),
            cur_count: 0,
            pos: 0,
            period_start: 0,
            edge_i: 0,
            flushed: false,
        })
    }
}

impl<M: Saved, A: FifoAggregator<M>> SharedWindow<M, A>
where
    M::Out: ToArrow,
{
    fn close_partial(&mut self) {
        let p = std::mem::replace(&mut self.cur, M::identity());
        self.agg.insert(p);
        self.total += std::mem::take(&mut self.cur_count);
        let counts = self.shared.counts;
        if counts {
            let (len, cap) = (self.cum.len(), self.cum.capacity());
            if len == cap {
                let bound = self.shared.plan.w_size + 1;
                self.cum.reserve_exact(crate::fifo::next_capacity(cap, len + 1, bound) - len);
            }
            self.cum.push_back(self.total);
        }
        while self.agg.len() > self.shared.plan.w_size {
            self.agg.evict();
            if counts {
                self.cum_base = self.cum.pop_front().unwrap_or(self.cum_base);
            }
        }
    }

    /// Non-null rows in the newest `k` closed partials (and the open one
    /// when `open`); needs `counts`.
    fn count_last(&self, k: usize, open: bool) -> u64 {
        let k = k.min(self.cum.len());
        let before = if k == self.cum.len() { self.cum_base } else { self.cum[self.cum.len() - 1 - k] };
        self.total - before + if open { self.cur_count } else { 0 }
    }

    /// Emit query `q`'s window over the newest `k` closed partials, and the
    /// open one when `open` (Cutty, mid-slice); `edge` is the slide edge the
    /// window belongs to, `end` the rows it really covers.
    fn emit(&mut self, q: usize, k: usize, open: bool, edge: u64, end: u64, em: &mut [Emit<M::Out>]) {
        let mut a = if k == 0 { M::identity() } else { self.agg.query_last(k) };
        if open {
            M::combine_into(&mut a, &self.cur);
        }
        let spec = &self.shared.specs[q];
        let ok = spec.min_periods == 0 || self.count_last(k, open) >= spec.min_periods;
        let (b, start, stop) = &mut em[q];
        b.push(if ok { M::lower(&a) } else { None });
        start.push(edge.saturating_sub(spec.range) as i64);
        stop.push(end as i64);
    }

    /// The last cut at or before the current row (0: the stream start).
    fn last_cut(&self) -> u64 {
        let plan = &self.shared.plan;
        let (c, pos) = (plan.composite, self.pos);
        let m = pos % c;
        let i = plan.cuts.partition_point(|&x| x <= m);
        if i > 0 {
            pos - m + plan.cuts[i - 1]
        } else if pos >= c {
            pos - m - c + plan.cuts[plan.cuts.len() - 1]
        } else {
            0
        }
    }

    pub fn plan(&self) -> &Arc<CountPlan> {
        &self.shared
    }

    /// The aggregator of the window's partials.
    pub fn agg(&self) -> &A {
        &self.agg
    }

    /// Restore what `save` wrote into this fresh state.
    pub fn restore(&mut self, inp: &mut &[u8]) -> Result<()> {
        self.pos = u64::decode(inp)?;
        self.period_start = u64::decode(inp)?;
        self.edge_i = usize::decode(inp)?;
        self.flushed = bool::decode(inp)?;
        self.cur = M::Agg::decode(inp)?;
        self.cur_count = u64::decode(inp)?;
        self.total = u64::decode(inp)?;
        self.cum_base = u64::decode(inp)?;
        let cum = Vec::<u64>::decode(inp)?;
        let parts = Vec::<M::Agg>::decode(inp)?;
        // Without min_periods no counts are kept (nor saved since state
        // version 6); older checkpoints carry them, unused here.
        let counts_ok = cum.len() == parts.len() || (!self.shared.counts && cum.is_empty());
        if !counts_ok || self.edge_i >= self.shared.plan.edges.len() {
            return Err(Error::Corrupt("checkpoint does not match these queries".into()));
        }
        if self.shared.counts {
            self.cum = cum.into();
        }
        self.agg.bulk_insert(&parts);
        Ok(())
    }

    /// Push the rows of `col` (and `args`, one per row), appending the
    /// windows they complete to `em` (one entry per query).
    pub fn push_col(&mut self, col: &Column<M::In>, args: Option<&[i64]>, em: &mut [Emit<M::Out>]) -> Result<()> {
        if self.flushed {
            return invalid!("this stream was flushed (end of stream); create a new one to push more rows");
        }
        if let Some(a) = args {
            if a.len() != col.len() {
                return invalid!("argument column has {} rows, value column {}", a.len(), col.len());
            }
        }
        // The plan is read through `self.shared` at each use, not through a
        // cloned Arc: a keyed stream calls this once per key and batch, and
        // the clone's two atomic updates would be a fixed cost per call.
        let n = col.len() as u64;
        let mut i = 0u64;
        while i < n {
            let next_edge = self.period_start + self.shared.plan.edges[self.edge_i];
            let take = (next_edge - self.pos).min(n - i);
            let (a, b) = (i as usize, (i + take) as usize);
            if args.is_none() && col.nulls.is_none_or(|nb| all_valid(nb, a, b)) {
                // Null-free rows: one pane reduction (SIMD for sum / count /
                // mean / min / max, crate::ops::reduce).
                M::fold_rows(&mut self.cur, &col.values[a..b], self.pos as i64);
                self.cur_count += take;
            } else {
                for j in a..b {
                    let pos = args.map_or((self.pos + (j as u64 - i)) as i64, |a| a[j]);
                    if let Some(p) = col.lift::<M>(j, pos) {
                        M::combine_into(&mut self.cur, &p);
                        self.cur_count += col.is_valid(j) as u64;
                    }
                }
            }
            i += take;
            self.pos += take;
            if self.pos == next_edge {
                let cut = self.shared.plan.cut[self.edge_i];
                if cut {
                    self.close_partial();
                }
                for f in 0..self.shared.plan.fires[self.edge_i].len() {
                    let fire = self.shared.plan.fires[self.edge_i][f];
                    self.emit(fire.query, fire.partials, !cut, next_edge, next_edge, em);
                }
                self.edge_i += 1;
                if self.edge_i == self.shared.plan.edges.len() {
                    self.edge_i = 0;
                    self.period_start += self.shared.plan.composite;
                }
            }
        }
        Ok(())
    }

    /// End of stream: the windows of the rows after the last slide edge.
    pub fn flush_into(&mut self, em: &mut [Emit<M::Out>]) {
        if self.flushed {
            return;
        }
        self.flushed = true;
        let shared = Arc::clone(&self.shared);
        let last_edge = self.last_cut();
        let tail = self.pos > last_edge;
        if tail {
            self.close_partial();
        }
        for (q, spec) in shared.specs.iter().enumerate() {
            let (r, s) = (spec.range, spec.slide);
            if self.pos % s == 0 {
                continue; // its last window ended exactly here and was emitted
            }
            let edge = (self.pos / s + 1) * s;
            if edge >= r && edge - r >= self.pos {
                continue; // the tail lies in the gap of slide > range
            }
            let k = if edge < r { usize::MAX } else { (shared.plan.edges_between(edge - r, last_edge) + tail as u64) as usize };
            let pos = self.pos;
            self.emit(q, k, false, edge, pos, em);
        }
    }
}

impl<M, A> WindowOp for SharedWindow<M, A>
where
    M: Saved,
    M::In: FromArrow + ToArrow + Codec + Send,
    M::Out: ToArrow,
    A: FifoAggregator<M> + Renew + Send,
{
    type In = M::In;
    type Out = M::Out;
    const TIMED: bool = false;
    const WATERMARKED: bool = false;
    fn queries(&self) -> usize {
        self.shared.specs.len()
    }
    fn fresh(&self) -> Result<Self> {
        let agg = self.agg.renew(self.shared.plan.w_size + 1)?;
        SharedWindow::with_agg(Arc::clone(&self.shared), agg)
    }
    fn push(&mut self, rows: &Rows<'_, M::In>, _clock: Clock, em: &mut [Emit<M::Out>]) -> Result<()> {
        self.push_col(&rows.col, rows.args, em)
    }
    fn flush(&mut self, em: &mut [Emit<M::Out>]) {
        self.flush_into(em)
    }
    fn save(&self, out: &mut Vec<u8>) {
        self.pos.encode(out);
        self.period_start.encode(out);
        self.edge_i.encode(out);
        self.flushed.encode(out);
        self.cur.encode(out);
        self.cur_count.encode(out);
        self.total.encode(out);
        self.cum_base.encode(out);
        self.cum.iter().copied().collect::<Vec<u64>>().encode(out);
        self.agg.contents().encode(out);
    }
    fn restore(&mut self, inp: &mut &[u8]) -> Result<()> {
        SharedWindow::restore(self, inp)
    }
}
