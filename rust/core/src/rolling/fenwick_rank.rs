//! Rolling rank over long windows with a Fenwick tree (binary indexed
//! tree; P. M. Fenwick, "A new data structure for cumulative frequency
//! tables", Software: Practice and Experience 24(3), 1994).
//!
//! The column's values are ranked once (one sort, equal keys one rank);
//! the tree counts the window's values per rank, so "values below / equal
//! to the row's own" are two prefix sums, O(log n) a row, whatever the
//! window (bottleneck's `move_rank` is O(w) a row).

use arrow_array::ArrayRef;
use arrow_buffer::NullBuffer;

use super::order_stat::{finish, rank_of};

/// Rolling `bottleneck.move_rank` of a column of keys; `need >= 1` values
/// make a row valid (and the row itself must be valid).
pub fn rolling_rank(keys: &[u64], nulls: Option<&NullBuffer>, window: usize, need: usize) -> ArrayRef {
    let n = keys.len();
    let ok = |i: usize| nulls.map_or(true, |nb| nb.is_valid(i));
    // dense rank (1-based) of every valid row's key
    let mut pairs: Vec<(u64, u32)> = (0..n).filter(|&i| ok(i)).map(|i| (keys[i], i as u32)).collect();
    pairs.sort_unstable();
    let mut rank = vec![0u32; n];
    let mut d = 0u32;
    let mut last = None;
    for &(k, i) in &pairs {
        if last != Some(k) {
            d += 1;
            last = Some(k);
        }
        rank[i as usize] = d;
    }
    drop(pairs);
    let size = d as usize;
    let mut tree = vec![0u32; size + 1];
    let add = |tree: &mut [u32], mut r: usize, v: u32| {
        while r <= size {
            tree[r] = tree[r].wrapping_add(v);
            r += r & r.wrapping_neg();
        }
    };
    let prefix = |tree: &[u32], mut r: usize| {
        let mut s = 0u32;
        while r > 0 {
            s = s.wrapping_add(tree[r]);
            r &= r - 1;
        }
        s as usize
    };
    let mut out = vec![0.0f64; n];
    let mut valid = vec![true; n];
    let mut count = 0usize;
    for i in 0..n {
        if i >= window && ok(i - window) {
            add(&mut tree, rank[i - window] as usize, u32::MAX);
            count -= 1;
        }
        if !ok(i) {
            valid[i] = false;
            continue;
        }
        let r = rank[i] as usize;
        add(&mut tree, r, 1);
        count += 1;
        if count < need {
            valid[i] = false;
            continue;
        }
        let less = prefix(&tree, r - 1);
        let upto = prefix(&tree, r);
        out[i] = rank_of(less, upto - less, count);
    }
    let all_valid = valid.iter().all(|&v| v);
    finish(out, (!all_valid).then_some(valid))
}
