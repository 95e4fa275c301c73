//! Count windows with Pairs partials equal the naive recomputation of every
//! window, for random ranges and slides (with and without fragments, and
//! slide > range), random batch boundaries, every algorithm, nulls and NaN;
//! a checkpoint taken mid-stream continues with the same results.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float64Array, Int64Array};
use crate::common::{agrees_row, batch_ranges, f64_column, naive, nullable_values, same_approx};
use proptest::prelude::*;
use slidewise_core::engine::{AggKind, DType};
use slidewise_core::fifo::Algorithm;
use slidewise_core::window::{build, build_shared, load, CountSpec, CountWindowOp};

/// Every aggregation (the oracle is independent: `common::plain`).
const AGGS: [AggKind; 18] = AggKind::ALL;

fn run_stream(w: &mut Box<dyn CountWindowOp>, xs: &[Option<f64>], cuts: &[usize]) -> (Vec<i64>, Vec<i64>, Vec<ArrayRef>) {
    let (mut st, mut en, mut vals) = (vec![], vec![], vec![]);
    for r in batch_ranges(cuts, xs.len()) {
        let b = w.push(&f64_column(&xs[r]), None).unwrap();
        st.extend(b.start);
        en.extend(b.end);
        vals.push(b.values);
    }
    (st, en, vals)
}

fn flat(vals: &[ArrayRef]) -> Vec<ArrayRef> {
    // Split every batch result into single-row slices for comparison.
    vals.iter().flat_map(|a| (0..a.len()).map(move |i| a.slice(i, 1))).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn pairs_windows_equal_naive(
        xs in nullable_values(),
        range in 1u64..40,
        slide in 1u64..15,
        mut cuts in prop::collection::vec(0usize..400, 0..6),
        algo in prop::sample::select(Algorithm::ALL.to_vec()),
        min_periods in 0u64..3,
    ) {
        cuts.sort();
        for agg in AGGS {
            let spec = CountSpec { agg, range, slide, min_periods: min_periods.min(range) };
            let mut w = match build(&spec, DType::F64, algo) {
                Ok(w) => w,
                Err(_) => continue, // SoE with a non-invertible agg refuses
            };
            let (st, en, vals) = run_stream(&mut w, &xs, &cuts);
            let fl = w.flush().unwrap();
            let (mut st, mut en, mut vals) = (st, en, flat(&vals));
            st.extend(fl.start);
            en.extend(fl.end);
            vals.extend(flat(&[fl.values]));
            let (nst, nen, nvals) = naive(&spec, &xs, true);
            prop_assert_eq!(&st, &nst, "{:?} {}", agg, algo.name());
            prop_assert_eq!(&en, &nen);
            for (i, (a, b)) in vals.iter().zip(&nvals).enumerate() {
                prop_assert!(agrees_row(agg, a.as_ref(), b), "{:?} {} window {}: {:?} vs {:?}", agg, algo.name(), i, a, b);
            }
        }
    }

    #[test]
    fn checkpoint_mid_stream_continues_identically(
        xs in nullable_values(),
        range in 1u64..30,
        slide in 1u64..10,
        cut in 0usize..400,
    ) {
        let cut = cut.min(xs.len());
        for agg in [AggKind::Sum, AggKind::Max, AggKind::Collect, AggKind::Std] {
            let spec = CountSpec { agg, range, slide, min_periods: 0 };
            let mut a = build(&spec, DType::F64, Algorithm::TwoStacks).unwrap();
            let whole = a.push(&f64_column(&xs), None).unwrap();
            let mut b = build(&spec, DType::F64, Algorithm::TwoStacks).unwrap();
            let first = b.push(&f64_column(&xs[..cut]), None).unwrap();
            let mut bytes = Vec::new();
            b.save(&mut bytes);
            let mut c = load(&spec, DType::F64, Algorithm::FlatFat, &mut bytes.as_slice()).unwrap();
            let second = c.push(&f64_column(&xs[cut..]), None).unwrap();
            let mut got = flat(&[first.values]);
            got.extend(flat(&[second.values]));
            let want = flat(&[whole.values]);
            prop_assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                prop_assert!(same_approx(g.as_ref(), w.as_ref()));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Every query of a shared plan gives exactly what it gives alone.
    #[test]
    fn shared_plan_equals_each_query_alone(
        xs in nullable_values(),
        qs in prop::collection::vec((1u64..50, 1u64..12), 1..6),
        mut cuts in prop::collection::vec(0usize..400, 0..5),
        algo in prop::sample::select(Algorithm::ALL.to_vec()),
        agg in prop::sample::select(vec![AggKind::Max, AggKind::Sum, AggKind::ArgMin, AggKind::Collect, AggKind::Mean]),
    ) {
        cuts.sort();
        let specs: Vec<CountSpec> = qs.iter().map(|&(range, slide)| CountSpec { agg, range, slide, min_periods: 0 }).collect();
        let mut shared = match build_shared(&specs, DType::F64, algo) { Ok(w) => w, Err(_) => return Ok(()) };
        let mut per_query: Vec<Vec<ArrayRef>> = vec![Vec::new(); specs.len()];
        let mut ends: Vec<Vec<i64>> = vec![Vec::new(); specs.len()];
        for r in batch_ranges(&cuts, xs.len()) {
            for (q, b) in shared.push(&f64_column(&xs[r]), None).unwrap().into_iter().enumerate() {
                per_query[q].push(b.values);
                ends[q].extend(b.end);
            }
        }
        for (q, b) in shared.flush().unwrap().into_iter().enumerate() {
            per_query[q].push(b.values);
            ends[q].extend(b.end);
        }
        for (q, spec) in specs.iter().enumerate() {
            let mut alone = build(spec, DType::F64, Algorithm::Recalc).unwrap();
            let mut want = vec![alone.push(&f64_column(&xs), None).unwrap()];
            want.push(alone.flush().unwrap());
            let want_ends: Vec<i64> = want.iter().flat_map(|b| b.end.clone()).collect();
            prop_assert_eq!(&ends[q], &want_ends, "query {:?}", spec);
            let got = flat(&per_query[q]);
            let want = flat(&want.into_iter().map(|b| b.values).collect::<Vec<_>>());
            for (g, w) in got.iter().zip(&want) {
                prop_assert!(same_approx(g.as_ref(), w.as_ref()), "query {:?} {}: {:?} vs {:?}", spec, algo.name(), g, w);
            }
        }
    }
}

#[test]
fn bad_specs_are_refused_with_a_message() {
    let e = build(&CountSpec { agg: AggKind::Sum, range: 0, slide: 1, min_periods: 0 }, DType::F64, Algorithm::Auto)
        .err()
        .unwrap();
    assert!(e.to_string().contains("range"));
    let e = build(&CountSpec { agg: AggKind::Max, range: 5, slide: 1, min_periods: 0 }, DType::F64, Algorithm::Soe)
        .err()
        .unwrap();
    assert!(e.to_string().contains("soe") && e.to_string().contains("max"), "{e}");
    let mut w = build(&CountSpec { agg: AggKind::Sum, range: 5, slide: 1, min_periods: 0 }, DType::I64, Algorithm::Auto).unwrap();
    let e = w.push(&(Arc::new(Float64Array::from(vec![1.0])) as ArrayRef), None).err().unwrap();
    assert!(e.to_string().contains("int64") || e.to_string().contains("i64"), "{e}");
    let ok = w.push(&(Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef), None).unwrap();
    assert_eq!(ok.end, vec![1, 2, 3]);
}
