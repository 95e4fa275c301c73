//! The stream spine (`slidewise_core::stream`) over its combinations: keyed
//! or not x count, time and session windows (and time with session in one
//! stream) x in order or out of order, random keys (1-4), values with nulls
//! and NaN, random batch cuts, several aggregations at once, against a
//! naive oracle written here:
//!
//! * late rows by Spark's per-batch rule: the watermark W a batch finds is
//!   the largest time of every earlier batch (every key) minus the
//!   lateness; a row is late when some query's last window that could hold
//!   it ends at or before W (time windows: `floor(t/slide)*slide + range`
//!   when that is after `t`; sessions: `t + gap`);
//! * every window recomputed from the on-time rows it holds, folded by the
//!   independent oracle (`common::plain`) in event-time order, ties in
//!   arrival order (count windows: arrival order);
//! * the batch that emits it: count windows at their last row, in-order
//!   time windows at the key's first row at or past the end, in-order
//!   sessions at the key's first row after the end, out-of-order windows at
//!   the first batch that leaves the watermark at or past the end; anything
//!   left at the flush.
//!
//! Out of order, an on-time row joins only the windows (sessions) still
//! open: those ending after the W its batch found. Spark drops a row from a
//! window that closed (a sliding window before the row's last one, a
//! session emitted when the row would have touched it), without calling the
//! row late.
//!
//! Plus: results do not depend on batch cuts (in order; out of order when
//! the lateness exceeds the disorder, so no row is late and no row meets a
//! closed window); a save / restore at a random batch changes nothing;
//! rows in = rows aggregated + rows late, per key; session merging.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, StringArray};
use proptest::prelude::*;
use slidewise_core::engine::{AggKind, DType};
use slidewise_core::fifo::Algorithm;
use slidewise_core::general::LateAlgorithm;
use slidewise_core::stream::{self, Batch, QuerySpec, StreamSpec, Window};

use crate::common::{
    agrees, batch_ranges, plain_rows, run_stream, same_approx, val_at, xorshift, Cell, Close, Cols, Emitted, Run, ToVal, Val,
};

/// The aggregations every case runs (order-sensitive ones included).
const AGGS: [AggKind; 11] = [
    AggKind::Sum,
    AggKind::Count,
    AggKind::Max,
    AggKind::Min,
    AggKind::First,
    AggKind::Last,
    AggKind::FirstNonNull,
    AggKind::LastNonNull,
    AggKind::Collect,
    AggKind::ArgMax,
    AggKind::Mean,
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Count,
    Time,
    Session,
    /// A time and a session window in one stream.
    Mixed,
}

/// One generated stream.
#[derive(Clone, Debug)]
struct Case {
    /// (key, time, value) in arrival order; count windows ignore the time.
    rows: Vec<(u8, i64, Option<f64>)>,
    windows: Vec<Window>,
    min_periods: u64,
    lateness: Option<i64>,
    keyed: bool,
    strings: bool,
    cuts: Vec<usize>,
    /// Picks the algorithm among those of the stream's kind.
    algo: usize,
    /// An int64 value column (NaN becomes 7), else float64.
    int: bool,
}

fn value(nulls: bool) -> BoxedStrategy<Option<f64>> {
    if nulls {
        prop_oneof![8 => (-20i32..20).prop_map(|x| Some(x as f64)), 1 => Just(Some(f64::NAN)), 2 => Just(None)].boxed()
    } else {
        (-20i32..20).prop_map(|x| Some(x as f64)).boxed()
    }
}

/// Rows in non-decreasing time order per key (keys interleave out of time
/// order), times from negative to positive, ties and long gaps.
fn rows_in_order(nkeys: u8, nulls: bool) -> BoxedStrategy<Vec<(u8, i64, Option<f64>)>> {
    let dt = prop_oneof![6 => 0i64..3, 2 => 3i64..12, 1 => Just(30i64)];
    prop::collection::vec((0..nkeys, dt, value(nulls)), 0..120)
        .prop_map(|v| {
            let mut clock: BTreeMap<u8, i64> = BTreeMap::new();
            v.into_iter()
                .map(|(k, dt, x)| {
                    let c = clock.entry(k).or_insert(k as i64 * 5 - 20);
                    *c += dt;
                    (k, *c, x)
                })
                .collect()
        })
        .boxed()
}

/// Rows out of order: rising times shuffled within a random distance, and
/// a few rows from long ago.
fn rows_out_of_order(nkeys: u8, nulls: bool) -> BoxedStrategy<Vec<(u8, i64, Option<f64>)>> {
    let dt = prop_oneof![12 => 0i64..3, 2 => 3i64..9, 1 => Just(40i64)];
    (prop::collection::vec((0..nkeys, dt, value(nulls), prop::bool::weighted(0.08)), 0..120), 0usize..10, any::<u64>())
        .prop_map(|(v, d, seed)| {
            let mut t = -15i64;
            let mut rows: Vec<(u8, i64, Option<f64>)> = v
                .into_iter()
                .map(|(k, dt, x, back)| {
                    t += dt;
                    (k, if back { t - 25 } else { t }, x)
                })
                .collect();
            let mut s = seed | 1;
            for i in 0..rows.len() {
                let j = i + (xorshift(&mut s) as usize) % (d + 1);
                if j < rows.len() {
                    rows.swap(i, j);
                }
            }
            rows
        })
        .boxed()
}

fn windows(kind: Kind) -> BoxedStrategy<Vec<Window>> {
    let count = (1u64..10, 1u64..6).prop_map(|(range, slide)| Window::Count { range, slide });
    let time = prop_oneof![4 => (1i64..12, 1i64..8), 1 => (12i64..45, 1i64..12)].prop_map(|(range, slide)| Window::Time { range, slide });
    let session = (1i64..6).prop_map(|gap| Window::Session { gap });
    match kind {
        Kind::Count => prop::collection::vec(count, 1..3).boxed(),
        Kind::Time => prop::collection::vec(time, 1..3).boxed(),
        Kind::Session => prop::collection::vec(session, 1..3).boxed(),
        Kind::Mixed => (time, session).prop_map(|(a, b)| vec![a, b]).boxed(),
    }
}

/// A case of `kind`, in order or not (`None`: either; count windows are
/// always in order), values with nulls or not.
fn case_of(kind: Kind, in_order: Option<bool>, nulls: bool) -> BoxedStrategy<Case> {
    let in_order = match (kind, in_order) {
        (Kind::Count, _) => Just(true).boxed(),
        (_, Some(o)) => Just(o).boxed(),
        (_, None) => any::<bool>().boxed(),
    };
    (in_order, prop::bool::weighted(0.75), 1u8..5)
        .prop_flat_map(move |(in_order, keyed, nkeys)| {
            let nkeys = if keyed { nkeys } else { 1 };
            let rows = if in_order { rows_in_order(nkeys, nulls) } else { rows_out_of_order(nkeys, nulls) };
            let lateness = if in_order { Just(None).boxed() } else { (0i64..9).prop_map(Some).boxed() };
            (
                rows,
                windows(kind),
                prop_oneof![3 => Just(0u64), 1 => 1u64..3],
                lateness,
                Just(keyed),
                any::<bool>(),
                prop::collection::vec(0usize..130, 0..6),
                any::<usize>(),
                prop::bool::weighted(0.25),
            )
        })
        .prop_map(|(rows, windows, min_periods, lateness, keyed, strings, mut cuts, algo, int)| {
            cuts.sort_unstable();
            Case { rows, windows, min_periods, lateness, keyed, strings, cuts, algo, int }
        })
        .boxed()
}

fn any_kind() -> impl Strategy<Value = Kind> {
    prop::sample::select(vec![Kind::Count, Kind::Time, Kind::Session, Kind::Mixed])
}

fn any_case() -> BoxedStrategy<Case> {
    any_kind().prop_flat_map(|k| case_of(k, None, true)).boxed()
}

// ---------------------------------------------------------------------------
// Building and running

impl Case {
    fn algorithm(&self) -> &'static str {
        if self.lateness.is_some() {
            let names: Vec<&str> = LateAlgorithm::ALL.iter().map(|a| a.name()).chain(["auto"]).collect();
            names[self.algo % names.len()]
        } else {
            let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).chain(["auto"]).collect();
            names[self.algo % names.len()]
        }
    }

    fn timed(&self) -> bool {
        !matches!(self.windows[0], Window::Count { .. })
    }

    fn min_periods(&self, w: &Window) -> u64 {
        match *w {
            Window::Count { range, .. } => self.min_periods.min(range),
            _ => self.min_periods,
        }
    }

    fn spec_of(&self, aggs: &[AggKind]) -> StreamSpec {
        let queries = aggs
            .iter()
            .flat_map(|&agg| {
                self.windows.iter().map(move |w| QuerySpec { agg, window: *w, min_periods: self.min_periods(w), arg: None })
            })
            .collect();
        let mut s = StreamSpec::new(queries, if self.int { DType::I64 } else { DType::F64 });
        s.algorithm = self.algorithm().into();
        s.lateness = self.lateness;
        s.keyed = self.keyed;
        s
    }

    /// The stream of every aggregation the algorithm can run (SoE refuses
    /// non-invertible ones, CBiX order-sensitive ones), one query per
    /// (aggregation, window).
    fn spec(&self, aggs: &[AggKind]) -> Result<StreamSpec, TestCaseError> {
        let mut ok = Vec::new();
        for &agg in aggs {
            match stream::build(&self.spec_of(&[agg])) {
                Ok(_) => ok.push(agg),
                Err(e) => {
                    let a = self.algorithm();
                    prop_assert!(a == "soe" || a == "cbix", "{} refused {:?}: {}", a, agg, e);
                    prop_assert!(e.to_string().contains(a) && e.to_string().contains(agg.name()), "{e}");
                }
            }
        }
        prop_assert!(!ok.is_empty());
        Ok(self.spec_of(&ok))
    }

    fn key_text(&self, k: u8) -> Option<String> {
        self.keyed.then(|| if self.strings { format!("key{k}") } else { (k as i64 * 1000 - 3).to_string() })
    }

    /// A value as the column holds it.
    fn cell(&self, x: f64) -> Cell {
        if self.int {
            Cell::I(if x.is_finite() { x as i64 } else { 7 })
        } else {
            Cell::F(x)
        }
    }

    fn columns(&self) -> (ArrayRef, ArrayRef, Option<ArrayRef>) {
        let v: ArrayRef = if self.int {
            let ints = self.rows.iter().map(|r| r.2.map(|x| if let Cell::I(i) = self.cell(x) { i } else { unreachable!() }));
            Arc::new(Int64Array::from(ints.collect::<Vec<_>>()))
        } else {
            Arc::new(Float64Array::from(self.rows.iter().map(|r| r.2).collect::<Vec<_>>()))
        };
        let t: ArrayRef = Arc::new(Int64Array::from(self.rows.iter().map(|r| r.1).collect::<Vec<_>>()));
        let k: Option<ArrayRef> = self.keyed.then(|| -> ArrayRef {
            if self.strings {
                Arc::new(StringArray::from(self.rows.iter().map(|r| format!("key{}", r.0)).collect::<Vec<_>>()))
            } else {
                Arc::new(Int64Array::from(self.rows.iter().map(|r| r.0 as i64 * 1000 - 3).collect::<Vec<_>>()))
            }
        });
        (v, t, k)
    }

    /// Run `spec` over this case's rows cut at `cuts`, restoring after
    /// batch `restore` if asked.
    fn run(&self, spec: &StreamSpec, cuts: &[usize], restore: Option<usize>) -> Run {
        self.run_restoring(spec, cuts, restore.map(|b| (b, spec)))
    }

    /// Run `spec`, restoring after batch `b` under `spec2` if asked.
    fn run_restoring(&self, spec: &StreamSpec, cuts: &[usize], restore: Option<(usize, &StreamSpec)>) -> Run {
        let (v, t, k) = self.columns();
        let cols = Cols { values: &v, ts: self.timed().then_some(&t), keys: k.as_ref() };
        run_stream(spec, cols, cuts, restore).unwrap_or_else(|e| panic!("{e}; {self:?}"))
    }
}

// ---------------------------------------------------------------------------
// The oracle

/// The end of the last window of `w` holding time `t` (None: no window).
fn last_end(w: &Window, t: i64) -> Option<i64> {
    match *w {
        Window::Count { .. } => None,
        Window::Time { range, slide } => {
            let e = t.div_euclid(slide) * slide + range;
            (e > t).then_some(e)
        }
        Window::Session { gap } => Some(t + gap),
    }
}

/// Every row judged, batch by batch.
struct Judged {
    nb: usize,
    batch_of: Vec<usize>,
    late: Vec<bool>,
    /// The watermark each row's batch found.
    wm_before: Vec<Option<i64>>,
    /// The watermark after each batch.
    wm_after: Vec<Option<i64>>,
}

fn judge(c: &Case, cuts: &[usize]) -> Judged {
    let n = c.rows.len();
    let ranges = batch_ranges(cuts, n);
    let mut j = Judged { nb: ranges.len(), batch_of: vec![0; n], late: vec![false; n], wm_before: vec![None; n], wm_after: Vec::new() };
    let mut max_ts: Option<i64> = None;
    for (b, r) in ranges.iter().enumerate() {
        let wm = c.lateness.and_then(|l| max_ts.map(|m| m - l));
        for i in r.clone() {
            let t = c.rows[i].1;
            j.batch_of[i] = b;
            j.wm_before[i] = wm;
            j.late[i] = wm.is_some_and(|wm| c.windows.iter().any(|w| last_end(w, t).is_some_and(|e| e <= wm)));
        }
        if c.lateness.is_some() {
            max_ts = c.rows[r.clone()].iter().map(|x| x.1).chain(max_ts).max();
        }
        j.wm_after.push(c.lateness.and_then(|l| max_ts.map(|m| m - l)));
    }
    j
}

/// One expected window: key, bounds, its rows in fold order as (position
/// the aggregation reports, value), the emitting batch.
struct Set {
    key: Option<String>,
    start: i64,
    end: i64,
    rows: Vec<(i64, Option<f64>)>,
    batch: usize,
}

/// Every window of `w` the stream must emit.
fn window_sets(c: &Case, j: &Judged, w: &Window) -> Vec<Set> {
    let mut out = Vec::new();
    let nkeys = c.rows.iter().map(|r| r.0 + 1).max().unwrap_or(0);
    let first_batch_at_or_past = |end: i64| j.wm_after.iter().position(|x| x.is_some_and(|x| x >= end)).unwrap_or(j.nb);
    for k in 0..nkeys {
        // This key's on-time rows in arrival order.
        let idx: Vec<usize> = (0..c.rows.len()).filter(|&i| c.rows[i].0 == k && !j.late[i]).collect();
        if idx.is_empty() {
            continue;
        }
        let key = c.key_text(k);
        let t = |i: usize| c.rows[i].1;
        let v = |i: usize| c.rows[i].2;
        // Rows sorted by time, ties by arrival.
        let by_time = |mut is: Vec<usize>| {
            is.sort_by_key(|&i| (t(i), i));
            is.into_iter().map(|i| (t(i), v(i))).collect::<Vec<_>>()
        };
        match (*w, c.lateness) {
            (Window::Count { range, slide }, _) => {
                let (r, s, n) = (range as usize, slide as usize, idx.len());
                let rows = |a: usize, b: usize| (a..b).map(|p| (p as i64, v(idx[p]))).collect::<Vec<_>>();
                for e in 1..=n / s {
                    let edge = e * s;
                    let start = edge.saturating_sub(r);
                    out.push(Set { key: key.clone(), start: start as i64, end: edge as i64, rows: rows(start, edge), batch: j.batch_of[idx[edge - 1]] });
                }
                let edge = (n / s + 1) * s;
                if n % s != 0 && edge.saturating_sub(r) < n {
                    let start = edge.saturating_sub(r);
                    out.push(Set { key: key.clone(), start: start as i64, end: n as i64, rows: rows(start, n), batch: j.nb });
                }
            }
            (Window::Time { range, slide }, None) => {
                let mut js: Vec<i64> = idx.iter().flat_map(|&i| (t(i) - range).div_euclid(slide) + 1..=t(i).div_euclid(slide)).collect();
                js.sort_unstable();
                js.dedup();
                for jj in js {
                    let (a, b) = (jj * slide, jj * slide + range);
                    let rows = idx.iter().filter(|&&i| a <= t(i) && t(i) < b).map(|&i| (t(i), v(i))).collect();
                    let batch = idx.iter().find(|&&i| t(i) >= b).map_or(j.nb, |&i| j.batch_of[i]);
                    out.push(Set { key: key.clone(), start: a, end: b, rows, batch });
                }
            }
            (Window::Time { range, slide }, Some(_)) => {
                let mut wins: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
                for &i in &idx {
                    for jj in (t(i) - range).div_euclid(slide) + 1..=t(i).div_euclid(slide) {
                        if j.wm_before[i].is_none_or(|wm| jj * slide + range > wm) {
                            wins.entry(jj).or_default().push(i);
                        }
                    }
                }
                for (jj, is) in wins {
                    let (a, b) = (jj * slide, jj * slide + range);
                    out.push(Set { key: key.clone(), start: a, end: b, rows: by_time(is), batch: first_batch_at_or_past(b) });
                }
            }
            (Window::Session { gap }, None) => {
                let mut sessions: Vec<Vec<usize>> = Vec::new();
                for &i in &idx {
                    match sessions.last_mut() {
                        Some(s) if t(i) <= t(*s.last().unwrap()) + gap => s.push(i),
                        _ => sessions.push(vec![i]),
                    }
                }
                for (n, s) in sessions.iter().enumerate() {
                    let batch = sessions.get(n + 1).map_or(j.nb, |next| j.batch_of[next[0]]);
                    let (a, b) = (t(s[0]), t(*s.last().unwrap()) + gap);
                    out.push(Set { key: key.clone(), start: a, end: b, rows: by_time(s.clone()), batch });
                }
            }
            (Window::Session { gap }, Some(_)) => {
                let span = |s: &Vec<usize>| (s.iter().map(|&i| t(i)).min().unwrap(), s.iter().map(|&i| t(i)).max().unwrap() + gap);
                let mut open: Vec<Vec<usize>> = Vec::new();
                let mut done: Vec<(Vec<usize>, usize)> = Vec::new();
                for b in 0..j.nb {
                    for &i in idx.iter().filter(|&&i| j.batch_of[i] == b) {
                        // The open sessions the row's [t, t + gap] touches merge with it.
                        let (touch, rest): (Vec<_>, Vec<_>) = open.into_iter().partition(|s| {
                            let (a, e) = span(s);
                            a <= t(i) + gap && t(i) <= e
                        });
                        let mut merged: Vec<usize> = touch.into_iter().flatten().collect();
                        merged.push(i);
                        open = rest;
                        open.push(merged);
                    }
                    let wm = j.wm_after[b];
                    let (close, keep): (Vec<_>, Vec<_>) = open.into_iter().partition(|s| wm.is_some_and(|wm| span(s).1 <= wm));
                    done.extend(close.into_iter().map(|s| (s, b)));
                    open = keep;
                }
                done.extend(open.into_iter().map(|s| (s, j.nb)));
                for (s, batch) in done {
                    let (a, e) = span(&s);
                    out.push(Set { key: key.clone(), start: a, end: e, rows: by_time(s), batch });
                }
            }
        }
    }
    out
}

/// One window as compared: key, start, end, batch, value, scale.
type Row = (Option<String>, i64, i64, usize, Val, f64);

/// Every query's expected windows, sorted by (key, start, end).
fn oracle(c: &Case, spec: &StreamSpec, j: &Judged) -> Vec<Vec<Row>> {
    let mut sets: Vec<(Window, Vec<Set>)> = Vec::new();
    for w in &c.windows {
        if !sets.iter().any(|s| s.0 == *w) {
            sets.push((*w, window_sets(c, j, w)));
        }
    }
    spec.queries
        .iter()
        .map(|q| {
            let ws = &sets.iter().find(|s| s.0 == q.window).unwrap().1;
            let mut v: Vec<Row> = ws
                .iter()
                .map(|s| {
                    let rows: Vec<(i64, Option<Cell>)> = s.rows.iter().map(|&(p, x)| (p, x.map(|x| c.cell(x)))).collect();
                    let (val, sc) = plain_rows(q.agg, &rows, q.min_periods);
                    (s.key.clone(), s.start, s.end, s.batch, val, sc)
                })
                .collect();
            v.sort_by(|a, b| (&a.0, a.1, a.2).cmp(&(&b.0, b.1, b.2)));
            v
        })
        .collect()
}

/// A run's windows of query `q`, sorted by (key, start, end).
fn got_rows(ws: &[Emitted]) -> Vec<Row> {
    let mut v: Vec<Row> = ws.iter().map(|e| (e.key.clone(), e.start, e.end, e.batch, val_at(e.value.as_ref(), 0), 0.0)).collect();
    v.sort_by(|a, b| (&a.0, a.1, a.2).cmp(&(&b.0, b.1, b.2)));
    v
}

fn val_close(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Null, Val::Null) => true,
        (Val::F(x), Val::F(y)) => x.close(y),
        (Val::I(x), Val::I(y)) => x == y,
        (Val::L(x), Val::L(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| val_close(p, q)),
        _ => false,
    }
}

/// The run agrees with the oracle: windows (and their batches), late rows,
/// counts and watermarks.
fn check_against_oracle(c: &Case, spec: &StreamSpec, run: &Run, cuts: &[usize]) -> Result<(), TestCaseError> {
    let j = judge(c, cuts);
    let want = oracle(c, spec, &j);
    for (q, (w, g)) in want.iter().zip(&run.windows).enumerate() {
        let g = got_rows(g);
        let what = format!("query {q} {:?} on {}", spec.queries[q], spec.algorithm);
        prop_assert_eq!(g.len(), w.len(), "{}: windows {:?} want {:?}", what, g.iter().map(|r| (&r.0, r.1, r.2)).collect::<Vec<_>>(), w.iter().map(|r| (&r.0, r.1, r.2)).collect::<Vec<_>>());
        for (a, b) in g.iter().zip(w) {
            prop_assert_eq!((&a.0, a.1, a.2), (&b.0, b.1, b.2), "{}", what);
            prop_assert_eq!(a.3, b.3, "{}: window {:?} {} {} emitted by batch {} want {}", what, a.0, a.1, a.2, a.3, b.3);
            prop_assert!(agrees(spec.queries[q].agg, &a.4, &b.4, b.5), "{}: window {:?} {} {}: {:?} want {:?}", what, a.0, a.1, a.2, a.4, b.4);
        }
    }
    let late: Vec<(Option<String>, i64, Option<f64>)> =
        (0..c.rows.len()).filter(|&i| j.late[i]).map(|i| (c.key_text(c.rows[i].0), c.rows[i].1, c.rows[i].2)).collect();
    prop_assert_eq!(run.late.len(), late.len(), "late rows {:?} want {:?}", run.late, late);
    for (a, b) in run.late.iter().zip(&late) {
        prop_assert_eq!((&a.0, a.1), (&b.0, b.1));
        prop_assert!(val_close(&a.2, &b.2.map_or(Val::Null, |x| c.cell(x).val())), "late value {:?} want {:?}", a.2, b.2);
    }
    let n = c.rows.len() as u64;
    prop_assert_eq!(run.counts.rows_in, n);
    prop_assert_eq!(run.counts.late, late.len() as u64);
    prop_assert_eq!(run.counts.on_time, n - late.len() as u64);
    prop_assert_eq!(&run.watermarks, &j.wm_after);
    Ok(())
}

/// Two runs gave the same windows: in emission order with their batches
/// (`exact`), else sorted by (key, start, end) and without batches; and the
/// same late rows and counts.
fn same_runs(a: &Run, b: &Run, exact: bool) -> Result<(), TestCaseError> {
    for (q, (x, y)) in a.windows.iter().zip(&b.windows).enumerate() {
        prop_assert_eq!(x.len(), y.len(), "query {}", q);
        let (x, y) = if exact {
            (x.clone(), y.clone())
        } else {
            let sort = |v: &Vec<Emitted>| {
                let mut v = v.clone();
                v.sort_by(|a, b| (&a.key, a.start, a.end).cmp(&(&b.key, b.start, b.end)));
                v
            };
            (sort(x), sort(y))
        };
        for (p, r) in x.iter().zip(&y) {
            prop_assert_eq!((&p.key, p.start, p.end), (&r.key, r.start, r.end), "query {}", q);
            if exact {
                prop_assert_eq!(p.batch, r.batch, "query {} window {:?} {}", q, p.key, p.start);
            }
            prop_assert!(same_approx(p.value.as_ref(), r.value.as_ref()), "query {}: {:?} vs {:?}", q, p.value, r.value);
        }
    }
    prop_assert_eq!(a.counts, b.counts);
    prop_assert_eq!(a.late.len(), b.late.len());
    for (x, y) in a.late.iter().zip(&b.late) {
        prop_assert_eq!((&x.0, x.1), (&y.0, y.1));
        prop_assert!(val_close(&x.2, &y.2));
    }
    Ok(())
}

/// The largest amount a row's time falls behind an earlier row's (0: in
/// time order).
fn disorder(c: &Case) -> i64 {
    let mut max: Option<i64> = None;
    let mut d = 0;
    for r in &c.rows {
        if let Some(m) = max {
            d = d.max(m - r.1);
        }
        max = Some(max.map_or(r.1, |m| m.max(r.1)));
    }
    d
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// (a) Keyed (and unkeyed) count, time and session windows, in order
    /// and out of order, several aggregations at once, against the oracle.
    #[test]
    fn spine_equals_oracle(c in any_case()) {
        let spec = c.spec(&AGGS)?;
        let run = c.run(&spec, &c.cuts, None);
        check_against_oracle(&c, &spec, &run, &c.cuts)?;
    }

    /// (b) Batch cuts change nothing but which batch emits a window: in
    /// order always; out of order when the lateness is above the disorder
    /// (no row is late, and no on-time row meets a window already closed).
    #[test]
    fn spine_results_do_not_depend_on_batch_cuts(
        c in any_case(),
        mut cuts2 in prop::collection::vec(0usize..130, 0..8),
        extra in 1i64..4,
    ) {
        let mut c = c;
        if c.lateness.is_some() {
            c.lateness = Some(disorder(&c) + extra);
        }
        cuts2.sort_unstable();
        let spec = c.spec(&AGGS)?;
        let a = c.run(&spec, &c.cuts, None);
        let b = c.run(&spec, &cuts2, None);
        prop_assert_eq!(a.counts.late, 0);
        same_runs(&a, &b, false)?;
        let whole = c.run(&spec, &[], None);
        same_runs(&a, &whole, false)?;
        check_against_oracle(&c, &spec, &b, &cuts2)?;
    }

    /// (c) Saving after a random batch and restoring gives what never
    /// saving gives, for every kind, keyed or not, in order or not; also
    /// restored under another algorithm (a checkpoint holds window state,
    /// not an algorithm's layout).
    #[test]
    fn spine_save_restore_round_trip(c in any_case(), at in 0usize..8) {
        let spec = c.spec(&AGGS)?;
        let plain_run = c.run(&spec, &c.cuts, None);
        let at = at % batch_ranges(&c.cuts, c.rows.len()).len();
        let restored = c.run(&spec, &c.cuts, Some(at));
        same_runs(&plain_run, &restored, true)?;
        prop_assert_eq!(&plain_run.watermarks, &restored.watermarks);
        let mut recalc = spec.clone();
        recalc.algorithm = "recalc".into();
        let other = c.run_restoring(&spec, &c.cuts, Some((at, &recalc)));
        same_runs(&plain_run, &other, true)?;
    }

    /// (d) Rows in = rows aggregated + rows late, per key: a count over a
    /// window every row belongs to exactly once (tumbling count or time
    /// windows, sessions), other queries making rows late too.
    #[test]
    fn spine_accounts_for_every_row_per_key(
        c in any_kind().prop_flat_map(|k| case_of(k, None, false)),
        size in 1i64..8,
    ) {
        let mut c = c;
        c.min_periods = 0;
        let part = match c.windows[0] {
            Window::Count { .. } => Window::Count { range: size as u64, slide: size as u64 },
            Window::Time { .. } => Window::Time { range: size, slide: size },
            Window::Session { .. } => Window::Session { gap: size },
        };
        c.windows.insert(0, part);
        let spec = c.spec(&[AggKind::Count])?;
        let run = c.run(&spec, &c.cuts, None);
        let n = c.rows.len() as u64;
        prop_assert_eq!(run.counts.rows_in, n);
        prop_assert_eq!(run.counts.rows_in, run.counts.on_time + run.counts.late);
        prop_assert_eq!(run.counts.late as usize, run.late.len());
        let mut pushed: BTreeMap<Option<String>, u64> = BTreeMap::new();
        for r in &c.rows {
            *pushed.entry(c.key_text(r.0)).or_default() += 1;
        }
        let mut seen: BTreeMap<Option<String>, u64> = BTreeMap::new();
        for w in &run.windows[0] {
            let Val::I(k) = val_at(w.value.as_ref(), 0) else { panic!("count is an integer") };
            prop_assert!(k > 0, "an emitted window holds a row");
            *seen.entry(w.key.clone()).or_default() += k as u64;
        }
        prop_assert_eq!(seen.values().sum::<u64>(), run.counts.on_time);
        for l in &run.late {
            *seen.entry(l.0.clone()).or_default() += 1;
        }
        prop_assert_eq!(&seen, &pushed);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// (e) Sessions: rows exactly `gap` apart are one session, rows more
    /// than `gap` apart two, in order and out of order (any batch cuts).
    #[test]
    fn sessions_merge_at_exactly_gap(
        gap in 1i64..6,
        steps in prop::collection::vec(prop::bool::ANY, 1..30),
        lateness in prop::option::of(0i64..3),
        mut cuts in prop::collection::vec(0usize..31, 0..4),
    ) {
        cuts.sort_unstable();
        // Each step is exactly gap (same session) or gap + 1 (a new one).
        let mut t = 0;
        let mut ts = vec![t];
        let mut sessions = vec![(0i64, 0i64, 1i64)];
        for &same in &steps {
            t += if same { gap } else { gap + 1 };
            ts.push(t);
            let last = sessions.last_mut().unwrap();
            if same {
                last.1 = t;
                last.2 += 1;
            } else {
                sessions.push((t, t, 1));
            }
        }
        let mut spec = StreamSpec::new(vec![QuerySpec { agg: AggKind::Count, window: Window::Session { gap }, min_periods: 0, arg: None }], DType::F64);
        spec.lateness = lateness;
        let v: ArrayRef = Arc::new(Float64Array::from(vec![1.0; ts.len()]));
        let tc: ArrayRef = Arc::new(Int64Array::from(ts));
        let run = run_stream(&spec, Cols { values: &v, ts: Some(&tc), keys: None }, &cuts, None).unwrap();
        let got: Vec<(i64, i64, Val)> = run.windows[0].iter().map(|w| (w.start, w.end, val_at(w.value.as_ref(), 0))).collect();
        prop_assert_eq!(got.len(), sessions.len());
        for (g, s) in got.iter().zip(&sessions) {
            prop_assert_eq!((g.0, g.1), (s.0, s.1 + gap));
            prop_assert!(matches!(g.2, Val::I(k) if k == s.2));
        }
        prop_assert_eq!(run.counts.late, 0);
    }
}

// ---------------------------------------------------------------------------
// Targeted cases

fn f64s(xs: &[f64]) -> ArrayRef {
    Arc::new(Float64Array::from(xs.to_vec()))
}

fn i64s(xs: &[i64]) -> ArrayRef {
    Arc::new(Int64Array::from(xs.to_vec()))
}

fn push(s: &mut Box<dyn stream::Stream>, vals: &ArrayRef, ts: &ArrayRef, keys: Option<&ArrayRef>) -> Vec<stream::QueryWindows> {
    let mut b = Batch::new(vals.as_ref());
    b.time = Some(ts.as_ref());
    b.keys = keys.map(|k| k.as_ref());
    s.push(&b).unwrap()
}

fn q(agg: AggKind, window: Window) -> QuerySpec {
    QuerySpec { agg, window, min_periods: 0, arg: None }
}

/// (e) A row arriving late between two open sessions, touching both,
/// merges them into one: its rows in time order for the order-sensitive
/// aggregations; another key's sessions stay apart.
#[test]
fn a_late_row_touching_two_open_sessions_merges_them() {
    let gap = 5;
    let aggs = [AggKind::Count, AggKind::Sum, AggKind::First, AggKind::Last, AggKind::Collect, AggKind::ArgMax];
    for bridge in [3, 4, 5] {
        // bridge 3 touches the second session exactly (3 + 5 = 8), 5 the
        // first exactly (its end 0 + 5).
        for algo in ["auto", "flatfat", "recalc", "two_stacks"] {
            let mut spec = StreamSpec::new(aggs.iter().map(|&a| q(a, Window::Session { gap })).collect(), DType::F64);
            spec.lateness = Some(100);
            spec.keyed = true;
            spec.algorithm = algo.into();
            let mut s = stream::build(&spec).unwrap();
            // Batch 1: key 1 opens [0, 5] and [8, 13]; key 2 [0, 5] and [8, 13] too.
            let out = push(&mut s, &f64s(&[1.0, 3.0, 10.0, 30.0]), &i64s(&[0, 8, 0, 8]), Some(&i64s(&[1, 1, 2, 2])));
            assert!(out.iter().all(|w| w.start.is_empty()), "nothing closes: the watermark is far behind");
            // Batch 2: key 1's row at `bridge` touches both.
            let out = push(&mut s, &f64s(&[2.0]), &i64s(&[bridge]), Some(&i64s(&[1])));
            assert!(out.iter().all(|w| w.start.is_empty()));
            assert_eq!(s.counts().late, 0);
            let out = s.flush().unwrap();
            let keys = out[0].keys.as_ref().unwrap().as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec();
            let mut got: Vec<(i64, i64, i64, Vec<Val>)> = (0..keys.len())
                .map(|i| (keys[i], out[0].start[i], out[0].end[i], out.iter().map(|w| val_at(w.values.as_ref(), i)).collect()))
                .collect();
            got.sort_by_key(|g| (g.0, g.1));
            assert_eq!(got.len(), 3, "{algo} bridge {bridge}: {got:?}");
            assert_eq!((got[0].0, got[0].1, got[0].2), (1, 0, 13), "{algo} bridge {bridge}");
            let v = &got[0].3;
            assert!(matches!(v[0], Val::I(3)), "{v:?}");
            assert!(matches!(v[1], Val::F(x) if x == 6.0), "{v:?}");
            assert!(matches!(v[2], Val::F(x) if x == 1.0), "first {v:?}");
            assert!(matches!(v[3], Val::F(x) if x == 3.0), "last {v:?}");
            match &v[4] {
                Val::L(l) => assert!(matches!(l[..], [Val::F(a), Val::F(b), Val::F(c)] if (a, b, c) == (1.0, 2.0, 3.0)), "{l:?}"),
                other => panic!("collect gave {other:?}"),
            }
            assert!(matches!(v[5], Val::I(8)), "argmax is the time of the largest value: {v:?}");
            assert_eq!((got[1].0, got[1].1, got[1].2), (2, 0, 5));
            assert_eq!((got[2].0, got[2].1, got[2].2), (2, 8, 13));
        }
    }
}

/// In order, sessions close when a row passes their end; exactly `gap`
/// apart is still the same session; per key.
#[test]
fn in_order_sessions_close_when_a_row_passes_their_end() {
    let spec = StreamSpec::new(vec![q(AggKind::Count, Window::Session { gap: 5 })], DType::F64);
    let mut s = stream::build(&spec).unwrap();
    let out = push(&mut s, &f64s(&[1.0; 3]), &i64s(&[0, 5, 10]), None);
    assert!(out[0].start.is_empty());
    // 15 is exactly the session's end: it joins.
    let out = push(&mut s, &f64s(&[1.0]), &i64s(&[15]), None);
    assert!(out[0].start.is_empty());
    // 21 is after the end 20: the session [0, 20] is final.
    let out = push(&mut s, &f64s(&[1.0]), &i64s(&[21]), None);
    assert_eq!((out[0].start.clone(), out[0].end.clone()), (vec![0], vec![20]));
    assert!(matches!(val_at(out[0].values.as_ref(), 0), Val::I(4)));
    // Time going back is refused, naming the row.
    let v = f64s(&[1.0, 1.0]);
    let t = i64s(&[22, 20]);
    let mut b = Batch::new(v.as_ref());
    b.time = Some(t.as_ref());
    let e = s.push(&b).unwrap_err();
    assert!(e.to_string().contains("row 1 has time 20, after 22"), "{e}");
    let out = s.flush().unwrap();
    assert_eq!((out[0].start.clone(), out[0].end.clone()), (vec![21], vec![26]));
    // Pushing after the flush is refused, a second flush gives nothing, and
    // so does a restore of the flushed stream.
    assert!(s.push(&b).unwrap_err().to_string().contains("flushed"));
    assert!(s.flush().unwrap()[0].start.is_empty());
    let mut r = stream::restore(&spec, &s.save()).unwrap();
    assert!(r.push(&b).unwrap_err().to_string().contains("flushed"));
    assert!(r.flush().unwrap()[0].start.is_empty());
    assert_eq!(r.counts(), s.counts());
}

/// Checkpoints are checked: empty, truncated, trailing bytes and the
/// out-of-order format whose watermark moved row by row are refused.
#[test]
fn bad_checkpoints_are_refused() {
    let mut spec = StreamSpec::new(vec![q(AggKind::Sum, Window::Time { range: 10, slide: 5 })], DType::F64);
    spec.lateness = Some(3);
    spec.keyed = true;
    let mut s = stream::build(&spec).unwrap();
    push(&mut s, &f64s(&[1.0, 2.0, 3.0]), &i64s(&[5, 1, 30]), Some(&i64s(&[1, 2, 1])));
    let bytes = s.save();
    assert!(stream::restore(&spec, &bytes).is_ok());
    assert!(stream::restore(&spec, &[]).is_err());
    assert!(stream::restore(&spec, &bytes[..bytes.len() - 1]).is_err());
    let mut long = bytes.clone();
    long.push(0);
    let e = stream::restore(&spec, &long).err().unwrap();
    assert!(e.to_string().contains("trailing"), "{e}");
    let e = stream::restore(&spec, &[slidewise_core::stream::checkpoint::LATE_V1]).err().unwrap();
    assert!(e.to_string().contains("per-batch watermark"), "{e}");
}

/// A row late for one query (its session ended at or before the
/// watermark) is aggregated by no query, even one whose window is still
/// open; a row in no window of a query (slide > range) is never late for it.
#[test]
fn a_row_late_for_one_query_is_aggregated_by_none() {
    let mut spec = StreamSpec::new(
        vec![q(AggKind::Count, Window::Time { range: 100, slide: 100 }), q(AggKind::Count, Window::Session { gap: 2 })],
        DType::F64,
    );
    spec.lateness = Some(5);
    let mut s = stream::build(&spec).unwrap();
    push(&mut s, &f64s(&[1.0]), &i64s(&[20]), None);
    assert_eq!(s.watermark(), Some(15));
    // 12: its session [12, 14] ends before 15 (late), though [0, 100) is open.
    // 14: [14, 16] still open: on time.
    push(&mut s, &f64s(&[1.0, 1.0]), &i64s(&[12, 14]), None);
    let c = s.counts();
    assert_eq!((c.rows_in, c.on_time, c.late), (3, 2, 1));
    let late = s.take_late();
    assert_eq!(late.ts.as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec(), vec![12]);
    assert!(late.keys.is_none());
    let out = s.flush().unwrap();
    assert!(matches!(val_at(out[0].values.as_ref(), 0), Val::I(2)), "the time window holds 20 and 14 only");
    assert_eq!(out[1].start, vec![14, 20]);

    // slide 10 > range 3: times 3..9 are in no window; with only that query
    // such a row is never late, and is in no window.
    let mut spec = StreamSpec::new(vec![q(AggKind::Count, Window::Time { range: 3, slide: 10 })], DType::F64);
    spec.lateness = Some(0);
    let mut s = stream::build(&spec).unwrap();
    push(&mut s, &f64s(&[1.0]), &i64s(&[50]), None);
    let out = push(&mut s, &f64s(&[1.0, 1.0]), &i64s(&[5, 1]), None);
    let c = s.counts();
    assert_eq!((c.on_time, c.late), (2, 1), "5 is in no window (never late); 1 is in [0, 3), closed");
    assert!(out[0].start.is_empty());
    let out = s.flush().unwrap();
    assert_eq!(out[0].start, vec![50]);
}

/// Nulls count as rows, not as values: a window or session of only nulls
/// is emitted, null except its count (0); min_periods counts values.
#[test]
fn windows_of_only_nulls_are_emitted() {
    let vals: ArrayRef = Arc::new(Float64Array::from(vec![None, None, Some(1.0), None]));
    let ts = i64s(&[0, 1, 10, 20]);
    for (window, lateness) in [
        (Window::Time { range: 5, slide: 5 }, None),
        (Window::Time { range: 5, slide: 5 }, Some(0)),
        (Window::Session { gap: 2 }, None),
        (Window::Session { gap: 2 }, Some(0)),
    ] {
        let mut spec = StreamSpec::new(
            vec![q(AggKind::Count, window), q(AggKind::Sum, window), QuerySpec { agg: AggKind::Max, window, min_periods: 1, arg: None }],
            DType::F64,
        );
        spec.lateness = lateness;
        let mut s = stream::build(&spec).unwrap();
        let mut got = push(&mut s, &vals, &ts, None);
        for (g, f) in got.iter_mut().zip(s.flush().unwrap()) {
            g.start.extend(f.start);
            g.values = arrow_select::concat::concat(&[g.values.as_ref(), f.values.as_ref()]).unwrap();
        }
        assert_eq!(got[0].start, vec![0, 10, 20], "{window:?}");
        let v = |q: usize| (0..3).map(|i| val_at(got[q].values.as_ref(), i)).collect::<Vec<_>>();
        assert!(matches!(v(0)[..], [Val::I(0), Val::I(1), Val::I(0)]), "{window:?} {:?}", v(0));
        assert!(matches!(v(1)[..], [Val::Null, Val::F(_), Val::Null]), "{window:?} {:?}", v(1));
        assert!(matches!(v(2)[..], [Val::Null, Val::F(_), Val::Null]), "{window:?} {:?}", v(2));
    }
    // Count windows: nulls are rows.
    let spec = StreamSpec::new(vec![q(AggKind::Count, Window::Count { range: 2, slide: 2 })], DType::F64);
    let mut s = stream::build(&spec).unwrap();
    let out = s.push(&Batch::new(vals.as_ref())).unwrap();
    assert_eq!(out[0].end, vec![2, 4]);
    assert!(matches!(val_at(out[0].values.as_ref(), 0), Val::I(0)));
}

/// The watermark is global over keys and moves once per batch: a key's
/// rows in a batch are judged against the watermark before the batch, even
/// when another key's rows in the same batch move it.
#[test]
fn the_watermark_is_global_and_moves_per_batch() {
    let mut spec = StreamSpec::new(vec![q(AggKind::Count, Window::Time { range: 10, slide: 10 })], DType::F64);
    spec.lateness = Some(0);
    spec.keyed = true;
    let mut s = stream::build(&spec).unwrap();
    assert_eq!(s.watermark(), None);
    // One batch: key 1 at 100, key 2 at 3: nothing is late (no watermark yet).
    let out = push(&mut s, &f64s(&[1.0, 1.0]), &i64s(&[100, 3]), Some(&i64s(&[1, 2])));
    assert_eq!(s.counts().late, 0);
    assert_eq!(s.watermark(), Some(100));
    // Key 2's [0, 10) ends before the watermark 100: emitted by this batch.
    assert_eq!(out[0].start, vec![0]);
    // Next batch: key 2 at 95 is late ([90, 100) ends at the watermark),
    // key 3 at 100 is on time.
    push(&mut s, &f64s(&[1.0, 1.0]), &i64s(&[95, 100]), Some(&i64s(&[2, 3])));
    assert_eq!(s.counts().late, 1);
    let l = s.take_late();
    assert_eq!(l.keys.unwrap().as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec(), vec![2]);
    assert_eq!(s.num_keys(), 3);
}

/// Out of order, an on-time row joins only the windows still open: Spark
/// drops it from a window already emitted (a sliding window before its
/// last one, a session it would have touched) without calling it late. So
/// batch cuts can matter even when no row is late.
#[test]
fn an_on_time_row_joins_only_open_windows() {
    let counts = |out: &[stream::QueryWindows]| -> Vec<(i64, i64, Val)> {
        (0..out[0].start.len()).map(|i| (out[0].start[i], out[0].end[i], val_at(out[0].values.as_ref(), i))).collect()
    };
    let run = |window: Window, lateness: i64, batches: &[&[i64]]| {
        let mut spec = StreamSpec::new(vec![q(AggKind::Count, window)], DType::F64);
        spec.lateness = Some(lateness);
        let mut s = stream::build(&spec).unwrap();
        let mut got = Vec::new();
        for b in batches {
            got.extend(counts(&push(&mut s, &f64s(&vec![1.0; b.len()]), &i64s(b), None)));
        }
        got.extend(counts(&s.flush().unwrap()));
        assert_eq!(s.counts().late, 0);
        got.into_iter().map(|(a, b, v)| (a, b, if let Val::I(k) = v { k } else { panic!("{v:?}") })).collect::<Vec<_>>()
    };
    // Range 10, slide 5, lateness 5: after 20 the watermark is 15; 12 is on
    // time (its last window [10, 20) is open) but [5, 15) has closed.
    let w = Window::Time { range: 10, slide: 5 };
    assert_eq!(run(w, 5, &[&[20], &[12]]), vec![(10, 20, 1), (15, 25, 1), (20, 30, 1)]);
    assert_eq!(run(w, 5, &[&[20, 12]]), vec![(5, 15, 1), (10, 20, 1), (15, 25, 1), (20, 30, 1)]);
    // Gap 10, lateness 10: after 0 and 22 the watermark is 12 and [0, 10] is
    // emitted; 5 is on time (5 + 10 > 12) and opens a session of its own.
    let w = Window::Session { gap: 10 };
    assert_eq!(run(w, 10, &[&[0, 22], &[5]]), vec![(0, 10, 1), (5, 15, 1), (22, 32, 1)]);
    assert_eq!(run(w, 10, &[&[0, 22, 5]]), vec![(0, 15, 2), (22, 32, 1)]);
}

/// argmax over count windows, keyed: by default the row's position within
/// its key; with an argument column, that column's value at the row.
#[test]
fn keyed_argmax_reports_key_positions_or_the_argument_column() {
    let mut spec = StreamSpec::new(
        vec![
            q(AggKind::ArgMax, Window::Count { range: 2, slide: 2 }),
            QuerySpec { agg: AggKind::ArgMax, window: Window::Count { range: 2, slide: 2 }, min_periods: 0, arg: Some("a".into()) },
        ],
        DType::F64,
    );
    spec.keyed = true;
    let mut s = stream::build(&spec).unwrap();
    assert_eq!(s.groups(), 2, "queries of different argument columns run apart");
    let vals = f64s(&[1.0, 5.0, 3.0, 2.0]);
    let keys: ArrayRef = Arc::new(StringArray::from(vec!["a", "a", "b", "b"]));
    let args = [10i64, 11, 12, 13];
    let mut b = Batch::new(vals.as_ref());
    b.keys = Some(keys.as_ref());
    b.args = vec![None, Some(&args)];
    let out = s.push(&b).unwrap();
    let ints = |a: &ArrayRef| a.as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec();
    let names = |a: &Option<ArrayRef>| {
        let k = a.as_ref().unwrap().as_any().downcast_ref::<StringArray>().unwrap();
        (0..k.len()).map(|i| k.value(i).to_string()).collect::<Vec<_>>()
    };
    assert_eq!(names(&out[0].keys), vec!["a", "b"]);
    assert_eq!(ints(&out[0].values), vec![1, 0]);
    assert_eq!(names(&out[1].keys), vec!["a", "b"]);
    assert_eq!(ints(&out[1].values), vec![11, 12]);
}

/// argmax / argmin with an argument column report that column's value at
/// the extreme row for time and session windows too (in order and out of
/// order), as for count windows; without one, the row's time.
#[test]
fn timed_argmax_reports_the_argument_column() {
    let vals = f64s(&[1.0, 5.0, 3.0, 7.0, 2.0]);
    let ts = i64s(&[0, 1, 2, 10, 11]);
    let args = [100i64, 101, 102, 103, 104];
    for window in [Window::Time { range: 5, slide: 5 }, Window::Session { gap: 3 }] {
        for lateness in [None, Some(0)] {
            for algo in ["auto", "recalc"] {
                let mut spec = StreamSpec::new(
                    vec![
                        q(AggKind::ArgMax, window),
                        QuerySpec { agg: AggKind::ArgMax, window, min_periods: 0, arg: Some("a".into()) },
                        QuerySpec { agg: AggKind::ArgMin, window, min_periods: 0, arg: Some("a".into()) },
                    ],
                    DType::F64,
                );
                spec.lateness = lateness;
                spec.algorithm = algo.into();
                let mut s = stream::build(&spec).unwrap();
                let mut b = Batch::new(vals.as_ref());
                b.time = Some(ts.as_ref());
                b.args = vec![None, Some(&args), Some(&args)];
                let mut out = s.push(&b).unwrap();
                for (o, f) in out.iter_mut().zip(s.flush().unwrap()) {
                    o.start.extend(f.start);
                    o.values = arrow_select::concat::concat(&[o.values.as_ref(), f.values.as_ref()]).unwrap();
                }
                let ints = |a: &ArrayRef| a.as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec();
                let what = format!("{window:?} lateness {lateness:?} {algo}");
                assert_eq!(out[0].start, vec![0, 10], "{what}");
                assert_eq!(ints(&out[0].values), vec![1, 10], "{what}: times by default");
                assert_eq!(ints(&out[1].values), vec![101, 103], "{what}: argmax's argument");
                assert_eq!(ints(&out[2].values), vec![100, 104], "{what}: argmin's argument");
            }
        }
    }
}
