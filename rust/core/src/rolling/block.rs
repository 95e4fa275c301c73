//! The generic `auto` kernel: TwoStacks' flip done block by block, which for
//! a whole column at slide 1 is van Herk / Gil-Werman (docs/DESIGN.md
//! "Performance notes"; SlideSide paper §2 for TwoStacks).
//!
//! Cut the rows into blocks of `window`. A window ending at row `i` of block
//! `b` is a suffix of block `b-1` followed by a prefix of block `b`, so
//! `out[i] = combine(suffix[i - window + 1], prefix[i])`, the older part on
//! the left (order matters for argmax/first/last). The prefix is a running
//! fold; the suffixes of the previous block are one backward scan. About
//! three combines per row, sequential memory, `window` partials of scratch.
//! Windows in block 0 are the partial windows at the start: prefixes alone.

use std::sync::Arc;

use arrow_array::{ArrayRef, ListArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::Field;

use super::{validity, window_counts, FastNum};
use crate::engine::{Column, OutBuilder, ToArrow};
use crate::monoid::AggOp;

pub(super) fn rolling_block<M>(col: &Column<M::In>, window: usize, min_periods: usize) -> ArrayRef
where
    M: AggOp,
    M::Out: ToArrow,
{
    let n = col.len();
    let mut out = OutBuilder::<M::Out>::with_capacity(n);
    let lift = |i: usize| col.lift::<M>(i, i as i64).unwrap_or_else(M::identity);
    // suffix[k] = fold of rows start-window+k .. start of the previous block
    // (k in 1..window; index 0 is never read).
    let mut suffix: Vec<M::Agg> = Vec::new();
    let mut valid_in_window = 0usize;
    let mut start = 0;
    while start < n {
        let end = (start + window).min(n);
        let mut prefix = M::identity();
        for i in start..end {
            M::combine_into(&mut prefix, &lift(i));
            if col.is_valid(i) {
                valid_in_window += 1;
            }
            if i >= window && col.is_valid(i - window) {
                valid_in_window -= 1;
            }
            let k = i - start + 1;
            let keep = min_periods == 0 || valid_in_window >= min_periods;
            out.push(if !keep {
                None
            } else if start > 0 && k < window {
                M::lower(&M::combine(&suffix[k], &prefix))
            } else {
                M::lower(&prefix)
            });
        }
        if end < n {
            // The block is full (only the last may be short): its suffixes
            // serve the next block.
            if suffix.is_empty() {
                suffix = vec![M::identity(); window];
            }
            let mut acc = M::identity();
            for k in (1..window).rev() {
                acc = M::combine(&lift(start + k), &acc);
                suffix[k] = acc.clone();
            }
        }
        start = end;
    }
    out.finish()
}

/// collect: each window's non-null values, oldest first. A block kernel
/// would hold O(window^2) values in its suffixes; copying each window
/// straight into the list's child buffer is O(window) per row, which the
/// output size needs anyway.
pub(super) fn rolling_collect<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize) -> ArrayRef {
    let n = col.len();
    let mut flat: Vec<T> = Vec::new();
    let mut lengths = Vec::with_capacity(n);
    let counts = col.nulls.map(|nb| window_counts(nb, window));
    match col.nulls {
        None => {
            flat.reserve(n.saturating_mul(window.min(n)).min(1 << 28));
            for i in 0..n {
                let lo = (i + 1).saturating_sub(window);
                flat.extend_from_slice(&col.values[lo..=i]);
                lengths.push(i + 1 - lo);
            }
        }
        Some(nb) => {
            // Positions of the non-null rows; a window is a run of them.
            let pos: Vec<usize> = nb.valid_indices().collect();
            let (mut a, mut b) = (0, 0);
            for i in 0..n {
                while b < pos.len() && pos[b] <= i {
                    b += 1;
                }
                while a < b && pos[a] + window <= i {
                    a += 1;
                }
                flat.extend(pos[a..b].iter().map(|&p| col.values[p]));
                lengths.push(b - a);
            }
        }
    }
    let nulls = validity(n, window, min_periods, counts.as_deref());
    let field = Arc::new(Field::new("item", T::data_type(), true));
    let child = T::to_arrow(flat, None);
    Arc::new(ListArray::new(field, OffsetBuffer::from_lengths(lengths), child, nulls))
}
