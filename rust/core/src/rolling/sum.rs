//! Rolling sum / mean / count, and geomean (the mean of logarithms).
//!
//! Floats: Subtract-on-Evict (SlideSide paper §2) with every step
//! error-free: `new - old = d + e1` and `s + d = s' + e2` (TwoSum), the
//! error terms go to a compensation `c`, so `s + c` is the window's sum up
//! to the rounding of `c` itself. `d, e1` are off the loop-carried chain,
//! which is one add for `s` and one for `c` per row. The column runs as
//! segments of at most `max(16 window, 2^20)` rows, each started from an
//! exact sum of the window before it (the first from an empty window at row
//! 0), so error accumulates over one segment only; four at a time: the four
//! chains interleave, and on x86-64 with AVX2 (detected at run time) they
//! are the four lanes of one vector. `c` itself rounds at the largest
//! magnitude the run has held (values near 1e300 that have left the window
//! take the small values' sum with them), so each run tracks its largest
//! `|c|` and smallest `|s + c|`, and the rows whose bound is not small next
//! to their sum are redone from Shewchuk's exact partials ([`certify`]).
//!
//! Non-finite values: any inf / NaN a segment reads makes its TwoSum
//! errors, hence `c`, NaN; such a job is redone by the same kernel on its
//! finite rows, and the windows holding the others set as `FSum` counts
//! them (NaN, or the infinity), so that evicting an inf restores the
//! finite sum (finite columns pay no pre-check pass; [`run_job`]). Integers: exact wrapping
//! i64 Subtract-on-Evict.

use arrow_array::ArrayRef;
use arrow_buffer::NullBuffer;

use super::valid::{any_non_finite, nan_bits, set_missing, skip_mask, All, Bitmap, NonFinite, Sink, Valid, ValidPrefix, Words};
use super::{buffer, filled, validity, window_counts, FastNum, Split};
use crate::engine::{Column, ToArrow};
use crate::ops::arith::two_sum;
use crate::ops::{FSum, Num, Partials, SumAcc};

/// Row `i`'s value, or 0 where bit 0 of `ok` says it is missing (its slot
/// may hold anything, NaN included: its bits cleared, not multiplied).
/// No branch, so lanes of these vectorise (the start windows' eight were
/// scalar with one: a third of the masked mean's time at window 2^20).
#[inline(always)]
pub(super) fn value<T: Num>(v: T, ok: u64) -> f64 {
    f64::from_bits(v.to_f64().to_bits() & 0u64.wrapping_sub(ok & 1))
}

/// Exact-ish sum of the valid rows of `xs` (rows `r0..` of the column `va`
/// describes; `SKIP`: its NaN rows missing too) as `(s, c)`, and how many
/// there are: 8 Neumaier lanes
/// (independent, so the loop vectorises and is not latency bound), then
/// merged with TwoSum. Also the largest `|c|` a lane held, which bounds
/// the compensations' own rounding ([`certify`]).
#[inline(always)]
fn exact_sum_valid<const SKIP: bool, T: Num, Va: Valid>(xs: &[T], va: Va, r0: usize) -> ((f64, f64, f64), f64) {
    const L: usize = 8;
    let mut s = [0.0f64; L];
    let mut c = [0.0f64; L];
    let mut m = [0.0f64; L];
    let mut n = 0u64;
    let mut it = xs.chunks_exact(L);
    let mut r = r0;
    // `SKIP`: the NaN of 64 rows at a time, by the widest compares.
    let mut nan = 0u64;
    for ch in &mut it {
        let b = if Va::ALL { u64::MAX } else { va.bits(r) };
        let b = if SKIP {
            let q = r - r0;
            if q % 64 == 0 {
                nan = super::valid::nan_bits(&xs[q..(q + 64).min(xs.len())]);
            }
            b & !(nan >> (q % 64))
        } else {
            b
        };
        n += (b & 0xFF).count_ones() as u64;
        for k in 0..L {
            let (t, e) = two_sum(s[k], value(ch[k], b >> k));
            s[k] = t;
            c[k] += e;
            // (a compare, not `f64::max`, whose NaN rule kept this scalar)
            let a = c[k].abs();
            m[k] = if a > m[k] { a } else { m[k] };
        }
        r += L;
    }
    let b = if Va::ALL { u64::MAX } else { va.bits(r) };
    let b = if SKIP { b & !nan_bits(it.remainder()) } else { b };
    for (k, v) in it.remainder().iter().enumerate() {
        n += (b >> k) & 1;
        let (t, e) = two_sum(s[k], value(*v, b >> k));
        s[k] = t;
        c[k] += e;
        m[k] = m[k].max(c[k].abs());
    }
    let (mut ss, mut cc, mut mm) = (0.0, 0.0, 0.0f64);
    for k in 0..L {
        let (t, e) = two_sum(ss, s[k]);
        ss = t;
        cc += e + c[k];
        mm = mm.max(m[k]).max(cc.abs());
    }
    ((ss, cc, n as f64), mm)
}

/// Rolling sums of a null-free (or null-zeroed) float column, as f64.
///
/// The column runs in groups of four segments, each segment a chain
/// started from the exact sum of the window before its first row ([`group`]).
/// When the window is at most a quarter of the column, the first segment
/// starts at row 0 from an empty window (its first `window` rows evict
/// nothing), so it needs no recomputation; otherwise the insert-only rows
/// `[0, window)` and the sliding rows run as two regions. A segment whose
/// compensation comes out NaN met an inf / NaN (or overflowed) and is
/// redone ([`run_job`]), so finite columns pay no pre-check pass.
///
/// Threads: no state crosses from one group (or the tail) to the next, so
/// the rows are cut between groups and every thread count gives the bits
/// of one thread; the groups depend on the column's length and `min_rows`
/// only (at least four in a long column, for the split).
pub(super) fn float_sums<T: Num>(x: &[T], window: usize, threads: usize, min_rows: usize) -> Vec<f64> {
    float_sums_scaled(x, All, window, Out::Scale(1.0), threads, min_rows, |_, _| {})
}

/// What a job stores for a row: its sum times a constant (a mean without
/// missing rows is the sum times `1 / window`, multiplied as it is stored:
/// no second pass over the output; 1 changes nothing), or times the
/// reciprocal of the window's valid rows (a mean with missing rows: the
/// kernel counts them as it slides, one more exact add a row). A product,
/// not a quotient, as the clean mean's (a full window gets its bits): the
/// vector kernel keeps each segment's `1 / n` while no validity changes
/// and so divides on few tiles (1% missing, one thread: 4-6% faster);
/// every path stores `sum * (1 / n)`, so any thread count or path gives
/// the same bits.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Out {
    Scale(f64),
    PerValid,
}

/// The sums of the rows `va` says are valid (the others read as 0, in
/// place: no filled copy), stored as `how` says; then `post(r0, rows)` on
/// each thread's rows from `r0`.
pub(super) fn float_sums_scaled<T: Num, Va: Valid>(
    x: &[T],
    va: Va,
    window: usize,
    how: Out,
    threads: usize,
    min_rows: usize,
    post: impl Fn(usize, &mut [f64]) + Sync,
) -> Vec<f64> {
    jobs_into(x.len(), window, threads, min_rows, |job, stream, o, hint| run_job(x, va, window, job, how, stream, o, hint), post)
}

/// The jobs of `n` rows ([`plan`]), each by `each(job, stream, its rows,
/// hint)`, split between threads at job starts; then `post(r0, rows)` on
/// each thread's rows from `r0`.
fn jobs_into(
    n: usize,
    window: usize,
    threads: usize,
    min_rows: usize,
    each: impl Fn(&Job, bool, &mut [f64], &mut bool) + Sync,
    post: impl Fn(usize, &mut [f64]) + Sync,
) -> Vec<f64> {
    let mut jobs = Vec::new();
    plan(window, 0, n, n >= min_rows, &mut jobs);
    // The jobs cover every row once: the output need not be zeroed first
    // (checked in debug builds by `assert_filled` below).
    let mut out = super::buffer_to_fill(n);
    let stream = super::streams::<f64>(n);
    let starts: Vec<usize> = jobs.iter().map(|j| j.r0).collect();
    let cs = super::cuts(n, threads, |r| super::nearest(&starts, r));
    super::par_ranges(&mut out[..], &cs, |r0, r1, o| {
        let first = starts.partition_point(|&s| s < r0);
        let mut hint = false;
        for job in jobs[first..].iter().take_while(|j| j.r0 < r1) {
            each(job, stream, &mut o[job.r0 - r0..job.r1 - r0], &mut hint);
        }
        post(r0, o);
    });
    super::assert_filled(&out);
    out
}

/// `nan="skip"` sums of a float column: its NaN rows missing, as its null
/// rows are, without a NaN-to-null pass over the column first (issue 36:
/// that pass read the column from memory once more). With `plain` (no
/// NaN where [`super::nan_seen`] looks) each job first runs on the
/// column as it is, as `nan="propagate"` does: its kernel stops at the
/// first inf / NaN it reads ([`as_is`]), so a job without one (every job
/// of a column without NaN: the pandas accessor's default, which paid
/// the pass and ran at 0.6x of the clean speed) costs no mask; a column
/// seen to hold NaN does not try (with runs of NaN in most long jobs,
/// each ran up to its first NaN twice: 0.75x of the masks' speed at
/// window 2^20). A job that meets one, or every job then, runs the AVX2
/// group kernel that finds NaN as it loads ([`skip_group`]); the others
/// (the tail, other CPUs, a job holding an inf) build the validity of
/// their rows and of the window before them (`valid AND NOT isnan`, a
/// 64-row word at a time) for the kernel to read as any bitmap. Each job writes its words
/// of the column's validity, from which the caller derives the output's
/// ([`Words::validity`]). The jobs and masks of the nulls path: the same
/// bits; `plain`: how the jobs run as they are store (a mean without
/// nulls as `nan="propagate"` has it, times `1 / window`: its bits where
/// the column has no NaN), `None`: none does.
pub(super) fn float_sums_skip<T: Num>(
    x: &[T],
    nulls: Option<&NullBuffer>,
    window: usize,
    how: Out,
    plain: Option<Out>,
    threads: usize,
    min_rows: usize,
) -> (Vec<f64>, Option<NullBuffer>) {
    let n = x.len();
    let words = Words::zeroed(n);
    let sink = Words(&words, plain.is_some());
    let each = |job: &Job, stream: bool, o: &mut [f64], hint: &mut bool| {
        let done = plain.is_some_and(|p| match nulls {
            Some(nb) => as_is(x, Bitmap::new(nb), window, job, p, stream, o, sink),
            None => as_is(x, All, window, job, p, stream, o, sink),
        });
        if done {
            if plain != Some(how) {
                rescale_partial(job.r0, o, window);
            }
            return;
        }
        if job.seg > 0 && avx2_group::<T>() {
            let fused = match nulls {
                Some(nb) => skip_group(x, Bitmap::new(nb), window, job, how, stream, o, sink),
                None => skip_group(x, All, window, job, how, stream, o, sink),
            };
            if fused {
                return;
            }
        }
        let lo = job.r0.saturating_sub(window);
        let local = match nulls {
            Some(nb) => skip_mask(x, Bitmap::new(nb), lo, job.r1),
            None => skip_mask(x, All, lo, job.r1),
        };
        let va = Bitmap::local(&local, lo);
        run_job(x, va, window, job, how, stream, o, hint);
        sink.put(va, job.r0, job.r1);
    };
    let out = jobs_into(n, window, threads, min_rows, each, |_, _| {});
    (out, Words::validity(words, n, nulls))
}

/// A `nan="skip"` group job ([`float_sums_skip`]) whose kernel finds the
/// NaN rows as it loads them ([`group`]'s `skip`) and puts the rows'
/// validity as it goes: the column read once, as with nulls, where a
/// mask built first read it twice (issue 36). The same bits as the masked
/// job: the same values and counts reach the same adds. False, its rows
/// garbage, where a segment met an inf (or overflowed): the caller redoes
/// the job with a mask.
#[allow(clippy::too_many_arguments)]
fn skip_group<T: Num, Va: Valid>(x: &[T], va: Va, window: usize, job: &Job, how: Out, stream: bool, out: &mut [f64], sink: Words) -> bool {
    let (b0, seg) = (job.r0, job.seg);
    let st: [((f64, f64, f64), f64); 4] = std::array::from_fn(|k| start_state::<true, T, Va>(x, va, window, b0 + k * seg));
    let mut bits = vec![0u64; (4 * seg).div_ceil(64)];
    let runs = group(x, va, All, window, b0, seg, job.mode, st.map(|v| v.0), how, stream, true, Some(&mut bits), out);
    if runs.iter().any(|r| !r.finite) {
        return false;
    }
    // The words as the bytes of a bitmap from row `b0`, no copy: native
    // words are little-endian here (an AVX2 kernel: x86-64 only).
    let bytes = arrow_buffer::Buffer::from_vec(bits);
    let mut mask: Option<Vec<u8>> = None;
    for (k, run) in runs.into_iter().enumerate() {
        let (a, b) = (b0 + k * seg, b0 + (k + 1) * seg);
        let run = Run { cm: run.cm.max(st[k].1), ..run };
        // The rare check that reads the rows again takes a mask of them
        // and the window before (the kernel's bits start at `b0`).
        if doubtful(window, a, b, run) {
            let lo = b0.saturating_sub(window);
            let m = mask.get_or_insert_with(|| skip_mask(x, va, lo, job.r1));
            certify(x, Bitmap::local(m, lo), window, a, b, how, run, &mut out[a - b0..b - b0]);
        }
    }
    sink.put(Bitmap::local(bytes.as_slice(), b0), b0, job.r1);
    true
}

/// A `nan="skip"` job run on the column as it is ([`float_sums_skip`]):
/// true, its rows stored and its validity put, if it read no inf / NaN
/// ([`first_attempt`]); false, its rows garbage, else.
#[allow(clippy::too_many_arguments)]
fn as_is<T: Num, Va: Valid>(x: &[T], va: Va, window: usize, job: &Job, how: Out, stream: bool, out: &mut [f64], sink: Words) -> bool {
    let ok = first_attempt(x, va, window, job, how, stream, out).is_some_and(|bad| bad.is_empty());
    if ok {
        sink.put(va, job.r0, job.r1);
    }
    ok
}

/// [`float_sums_scaled`] of `x` alone, on this thread, into `out`: the same
/// jobs, so the bits of any thread count (keyed rolling's short keys,
/// segments.rs).
pub(super) fn float_sums_into<T: Num, Va: Valid>(x: &[T], va: Va, window: usize, how: Out, out: &mut [f64]) {
    let mut jobs = Vec::new();
    plan(window, 0, x.len(), x.len() >= super::SPLIT_MIN_ROWS, &mut jobs);
    let mut hint = false;
    for job in &jobs {
        run_job(x, va, window, job, how, false, &mut out[job.r0..job.r1], &mut hint);
    }
}

/// Rows `[r0, r1)`: a group of four segments of `seg` rows in `mode`, or
/// (`seg == 0`) a short run for the scalar loop.
struct Job {
    r0: usize,
    r1: usize,
    seg: usize,
    mode: u8,
}

/// The jobs of rows `[r0, r1)`, with `r0 == 0` or `r0 >= window`; `long`:
/// at least four groups (two) where segments stay a window long, so
/// threads have whole groups to share.
fn plan(window: usize, r0: usize, r1: usize, long: bool, jobs: &mut Vec<Job>) {
    let len = r1 - r0;
    // Segments long enough that the restarts (a window read per segment)
    // cost little, short enough that an inf / NaN sends only a bounded
    // part of the column to the slow loop; the compensation's own rounding
    // stays negligible at these lengths. A multiple of 4 rows (the tile).
    // At short windows a job's values (4 x 2^15 rows, 1 MB) stay in a
    // core's L2 between the inf / NaN scan and the kernel, so the column is
    // read from memory once (issue 36: nan="propagate" at window 1,024 took
    // 1.8x less time than with 2^20-row segments; clean data the same).
    let cap = window.saturating_mul(16).max(1 << 15);
    let mut segs = len.div_ceil(cap).next_multiple_of(4).max(4);
    if long {
        if let Some(g) = [4, 2].into_iter().find(|g| len / (4 * g) >= window.max(16)) {
            segs = segs.max(4 * g);
        }
    }
    let seg = len / segs / 4 * 4;
    let mode = if r1 <= window {
        INSERT
    } else if r0 < window {
        if seg < window {
            // Segments shorter than the window: the later segments' first
            // windows would reach before row 0; split at the window.
            let a = window.min(r1);
            plan(window, r0, a, long, jobs);
            plan(window, a, r1, long, jobs);
            return;
        }
        PAD0
    } else {
        SLIDE
    };
    let mut b0 = r0;
    if seg >= 16 {
        for g in 0..segs / 4 {
            let m = if g == 0 { mode } else if mode == PAD0 { SLIDE } else { mode };
            jobs.push(Job { r0: b0, r1: b0 + 4 * seg, seg, mode: m });
            b0 += 4 * seg;
        }
    }
    // The tail (or a short region): the scalar kernel.
    if b0 < r1 {
        jobs.push(Job { r0: b0, r1, seg: 0, mode });
    }
}

/// One job into `out` (its rows). Every segment starts from the exact sum
/// of the window before it, whatever ran before. `stream`: the group's
/// rows go out by non-temporal stores ([`super::streams`]).
///
/// A segment whose compensation comes out NaN met an inf / NaN (or its
/// finite sum overflowed). Then the job runs again, at the same speed, on
/// its valid finite rows (the others masked like nulls, [`NonFinite`]),
/// and the rows whose window holds a NaN or an infinity are set as `FSum`
/// has them: NaN with a NaN or both infinities, else the infinity (issue
/// 36: with 1% NaN every segment met one, and a scalar loop redid it at a
/// tenth of the clean speed). `hint`: the job before met a non-finite
/// value, so this one starts with the scan (the same bits either way: a
/// job without one computes the same sums masked or not). Finite sums
/// that overflow go to [`counted_block`].
#[allow(clippy::too_many_arguments)]
fn run_job<T: Num, Va: Valid>(x: &[T], va: Va, window: usize, job: &Job, how: Out, stream: bool, out: &mut [f64], hint: &mut bool) {
    let first = if *hint { None } else { first_attempt(x, va, window, job, how, stream, out) };
    if first.as_ref().is_some_and(|bad| bad.is_empty()) {
        return;
    }
    let nf = NonFinite::scan(x, va, job.r0.saturating_sub(window), job.r1);
    *hint = nf.any;
    let marks = nf.any.then(|| nf.marks(window, false));
    if let Some(m) = &marks {
        match m.kept(job.r0, job.r1) {
            // No row of the job needs its sum.
            None => {
                out.fill(f64::NAN);
                return;
            }
            // Only the rows between (a window of the column's first rows,
            // say, before its first NaN): one chain over them.
            Some((k0, k1)) if job.seg > 0 && k1 - k0 <= job.seg / 2 => {
                out[..k0 - job.r0].fill(f64::NAN);
                out[k1 - job.r0..].fill(f64::NAN);
                let o = &mut out[k0 - job.r0..k1 - job.r0];
                let run = finite_block(x, nf.finite(), window, k0, k1, how, o);
                if run.finite {
                    certify(x, nf.finite(), window, k0, k1, how, run, o);
                } else {
                    counted_block(x, va, window, k0, k1, how, o);
                }
                set_missing(m.keep(), k0, o);
                m.infinities(k0, k1, o);
                return;
            }
            _ => {}
        }
    }
    let bad = match (first, &marks) {
        // The NaN rows blended in as the kernel stores (a pass after it
        // missed the cache on each: a third of the time), the infinities
        // (rare) after.
        (_, Some(m)) => attempt(x, nf.finite(), m.keep(), window, job, how, stream, false, out),
        (Some(bad), None) => bad,
        (None, None) => attempt(x, va, All, window, job, how, stream, false, out),
    };
    for (a, b) in bad {
        counted_block(x, va, window, a, b, how, &mut out[a - job.r0..b - job.r0]);
    }
    if let Some(m) = marks {
        m.infinities(job.r0, job.r1, out);
    }
}

/// A job's unmasked attempt, which stops at the first inf / NaN its
/// kernel reads ([`attempt`]): the segments that did not stay finite, or
/// `None` where the probe of its first rows finds one (the attempt would
/// stop at once; only the speed depends on it).
fn first_attempt<T: Num, Va: Valid>(x: &[T], va: Va, window: usize, job: &Job, how: Out, stream: bool, out: &mut [f64]) -> Option<Vec<(usize, usize)>> {
    (!any_non_finite(x, va, job.r0.saturating_sub(window), job.r1)).then(|| attempt(x, va, All, window, job, how, stream, true, out))
}

/// [`run_job`]'s kernels over the rows `va` says are valid, each row's
/// result NaN where `keep` is clear: the row ranges (segments) whose sums
/// did not stay finite, their rows garbage. `bail`: every segment counts
/// as not finite as soon as one is found so (the caller scans for inf /
/// NaN and redoes them all: issue 36, a job holding one otherwise ran in
/// full twice).
#[allow(clippy::too_many_arguments)]
fn attempt<T: Num, Va: Valid, Kp: Valid>(x: &[T], va: Va, keep: Kp, window: usize, job: &Job, how: Out, stream: bool, bail: bool, out: &mut [f64]) -> Vec<(usize, usize)> {
    let (b0, seg) = (job.r0, job.seg);
    if seg == 0 {
        let run = finite_block(x, va, window, b0, job.r1, how, out);
        set_missing(keep, b0, out);
        if !run.finite {
            return vec![(b0, job.r1)];
        }
        certify(x, va, window, b0, job.r1, how, run, out);
        return Vec::new();
    }
    let st: [((f64, f64, f64), f64); 4] = std::array::from_fn(|k| start_state::<false, T, Va>(x, va, window, b0 + k * seg));
    let runs = group(x, va, keep, window, b0, seg, job.mode, st.map(|v| v.0), how, stream, bail, None, out);
    let mut bad = Vec::new();
    for (k, run) in runs.into_iter().enumerate() {
        let (a, b) = (b0 + k * seg, b0 + (k + 1) * seg);
        if run.finite {
            certify(x, va, window, a, b, how, Run { cm: run.cm.max(st[k].1), ..run }, &mut out[a - b0..b - b0]);
        } else {
            bad.push((a, b));
        }
    }
    bad
}

/// Rows between the kernels' renormalisations `(s, c) <- TwoSum(s, c)`:
/// left alone, `c` random-walks to thousands of ulps of the sums over a
/// segment of millions of rows, and with it [`certify`]'s bound, so more
/// rows where a long window's sum crosses 0 would be redone (each from a
/// window of values); renormalised, `c` stays within some ulps of `s`.
const RENORM: usize = 256;

/// A run of rows on one chain: whether its sums stayed finite, the
/// largest `|c|` (compensation) it held and the smallest `|s + c|` (sum)
/// it stored, for [`certify`].
#[derive(Clone, Copy)]
struct Run {
    finite: bool,
    cm: f64,
    rm: f64,
}

/// The rows `[r0, r1)` of a finite run (`out`: what it stored) whose sum
/// the compensation's own rounding may have spoilt, redone exactly
/// ([`exact_rows`]). Each step rounds `c` (twice) by at most `u |c|`, so
/// a row's sum is off by at most `err = 4 u cm (rows + window)` beyond its
/// own rounding, `cm` the largest `|c|` held since the start window (the
/// start's lanes included). The promise: off by at most `2^-44 |sum|`, or
/// by `2^-50` of the smallest nonzero `|value|` the run read (so at most
/// `2^-50` of the sum of a window's `|values|`, but for a window of zeros,
/// which may read that little instead of 0, as in any running sum). So
/// rows are redone only where `|sum| < 2^44 err` and `err` is past the
/// second bound: the values near 1e300 that had left the window, whose
/// rounding `c` had carried and so lost the small values' sum (the rows
/// read 0). On ordinary data `cm` is a few ulps of the sums and no row is
/// redone; on integer data `c` stays 0; windows of zeros between bursts
/// cost the one pass that finds the smallest value.
#[allow(clippy::too_many_arguments)]
fn certify<T: Num, Va: Valid>(x: &[T], va: Va, window: usize, r0: usize, r1: usize, how: Out, run: Run, out: &mut [f64]) {
    let (err, thr) = bound(window, r0, r1, run);
    if run.rm >= thr || err <= min_nonzero(x, va, r0.saturating_sub(window), r1) * (-50f64).exp2() {
        return;
    }
    // What a row whose |sum| is below `thr` stores is below `lim`.
    let lim = match how {
        Out::Scale(sc) => 2.0 * thr * sc.abs(),
        Out::PerValid => thr,
    };
    exact_rows(x, va, window, r0, r1, how, lim, out);
}

/// [`certify`]'s bound on a row's error beyond its own rounding, and the
/// `|sum|` under which a row may be spoilt by it.
fn bound(window: usize, r0: usize, r1: usize, run: Run) -> (f64, f64) {
    let err = 2.0 * f64::EPSILON * run.cm * (r1 - r0 + window + 16) as f64;
    (err, err * (1u64 << 44) as f64)
}

/// Whether [`certify`] may have rows to redo: it reads the rows again.
fn doubtful(window: usize, r0: usize, r1: usize, run: Run) -> bool {
    run.rm < bound(window, r0, r1, run).1
}

/// The smallest `|x|` of the valid nonzero rows of `[lo, hi)` (inf if
/// none): eight lanes without branches, so it vectorises.
pub(super) fn min_nonzero<T: Num, Va: Valid>(x: &[T], va: Va, lo: usize, hi: usize) -> f64 {
    const L: usize = 8;
    let mut m = [f64::INFINITY; L];
    let xs = &x[lo..hi];
    let mut it = xs.chunks_exact(L);
    let mut r = lo;
    for ch in &mut it {
        let b = if Va::ALL { u64::MAX } else { va.bits(r) };
        for k in 0..L {
            let a = ch[k].to_f64().abs();
            let a = if (b >> k) & 1 == 1 && a != 0.0 { a } else { f64::INFINITY };
            // (a compare, not `f64::min`, whose NaN rule kept the loop scalar)
            m[k] = if a < m[k] { a } else { m[k] };
        }
        r += L;
    }
    let b = if Va::ALL { u64::MAX } else { va.bits(r) };
    for (k, v) in it.remainder().iter().enumerate() {
        let a = v.to_f64().abs();
        if (b >> k) & 1 == 1 && a != 0.0 {
            m[k] = m[k].min(a);
        }
    }
    m.into_iter().fold(f64::INFINITY, f64::min)
}

/// The rows of `[r0, r1)` whose stored result is below `lim` in magnitude
/// (NaN ones are not), from the exact sum of their window ([`Partials`]),
/// rounded once: a window is built once and slid to the next such row
/// (the rows between read once) when it is less than a window away.
#[cold]
#[allow(clippy::too_many_arguments)]
fn exact_rows<T: Num, Va: Valid>(x: &[T], va: Va, window: usize, r0: usize, r1: usize, how: Out, lim: f64, out: &mut [f64]) {
    let mut acc = Partials::default();
    let mut n = 0.0;
    let mut at: Option<usize> = None;
    for i in r0..r1 {
        if out[i - r0].is_nan() || out[i - r0].abs() >= lim {
            continue;
        }
        match at {
            Some(a) if i - a <= window => {
                for j in a + 1..=i {
                    let ((v, w), (o, wo)) = (row(x, va, j), evicted(x, va, j, window));
                    acc.add(v);
                    acc.add(-o);
                    n += w - wo;
                }
            }
            _ => {
                (acc, n) = (Partials::default(), 0.0);
                for j in (i + 1).saturating_sub(window)..=i {
                    let (v, w) = row(x, va, j);
                    acc.add(v);
                    n += w;
                }
            }
        }
        at = Some(i);
        let v = acc.value();
        if v.is_finite() {
            out[i - r0] = store(v, n, how);
        }
    }
}

/// Group modes: every row slides; every row only inserts (`r1 <= window`);
/// the first segment starts at row 0 and inserts only for its first
/// `window` rows, the others slide (needs `seg >= window`).
const SLIDE: u8 = 0;
const INSERT: u8 = 1;
const PAD0: u8 = 2;

/// Four segments `[b0 + k seg, b0 + (k+1) seg)` from start states `st`
/// (sum, compensation, valid rows), into `out` (those rows): per segment,
/// its [`Run`] (not finite: its rows are garbage and must be redone).
/// `skip` (only where [`avx2_group`]): `nan="skip"`, the NaN rows
/// missing too, found as the kernel loads them; the rows' validity ORed
/// into it (bit `r - b0` for row `r`).
#[allow(clippy::too_many_arguments)]
fn group<T: Num, Va: Valid, Kp: Valid>(
    x: &[T],
    va: Va,
    keep: Kp,
    window: usize,
    b0: usize,
    seg: usize,
    mode: u8,
    st: [(f64, f64, f64); 4],
    how: Out,
    stream: bool,
    bail: bool,
    mut skip: Option<&mut [u64]>,
    out: &mut [f64],
) -> [Run; 4] {
    assert!(b0 + 4 * seg <= x.len() && out.len() == 4 * seg);
    assert!(match mode {
        SLIDE => b0 >= window,
        INSERT => b0 + 4 * seg <= window,
        _ => b0 == 0 && seg >= window,
    });
    let fin = st.map(|(s, c, _)| s.is_finite() && c.is_finite());
    assert!(skip.as_ref().is_none_or(|b| avx2_group::<T>() && b.len() * 64 >= 4 * seg));
    #[cfg(target_arch = "x86_64")]
    {
        if avx2_group::<T>() {
            // SAFETY: T is f64 (same type, checked above), AVX2 is present
            // (and AVX-512 F / VL where `wide`), and the bounds the kernel
            // relies on are asserted above.
            let xf = unsafe { std::slice::from_raw_parts(x.as_ptr() as *const f64, x.len()) };
            let wide = matches!(crate::ops::reduce::detected(), crate::ops::reduce::Level::Avx512) && std::is_x86_feature_detected!("avx512vl");
            let scale = match how {
                Out::Scale(sc) => sc,
                Out::PerValid => 1.0,
            };
            let bits = skip.as_mut().map_or(std::ptr::null_mut(), |b| b.as_mut_ptr());
            let a = avx2::Args { x: xf, va, keep, window, b0, seg, st, bail, scale, stream, out, bits };
            /// The kernel for the mode and what it stores.
            unsafe fn pick<const SKIP: bool, Va: Valid, Kp: Valid>(mode: u8, how: Out, wide: bool, a: avx2::Args<'_, Va, Kp>) -> ([bool; 4], [f64; 4], [f64; 4]) {
                match (mode, how) {
                    (SLIDE, Out::Scale(_)) => avx2::group::<SLIDE, false, SKIP, Va, Kp>(wide, a),
                    (INSERT, Out::Scale(_)) => avx2::group::<INSERT, false, SKIP, Va, Kp>(wide, a),
                    (_, Out::Scale(_)) => avx2::group::<PAD0, false, SKIP, Va, Kp>(wide, a),
                    (SLIDE, Out::PerValid) => avx2::group::<SLIDE, true, SKIP, Va, Kp>(wide, a),
                    (INSERT, Out::PerValid) => avx2::group::<INSERT, true, SKIP, Va, Kp>(wide, a),
                    (_, Out::PerValid) => avx2::group::<PAD0, true, SKIP, Va, Kp>(wide, a),
                }
            }
            let (ok, cm, rm) = unsafe {
                match skip {
                    Some(_) => pick::<true, Va, Kp>(mode, how, wide, a),
                    None => pick::<false, Va, Kp>(mode, how, wide, a),
                }
            };
            return [0, 1, 2, 3].map(|k| Run { finite: ok[k] && fin[k], cm: cm[k], rm: rm[k] });
        }
    }
    let runs = group_portable(x, va, window, b0, seg, st, how, out);
    for k in 0..4 {
        set_missing(keep, b0 + k * seg, &mut out[k * seg..(k + 1) * seg]);
    }
    [0, 1, 2, 3].map(|k| Run { finite: runs[k].finite && fin[k], ..runs[k] })
}

/// Whether [`group`] runs its AVX2 kernel here for `T` (f64, on an x86-64
/// CPU with AVX2): the one that finds `nan="skip"`'s NaN as it loads.
fn avx2_group<T: 'static>() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>() && std::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Start state of the segment beginning at row `r`: the exact sum of its
/// first window's valid rows before `r` (`SKIP`: NaN rows missing too),
/// and their number; and the largest `|c|` its lanes held.
fn start_state<const SKIP: bool, T: Num, Va: Valid>(x: &[T], va: Va, window: usize, r: usize) -> ((f64, f64, f64), f64) {
    let a = r.saturating_sub(window);
    let xs = &x[a..r];
    #[cfg(target_arch = "x86_64")]
    {
        if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>() && std::is_x86_feature_detected!("avx2") {
            // SAFETY: T is f64 (checked above), and AVX2 is present.
            return unsafe { avx2::exact_sum::<SKIP, Va>(std::slice::from_raw_parts(xs.as_ptr() as *const f64, xs.len()), va, a) };
        }
    }
    exact_sum_valid::<SKIP, T, Va>(xs, va, a)
}

/// The row `i` evicts from its window: row `i - window`, or none (0, 0)
/// in the column's first window.
#[inline(always)]
fn evicted<T: Num, Va: Valid>(x: &[T], va: Va, i: usize, window: usize) -> (f64, f64) {
    if i >= window {
        row(x, va, i - window)
    } else {
        (0.0, 0.0)
    }
}

/// Row `i`'s value (0 where missing) and weight (1 or 0).
#[inline(always)]
fn row<T: Num, Va: Valid>(x: &[T], va: Va, i: usize) -> (f64, f64) {
    if Va::ALL {
        (x[i].to_f64(), 1.0)
    } else {
        let b = va.bits(i);
        (value(x[i], b), (b & 1) as f64)
    }
}

/// The row's stored result: the sum scaled, or divided by its valid rows.
#[inline(always)]
fn store(sum: f64, n: f64, how: Out) -> f64 {
    match how {
        Out::Scale(sc) => sum * sc,
        Out::PerValid => sum * (1.0 / n),
    }
}

/// The portable group: four scalar chains side by side (independent, so
/// their latencies overlap).
#[allow(clippy::too_many_arguments)]
fn group_portable<T: Num, Va: Valid>(
    x: &[T],
    va: Va,
    window: usize,
    b0: usize,
    seg: usize,
    st: [(f64, f64, f64); 4],
    how: Out,
    out: &mut [f64],
) -> [Run; 4] {
    let mut s = st.map(|v| v.0);
    let mut c = st.map(|v| v.1);
    let mut n = st.map(|v| v.2);
    let mut cm = c.map(f64::abs);
    let mut rm = [f64::INFINITY; 4];
    for j in 0..seg {
        if j % RENORM == 0 {
            for k in 0..4 {
                (s[k], c[k]) = two_sum(s[k], c[k]);
            }
        }
        for k in 0..4 {
            let i = b0 + k * seg + j;
            let (old, wo) = evicted(x, va, i, window);
            let (new, wn) = row(x, va, i);
            let (d, e1) = two_sum(new, -old);
            let (t, e2) = two_sum(s[k], d);
            s[k] = t;
            c[k] += e1 + e2;
            n[k] += wn - wo;
            cm[k] = cm[k].max(c[k].abs());
            rm[k] = rm[k].min((s[k] + c[k]).abs());
            out[i - b0] = store(s[k] + c[k], n[k], how);
        }
    }
    [0, 1, 2, 3].map(|k| Run { finite: c[k].is_finite(), cm: cm[k], rm: rm[k] })
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The group kernel on AVX2: lane `k` of every vector is segment `k`,
    //! so the loop-carried adds (`s`, `c`) run four segments at once. Rows
    //! come in 4x4 tiles (four rows of each segment), transposed in
    //! registers on the way in and out. Missing rows are masked as each
    //! segment's four rows are loaded (four validity bits a load).
    use std::arch::x86_64::*;

    use super::{Valid, INSERT, PAD0, RENORM};
    use crate::ops::reduce::transpose4 as transpose;

    /// All-ones in lane `t` where bit `t` of `b` is set: one load from
    /// the 16 patterns (a broadcast, an and and a compare before).
    #[inline(always)]
    unsafe fn lanes_of(b: u64) -> __m256d {
        _mm256_loadu_pd(LANES[(b & 15) as usize].as_ptr() as *const f64)
    }

    const fn lane_table() -> [[u64; 4]; 16] {
        let mut t = [[0u64; 4]; 16];
        let mut b = 0;
        while b < 16 {
            let mut l = 0;
            while l < 4 {
                if (b >> l) & 1 == 1 {
                    t[b][l] = u64::MAX;
                }
                l += 1;
            }
            b += 1;
        }
        t
    }

    static LANES: [[u64; 4]; 16] = lane_table();

    /// `NET[i << 4 | x][t]`: how many of bits `0..=t` of `i` are set, less
    /// those of `x`: the valid rows in less the valid rows out, by row of a
    /// segment's four (one load a segment; two loads and a subtraction of
    /// per-mask prefix counts before, the same whole numbers).
    static NET: [[f64; 4]; 256] = {
        let mut t = [[0.0; 4]; 256];
        let mut m = 0;
        while m < 256 {
            let (mut c, mut l) = (0.0, 0);
            while l < 4 {
                c += ((m >> (4 + l)) & 1) as f64 - ((m >> l) & 1) as f64;
                t[m][l] = c;
                l += 1;
            }
            m += 1;
        }
        t
    };

    /// Rows `r..r + 4` at `p` (bit `t` of `b`: row `r + t`'s validity),
    /// missing ones as 0, and their validity bits: `b` as given, or with
    /// `SKIP` (`nan="skip"`) its four with the NaN rows cleared, found by
    /// one compare of the values as they are loaded (issue 36: a mask
    /// built in a pass first read the column once more, and its pass and
    /// the kernel ran one after the other: a fifth of the time).
    /// Also the rows' mask (all ones where valid), which only `SKIP`'s
    /// mean reads.
    #[inline(always)]
    unsafe fn load4<const SKIP: bool, Va: Valid>(p: *const f64, b: u64) -> (__m256d, u64, __m256d) {
        let v = _mm256_loadu_pd(p);
        if !SKIP {
            let m = if Va::ALL { _mm256_castsi256_pd(_mm256_set1_epi64x(-1)) } else { lanes_of(b) };
            return (if Va::ALL { v } else { _mm256_and_pd(v, m) }, b, m);
        }
        let mut m = _mm256_cmp_pd::<_CMP_ORD_Q>(v, v);
        if !Va::ALL {
            m = _mm256_and_pd(m, lanes_of(b));
        }
        (_mm256_and_pd(v, m), _mm256_movemask_pd(m) as u64, m)
    }

    /// A 4x4 tile at rows `r, r + seg, ...` (`p` at row `r`), transposed,
    /// missing rows 0; `b[k]`: the validity bits of segment `k`'s four
    /// rows; and those bits and masks (a segment's four rows each, not
    /// transposed) as [`load4`] gives them.
    #[inline(always)]
    unsafe fn tile<const SKIP: bool, Va: Valid>(p: *const f64, seg: usize, b: [u64; 4]) -> ([__m256d; 4], [u64; 4], [__m256d; 4]) {
        // (No closure: it would be compiled without the caller's features.)
        let (a0, b0, m0) = load4::<SKIP, Va>(p, b[0]);
        let (a1, b1, m1) = load4::<SKIP, Va>(p.add(seg), b[1]);
        let (a2, b2, m2) = load4::<SKIP, Va>(p.add(2 * seg), b[2]);
        let (a3, b3, m3) = load4::<SKIP, Va>(p.add(3 * seg), b[3]);
        (transpose([a0, a1, a2, a3]), [b0, b1, b2, b3], [m0, m1, m2, m3])
    }

    /// The four segments' validity from a row on, four bits a tile: one
    /// read of `va` per segment every 14 tiles (a read gives 57 rows'
    /// bits), not one a tile (the reads were most of the masked kernel's
    /// extra work).
    struct Cursor {
        w: [u64; 4],
        left: u32,
    }

    impl Cursor {
        /// The bits of rows `r + k seg + (0..4)` for segment `k`; `r` steps
        /// by 4 between calls.
        #[inline(always)]
        fn next<Va: Valid>(&mut self, va: Va, r: usize, seg: usize) -> [u64; 4] {
            if Va::ALL {
                return [15; 4];
            }
            if self.left == 0 {
                for k in 0..4 {
                    self.w[k] = va.bits(r + k * seg);
                }
                self.left = 14;
            }
            self.left -= 1;
            let b = self.w;
            for k in 0..4 {
                self.w[k] >>= 4;
            }
            b
        }
    }

    /// Evicted values of rows `i..i + 4` of a segment starting at row 0:
    /// zero before row `window`; and their validity bits and mask ([`load4`]).
    #[inline(always)]
    unsafe fn old_row0<const SKIP: bool, Va: Valid>(x: &[f64], va: Va, i: usize, window: usize) -> (__m256d, u64, __m256d) {
        if i >= window {
            load4::<SKIP, Va>(x.as_ptr().add(i - window), va.bits(i - window))
        } else if i + 4 <= window {
            (_mm256_setzero_pd(), 0, _mm256_setzero_pd())
        } else {
            let (mut v, mut b) = ([0.0f64; 4], 0u64);
            let mut t = 0;
            while t < 4 {
                if i + t >= window {
                    let r = i + t - window;
                    if va.bits(r) & 1 != 0 && !(SKIP && x[r].is_nan()) {
                        v[t] = x[r];
                        b |= 1 << t;
                    }
                }
                t += 1;
            }
            (_mm256_loadu_pd(v.as_ptr()), b, lanes_of(b))
        }
    }

    /// [`super::exact_sum_valid`] compiled for AVX2 (its lanes fill two vectors).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn exact_sum<const SKIP: bool, Va: Valid>(xs: &[f64], va: Va, r0: usize) -> ((f64, f64, f64), f64) {
        super::exact_sum_valid::<SKIP, f64, Va>(xs, va, r0)
    }

    /// A group's arguments (the caller's, `super::group`).
    pub(super) struct Args<'a, Va, Kp> {
        pub(super) x: &'a [f64],
        pub(super) va: Va,
        pub(super) keep: Kp,
        pub(super) window: usize,
        pub(super) b0: usize,
        pub(super) seg: usize,
        pub(super) st: [(f64, f64, f64); 4],
        pub(super) bail: bool,
        pub(super) scale: f64,
        pub(super) stream: bool,
        pub(super) out: &'a mut [f64],
        /// `SKIP`: where the group ORs its rows' validity (bit `r - b0`
        /// for row `r`, zeroed before), for the output's.
        pub(super) bits: *mut u64,
    }

    /// Bounds are the caller's (`super::group` asserts them). `DIV`: each
    /// row's sum divided by its valid rows (counted in a fifth chain),
    /// else times `scale`. Per segment: whether it stayed finite, the
    /// largest `|c|` and the smallest `|s + c|` (`super::certify`).
    /// `wide`: the CPU has AVX-512 (VL), so the same code compiles with 32
    /// vector registers, not 16: the tile, its evicted rows and the chains
    /// no longer spill to the stack (the masked mean spilled most).
    pub(super) unsafe fn group<const MODE: u8, const DIV: bool, const SKIP: bool, Va: Valid, Kp: Valid>(wide: bool, a: Args<'_, Va, Kp>) -> ([bool; 4], [f64; 4], [f64; 4]) {
        // The same body compiled for each feature set (`target_feature` is
        // a function's: one function each).
        #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
        unsafe fn w<const MODE: u8, const DIV: bool, const SKIP: bool, Va: Valid, Kp: Valid>(a: Args<'_, Va, Kp>) -> ([bool; 4], [f64; 4], [f64; 4]) {
            body::<MODE, DIV, SKIP, Va, Kp>(a)
        }
        #[target_feature(enable = "avx2,fma")]
        unsafe fn n<const MODE: u8, const DIV: bool, const SKIP: bool, Va: Valid, Kp: Valid>(a: Args<'_, Va, Kp>) -> ([bool; 4], [f64; 4], [f64; 4]) {
            body::<MODE, DIV, SKIP, Va, Kp>(a)
        }
        if wide {
            w::<MODE, DIV, SKIP, Va, Kp>(a)
        } else {
            n::<MODE, DIV, SKIP, Va, Kp>(a)
        }
    }

    #[inline(always)]
    unsafe fn body<const MODE: u8, const DIV: bool, const SKIP: bool, Va: Valid, Kp: Valid>(a: Args<'_, Va, Kp>) -> ([bool; 4], [f64; 4], [f64; 4]) {
        let Args { x, va, keep, window, b0, seg, st, bail, scale, stream, out, bits } = a;
        let s0 = st.map(|v| v.0);
        let c0 = st.map(|v| v.1);
        let n0 = st.map(|v| v.2);
        let mut s = _mm256_loadu_pd(s0.as_ptr());
        let mut c = _mm256_loadu_pd(c0.as_ptr());
        let sign = _mm256_set1_pd(-0.0);
        let (mut cm, mut rm) = (_mm256_andnot_pd(sign, c), _mm256_set1_pd(f64::INFINITY));
        // Valid rows per segment before the tile (whole numbers: exact),
        // and their reciprocals (`Out`).
        let mut cnt = n0;
        let mut cntv = [_mm256_set1_pd(n0[0]), _mm256_set1_pd(n0[1]), _mm256_set1_pd(n0[2]), _mm256_set1_pd(n0[3])];
        let one = _mm256_set1_pd(1.0);
        let mut inv = [0.0; 4];
        _mm256_storeu_pd(inv.as_mut_ptr(), _mm256_div_pd(one, _mm256_loadu_pd(cnt.as_ptr())));
        let sc = _mm256_set1_pd(scale);
        let xin = x.as_ptr().add(b0);
        let o = out.as_mut_ptr();
        // Non-temporal stores need 16-byte aligned rows: every store's row
        // is `o`'s plus a multiple of 2 (`seg` and `j` step by 4).
        let stream = stream && (o as usize) % 16 == 0;
        let mut j = 0;
        let (mut new_bits, mut old_bits) = (Cursor { w: [0; 4], left: 0 }, Cursor { w: [0; 4], left: 0 });
        let mut keep_bits = Cursor { w: [0; 4], left: 0 };
        let nan = _mm256_set1_pd(f64::NAN);
        let mut check_in = 64u32;
        while j < seg {
            let (a, bn, mn) = tile::<SKIP, Va>(xin.add(j), seg, new_bits.next(va, b0 + j, seg));
            if SKIP {
                // Row `b0 + k seg + j` is bit `k seg + j`, a multiple of 4:
                // the four rows' nibble never straddles two words.
                for (k, b) in bn.into_iter().enumerate() {
                    let p = k * seg + j;
                    *bits.add(p / 64) |= (b & 15) << (p % 64);
                }
            }
            // The evicted rows, and their validity bits per segment.
            let (b, bo, mo) = match MODE {
                INSERT => (a, [0; 4], [_mm256_setzero_pd(); 4]),
                // Lanes 1..3 slide from their first row (seg >= window).
                PAD0 => {
                    let p = xin.add(j + seg - window);
                    let r = b0 + j + seg - window;
                    // Lane 0's rows before `window` evict nothing. (No
                    // closures here: they would be compiled without the
                    // kernel's features.)
                    let (o0, l0, m0) = old_row0::<SKIP, Va>(x, va, b0 + j, window);
                    let (o1, l1, m1) = load4::<SKIP, Va>(p, va.bits(r));
                    let (o2, l2, m2) = load4::<SKIP, Va>(p.add(seg), va.bits(r + seg));
                    let (o3, l3, m3) = load4::<SKIP, Va>(p.add(2 * seg), va.bits(r + 2 * seg));
                    (transpose([o0, o1, o2, o3]), [l0, l1, l2, l3], [m0, m1, m2, m3])
                }
                _ => tile::<SKIP, Va>(xin.add(j).sub(window), seg, old_bits.next(va, b0 + j - window, seg)),
            };
            let mut r = [_mm256_setzero_pd(); 4];
            for t in 0..4 {
                // d + e1 = a - b exactly (TwoSum), off the chain.
                let (d, e1) = if MODE == INSERT {
                    (a[t], _mm256_setzero_pd())
                } else {
                    let d = _mm256_sub_pd(a[t], b[t]);
                    let bb = _mm256_sub_pd(d, a[t]);
                    let e1 = _mm256_sub_pd(_mm256_sub_pd(a[t], _mm256_sub_pd(d, bb)), _mm256_add_pd(b[t], bb));
                    (d, e1)
                };
                // s' + e2 = s + d exactly.
                let t2 = _mm256_add_pd(s, d);
                let bb = _mm256_sub_pd(t2, s);
                let e2 = _mm256_add_pd(_mm256_sub_pd(s, _mm256_sub_pd(t2, bb)), _mm256_sub_pd(d, bb));
                s = t2;
                c = _mm256_add_pd(c, if MODE == INSERT { e2 } else { _mm256_add_pd(e1, e2) });
                cm = _mm256_max_pd(cm, _mm256_andnot_pd(sign, c));
                let sum = _mm256_add_pd(s, c);
                rm = _mm256_min_pd(rm, _mm256_andnot_pd(sign, sum));
                r[t] = if DIV { sum } else { _mm256_mul_pd(sum, sc) };
            }
            let mut r = transpose(r);
            if DIV && SKIP {
                // `nan="skip"`: segment k's four rows' counts from the masks
                // its loads gave (the rows in less the rows out, summed
                // over the four lanes), every tile divided. Its bits come
                // from the values, late: the table read by them and the
                // branch below waited on them (one thread, 10% NaN, window
                // 16: 0.62x of the clean mean's speed, 0.72x now; 0.76x
                // with nulls).
                for k in 0..4 {
                    let inc = _mm256_sub_pd(_mm256_and_pd(mn[k], one), _mm256_and_pd(mo[k], one));
                    let s1 = _mm256_add_pd(inc, _mm256_blend_pd::<1>(_mm256_permute4x64_pd::<0x90>(inc), _mm256_setzero_pd()));
                    let d = _mm256_add_pd(s1, _mm256_permute2f128_pd::<0x08>(s1, s1));
                    r[k] = _mm256_mul_pd(r[k], _mm256_div_pd(one, _mm256_add_pd(cntv[k], d)));
                    cntv[k] = _mm256_add_pd(cntv[k], _mm256_permute4x64_pd::<0xFF>(d));
                }
            } else if DIV {
                // Where every segment lets in the validity it lets out (bit
                // for bit: its running count is its count before the tile),
                // each row is its sum times its segment's kept reciprocal:
                // 72% of tiles with 1% missing, no division.
                if ((bn[0] ^ bo[0]) | (bn[1] ^ bo[1]) | (bn[2] ^ bo[2]) | (bn[3] ^ bo[3])) & 15 == 0 {
                    for k in 0..4 {
                        r[k] = _mm256_mul_pd(r[k], _mm256_set1_pd(inv[k]));
                    }
                } else {
                    // Segment k's four rows: its count before the tile plus
                    // the running counts of the rows in and out ([`NET`] of
                    // their bits), after the transpose: no weights loaded,
                    // masked or transposed (they were a third of the masked
                    // mean's shuffles). The divisions are not what limits
                    // it: a table of `1 / n` read by a gather, or by a
                    // permute of eight around the count, ran slower on an
                    // Intel Xeon (one thread, 10% missing: 18 ms to 22-25).
                    for k in 0..4 {
                        let d = &NET[((bn[k] & 15) << 4 | (bo[k] & 15)) as usize];
                        let n = _mm256_add_pd(_mm256_set1_pd(cnt[k]), _mm256_loadu_pd(d.as_ptr()));
                        r[k] = _mm256_mul_pd(r[k], _mm256_div_pd(one, n));
                        cnt[k] += d[3];
                    }
                    _mm256_storeu_pd(inv.as_mut_ptr(), _mm256_div_pd(one, _mm256_loadu_pd(cnt.as_ptr())));
                }
            }
            if !Kp::ALL {
                // NaN where the window holds one (nan="propagate").
                let kb = keep_bits.next(keep, b0 + j, seg);
                for k in 0..4 {
                    r[k] = _mm256_blendv_pd(nan, r[k], lanes_of(kb[k]));
                }
            }
            if stream {
                for (k, v) in r.into_iter().enumerate() {
                    super::super::stream4(o.add(k * seg + j), v);
                }
            } else {
                for (k, v) in r.into_iter().enumerate() {
                    _mm256_storeu_pd(o.add(k * seg + j), v);
                }
            }
            j += 4;
            if j % RENORM == 0 {
                // (s, c) <- TwoSum(s, c): the same exact sum, `c` back
                // to an ulp of `s` (see `RENORM`).
                let t2 = _mm256_add_pd(s, c);
                let bb = _mm256_sub_pd(t2, s);
                c = _mm256_add_pd(_mm256_sub_pd(s, _mm256_sub_pd(t2, bb)), _mm256_sub_pd(c, bb));
                s = t2;
            }
            if bail {
                check_in -= 1;
                if check_in == 0 {
                    check_in = 64;
                    // An inf / NaN read (or an overflow) leaves `c` NaN.
                    if _mm256_movemask_pd(_mm256_cmp_pd(c, c, _CMP_UNORD_Q)) != 0 {
                        if stream {
                            _mm_sfence();
                        }
                        return ([false; 4], [0.0; 4], [0.0; 4]);
                    }
                }
            }
        }
        if stream {
            // Non-temporal stores are weakly ordered: drain them before
            // another thread may read the rows.
            _mm_sfence();
        }
        let (mut cf, mut cmf, mut rmf) = ([0.0; 4], [0.0; 4], [0.0; 4]);
        _mm256_storeu_pd(cf.as_mut_ptr(), c);
        _mm256_storeu_pd(cmf.as_mut_ptr(), cm);
        _mm256_storeu_pd(rmf.as_mut_ptr(), rm);
        (cf.map(|v| v.is_finite()), cmf, rmf)
    }
}

/// Rows `[b0, b1)` on one chain from the exact sum of the window before
/// `b0`: its [`Run`] (not finite: an inf / NaN made the compensation
/// NaN; the caller redoes the rows with [`counted_block`]), so a finite
/// column is read once.
#[inline(always)]
fn finite_block<T: Num, Va: Valid>(x: &[T], va: Va, window: usize, b0: usize, b1: usize, how: Out, out: &mut [f64]) -> Run {
    let ((mut s, mut c, mut n), mut cm) = start_state::<false, T, Va>(x, va, window, b0);
    let mut rm = f64::INFINITY;
    // Rows before `window` only insert (partial windows at the start).
    let mid = window.clamp(b0, b1);
    for (o, i) in out[..mid - b0].iter_mut().zip(b0..mid) {
        let (v, w) = row(x, va, i);
        let (t, e) = two_sum(s, v);
        s = t;
        c += e;
        n += w;
        cm = cm.max(c.abs());
        rm = rm.min((s + c).abs());
        *o = store(s + c, n, how);
        if (i - b0) % RENORM == RENORM - 1 {
            (s, c) = two_sum(s, c);
        }
    }
    if mid == b1 {
        return Run { finite: s.is_finite() && c.is_finite(), cm, rm };
    }
    for (o, i) in out[mid - b0..].iter_mut().zip(mid..b1) {
        let ((a, wa), (b, wb)) = (row(x, va, i), row(x, va, i - window));
        let (d, e1) = two_sum(a, -b);
        let (t, e2) = two_sum(s, d);
        s = t;
        c += e1 + e2;
        n += wa - wb;
        cm = cm.max(c.abs());
        rm = rm.min((s + c).abs());
        *o = store(s + c, n, how);
        if (i - b0) % RENORM == RENORM - 1 {
            (s, c) = two_sum(s, c);
        }
    }
    Run { finite: s.is_finite() && c.is_finite(), cm, rm }
}

/// The same with non-finite values counted apart (`FSum`), per row.
#[cold]
fn counted_block<T: Num, Va: Valid>(x: &[T], va: Va, window: usize, b0: usize, b1: usize, how: Out, out: &mut [f64]) {
    let mut acc = FSum::default();
    let mut n = 0.0;
    let lift = |i: usize| {
        let (v, w) = row(x, va, i);
        (if w == 1.0 { FSum::lift(v) } else { FSum::default() }, w)
    };
    for i in b0.saturating_sub(window)..b0 {
        let (v, w) = lift(i);
        acc = acc.add(&v);
        n += w;
    }
    for i in b0..b1 {
        let (v, w) = lift(i);
        acc = acc.add(&v);
        n += w;
        if i >= window {
            let (v, w) = lift(i - window);
            acc = acc.sub(&v);
            n -= w;
        }
        out[i - b0] = store(acc.value(), n, how);
    }
}

/// Rolling sums of an integer column: exact, wrapping on i64 overflow.
/// Exact, so any cut gives the bits of one thread: a range starts from the
/// wrapping sum of the window before it.
pub(super) fn int_sums<T: Num + Into<i64>>(x: &[T], window: usize, threads: usize) -> Vec<i64> {
    let n = x.len();
    let mut out = buffer::<i64>(n);
    let cs = super::cuts(n, threads, |r| Some(r / 8 * 8));
    super::par_ranges(&mut out[..], &cs, |r0, r1, out| int_sums_range(x, window, r0, r1, out));
    out
}

/// The sums of rows `[r0, r1)` into `out` (those rows), from the wrapping
/// sum of the window before `r0`.
pub(super) fn int_sums_range<T: Num + Into<i64>>(x: &[T], window: usize, r0: usize, r1: usize, out: &mut [i64]) {
    int_running(x, window, r0, r1, out, 0i64, |s, v| s.wrapping_add(v), |s, a, b| s.wrapping_add(a.wrapping_sub(b)), |s| s);
}

/// The exact sums of rows `[r0, r1)` (i128: no window of fewer than 2^64
/// rows can overflow it), rounded once to f64, into `out`: a mean's, which
/// must not wrap (`crate::ops::WideSum`).
pub(super) fn exact_int_sums_range<T: Num + Into<i64>>(x: &[T], window: usize, r0: usize, r1: usize, out: &mut [f64]) {
    // Where no window of these rows can reach 2^63 in magnitude, the i64
    // sums are exact already (and 1.6x faster than i128 here); the same
    // integers, so the same bits either way.
    let rows = &x[r0.saturating_sub(window)..r1];
    let most = rows.iter().fold(0u64, |m, &v| m.max(v.into().unsigned_abs()));
    if (most as u128) * (window as u128) < 1u128 << 63 {
        // (wrapping: `a - b` alone may pass 2^63; the sums it leads to do not)
        int_running(x, window, r0, r1, out, 0i64, |s, v| s.wrapping_add(v), |s, a, b| s.wrapping_add(a.wrapping_sub(b)), |s| s as f64);
    } else {
        int_running(x, window, r0, r1, out, 0i128, |s, v| s + v as i128, |s, a, b| s + (a as i128 - b as i128), |s| s as f64);
    }
}

/// Subtract-on-Evict over integers with the state `W`: `push` folds in a
/// row, `slide` folds in one and takes out another; each row's state goes
/// out through `emit`. Starts from the window before `r0`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn int_running<T: Num + Into<i64>, W: Copy, O>(
    x: &[T],
    window: usize,
    r0: usize,
    r1: usize,
    out: &mut [O],
    zero: W,
    push: impl Fn(W, i64) -> W,
    slide: impl Fn(W, i64, i64) -> W,
    emit: impl Fn(W) -> O,
) {
    let mut s = x[r0.saturating_sub(window)..r0].iter().fold(zero, |a, &v| push(a, v.into()));
    let mid = window.clamp(r0, r1);
    for (o, &v) in out[..mid - r0].iter_mut().zip(&x[r0..mid]) {
        s = push(s, v.into());
        *o = emit(s);
    }
    for ((o, &a), &b) in out[mid - r0..].iter_mut().zip(&x[mid..r1]).zip(&x[mid - window.min(mid)..]) {
        s = slide(s, a.into(), b.into());
        *o = emit(s);
    }
}

fn sums_of<T: FastNum>(col: &Column<T>, window: usize, split: Split) -> Vec<T::Wide> {
    let th = split.threads(col.len());
    match col.nulls {
        None => T::window_sums(col.values, window, th, split.min_rows),
        Some(nb) => T::window_sums_valid(col.values, Bitmap::new(nb), window, th, split.min_rows),
    }
}

pub(super) fn rolling_sum<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize, split: Split) -> ArrayRef {
    let out = sums_of(col, window, split);
    let nulls = super::out_nulls(col.nulls, col.len(), window, min_periods.max(1));
    <T::Wide as ToArrow>::to_arrow(out, nulls)
}

pub(super) fn rolling_mean<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize, split: Split) -> ArrayRef {
    let th = split.threads(col.len());
    let n = col.len();
    if std::any::TypeId::of::<T::Wide>() == std::any::TypeId::of::<f64>() {
        let out = match col.nulls {
            // Floats without nulls: the kernel scales by 1 / window as it
            // stores (no second pass).
            None => float_sums_scaled(col.values, All, window, Out::Scale(1.0 / window as f64), th, split.min_rows, |r0, o| rescale_partial(r0, o, window)),
            // With nulls: the kernel reads the bitmap in place and divides
            // by the valid rows it counts as it slides.
            Some(nb) => float_sums_scaled(col.values, Bitmap::new(nb), window, Out::PerValid, th, split.min_rows, |_, _| {}),
        };
        let nulls = super::out_nulls(col.nulls, n, window, min_periods.max(1));
        return f64::to_arrow(out, nulls);
    }
    // Integers: exact i128 window sums (a mean must not wrap), divided by
    // each thread; exact, so any cut gives the bits of one thread.
    let counts = col.nulls.map(|nb| window_counts(nb, window));
    let zeroed: Option<Vec<T>> = col.nulls.map(|_| filled(col, T::default()));
    let xs = zeroed.as_deref().unwrap_or(col.values);
    let mut out = super::buffer_to_fill(n);
    let c = counts.as_deref();
    super::par_ranges(&mut out[..], &super::cuts(n, th, Some), |r0, r1, o| {
        T::exact_sums_range(xs, window, r0, r1, o);
        divide_sums(r0, o, window, c);
    });
    super::assert_filled(&out);
    let nulls = validity(n, window, min_periods.max(1), c);
    f64::to_arrow(out, nulls)
}

/// `nan="skip"` rolling sum (`mean` false) or mean of a float column: as
/// [`rolling_sum`] / [`rolling_mean`] of the column with its NaN rows
/// null, the same bits ([`float_sums_skip`]). Where no NaN shows where
/// [`super::nan_seen`] looks, the jobs without NaN run unmasked, and a
/// mean's without nulls store as [`rolling_mean`]'s: a column without NaN
/// gets the bits of `nan="propagate"`, at its speed.
pub(super) fn rolling_skip_nan<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize, mean: bool, split: Split) -> ArrayRef {
    let n = col.len();
    let how = if mean { Out::PerValid } else { Out::Scale(1.0) };
    let plain = (!super::nan_seen(col.values)).then_some(if mean && col.nulls.is_none() { Out::Scale(1.0 / window as f64) } else { how });
    let (out, nb) = float_sums_skip(col.values, col.nulls, window, how, plain, split.threads(n), split.min_rows);
    f64::to_arrow(out, super::out_nulls(nb.as_ref(), n, window, min_periods.max(1)))
}

/// [`rolling_mean`]'s values of `xs` alone (null slots zeroed, `counts`
/// their windows' valid rows, `None` without nulls), on this thread, into
/// `out` (keyed rolling's short keys, segments.rs).
pub(super) fn mean_into<T: FastNum>(xs: &[T], window: usize, counts: Option<&[u32]>, out: &mut [f64]) {
    if std::any::TypeId::of::<T::Wide>() == std::any::TypeId::of::<f64>() {
        match counts {
            None => {
                float_sums_into(xs, All, window, Out::Scale(1.0 / window as f64), out);
                rescale_partial(0, out, window);
            }
            Some(c) => {
                float_sums_into(xs, All, window, Out::Scale(1.0), out);
                per_valid(0, out, c);
            }
        }
        return;
    }
    T::exact_sums_range(xs, window, 0, xs.len(), out);
    divide_sums(0, out, window, counts);
}

/// A float mean's sums (rows `r0..` of the column) times `1 / n`, `c`
/// their windows' valid rows: as the kernel stores a mean with nulls
/// ([`Out`]), so a key batched with others gets the bits of its own call.
fn per_valid(r0: usize, o: &mut [f64], c: &[u32]) {
    o.iter_mut().zip(&c[r0..]).for_each(|(o, &k)| *o *= 1.0 / k as f64);
}

/// A float mean's sums stored times `1 / window`, rows `r0..` of the
/// column: those before `window` rescaled to their partial windows (within
/// 3 ulps of sum / count).
fn rescale_partial(r0: usize, o: &mut [f64], window: usize) {
    let w = window as f64;
    for (i, o) in (r0..window.min(r0 + o.len())).zip(o.iter_mut()) {
        *o = *o * w / (i + 1) as f64;
    }
}

/// Sums into means, rows `r0..` of the column: divided by their windows'
/// valid rows (`counts`, the column's), or without nulls by the rows the
/// window holds.
fn divide_sums(r0: usize, o: &mut [f64], window: usize, counts: Option<&[u32]>) {
    match counts {
        Some(c) => o.iter_mut().zip(&c[r0..]).for_each(|(o, &k)| *o /= k as f64),
        None => {
            let k = window.saturating_sub(r0).min(o.len());
            for (i, o) in (r0..).zip(o[..k].iter_mut()) {
                *o /= (i + 1) as f64;
            }
            let w = window as f64;
            o[k..].iter_mut().for_each(|o| *o /= w);
        }
    }
}

/// Rolling geometric mean, `exp(mean(ln x))` ([`crate::ops::Geomean`]):
/// the mean kernel above over the values' logarithms. Its sums are exact
/// and restart only where [`plan`] puts them, so a key's bits are those of
/// one call on it alone (keyed rolling batches short keys, segments.rs),
/// where the generic block kernel's rounding moved with its blocks. A 0
/// gives `ln 0 = -inf` and a negative value NaN, counted apart as `FSum`
/// does: the window's geomean is then 0 or NaN (scipy's `gmean`).
pub(super) fn rolling_geomean<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize, split: Split) -> ArrayRef {
    let n = col.len();
    let th = split.threads(n);
    let counts = col.nulls.map(|nb| window_counts(nb, window));
    let logs = logs_of(col, th);
    let out = match &counts {
        None => float_sums_scaled(&logs, All, window, Out::Scale(1.0 / window as f64), th, split.min_rows, |r0, o| {
            rescale_partial(r0, o, window);
            exp_all(o);
        }),
        Some(c) => float_sums_scaled(&logs, All, window, Out::Scale(1.0), th, split.min_rows, |r0, o| {
            per_valid(r0, o, c);
            exp_all(o);
        }),
    };
    let nulls = validity(n, window, min_periods.max(1), counts.as_deref());
    f64::to_arrow(out, nulls)
}

/// `ln x` per row, 0 in null slots (a null is no row of the sum; its
/// window's count leaves it out), over up to `threads` threads.
pub(super) fn logs_of<T: Num>(col: &Column<T>, threads: usize) -> Vec<f64> {
    let n = col.len();
    let mut logs = super::buffer_to_fill(n);
    super::par_ranges(&mut logs[..], &super::cuts(n, threads, Some), |r0, r1, o| {
        o.iter_mut().zip(&col.values[r0..r1]).for_each(|(l, v)| *l = v.to_f64().ln());
        if let Some(nb) = col.nulls {
            o.iter_mut().zip(nb.slice(r0, r1 - r0).iter()).filter(|(_, ok)| !ok).for_each(|(l, _)| *l = 0.0);
        }
    });
    super::assert_filled(&logs);
    logs
}

/// Means of logarithms into geometric means, in place.
pub(super) fn exp_all(o: &mut [f64]) {
    o.iter_mut().for_each(|v| *v = v.exp());
}

/// [`rolling_geomean`]'s values of `logs` ([`logs_of`], one segment) alone,
/// on this thread, into `out`: the mean's, exponentiated.
pub(super) fn geomean_into(logs: &[f64], window: usize, counts: Option<&[u32]>, out: &mut [f64]) {
    mean_into(logs, window, counts, out);
    exp_all(out);
}

/// count never is null for lack of rows (an empty window counts 0), only
/// below `min_periods`.
/// With nulls each row's count is a difference of valid-row prefixes
/// ([`ValidPrefix`]), rows split over `threads`; the validity from the
/// bitmap a word at a time, as every kernel's ([`super::out_nulls`]).
/// `nan="skip"` runs it on the column with its NaN rows null (a pass
/// first). Counting as each thread builds its words, 4,096 rows at a time,
/// measured no faster (Intel Xeon, 10M rows, 1% NaN: 9.4-11.0 ms against
/// 9.6-12.9 on two threads, 18.5 on one either way; a column without NaN
/// slower on one): the reads of the values, not the two passes, set it.
pub(super) fn rolling_count<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize, threads: usize) -> ArrayRef {
    let n = col.len();
    let vp = col.nulls.map(ValidPrefix::new);
    // Written in full below, on threads (a 10M-row column is 80 MB).
    let mut out = super::buffer_to_fill::<i64>(n);
    super::par_ranges(&mut out[..], &super::cuts(n, threads, Some), |r0, _, o| match &vp {
        Some(vp) => vp.window_counts(window, r0, o, |c| c as i64),
        None => o.iter_mut().zip(r0 + 1..).for_each(|(o, a)| *o = a.min(window) as i64),
    });
    super::assert_filled(&out);
    let nulls = if min_periods == 0 { None } else { super::out_nulls(col.nulls, n, window, min_periods) };
    i64::to_arrow(out, nulls)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The next xorshift64 state (the tests' data).
    fn xorshift(st: &mut u64) -> u64 {
        *st ^= *st << 13;
        *st ^= *st >> 7;
        *st ^= *st << 17;
        *st
    }

    /// Debug builds mark an unzeroed output's rows, so a kernel that
    /// leaves one unwritten fails every test that reaches it.
    #[test]
    #[should_panic(expected = "row 2 of 4 of an output was never written")]
    fn an_unwritten_row_is_caught() {
        let mut v = crate::rolling::buffer_to_fill(4);
        (v[0], v[1], v[3]) = (1.0, f64::NAN, 0.0);
        crate::rolling::assert_filled(&v);
    }

    /// Found by the NaN-runs proptest (2026-11-29): seven values of
    /// -1e300 in and near a segment's start window made the compensation
    /// carry rounding errors of ~1e284, which swallowed the small values'
    /// sum; once the huge values had left the window the rows read 0
    /// instead of their sums (pandas' and bottleneck's running sums still
    /// do). [`certify`] finds those rows and [`exact_rows`] redoes them.
    #[test]
    fn huge_values_leaving_the_window_keep_the_small_sum() {
        let (n, w) = (176_097, 22_486);
        let mut st = 0x9E37_79B9_7F4A_7C15u64;
        let mut walk = 0i64;
        let mut tenths: Vec<i64> = (0..n)
            .map(|_| {
                walk += (xorshift(&mut st) % 9) as i64 - 4;
                walk
            })
            .collect();
        let big = [117_397, 117_398, 117_400, 117_401, 132_071, 132_073, 132_075];
        for &b in &big {
            tenths[b] = 0;
        }
        let mut x: Vec<f64> = tenths.iter().map(|&t| t as f64 / 10.0).collect();
        for &b in &big {
            x[b] = -1e300;
        }
        let got = float_sums(&x, w, 1, usize::MAX);
        for i in [160_000, 170_000, n - 1] {
            let want = tenths[i + 1 - w..=i].iter().sum::<i64>() as f64 / 10.0;
            assert!((got[i] - want).abs() <= 1e-6 * want.abs().max(1.0), "row {i}: {} vs {want}", got[i]);
        }
    }

    /// Several groups (the carried start state), with inf / NaN in
    /// segments and start windows, against the counted loop.
    #[test]
    fn groups_with_non_finite_match_counted() {
        let n = 5_000_000;
        let mut st = 0x2545_F491_4F6C_DD1Du64;
        let mut x: Vec<f64> = (0..n).map(|_| (xorshift(&mut st) >> 11) as f64 / (1u64 << 52) as f64 - 1.0).collect();
        for (i, v) in [(1_300_000, f64::NAN), (2_499_990, f64::INFINITY), (3_000_005, f64::NEG_INFINITY)] {
            x[i] = v;
        }
        for w in [16, 1000, 300_000] {
            let got = float_sums(&x, w, 1, usize::MAX);
            let mut want = vec![0.0; n];
            counted_block(&x, All, w, 0, n, Out::Scale(1.0), &mut want);
            for i in 0..n {
                let (a, b) = (got[i], want[i]);
                assert!(a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-9 * b.abs().max(1.0), "w {w} row {i}: {a} vs {b}");
            }
        }
    }
}

