//! `rolling()`'s count-window kernels split over threads (`rolling_split`
//! with forced thread counts and a tiny threshold): for sum, mean, count,
//! var / std (sample and population), max, min and range, every dtype,
//! nulls / NaN / inf / -0.0 / ties, windows from 1 to past the column, 2 to
//! 5 threads give the bits of one thread (validity and values, NaN and the
//! zero's sign included), and agree with the naive oracle. The long
//! columns hold several of the kernels' groups, so cuts fall between them.

use arrow_array::Array;
use arrow_schema::DataType;
use crate::common::{agrees, bits, cells, plain_rolling, typed_column, val_at, value, xorshift};
use proptest::prelude::*;
use slidewise_core::engine::AggKind;
use slidewise_core::fifo::Algorithm;
use slidewise_core::rolling::{rolling_split, Split};

const AGGS: [AggKind; 10] = [
    AggKind::Sum,
    AggKind::Mean,
    AggKind::Count,
    AggKind::Var,
    AggKind::Std,
    AggKind::VarPop,
    AggKind::StdPop,
    AggKind::Max,
    AggKind::Min,
    AggKind::Range,
];

const DTYPES: [DataType; 4] = [DataType::Float64, DataType::Float32, DataType::Int64, DataType::Int32];


fn split(threads: usize) -> Split {
    Split { threads: Some(threads), min_rows: 1 }
}

/// Every agg and dtype: `threads` threads equal one bit for bit; with
/// `oracle`, also the naive recomputation.
fn check(xs: &[(f64, bool)], with_nulls: bool, window: usize, threads: usize, oracle: bool) -> Result<(), TestCaseError> {
    for dt in DTYPES {
        let col = typed_column(&dt, xs, with_nulls);
        let rows = if oracle { cells(&col) } else { vec![] };
        for agg in AGGS {
            let one = rolling_split(&col, window, agg, None, Algorithm::Auto, split(1)).unwrap();
            let many = rolling_split(&col, window, agg, None, Algorithm::Auto, split(threads)).unwrap();
            prop_assert_eq!(one.data_type(), many.data_type());
            prop_assert_eq!(one.len(), many.len());
            for i in 0..one.len() {
                prop_assert_eq!(bits(&one, i), bits(&many, i), "{} on {} window {} threads {} row {}", agg.name(), dt, window, threads, i);
            }
            if oracle {
                let want = plain_rolling(&rows, window, agg, None);
                for (i, (w, scale)) in want.iter().enumerate() {
                    let g = val_at(&many, i);
                    prop_assert!(agrees(agg, &g, w, *scale), "{} on {} window {} threads {} row {}: got {:?}, want {:?}", agg.name(), dt, window, threads, i, g, w);
                }
            }
        }
    }
    Ok(())
}

/// A long column: a random walk of small steps in tenths (the variance's
/// fast path passes its check there) with ties, rare values near 1e18
/// (the sum's compensation then rounds at their scale, so a chain started
/// at another row gives other bits: a cut off the kernels' restarts
/// shows), rare NaN / inf / -0.0, and nulls.
fn long_column(n: usize, seed: u64, specials: bool) -> Vec<(f64, bool)> {
    let mut s = seed | 1;
    let mut walk = 0.0;
    (0..n)
        .map(|_| {
            let r = xorshift(&mut s);
            walk += ((r >> 20) % 9) as f64 - 4.0;
            let v = match (specials, r % 4096) {
                (true, 0) => f64::NAN,
                (true, 1) => f64::INFINITY,
                (true, 2) => -0.0,
                (_, 3..=5) => (r >> 4) as f64 * 1e-1,
                _ => walk * 0.1,
            };
            (v, (r >> 40) % 10 != 0)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Short columns, every value kind, against one thread and the oracle.
    #[test]
    fn split_equals_one_thread_and_oracle(
        xs in prop::collection::vec(value(true, 0.85), 0..400),
        with_nulls in prop::bool::weighted(0.5),
        w in prop_oneof![2 => Just(1usize), 5 => 1usize..40, 3 => 1usize..500],
        threads in 2usize..6,
    ) {
        check(&xs, with_nulls, w, threads, true)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, ..ProptestConfig::default() })]

    /// Long columns (several lane groups of the variance's fast path, sum
    /// groups, van Herk blocks), windows up to past a thread's share:
    /// bit for bit against one thread.
    #[test]
    fn long_split_equals_one_thread(
        n in 3_000usize..12_000,
        seed in any::<u64>(),
        specials in prop::bool::weighted(0.5),
        with_nulls in prop::bool::weighted(0.3),
        w in prop_oneof![1usize..64, 64usize..3_000, Just(1usize)],
        threads in 2usize..6,
    ) {
        check(&long_column(n, seed, specials), with_nulls, w, threads, false)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// var / std on null-free float64 (the fast path) with windows from a
    /// fortieth to a quarter of the column: with 4 or 8 lanes the plan then
    /// holds two groups of blocks shorter than the window, lanes that start
    /// less than a window in (a partial start window), and blocks the check
    /// fails (specials) that the exact kernel redoes from row 0. Bit for bit
    /// against one thread, and against the naive oracle.
    #[test]
    fn var_large_window_split_equals_one_thread_and_oracle(
        n in 2_000usize..8_000,
        seed in any::<u64>(),
        specials in prop::bool::weighted(0.5),
        wfrac in 0.025f64..0.25,
        threads in 2usize..6,
    ) {
        let xs = long_column(n, seed, specials);
        let w = ((n as f64 * wfrac) as usize).max(2);
        let col = typed_column(&DataType::Float64, &xs, false);
        let rows = cells(&col);
        for agg in [AggKind::Var, AggKind::Std, AggKind::VarPop, AggKind::StdPop] {
            let one = rolling_split(&col, w, agg, None, Algorithm::Auto, split(1)).unwrap();
            let many = rolling_split(&col, w, agg, None, Algorithm::Auto, split(threads)).unwrap();
            for i in 0..n {
                prop_assert_eq!(bits(&one, i), bits(&many, i), "{} window {} threads {} row {}", agg.name(), w, threads, i);
            }
            let want = plain_rolling(&rows, w, agg, None);
            for (i, (v, scale)) in want.iter().enumerate() {
                let g = val_at(&many, i);
                prop_assert!(agrees(agg, &g, v, *scale), "{} window {} threads {} row {}: got {:?}, want {:?}", agg.name(), w, threads, i, g, v);
            }
        }
    }
}
