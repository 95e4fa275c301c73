//! Time each order-statistic kernel on a 2M-row random walk (the shape of
//! `benches/compare_order_stats.py`), best of N: a quick loop for tuning
//! the kernels without building the Python extension.
//!
//! `cargo run -p slidewise-core --release --example order_kernels [-- reps windows kernels]`

use std::time::Instant;

use slidewise_core::rolling::order::{key, rolling_order_keys, unkey, Interpolation, OrderKernel, OrderStat, SortedWindow};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps: usize = args.get(1).map_or(3, |s| s.parse().unwrap());
    let windows: Vec<usize> =
        args.get(2).map_or("10,100,1000,10000,100000".into(), |s| s.clone()).split(',').map(|s| s.parse().unwrap()).collect();
    let kernels: Vec<String> =
        args.get(3).map_or("auto,sorted_buffer,median_sort".into(), |s| s.clone()).split(',').map(String::from).collect();
    let n = 2_000_000;
    // xorshift normal-ish steps, cumulated (a random walk)
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let mut x = 0.0;
    let keys: Vec<u64> = (0..n)
        .map(|_| {
            let mut u = 0.0;
            for _ in 0..4 {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                u += (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            }
            x += u;
            key(x)
        })
        .collect();
    for stat in [OrderStat::Median, OrderStat::Quantile { q: 0.9, interpolation: Interpolation::Linear }] {
        for &w in &windows {
            let mut line = format!("{:<8} w={w:<7}", stat.name());
            for k in &kernels {
                if k == "sorted_buffer" && w > 10_000 {
                    continue;
                }
                let mut best = f64::INFINITY;
                for _ in 0..reps {
                    let t = Instant::now();
                    if k == "stream" {
                        // the stream structure's replace (one search + memmove
                        // or shift-walk a row): the sorted buffer before the
                        // branch-free replacement, for an A/B in one process
                        std::hint::black_box(stream(&keys, w, stat));
                    } else {
                        std::hint::black_box(rolling_order_keys(&keys, None, w, stat, 1, OrderKernel::parse(k).unwrap()));
                    }
                    best = best.min(t.elapsed().as_secs_f64());
                }
                line += &format!("  {k}={:.1}", n as f64 / best / 1e6);
            }
            println!("{line}");
        }
    }
}

fn stream(keys: &[u64], w: usize, stat: OrderStat) -> Vec<f64> {
    let (q, interp) = stat.quantile().unwrap();
    let mut win = SortedWindow::with_capacity(w + 1);
    (0..keys.len())
        .map(|i| {
            if i >= w {
                win.replace(unkey(keys[i - w]), unkey(keys[i]));
            } else {
                win.push(unkey(keys[i]));
            }
            win.quantile(q, interp).unwrap()
        })
        .collect()
}
