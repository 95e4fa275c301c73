//! What a stream computes: its queries (each an aggregation over a count,
//! time or session window), whether rows may come out of order (a
//! lateness), whether a key column partitions it, and which queries share
//! one operator. Every check of a stream's arguments lives here, once.

use crate::engine::{AggKind, DType};
use crate::fifo::Algorithm;
use crate::general::LateAlgorithm;
use crate::plan::Slicing;
use crate::{invalid, Result};

/// The window a query aggregates over. Times are in the time column's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// The last `range` rows, every `slide` rows.
    Count { range: u64, slide: u64 },
    /// Spark's `F.window(ts, range, slide)`: `[start, start + range)`,
    /// `start` a multiple of `slide` since the epoch.
    Time { range: i64, slide: i64 },
    /// Spark's `F.session_window(ts, gap)`: from a session's first row to
    /// its last row plus `gap`; a row at or before that end joins it.
    Session { gap: i64 },
}

impl Window {
    pub fn kind(&self) -> Kind {
        match self {
            Window::Count { .. } => Kind::Count,
            Window::Time { .. } => Kind::Time,
            Window::Session { .. } => Kind::Session,
        }
    }

    /// The end of the last window of this query holding time `t`, or
    /// `None` when no window holds it (a row in the gap of a slide larger
    /// than the range). A row is late for the query when that end is at or
    /// before the watermark: every window it could join was already emitted
    /// (Spark drops a row when its window's end is `<=` the watermark).
    pub fn last_end(&self, t: i64) -> Option<i64> {
        match *self {
            Window::Count { .. } => None,
            Window::Time { range, slide } => {
                let start = t.div_euclid(slide).saturating_mul(slide);
                let end = start.saturating_add(range);
                (end > t).then_some(end)
            }
            Window::Session { gap } => Some(t.saturating_add(gap)),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Count,
    Time,
    Session,
}

/// One query.
#[derive(Clone, Debug, PartialEq)]
pub struct QuerySpec {
    pub agg: AggKind,
    pub window: Window,
    /// 0: no minimum (nulls only where the operation gives null).
    pub min_periods: u64,
    /// argmax / argmin: the argument column reported at the extreme row
    /// (queries group by it); `None` reports the row position or time.
    pub arg: Option<String>,
}

/// A whole stream.
#[derive(Clone, Debug)]
pub struct StreamSpec {
    pub queries: Vec<QuerySpec>,
    pub dtype: DType,
    /// An algorithm name: a FIFO one (`two_stacks`, ...) for in-order
    /// streams, an out-of-order one (`cbix`, ...) with a lateness; `auto`.
    pub algorithm: String,
    /// `Some`: rows may come in any order; the watermark is the largest
    /// event time seen (over every key) minus this, as Spark's
    /// `withWatermark`.
    pub lateness: Option<i64>,
    pub keyed: bool,
    /// Partial aggregation of count windows.
    pub slicing: Slicing,
    /// Which queries share one operator (a group id per query, from a
    /// WeaveShare plan); `None`: one group per (aggregation, argument,
    /// window kind).
    pub groups: Option<Vec<usize>>,
}

/// The algorithm a stream was asked to run, by the kind of stream.
#[derive(Clone, Copy, Debug)]
pub enum Algo {
    Fifo(Algorithm),
    Late(LateAlgorithm),
}

impl StreamSpec {
    /// A stream of `queries` over `dtype` with every option at its default.
    pub fn new(queries: Vec<QuerySpec>, dtype: DType) -> StreamSpec {
        StreamSpec {
            queries,
            dtype,
            algorithm: "auto".into(),
            lateness: None,
            keyed: false,
            slicing: Slicing::Pairs,
            groups: None,
        }
    }

    /// Whether rows carry event times (time or session windows).
    pub fn timed(&self) -> bool {
        self.queries.iter().any(|q| q.window.kind() != Kind::Count)
    }

    pub fn algo(&self) -> Result<Algo> {
        Ok(if self.lateness.is_some() {
            Algo::Late(LateAlgorithm::parse(&self.algorithm)?)
        } else {
            Algo::Fifo(Algorithm::parse(&self.algorithm)?)
        })
    }

    /// Every argument check of a stream, with the messages users see.
    pub fn check(&self) -> Result<()> {
        if self.queries.is_empty() {
            return invalid!("a stream needs at least one query");
        }
        let timed = self.timed();
        for (i, q) in self.queries.iter().enumerate() {
            match q.window {
                Window::Count { range, slide } => {
                    if timed {
                        return invalid!(
                            "query {i}: count windows cannot share a stream with time or session windows"
                        );
                    }
                    if range == 0 {
                        return invalid!("range must be a positive number of rows, got 0");
                    }
                    if slide == 0 {
                        return invalid!("slide must be a positive number of rows, got 0");
                    }
                    if q.min_periods > range {
                        return invalid!("min_periods ({}) must be <= range ({range})", q.min_periods);
                    }
                }
                Window::Time { range, slide } => {
                    if range <= 0 || slide <= 0 {
                        return invalid!("time range and slide must be positive, got range={range} slide={slide}");
                    }
                }
                Window::Session { gap } => {
                    if gap <= 0 {
                        return invalid!("a session gap must be positive, got {gap}");
                    }
                }
            }
            if q.arg.is_some() && !matches!(q.agg, AggKind::ArgMax | AggKind::ArgMin) {
                return invalid!("arg= is only meaningful for argmax/argmin, not '{}'", q.agg.name());
            }
        }
        if let Some(l) = self.lateness {
            if l < 0 {
                return invalid!("lateness must be >= 0, got {l}");
            }
            if !timed {
                return invalid!("lateness needs time or session windows; count windows are never out of order");
            }
        }
        if timed && self.slicing != Slicing::Pairs {
            return invalid!("time windows use partial aggregation 'pairs', got '{}'", self.slicing.name());
        }
        if let Some(g) = &self.groups {
            if g.len() != self.queries.len() {
                return invalid!("groups has {} entries for {} queries", g.len(), self.queries.len());
            }
        }
        self.algo()?;
        Ok(())
    }

    /// The queries of each operator, in order of each group's first query.
    /// Queries of one group share an aggregation, an argument column and a
    /// window kind.
    pub fn groups(&self) -> Result<Vec<Vec<usize>>> {
        let mut ids: Vec<(usize, Vec<usize>)> = Vec::new();
        for (i, q) in self.queries.iter().enumerate() {
            let same = |j: usize| {
                let p = &self.queries[j];
                match &self.groups {
                    Some(g) => g[j] == g[i],
                    None => p.agg == q.agg && p.arg == q.arg && p.window.kind() == q.window.kind(),
                }
            };
            match ids.iter_mut().find(|(first, _)| same(*first)) {
                Some((_, v)) => v.push(i),
                None => ids.push((i, vec![i])),
            }
        }
        for (_, members) in &ids {
            let q0 = &self.queries[members[0]];
            for &m in &members[1..] {
                let q = &self.queries[m];
                if q.agg != q0.agg {
                    return invalid!(
                        "queries sharing a plan must use the same aggregation, got '{}' and '{}'",
                        q0.agg.name(),
                        q.agg.name()
                    );
                }
                if q.arg != q0.arg || q.window.kind() != q0.window.kind() {
                    return invalid!("queries sharing a plan must use the same argument column and window kind");
                }
            }
        }
        Ok(ids.into_iter().map(|(_, v)| v).collect())
    }

    /// Whether a row at time `t` is late under watermark `wm`: late for at
    /// least one query (then no query aggregates it, so every row is either
    /// aggregated by all queries or returned late, once).
    pub fn is_late(&self, t: i64, wm: i64) -> bool {
        self.queries.iter().any(|q| q.window.last_end(t).is_some_and(|e| e <= wm))
    }
}
