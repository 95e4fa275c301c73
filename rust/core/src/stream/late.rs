//! Time windows over an out-of-order stream, closed by a watermark.
//!
//! Windows are Spark's `F.window(ts, range, slide)` exactly as in
//! [`super::time`]: `[start, start + range)`, `start` a multiple of `slide`,
//! emitted only if they hold a row. Rows may arrive in any order. The
//! stream's spine ([`super`]) owns the watermark (the largest event time seen
//! over every key, minus the lateness, moved once per batch as Spark's
//! micro-batches do) and refuses late rows before they get here; this
//! operator
//!
//! * folds on-time rows into their windows;
//! * emits a window, final, once the watermark reaches its end
//!   ([`WindowOp::advance`]); `flush` emits every remaining window.
//!
//! Partials are the slices of the queries' shared plan ([`crate::plan`]):
//! every window starts and ends on a slice edge. The slices of each query's
//! next window live in a general aggregator ([`crate::general`]: CBiX,
//! general FlatFAT, Two-Stacks extended or recalc); on-time rows for those
//! slices are late partials that update them in place (a bulk update per
//! batch, RA Algorithm 2), slices further ahead wait in a sparse store and
//! enter the aggregator as the window slides.
//!
//! Order-sensitive operations (first, last, collect, argmax/argmin ties)
//! see the rows of a window in event-time order, ties in arrival order: each
//! slice keeps its lifted rows sorted, re-folds when a row lands inside it,
//! and the aggregator's slot is replaced (`bulk_set`) rather than folded.
//! Nulls count as rows (a window with only nulls is emitted) but not as
//! values (`min_periods`), as in `time`.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::codec::Codec;
use crate::engine::{FromArrow, ToArrow};
use crate::general::{AnyGeneral, GeneralAggregator, LateAlgorithm};
use crate::plan::{SharedPlan, Slide};
use crate::stream::op::{Saved, Clock, Emit, Rows, WindowOp};
use crate::stream::time::TimeSpec;
use crate::{Error, Result};

/// The slices holding rows, by id: a vector sorted by id. A keyed stream
/// holds one per key, mostly with a slice or two: a `BTreeMap`'s first node
/// alone costs about a kilobyte. New slices mostly come last; a late one
/// shifts the few slices after it.
struct SliceStore<M: Saved>(VecDeque<(i64, Slice<M>)>);

impl<M: Saved> SliceStore<M> {
    fn new() -> Self {
        SliceStore(VecDeque::new())
    }
    fn at(&self, id: i64) -> std::result::Result<usize, usize> {
        self.0.binary_search_by_key(&id, |x| x.0)
    }
    fn get(&self, id: &i64) -> Option<&Slice<M>> {
        self.at(*id).ok().map(|i| &self.0[i].1)
    }
    fn get_or_insert(&mut self, id: i64) -> &mut Slice<M> {
        let i = match self.at(id) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (id, Slice { rows: 0, valid: 0, agg: M::identity(), items: Vec::new() }));
                i
            }
        };
        &mut self.0[i].1
    }
    /// The first slice id at or after `id`.
    fn first_from(&self, id: i64) -> Option<i64> {
        let i = self.at(id).unwrap_or_else(|i| i);
        self.0.get(i).map(|x| x.0)
    }
    /// Drop the slices before `id`.
    fn drop_before(&mut self, id: i64) {
        let i = self.at(id).unwrap_or_else(|i| i);
        self.0.drain(..i);
    }
    fn insert(&mut self, id: i64, s: Slice<M>) {
        match self.at(id) {
            Ok(i) => self.0[i].1 = s,
            Err(i) => self.0.insert(i, (id, s)),
        }
    }
}

/// What every key's state of the same queries shares.
pub struct LatePlan {
    pub specs: Vec<TimeSpec>,
    pub plan: SharedPlan,
    pub algo: LateAlgorithm,
}

impl LatePlan {
    /// `algo` resolved (not `Auto`) and able to run the operation.
    pub fn new(specs: &[TimeSpec], algo: LateAlgorithm) -> Result<Arc<LatePlan>> {
        let slides: Vec<Slide> = specs.iter().map(|s| Slide::time(s.range as u64, s.slide as u64)).collect();
        let plan = SharedPlan::build(&slides)?;
        Ok(Arc::new(LatePlan { specs: specs.to_vec(), plan, algo }))
    }
}

/// One slice of event time: rows, non-null rows, the ⊕ of its values, and
/// for order-sensitive operations its lifted values sorted by event time.
struct Slice<M: Saved> {
    rows: u64,
    valid: u64,
    agg: M::Agg,
    items: Vec<(i64, M::Agg)>,
}

/// One query: its next window `j` (`[j*slide, j*slide + range)`), whose
/// slices `lo..hi` are in `agg` (made when first positioned), and the
/// window's row counts.
struct QState<M: Saved> {
    agg: Option<AnyGeneral<M>>,
    j: Option<i64>,
    lo: i64,
    hi: i64,
    rows: u64,
    valid: u64,
    /// Updates for `agg` gathered during a batch: (slot, delta) for
    /// commutative ops, (slot, _) to re-read for the others.
    pending: Vec<(u64, M::Agg)>,
}

pub struct LateWindow<M: Saved> {
    shared: Arc<LatePlan>,
    store: SliceStore<M>,
    queries: Vec<QState<M>>,
}

/// Slice ids are signed (times before the epoch); aggregators take u64 ids:
/// flipping the sign bit keeps the order.
#[inline]
fn uid(id: i64) -> u64 {
    (id as u64) ^ (1 << 63)
}



impl<M> LateWindow<M>
where
    M: Saved,
    M::In: ToArrow + Codec,
    M::Out: ToArrow,
{
    /// An empty state: allocates nothing until it has rows.
    pub fn new(shared: Arc<LatePlan>) -> Self {
        let queries = shared
            .specs
            .iter()
            .map(|_| QState::empty())
            .collect();
        LateWindow { shared, store: SliceStore::new(), queries }
    }

    /// The slice holding time `t`.
    fn slice_of(&self, t: i64) -> i64 {
        let c = self.shared.plan.composite as i64;
        let e = self.shared.plan.edges.len() as i64;
        let mut p = t.div_euclid(c);
        let off = (t - p * c) as u64;
        let mut i = self.shared.plan.edges.partition_point(|&x| x <= off) as i64;
        if i == e {
            p += 1;
            i = 0;
        }
        p * e + i
    }

    /// Exclusive end time of slice `id`.
    fn slice_end(&self, id: i64) -> i64 {
        let e = self.shared.plan.edges.len() as i64;
        id.div_euclid(e).saturating_mul(self.shared.plan.composite as i64) + self.shared.plan.edges[id.rem_euclid(e) as usize] as i64
    }

    fn win(&self, q: usize, j: i64) -> (i64, i64) {
        let s = &self.shared.specs[q];
        let start = j.saturating_mul(s.slide);
        (start, start.saturating_add(s.range))
    }

    /// First window of query `q` whose end is after `t`.
    fn first_ending_after(&self, q: usize, t: i64) -> i64 {
        let s = &self.shared.specs[q];
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
        if self.queries[q].agg.is_none() {
            let agg = AnyGeneral::new(self.shared.algo, self.shared.plan.w_size.max(1)).expect("the plan's algorithm runs this operation");
            self.queries[q].agg = Some(agg);
        }
        let st = &self.queries[q];
        let fresh = st.j.is_none() || lo >= st.hi;
        if fresh {
            let st = &mut self.queries[q];
            st.agg().evict_upto(u64::MAX);
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
            st.agg().evict_upto(uid(lo));
            st.rows -= r.0;
            st.valid -= r.1;
            st.lo = lo;
        }
        let from = self.queries[q].hi;
        for id in from..hi {
            let (a, rows, valid) = self.slot(id);
            let st = &mut self.queries[q];
            st.agg().insert(uid(id), a).expect("slices are appended in order");
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
            self.queries[q].agg().bulk_insert(&ups).expect("pending slots are in the window");
        } else {
            ups.sort_unstable_by_key(|u| u.0);
            ups.dedup_by_key(|u| u.0);
            for u in ups.iter_mut() {
                let id = (u.0 ^ (1 << 63)) as i64;
                u.1 = self.store.get(&id).map_or_else(M::identity, |s| s.agg.clone());
            }
            self.queries[q].agg().bulk_set(&ups).expect("pending slots are in the window");
        }
        ups.clear();
        self.queries[q].pending = ups;
    }

    /// Emit every window of `q` ending at or before `upto` (all windows
    /// holding rows when `upto` is None), skipping runs of empty windows.
    fn emit(&mut self, q: usize, upto: Option<i64>, em: &mut [Emit<M::Out>]) {
        let Some(mut j) = self.queries[q].j else { return };
        loop {
            let (start, end) = self.win(q, j);
            if upto.is_some_and(|wm| end > wm) {
                break;
            }
            let st = &mut self.queries[q];
            if st.rows > 0 {
                let spec = &self.shared.specs[q];
                let a = st.agg().query();
                let ok = spec.min_periods == 0 || st.valid >= spec.min_periods;
                let (b, s, e) = &mut em[q];
                b.push(if ok { M::lower(&a) } else { None });
                s.push(start);
                e.push(end);
            }
            // The next window if it holds a row, else jump to the first
            // window that can hold the next row (runs of empty windows
            // cost nothing, as in `time`).
            let (s1, e1) = self.win(q, j + 1);
            let (lo1, hi1) = (self.slice_of(s1), self.slice_of(e1 - 1) + 1);
            let next_row = self.store.first_from(lo1);
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
        let slice = self.store.get_or_insert(id);
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

    /// Drop slices no query needs any more.
    fn trim_store(&mut self) {
        if let Some(min_lo) = self.queries.iter().filter(|q| q.j.is_some()).map(|q| q.lo).min() {
            self.store.drop_before(min_lo);
        }
    }
}

impl<M: Saved> QState<M> {
    /// Not positioned, no aggregator: allocates nothing.
    fn empty() -> Self {
        QState { agg: None, j: None, lo: 0, hi: 0, rows: 0, valid: 0, pending: Vec::new() }
    }

    fn agg(&mut self) -> &mut AnyGeneral<M> {
        self.agg.as_mut().expect("a positioned query has an aggregator")
    }
}

impl<M> WindowOp for LateWindow<M>
where
    M: Saved,
    M::In: FromArrow + ToArrow + Codec + Send,
    M::Out: ToArrow,
{
    type In = M::In;
    type Out = M::Out;
    const TIMED: bool = true;
    const WATERMARKED: bool = true;

    fn queries(&self) -> usize {
        self.shared.specs.len()
    }

    fn fresh(&self) -> Result<Self> {
        Ok(LateWindow::new(Arc::clone(&self.shared)))
    }

    fn push(&mut self, rows: &Rows<'_, M::In>, clock: Clock, _em: &mut [Emit<M::Out>]) -> Result<()> {
        let ts = rows.ts.unwrap_or(&[]);
        let col = &rows.col;
        if let Some(&min_t) = ts.iter().min() {
            // A query's first window: the first one a row of this batch or a
            // later on-time row can fall in (windows ending at or before the
            // watermark are closed).
            for q in 0..self.queries.len() {
                if self.queries[q].j.is_none() {
                    let from = clock.after.map_or(min_t, |w| w.min(min_t));
                    let mut j = self.first_ending_after(q, from);
                    if let Some(w) = clock.before {
                        j = j.max(self.first_ending_after(q, w));
                    }
                    self.position(q, j);
                }
            }
        }
        // Runs of consecutive rows in one slice are folded first.
        let mut run: Option<(i64, i64, i64)> = None; // (id, start, end)
        let mut delta: Option<M::Agg> = None;
        let (mut nrows, mut valid) = (0u64, 0u64);
        let mut items = Vec::new();
        for (i, &t) in ts.iter().enumerate() {
            if !run.is_some_and(|(_, s, e)| s <= t && t < e) {
                if let Some((id, _, _)) = run {
                    self.add_run(id, delta.take(), nrows, valid, &mut items);
                }
                let id = self.slice_of(t);
                run = Some((id, self.slice_end(id - 1), self.slice_end(id)));
                (nrows, valid) = (0, 0);
            }
            nrows += 1;
            if let Some(p) = col.lift::<M>(i, rows.args.map_or(t, |a| a[i])) {
                valid += col.is_valid(i) as u64;
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
            self.add_run(id, delta.take(), nrows, valid, &mut items);
        }
        for q in 0..self.queries.len() {
            self.apply_pending(q);
        }
        Ok(())
    }

    fn advance(&mut self, wm: i64, em: &mut [Emit<M::Out>]) {
        for q in 0..self.queries.len() {
            self.emit(q, Some(wm), em);
        }
        self.trim_store();
        // Nothing left open: forget the positions and free the aggregators,
        // so a quiet key of a keyed stream costs a few bytes. The next row
        // positions each query afresh at the first window still open, which
        // is where it stands now.
        if self.store.0.is_empty() && self.queries.iter().all(|q| q.rows == 0) {
            self.queries.iter_mut().for_each(|q| *q = QState::empty());
            self.store = SliceStore::new();
        }
    }

    fn flush(&mut self, em: &mut [Emit<M::Out>]) {
        for q in 0..self.queries.len() {
            self.apply_pending(q);
            self.emit(q, None, em);
        }
        self.store = SliceStore::new();
    }

    fn save(&self, out: &mut Vec<u8>) {
        self.store.0.len().encode(out);
        for (id, s) in &self.store.0 {
            id.encode(out);
            (s.rows, s.valid).encode(out);
            s.agg.encode(out);
            s.items.encode(out);
        }
        self.queries.iter().map(|q| q.j).collect::<Vec<_>>().encode(out);
    }

    fn restore(&mut self, inp: &mut &[u8]) -> Result<()> {
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
