//! General (out-of-order) aggregators and the out-of-order time-window
//! operator against naive recomputation.
//!
//! Part 1: every general aggregator x every operation it may run x random
//! sequences of appends (with skipped ids), late folds into any present slot,
//! replacements, evictions anywhere and up to an id, bulk updates and queries,
//! against a model that keeps each slot's raw rows in a map and answers with
//! the independent oracle (`common::plain`). Floats compare as
//! `common::agrees` says, the rest exactly.

use std::collections::BTreeMap;

use crate::common::{agrees, every_op, plain_rows, value, xorshift, Cell, Close, FromF64, PerOp, ToCell, ToVal};
use proptest::prelude::*;
use slidewise_core::engine::AggKind;
use slidewise_core::general::{build, LateAlgorithm};
use slidewise_core::ops::*;
use slidewise_core::AggOp;

#[derive(Clone, Debug)]
enum Step {
    Append(u64, (f64, bool)),
    Late(usize, (f64, bool)),
    Set(usize, (f64, bool)),
    Evict(usize),
    EvictUpto(u64),
    Query,
    Bulk(Vec<(Option<usize>, (f64, bool))>),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => ((0u64..3).prop_map(|g| if g == 2 { 1 } else { 0 }), value(false, 0.9)).prop_map(|(g, v)| Step::Append(g, v)),
        4 => (any::<usize>(), value(false, 0.9)).prop_map(|(c, v)| Step::Late(c, v)),
        1 => (any::<usize>(), value(false, 0.9)).prop_map(|(c, v)| Step::Set(c, v)),
        1 => any::<usize>().prop_map(Step::Evict),
        3 => (0u64..5).prop_map(Step::EvictUpto),
        3 => Just(Step::Query),
        1 => prop::collection::vec((prop::option::weighted(0.6, any::<usize>()), value(false, 0.9)), 0..40).prop_map(Step::Bulk),
    ]
}

impl PerOp for [Step] {
    /// Every algorithm against the map model over these steps.
    fn run<M>(&self) -> Result<(), TestCaseError>
    where
        M: AggOp,
        M::In: FromF64 + ToCell,
        M::Out: Close + ToVal,
    {
        let agg = AggKind::parse(M::NAME).unwrap();
        // The independent oracle over the slots' raw rows, in slot order and
        // within a slot in the order they were folded in.
        let oracle = |model: &BTreeMap<u64, Vec<(i64, Option<Cell>)>>| {
            let rows: Vec<(i64, Option<Cell>)> = model.values().flatten().copied().collect();
            plain_rows(agg, &rows, 0)
        };
        for algo in LateAlgorithm::ALL {
            if algo.check::<M>().is_err() {
                prop_assert!(build::<M>(algo, 8).is_err());
                continue;
            }
            let mut model: BTreeMap<u64, Vec<(i64, Option<Cell>)>> = BTreeMap::new();
            let mut end = 0u64;
            let mut got = build::<M>(algo, 8).unwrap();
            let mut pos = 0i64;
            // A row lifted for the aggregator, and raw for the model.
            let mut lift = |(x, ok): (f64, bool)| {
                pos += 1;
                let raw = (pos, ok.then(|| M::In::from_f64(x).cell()));
                (if ok { M::lift(M::In::from_f64(x), pos) } else { M::lift_null(pos) }, vec![raw])
            };
            let pick = |model: &BTreeMap<u64, Vec<(i64, Option<Cell>)>>, c: usize| -> Option<u64> {
                (!model.is_empty()).then(|| *model.keys().nth(c % model.len()).unwrap())
            };
            for (i, s) in self.iter().enumerate() {
                let ctx = || format!("{} on {} at step {i} ({s:?})", algo.name(), M::NAME);
                match s {
                    Step::Append(gap, v) => {
                        let id = end + gap;
                        let (p, raw) = lift(*v);
                        model.insert(id, raw);
                        end = id + 1;
                        got.insert(id, p).unwrap();
                    }
                    Step::Late(c, v) => {
                        if let Some(id) = pick(&model, *c) {
                            let (p, raw) = lift(*v);
                            model.get_mut(&id).unwrap().extend(raw);
                            prop_assert!(got.insert(id, p).is_ok(), "{}", ctx());
                        }
                    }
                    Step::Set(c, v) => {
                        if let Some(id) = pick(&model, *c) {
                            let (p, raw) = lift(*v);
                            model.insert(id, raw);
                            prop_assert!(got.bulk_set(&[(id, p)]).is_ok(), "{}", ctx());
                        }
                    }
                    Step::Evict(c) => {
                        if let Some(id) = pick(&model, *c) {
                            model.remove(&id);
                            got.evict(id);
                        }
                    }
                    Step::EvictUpto(k) => {
                        let id = model.keys().next().map_or(end, |f| f + k);
                        model.retain(|&x, _| x >= id);
                        got.evict_upto(id);
                    }
                    Step::Query => {
                        let (a, sc) = oracle(&model);
                        let b = M::lower(&got.query()).val();
                        prop_assert!(agrees(agg, &b, &a, sc), "{}: oracle {:?} vs {:?}", ctx(), a, b);
                    }
                    Step::Bulk(ups) => {
                        let mut batch = Vec::new();
                        for (c, v) in ups {
                            let (p, raw) = lift(*v);
                            let id = match c.and_then(|c| pick(&model, c)) {
                                Some(id) => {
                                    model.get_mut(&id).unwrap().extend(raw);
                                    id
                                }
                                None => {
                                    model.insert(end, raw);
                                    end += 1;
                                    end - 1
                                }
                            };
                            batch.push((id, p));
                        }
                        prop_assert!(got.bulk_insert(&batch).is_ok(), "{}", ctx());
                    }
                }
                prop_assert_eq!(model.len(), got.len(), "{}: len", ctx());
            }
            let (a, sc) = oracle(&model);
            let b = M::lower(&got.query()).val();
            prop_assert!(agrees(agg, &b, &a, sc), "{} on {} at the end: oracle {:?} vs {:?}", algo.name(), M::NAME, a, b);
            let keys: Vec<u64> = got.contents().iter().map(|c| c.0).collect();
            prop_assert_eq!(keys, model.keys().copied().collect::<Vec<_>>());
            // An absent slot below the end is refused, never silently created.
            if let Some(&last) = model.keys().next_back() {
                if !model.contains_key(&(last.wrapping_sub(1))) && last > 0 && got.end() > last - 1 {
                    prop_assert!(got.insert(last - 1, M::identity()).is_err(), "{}: absent slot accepted", algo.name());
                }
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn general_f64(steps in prop::collection::vec(step(), 0..160)) {
        every_op::<f64, _>(&steps[..])?;
    }

    #[test]
    fn general_i64(steps in prop::collection::vec(step(), 0..160)) {
        every_op::<i64, _>(&steps[..])?;
    }
}

/// Long windows: CBiX crosses checkpoints, FlatFAT inverts, resizes and
/// compacts; sum over i64 is exact, so any misplaced partial shows.
#[test]
fn sliding_with_late_partials_long() {
    use slidewise_core::general::GeneralAggregator;
    type M = Sum<i64>;
    for algo in LateAlgorithm::ALL {
        for n in [1usize, 3, 17, 100] {
            let mut a: Box<dyn GeneralAggregator<M>> = build::<M>(algo, n).unwrap();
            let mut model: BTreeMap<u64, i64> = BTreeMap::new();
            let mut x = 12345u64;
            let mut rnd = || xorshift(&mut x);
            for id in 0..2000u64 {
                let v = (rnd() % 1000) as i64;
                a.insert(id, M::lift(v, 0)).unwrap();
                *model.entry(id).or_default() += v;
                for _ in 0..(rnd() % 3) {
                    let late = id - rnd() % (n as u64).min(id + 1);
                    if model.contains_key(&late) {
                        a.insert(late, M::lift(7, 0)).unwrap();
                        *model.get_mut(&late).unwrap() += 7;
                    }
                }
                if id + 1 >= n as u64 {
                    a.evict_upto(id + 1 - n as u64);
                    model.retain(|&k, _| k + n as u64 > id);
                }
                let want: i64 = model.values().sum();
                assert_eq!(M::lower(&a.query()), Some(want), "{} n={n} id={id}", algo.name());
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Part 2: out-of-order time windows (the stream spine with a lateness)
// against a naive model.
//
// Streams: sorted times with random gaps, shuffled within distance d
// (bounded disorder), values with nulls and NaN; random lateness, one or two
// queries (slide above, equal to or below range), random batch cuts and a
// save/restore at a random batch. The model replays Spark's per-batch
// watermark: a batch's rows are judged against the watermark W the batch
// found (the largest time of every earlier batch minus the lateness); a row
// is late when some query's last window holding it ends at or before W;
// an on-time row joins each window holding it that ends after W (windows
// ending at or before W were emitted, final). A window holding a row is
// emitted by the first batch that leaves the watermark at or past its end,
// else by the flush, its value the fold of its rows in event-time order
// (ties by arrival). Every emitted window must be one of them with the same
// value and batch, in order, each exactly once; late rows handed back in
// order; rows in == on time + late.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, Int32Array, Int64Array};
use slidewise_core::engine::{DType, OutBuilder, ToArrow};
use slidewise_core::stream::time::TimeSpec;
use slidewise_core::stream::{QuerySpec, StreamSpec, Window};

use crate::common::{batch_ranges, run_stream, Cols, Val};

#[derive(Clone, Debug)]
struct Stream {
    rows: Vec<(i64, Option<f64>)>,
    lateness: i64,
    specs: Vec<(i64, i64, u64)>,
    cuts: Vec<usize>,
    save_at: usize,
}

fn stream() -> impl Strategy<Value = Stream> {
    let rows = (prop::collection::vec((0i64..4, value(false, 0.9)), 0..120), 0usize..12, any::<u64>()).prop_map(|(gaps, d, seed)| {
        let mut t = -7i64;
        let mut rows: Vec<(i64, Option<f64>)> = gaps
            .into_iter()
            .map(|(g, (x, ok))| {
                t += g;
                (t, ok.then_some(x))
            })
            .collect();
        // Shuffle within distance d.
        let mut s = seed | 1;
        for i in 0..rows.len() {
            let j = i + (xorshift(&mut s) as usize) % (d + 1);
            if j < rows.len() {
                rows.swap(i, j);
            }
        }
        rows
    });
    let spec = (1i64..12, 1i64..8, prop::option::weighted(0.2, 1u64..4)).prop_map(|(r, s, mp)| (r, s, mp.unwrap_or(0)));
    (rows, 0i64..15, prop::collection::vec(spec, 1..3), prop::collection::vec(0usize..200, 0..6), 0usize..8)
        .prop_map(|(rows, lateness, specs, mut cuts, save_at)| {
            cuts.sort_unstable();
            Stream { rows, lateness, specs, cuts, save_at }
        })
}

fn f64s(a: &ArrayRef) -> Vec<Option<f64>> {
    let any = a.as_any();
    let n = a.len();
    let get = |i: usize, v: f64| if a.is_valid(i) { Some(v) } else { None };
    if let Some(x) = any.downcast_ref::<Float64Array>() {
        (0..n).map(|i| get(i, x.value(i))).collect()
    } else if let Some(x) = any.downcast_ref::<Float32Array>() {
        (0..n).map(|i| get(i, x.value(i) as f64)).collect()
    } else if let Some(x) = any.downcast_ref::<Int64Array>() {
        (0..n).map(|i| get(i, x.value(i) as f64)).collect()
    } else if let Some(x) = any.downcast_ref::<Int32Array>() {
        (0..n).map(|i| get(i, x.value(i) as f64)).collect()
    } else {
        // Lists (collect): compare their debug text element by element.
        (0..n).map(|i| if a.is_valid(i) { Some(format!("{:?}", a.slice(i, 1)).len() as f64) } else { None }).collect()
    }
}

fn same(a: &ArrayRef, b: &ArrayRef) -> bool {
    if let DataType::List(_) = a.data_type() {
        return format!("{a:?}") == format!("{b:?}");
    }
    let (x, y) = (f64s(a), f64s(b));
    x.len() == y.len() && x.iter().zip(&y).all(|(p, q)| p.close(q))
}

use arrow_schema::DataType;

/// The end of the last window of `sp` holding `t` (none in a gap of a slide
/// larger than the range).
fn last_end(sp: &TimeSpec, t: i64) -> Option<i64> {
    let e = t.div_euclid(sp.slide) * sp.slide + sp.range;
    (e > t).then_some(e)
}

fn late_run<M>(agg: AggKind, st: &Stream) -> Result<(), TestCaseError>
where
    M: AggOp,
    M::In: FromF64,
    M::Out: ToArrow,
{
    let specs: Vec<TimeSpec> =
        st.specs.iter().map(|&(range, slide, mp)| TimeSpec { agg, range, slide, min_periods: mp }).collect();
    let n = st.rows.len();
    let batches = batch_ranges(&st.cuts, n);
    // The model, batch by batch.
    let mut late: Vec<(i64, Option<f64>)> = Vec::new();
    // Per query, window j -> its rows (time, arrival, value).
    let mut wins: Vec<std::collections::BTreeMap<i64, Vec<(i64, usize, Option<f64>)>>> = vec![Default::default(); specs.len()];
    let mut max_ts: Option<i64> = None;
    let mut wm_after: Vec<Option<i64>> = Vec::new();
    for r in &batches {
        let wm = max_ts.map(|m| m - st.lateness);
        for i in r.clone() {
            let (t, v) = st.rows[i];
            if wm.is_some_and(|wm| specs.iter().any(|sp| last_end(sp, t).is_some_and(|e| e <= wm))) {
                late.push((t, v));
                continue;
            }
            for (q, sp) in specs.iter().enumerate() {
                for j in (t - sp.range).div_euclid(sp.slide) + 1..=t.div_euclid(sp.slide) {
                    if wm.is_none_or(|wm| j * sp.slide + sp.range > wm) {
                        wins[q].entry(j).or_default().push((t, i, v));
                    }
                }
            }
        }
        max_ts = st.rows[r.clone()].iter().map(|x| x.0).chain(max_ts).max();
        wm_after.push(max_ts.map(|m| m - st.lateness));
    }
    let mut want: Vec<(Vec<i64>, Vec<i64>, Vec<usize>, ArrayRef)> = Vec::new();
    for (q, sp) in specs.iter().enumerate() {
        let mut out = OutBuilder::<M::Out>::with_capacity(wins[q].len());
        let (mut s, mut e, mut b) = (Vec::new(), Vec::new(), Vec::new());
        for (&j, rows) in &wins[q] {
            let (a, z) = (j * sp.slide, j * sp.slide + sp.range);
            let mut rows = rows.clone();
            rows.sort_by_key(|r| (r.0, r.1));
            let vals: Vec<M::Agg> = rows
                .iter()
                .filter_map(|r| match r.2 {
                    Some(x) => Some(M::lift(M::In::from_f64(x), r.0)),
                    None => M::NULL_IS_ROW.then(|| M::lift_null(r.0)),
                })
                .collect();
            let valid = rows.iter().filter(|r| r.2.is_some()).count();
            let ok = sp.min_periods == 0 || valid as u64 >= sp.min_periods;
            out.push(if ok { M::lower(&slidewise_core::monoid::fold::<M>(&vals)) } else { None });
            s.push(a);
            e.push(z);
            b.push(wm_after.iter().position(|w| w.is_some_and(|w| w >= z)).unwrap_or(batches.len()));
        }
        want.push((s, e, b, out.finish()));
    }
    let queries: Vec<QuerySpec> = specs
        .iter()
        .map(|sp| QuerySpec { agg, window: Window::Time { range: sp.range, slide: sp.slide }, min_periods: sp.min_periods, arg: None })
        .collect();
    let vals: ArrayRef = Arc::new(Float64Array::from(st.rows.iter().map(|r| r.1).collect::<Vec<_>>()));
    let ts: ArrayRef = Arc::new(Int64Array::from(st.rows.iter().map(|r| r.0).collect::<Vec<_>>()));
    for algo in [LateAlgorithm::Cbix, LateAlgorithm::FlatFat, LateAlgorithm::TwoStacks, LateAlgorithm::Recalc, LateAlgorithm::Auto] {
        let mut spec = StreamSpec::new(queries.clone(), DType::F64);
        spec.algorithm = algo.name().into();
        spec.lateness = Some(st.lateness);
        if algo.resolve::<M>().check::<M>().is_err() {
            let e = slidewise_core::stream::build(&spec).err().expect("cbix must refuse an order-sensitive op").to_string();
            prop_assert!(e.contains("cbix") && e.contains(M::NAME), "{e}");
            continue;
        }
        let ctx = |what: &str| format!("{} on {}: {what}; {st:?}", algo.name(), M::NAME);
        let save = Some((st.save_at % batches.len(), &spec));
        let run = run_stream(&spec, Cols { values: &vals, ts: Some(&ts), keys: None }, &st.cuts, save).unwrap();
        for (q, ws) in run.windows.iter().enumerate() {
            for w in ws.iter().filter(|w| w.batch < run.batches) {
                let wm = run.watermarks[w.batch];
                prop_assert!(wm.is_some_and(|wm| w.end <= wm), "{}", ctx("emitted before the watermark passed"));
            }
            let got_s: Vec<i64> = ws.iter().map(|w| w.start).collect();
            let got_e: Vec<i64> = ws.iter().map(|w| w.end).collect();
            let got_b: Vec<usize> = ws.iter().map(|w| w.batch).collect();
            prop_assert_eq!(&got_s, &want[q].0, "{}", ctx("window starts"));
            prop_assert_eq!(&got_e, &want[q].1, "{}", ctx("window ends"));
            prop_assert_eq!(&got_b, &want[q].2, "{}", ctx("emitting batch"));
            let parts: Vec<&dyn Array> = ws.iter().map(|w| w.value.as_ref()).collect();
            let all = arrow_select_concat(&parts);
            prop_assert!(same(&all, &want[q].3), "{}: got {:?} want {:?}", ctx("values"), all, want[q].3);
        }
        let c = run.counts;
        prop_assert_eq!(c.rows_in, n as u64, "{}", ctx("rows in"));
        prop_assert_eq!(c.rows_in, c.on_time + c.late, "{}", ctx("accounting"));
        prop_assert_eq!(c.late as usize, late.len(), "{}", ctx("late count"));
        let late_ok = run.late.len() == late.len()
            && run.late.iter().zip(&late).all(|(a, b)| {
                a.0.is_none()
                    && a.1 == b.0
                    && match (&a.2, b.1) {
                        (Val::Null, None) => true,
                        (Val::F(x), Some(y)) => x.close(&y),
                        _ => false,
                    }
            });
        prop_assert!(late_ok, "{}", ctx("late rows"));
    }
    Ok(())
}

/// Concatenate result arrays of one type without arrow-select: rebuild
/// through their values (only the types slidewise emits).
fn arrow_select_concat(parts: &[&dyn Array]) -> ArrayRef {
    let dt = parts.first().map(|p| p.data_type().clone()).unwrap_or(DataType::Float64);
    if let DataType::List(_) = dt {
        // Debug text of a list array is compared whole; glue the pieces.
        let mut v: Vec<Option<Vec<f64>>> = Vec::new();
        for p in parts {
            let l = p.as_any().downcast_ref::<arrow_array::ListArray>().unwrap();
            for i in 0..l.len() {
                v.push(if l.is_valid(i) {
                    let a = l.value(i);
                    Some(f64s(&a).into_iter().map(|x| x.unwrap_or(f64::NAN)).collect())
                } else {
                    None
                });
            }
        }
        let mut b = OutBuilder::<Vec<f64>>::with_capacity(v.len());
        for x in v {
            b.push(x);
        }
        return b.finish();
    }
    let mut b = OutBuilder::<f64>::with_capacity(16);
    for p in parts {
        let a: ArrayRef = arrow_array::make_array(p.to_data());
        for x in f64s(&a) {
            b.push(x);
        }
    }
    b.finish()
}

fn late_all(st: &Stream) -> Result<(), TestCaseError> {
    for agg in AggKind::ALL {
        slidewise_core::with_op!(agg, f64, |Op| late_run::<Op>(agg, st))?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn late_window_vs_naive(st in stream()) {
        late_all(&st)?;
    }
}
