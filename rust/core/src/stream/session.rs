//! Session windows, as Spark's `F.session_window(ts, gap)`: a row at `t`
//! opens the window `[t, t + gap]`; windows that touch (a start at or before
//! another's end) merge, so a session runs from its first row to its last
//! row plus the gap. Only sessions holding a row exist.
//!
//! * In order (no lateness): rows come in non-decreasing time order per
//!   partition; a session is final, and emitted, once a row arrives after
//!   its end.
//! * Out of order (a lateness): rows come in any order; the spine refuses a
//!   row whose own window `[t, t + gap]` ends at or before the watermark
//!   (Spark's rule), and a session is emitted once the watermark reaches its
//!   end ([`WindowOp::advance`]). A row that falls between two open sessions
//!   and touches both merges them: their partials combine with the
//!   operation's own `combine`.
//!
//! Each query (gap) keeps its open sessions sorted by start; they are
//! disjoint and separated by more than the gap, so the sessions a row
//! touches are one contiguous run, found by binary search. Order-sensitive
//! operations (first, last, collect, argmax/argmin) out of order keep each
//! session's lifted rows sorted by time (ties in arrival order) and re-fold
//! when a row lands inside, as out-of-order time windows do ([`super::late`]);
//! in order, rows only ever append, so the partial folds directly.

use std::sync::Arc;

use crate::codec::Codec;
use crate::engine::{AggKind, FromArrow, ToArrow};
use crate::stream::op::{Saved, first_decrease, Clock, Emit, Rows, WindowOp};
use crate::{Error, Result};

/// A session query; times in the timestamp column's unit.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionSpec {
    pub agg: AggKind,
    pub gap: i64,
    pub min_periods: u64,
}

/// What every key's state of the same queries shares.
#[derive(Debug)]
pub struct SessionPlan {
    pub specs: Vec<SessionSpec>,
    /// Rows may come out of order; the watermark closes sessions.
    pub watermarked: bool,
}

impl SessionPlan {
    pub fn new(specs: &[SessionSpec], watermarked: bool) -> Arc<SessionPlan> {
        Arc::new(SessionPlan { specs: specs.to_vec(), watermarked })
    }
}

struct Session<M: Saved> {
    start: i64,
    last: i64,
    rows: u64,
    valid: u64,
    agg: M::Agg,
    /// Lifted rows sorted by time: order-sensitive operations out of order.
    items: Vec<(i64, M::Agg)>,
}

pub struct SessionWindow<M: Saved> {
    shared: Arc<SessionPlan>,
    /// Open sessions of each query, sorted by start.
    open: Vec<Vec<Session<M>>>,
    /// Latest time seen (in-order streams: the order rule and what closes).
    last_ts: Option<i64>,
}

impl<M: Saved> SessionWindow<M>
where
    M::Out: ToArrow,
{
    /// An empty state: allocates nothing until it has rows.
    pub fn new(shared: Arc<SessionPlan>) -> Self {
        let open = shared.specs.iter().map(|_| Vec::new()).collect();
        SessionWindow { shared, open, last_ts: None }
    }

    /// Keep sorted items (and re-fold) only where arrival order is not time
    /// order and the operation cares about order.
    fn sorted_items(&self) -> bool {
        self.shared.watermarked && !M::COMMUTATIVE
    }

    /// Add one row at `t` (`p`: its lifted value, `None` for a null) to
    /// query `q`'s sessions.
    /// `valid`: the row's value is not null (`p` is `Some` for a null row too
    /// when the operation counts null rows, as `first` / `last` do).
    fn add(&mut self, q: usize, t: i64, p: Option<&M::Agg>, valid: bool) {
        let gap = self.shared.specs[q].gap;
        let keep = self.sorted_items();
        let open = &mut self.open[q];
        // Fast path: the row touches the newest session.
        if let Some(s) = open.last_mut() {
            if t >= s.start && t <= s.last.saturating_add(gap) {
                s.rows += 1;
                if let Some(p) = p {
                    s.valid += valid as u64;
                    if keep {
                        let at = s.items.partition_point(|x| x.0 <= t);
                        let inside = at != s.items.len();
                        s.items.insert(at, (t, p.clone()));
                        if inside {
                            s.agg = crate::monoid::fold::<M>(&s.items.iter().map(|x| x.1.clone()).collect::<Vec<_>>());
                        } else {
                            M::combine_into(&mut s.agg, p);
                        }
                    } else {
                        M::combine_into(&mut s.agg, p);
                    }
                }
                s.last = s.last.max(t);
                return;
            }
        }
        // The sessions the row's window [t, t + gap] touches: a contiguous run.
        let lo = open.partition_point(|s| s.last.saturating_add(gap) < t);
        let hi = open.partition_point(|s| s.start <= t.saturating_add(gap));
        let mut merged = Session::<M> {
            start: t,
            last: t,
            rows: 1,
            valid: valid as u64,
            agg: M::identity(),
            items: Vec::new(),
        };
        let mut row_done = false;
        let put_row = |m: &mut Session<M>| {
            if let Some(p) = p {
                M::combine_into(&mut m.agg, p);
                if keep {
                    m.items.push((t, p.clone()));
                }
            }
        };
        // Combine in time order: sessions before the row, the row, sessions
        // after it (a row inside a session is handled by re-folding items).
        let mut inside = false;
        for s in open.drain(lo..hi) {
            if !row_done && s.start > t {
                put_row(&mut merged);
                row_done = true;
            }
            inside |= s.start <= t && t <= s.last;
            merged.start = merged.start.min(s.start);
            merged.last = merged.last.max(s.last);
            merged.rows += s.rows;
            merged.valid += s.valid;
            M::combine_into(&mut merged.agg, &s.agg);
            if keep {
                merged.items.extend(s.items);
            }
        }
        if !row_done {
            put_row(&mut merged);
        }
        if keep && inside {
            merged.items.sort_by_key(|x| x.0);
            merged.agg = crate::monoid::fold::<M>(&merged.items.iter().map(|x| x.1.clone()).collect::<Vec<_>>());
        } else if keep {
            merged.items.sort_by_key(|x| x.0);
        }
        open.insert(lo, merged);
    }

    /// Emit query `q`'s sessions ending before `limit` (`strict`) or at or
    /// before it; all of them when `limit` is `None`.
    fn close(&mut self, q: usize, limit: Option<i64>, strict: bool, em: &mut [Emit<M::Out>]) {
        let spec = &self.shared.specs[q];
        let gap = spec.gap;
        let open = &mut self.open[q];
        let n = match limit {
            None => open.len(),
            Some(l) => open.partition_point(|s| {
                let end = s.last.saturating_add(gap);
                if strict { end < l } else { end <= l }
            }),
        };
        if n == 0 {
            return;
        }
        let (b, st, en) = &mut em[q];
        for s in open.drain(..n) {
            let ok = spec.min_periods == 0 || s.valid >= spec.min_periods;
            b.push(if ok { M::lower(&s.agg) } else { None });
            st.push(s.start);
            en.push(s.last.saturating_add(gap));
        }
        if open.is_empty() {
            *open = Vec::new(); // a quiet key holds no memory
        }
    }
}

impl<M> WindowOp for SessionWindow<M>
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
        Ok(SessionWindow::new(Arc::clone(&self.shared)))
    }

    fn check(&self, ts: &[i64]) -> Option<(usize, i64)> {
        if self.shared.watermarked {
            return None;
        }
        first_decrease(ts, self.last_ts)
    }

    fn push(&mut self, rows: &Rows<'_, M::In>, _clock: Clock, em: &mut [Emit<M::Out>]) -> Result<()> {
        let ts = rows.ts.unwrap_or(&[]);
        for (i, &t) in ts.iter().enumerate() {
            if !self.shared.watermarked {
                // In order: sessions ending before this row are final.
                for q in 0..self.open.len() {
                    let ends_before = self.open[q]
                        .first()
                        .is_some_and(|s| s.last.saturating_add(self.shared.specs[q].gap) < t);
                    if ends_before {
                        self.close(q, Some(t), true, em);
                    }
                }
            }
            let p = rows.col.lift::<M>(i, rows.args.map_or(t, |a| a[i]));
            for q in 0..self.open.len() {
                self.add(q, t, p.as_ref(), rows.col.is_valid(i));
            }
            self.last_ts = Some(self.last_ts.map_or(t, |l| l.max(t)));
        }
        Ok(())
    }

    fn advance(&mut self, wm: i64, em: &mut [Emit<M::Out>]) {
        if self.shared.watermarked {
            for q in 0..self.open.len() {
                self.close(q, Some(wm), false, em);
            }
        }
    }

    fn flush(&mut self, em: &mut [Emit<M::Out>]) {
        for q in 0..self.open.len() {
            self.close(q, None, false, em);
        }
    }

    fn save(&self, out: &mut Vec<u8>) {
        self.last_ts.encode(out);
        for open in &self.open {
            open.len().encode(out);
            for s in open {
                (s.start, s.last).encode(out);
                (s.rows, s.valid).encode(out);
                s.agg.encode(out);
                s.items.encode(out);
            }
        }
    }

    fn restore(&mut self, inp: &mut &[u8]) -> Result<()> {
        self.last_ts = Option::<i64>::decode(inp)?;
        for q in 0..self.open.len() {
            let n = usize::decode(inp)?;
            let mut v = Vec::new();
            for _ in 0..n {
                let (start, last) = <(i64, i64)>::decode(inp)?;
                let (rows, valid) = <(u64, u64)>::decode(inp)?;
                let agg = M::Agg::decode(inp)?;
                let items = Vec::<(i64, M::Agg)>::decode(inp)?;
                if last < start {
                    return Err(Error::Corrupt("a session ends before it starts".into()));
                }
                v.push(Session { start, last, rows, valid, agg, items });
            }
            self.open[q] = v;
        }
        Ok(())
    }
}
