//! Every checkpoint format of a stream, in one place (docs/DESIGN.md §4).
//!
//! What is saved is the window state, never an algorithm's internal layout
//! (a FIFO aggregator contributes its partials, oldest first). The bytes
//! carry no spec: the reader is built from the same [`StreamSpec`].
//!
//! Format 42 (today): as 41, with the partials of the wide dtype
//! (`DType::wide`: a stream of int32 / float32 values computes in int64 /
//! float64). For int64 / float64 streams the two formats are the same bytes.
//!
//! Format 41: the tag byte, then `flushed`, the largest event time
//! seen (`Option<i64>`, the watermark's basis), the counts
//! (rows in, on time, late), the key index (keyed streams), then each
//! group's driver state in group order: the first group of an out-of-order
//! stream starts with the late rows not yet taken (key ids, times, values),
//! then a keyed driver writes its number of states, then each state.
//!
//! The key index: a type byte (0 int32, 1 int64, 2 string, 3 large_string,
//! 255 no key yet, followed by a u64 0), then the int keys as `Vec<i64>`, or
//! a u64 count and per key its UTF-8 bytes (u64 length first). A keyed
//! stream saves a state for each key the index holds, except keys a refused
//! batch named (they get a state on restore). Each operator's state:
//!
//! | operator | state |
//! | --- | --- |
//! | count windows | `pos` u64 (rows seen), `period_start` u64, `edge_i`, `flushed`, open partial, its non-null count u64, `total` u64, `cum_base` u64, `cum: Vec<u64>` (cumulative non-null counts per partial; empty unless a query has `min_periods`), partials `Vec<Agg>` |
//! | time windows, in order | `period_start` i64, `edge_i`, `last_ts: Option<i64>`, `flushed`, open partial, its (rows, non-null) counts, `total` (u64, u64), `base` (u64, u64), `cum: Vec<(u64, u64)>`, partials `Vec<Agg>` |
//! | time windows, out of order | the slice store (count, then per slice: id i64, (rows, non-null), aggregate, order-sensitive items `Vec<(i64, Agg)>`), each query's next window `Vec<Option<i64>>` (restore re-positions each query's aggregator from the store) |
//! | sessions | `last_ts: Option<i64>`, then per query the open sessions (count; per session (start, last row time), (rows, non-null), aggregate, items) |
//!
//! Older formats still read, for int64 / float64 streams (an int32 /
//! float32 stream saved before format 42 holds narrow partials and is
//! refused with an error saying so): 1 (count windows) and 17 (in-order time
//! windows) are each group's one state; 33 (keyed) is per group a key index,
//! a number of states and the states. Format 23 (out-of-order windows
//! before the watermark moved per batch) is refused: its late rows were
//! judged by another rule, so restoring it would mix the two.

use super::{Spine, StreamSpec};
use crate::codec::Codec;
use crate::keys::KeyIndex;
use crate::{Error, Result};

pub const COUNT_V1: u8 = 1;
pub const TIME_V1: u8 = 17;
pub const LATE_V1: u8 = 23;
pub const KEYED_V1: u8 = 33;
pub const STREAM_V1: u8 = 41;
pub const STREAM: u8 = 42;

pub(crate) fn save(s: &Spine) -> Vec<u8> {
    let mut out = vec![STREAM];
    s.flushed.encode(&mut out);
    s.max_ts.encode(&mut out);
    (s.counts.rows_in, (s.counts.on_time, s.counts.late)).encode(&mut out);
    if s.spec.keyed {
        s.index.save(&mut out);
    }
    for g in &s.groups {
        g.op.save(&mut out);
    }
    out
}

fn corrupt(what: &str) -> Error {
    Error::Corrupt(what.into())
}

pub(crate) fn restore(s: &mut Spine, bytes: &[u8]) -> Result<()> {
    let (&tag, mut inp) = bytes.split_first().ok_or_else(|| corrupt("empty checkpoint"))?;
    let inp = &mut inp;
    let spec: &StreamSpec = &s.spec;
    if tag != STREAM && spec.dtype != spec.dtype.wide() {
        return Err(Error::Invalid(format!(
            "this checkpoint of a {} stream was written by an older slidewise (format {tag}), whose {} state this \
             version cannot read; restore it with that version and flush it",
            spec.dtype.name(),
            spec.dtype.name()
        )));
    }
    match tag {
        STREAM | STREAM_V1 => {
            s.flushed = bool::decode(inp)?;
            s.max_ts = Option::<i64>::decode(inp)?;
            let c = <(u64, (u64, u64))>::decode(inp)?;
            s.counts = super::Counts { rows_in: c.0, on_time: c.1 .0, late: c.1 .1 };
            if s.counts.rows_in != s.counts.on_time + s.counts.late {
                return Err(corrupt("row counts do not add up"));
            }
            if spec.keyed {
                s.index = KeyIndex::load(inp)?;
            }
            let keys = s.index.len();
            for g in &mut s.groups {
                g.op.restore(keys, inp)?;
            }
        }
        COUNT_V1 | TIME_V1 if !spec.keyed && spec.lateness.is_none() => {
            let want = if spec.timed() { TIME_V1 } else { COUNT_V1 };
            if tag != want {
                return Err(corrupt("checkpoint of another window kind"));
            }
            for g in &mut s.groups {
                g.op.restore(1, inp)?;
            }
        }
        KEYED_V1 if spec.keyed && spec.lateness.is_none() => {
            for (i, g) in s.groups.iter_mut().enumerate() {
                let index = KeyIndex::load(inp)?;
                if i == 0 {
                    s.index = index;
                }
                let keys = s.index.len();
                g.op.restore(keys, inp)?;
            }
        }
        LATE_V1 => {
            return Err(Error::Corrupt(
                "this out-of-order stream was saved by an older slidewise whose watermark moved row by row; \
                 it cannot be restored under today's per-batch watermark: replay its input into a new stream"
                    .into(),
            ))
        }
        t => return Err(Error::Corrupt(format!("unknown or mismatched checkpoint format {t}"))),
    }
    if !inp.is_empty() {
        return Err(corrupt("trailing bytes"));
    }
    Ok(())
}
