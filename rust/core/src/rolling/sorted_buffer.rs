//! Sorted buffer: the window's values kept as a sorted array of keys
//! (`order::key`), a row's arrival and the eviction of the row `w` back
//! done as one binary search each and one `memmove` of the keys between
//! them. O(w) per row but a few cache lines for short windows, where it
//! beats every O(log w) structure (polars' `rolling_median` and pandas'
//! small-window path use the same idea).
//!
//! [`SortedWindow`] is the push / evict / query structure: a count-window
//! stream holds one and pushes / evicts the values its FIFO says.

use arrow_array::ArrayRef;
use arrow_buffer::NullBuffer;

use super::order_stat::{finish, key, quantile_of, rank_of, unkey, Interpolation, OrderStat};

/// Windows up to this many values replace by walking instead of memmove.
const SHIFT_MAX: usize = 48;

/// A multiset of doubles in Spark's order (NaN largest) with order-statistic
/// queries.
#[derive(Clone, Debug, Default)]
pub struct SortedWindow {
    keys: Vec<u64>,
}

impl SortedWindow {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(cap: usize) -> Self {
        SortedWindow { keys: Vec::with_capacity(cap) }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn clear(&mut self) {
        self.keys.clear();
    }

    /// Add a value.
    pub fn push(&mut self, x: f64) {
        self.push_key(key(x));
    }

    /// Remove one copy of `x`; false (and nothing removed) if absent.
    pub fn evict(&mut self, x: f64) -> bool {
        self.evict_key(key(x))
    }

    /// Remove one `old` and add `new` with a single shift of the keys
    /// between them; false (and nothing changed) if `old` is absent.
    pub fn replace(&mut self, old: f64, new: f64) -> bool {
        self.replace_key(key(old), key(new))
    }

    /// The `k`-th smallest (0-based), `k < len`.
    pub fn kth(&self, k: usize) -> f64 {
        unkey(self.keys[k])
    }

    /// Values below `x`, and equal to it.
    pub fn less_equal(&self, x: f64) -> (usize, usize) {
        self.less_equal_key(key(x))
    }

    /// Quantile `q` (pandas' interpolations); `None` when empty.
    pub fn quantile(&self, q: f64, interp: Interpolation) -> Option<f64> {
        (!self.is_empty()).then(|| quantile_of(self.len(), q, interp, |k| self.kth(k)))
    }

    /// `bottleneck.move_rank` of `x` (a value in the window); `None` when
    /// empty.
    pub fn rank(&self, x: f64) -> Option<f64> {
        if self.is_empty() {
            return None;
        }
        let (less, equal) = self.less_equal(x);
        Some(rank_of(less, equal.max(1), self.len()))
    }

    /// The answer of `stat` for a window whose newest row holds `last`
    /// (rank reads it; `None` there: null).
    pub fn answer(&self, stat: OrderStat, last: Option<f64>) -> Option<f64> {
        match stat.quantile() {
            Some((q, i)) => self.quantile(q, i),
            None => self.rank(last?),
        }
    }

    #[inline(always)]
    fn lower_bound(&self, k: u64) -> usize {
        self.keys.partition_point(|&x| x < k)
    }

    #[inline(always)]
    pub(crate) fn push_key(&mut self, k: u64) {
        let j = self.lower_bound(k);
        self.keys.insert(j, k);
    }

    #[inline(always)]
    pub(crate) fn evict_key(&mut self, k: u64) -> bool {
        let i = self.lower_bound(k);
        if i < self.keys.len() && self.keys[i] == k {
            self.keys.remove(i);
            true
        } else {
            false
        }
    }

    #[inline(always)]
    pub(crate) fn replace_key(&mut self, old: u64, new: u64) -> bool {
        let i = self.lower_bound(old);
        if i >= self.keys.len() || self.keys[i] != old {
            return false;
        }
        if self.keys.len() <= SHIFT_MAX {
            // Short window: walk `new` from `old`'s slot to its place, one
            // compare and move a step (insertion sort's inner loop); no
            // second search, no memmove call.
            let keys = &mut self.keys[..];
            let mut j = i;
            if new > old {
                while j + 1 < keys.len() && keys[j + 1] < new {
                    keys[j] = keys[j + 1];
                    j += 1;
                }
            } else {
                while j > 0 && keys[j - 1] > new {
                    keys[j] = keys[j - 1];
                    j -= 1;
                }
            }
            keys[j] = new;
            return true;
        }
        let j = self.lower_bound(new);
        if j <= i {
            // new <= old: keys [j, i) move up one, new lands at j
            self.keys.copy_within(j..i, j + 1);
            self.keys[j] = new;
        } else {
            // new > old: keys (i, j) move down one, new lands at j - 1
            self.keys.copy_within(i + 1..j, i);
            self.keys[j - 1] = new;
        }
        true
    }

    #[inline(always)]
    pub(crate) fn less_equal_key(&self, k: u64) -> (usize, usize) {
        let lo = self.lower_bound(k);
        let hi = lo + self.keys[lo..].partition_point(|&x| x <= k);
        (lo, hi - lo)
    }

    #[inline(always)]
    pub(crate) fn kth_key(&self, k: usize) -> u64 {
        self.keys[k]
    }
}

/// The per-row loop over a column of keys; `need >= 1` values make a row
/// valid.
pub fn rolling(keys: &[u64], nulls: Option<&NullBuffer>, window: usize, need: usize, stat: OrderStat) -> ArrayRef {
    let n = keys.len();
    let mut win = SortedWindow::with_capacity(window + 1);
    let mut out = vec![0.0f64; n];
    let mut valid = vec![true; n];
    let ok = |i: usize| nulls.map_or(true, |nb| nb.is_valid(i));
    for i in 0..n {
        let (add, drop) = (ok(i), i >= window && ok(i - window));
        match (drop, add) {
            (true, true) => {
                win.replace_key(keys[i - window], keys[i]);
            }
            (true, false) => {
                win.evict_key(keys[i - window]);
            }
            (false, true) => win.push_key(keys[i]),
            (false, false) => {}
        }
        let c = win.len();
        if c < need {
            valid[i] = false;
            continue;
        }
        out[i] = match stat.quantile() {
            Some((q, interp)) => quantile_of(c, q, interp, |k| unkey(win.kth_key(k))),
            None => {
                if !add {
                    valid[i] = false;
                    continue;
                }
                let (less, equal) = win.less_equal_key(keys[i]);
                rank_of(less, equal, c)
            }
        };
    }
    let all_valid = valid.iter().all(|&v| v);
    finish(out, (!all_valid).then_some(valid))
}

/// [`rolling`] over windows of any length: row `i` reads rows
/// `[starts[i], i]`, `starts` non-decreasing (time windows). Each row is
/// pushed once and evicted once, so O(w) a row as above.
pub fn rolling_bounds(keys: &[u64], nulls: Option<&NullBuffer>, starts: &[usize], need: usize, stat: OrderStat) -> ArrayRef {
    let n = keys.len();
    let mut win = SortedWindow::new();
    let mut out = vec![0.0f64; n];
    let mut valid = vec![true; n];
    let ok = |i: usize| nulls.map_or(true, |nb| nb.is_valid(i));
    let mut lo = 0;
    for i in 0..n {
        if ok(i) {
            win.push_key(keys[i]);
        }
        while lo < starts[i] {
            if ok(lo) {
                win.evict_key(keys[lo]);
            }
            lo += 1;
        }
        let c = win.len();
        let last = ok(i).then(|| unkey(keys[i]));
        match (c >= need).then(|| win.answer(stat, last)).flatten() {
            Some(v) => out[i] = v,
            None => valid[i] = false,
        }
    }
    let all_valid = valid.iter().all(|&v| v);
    finish(out, (!all_valid).then_some(valid))
}
