//! Many rolling var / std (sample and population) of one column in one
//! shared pass (`rolling_many`), and time windows' var / std
//! ([`frame_vars`]): compensated prefix sums of shifted values and their
//! squares, every window a difference, checked row by row against an error
//! bound; the rows the bound cannot vouch for are redone by the exact
//! kernel ([`super::moments::var_into`]).
//!
//! Per chunk of output rows `[a, b)` plus the longest window's halo, with
//! `c` the chunk's mean (any value near the data will do; the mean keeps
//! the sums of squares, which the bound scales with, smallest):
//! `y = x - c` exactly as `yh + yl` (TwoDiff; |x| < 2^497, checked), and
//! running Neumaier sums `P1 = sum y`, `P2 = sum y^2` (`y^2` split by FMA,
//! or Dekker's product), each kept as its rounded sum `h` and the
//! compensation `l` that collects the TwoSum errors. A window's sums are
//! `S = TwoDiff(h[e], h[s]) + (l[e] - l[s])`, a double-double, and `M2`
//! comes from them as in the exact kernel (`S2 - 2 m S1 + n m^2`, `m =
//! S1 / n` rounded, moments.rs `m2_of`). Nulls weigh 0 (`y = 0`, counts
//! from prefix counts).
//!
//! Error (docs/DESIGN.md §6 "Many var / std"): each fold rounds only the
//! compensation (by at most `u |l|`) and the small pieces added to it (by
//! `u^2` times the prefix or the square), so a window of `w` rows differs
//! from the exact sums by `dS1 <= (w + 3) u C1 + w u^2 (P1 + 2Y)` and `dS2
//! <= (w + 3) u C2 + w u^2 (P2 + 9 Y^2)`, with `C1`, `C2` the largest
//! `|l|`, `P1` the largest `|h1|`, `P2` the final `h2`, `Y` the largest
//! `|y|` of the chunk; `M2` moves by `dS2 + 2 Y dS1`, and its own
//! evaluation adds a few ulps plus terms of the same kind. Twice that sum,
//! `E_w`, is linear in `w`, one constant pair per chunk; a row passes when
//! `M2 >= E_w / (2e-13 - 4u)`, which leaves `M2` within 2e-13 relative
//! plus a few ulps (the exact kernel's fast path allows the same). A row
//! holding one value (or none) has `M2 = 0` exactly. NaN fails; a chunk
//! holding a non-finite value goes to the exact kernel whole (its sums
//! would be non-finite from there on).
//!
//! On a random walk or 1e9 + noise nearly every row passes (a 2-row window
//! whose two values are within ~1e-2 of each other may not); windows of
//! small values among huge ones (1e8 / 1e-3 mixes) and near-constant
//! windows fail and go exact. Each window then costs eight loads, a few
//! dozen flops that vectorise, and its output write.

use std::sync::atomic::AtomicU64;

use arrow_array::ArrayRef;

use super::prefix::{columns, populate, prefix_counts, split_rows};
use super::moments::{as_f64, finite_filled, m2_of, Lane, S};
use super::shape::Frame;
use super::valid::{non_finite_bits, word_at, All, Bitmap, PartBits, Valid, Words};
use super::sum::value;
use super::{buffer, FastNum, Split};
use crate::engine::{AggKind, Column, ToArrow};
use crate::ops::moments::Moments;
use crate::ops::reduce::{detected, Level};

/// Relative error the shared pass may leave in `M2` (as the exact kernel's
/// fast path; the contract is 1e-12, tests/test_rolling_exact.py).
const TOL: f64 = 2e-13;
const U: f64 = f64::EPSILON / 2.0;

/// Output rows per chunk (the halo is summed again per chunk; the four
/// prefix arrays of chunk plus halo should stay in L2 / L3).
fn chunk_rows(wmax: usize) -> usize {
    (2 * wmax).clamp(1 << 14, 1 << 16)
}

/// Variances (`ddof` 0 or 1), or their square roots, of `windows` (already
/// capped to the column) over `col`; `None` where a finite value's square
/// could come near overflow (|x| >= 2^497: the caller runs each window
/// alone, which takes Chan's merge from 2^500).
pub(super) fn many_vars<T: FastNum>(
    col: &Column<T>,
    windows: &[usize],
    min_periods: usize,
    ddof: usize,
    sqrt: bool,
    threads: usize,
    chunk: Option<usize>,
) -> Option<Vec<ArrayRef>> {
    // float64 in place, null slots and all (they weigh 0 as they are
    // loaded: issue 36, a filled copy and a column of weights, each made
    // on one thread a bit at a time, cost a third of the kernel).
    let owned: Vec<f64>;
    let x: &[f64] = match as_f64(col.values) {
        Some(x) => x,
        None => {
            owned = finite_filled(col);
            &owned
        }
    };
    let n = x.len();
    let fit = match col.nulls {
        None => fits(x, All),
        Some(nb) => fits(x, Bitmap::new(nb)),
    };
    if !fit {
        return None;
    }
    let cum = col.nulls.map(prefix_counts);
    let wmax = windows.iter().copied().max().unwrap_or(1);
    let chunk = chunk.unwrap_or_else(|| chunk_rows(wmax)).max(1);
    let mut outs: Vec<Vec<f64>> = windows.iter().map(|_| buffer::<f64>(n)).collect();
    let threads = threads.clamp(1, n.max(1));
    if n > 0 && !windows.is_empty() {
        let (cum, ddof) = (cum.as_deref(), ddof as f64);
        match col.nulls {
            None => Job { x, va: All, cum, windows, chunk, ddof, sqrt }.split(&mut outs, threads),
            Some(nb) => Job { x, va: Bitmap::new(nb), cum, windows, chunk, ddof, sqrt }.split(&mut outs, threads),
        }
    }
    Some(columns(outs, windows, min_periods.max(ddof + 1), col.nulls, threads))
}

/// Every finite valid value below 2^497 in magnitude: squares and sums of
/// squares of a chunk stay finite, and the exact kernel takes every slice
/// (it refuses a block whose shift plus largest deviation reaches 2^499).
fn fits<Va: Valid>(xs: &[f64], va: Va) -> bool {
    const LIMIT: u64 = 0x5F00_0000_0000_0000; // 2^497
    const INF: u64 = 0x7FF0_0000_0000_0000;
    xs.chunks(32).enumerate().all(|(q, c)| {
        let bits = if Va::ALL { u64::MAX } else { va.bits(32 * q) };
        c.iter().enumerate().fold(0u64, |a, (j, v)| {
            let v = if Va::ALL { *v } else { value(*v, bits >> j) };
            a | ((v.to_bits() & !(1u64 << 63)).wrapping_sub(LIMIT) < INF - LIMIT) as u64
        }) == 0
    })
}

/// Everything a thread needs, shared read-only.
struct Job<'a, Va> {
    x: &'a [f64],
    va: Va,
    cum: Option<&'a [u32]>,
    windows: &'a [usize],
    chunk: usize,
    ddof: f64,
    sqrt: bool,
}

/// The chunk's prefix sums: entry `t` sums the chunk's first `t` rows.
#[derive(Default)]
struct Prefix {
    h1: Vec<f64>,
    l1: Vec<f64>,
    h2: Vec<f64>,
    l2: Vec<f64>,
}

/// What the error bound needs of a chunk (module comment).
#[derive(Clone, Copy, Debug)]
struct Bound {
    /// Largest `|y|`.
    y: f64,
    /// Largest `|h1|`; `h2` at the end (the largest: it only grows).
    p1: f64,
    p2: f64,
    /// Largest `|l1|`, `|l2|`.
    c1: f64,
    c2: f64,
}

impl Bound {
    /// The smallest `M2` a row of a `w`-row window may have and pass.
    fn threshold(&self, w: usize) -> f64 {
        let w = w as f64;
        let y = self.y * (1.0 + 4.0 * U);
        let e = (w + 6.0) * U * (self.c2 + 2.0 * y * self.c1) + U * U * w * (self.p2 + 2.0 * y * self.p1 + 24.0 * y * y);
        2.0 * e / (TOL - 4.0 * U)
    }
}

/// TwoSum: `a + b = s + e` exactly.
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `a - b = s + e` exactly.
#[inline(always)]
fn two_diff(a: f64, b: f64) -> (f64, f64) {
    let s = a - b;
    let bb = s - a;
    (s, (a - (s - bb)) - (b + bb))
}

/// `M2 = S2 - 2 m S1 + n m^2` of `S1 = s1 + c1`, `S2 = s2 + c2`: moments.rs
/// `m2_of` on one scalar lane (its argument: docs/DESIGN.md §6).
#[inline(always)]
fn m2<const FMA: bool>(s1: f64, c1: f64, s2: f64, c2: f64, n: f64, inv_n: f64) -> f64 {
    m2_of(S::<FMA>(s1), S(c1), S(s2), S(c2), S(n), S(inv_n)).0
}

/// `M2` of the rows between prefix entries `s` and `e` (`n` of them valid).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn m2_diff<const FMA: bool>(h1e: f64, h1s: f64, l1e: f64, l1s: f64, h2e: f64, h2s: f64, l2e: f64, l2s: f64, n: f64, inv_n: f64) -> f64 {
    let (d1, f1) = two_diff(h1e, h1s);
    let (d2, f2) = two_diff(h2e, h2s);
    m2::<FMA>(d1, f1 + (l1e - l1s), d2, f2 + (l2e - l2s), n, inv_n)
}

/// The variance (or std) from `M2`; a hair below 0 is 0, NaN stays.
#[inline(always)]
fn out_of(m2: f64, inv_d: f64, sqrt: bool) -> f64 {
    let v = (if m2 < 0.0 { 0.0 } else { m2 }) * inv_d;
    if sqrt {
        v.sqrt()
    } else {
        v
    }
}

impl<Va: Valid> Job<'_, Va> {
    /// Every window's rows into `outs`, split over up to `threads` threads.
    fn split(&self, outs: &mut [Vec<f64>], threads: usize) {
        let level = detected();
        split_rows(outs, self.x.len(), threads, |r0, r1, mine| self.rows_at(level, r0, r1, mine));
    }

    /// [`Job::rows`] compiled for the CPU's widest level (the window loops
    /// vectorise; FMA for the exact products). `SLIDEWISE_SIMD` caps it.
    fn rows_at(&self, level: Level, r0: usize, r1: usize, outs: &mut [&mut [f64]]) {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx512f,avx2,fma")]
            unsafe fn avx512<Va: Valid>(j: &Job<Va>, r0: usize, r1: usize, o: &mut [&mut [f64]]) {
                j.rows::<true>(r0, r1, o)
            }
            #[target_feature(enable = "avx2,fma")]
            unsafe fn avx2<Va: Valid>(j: &Job<Va>, r0: usize, r1: usize, o: &mut [&mut [f64]]) {
                j.rows::<true>(r0, r1, o)
            }
            let fma = std::arch::is_x86_feature_detected!("fma");
            // SAFETY: `detected()` found the CPU feature of the level, and
            // FMA is checked here.
            match level {
                Level::Avx512 if fma => return unsafe { avx512(self, r0, r1, outs) },
                Level::Avx2 | Level::Avx512 if fma => return unsafe { avx2(self, r0, r1, outs) },
                _ => {}
            }
        }
        let _ = level;
        self.rows::<false>(r0, r1, outs)
    }

    /// Rows `[r0, r1)` of every window (`outs[q]` holds exactly those rows).
    #[inline(always)]
    fn rows<const FMA: bool>(&self, r0: usize, r1: usize, outs: &mut [&mut [f64]]) {
        let wmax = self.windows.iter().copied().max().unwrap_or(1);
        let mut p = Prefix::default();
        let mut a = r0;
        while a < r1 {
            let b = (a + self.chunk).min(r1);
            // Prefix entry t sums rows [h0, h0 + t).
            let h0 = a.saturating_sub(wmax);
            let bound = prefix::<FMA, Va>(&self.x[h0..b], self.va, h0, &mut p);
            for (q, &w) in self.windows.iter().enumerate() {
                let out = &mut outs[q][a - r0..b - r0];
                match bound {
                    // A non-finite value in the chunk: its sums say nothing.
                    None => self.exact(w, a, b, out),
                    Some(bd) => {
                        let thr = bd.threshold(w);
                        if !self.window::<FMA>(&p, w, a, b, h0, thr, out) {
                            self.redo::<FMA>(&p, w, a, b, h0, thr, out);
                        }
                    }
                }
            }
            a = b;
        }
    }

    /// `M2` and the count of row `i`'s window (scalar; the partial windows
    /// at the start and [`Job::redo`]).
    #[inline(always)]
    fn row_m2<const FMA: bool>(&self, p: &Prefix, w: usize, i: usize, h0: usize) -> (f64, f64) {
        let e = i + 1 - h0;
        let s = (i + 1).saturating_sub(w).max(h0) - h0;
        let n = match self.cum {
            None => (e - s) as f64,
            Some(c) => (c[i + 1] - c[(i + 1).saturating_sub(w)]) as f64,
        };
        let m2 = m2_diff::<FMA>(p.h1[e], p.h1[s], p.l1[e], p.l1[s], p.h2[e], p.h2[s], p.l2[e], p.l2[s], n, 1.0 / n);
        (if n <= 1.0 { 0.0 } else { m2 }, n)
    }

    /// Rows `[a, b)` of window `w` into `out`; whether every row passed.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn window<const FMA: bool>(&self, p: &Prefix, w: usize, a: usize, b: usize, h0: usize, thr: f64, out: &mut [f64]) -> bool {
        let (ddof, sqrt) = (self.ddof, self.sqrt);
        populate(out);
        if w == 1 {
            // One value (finite: the chunk passed), M2 exactly 0.
            out.fill(0.0);
            return true;
        }
        let mut ok = true;
        // Partial windows at the start (here h0 = 0).
        let full = a.max(w - 1).min(b);
        for i in a..full {
            let (m2, n) = self.row_m2::<FMA>(p, w, i, h0);
            ok &= m2 >= thr || n <= 1.0;
            out[i - a] = out_of(m2, 1.0 / (n - ddof), sqrt);
        }
        if full == b {
            return ok;
        }
        let e0 = full + 1 - h0;
        let len = b - full;
        let (h1e, h1s) = (&p.h1[e0..e0 + len], &p.h1[e0 - w..e0 - w + len]);
        let (l1e, l1s) = (&p.l1[e0..e0 + len], &p.l1[e0 - w..e0 - w + len]);
        let (h2e, h2s) = (&p.h2[e0..e0 + len], &p.h2[e0 - w..e0 - w + len]);
        let (l2e, l2s) = (&p.l2[e0..e0 + len], &p.l2[e0 - w..e0 - w + len]);
        let out = &mut out[full - a..];
        match self.cum {
            None => {
                let (n, inv_n, inv_d) = (w as f64, 1.0 / w as f64, 1.0 / (w as f64 - ddof));
                let mut bad = 0u64;
                for j in 0..len {
                    let m2 = m2_diff::<FMA>(h1e[j], h1s[j], l1e[j], l1s[j], h2e[j], h2s[j], l2e[j], l2s[j], n, inv_n);
                    bad |= (!(m2 >= thr)) as u64;
                    out[j] = out_of(m2, inv_d, sqrt);
                }
                ok && bad == 0
            }
            Some(c) => {
                let (ce, cs) = (&c[full + 1..b + 1], &c[full + 1 - w..b + 1 - w]);
                let mut bad = 0u64;
                for j in 0..len {
                    let n = (ce[j] - cs[j]) as f64;
                    // 1 / n and 1 / (n - ddof) from one division (two were
                    // a third of a row's time; a table of them, gathered,
                    // more), each within an ulp or two: `m` needs no more
                    // (the module comment), the result takes one rounding
                    // more. (Rows of one value or none are masked, or 0.)
                    let r = 1.0 / (n * (n - ddof));
                    let m2 = m2_diff::<FMA>(h1e[j], h1s[j], l1e[j], l1s[j], h2e[j], h2s[j], l2e[j], l2s[j], n, r * (n - ddof));
                    let one = n <= 1.0;
                    let m2 = if one { 0.0 } else { m2 };
                    bad |= (!(m2 >= thr || one)) as u64;
                    out[j] = out_of(m2, r * n, sqrt);
                }
                ok && bad == 0
            }
        }
    }

    /// Rows of `[a, b)` whose check failed, again by the exact kernel: runs
    /// of failing rows closer than a window are one call (each call reads
    /// its first row's window again).
    #[allow(clippy::too_many_arguments)]
    fn redo<const FMA: bool>(&self, p: &Prefix, w: usize, a: usize, b: usize, h0: usize, thr: f64, out: &mut [f64]) {
        let mut run: Option<(usize, usize)> = None;
        for i in a..b {
            let (m2, n) = self.row_m2::<FMA>(p, w, i, h0);
            if m2 >= thr || n <= 1.0 {
                continue;
            }
            run = match run {
                Some((lo, hi)) if i < hi + w => Some((lo, i + 1)),
                Some((lo, hi)) => {
                    self.exact(w, lo, hi, &mut out[lo - a..hi - a]);
                    Some((i, i + 1))
                }
                None => Some((i, i + 1)),
            };
        }
        if let Some((lo, hi)) = run {
            self.exact(w, lo, hi, &mut out[lo - a..hi - a]);
        }
    }

    /// Rows `[lo, hi)` of window `w` by the exact kernel, on the rows they
    /// read (`out` holds exactly those rows).
    fn exact(&self, w: usize, lo: usize, hi: usize, out: &mut [f64]) {
        let start = (lo + 1).saturating_sub(w);
        let mut tmp = vec![0.0; hi - start];
        let filled = (!Va::ALL).then(|| filled_rows(self.x, self.va, start, hi));
        let (xs, wt) = match &filled {
            None => (&self.x[start..hi], None),
            Some((xs, wt)) => (&xs[..], Some(&wt[..])),
        };
        let fits = super::moments::var_into(xs, wt, w.min(hi - start), self.ddof, self.sqrt, &mut tmp);
        // The whole column was checked (`many_vars`).
        debug_assert!(fits);
        out.copy_from_slice(&tmp[lo - start..]);
    }
}

/// Rows `[lo, hi)` of `x` as the exact kernel reads them with nulls, and
/// their weights: moments.rs `finite_filled` of those rows (a null row
/// holds the last finite valid value before it, the column's first where
/// there is none, so `y` stays finite; weight 0), made only for the rows
/// that kernel redoes.
fn filled_rows<Va: Valid>(x: &[f64], va: Va, lo: usize, hi: usize) -> (Vec<f64>, Vec<f64>) {
    let good = |t: &usize| va.bit(*t) && x[*t].is_finite();
    let mut last = (0..lo).rev().find(good).or_else(|| (lo..x.len()).find(good)).map_or(0.0, |t| x[t]);
    let (mut xs, mut wt) = (Vec::with_capacity(hi - lo), Vec::with_capacity(hi - lo));
    for t in lo..hi {
        let ok = va.bit(t);
        if ok && x[t].is_finite() {
            last = x[t];
        }
        xs.push(if ok { x[t] } else { last });
        wt.push(ok as u8 as f64);
    }
    (xs, wt)
}

/// The chunk's prefix sums into `p` (`x` the chunk plus its halo, row `h0`
/// of the column `va` describes: its null rows weigh 0, their slots read
/// as 0 whatever they hold), and what the bound needs; `None` when a valid
/// value is not finite.
#[inline(always)]
fn prefix<const FMA: bool, Va: Valid>(x: &[f64], va: Va, h0: usize, p: &mut Prefix) -> Option<Bound> {
    let len = x.len();
    // The shift: the mean of the valid values (eight partial sums, so the
    // pass vectorises).
    let (mut s, mut k) = ([0.0f64; 8], [0.0f64; 8]);
    for (q, x32) in x.chunks(32).enumerate() {
        let bits = if Va::ALL { u64::MAX } else { va.bits(h0 + 32 * q) };
        for (g, xs) in x32.chunks(8).enumerate() {
            for (j, &v) in xs.iter().enumerate() {
                let ok = bits >> (8 * g + j) & 1;
                s[j] += if Va::ALL { v } else { value(v, ok) };
                k[j] += if Va::ALL { 1.0 } else { ok as f64 };
            }
        }
    }
    let (s, k): (f64, f64) = (s.iter().sum(), k.iter().sum());
    let c = if k > 0.0 { s / k } else { 0.0 };
    if !c.is_finite() {
        return None;
    }
    for v in [&mut p.h1, &mut p.l1, &mut p.h2, &mut p.l2] {
        v.clear();
        v.resize(len + 1, 0.0);
    }
    let (h1, l1, h2, l2) = (&mut p.h1[1..], &mut p.l1[1..], &mut p.h2[1..], &mut p.l2[1..]);
    let (mut s1, mut c1, mut s2, mut c2) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let (mut ymax, mut p1, mut c1max, mut c2max) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let mut bits = u64::MAX;
    for t in 0..len {
        let (mut yh, mut yl) = two_diff(x[t], c);
        if !Va::ALL {
            if t % 32 == 0 {
                bits = va.bits(h0 + t);
            }
            let ok = bits >> (t % 32);
            (yh, yl) = (value(yh, ok), value(yl, ok));
        }
        ymax = ymax.max(yh.abs());
        let (a1, e1) = two_sum(s1, yh);
        s1 = a1;
        c1 += e1 + yl;
        // y^2 = yh^2 + (2 yh + yl) yl; the first exactly.
        let (sq, sqe) = S::<FMA>(yh).two_prod(S(yh));
        let (sq, sqe) = (sq.0, sqe.0);
        let r = (yh + yh + yl) * yl;
        let (a2, e2) = two_sum(s2, sq);
        s2 = a2;
        c2 += e2 + (sqe + r);
        p1 = p1.max(s1.abs());
        c1max = c1max.max(c1.abs());
        c2max = c2max.max(c2.abs());
        h1[t] = s1;
        l1[t] = c1;
        h2[t] = s2;
        l2[t] = c2;
    }
    // A NaN or inf leaves the sums non-finite for good.
    (s1 + c1 + s2 + c2 + ymax).is_finite().then_some(Bound { y: ymax, p1, p2: s2, c1: c1max, c2: c2max })
}

/// Time windows (any `closed=` / `center=`) of var / std, sample or
/// population (issue 36: they ran the FIFO loop over each row's frame, 0.9x
/// polars' `rolling_var_by`): row `i`'s frame `[s, e)` from `frame`, its
/// `M2` a difference of the chunk's prefix sums above (shift, bound and
/// exact fallback as for `rolling_many`; a failing row is redone alone, by
/// [`super::moments::var_into`] over its frame). Chunks restart where
/// prefix.rs `frame_sums` restarts its prefix ([`super::prefix::restarts`]:
/// a gap, or 4,096 rows once the window is a quarter of them), so every bit of a row
/// depends only on the rows since the last gap: keyed time rolling gives
/// the bits of one call per key. As the FIFO's `Moments`: null where the
/// frame holds fewer than `min_periods` valid rows, or `ddof` or fewer;
/// NaN where one of them is NaN or infinite (those weigh 0 in the sums,
/// so they change no other frame's bits). A chunk holding a finite value
/// from 2^497 (squares could overflow) merges each frame's moments. `None`
/// (the caller runs the FIFO loop) for other aggregations and columns
/// other than float64.
pub(super) fn frame_vars(values: &dyn arrow_array::Array, frame: &Frame, agg: AggKind, min_periods: usize, split: Split) -> Option<ArrayRef> {
    use arrow_array::cast::AsArray;
    let (ddof, sqrt) = match agg {
        AggKind::Var => (1.0, false),
        AggKind::Std => (1.0, true),
        AggKind::VarPop => (0.0, false),
        AggKind::StdPop => (0.0, true),
        _ => return None,
    };
    let x = values.as_primitive_opt::<arrow_array::types::Float64Type>()?.values().as_ref();
    let n = x.len();
    let nulls = values.logical_nulls();
    let mut out = super::buffer_to_fill::<f64>(n); // every row is written
    let how = FrameVars { frame, ddof, sqrt, min_periods };
    let words = Words::zeroed(n);
    // parts between restarts on threads, as the sums' (prefix.rs `in_parts`)
    super::prefix::in_parts(frame, n, split, &mut out[..], |r0, r1, hint, o| match &nulls {
        None => how.run_at(detected(), All, x, (r0, r1, hint), o, &words),
        Some(nb) => how.run_at(detected(), Bitmap::new(nb), x, (r0, r1, hint), o, &words),
    });
    super::assert_filled(&out);
    Some(<f64 as ToArrow>::to_arrow(out, Words::nulls(words, n)))
}

/// A part of a column's rows: `[r0, r1)` and the frame of the row before.
type Part = (usize, usize, (usize, usize));

struct FrameVars<'a> {
    frame: &'a Frame<'a>,
    ddof: f64,
    sqrt: bool,
    min_periods: usize,
}

/// A chunk's rows read, as the prefix sums take them: finite values with
/// weight 1, the others (null, NaN, inf) weight 0 under the last finite
/// value before them; running counts of valid rows and of valid
/// non-finite ones.
#[derive(Default)]
struct Rows {
    xf: Vec<f64>,
    wt: Vec<f64>,
    /// The weights as bits (LSB first, a byte per eight rows from `h0`).
    fin: Vec<u8>,
    cnt: Vec<u32>,
    bad: Vec<u32>,
}

impl Rows {
    /// Rows `[h0, h1)` of `x` (validity `va`) as the weighted prefix sums
    /// read them.
    fn fill<Va: Valid>(&mut self, va: Va, x: &[f64], h0: usize, h1: usize) {
        let len = h1 - h0;
        for v in [&mut self.xf, &mut self.wt] {
            v.clear();
            v.resize(len, 0.0);
        }
        for v in [&mut self.cnt, &mut self.bad] {
            v.clear();
            v.resize(len + 1, 0);
        }
        // Leading non-finite rows take the chunk's first finite value (a
        // filler near the data keeps the exact kernel's shift near it).
        let mut last = (h0..h1).find(|&t| va.bits(t) & 1 != 0 && x[t].is_finite()).map_or(0.0, |t| x[t]);
        let (mut cnt, mut bad) = (0u32, 0u32);
        self.fin.clear();
        for t in (h0..h1).step_by(64) {
            let m = (h1 - t).min(64);
            let bits = word_at(va, t, m);
            let fin = bits & !non_finite_bits(&x[t..t + m]);
            self.fin.extend_from_slice(&fin.to_le_bytes());
            for q in 0..m {
                let at = t + q - h0;
                if fin >> q & 1 != 0 {
                    last = x[t + q];
                    self.wt[at] = 1.0;
                }
                self.xf[at] = last;
                cnt += (bits >> q & 1) as u32;
                bad += ((bits & !fin) >> q & 1) as u32;
                (self.cnt[at + 1], self.bad[at + 1]) = (cnt, bad);
            }
        }
    }
}

impl FrameVars<'_> {
    /// [`FrameVars::run`] compiled for the CPU's widest level.
    fn run_at<Va: Valid>(&self, level: Level, va: Va, x: &[f64], part: Part, out: &mut [f64], words: &[AtomicU64]) {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx512f,avx2,fma")]
            unsafe fn avx512<Va: Valid>(f: &FrameVars, va: Va, x: &[f64], part: Part, o: &mut [f64], w: &[AtomicU64]) {
                f.run::<Va, true>(va, x, part, o, w)
            }
            #[target_feature(enable = "avx2,fma")]
            unsafe fn avx2<Va: Valid>(f: &FrameVars, va: Va, x: &[f64], part: Part, o: &mut [f64], w: &[AtomicU64]) {
                f.run::<Va, true>(va, x, part, o, w)
            }
            let fma = std::arch::is_x86_feature_detected!("fma");
            // SAFETY: `detected()` found the CPU feature of the level, and
            // FMA is checked here.
            match level {
                Level::Avx512 if fma => return unsafe { avx512(self, va, x, part, out, words) },
                Level::Avx2 | Level::Avx512 if fma => return unsafe { avx2(self, va, x, part, out, words) },
                _ => {}
            }
        }
        let _ = level;
        self.run::<Va, false>(va, x, part, out, words)
    }

    /// Rows `[r0, r1)` into `out` (theirs; `r0` a row where the whole
    /// column's pass restarts, `hint` the frame of the row before it);
    /// whether each is valid, into the bitmap words.
    #[inline(always)]
    fn run<Va: Valid, const FMA: bool>(&self, va: Va, x: &[f64], (r0, r1, hint): Part, out: &mut [f64], words: &[AtomicU64]) {
        let n = x.len();
        let (mut rows, mut p) = (Rows::default(), Prefix::default());
        let (mut sb, mut eb) = (Vec::new(), Vec::new()); // the chunk's frames
        let ((mut s, mut e), mut a) = (hint, r0);
        let mut bits = PartBits::new(words);
        for i in r0..r1 {
            let pe = e;
            (s, e) = self.frame.bounds(i, n, s, e);
            // (`a` starts at `r0`: the part's first chunk starts there)
            if super::prefix::restarts(i, s, a, pe) {
                if i > a {
                    self.chunk::<Va, FMA>(va, x, a, &sb, &eb, &mut rows, &mut p, &mut out[a - r0..i - r0], &mut bits);
                }
                a = i;
                sb.clear();
                eb.clear();
            }
            sb.push(s);
            eb.push(e);
        }
        if r1 > a {
            self.chunk::<Va, FMA>(va, x, a, &sb, &eb, &mut rows, &mut p, &mut out[a - r0..], &mut bits);
        }
        bits.end(r1);
    }

    /// Rows `a..` (frames `sb`, `eb`) into `out`, their validity into `bits`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn chunk<Va: Valid, const FMA: bool>(&self, va: Va, x: &[f64], a: usize, sb: &[usize], eb: &[usize], r: &mut Rows, p: &mut Prefix, out: &mut [f64], bits: &mut PartBits) {
        // Frames' starts and ends never decrease: the chunk reads [h0, h1).
        let (h0, h1) = (sb[0], eb[eb.len() - 1]);
        // Every row valid and finite (clean data): the values in place, a
        // frame's rows its count (no copy, weights or counts: a sixth of
        // the time). Whether a chunk is so depends on its rows alone, so a
        // key's bits stay those of one call on it.
        let clean = (h0..h1).step_by(64).all(|t| {
            let m = (h1 - t).min(64);
            word_at(va, t, m) & !non_finite_bits(&x[t..t + m]) == u64::MAX >> (64 - m)
        });
        if !clean {
            r.fill(va, x, h0, h1);
        }
        let (vals, wt) = if clean { (&x[h0..h1], None) } else { (&r.xf[..], Some(&r.wt[..])) };
        // A valid value from 2^497 (its square could overflow the sums):
        // this chunk's frames by Chan's merges, row by row (rare; the
        // decision is the chunk's, so a key's bits are still its own).
        let fit = fits(vals, All);
        let bound = match wt {
            _ if !fit => None,
            None => prefix::<FMA, All>(vals, All, 0, p),
            Some(_) => prefix::<FMA, Bitmap>(vals, Bitmap::local(&r.fin, 0), 0, p),
        };
        for (q, o) in out.iter_mut().enumerate() {
            let (js, je) = (sb[q] - h0, eb[q] - h0);
            let valid = if clean { (je - js) as u32 } else { r.cnt[je] - r.cnt[js] };
            let ok = valid as usize >= self.min_periods && valid as f64 > self.ddof;
            bits.put(a + q, ok);
            if !ok {
                *o = 0.0;
                continue;
            }
            if !clean && r.bad[je] > r.bad[js] {
                *o = f64::NAN;
                continue;
            }
            let nf = valid as f64;
            if nf <= 1.0 {
                *o = 0.0; // one value (population): M2 exactly 0
                continue;
            }
            if !fit {
                let mut m = Moments::default();
                for t in js..je {
                    if wt.is_none_or(|w| w[t] == 1.0) {
                        m = Moments::merge(&m, &Moments::lift(vals[t]));
                    }
                }
                *o = out_of(m.m2, 1.0 / (m.n - self.ddof), self.sqrt);
                continue;
            }
            let m2 = m2_diff::<FMA>(p.h1[je], p.h1[js], p.l1[je], p.l1[js], p.h2[je], p.h2[js], p.l2[je], p.l2[js], nf, 1.0 / nf);
            *o = match bound {
                Some(bd) if m2 >= bd.threshold(je - js) => out_of(m2, 1.0 / (nf - self.ddof), self.sqrt),
                // Not vouched for: the frame alone, exactly.
                _ => {
                    let mut tmp = vec![0.0; je - js];
                    let fits = super::moments::var_into(&vals[js..je], wt.map(|w| &w[js..je]), je - js, self.ddof, self.sqrt, &mut tmp);
                    debug_assert!(fits); // the chunk was checked
                    tmp[je - js - 1]
                }
            };
        }
    }
}
