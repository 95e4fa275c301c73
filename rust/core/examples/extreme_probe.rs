//! Rolling max at each SIMD level, M rows/s (best of 5), beside the floor
//! of writing a fresh output of the same size.
use slidewise_core::ops::reduce::available;
use slidewise_core::rolling::extreme_values_at;
use std::time::Instant;

fn best<R>(mut f: impl FnMut() -> R) -> f64 {
    let mut t = f64::INFINITY;
    for _ in 0..5 {
        let t0 = Instant::now();
        let r = f();
        t = t.min(t0.elapsed().as_secs_f64());
        drop(r);
    }
    t
}

fn main() {
    let n = 10_000_000;
    let mut s = 1u64;
    let mut acc = 0.0;
    let x: Vec<f64> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            acc += ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5;
            acc
        })
        .collect();
    let m = |t: f64| n as f64 / t / 1e6;
    println!("fresh copy {:.0}", m(best(|| x.to_vec())));
    for l in available() {
        for w in [16usize, 1024, 65535, 65536, 1 << 20] {
            println!(
                "{:?} w={w} max {:.0} min {:.0}",
                l,
                m(best(|| extreme_values_at::<f64, true>(l, &x, w))),
                m(best(|| extreme_values_at::<f64, false>(l, &x, w)))
            );
        }
    }
}
