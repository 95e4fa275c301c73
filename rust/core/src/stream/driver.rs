//! Runs one group of queries (one [`WindowOp`] type) over a stream's
//! partitions: the whole stream, or one state per key. The spine
//! ([`super::Spine`]) owns the key index, the watermark and the late-row
//! decision; a driver gathers each partition's rows, pushes them with one
//! static call per (partition, batch), lets the watermark close windows, and
//! tags every window with its key.
//!
//! Keyed states are stored inline in one `Vec` (no `Box` per key) and share
//! their plan through one `Arc`; a new key's state is `proto.fresh()`, which
//! allocates nothing until it has rows (RA paper §5.4: one aggregator
//! instance per key).

use arrow_array::{Array, ArrayRef};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;

use crate::keys::{gather, gather_nulls, Partition};
use super::op::{new_emit, Clock, Emit, Rows, WindowOp};
use crate::codec::Codec;
use crate::engine::{Column, FromArrow, ToArrow};
use crate::{Error, Result};

/// One batch as a group sees it.
pub(crate) struct GroupBatch<'a> {
    pub values: &'a dyn Array,
    pub ts: Option<&'a [i64]>,
    pub args: Option<&'a [i64]>,
    /// The rows to aggregate (on time), grouped by key id, `perm` holding
    /// input row numbers. Unkeyed streams have one segment of key 0, or
    /// `None` when every row is taken in input order.
    pub part: Option<&'a Partition>,
    /// Key ids of every input row (keyed streams).
    pub ids: Option<&'a [u32]>,
    /// Input rows refused as late (kept by the group that keeps late rows).
    pub late: &'a [u32],
    /// Distinct keys so far (states to have).
    pub keys: usize,
    /// The watermark before this batch, and after it.
    pub wm_before: Option<i64>,
    pub wm_after: Option<i64>,
}

/// One query's windows: their key ids (empty for an unkeyed stream),
/// bounds and values.
#[derive(Debug)]
pub struct Windows {
    pub keys: Vec<u32>,
    pub start: Vec<i64>,
    pub end: Vec<i64>,
    pub values: ArrayRef,
}

/// Late rows handed back: key ids (keyed streams), times, values (the
/// input dtype, nulls kept), in arrival order.
pub struct LateRows {
    pub keys: Vec<u32>,
    pub ts: Vec<i64>,
    pub values: ArrayRef,
}

/// A group behind one virtual call per batch.
pub(crate) trait GroupOp: Send {
    /// The first row breaking a partition's order rule: (input row, its
    /// key id, its time, the time before it).
    fn check(&self, b: &GroupBatch<'_>) -> Result<Option<(usize, u32, i64, i64)>>;
    fn push(&mut self, b: &GroupBatch<'_>) -> Result<Vec<Windows>>;
    fn flush(&mut self) -> Vec<Windows>;
    fn take_late(&mut self) -> LateRows;
    fn save(&self, out: &mut Vec<u8>);
    fn restore(&mut self, keys: usize, inp: &mut &[u8]) -> Result<()>;
    fn out_type(&self) -> DataType;
}

pub(crate) struct Driver<K: WindowOp> {
    proto: K,
    states: Vec<K>,
    keyed: bool,
    /// Whether this group keeps the stream's late rows (the first group).
    keeps_late: bool,
    late_keys: Vec<u32>,
    late_ts: Vec<i64>,
    late_vals: Vec<Option<K::In>>,
}

impl<K: WindowOp> Driver<K> {
    pub fn new(proto: K, keyed: bool, keeps_late: bool) -> Result<Self> {
        let states = if keyed { Vec::new() } else { vec![proto.fresh()?] };
        Ok(Driver { proto, states, keyed, keeps_late, late_keys: Vec::new(), late_ts: Vec::new(), late_vals: Vec::new() })
    }

    fn grow(&mut self, keys: usize) -> Result<()> {
        while self.keyed && self.states.len() < keys {
            let s = self.proto.fresh()?;
            self.states.push(s);
        }
        Ok(())
    }

    fn finish(em: Vec<Emit<K::Out>>, key_ids: Vec<Vec<u32>>) -> Vec<Windows> {
        em.into_iter()
            .zip(key_ids)
            .map(|((b, start, end), keys)| Windows { keys, start, end, values: b.finish() })
            .collect()
    }
}

/// Segments ahead whose key state is prefetched: many keys' states do not
/// fit in cache, and a batch visits them in data order, which the hardware
/// prefetcher cannot guess.
const PREFETCH_AHEAD: usize = 4;

/// Hint the CPU to load `x` into cache (no effect on results).
#[inline(always)]
fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = (x as *const T).cast::<i8>();
        for off in (0..std::mem::size_of::<T>()).step_by(64) {
            // SAFETY: prefetch never faults; `off` stays within `*x`.
            #[allow(unused_unsafe)]
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(p.add(off))
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Give the windows appended since the last call the key `id`.
#[inline]
fn tag<O: ToArrow>(em: &[Emit<O>], key_ids: &mut [Vec<u32>], id: u32) {
    for (q, e) in em.iter().enumerate() {
        let n = e.1.len();
        if n > key_ids[q].len() {
            key_ids[q].resize(n, id);
        }
    }
}

/// A batch's rows gathered in partition order.
struct Gathered<T> {
    vals: Vec<T>,
    nulls: Option<NullBuffer>,
    ts: Option<Vec<i64>>,
    args: Option<Vec<i64>>,
}

fn gathered<T: Copy>(col: &Column<'_, T>, b: &GroupBatch<'_>, part: &Partition) -> Gathered<T> {
    Gathered {
        vals: gather(col.values, &part.perm),
        nulls: gather_nulls(col.nulls, &part.perm, 1),
        ts: b.ts.map(|t| gather(t, &part.perm)),
        args: b.args.map(|a| gather(a, &part.perm)),
    }
}

impl<T: Copy> Gathered<T> {
    fn rows<'s>(&'s self, lo: usize, hi: usize, nb: &'s Option<NullBuffer>) -> Rows<'s, T> {
        Rows {
            col: Column { values: &self.vals[lo..hi], nulls: nb.as_ref() },
            ts: self.ts.as_deref().map(|t| &t[lo..hi]),
            args: self.args.as_deref().map(|a| &a[lo..hi]),
        }
    }
}

fn seg_nulls(g_nulls: &Option<NullBuffer>, lo: usize, hi: usize) -> Option<NullBuffer> {
    g_nulls.as_ref().map(|nb| nb.slice(lo, hi - lo))
}

impl<K: WindowOp> GroupOp for Driver<K> {
    fn check(&self, b: &GroupBatch<'_>) -> Result<Option<(usize, u32, i64, i64)>> {
        if !K::TIMED {
            return Ok(None);
        }
        let Some(ts) = b.ts else { return Ok(None) };
        let mut worst: Option<(usize, u32, i64, i64)> = None;
        let mut see = |row: usize, key: u32, t: i64, prev: i64| {
            if worst.is_none_or(|w| row < w.0) {
                worst = Some((row, key, t, prev));
            }
        };
        match b.part {
            None => {
                if let Some((i, prev)) = self.states[0].check(ts) {
                    see(i, 0, ts[i], prev);
                }
            }
            Some(part) => {
                // Only the times are needed here; push gathers the rest.
                let tsg = gather(ts, &part.perm);
                // A key new in this batch has no rows before (allocates nothing).
                let probe = self.proto.fresh()?;
                for s in 0..part.seg_key.len() {
                    let (lo, hi) = (part.bounds[s], part.bounds[s + 1]);
                    let key = part.seg_key[s];
                    let st = self.states.get(key as usize).unwrap_or(&probe);
                    if let Some((j, prev)) = st.check(&tsg[lo..hi]) {
                        see(part.perm[lo + j] as usize, key, tsg[lo + j], prev);
                    }
                }
            }
        }
        Ok(worst)
    }

    fn push(&mut self, b: &GroupBatch<'_>) -> Result<Vec<Windows>> {
        self.grow(b.keys)?;
        let col = <K::In as FromArrow>::column(b.values)?;
        if self.keeps_late && !b.late.is_empty() {
            for &i in b.late {
                self.late_keys.push(b.ids.map_or(0, |ids| ids[i as usize]));
                self.late_ts.push(b.ts.map_or(0, |t| t[i as usize]));
                self.late_vals.push(col.is_valid(i as usize).then(|| col.values[i as usize]));
            }
        }
        let clock = Clock { before: b.wm_before, after: b.wm_after };
        let queries = self.proto.queries();
        let mut em = new_emit::<K::Out>(queries);
        let mut key_ids = vec![Vec::new(); queries];
        match b.part {
            None => {
                let rows = Rows { col, ts: b.ts, args: b.args };
                self.states[0].push(&rows, clock, &mut em)?;
            }
            Some(part) => {
                let g = gathered(&col, b, part);
                for s in 0..part.seg_key.len() {
                    let key = part.seg_key[s];
                    if let Some(&ahead) = part.seg_key.get(s + PREFETCH_AHEAD) {
                        prefetch(&self.states[ahead as usize]);
                    }
                    let (lo, hi) = (part.bounds[s], part.bounds[s + 1]);
                    let nb = seg_nulls(&g.nulls, lo, hi);
                    self.states[key as usize].push(&g.rows(lo, hi, &nb), clock, &mut em)?;
                    tag(&em, &mut key_ids, key);
                }
            }
        }
        if K::WATERMARKED {
            if let Some(wm) = b.wm_after {
                for (id, st) in self.states.iter_mut().enumerate() {
                    st.advance(wm, &mut em);
                    tag(&em, &mut key_ids, id as u32);
                }
            }
        }
        if !self.keyed {
            key_ids.iter_mut().for_each(Vec::clear);
        }
        Ok(Self::finish(em, key_ids))
    }

    fn flush(&mut self) -> Vec<Windows> {
        let queries = self.proto.queries();
        let mut em = new_emit::<K::Out>(queries);
        let mut key_ids = vec![Vec::new(); queries];
        for (id, st) in self.states.iter_mut().enumerate() {
            st.flush(&mut em);
            tag(&em, &mut key_ids, id as u32);
        }
        if !self.keyed {
            key_ids.iter_mut().for_each(Vec::clear);
        }
        Self::finish(em, key_ids)
    }

    fn take_late(&mut self) -> LateRows {
        let vals = std::mem::take(&mut self.late_vals);
        let nulls = NullBuffer::from(vals.iter().map(|v| v.is_some()).collect::<Vec<bool>>());
        let values = K::In::to_arrow(vals.into_iter().map(|v| v.unwrap_or_else(K::In::null_value)).collect(), Some(nulls));
        LateRows { keys: std::mem::take(&mut self.late_keys), ts: std::mem::take(&mut self.late_ts), values }
    }

    fn save(&self, out: &mut Vec<u8>) {
        if self.keeps_late {
            self.late_keys.encode(out);
            self.late_ts.encode(out);
            self.late_vals.encode(out);
        }
        if self.keyed {
            self.states.len().encode(out);
        }
        for s in &self.states {
            s.save(out);
        }
    }

    fn restore(&mut self, keys: usize, inp: &mut &[u8]) -> Result<()> {
        if self.keeps_late {
            self.late_keys = Vec::decode(inp)?;
            self.late_ts = Vec::decode(inp)?;
            self.late_vals = Vec::decode(inp)?;
            if self.late_ts.len() != self.late_vals.len() || self.late_keys.len() != self.late_ts.len() {
                return Err(Error::Corrupt("late rows do not match".into()));
            }
        }
        let n = if self.keyed { usize::decode(inp)? } else { 1 };
        // A refused batch may have named keys that got no state yet.
        if self.keyed && n > keys {
            return Err(Error::Corrupt("more key states than keys".into()));
        }
        self.states.clear();
        for _ in 0..n {
            let mut s = self.proto.fresh()?;
            s.restore(inp)?;
            self.states.push(s);
        }
        self.grow(keys)
    }

    fn out_type(&self) -> DataType {
        K::Out::data_type()
    }
}
