//! Keyed streams and keyed rolling: a key column partitions the stream and
//! every key has its own window state (RA paper §5.4: "a separate instance
//! of FlatFAT for each active unique key").
//!
//! * [`KeyIndex`] keeps key identity across batches: key value -> a compact
//!   id, ids given in order of first appearance in the stream.
//! * Per batch, the rows are stably partitioned by key in one counting-sort
//!   pass ([`partition`]); each key's values (and times / arguments) are
//!   gathered into one contiguous segment and pushed to that key's state
//!   once: one static call per (key, batch), no virtual call per row.
//! * [`Keyed`] is generic over the per-key operator ([`KeyOp`]); count
//!   windows ([`SharedWindow`]) and time windows ([`TimeWindow`]) implement
//!   it, and any operator with the same push / flush / save shape can.
//!   States are stored inline in one `Vec` (no `Box` per key) and share the
//!   plan and specs through one `Arc`; a key's state allocates nothing until
//!   it has rows, then room for its window's partials (exactly, for small
//!   windows: [`crate::fifo::New::lazy`]), so memory follows the live
//!   state, not a fixed capacity per key.
//!
//! Output order (documented for users): within one push (or flush), result
//! rows are grouped by key, keys in order of their first row in that batch
//! (flush: of their first row in the stream), and each key's windows in the
//! order they closed. Sorted by (key, window start), the results do not
//! depend on how the stream was cut into batches.
//!
//! Null keys are refused with an error naming the first such row: every row
//! belongs to exactly one key, so none is silently dropped.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, GenericStringArray, LargeStringArray, OffsetSizeTrait, PrimitiveArray, StringArray, UInt32Array,
};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, ScalarBuffer};
use arrow_schema::DataType;

use crate::codec::Codec;
use crate::engine::{AggKind, Column, DType, FromArrow, ToArrow};
use crate::fifo::{Algorithm, AnyFifo, FifoAggregator, Renew};
use crate::monoid::AggOp;
use crate::plan::Slicing;
use crate::time_window::{TimePlan, TimeSpec, TimeWindow};
use crate::window::{new_emit, CountPlan, CountSpec, Emit, SharedWindow, SharedWindowOp, WindowBatch};
use crate::{invalid, Error, Result};

// ---------------------------------------------------------------------------
// Key identity

/// FxHash (rustc's): one multiply per word. Keys are user data but a
/// collision attack only slows one stream down.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 56));
        }
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(FX_SEED);
    }
    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64)
    }
    #[inline]
    fn finish(&self) -> u64 {
        // Spread the high bits down: hashbrown takes control bits from the top
        // and buckets from the bottom.
        self.0 ^ (self.0 >> 29)
    }
}

type FxBuild = BuildHasherDefault<FxHasher>;

/// The key column types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyType {
    I32,
    I64,
    Str,
    LargeStr,
}

impl KeyType {
    pub fn of(dt: &DataType) -> Result<KeyType> {
        Ok(match dt {
            DataType::Int32 => KeyType::I32,
            DataType::Int64 => KeyType::I64,
            DataType::Utf8 => KeyType::Str,
            DataType::LargeUtf8 => KeyType::LargeStr,
            other => {
                return Err(Error::Type(format!(
                    "unsupported key dtype {other}; keys must be int32, int64 or string columns \
                     (cast other types, or decode dictionary columns, first)"
                )))
            }
        })
    }
    fn is_int(self) -> bool {
        matches!(self, KeyType::I32 | KeyType::I64)
    }
    fn tag(self) -> u8 {
        self as u8
    }
    fn from_tag(t: u8) -> Result<KeyType> {
        Ok(match t {
            0 => KeyType::I32,
            1 => KeyType::I64,
            2 => KeyType::Str,
            3 => KeyType::LargeStr,
            _ => return Err(Error::Corrupt("unknown key type".into())),
        })
    }
}

/// Key value -> compact id (`0..len`, in order of first appearance), and
/// back. The key type is fixed by the first batch (int32 and int64 mix, and
/// so do string and large_string; the first batch's type is the output's).
#[derive(Default)]
pub struct KeyIndex {
    ty: Option<KeyType>,
    ints: HashMap<i64, u32, FxBuild>,
    int_keys: Vec<i64>,
    strs: HashMap<Arc<str>, u32, FxBuild>,
    str_keys: Vec<Arc<str>>,
}

fn null_key_error(nulls: &NullBuffer) -> Result<()> {
    if nulls.null_count() > 0 {
        let i = (0..nulls.len()).find(|&i| nulls.is_null(i)).unwrap_or(0);
        return invalid!(
            "key of row {i} is null; every row needs a key (fill null keys with a value of their own, \
             or drop those rows, first)"
        );
    }
    Ok(())
}

impl KeyIndex {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.int_keys.len() + self.str_keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn key_type(&self) -> Option<KeyType> {
        self.ty
    }

    /// The id of every row's key, adding new keys. Fails (changing nothing)
    /// on a null key or a key column of another type.
    pub fn ids(&mut self, keys: &dyn Array) -> Result<Vec<u32>> {
        let ty = KeyType::of(keys.data_type())?;
        if let Some(have) = self.ty {
            if have.is_int() != ty.is_int() {
                return Err(Error::Type(format!(
                    "key column changed type: this stream's keys are {}, this batch's are {}",
                    if have.is_int() { "integers" } else { "strings" },
                    keys.data_type()
                )));
            }
        }
        if let Some(n) = keys.logical_nulls() {
            null_key_error(&n)?;
        }
        if keys.is_empty() {
            return Ok(Vec::new()); // an empty batch does not fix the key type
        }
        self.ty.get_or_insert(ty);
        Ok(match keys.data_type() {
            DataType::Int32 => {
                let a = keys.as_any().downcast_ref::<PrimitiveArray<Int32Type>>().unwrap();
                a.values().iter().map(|&k| self.int_id(k as i64)).collect()
            }
            DataType::Int64 => {
                let a = keys.as_any().downcast_ref::<PrimitiveArray<Int64Type>>().unwrap();
                a.values().iter().map(|&k| self.int_id(k)).collect()
            }
            DataType::Utf8 => self.str_ids(keys.as_any().downcast_ref::<StringArray>().unwrap()),
            DataType::LargeUtf8 => self.str_ids(keys.as_any().downcast_ref::<LargeStringArray>().unwrap()),
            _ => unreachable!("checked by KeyType::of"),
        })
    }

    #[inline]
    fn int_id(&mut self, k: i64) -> u32 {
        let next = self.int_keys.len() as u32;
        let id = *self.ints.entry(k).or_insert(next);
        if id == next {
            self.int_keys.push(k);
        }
        id
    }

    fn str_ids<O: OffsetSizeTrait>(&mut self, a: &GenericStringArray<O>) -> Vec<u32> {
        (0..a.len())
            .map(|i| {
                let k = a.value(i);
                match self.strs.get(k) {
                    Some(&id) => id,
                    None => {
                        let id = self.str_keys.len() as u32;
                        let k: Arc<str> = Arc::from(k);
                        self.strs.insert(Arc::clone(&k), id);
                        self.str_keys.push(k);
                        id
                    }
                }
            })
            .collect()
    }

    /// The key column of rows whose key ids are `ids`.
    pub fn take(&self, ids: &[u32]) -> ArrayRef {
        match self.ty.unwrap_or(KeyType::I64) {
            KeyType::I32 => Arc::new(PrimitiveArray::<Int32Type>::new(
                ids.iter().map(|&i| self.int_keys[i as usize] as i32).collect::<Vec<_>>().into(),
                None,
            )),
            KeyType::I64 => Arc::new(PrimitiveArray::<Int64Type>::new(
                ids.iter().map(|&i| self.int_keys[i as usize]).collect::<Vec<_>>().into(),
                None,
            )),
            KeyType::Str => Arc::new(ids.iter().map(|&i| Some(&*self.str_keys[i as usize])).collect::<StringArray>()),
            KeyType::LargeStr => {
                Arc::new(ids.iter().map(|&i| Some(&*self.str_keys[i as usize])).collect::<LargeStringArray>())
            }
        }
    }

    /// Key `id` as text, for error messages.
    pub fn describe(&self, id: u32) -> String {
        match self.ty {
            Some(t) if t.is_int() => self.int_keys[id as usize].to_string(),
            _ => format!("{:?}", &*self.str_keys[id as usize]),
        }
    }

    fn save(&self, out: &mut Vec<u8>) {
        match self.ty {
            None => {
                out.push(255);
                0usize.encode(out);
                return;
            }
            Some(t) => out.push(t.tag()),
        }
        if self.ty.is_some_and(|t| t.is_int()) {
            self.int_keys.encode(out);
        } else {
            self.str_keys.len().encode(out);
            for k in &self.str_keys {
                k.len().encode(out);
                out.extend_from_slice(k.as_bytes());
            }
        }
    }

    fn load(inp: &mut &[u8]) -> Result<KeyIndex> {
        let mut ix = KeyIndex::new();
        let tag = u8_decode(inp)?;
        if tag == 255 {
            usize::decode(inp)?;
            return Ok(ix);
        }
        let ty = KeyType::from_tag(tag)?;
        ix.ty = Some(ty);
        if ty.is_int() {
            for k in Vec::<i64>::decode(inp)? {
                ix.int_id(k);
            }
        } else {
            let n = usize::decode(inp)?;
            for _ in 0..n {
                let len = usize::decode(inp)?;
                if inp.len() < len {
                    return Err(Error::Corrupt("truncated checkpoint".into()));
                }
                let (b, rest) = inp.split_at(len);
                *inp = rest;
                let s = std::str::from_utf8(b).map_err(|_| Error::Corrupt("key is not UTF-8".into()))?;
                let id = ix.str_keys.len() as u32;
                let k: Arc<str> = Arc::from(s);
                ix.strs.insert(Arc::clone(&k), id);
                ix.str_keys.push(k);
            }
        }
        Ok(ix)
    }
}

fn u8_decode(inp: &mut &[u8]) -> Result<u8> {
    match inp.split_first() {
        Some((&b, rest)) => {
            *inp = rest;
            Ok(b)
        }
        None => Err(Error::Corrupt("truncated checkpoint".into())),
    }
}

// ---------------------------------------------------------------------------
// Stable partition by key

/// Rows of one batch grouped by key: `perm[bounds[s]..bounds[s+1]]` are the
/// rows (in input order) of the key with id `seg_key[s]`; segments are in
/// order of each key's first row in the batch.
pub struct Partition {
    pub perm: Vec<u32>,
    pub bounds: Vec<usize>,
    pub seg_key: Vec<u32>,
}

/// Counting sort of the row indices by key id: one pass to number the keys
/// of the batch, one to count, one to place. `slot` is scratch indexed by
/// key id (zero on entry and on return), so a batch costs O(rows + its
/// distinct keys), never O(all keys).
pub fn partition(ids: &[u32], slot: &mut Vec<u32>) -> Partition {
    let max = ids.iter().copied().max().map_or(0, |m| m as usize + 1);
    if slot.len() < max {
        slot.resize(max, 0);
    }
    let mut seg_key = Vec::new();
    let mut local = Vec::with_capacity(ids.len());
    let mut counts: Vec<usize> = Vec::new();
    for &g in ids {
        let s = &mut slot[g as usize];
        if *s == 0 {
            seg_key.push(g);
            counts.push(0);
            *s = seg_key.len() as u32;
        }
        let l = *s - 1;
        counts[l as usize] += 1;
        local.push(l);
    }
    let mut bounds = Vec::with_capacity(counts.len() + 1);
    let mut acc = 0;
    bounds.push(0);
    for c in &mut counts {
        acc += *c;
        bounds.push(acc);
        *c = acc - *c; // next free position of the segment
    }
    let mut perm = vec![0u32; ids.len()];
    for (i, &l) in local.iter().enumerate() {
        let at = &mut counts[l as usize];
        perm[*at] = i as u32;
        *at += 1;
    }
    for &g in &seg_key {
        slot[g as usize] = 0;
    }
    Partition { perm, bounds, seg_key }
}

pub(crate) fn gather<T: Copy>(xs: &[T], perm: &[u32]) -> Vec<T> {
    perm.iter().map(|&i| xs[i as usize]).collect()
}

pub(crate) fn gather_nulls(nulls: Option<&NullBuffer>, perm: &[u32]) -> Option<NullBuffer> {
    let n = nulls?;
    let mut b = BooleanBufferBuilder::new(perm.len());
    for &i in perm {
        b.append(n.is_valid(i as usize));
    }
    Some(NullBuffer::new(b.finish())).filter(|n| n.null_count() > 0)
}

// ---------------------------------------------------------------------------
// The per-key operator

/// One key's rows of a batch, gathered contiguous.
pub struct Rows<'a, T> {
    pub col: Column<'a, T>,
    /// Event times (time windows), non-null.
    pub ts: Option<&'a [i64]>,
    /// Argument column of argmax / argmin, as i64.
    pub args: Option<&'a [i64]>,
}

/// The state of one key. `Keyed` holds one per key, inline.
pub trait KeyOp: Send + Sized {
    type In: FromArrow + Copy + Send;
    type Out: ToArrow;
    /// Whether rows carry event times.
    const TIMED: bool;
    /// Number of queries (one [`Emit`] each).
    fn queries(&self) -> usize;
    /// An empty state of the same queries (sharing the plan).
    fn fresh(&self) -> Result<Self>;
    /// Where this key's rows break its order rule: the index (within
    /// `rows`) of the first offending row and the time it came after.
    /// Checked for every key before any key is pushed, so a refused batch
    /// changes nothing.
    fn check(&self, _rows: &Rows<'_, Self::In>) -> Option<(usize, i64)> {
        None
    }
    fn push(&mut self, rows: &Rows<'_, Self::In>, em: &mut [Emit<Self::Out>]) -> Result<()>;
    fn flush(&mut self, em: &mut [Emit<Self::Out>]);
    fn save(&self, out: &mut Vec<u8>);
    fn restore(&mut self, inp: &mut &[u8]) -> Result<()>;
    fn out_type(&self) -> DataType {
        Self::Out::data_type()
    }
}

impl<M, A> KeyOp for SharedWindow<M, A>
where
    M: AggOp,
    M::In: FromArrow + Send,
    M::Out: ToArrow,
    A: FifoAggregator<M> + Renew + Send,
{
    type In = M::In;
    type Out = M::Out;
    const TIMED: bool = false;
    fn queries(&self) -> usize {
        self.plan().specs.len()
    }
    fn fresh(&self) -> Result<Self> {
        let plan = Arc::clone(self.plan());
        let agg = self.agg().renew(plan.plan.w_size + 1)?;
        SharedWindow::with_agg(plan, agg)
    }
    fn push(&mut self, rows: &Rows<'_, M::In>, em: &mut [Emit<M::Out>]) -> Result<()> {
        self.push_col(&rows.col, rows.args, em)
    }
    fn flush(&mut self, em: &mut [Emit<M::Out>]) {
        self.flush_into(em)
    }
    fn save(&self, out: &mut Vec<u8>) {
        SharedWindowOp::save(self, out)
    }
    fn restore(&mut self, inp: &mut &[u8]) -> Result<()> {
        SharedWindow::restore(self, inp)
    }
}

impl<M, A> KeyOp for TimeWindow<M, A>
where
    M: AggOp,
    M::In: FromArrow + Send,
    M::Out: ToArrow,
    A: FifoAggregator<M> + Renew + Send,
{
    type In = M::In;
    type Out = M::Out;
    const TIMED: bool = true;
    fn queries(&self) -> usize {
        self.plan().specs.len()
    }
    fn fresh(&self) -> Result<Self> {
        let plan = Arc::clone(self.plan());
        let agg = self.agg().renew(plan.plan.w_size + 1)?;
        TimeWindow::with_agg(plan, agg)
    }
    fn check(&self, rows: &Rows<'_, M::In>) -> Option<(usize, i64)> {
        first_decrease(rows.ts.unwrap_or(&[]), self.last_time())
    }
    fn push(&mut self, rows: &Rows<'_, M::In>, em: &mut [Emit<M::Out>]) -> Result<()> {
        self.push_checked(&rows.col, rows.ts.unwrap_or(&[]), em)
    }
    fn flush(&mut self, em: &mut [Emit<M::Out>]) {
        self.flush_into(em)
    }
    fn save(&self, out: &mut Vec<u8>) {
        crate::time_window::TimeWindowOp::save(self, out)
    }
    fn restore(&mut self, inp: &mut &[u8]) -> Result<()> {
        TimeWindow::restore(self, inp)
    }
}

/// First `i` with `ts[i]` below the time before it (`last` before `ts[0]`).
pub fn first_decrease(ts: &[i64], last: Option<i64>) -> Option<(usize, i64)> {
    let mut prev = last?;
    for (i, &t) in ts.iter().enumerate() {
        if t < prev {
            return Some((i, prev));
        }
        prev = t;
    }
    None
}

/// First `i` with `ts[i] < ts[i-1]` (no previous time).
fn first_decrease_fresh(ts: &[i64]) -> Option<(usize, i64)> {
    let (&t0, _) = ts.split_first()?;
    first_decrease(ts, Some(t0))
}

// ---------------------------------------------------------------------------
// Keyed streams

/// One query's results of a batch, with the key of each window.
#[derive(Debug)]
pub struct KeyedBatch {
    pub keys: ArrayRef,
    pub windows: WindowBatch,
}

/// A keyed stream behind one virtual call per batch.
pub trait KeyedWindowOp: Send {
    /// `ts` for time windows (non-null; non-decreasing within each key for
    /// in-order operators); `args` for argmax / argmin with an argument
    /// column. One [`KeyedBatch`] per query.
    fn push(&mut self, keys: &dyn Array, values: &dyn Array, ts: Option<&dyn Array>, args: Option<&[i64]>)
        -> Result<Vec<KeyedBatch>>;
    /// Every key's final windows, keys in order of first appearance.
    fn flush(&mut self) -> Result<Vec<KeyedBatch>>;
    fn save(&self, out: &mut Vec<u8>);
    fn out_type(&self) -> DataType;
    /// Distinct keys seen.
    fn num_keys(&self) -> usize;
}

/// Keys over per-key states of type `K`.
pub struct Keyed<K: KeyOp> {
    proto: K,
    states: Vec<K>,
    index: KeyIndex,
    slot: Vec<u32>,
}

impl<K: KeyOp> Keyed<K> {
    /// `proto`: an empty state; every key starts as `proto.fresh()`.
    pub fn new(proto: K) -> Self {
        Keyed { proto, states: Vec::new(), index: KeyIndex::new(), slot: Vec::new() }
    }

    /// Restore what [`KeyedWindowOp::save`] wrote.
    pub fn load(proto: K, inp: &mut &[u8]) -> Result<Self> {
        let index = KeyIndex::load(inp)?;
        let n = usize::decode(inp)?;
        if n != index.len() {
            return Err(Error::Corrupt("key count does not match the key index".into()));
        }
        let mut states = Vec::with_capacity(n);
        for _ in 0..n {
            let mut s = proto.fresh()?;
            s.restore(inp)?;
            states.push(s);
        }
        Ok(Keyed { proto, states, index, slot: Vec::new() })
    }

    fn finish(&self, em: Vec<Emit<K::Out>>, key_ids: Vec<Vec<u32>>) -> Vec<KeyedBatch> {
        em.into_iter()
            .zip(key_ids)
            .map(|((b, start, end), ids)| KeyedBatch {
                keys: self.index.take(&ids),
                windows: WindowBatch { start, end, values: b.finish() },
            })
            .collect()
    }

    /// Push `rows` to key `id`'s state and record the key of every window
    /// it emits.
    fn push_key(&mut self, id: u32, rows: &Rows<'_, K::In>, em: &mut [Emit<K::Out>], key_ids: &mut [Vec<u32>]) -> Result<()> {
        self.states[id as usize].push(rows, em)?;
        tag(em, key_ids, id);
        Ok(())
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

impl<K: KeyOp> KeyedWindowOp for Keyed<K> {
    fn push(&mut self, keys: &dyn Array, values: &dyn Array, ts: Option<&dyn Array>, args: Option<&[i64]>)
        -> Result<Vec<KeyedBatch>> {
        let n = values.len();
        if keys.len() != n {
            return invalid!("key column has {} rows, value column {}", keys.len(), n);
        }
        let col = <K::In as FromArrow>::column(values)?;
        let tcol = match (K::TIMED, ts) {
            (true, Some(t)) => {
                let t = i64::column(t)?;
                if t.len() != n {
                    return invalid!("time column has {} rows, value column {}", t.len(), n);
                }
                if let Some(nb) = t.nulls {
                    if let Some(i) = (0..n).find(|&i| nb.is_null(i)) {
                        return invalid!("timestamp of row {i} is null; every row needs an event time");
                    }
                }
                Some(t.values)
            }
            (true, None) => return invalid!("a time-window stream needs a time column"),
            (false, _) => None,
        };
        if let Some(a) = args {
            if a.len() != n {
                return invalid!("argument column has {} rows, value column {}", a.len(), n);
            }
        }
        let ids = self.index.ids(keys)?;
        while self.states.len() < self.index.len() {
            let s = self.proto.fresh()?;
            self.states.push(s);
        }
        let part = partition(&ids, &mut self.slot);
        let vals = gather(col.values, &part.perm);
        let nulls = gather_nulls(col.nulls, &part.perm);
        let tsg = tcol.map(|t| gather(t, &part.perm));
        let argg = args.map(|a| gather(a, &part.perm));
        let rows_of = |s: usize| {
            let (lo, hi) = (part.bounds[s], part.bounds[s + 1]);
            let nb = nulls.as_ref().map(|nb| nb.slice(lo, hi - lo));
            (lo, hi, nb)
        };
        // Validate every key before pushing any, so an error changes nothing.
        if K::TIMED {
            let mut worst: Option<(usize, usize, i64, u32)> = None; // (row, perm pos, prev, key)
            for s in 0..part.seg_key.len() {
                let (lo, hi, nb) = rows_of(s);
                let rows = Rows {
                    col: Column { values: &vals[lo..hi], nulls: nb.as_ref() },
                    ts: tsg.as_deref().map(|t| &t[lo..hi]),
                    args: None,
                };
                let st = &self.states[part.seg_key[s] as usize];
                if let Some((j, prev)) = st.check(&rows) {
                    let row = part.perm[lo + j] as usize;
                    if worst.is_none_or(|w| row < w.0) {
                        worst = Some((row, lo + j, prev, part.seg_key[s]));
                    }
                }
            }
            if let Some((row, p, prev, key)) = worst {
                let t = tsg.as_ref().unwrap()[p];
                return invalid!(
                    "timestamps must be non-decreasing within each key: row {row} (key {}) has time {t}, after {prev}; \
                     sort the rows by time, or use a stream with lateness for out-of-order data",
                    self.index.describe(key)
                );
            }
        }
        let queries = self.proto.queries();
        let mut em = new_emit::<K::Out>(queries);
        let mut key_ids = vec![Vec::new(); queries];
        for s in 0..part.seg_key.len() {
            if let Some(&ahead) = part.seg_key.get(s + PREFETCH_AHEAD) {
                prefetch(&self.states[ahead as usize]);
            }
            let (lo, hi, nb) = rows_of(s);
            let rows = Rows {
                col: Column { values: &vals[lo..hi], nulls: nb.as_ref() },
                ts: tsg.as_deref().map(|t| &t[lo..hi]),
                args: argg.as_deref().map(|a| &a[lo..hi]),
            };
            self.push_key(part.seg_key[s], &rows, &mut em, &mut key_ids)?;
        }
        Ok(self.finish(em, key_ids))
    }

    fn flush(&mut self) -> Result<Vec<KeyedBatch>> {
        let queries = self.proto.queries();
        let mut em = new_emit::<K::Out>(queries);
        let mut key_ids = vec![Vec::new(); queries];
        for (id, st) in self.states.iter_mut().enumerate() {
            st.flush(&mut em);
            tag(&em, &mut key_ids, id as u32);
        }
        Ok(self.finish(em, key_ids))
    }

    fn save(&self, out: &mut Vec<u8>) {
        self.index.save(out);
        self.states.len().encode(out);
        for s in &self.states {
            s.save(out);
        }
    }

    fn out_type(&self) -> DataType {
        self.proto.out_type()
    }

    fn num_keys(&self) -> usize {
        self.states.len()
    }
}

/// Wrap any per-key operator (e.g. an out-of-order time-window state) as a
/// keyed stream.
pub fn keyed<K: KeyOp + 'static>(proto: K) -> Box<dyn KeyedWindowOp> {
    Box::new(Keyed::new(proto))
}

/// Keyed count windows: every key runs `specs` (one aggregation) alone,
/// over partials cut by `slicing` (Pairs, Panes or Cutty; one plan shared by
/// every key).
pub fn build_keyed_count(specs: &[CountSpec], dtype: DType, algo: Algorithm, slicing: Slicing) -> Result<Box<dyn KeyedWindowOp>> {
    make_count(specs, dtype, algo, slicing, None)
}

/// [`build_keyed_count`] restoring what [`KeyedWindowOp::save`] wrote under
/// the same specs and slicing.
pub fn load_keyed_count(
    specs: &[CountSpec],
    dtype: DType,
    algo: Algorithm,
    slicing: Slicing,
    bytes: &mut &[u8],
) -> Result<Box<dyn KeyedWindowOp>> {
    make_count(specs, dtype, algo, slicing, Some(bytes))
}

/// Keyed time windows (Spark `groupBy(key, F.window(...))`).
pub fn build_keyed_time(specs: &[TimeSpec], dtype: DType, algo: Algorithm) -> Result<Box<dyn KeyedWindowOp>> {
    make_time(specs, dtype, algo, None)
}

pub fn load_keyed_time(specs: &[TimeSpec], dtype: DType, algo: Algorithm, bytes: &mut &[u8]) -> Result<Box<dyn KeyedWindowOp>> {
    make_time(specs, dtype, algo, Some(bytes))
}

fn make_count(
    specs: &[CountSpec],
    dtype: DType,
    algo: Algorithm,
    slicing: Slicing,
    saved: Option<&mut &[u8]>,
) -> Result<Box<dyn KeyedWindowOp>> {
    for s in specs {
        s.check()?;
    }
    let agg = crate::window::common_agg(specs.iter().map(|s| s.agg))?;
    crate::with_dtype!(dtype, |T| crate::with_op!(agg, T, |Op| count_op::<Op>(specs, algo, slicing, saved)))
}

fn count_op<M>(specs: &[CountSpec], algo: Algorithm, slicing: Slicing, saved: Option<&mut &[u8]>) -> Result<Box<dyn KeyedWindowOp>>
where
    M: AggOp,
    M::In: FromArrow + Send,
    M::Out: ToArrow,
{
    let algo = keyed_algo::<M>(algo, distinct(specs.iter().map(|s| s.range)));
    let proto = SharedWindow::<M, AnyFifo<M>>::with_agg(CountPlan::new(specs, slicing)?, AnyFifo::new(algo, 1)?)?;
    keyed_from(proto, saved)
}

/// What `auto` means per key: the choice of an unkeyed stream of the same
/// queries, except that one window of a sum, count or mean runs
/// Subtract-on-Evict. Its single ring of partials is the smallest state
/// (TwoStacks keeps evicted slots until a flip plus a suffix aggregate per
/// front partial: up to three windows' worth), which is what a stream of
/// many keys pays for; these inverses are exact (integers) or compensated
/// (float sums), and SoE is O(1) too.
pub fn keyed_algo<M: AggOp>(algo: Algorithm, ranges: usize) -> Algorithm {
    let small = ranges == 1 && M::INVERTIBLE && matches!(M::NAME, "sum" | "count" | "mean");
    if algo == Algorithm::Auto && small {
        Algorithm::Soe
    } else {
        algo.resolve_for::<M>(ranges)
    }
}

/// Number of distinct window sizes (`auto` picks a multi-query structure
/// for several).
fn distinct<T: Ord>(it: impl Iterator<Item = T>) -> usize {
    let mut v: Vec<T> = it.collect();
    v.sort_unstable();
    v.dedup();
    v.len()
}

/// A keyed stream whose new keys start as empty copies of `proto`'s state,
/// restored from `saved` when given.
fn keyed_from<K: KeyOp + 'static>(proto: K, saved: Option<&mut &[u8]>) -> Result<Box<dyn KeyedWindowOp>>
where
    Keyed<K>: KeyedWindowOp,
{
    Ok(match saved {
        None => Box::new(Keyed::new(proto)),
        Some(b) => Box::new(Keyed::load(proto, b)?),
    })
}

fn make_time(specs: &[TimeSpec], dtype: DType, algo: Algorithm, saved: Option<&mut &[u8]>) -> Result<Box<dyn KeyedWindowOp>> {
    for s in specs {
        if s.range <= 0 || s.slide <= 0 {
            return invalid!("time range and slide must be positive, got range={} slide={}", s.range, s.slide);
        }
    }
    let agg = crate::window::common_agg(specs.iter().map(|s| s.agg))?;
    crate::with_dtype!(dtype, |T| crate::with_op!(agg, T, |Op| time_op::<Op>(specs, algo, saved)))
}

fn time_op<M>(specs: &[TimeSpec], algo: Algorithm, saved: Option<&mut &[u8]>) -> Result<Box<dyn KeyedWindowOp>>
where
    M: AggOp,
    M::In: FromArrow + Send,
    M::Out: ToArrow,
{
    let algo = keyed_algo::<M>(algo, distinct(specs.iter().map(|s| s.range)));
    let proto = TimeWindow::<M, AnyFifo<M>>::with_agg(TimePlan::new(specs)?, AnyFifo::new(algo, 1)?)?;
    keyed_from(proto, saved)
}

// ---------------------------------------------------------------------------
// Keyed per-row rolling

/// Rows grouped by key, values gathered: the input of a keyed rolling.
struct Grouped {
    index: KeyIndex,
    ids: Vec<u32>,
    part: Partition,
    values: ArrayRef,
}

fn group_rows(keys: &dyn Array, values: &dyn Array) -> Result<Grouped> {
    if keys.len() != values.len() {
        return invalid!("keys have {} rows, values {}", keys.len(), values.len());
    }
    let dtype = DType::of(values.data_type())?;
    let mut index = KeyIndex::new();
    let ids = index.ids(keys)?;
    let part = partition(&ids, &mut Vec::new());
    let values: ArrayRef = crate::with_dtype!(dtype, |T| {
        let col = <T as FromArrow>::column(values)?;
        T::to_arrow(gather(col.values, &part.perm), gather_nulls(col.nulls, &part.perm))
    });
    Ok(Grouped { index, ids, part, values })
}

/// Run `f` on every key's segment of the grouped values and put the results
/// back in input row order.
fn per_segment(g: &Grouped, mut f: impl FnMut(&dyn Array, usize, usize) -> Result<ArrayRef>) -> Result<ArrayRef> {
    let mut out = per_segment_many(g, 1, |seg, lo, hi| Ok(vec![f(seg, lo, hi)?]))?;
    Ok(out.pop().expect("one output"))
}

/// [`per_segment`] for `f` returning `n_out` arrays per segment (one per
/// window of a `rolling_many`): each output put back in input row order.
fn per_segment_many(
    g: &Grouped,
    n_out: usize,
    mut f: impl FnMut(&dyn Array, usize, usize) -> Result<Vec<ArrayRef>>,
) -> Result<Vec<ArrayRef>> {
    let segs = g.part.seg_key.len();
    if segs == 0 {
        return f(g.values.as_ref(), 0, 0);
    }
    let mut outs: Vec<Vec<ArrayRef>> = (0..n_out).map(|_| Vec::with_capacity(segs)).collect();
    for s in 0..segs {
        let (lo, hi) = (g.part.bounds[s], g.part.bounds[s + 1]);
        let res = f(&g.values.slice(lo, hi - lo), lo, hi)?;
        debug_assert_eq!(res.len(), n_out);
        for (o, a) in outs.iter_mut().zip(res) {
            o.push(a);
        }
    }
    // grouped[p] is the result of input row perm[p]: scatter back.
    let mut inv = vec![0u32; g.part.perm.len()];
    for (p, &i) in g.part.perm.iter().enumerate() {
        inv[i as usize] = p as u32;
    }
    let idx = UInt32Array::new(ScalarBuffer::from(inv), None);
    outs.into_iter()
        .map(|mut o| {
            let grouped = if o.len() == 1 {
                o.pop().unwrap()
            } else {
                let refs: Vec<&dyn Array> = o.iter().map(|a| a.as_ref()).collect();
                arrow_select::concat::concat(&refs).map_err(|e| Error::Invalid(e.to_string()))?
            };
            arrow_select::take::take(grouped.as_ref(), &idx, None).map_err(|e| Error::Invalid(e.to_string()))
        })
        .collect()
}

/// Per-row rolling within each key: row `i` aggregates the last `window`
/// rows of its key up to and including `i` (pandas
/// `groupby(k).rolling(window)`, re-aligned to the input rows).
pub fn rolling_keyed_dyn(
    keys: &dyn Array,
    values: &dyn Array,
    window: usize,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
) -> Result<ArrayRef> {
    crate::rolling::check_window(window, min_periods)?;
    let g = group_rows(keys, values)?;
    per_segment(&g, |seg, lo, _| {
        let out = rolling_segment(seg, window, agg, min_periods, algo)?;
        Ok(input_rows(&g, agg, out, lo))
    })
}

/// argmax / argmin report row positions: within a key's segment they count
/// from the segment; map them to the input row index.
fn input_rows(g: &Grouped, agg: AggKind, out: ArrayRef, lo: usize) -> ArrayRef {
    if !matches!(agg, AggKind::ArgMax | AggKind::ArgMin) {
        return out;
    }
    let Some(a) = out.as_any().downcast_ref::<PrimitiveArray<Int64Type>>() else {
        return out;
    };
    let vals: Vec<i64> = a.values().iter().map(|&p| g.part.perm[lo + p.max(0) as usize] as i64).collect();
    Arc::new(PrimitiveArray::<Int64Type>::new(ScalarBuffer::from(vals), a.nulls().cloned()))
}

/// One key's rolling; a window longer than the key's rows is capped to them
/// (so no buffer is sized by an arbitrary user number), and a min_periods
/// above that gives nulls of the aggregate's type.
fn rolling_segment(seg: &dyn Array, window: usize, agg: AggKind, mp: Option<usize>, algo: Algorithm) -> Result<ArrayRef> {
    let n = seg.len();
    let w = window.min(n.max(1));
    match mp {
        Some(m) if m > w => crate::rolling::rolling_dyn(&seg.slice(0, 0), w, agg, None, algo)
            .map(|empty| arrow_array::new_null_array(empty.data_type(), n)),
        _ => crate::rolling::rolling_dyn(seg, w, agg, mp, algo),
    }
}

/// Many windows at once, keyed: one array per window, in the order given.
/// Each key's segment runs [`crate::rolling::rolling_many_dyn`] (the shared
/// max / min pass, windows capped to the segment), as an unkeyed
/// `rolling_many` over that key's rows alone would.
pub fn rolling_many_keyed_dyn(
    keys: &dyn Array,
    values: &dyn Array,
    windows: &[usize],
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
) -> Result<Vec<ArrayRef>> {
    for &w in windows {
        crate::rolling::check_window(w, min_periods)?;
    }
    let g = group_rows(keys, values)?;
    per_segment_many(&g, windows.len(), |seg, lo, _| {
        let outs = crate::rolling::rolling_many_dyn(seg, windows, agg, min_periods, algo)?;
        Ok(outs.into_iter().map(|o| input_rows(&g, agg, o, lo)).collect())
    })
}

/// Per-row time rolling within each key (pandas
/// `groupby(k).rolling("5s", on=ts)`): row `i` aggregates the rows `j` of its
/// key with `ts[j] > ts[i] - range`, up to and including `i`. Times must be
/// non-null and non-decreasing within each key (keys may interleave).
pub fn rolling_time_keyed_dyn(
    keys: &dyn Array,
    values: &dyn Array,
    ts: &dyn Array,
    range: i64,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
) -> Result<ArrayRef> {
    if range <= 0 {
        return invalid!("time window must be positive, got {range}");
    }
    let tcol = i64::column(ts)?;
    if tcol.len() != values.len() {
        return invalid!("timestamps have {} rows, values {}", tcol.len(), values.len());
    }
    if let Some(nb) = tcol.nulls {
        if let Some(i) = (0..tcol.len()).find(|&i| nb.is_null(i)) {
            return invalid!("timestamp of row {i} is null; every row needs an event time");
        }
    }
    let g = group_rows(keys, values)?;
    let tsg = gather(tcol.values, &g.part.perm);
    // The first offending row in input order, over all keys.
    let mut worst: Option<(usize, usize, i64)> = None;
    for s in 0..g.part.seg_key.len() {
        let (lo, hi) = (g.part.bounds[s], g.part.bounds[s + 1]);
        if let Some((j, prev)) = first_decrease_fresh(&tsg[lo..hi]) {
            let row = g.part.perm[lo + j] as usize;
            if worst.is_none_or(|w| row < w.0) {
                worst = Some((row, lo + j, prev));
            }
        }
    }
    if let Some((row, p, prev)) = worst {
        return invalid!(
            "timestamps must be non-decreasing within each key: row {row} (key {}) has time {}, after {prev}; \
             sort the rows by (key, time) or by time first",
            g.index.describe(g.ids[row]),
            tsg[p]
        );
    }
    let ts_arr = PrimitiveArray::<Int64Type>::new(ScalarBuffer::from(tsg), None);
    per_segment(&g, |seg, lo, hi| {
        let out = crate::time_window::rolling_time_dyn(seg, &ts_arr.slice(lo, hi - lo), range, agg, min_periods, algo)?;
        Ok(input_rows(&g, agg, out, lo))
    })
}
