//! The CBiX experiment (CBiX paper §3.3 and Table 1; the paper itself has no
//! measurements): a window of n partials slides by one partial per step;
//! each step also folds p late partials into uniformly random slots of the
//! window, then queries. For each general aggregator: ⊕ calls per slide
//! (counted with `Counted`, over the same steps) and slides per second
//! (plain monoid, no counting), plus Table 1's predictions.
//!
//! `cargo run --profile fastdev -p slidewise-core --example cbix_experiment -- [n_min_log2] [n_max_log2]`
//! prints CSV; benches/cbix_experiment.py turns it into a table and a plot.

use std::time::Instant;

use slidewise_core::general::cbix::theorem_4_1_k;
use slidewise_core::general::{Cbix, Counted, GeneralAggregator, GeneralFlatFat, GeneralRecalc, NewGeneral, TwoStacksExt};
use slidewise_core::monoid::Monoid;
use slidewise_core::ops::Sum;
use slidewise_core::AggOp;

type Plain = Sum<i64>;
type Cnt = Counted<Sum<i64>>;

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// Fill the window, then run `steps` slides; returns (seconds, ⊕ calls).
fn run<M: Monoid<Agg = <Plain as Monoid>::Agg>, A: GeneralAggregator<M>>(
    a: &mut A,
    n: usize,
    p: usize,
    steps: usize,
    late: &[u64],
    warm: usize,
) -> (f64, u64, i64) {
    let one = Plain::lift(1, 0);
    for id in 0..n as u64 {
        a.insert(id, one.clone()).unwrap();
    }
    let mut end = n as u64;
    let step = |a: &mut A, i: usize, end: &mut u64, check: &mut i64| {
        a.insert(*end, one.clone()).unwrap();
        *end += 1;
        a.evict_upto(*end - n as u64);
        let lo = *end - n as u64;
        for j in 0..p {
            let id = lo + late[(i * p + j) % late.len()] % n as u64;
            a.insert(id, one.clone()).unwrap();
        }
        *check = check.wrapping_add(Plain::lower(&a.query()).unwrap_or(0));
    };
    let mut check = 0i64;
    for i in 0..warm {
        step(a, i, &mut end, &mut check);
    }
    Cnt::reset();
    let t = Instant::now();
    for i in 0..steps {
        step(a, warm + i, &mut end, &mut check);
    }
    (t.elapsed().as_secs_f64(), Cnt::ops(), check)
}

fn measure<A: GeneralAggregator<Plain>, C: GeneralAggregator<Cnt>>(
    name: &str,
    n: usize,
    p: usize,
    steps: usize,
    warm: usize,
    mk: impl Fn() -> A,
    mkc: impl Fn() -> C,
    late: &[u64],
    extra: &str,
) {
    // ⊕ calls: one counted run.
    let (_, ops, c1) = run::<Cnt, C>(&mut mkc(), n, p, steps, late, warm);
    // Throughput: best of 5 plain runs (the machine is shared).
    let mut best = f64::INFINITY;
    let mut c2 = 0;
    for _ in 0..5 {
        let (secs, _, c) = run::<Plain, A>(&mut mk(), n, p, steps, late, warm);
        best = best.min(secs);
        c2 = c;
    }
    assert_eq!(c1, c2, "counted and plain runs disagree");
    println!("{name},{n},{p},{steps},{:.4},{:.1},{extra}", ops as f64 / steps as f64, steps as f64 / best);
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (lo, hi) = (args.first().copied().unwrap_or(10), args.get(1).copied().unwrap_or(20));
    let mut s = 0x9E3779B97F4A7C15u64;
    let late: Vec<u64> = (0..(1 << 20)).map(|_| xorshift(&mut s)).collect();
    println!("algorithm,n,p,slides,ops_per_slide,slides_per_sec,k");
    for lg in lo..=hi {
        let n = 1usize << lg;
        for p in [0usize, 1, 4, 16] {
            let k = theorem_4_1_k(n, 0.0);
            // Long enough to cover several CBiX checkpoint cycles (n/k
            // slides each) and at least one full window of Two-Stacks flips.
            let steps = (20 * n.div_ceil(k)).max(200_000);
            // Past the first checkpoint rebuild (CBiX) and the first resize
            // (FlatFAT: the window fills its buffer exactly at the start).
            let warm = 2 * n.div_ceil(k) + 16;
            measure(
                "cbix",
                n,
                p,
                steps,
                warm,
                || Cbix::<Plain>::with_k(n, k).unwrap(),
                || Cbix::<Cnt>::with_k(n, k).unwrap(),
                &late,
                // the k CBiX runs with (m rounded up to a power of two)
                &Cbix::<Plain>::with_k(n, k).unwrap().shape().0.to_string(),
            );
            measure(
                "flatfat",
                n,
                p,
                steps,
                warm,
                || GeneralFlatFat::<Plain>::new_general(n).unwrap(),
                || GeneralFlatFat::<Cnt>::new_general(n).unwrap(),
                &late,
                "",
            );
            // Two-Stacks recomputes ~n/4 entries per late partial, and must
            // be measured over whole flip cycles (n slides): small n only.
            if n <= 1 << 14 && (p == 0 || n <= 1 << 13) {
                measure(
                    "two_stacks",
                    n,
                    p,
                    n.max(20_000),
                    0,
                    || TwoStacksExt::<Plain>::new_general(n).unwrap(),
                    || TwoStacksExt::<Cnt>::new_general(n).unwrap(),
                    &late,
                    "",
                );
            }
            if n <= 1 << 12 {
                measure(
                    "recalc",
                    n,
                    p,
                    5_000,
                    0,
                    || GeneralRecalc::<Plain>::new_general(n).unwrap(),
                    || GeneralRecalc::<Cnt>::new_general(n).unwrap(),
                    &late,
                    "",
                );
            }
        }
    }
}
