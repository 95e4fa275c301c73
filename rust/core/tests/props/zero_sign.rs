//! max / min return the value of the earliest row among those tied at the
//! extreme (Spark's `greatest` / `least` fold over the frame, comparing with
//! -0.0 == 0.0 and NaN equal to NaN and above every number;
//! docs/DESIGN.md §5.3), compared bit for bit (all NaNs equal), on values
//! drawn from {-0.0, 0.0, NaN, small ints} with nulls, through every path:
//! `rolling` with every algorithm (auto's kernels and each FIFO aggregator),
//! the extreme kernel at every SIMD level this CPU has (and its two-level
//! form on long columns), time windows, keyed, `rolling_many` (forced
//! chunks and threads), the pane reductions at every level, count-window
//! streams with every algorithm, and the general (late-data) aggregators
//! fed in order.
//!
//! The oracle is a left-to-right fold that replaces its value only with a
//! strictly better one; it shares no code with the library.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, Int64Array};
use proptest::prelude::*;
use slidewise_core::engine::{AggKind, DType};
use slidewise_core::fifo::Algorithm;
use slidewise_core::general::{self, LateAlgorithm};
use slidewise_core::ops::reduce::{available, PaneReduce};
use slidewise_core::ops::{Max, Min, Num};
use slidewise_core::rolling::{
    extreme_values_at, rolling_dyn, rolling_keyed_dyn, rolling_many_tuned, rolling_time_dyn, Closed, Shape, Tuning,
};
use slidewise_core::stream::count::CountSpec;
use slidewise_core::{AggOp, Monoid};

use crate::common::{count_query, run_stream, stream_spec, val_at, Cols, Val};

/// -0.0, 0.0, NaN and small integers, each valid (else null) 85% of the time.
fn zvalue() -> impl Strategy<Value = Option<f64>> {
    let v = prop_oneof![3 => Just(-0.0), 3 => Just(0.0), 1 => Just(f64::NAN), 2 => (-2i32..3).prop_map(|x| x as f64)];
    prop::option::weighted(0.85, v)
}

/// `b` strictly beats `a` (NaN above every number, -0.0 == 0.0).
fn beats(max: bool, a: f64, b: f64) -> bool {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => false,
        (false, true) => max,
        (true, false) => !max,
        (false, false) => if max { b > a } else { b < a },
    }
}

/// The fold of Spark's greatest / least over the non-null rows, oldest first.
fn oracle(max: bool, rows: &[Option<f64>]) -> Option<f64> {
    rows.iter().flatten().fold(None, |acc: Option<f64>, &v| match acc {
        Some(a) if !beats(max, a, v) => Some(a),
        _ => Some(v),
    })
}

/// Same bits (any NaN equal to any NaN).
fn same(g: Option<f64>, w: Option<f64>) -> bool {
    match (g, w) {
        (None, None) => true,
        (Some(a), Some(b)) => (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits(),
        _ => false,
    }
}

fn got(a: &dyn Array, i: usize) -> Option<f64> {
    match val_at(a, i) {
        Val::Null => None,
        Val::F(x) => Some(x),
        v => panic!("not a float: {v:?}"),
    }
}

fn column(xs: &[Option<f64>], f32: bool) -> ArrayRef {
    if f32 {
        Arc::new(xs.iter().map(|x| x.map(|v| v as f32)).collect::<Float32Array>())
    } else {
        Arc::new(Float64Array::from(xs.to_vec()))
    }
}

fn aggs() -> [(AggKind, bool); 2] {
    [(AggKind::Max, true), (AggKind::Min, false)]
}

fn check_rows(what: &str, out: &dyn Array, want: impl Fn(usize) -> Option<f64>) -> Result<(), TestCaseError> {
    for i in 0..out.len() {
        let (g, w) = (got(out, i), want(i));
        prop_assert!(same(g, w), "{what}: row {i}: got {g:?} ({:?}), want {w:?} ({:?})", g.map(f64::to_bits), w.map(f64::to_bits));
    }
    Ok(())
}

fn deque_oracle(max: bool, x: &[f64], w: usize) -> Vec<f64> {
    // Monotonic deque; the back pops only when the new value is strictly
    // better, so the earliest of tied values stays in front.
    let mut q = std::collections::VecDeque::new();
    let mut out = Vec::with_capacity(x.len());
    for (i, &v) in x.iter().enumerate() {
        while q.back().is_some_and(|&j: &usize| beats(max, x[j], v)) {
            q.pop_back();
        }
        q.push_back(i);
        if q[0] + w <= i {
            q.pop_front();
        }
        out.push(x[q[0]]);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn rolling_every_algorithm(xs in prop::collection::vec(zvalue(), 0..200), w in prop_oneof![1usize..12, 1usize..250]) {
        for f32 in [false, true] {
            let col = column(&xs, f32);
            for (agg, max) in aggs() {
                let want = |i: usize| oracle(max, &xs[(i + 1).saturating_sub(w)..=i]);
                for algo in Algorithm::ALL.into_iter().chain([Algorithm::Auto]) {
                    let Ok(out) = rolling_dyn(&col, w, agg, None, algo, Shape::default()) else { continue };
                    check_rows(&format!("{} {} f32={f32} w={w}", agg.name(), algo.name()), &out, want)?;
                }
            }
        }
    }

    /// The extreme kernel at every level, on null-free columns.
    #[test]
    fn extreme_kernel_every_level(xs in prop::collection::vec(zvalue(), 0..600), w in prop_oneof![1usize..20, 1usize..700]) {
        let x: Vec<f64> = xs.iter().map(|v| v.unwrap_or(-0.0)).collect();
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        for max in [true, false] {
            let want = deque_oracle(max, &x, w);
            for level in available() {
                let (g, g32) = if max {
                    (extreme_values_at::<f64, true>(level, &x, w), extreme_values_at::<f32, true>(level, &x32, w))
                } else {
                    (extreme_values_at::<f64, false>(level, &x, w), extreme_values_at::<f32, false>(level, &x32, w))
                };
                for i in 0..x.len() {
                    prop_assert!(same(Some(g[i]), Some(want[i])), "max={max} {level:?} w={w} row {i}: {} vs {}", g[i], want[i]);
                    prop_assert!(same(Some(g32[i] as f64), Some(want[i])), "f32 max={max} {level:?} w={w} row {i}");
                }
            }
        }
    }

    #[test]
    fn time_windows(xs in prop::collection::vec(zvalue(), 0..150), gaps in prop::collection::vec(0i64..3, 150), span in 1i64..8) {
        let n = xs.len();
        let ts: Vec<i64> = gaps[..n].iter().scan(0i64, |t, g| { *t += g; Some(*t) }).collect();
        let tsa: ArrayRef = Arc::new(Int64Array::from(ts.clone()));
        let col = column(&xs, false);
        for (agg, max) in aggs() {
            let want = |i: usize| {
                let rows: Vec<Option<f64>> = (0..=i).filter(|&j| ts[j] > ts[i] - span).map(|j| xs[j]).collect();
                oracle(max, &rows)
            };
            for algo in Algorithm::ALL.into_iter().chain([Algorithm::Auto]) {
                let Ok(out) = rolling_time_dyn(&col, &tsa, span, agg, None, algo, Shape::default()) else { continue };
                check_rows(&format!("time {} {}", agg.name(), algo.name()), &out, want)?;
            }
        }
    }

    #[test]
    fn keyed(xs in prop::collection::vec(zvalue(), 0..200), ks in prop::collection::vec(0i64..3, 200), w in 1usize..20) {
        let n = xs.len();
        let keys: ArrayRef = Arc::new(Int64Array::from(ks[..n].to_vec()));
        let col = column(&xs, false);
        for (agg, max) in aggs() {
            let want = |i: usize| {
                let mine: Vec<usize> = (0..=i).filter(|&j| ks[j] == ks[i]).collect();
                let rows: Vec<Option<f64>> = mine[mine.len().saturating_sub(w)..].iter().map(|&j| xs[j]).collect();
                oracle(max, &rows)
            };
            let out = rolling_keyed_dyn(&keys, &col, w, agg, None, Algorithm::Auto, Shape::default()).unwrap();
            check_rows(&format!("keyed {}", agg.name()), &out, want)?;
        }
    }

    /// closed= / center=: a centred window cut by the end of the data (or
    /// of its key) keeps the earliest of its tied zeros too, unkeyed and
    /// keyed (short keys batched in one padded column).
    #[test]
    fn shaped_windows(
        xs in prop::collection::vec(zvalue(), 0..120),
        ks in prop::collection::vec(0i64..4, 120),
        w in prop_oneof![1usize..8, 1usize..60],
        center in any::<bool>(),
        closed in prop::sample::select(vec![Closed::Right, Closed::Left, Closed::Both, Closed::Neither]),
    ) {
        let n = xs.len();
        let shape = Shape { center, closed, ..Shape::default() };
        let (a, b) = shape.row_offsets(w);
        // rows [i + a, i + b] of `rows`, clipped
        let frame = |rows: &[usize], i: usize| -> Vec<Option<f64>> {
            let (s, e) = ((i as isize + a).max(0) as usize, (i as isize + b + 1).clamp(0, rows.len() as isize) as usize);
            rows[s.min(e)..e].iter().map(|&j| xs[j]).collect()
        };
        let keys: ArrayRef = Arc::new(Int64Array::from(ks[..n].to_vec()));
        let col = column(&xs, false);
        let all: Vec<usize> = (0..n).collect();
        for (agg, max) in aggs() {
            let Ok(out) = rolling_dyn(&col, w, agg, None, Algorithm::Auto, shape) else { continue };
            check_rows(&format!("{} {shape:?} w={w}", agg.name()), &out, |i| oracle(max, &frame(&all, i)))?;
            let out = rolling_keyed_dyn(&keys, &col, w, agg, None, Algorithm::Auto, shape).unwrap();
            check_rows(&format!("keyed {} {shape:?} w={w}", agg.name()), &out, |i| {
                let mine: Vec<usize> = (0..n).filter(|&j| ks[j] == ks[i]).collect();
                oracle(max, &frame(&mine, mine.iter().position(|&j| j == i).unwrap()))
            })?;
        }
    }

    #[test]
    fn many_windows(
        xs in prop::collection::vec(zvalue(), 0..300),
        ws in prop::collection::vec(1usize..70, 1..5),
        chunk in prop::option::of(1usize..40),
        threads in prop::option::of(1usize..4),
        f32 in any::<bool>(),
    ) {
        let col = column(&xs, f32);
        for (agg, max) in aggs() {
            let outs = rolling_many_tuned(&col, &ws, agg, None, Algorithm::Auto, Tuning { chunk, threads }).unwrap();
            for (out, &w) in outs.iter().zip(&ws) {
                check_rows(&format!("many {} w={w}", agg.name()), out, |i| oracle(max, &xs[(i + 1).saturating_sub(w)..=i]))?;
            }
        }
    }

    /// The pane reductions at every level return the earliest extreme's key.
    #[test]
    fn pane_reduction_every_level(xs in prop::collection::vec(zvalue(), 0..100)) {
        let x: Vec<f64> = xs.iter().flatten().copied().collect();
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        for level in available() {
            for max in [true, false] {
                let (k, k32) = if max {
                    (f64::max_key(level, &x), f32::max_key(level, &x32))
                } else {
                    (f64::min_key(level, &x), f32::min_key(level, &x32))
                };
                let low = if max { f64::KEY_LOW } else { f64::KEY_HIGH };
                let g = (k != low).then(|| f64::from_key(k));
                let g32 = (k32 != if max { f32::KEY_LOW } else { f32::KEY_HIGH }).then(|| f32::from_key(k32) as f64);
                let w = oracle(max, &xs.iter().flatten().map(|&v| Some(v)).collect::<Vec<_>>());
                prop_assert!(same(g, w), "{level:?} max={max}: {g:?} vs {w:?}");
                prop_assert!(same(g32, w), "f32 {level:?} max={max}: {g32:?} vs {w:?}");
            }
        }
    }

    /// Count-window streams (panes reduced by the SIMD reductions, windows by
    /// each FIFO aggregator), batches cut at random.
    #[test]
    fn streams_every_algorithm(
        xs in prop::collection::vec(zvalue(), 1..120),
        range in 1u64..12,
        slide in 1u64..5,
        cuts in prop::collection::vec(0usize..120, 0..4),
    ) {
        let v = column(&xs, false);
        for (agg, max) in aggs() {
            let spec = CountSpec { agg, range, slide, min_periods: 0 };
            for algo in ["auto", "recalc", "two_stacks", "daba", "flatfat", "bint", "flatfit", "slideside"] {
                let s = stream_spec(vec![count_query(&spec)], DType::F64, algo);
                let run = run_stream(&s, Cols { values: &v, ts: None, keys: None }, &cuts, None).unwrap();
                for e in &run.windows[0] {
                    let (lo, hi) = (e.start.max(0) as usize, e.end as usize);
                    let w = oracle(max, &xs[lo..hi]);
                    let g = got(e.value.as_ref(), 0);
                    prop_assert!(same(g, w), "stream {} {algo} [{lo}, {hi}): {g:?} vs {w:?}", agg.name());
                }
            }
        }
    }

    /// The general aggregators, fed in order with evictions.
    #[test]
    fn general_in_order(xs in prop::collection::vec(zvalue(), 1..100), w in 1usize..10) {
        for algo in LateAlgorithm::ALL {
            check_general::<Max<f64>>(algo, &xs, w, true)?;
            check_general::<Min<f64>>(algo, &xs, w, false)?;
        }
    }
}

fn check_general<M: AggOp<In = f64, Out = f64>>(algo: LateAlgorithm, xs: &[Option<f64>], w: usize, max: bool) -> Result<(), TestCaseError> {
    let mut g = general::build::<M>(algo, w).unwrap();
    for (i, x) in xs.iter().enumerate() {
        if i >= w {
            g.evict((i - w) as u64);
        }
        g.insert(i as u64, x.map_or_else(M::identity, |v| M::lift(v, i as i64))).unwrap();
        let got = M::lower(&g.query());
        let want = oracle(max, &xs[(i + 1).saturating_sub(w)..=i]);
        prop_assert!(same(got, want), "general {} {} row {i}: {got:?} vs {want:?}", algo.name(), M::NAME);
    }
    Ok(())
}

/// The two-level kernel (windows of 2^17 rows and more) on long columns of
/// zeros of both signs and small ints, at every level, against the deque.
#[test]
fn two_level_kernel_keeps_the_earliest_zero() {
    let n = (1 << 17) + 70_000;
    let mut s = 0x9e3779b97f4a7c15u64;
    let x: Vec<f64> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            match s % 16 {
                0 => 1.0,
                1 => -1.0,
                2..=8 => -0.0,
                _ => 0.0,
            }
        })
        .collect();
    // Mostly zeros: many windows' extreme is a zero, some a ±1.
    for w in [1 << 17, (1 << 17) + 4321, n - 3] {
        for level in available() {
            for max in [true, false] {
                let want = deque_oracle(max, &x, w);
                let g = if max { extreme_values_at::<f64, true>(level, &x, w) } else { extreme_values_at::<f64, false>(level, &x, w) };
                let bad = (0..n).find(|&i| g[i].to_bits() != want[i].to_bits());
                assert!(bad.is_none(), "w={w} {level:?} max={max}: row {bad:?}");
            }
        }
    }
    // The monoid keeps the older of tied zeros.
    assert_eq!(Max::<f64>::combine(&(-0.0f64).exact_key(), &0.0f64.exact_key()), (-0.0f64).exact_key());
    assert_eq!(Min::<f64>::combine(&0.0f64.exact_key(), &(-0.0f64).exact_key()), 0.0f64.exact_key());
}
