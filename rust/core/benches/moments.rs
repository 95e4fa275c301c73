//! Rolling mean / std / var on 10M float64 (a random walk, as
//! benches/compare_rolling.py) against Rust transcriptions of bottleneck's
//! move_mean / move_var / move_std loops (NaN checks kept), measured in
//! the same process, alternating, best of `REPEAT` in thread CPU time (the
//! machine is shared: wall time is noise). The real comparison is
//! benches/compare_rolling.py; this is for iterating without the extension.
//!
//! `cargo bench -p slidewise-core --features bench --bench moments [-- AGG[,AGG] [W,W] [MISSING]]`
//! (`MISSING`: the share of rows null at random, NaN for the clone).

use std::hint::black_box;

use arrow_array::Float64Array;
use slidewise_core::engine::AggKind;
use slidewise_core::fifo::Algorithm;
use slidewise_core::rolling::{rolling_dyn, Shape};

const N: usize = 10_000_000;
const REPEAT: usize = 7;

fn cpu_now() -> f64 {
    #[repr(C)]
    struct Ts {
        s: i64,
        ns: i64,
    }
    extern "C" {
        fn clock_gettime(clk: i32, ts: *mut Ts) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut t = Ts { s: 0, ns: 0 };
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.s as f64 + t.ns as f64 * 1e-9
}

/// numpy's output: fresh pages, huge pages asked for.
fn out_buf(n: usize) -> Vec<f64> {
    extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
    }
    let mut v = vec![0.0f64; n];
    let h = 2usize << 20;
    let p = v.as_mut_ptr() as usize;
    let (lo, hi) = ((p + h - 1) & !(h - 1), (p + n * 8) & !(h - 1));
    if hi > lo {
        unsafe { madvise(lo as *mut _, hi - lo, 14) };
    }
    v
}

/// bottleneck move_mean, min_count 1.
fn bn_mean(a: &[f64], w: usize) -> Vec<f64> {
    let mut y = out_buf(a.len());
    let (mut asum, mut count) = (0.0, 0usize);
    for i in 0..w.min(a.len()) {
        let ai = a[i];
        if ai == ai {
            asum += ai;
            count += 1;
        }
        y[i] = if count >= 1 { asum / count as f64 } else { f64::NAN };
    }
    let mut inv = 1.0 / count as f64;
    for i in w..a.len() {
        let (ai, aold) = (a[i], a[i - w]);
        if ai == ai {
            if aold == aold {
                asum += ai - aold;
            } else {
                asum += ai;
                count += 1;
                inv = 1.0 / count as f64;
            }
        } else if aold == aold {
            asum -= aold;
            count -= 1;
            inv = 1.0 / count as f64;
        }
        y[i] = if count >= 1 { asum * inv } else { f64::NAN };
    }
    y
}

/// bottleneck move_var / move_std (Welford), ddof 1, min_count 1.
fn bn_var(a: &[f64], w: usize, sqrt: bool) -> Vec<f64> {
    let mut y = out_buf(a.len());
    let (mut amean, mut assqdm, mut count) = (0.0f64, 0.0f64, 0usize);
    let fin = |v: f64| if sqrt { v.sqrt() } else { v };
    for i in 0..w.min(a.len()) {
        let ai = a[i];
        if ai == ai {
            count += 1;
            let delta = ai - amean;
            amean += delta / count as f64;
            assqdm += delta * (ai - amean);
        }
        y[i] = if count >= 1 && count > 1 { fin(assqdm.max(0.0) / (count - 1) as f64) } else { f64::NAN };
    }
    let (mut cinv, mut dinv) = (1.0 / count as f64, 1.0 / (count - 1) as f64);
    for i in w..a.len() {
        let (mut ai, mut aold) = (a[i], a[i - w]);
        if ai == ai {
            if aold == aold {
                let delta = ai - aold;
                aold -= amean;
                amean += delta * cinv;
                ai -= amean;
                assqdm += (ai + aold) * delta;
            } else {
                count += 1;
                cinv = 1.0 / count as f64;
                dinv = 1.0 / (count - 1) as f64;
                let delta = ai - amean;
                amean += delta * cinv;
                assqdm += delta * (ai - amean);
            }
        } else if aold == aold {
            count -= 1;
            cinv = 1.0 / count as f64;
            dinv = 1.0 / (count as f64 - 1.0);
            let delta = aold - amean;
            amean -= delta * cinv;
            assqdm -= delta * (aold - amean);
        }
        let v = if assqdm < 0.0 { 0.0 } else { assqdm };
        y[i] = if count > 1 { fin(v * dinv) } else { f64::NAN };
    }
    y
}

/// The next xorshift64 state's top 53 bits as a uniform value in [0, 1).
fn uniform(st: &mut u64) -> f64 {
    *st ^= *st << 13;
    *st ^= *st >> 7;
    *st ^= *st << 17;
    (*st >> 11) as f64 / (1u64 << 53) as f64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let aggs = args.first().cloned().unwrap_or_else(|| "mean,std,var".into());
    let ws: Vec<usize> = args.get(1).map_or(vec![16, 1024, 65_536, 1 << 20], |s| s.split(',').map(|t| t.parse().unwrap()).collect());
    let mut s = 42u64;
    let mut walk = 0.0;
    let x: Vec<f64> = (0..N)
        .map(|_| {
            walk += uniform(&mut s) - 0.5;
            walk
        })
        .collect();
    let missing: f64 = args.get(2).map_or(0.0, |s| s.parse().unwrap());
    let mut r = 7u64;
    let keep: Vec<bool> = (0..N).map(|_| uniform(&mut r) >= missing).collect();
    let col = Float64Array::from(x.iter().zip(&keep).map(|(&v, &k)| k.then_some(v)).collect::<Vec<_>>());
    // The clone reads NaN where the column is null, as bottleneck does.
    let x: Vec<f64> = x.iter().zip(&keep).map(|(&v, &k)| if k { v } else { f64::NAN }).collect();
    println!("| agg | window | slidewise ms | bn-clone ms | ratio |");
    for agg in aggs.split(',') {
        let kind = match agg {
            "mean" => AggKind::Mean,
            "std" => AggKind::Std,
            _ => AggKind::Var,
        };
        for &w in &ws {
            let (mut t_sw, mut t_bn) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..REPEAT {
                let t0 = cpu_now();
                black_box(rolling_dyn(black_box(&col), w, kind, None, Algorithm::Auto, Shape::default()).unwrap());
                let t1 = cpu_now();
                black_box(match kind {
                    AggKind::Mean => bn_mean(black_box(&x), w),
                    _ => bn_var(black_box(&x), w, kind == AggKind::Std),
                });
                let t2 = cpu_now();
                t_sw = t_sw.min(t1 - t0);
                t_bn = t_bn.min(t2 - t1);
            }
            println!("| {agg} | {w} | {:.1} | {:.1} | {:.2}x |", t_sw * 1e3, t_bn * 1e3, t_bn / t_sw);
        }
    }
}
