//! The FlatFIT (SSDBM'17 §5) and SlideSide (EDBT'20 §4.2) experiments, run
//! on slidewise's own FIFO aggregators. Prints CSV; `benches/paper_fifo.py`
//! runs it, writes the tables and plots, and puts the papers' numbers beside.
//!
//! ```text
//! cargo run --release -p slidewise-core --example paper_exps -- exp1 22
//! PAPER_ROUNDS=3 cargo run --release -p slidewise-core --example paper_exps -- exp2 1000
//! cargo run --release -p slidewise-core --example paper_exps -- exp3 22
//! cargo run --release -p slidewise-core --example paper_exps -- slideside 65
//! ```
//!
//! Every structure is driven through static dispatch (`with_fifo!`), as in
//! production. Throughput is measured after the window is full (the fill is
//! not timed) for at least `MIN_SECS`; memory is the peak of a counting
//! global allocator while the structure is built, filled and run.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use slidewise_core::fifo::{Algorithm, FifoAggregator, New};
use slidewise_core::ops::{Max, Min, Sum};
use slidewise_core::AggOp;

// -- a counting allocator, for Exp 3 -----------------------------------------

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        System.dealloc(p, l)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

// -- inputs ---------------------------------------------------------------

/// Distinct inputs, cycled: a DEBS-like signal (a slow wave plus noise), so
/// that max/min change often enough to exercise every path.
const INPUTS: usize = 1 << 16;

fn inputs<M: AggOp<In = f64>>() -> Vec<M::Agg> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..INPUTS)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let noise = (x >> 11) as f64 / (1u64 << 53) as f64;
            M::lift(1000.0 * (i as f64 / 977.0).sin() + 50.0 * noise, i as i64)
        })
        .collect()
}

fn min_secs() -> f64 {
    std::env::var("PAPER_MIN_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(0.25)
}

/// Run `step` in growing rounds until `min_secs()` have passed; steps/s.
fn rate(mut step: impl FnMut(usize)) -> f64 {
    let (mut done, mut round) = (0usize, 64usize);
    let t = Instant::now();
    loop {
        for i in 0..round {
            step(done + i);
        }
        done += round;
        let e = t.elapsed().as_secs_f64();
        if e >= min_secs() {
            return done as f64 / e;
        }
        round *= 2;
    }
}

fn filled<M: AggOp, A: FifoAggregator<M> + New>(xs: &[M::Agg], n: usize) -> A {
    let mut a = A::new_with_capacity(n).unwrap();
    for i in 0..n {
        a.insert(xs[i % INPUTS].clone());
    }
    a
}

// -- Exp 1: one query, slide 1 ---------------------------------------------

fn exp1_one<M: AggOp<In = f64>, A: FifoAggregator<M> + New>(n: usize) -> f64 {
    let xs = inputs::<M>();
    let mut a: A = filled(&xs, n);
    rate(|i| {
        a.evict();
        a.insert(xs[(n + i) & (INPUTS - 1)].clone());
        black_box(a.query());
    })
}

// -- Exp 2: max-multi-query, ranges 1..=n at every slide ---------------------

/// One slide of Exp 2: evict, insert, then the ranges 1..=n, smallest first
/// (each FlatFIT query then starts where the previous one compressed its
/// path: the paper's max-multi-query, §4.1). `out` sees every answer.
#[inline(always)]
fn exp2_slide<M: AggOp<In = f64>, A: FifoAggregator<M>>(a: &mut A, x: &M::Agg, n: usize, mut out: impl FnMut(M::Agg)) {
    a.evict();
    a.insert(x.clone());
    for k in 1..=n {
        out(a.query_last(k));
    }
}

fn exp2_one<M: AggOp<In = f64>, A: FifoAggregator<M> + New>(n: usize) -> f64 {
    let xs = inputs::<M>();
    let mut a: A = filled(&xs, n);
    rate(|i| exp2_slide(&mut a, &xs[(n + i) & (INPUTS - 1)], n, |v| {
        black_box(v);
    }))
}

/// Every answer of the first `slides` slides, to check the algorithms agree
/// before they are timed.
fn exp2_answers<M: AggOp<In = f64>, A: FifoAggregator<M> + New>(n: usize, slides: usize) -> Vec<M::Agg> {
    let xs = inputs::<M>();
    let mut a: A = filled(&xs, n);
    let mut got = Vec::with_capacity(slides * n);
    for i in 0..slides {
        exp2_slide(&mut a, &xs[(n + i) & (INPUTS - 1)], n, |v| got.push(v));
    }
    got
}

// -- Exp 3: peak memory ------------------------------------------------------

fn exp3_one<M: AggOp<In = f64>, A: FifoAggregator<M> + New>(n: usize) -> (usize, usize) {
    let xs = inputs::<M>();
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    {
        // As the paper's platform: the structure is sized for the window it
        // will hold; then it runs 2n slides (a FlatFIT wReset happens once
        // every n + 1 slides, so the Positions stack is exercised).
        let mut a: A = filled(&xs, n);
        for i in 0..2 * n.min(1 << 22) {
            a.evict();
            a.insert(xs[(n + i) & (INPUTS - 1)].clone());
            black_box(a.query());
        }
        black_box(a.len());
    }
    let peak = PEAK.load(Relaxed) - base;
    (peak, std::mem::size_of::<M::Agg>())
}

// -- SlideSide §4.2: q queries with random windows in [1, 32768], slide 1 -------

/// One shared structure: insert, evict beyond the longest window, then one
/// `query_last` per query (ascending).
fn shared<M: AggOp<In = f64>, A: FifoAggregator<M> + New>(ws: &[usize]) -> f64 {
    let xs = inputs::<M>();
    let wmax = *ws.iter().max().unwrap();
    let mut a: A = filled(&xs, wmax);
    rate(|i| {
        a.evict();
        a.insert(xs[(wmax + i) & (INPUTS - 1)].clone());
        for &w in ws {
            black_box(a.query_last(w));
        }
    })
}

/// One structure per query (TwoStacks and SoE cannot share, SlideSide
/// paper Table 1).
fn replicated<M: AggOp<In = f64>, A: FifoAggregator<M> + New>(ws: &[usize]) -> f64 {
    let xs = inputs::<M>();
    let mut aa: Vec<A> = ws.iter().map(|&w| filled(&xs, w)).collect();
    let wmax = *ws.iter().max().unwrap();
    rate(|i| {
        let x = &xs[(wmax + i) & (INPUTS - 1)];
        for a in aa.iter_mut() {
            a.evict();
            a.insert(x.clone());
            black_box(a.query());
        }
    })
}

/// Deterministic windows in [1, 32768] (xorshift), sorted ascending.
fn random_windows(q: usize, seed: u64) -> Vec<usize> {
    let mut x = seed | 1;
    let mut ws: Vec<usize> = (0..q)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 32768) as usize + 1
        })
        .collect();
    ws.sort_unstable();
    ws
}

// -- driver ------------------------------------------------------------------

const FLATFIT_SET: [Algorithm; 4] = [Algorithm::Recalc, Algorithm::FlatFat, Algorithm::BInt, Algorithm::FlatFit];

fn arg(args: &[String], i: usize, default: usize) -> usize {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map(String::as_str).unwrap_or("exp1");
    match which {
        "exp1" => {
            // Windows 1 .. 2^max_log (powers of two, as the paper's Figure 13).
            let max_log = arg(&args, 2, 22);
            println!("experiment,algorithm,window,slides_per_s");
            for lg in 0..=max_log {
                let n = 1usize << lg;
                for algo in FLATFIT_SET.iter().copied().chain([Algorithm::TwoStacks, Algorithm::Daba, Algorithm::SlideSide]) {
                    if algo == Algorithm::Recalc && n > 1 << 14 {
                        continue;
                    }
                    let r = slidewise_core::with_fifo!(algo, Max<f64>, exp1_one(n));
                    println!("exp1,{},{n},{r:.0}", algo.name());
                }
            }
        }
        "exp2" => {
            // The paper's Figure 14 windows (1..1000), each checked equal to
            // Recalc's answers first, then timed in interleaved rounds
            // (best of `PAPER_ROUNDS`, default 3) so that load hits all alike.
            let max_n = arg(&args, 2, 1000);
            let rounds = std::env::var("PAPER_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3usize);
            println!("experiment,algorithm,window,slides_per_s");
            let mut ns: Vec<usize> = vec![1, 2, 4, 8, 16, 32, 50, 64, 100, 128, 200, 256, 300, 400, 500, 512, 600, 700, 800, 900, 1000];
            ns.retain(|&n| n <= max_n);
            for n in ns {
                let algos: Vec<Algorithm> =
                    FLATFIT_SET.iter().copied().filter(|&a| a != Algorithm::Recalc || n <= 256).collect();
                let want = exp2_answers::<Max<f64>, slidewise_core::fifo::Recalc<Max<f64>>>(n, n + 3);
                for &algo in &algos {
                    let got = slidewise_core::with_fifo!(algo, Max<f64>, exp2_answers(n, n + 3));
                    assert!(got == want, "exp2: {} differs from recalc at window {n}", algo.name());
                }
                let mut best = vec![0f64; algos.len()];
                for _ in 0..rounds {
                    for (b, &algo) in best.iter_mut().zip(&algos) {
                        *b = b.max(slidewise_core::with_fifo!(algo, Max<f64>, exp2_one(n)));
                    }
                }
                for (r, algo) in best.iter().zip(&algos) {
                    println!("exp2,{},{n},{r:.0}", algo.name());
                }
            }
        }
        "exp3" => {
            // Powers of two and the worst case for a power-of-two structure
            // (one more than a power of two), as the paper's Figure 16 mixes.
            let max_log = arg(&args, 2, 22);
            println!("experiment,algorithm,window,peak_bytes,agg_bytes");
            for lg in 4..=max_log {
                for n in [1usize << lg, (1usize << lg) + 1, 3usize << (lg - 1)] {
                    for algo in [Algorithm::FlatFat, Algorithm::BInt, Algorithm::FlatFit, Algorithm::TwoStacks, Algorithm::SlideSide] {
                        let (peak, agg) = slidewise_core::with_fifo!(algo, Max<f64>, exp3_one(n));
                        println!("exp3,{},{n},{peak},{agg}", algo.name());
                    }
                }
            }
        }
        "slideside" => {
            let max_q = arg(&args, 2, 65);
            println!("experiment,op,algorithm,queries,tuples_per_s");
            let mut q = 1;
            while q <= max_q {
                let ws = random_windows(q, 0x5EED_0000 + q as u64);
                for algo in [Algorithm::SlideSide, Algorithm::FlatFat, Algorithm::FlatFit] {
                    let r = slidewise_core::with_fifo!(algo, Sum<f64>, shared(&ws));
                    println!("slideside,sum,{},{q},{r:.0}", algo.name());
                    let r = slidewise_core::with_fifo!(algo, Min<f64>, shared(&ws));
                    println!("slideside,min,{},{q},{r:.0}", algo.name());
                }
                let r = replicated::<Sum<f64>, slidewise_core::fifo::TwoStacks<Sum<f64>>>(&ws);
                println!("slideside,sum,two_stacks,{q},{r:.0}");
                let r = replicated::<Sum<f64>, slidewise_core::fifo::SubtractOnEvict<Sum<f64>>>(&ws);
                println!("slideside,sum,soe,{q},{r:.0}");
                let r = replicated::<Min<f64>, slidewise_core::fifo::TwoStacks<Min<f64>>>(&ws);
                println!("slideside,min,two_stacks,{q},{r:.0}");
                q += if q == 1 { 4 } else { 8 };
            }
        }
        other => {
            eprintln!("unknown experiment {other:?}: exp1 | exp2 | exp3 | slideside");
            std::process::exit(2);
        }
    }
}
