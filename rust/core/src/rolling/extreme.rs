//! Rolling max / min / range: van Herk / Gil-Werman (the block kernel of
//! [`super::block`] with the combine a plain max) on the raw values.
//!
//! * Raw values, not keys, wherever that is exact: integers always; floats
//!   when the rows involved hold no NaN and no -0.0 (there float `>` is the
//!   key order; checked per chunk of about 4096 rows while it is in cache).
//!   Otherwise that chunk runs on the ordered keys of [`crate::ops::Num::key`] and
//!   converts back, so NaN is the largest value and -0.0 < +0.0 as
//!   everywhere else.
//! * The prefix scan of a block is written straight into the output; the
//!   suffix scan of the previous block runs backwards and combines into it
//!   in the same pass, so there is no temporary array and no branch per row
//!   (`if a > b { a } else { b }` is one `maxsd` / `cmov`).
//! * Nulls: filled with the bottom (-inf, MIN) for max and the top (NaN,
//!   MAX) for min, which never beat a real value, and the
//!   output is masked where the window has no non-null row (or fewer than
//!   `min_periods`).

use arrow_array::ArrayRef;

use super::{buffer, filled, validity, window_counts, FastNum};
use crate::engine::{Column, ToArrow};

/// max when `MAX`, else min, as a branch-free select.
#[inline(always)]
fn pick<V: PartialOrd + Copy, const MAX: bool>(a: V, b: V) -> V {
    if MAX {
        if a > b { a } else { b }
    } else if a < b {
        a
    } else {
        b
    }
}

/// One block `[start, end)` (`end - start <= window`, `start` a multiple of
/// `window`); `out[k]` is row `start + k`. `f` maps an input to the value
/// the comparison runs on (identity, or the key).
#[inline(always)]
fn van_herk<T: Copy, V: PartialOrd + Copy, const MAX: bool>(
    x: &[T],
    f: impl Fn(T) -> V,
    out: &mut [V],
    start: usize,
    end: usize,
    window: usize,
    id: V,
) {
    // Both scans take rows in fours: the running max of the four is off the
    // loop-carried chain, which then has one select (4 cycles of latency)
    // per four rows instead of per row; the other selects are independent
    // and run at two per cycle.
    let mut p = id;
    let mut oc = out.chunks_exact_mut(4);
    let mut xc = x[start..end].chunks_exact(4);
    for (o, v) in (&mut oc).zip(&mut xc) {
        let a = f(v[0]);
        let ab = pick::<V, MAX>(a, f(v[1]));
        let abc = pick::<V, MAX>(ab, f(v[2]));
        let abcd = pick::<V, MAX>(abc, f(v[3]));
        o[0] = pick::<V, MAX>(p, a);
        o[1] = pick::<V, MAX>(p, ab);
        o[2] = pick::<V, MAX>(p, abc);
        p = pick::<V, MAX>(p, abcd);
        o[3] = p;
    }
    for (o, &v) in oc.into_remainder().iter_mut().zip(xc.remainder()) {
        p = pick::<V, MAX>(p, f(v));
        *o = p;
    }
    if start == 0 {
        return;
    }
    // Row i = j + window - 1 takes the suffix from j to the end of the
    // previous block; rows past `end` (a short last block) only accumulate.
    let lo = start + 1 - window;
    let mid = (end + 1 - window).min(start);
    let mut s = id;
    for &v in x[mid..start].iter().rev() {
        s = pick::<V, MAX>(f(v), s);
    }
    let n = mid - lo;
    let mut oc = out[..n].rchunks_exact_mut(4);
    let mut xc = x[lo..mid].rchunks_exact(4);
    for (o, v) in (&mut oc).zip(&mut xc) {
        let d = f(v[3]);
        let cd = pick::<V, MAX>(f(v[2]), d);
        let bcd = pick::<V, MAX>(f(v[1]), cd);
        let abcd = pick::<V, MAX>(f(v[0]), bcd);
        o[3] = pick::<V, MAX>(pick::<V, MAX>(d, s), o[3]);
        o[2] = pick::<V, MAX>(pick::<V, MAX>(cd, s), o[2]);
        o[1] = pick::<V, MAX>(pick::<V, MAX>(bcd, s), o[1]);
        s = pick::<V, MAX>(abcd, s);
        o[0] = pick::<V, MAX>(s, o[0]);
    }
    for (o, &v) in oc.into_remainder().iter_mut().zip(xc.remainder()).rev() {
        s = pick::<V, MAX>(f(v), s);
        *o = pick::<V, MAX>(s, *o);
    }
}

/// Rolling max (`MAX`) or min of a plain slice, no nulls.
pub(super) fn extreme_values<T: FastNum, const MAX: bool>(x: &[T], window: usize) -> Vec<T> {
    let n = x.len();
    let mut out = buffer::<T>(n);
    let (id, id_key) = if MAX { (T::LOWEST, T::KEY_LOW) } else { (T::HIGHEST, T::KEY_HIGH) };
    // Chunks for the NaN / -0.0 check: whole blocks, about 4096 rows.
    let chunk = window * (4096 / window).max(1);
    let mut keys: Vec<T::Key> = Vec::new();
    let mut prev_special = false;
    let mut c0 = 0;
    while c0 < n {
        let c1 = (c0 + chunk).min(n);
        let special = T::has_special(&x[c0..c1]);
        let mut start = c0;
        while start < c1 {
            let end = (start + window).min(n);
            // A block reads itself and the block before it, which lies in
            // the previous chunk only for the first block of this one.
            if special || (start == c0 && prev_special) {
                keys.resize(end - start, id_key);
                van_herk::<T, T::Key, MAX>(x, T::key, &mut keys[..end - start], start, end, window, id_key);
                for (o, &k) in out[start..end].iter_mut().zip(&keys) {
                    *o = T::from_key(k);
                }
            } else {
                van_herk::<T, T, MAX>(x, |v| v, &mut out[start..end], start, end, window, id);
            }
            start = end;
        }
        prev_special = special;
        c0 = c1;
    }
    out
}

fn extreme_of<T: FastNum, const MAX: bool>(col: &Column<T>, window: usize) -> Vec<T> {
    match col.nulls {
        None => extreme_values::<T, MAX>(col.values, window),
        Some(_) => extreme_values::<T, MAX>(&filled(col, if MAX { T::LOWEST } else { T::TOP }), window),
    }
}

pub(super) fn rolling_extreme<T: FastNum, const MAX: bool>(col: &Column<T>, window: usize, min_periods: usize) -> ArrayRef {
    let counts = col.nulls.map(|nb| window_counts(nb, window));
    let out = extreme_of::<T, MAX>(col, window);
    let nulls = validity(col.len(), window, min_periods.max(1), counts.as_deref());
    T::to_arrow(out, nulls)
}

/// range = max - min, from the two kernels above.
pub(super) fn rolling_range<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize) -> ArrayRef {
    let counts = col.nulls.map(|nb| window_counts(nb, window));
    let hi = extreme_of::<T, true>(col, window);
    let lo = extreme_of::<T, false>(col, window);
    let out: Vec<T::Wide> = hi.iter().zip(&lo).map(|(&a, &b)| T::range(a, b)).collect();
    let nulls = validity(col.len(), window, min_periods.max(1), counts.as_deref());
    <T::Wide as ToArrow>::to_arrow(out, nulls)
}
