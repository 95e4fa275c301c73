//! Count windows with Pairs partials equal the naive recomputation of every
//! window, for random ranges and slides (with and without fragments, and
//! slide > range), random batch boundaries, every algorithm, nulls and NaN;
//! a checkpoint taken mid-stream continues with the same results.

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array};
use crate::common::{agrees_row, count_query, f64_column, naive, nullable_values, run_stream, same_approx, stream_spec, Cols, Run};
use proptest::prelude::*;
use slidewise_core::engine::{AggKind, DType};
use slidewise_core::fifo::Algorithm;
use slidewise_core::stream::count::CountSpec;
use slidewise_core::stream::{self, Batch, StreamSpec};

/// Every aggregation (the oracle is independent: `common::plain`).
const AGGS: [AggKind; 20] = AggKind::ALL;

/// A stream of count-window queries `specs` running `algo`.
fn count_stream(specs: &[CountSpec], algo: Algorithm) -> StreamSpec {
    stream_spec(specs.iter().map(count_query).collect(), DType::F64, algo.name())
}

/// Push `xs` cut at `cuts` (saving and restoring under `restore` after that
/// batch), flush.
fn run(spec: &StreamSpec, xs: &[Option<f64>], cuts: &[usize], restore: Option<(usize, &StreamSpec)>) -> slidewise_core::Result<Run> {
    let v = f64_column(xs);
    run_stream(spec, Cols { values: &v, ts: None, keys: None }, cuts, restore)
}

/// Query `q`'s (starts, ends, values) over a run.
fn query(r: &Run, q: usize) -> (Vec<i64>, Vec<i64>, Vec<ArrayRef>) {
    let w = &r.windows[q];
    (w.iter().map(|e| e.start).collect(), w.iter().map(|e| e.end).collect(), w.iter().map(|e| e.value.clone()).collect())
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
            let stream = count_stream(&[spec.clone()], algo);
            if stream::build(&stream).is_err() {
                continue; // SoE with a non-invertible agg refuses
            }
            let run = run(&stream, &xs, &cuts, None).unwrap();
            let (st, en, vals) = query(&run, 0);
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
            let (two_stacks, flat_fat) = (count_stream(&[spec.clone()], Algorithm::TwoStacks), count_stream(&[spec], Algorithm::FlatFat));
            // One batch, against two batches saved after the first and
            // restored under another algorithm (the checkpoint holds the
            // window, not an algorithm's layout).
            let whole = run(&two_stacks, &xs, &[], None).unwrap();
            let split = run(&two_stacks, &xs, &[cut], Some((0, &flat_fat))).unwrap();
            let (got, want) = (query(&split, 0), query(&whole, 0));
            prop_assert_eq!(&got.1, &want.1);
            prop_assert_eq!(got.2.len(), want.2.len());
            for (g, w) in got.2.iter().zip(&want.2) {
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
        let shared_spec = count_stream(&specs, algo);
        let Ok(shared) = run(&shared_spec, &xs, &cuts, None) else { return Ok(()) };
        // One operator for every query of one aggregation.
        prop_assert_eq!(stream::build(&shared_spec).unwrap().groups(), 1);
        for (q, spec) in specs.iter().enumerate() {
            let alone = run(&count_stream(&[spec.clone()], Algorithm::Recalc), &xs, &[], None).unwrap();
            let (got, want) = (query(&shared, q), query(&alone, 0));
            prop_assert_eq!(&got.1, &want.1, "query {:?}", spec);
            prop_assert_eq!(got.2.len(), want.2.len());
            for (g, w) in got.2.iter().zip(&want.2) {
                prop_assert!(same_approx(g.as_ref(), w.as_ref()), "query {:?} {}: {:?} vs {:?}", spec, algo.name(), g, w);
            }
        }
    }
}

#[test]
fn bad_specs_are_refused_with_a_message() {
    let one = |agg, range, algo: Algorithm, dtype| {
        stream_spec(vec![count_query(&CountSpec { agg, range, slide: 1, min_periods: 0 })], dtype, algo.name())
    };
    let e = stream::build(&one(AggKind::Sum, 0, Algorithm::Auto, DType::F64)).err().unwrap();
    assert!(e.to_string().contains("range"));
    let e = stream::build(&one(AggKind::Max, 5, Algorithm::Soe, DType::F64)).err().unwrap();
    assert!(e.to_string().contains("soe") && e.to_string().contains("max"), "{e}");
    let mut w = stream::build(&one(AggKind::Sum, 5, Algorithm::Auto, DType::I64)).unwrap();
    let f: ArrayRef = Arc::new(Float64Array::from(vec![1.0]));
    let e = w.push(&Batch::new(f.as_ref())).err().unwrap();
    assert!(e.to_string().contains("int64") || e.to_string().contains("i64"), "{e}");
    let i: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3]));
    let ok = w.push(&Batch::new(i.as_ref())).unwrap();
    assert_eq!(ok[0].end, vec![1, 2, 3]);
    assert!(ok[0].keys.is_none(), "an unkeyed stream's windows carry no keys");
}
