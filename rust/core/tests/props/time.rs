//! Time windows equal a naive Spark-style `groupBy(window(ts, range, slide))`
//! computed here by brute force, for random ranges, slides, gaps, duplicate
//! timestamps, several queries sharing a plan and random batch splits; per-row
//! time rolling equals a brute-force pandas-style window.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float64Array, Int64Array};
use crate::common::{run_stream, stream_spec, time_query, xorshift, Cols};
use proptest::prelude::*;
use slidewise_core::engine::{AggKind, DType};
use slidewise_core::fifo::Algorithm;
use slidewise_core::rolling::{rolling_time_dyn, rolling_time_keyed_dyn, rolling_time_split, Closed, Shape, Split};
use slidewise_core::stream::time::TimeSpec;
use slidewise_core::stream::{self, Batch};

fn rows() -> impl Strategy<Value = Vec<(i64, Option<f64>)>> {
    prop::collection::vec(
        (
            prop_oneof![6 => 0i64..3, 2 => 3i64..20, 1 => Just(200i64)],
            prop_oneof![8 => (-30i32..30).prop_map(|x| Some(x as f64)), 1 => Just(None)],
        ),
        0..150,
    )
    .prop_map(|v| {
        // deltas -> non-decreasing times starting anywhere (also negative)
        let mut t = -37i64;
        v.into_iter().map(|(d, x)| { t += d; (t, x) }).collect()
    })
}

/// Brute force: every window [start, start + range) with start a multiple of
/// slide that holds a row -> max and count of its non-null values.
fn naive(rows: &[(i64, Option<f64>)], range: i64, slide: i64) -> BTreeMap<(i64, i64), (Option<f64>, usize)> {
    let mut out = BTreeMap::new();
    for &(t, _) in rows {
        // starts s with s <= t < s + range, s multiple of slide
        let mut s = t.div_euclid(slide) * slide;
        while s > t - range {
            out.entry((s, s + range)).or_insert((None, 0));
            s -= slide;
        }
    }
    for (&(s, e), v) in out.iter_mut() {
        for &(t, x) in rows {
            if t >= s && t < e {
                if let Some(x) = x {
                    v.0 = Some(v.0.map_or(x, |m: f64| m.max(x)));
                    v.1 += 1;
                }
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn time_windows_equal_brute_force(
        rows in rows(),
        qs in prop::collection::vec((1i64..30, 1i64..12), 1..4),
        mut cuts in prop::collection::vec(0usize..150, 0..4),
        algo in prop::sample::select(vec![Algorithm::TwoStacks, Algorithm::FlatFit, Algorithm::Recalc, Algorithm::Daba]),
    ) {
        cuts.sort();
        for agg in [AggKind::Max, AggKind::Count] {
            let specs: Vec<TimeSpec> = qs.iter().map(|&(range, slide)| TimeSpec { agg, range, slide, min_periods: 0 }).collect();
            let spec = stream_spec(specs.iter().map(time_query).collect(), DType::F64, algo.name());
            let ts: ArrayRef = Arc::new(Int64Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>()));
            let vs: ArrayRef = Arc::new(Float64Array::from(rows.iter().map(|r| r.1).collect::<Vec<_>>()));
            let run = run_stream(&spec, Cols { values: &vs, ts: Some(&ts), keys: None }, &cuts, None).unwrap();
            let mut got: Vec<BTreeMap<(i64, i64), ArrayRef>> = vec![BTreeMap::new(); specs.len()];
            for (q, ws) in run.windows.iter().enumerate() {
                for w in ws {
                    let key = (w.start, w.end);
                    prop_assert!(!got[q].contains_key(&key), "window {:?} emitted twice", key);
                    got[q].insert(key, w.value.clone());
                }
            }
            for (q, &(range, slide)) in qs.iter().enumerate() {
                let want = naive(&rows, range, slide);
                prop_assert_eq!(got[q].keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "range {} slide {}", range, slide);
                for (k, (mx, n)) in &want {
                    let a = &got[q][k];
                    match agg {
                        AggKind::Max => {
                            let a = a.as_any().downcast_ref::<Float64Array>().unwrap();
                            prop_assert_eq!(a.is_valid(0).then(|| a.value(0)), *mx, "window {:?}", k);
                        }
                        _ => {
                            let a = a.as_any().downcast_ref::<Int64Array>().unwrap();
                            prop_assert_eq!(a.value(0), *n as i64);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn time_rolling_equals_brute_force(rows in rows(), range in 1i64..40) {
        let ts: ArrayRef = Arc::new(Int64Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>()));
        let vs: ArrayRef = Arc::new(Float64Array::from(rows.iter().map(|r| r.1).collect::<Vec<_>>()));
        let out = rolling_time_dyn(vs.as_ref(), ts.as_ref(), range, AggKind::Sum, None, Algorithm::Auto, Shape::default()).unwrap();
        let out = out.as_any().downcast_ref::<Float64Array>().unwrap();
        for i in 0..rows.len() {
            let xs: Vec<f64> = (0..=i).filter(|&j| rows[j].0 > rows[i].0 - range).filter_map(|j| rows[j].1).collect();
            let want = (!xs.is_empty()).then(|| xs.iter().sum::<f64>());
            prop_assert_eq!(out.is_valid(i).then(|| out.value(i)), want, "row {}", i);
        }
    }
}

/// Output rows as bits (float64) or values (int64); `None` where null.
fn out_bits(a: &ArrayRef) -> Vec<Option<u64>> {
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| match a.as_any().downcast_ref::<Float64Array>() {
            Some(f) => f.value(i).to_bits(),
            None => a.as_any().downcast_ref::<Int64Array>().unwrap().value(i) as u64,
        }))
        .collect()
}

/// Keyed time rolling under `auto` (keys `(i * 7 + i / 3) % nkeys`,
/// interleaved; short keys run in one call) gives each key's rows the bits
/// of `alone` over that key's rows alone.
#[allow(clippy::too_many_arguments)]
fn keyed_equals_each_key(vs: &ArrayRef, ts: &ArrayRef, nkeys: i64, range: i64, agg: AggKind, mp: usize, shape: Shape,
                         alone: Algorithm) -> Result<(), TestCaseError> {
    let key = |i: usize| (i as i64 * 7 + i as i64 / 3) % nkeys;
    let keys: ArrayRef = Arc::new(Int64Array::from((0..vs.len()).map(key).collect::<Vec<_>>()));
    let got = out_bits(&rolling_time_keyed_dyn(keys.as_ref(), vs.as_ref(), ts.as_ref(), range, agg, Some(mp), Algorithm::Auto, shape).unwrap());
    for k in 0..nkeys {
        let idx: Vec<u32> = (0..vs.len()).filter(|&i| key(i) == k).map(|i| i as u32).collect();
        let take = |a: &ArrayRef| arrow_select::take::take(a.as_ref(), &arrow_array::UInt32Array::from(idx.clone()), None).unwrap();
        let each = rolling_time_dyn(take(vs).as_ref(), take(ts).as_ref(), range, agg, Some(mp), alone, shape).unwrap();
        prop_assert_eq!(idx.iter().map(|&i| got[i as usize]).collect::<Vec<_>>(), out_bits(&each), "keyed {:?} key {}", agg, k);
    }
    Ok(())
}

/// Rows for max / min: ties, NaN, both zeros, nulls; times as [`rows`].
fn extreme_rows() -> impl Strategy<Value = Vec<(i64, Option<f64>)>> {
    (rows(), prop::collection::vec(prop_oneof![6 => Just(0u8), 1 => Just(1), 1 => Just(2), 1 => Just(3)], 150)).prop_map(|(r, how)| {
        r.into_iter()
            .zip(how)
            .map(|((t, x), h)| (t, x.map(|x| match h { 1 => f64::NAN, 2 => -0.0, 3 => 0.0, _ => (x / 8.0).round() })))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Time max / min under `auto` run TwoStacks laid flat
    /// (rolling/two_stacks_frames.rs); they equal the naive recomputation
    /// (Recalc) and TwoStacks bit for bit, value and validity, for every
    /// shape and `min_periods`, with ties, NaN, both zeros and nulls; keyed
    /// (short keys batched into one call) and split over threads as well.
    #[test]
    fn time_max_min_filter_equals_recalc(
        rows in extreme_rows(),
        range in 1i64..40,
        closed in prop::sample::select(vec![Closed::Right, Closed::Left, Closed::Both, Closed::Neither]),
        center in any::<bool>(),
        mp in 0usize..4,
        ints in any::<bool>(),
        nkeys in 1i64..4,
    ) {
        let ts: ArrayRef = Arc::new(Int64Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>()));
        let vs: ArrayRef = if ints {
            Arc::new(Int64Array::from(rows.iter().map(|r| r.1.filter(|x| !x.is_nan()).map(|x| x as i64)).collect::<Vec<_>>()))
        } else {
            Arc::new(Float64Array::from(rows.iter().map(|r| r.1).collect::<Vec<_>>()))
        };
        let shape = Shape { closed, center, step: 1 };
        for agg in [AggKind::Max, AggKind::Min] {
            let got = rolling_time_dyn(vs.as_ref(), ts.as_ref(), range, agg, Some(mp), Algorithm::Auto, shape).unwrap();
            for algo in [Algorithm::Recalc, Algorithm::TwoStacks] {
                let want = rolling_time_dyn(vs.as_ref(), ts.as_ref(), range, agg, Some(mp), algo, shape).unwrap();
                prop_assert_eq!(out_bits(&got), out_bits(&want), "{:?} vs {:?}", agg, algo);
            }
            keyed_equals_each_key(&vs, &ts, nkeys, range, agg, mp, shape, Algorithm::Recalc)?;
            parts_equal_one_pass(&vs, &ts, range, agg, mp, shape).map_err(TestCaseError::fail)?;
        }
    }
}

/// Rows for sums: times as [`rows`], values of very different sizes
/// (rounding shows), nulls, and now and then an inf or NaN (the FIFO's
/// path: the prefix kernel declines a column with one).
fn sum_rows() -> impl Strategy<Value = Vec<(i64, Option<f64>)>> {
    (rows(), prop::collection::vec(prop_oneof![6 => Just(0u8), 2 => Just(1), 2 => Just(2), 1 => Just(3)], 150), 0u8..12).prop_map(|(r, how, odd)| {
        r.into_iter()
            .zip(how)
            .enumerate()
            .map(|(i, ((t, x), h))| {
                let x = x.map(|x| match h { 1 => x * 1e6 + 0.1, 2 => x * 1e-3 + 1e-7, 3 => x * 1e15 + 0.3, _ => x });
                (t, if odd == 0 && i == 5 { Some(if h == 0 { f64::INFINITY } else { f64::NAN }) } else { x })
            })
            .collect()
    })
}

/// [`sum_rows`] as Arrow columns (times, values with 7.5 stored under each
/// null: a kernel that reads it fails), and a shape, `min_periods` and a
/// key count for them.
fn holey((rows, range, closed, center, mp, nkeys): (Vec<(i64, Option<f64>)>, i64, Closed, bool, usize, i64)) -> (ArrayRef, ArrayRef, i64, Shape, usize, i64) {
    let ts: ArrayRef = Arc::new(Int64Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>()));
    let under: Vec<f64> = rows.iter().map(|r| r.1.unwrap_or(7.5)).collect();
    let nulls = arrow_buffer::NullBuffer::from(rows.iter().map(|r| r.1.is_some()).collect::<Vec<_>>());
    let vs: ArrayRef = Arc::new(Float64Array::new(under.into(), Some(nulls)));
    (ts, vs, range, Shape { closed, center, step: 1 }, mp, nkeys)
}

fn holey_cases() -> impl Strategy<Value = (ArrayRef, ArrayRef, i64, Shape, usize, i64)> {
    let closed = prop::sample::select(vec![Closed::Right, Closed::Left, Closed::Both, Closed::Neither]);
    (sum_rows(), 1i64..40, closed, any::<bool>(), 0usize..4, 1i64..4).prop_map(holey)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Time sums, means and counts under `auto` run as prefix differences
    /// (rolling/prefix.rs `frame_sums`): they equal the naive recomputation
    /// (Recalc) for every shape and `min_periods`, with nulls and values of
    /// very different sizes: validity and counts exactly, sums and means to
    /// rounding (the result's, plus the prefix's compensated error far
    /// below any value's). Keyed (short keys in one call, a gap between
    /// them), each key gives the bits of `auto` over the key alone.
    #[test]
    fn time_sums_by_prefix_equal_recalc((ts, vs, range, shape, mp, nkeys) in holey_cases()) {
        let xs = vs.as_any().downcast_ref::<Float64Array>().unwrap();
        let big: f64 = xs.iter().flatten().filter(|x| x.is_finite()).map(f64::abs).sum();
        let vals = |a: &ArrayRef| -> Vec<Option<f64>> {
            (0..a.len()).map(|i| a.is_valid(i).then(|| match a.as_any().downcast_ref::<Float64Array>() {
                Some(f) => f.value(i),
                None => a.as_any().downcast_ref::<Int64Array>().unwrap().value(i) as f64,
            })).collect()
        };
        for agg in [AggKind::Sum, AggKind::Mean, AggKind::Count] {
            let got = vals(&rolling_time_dyn(vs.as_ref(), ts.as_ref(), range, agg, Some(mp), Algorithm::Auto, shape).unwrap());
            let want = vals(&rolling_time_dyn(vs.as_ref(), ts.as_ref(), range, agg, Some(mp), Algorithm::Recalc, shape).unwrap());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                prop_assert_eq!(g.is_some(), w.is_some(), "{:?} row {} validity", agg, i);
                if let (Some(g), Some(w)) = (g, w) {
                    let ok = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
                        || (g - w).abs() <= 4.0 * f64::EPSILON * w.abs() + 1e-25 * big;
                    prop_assert!(ok, "{:?} row {}: {} vs {}", agg, i, g, w);
                }
            }
            keyed_equals_each_key(&vs, &ts, nkeys, range, agg, mp, shape, Algorithm::Auto)?;
            parts_equal_one_pass(&vs, &ts, range, agg, mp, shape).map_err(TestCaseError::fail)?;
        }
    }
}

/// Time sums, means, counts and moments split over 2-5 threads (parts
/// cut where the one pass restarts its prefix: prefix.rs `in_parts`), and
/// max / min (cut anywhere), give the bits and validity of one thread.
fn parts_equal_one_pass(vs: &ArrayRef, ts: &ArrayRef, range: i64, agg: AggKind, mp: usize, shape: Shape) -> Result<(), String> {
    let run = |threads| rolling_time_split(vs.as_ref(), ts.as_ref(), range, agg, Some(mp), shape, Split { threads: Some(threads), min_rows: 1 }).unwrap();
    let one = out_bits(&run(1));
    for threads in 2..=5 {
        let got = out_bits(&run(threads));
        if let Some(i) = (0..one.len()).find(|&i| got[i] != one[i]) {
            return Err(format!("{agg:?} {threads} threads, row {i}: {:?} vs one thread's {:?}", got[i], one[i]));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Time var / std, sample and population, under `auto` run as prefix
    /// moment differences (rolling/prefix_moments.rs `frame_vars`): they
    /// equal the naive recomputation (Recalc, Chan's merges) for every
    /// shape and `min_periods`, with nulls (7.5 under each), values of very
    /// different sizes and now and then an inf or NaN: validity exactly,
    /// values to 1e-12 relative (the prefix's bound promises 2e-13 of
    /// `M2`; the rows it cannot vouch for are redone exactly). Keyed, each
    /// key gives the bits of `auto` over the key alone.
    #[test]
    fn time_vars_by_prefix_equal_recalc((ts, vs, range, shape, mp, nkeys) in holey_cases()) {
        for agg in [AggKind::Var, AggKind::Std, AggKind::VarPop, AggKind::StdPop] {
            let run = |algo| rolling_time_dyn(vs.as_ref(), ts.as_ref(), range, agg, Some(mp), algo, shape).unwrap();
            let (got, want) = (run(Algorithm::Auto), run(Algorithm::Recalc));
            let (got, want) = (got.as_any().downcast_ref::<Float64Array>().unwrap(), want.as_any().downcast_ref::<Float64Array>().unwrap());
            for i in 0..got.len() {
                prop_assert_eq!(got.is_valid(i), want.is_valid(i), "{:?} row {} validity", agg, i);
                if want.is_valid(i) {
                    let (g, w) = (got.value(i), want.value(i));
                    let ok = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-12 * w.abs();
                    prop_assert!(ok, "{:?} row {}: {} vs {}", agg, i, g, w);
                }
            }
            keyed_equals_each_key(&vs, &ts, nkeys, range, agg, mp, shape, Algorithm::Auto)?;
            parts_equal_one_pass(&vs, &ts, range, agg, mp, shape).map_err(TestCaseError::fail)?;
        }
    }
}

proptest! {
    /// After a gap longer than the window (every row held leaves at once),
    /// the rows from the gap on equal a run starting at the gap, bit for
    /// bit, under `auto` (TwoStacks: both stacks empty), TwoStacks and
    /// Subtract-on-Evict (its sum reset on empty): no rounding of the rows
    /// before reaches them. Keyed time rolling relies on it (`auto` only)
    /// to run short keys' sums and moments in one call. (FlatFAT is not so:
    /// its ring moves on, so the tree combines in another order.)
    #[test]
    fn a_gap_starts_afresh(
        xs in prop::collection::vec(prop_oneof![4 => (-1e6f64..1e6).prop_map(Some), 4 => (-1e-3f64..1e-3).prop_map(Some), 1 => Just(None)], 2..120),
        cut in any::<prop::sample::Index>(),
        deltas in prop::collection::vec(0i64..4, 120),
        range in 1i64..8,
        algo in prop::sample::select(vec![Algorithm::Auto, Algorithm::TwoStacks, Algorithm::Soe]),
        agg in prop::sample::select(vec![AggKind::Sum, AggKind::Mean, AggKind::Std, AggKind::Var]),
    ) {
        let g = cut.index(xs.len() - 1) + 1;
        let mut t = 0i64;
        let ts: Vec<i64> = (0..xs.len()).map(|i| { t += if i == g { range + 1 } else { deltas[i] }; t }).collect();
        let run = |lo: usize| {
            let vs: ArrayRef = Arc::new(Float64Array::from(xs[lo..].to_vec()));
            let ts: ArrayRef = Arc::new(Int64Array::from(ts[lo..].to_vec()));
            rolling_time_dyn(vs.as_ref(), ts.as_ref(), range, agg, None, algo, Shape::default())
        };
        let (Ok(all), Ok(tail)) = (run(0), run(g)) else {
            return Ok(()); // an algorithm without inverses refuses
        };
        let (all, tail) = (all.as_any().downcast_ref::<Float64Array>().unwrap(), tail.as_any().downcast_ref::<Float64Array>().unwrap());
        for i in g..xs.len() {
            let (a, b) = (all.is_valid(i).then(|| all.value(i).to_bits()), tail.is_valid(i - g).then(|| tail.value(i - g).to_bits()));
            prop_assert_eq!(a, b, "{:?} {:?} row {}", algo, agg, i);
        }
    }
}

/// Time var / std over columns long enough that the prefix restarts
/// without a gap (`FRAME_CHUNK` rows, once the window is at most a quarter
/// of them), with windows of ~200 and ~3,000 rows, clean and with nulls
/// and a NaN: as the naive recomputation, and keyed, each key as `auto`
/// over it alone. Sums, means, counts and moments there split over
/// threads give the bits of one.
#[test]
fn time_vars_restart_in_long_columns() {
    let mut st = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || xorshift(&mut st);
    let n = 20_000;
    let mut t = 0i64;
    let ts: Vec<i64> = (0..n).map(|_| { t += (next() % 4) as i64; t }).collect();
    let mut walk = 1e6;
    let xs: Vec<Option<f64>> = (0..n)
        .map(|i| {
            walk += (next() % 1001) as f64 / 1000.0 - 0.5;
            if i == 15_000 { Some(f64::NAN) } else if next() % 20 == 0 { None } else { Some(walk) }
        })
        .collect();
    let clean: Vec<Option<f64>> = xs.iter().map(|x| Some(x.filter(|v| v.is_finite()).unwrap_or(1e6))).collect();
    let ts: ArrayRef = Arc::new(Int64Array::from(ts));
    for (vs, range) in [(xs, 300), (clean.clone(), 300), (clean, 4_500)] {
        let vs: ArrayRef = Arc::new(Float64Array::from(vs));
        for agg in [AggKind::Std, AggKind::VarPop] {
            let run = |algo| rolling_time_dyn(vs.as_ref(), ts.as_ref(), range, agg, None, algo, Shape::default()).unwrap();
            let (got, want) = (run(Algorithm::Auto), run(Algorithm::Recalc));
            let (got, want) = (got.as_any().downcast_ref::<Float64Array>().unwrap(), want.as_any().downcast_ref::<Float64Array>().unwrap());
            for i in 0..n {
                assert_eq!(got.is_valid(i), want.is_valid(i), "{agg:?} {range} row {i}");
                let (g, w) = (got.value(i), want.value(i));
                assert!(!want.is_valid(i) || (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-12 * w.abs(), "{agg:?} {range} row {i}: {g} vs {w}");
            }
            keyed_equals_each_key(&vs, &ts, 3, range, agg, 0, Shape::default(), Algorithm::Auto).unwrap();
        }
        for agg in [AggKind::Sum, AggKind::Mean, AggKind::Count, AggKind::Std, AggKind::VarPop, AggKind::Max, AggKind::Min] {
            parts_equal_one_pass(&vs, &ts, range, agg, 0, Shape::default()).unwrap();
        }
    }
    // the sums' prefixes restart every `FRAME_CHUNK` rows here: a huge
    // value in one part's prefix is redone there (`settle`), not in the
    // others
    let mut spiky: Vec<Option<f64>> = (0..n).map(|i| Some((i % 97) as f64 * 1e-3)).collect();
    spiky[9_000] = Some(1.3e300);
    spiky[9_001] = Some(-1.3e300);
    let vs: ArrayRef = Arc::new(Float64Array::from(spiky));
    for agg in [AggKind::Sum, AggKind::Mean] {
        parts_equal_one_pass(&vs, &ts, 300, agg, 0, Shape::default()).unwrap();
    }
}

#[test]
fn out_of_order_rows_are_refused_naming_the_row() {
    let ts: ArrayRef = Arc::new(Int64Array::from(vec![5, 7, 6]));
    let vs: ArrayRef = Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0]));
    let e = rolling_time_dyn(vs.as_ref(), ts.as_ref(), 3, AggKind::Sum, None, Algorithm::Auto, Shape::default()).unwrap_err();
    assert!(e.to_string().contains("row 2"), "{e}");
    let spec = stream_spec(
        vec![time_query(&TimeSpec { agg: AggKind::Sum, range: 10, slide: 5, min_periods: 0 })],
        DType::F64,
        "auto",
    );
    let mut w = stream::build(&spec).unwrap();
    let (v, t) = (vs.slice(0, 2), ts.slice(0, 2));
    let mut b = Batch::new(v.as_ref());
    b.time = Some(t.as_ref());
    w.push(&b).unwrap();
    let late: ArrayRef = Arc::new(Int64Array::from(vec![6]));
    let v = vs.slice(2, 1);
    let mut b = Batch::new(v.as_ref());
    b.time = Some(late.as_ref());
    let e = w.push(&b).unwrap_err();
    assert!(e.to_string().contains("non-decreasing"), "{e}");
    // Without a time column, a time window refuses the batch.
    let e = w.push(&Batch::new(v.as_ref())).unwrap_err();
    assert!(e.to_string().contains("time column"), "{e}");
}
