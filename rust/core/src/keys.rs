//! Key identity for keyed streams and keyed rolling: a key column
//! partitions the rows, and every key has its own window state (RA paper
//! §5.4: "a separate instance of FlatFAT for each active unique key").
//!
//! * [`KeyIndex`] keeps key identity across batches: key value -> a compact
//!   id, ids given in order of first appearance in the stream.
//! * Per batch, the rows are stably partitioned by key in one counting-sort
//!   pass ([`partition`]; [`partition_on`] splits its passes over
//!   threads); each key's values (and times / arguments) are then gathered
//!   into one contiguous segment ([`gather`]).
//!
//! Null keys are refused with an error naming the first such row: every row
//! belongs to exactly one key, so none is silently dropped.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, GenericStringArray, LargeStringArray, OffsetSizeTrait, PrimitiveArray, StringArray,
};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::DataType;

use crate::codec::Codec;
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

    pub fn save(&self, out: &mut Vec<u8>) {
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

    pub fn load(inp: &mut &[u8]) -> Result<KeyIndex> {
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

/// Key ids of one batch on its own (keyed rolling: nothing is kept for a
/// next batch), any compact numbering (`partition` renumbers segments by
/// first row). Integer keys spanning a range of at most
/// [`DENSE_SPAN_PER_ROW`] per row are their offset from the smallest key:
/// no hashing, the partition's slot table indexed directly. Others (and
/// strings) go through a fresh [`KeyIndex`]. Null keys are refused as
/// [`KeyIndex::ids`] does.
pub fn batch_ids(keys: &dyn Array) -> Result<Vec<u32>> {
    let ty = KeyType::of(keys.data_type())?;
    if ty.is_int() && !keys.is_empty() {
        if let Some(n) = keys.logical_nulls() {
            null_key_error(&n)?;
        }
        let dense = match keys.data_type() {
            DataType::Int32 => dense_ids(keys.as_any().downcast_ref::<PrimitiveArray<Int32Type>>().unwrap().values()),
            _ => dense_ids(keys.as_any().downcast_ref::<PrimitiveArray<Int64Type>>().unwrap().values()),
        };
        if let Some(ids) = dense {
            return Ok(ids);
        }
    }
    KeyIndex::new().ids(keys)
}

/// The widest key span (largest minus smallest key) per row of the batch,
/// plus [`DENSE_SPAN_MIN`], that [`batch_ids`] addresses directly: the
/// partition's slot table is 4 bytes per value of the span.
pub const DENSE_SPAN_PER_ROW: u64 = 2;
pub const DENSE_SPAN_MIN: u64 = 1 << 16;

fn dense_ids<K: Copy + Into<i64>>(ks: &[K]) -> Option<Vec<u32>> {
    // min and max in one branch-free pass (vectorises)
    let (lo, hi) = ks.iter().fold((i64::MAX, i64::MIN), |(lo, hi), &k| {
        let k: i64 = k.into();
        (lo.min(k), hi.max(k))
    });
    let span = (hi as i128 - lo as i128) as u64;
    let limit = (ks.len() as u64).saturating_mul(DENSE_SPAN_PER_ROW).saturating_add(DENSE_SPAN_MIN).min(u32::MAX as u64 - 1);
    (span <= limit).then(|| ks.iter().map(|&k| (k.into().wrapping_sub(lo)) as u32).collect())
}

/// The key of row `i` of a key column, as text (error messages; as
/// [`KeyIndex::describe`]).
pub fn describe_key(keys: &dyn Array, i: usize) -> String {
    match keys.data_type() {
        DataType::Int32 => keys.as_any().downcast_ref::<PrimitiveArray<Int32Type>>().unwrap().value(i).to_string(),
        DataType::Int64 => keys.as_any().downcast_ref::<PrimitiveArray<Int64Type>>().unwrap().value(i).to_string(),
        DataType::Utf8 => format!("{:?}", keys.as_any().downcast_ref::<StringArray>().unwrap().value(i)),
        DataType::LargeUtf8 => format!("{:?}", keys.as_any().downcast_ref::<LargeStringArray>().unwrap().value(i)),
        other => other.to_string(),
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
    let Numbered { local, seg_key, mut counts } = number(ids, slot);
    let bounds = starts(&mut counts);
    let mut perm = vec![0u32; ids.len()];
    for (i, &l) in local.iter().enumerate() {
        let at = &mut counts[l as usize];
        perm[*at] = i as u32;
        *at += 1;
    }
    Partition { perm, bounds, seg_key }
}

/// Rows' keys numbered in order of first appearance: `local[i]` is row
/// `i`'s number, `seg_key[l]` the key id numbered `l`, `counts[l]` its rows.
struct Numbered {
    local: Vec<u32>,
    seg_key: Vec<u32>,
    counts: Vec<usize>,
}

/// [`partition`]'s first pass. `slot` as there: zero on entry and return.
fn number(ids: &[u32], slot: &mut Vec<u32>) -> Numbered {
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
    for &g in &seg_key {
        slot[g as usize] = 0;
    }
    Numbered { local, seg_key, counts }
}

/// The segments' bounds from their counts, each count replaced by its
/// segment's first position.
fn starts(counts: &mut [usize]) -> Vec<usize> {
    let mut bounds = Vec::with_capacity(counts.len() + 1);
    let mut acc = 0;
    bounds.push(0);
    for c in counts.iter_mut() {
        acc += *c;
        bounds.push(acc);
        *c = acc - *c;
    }
    bounds
}

/// A raw pointer that scoped threads may share: each writes elements no
/// other thread writes.
#[derive(Clone, Copy)]
pub(crate) struct Shared<T>(pub(crate) *mut T);
unsafe impl<T: Send> Send for Shared<T> {}
unsafe impl<T: Send> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// SAFETY: `i` is in bounds, and no other thread touches element `i`.
    /// (A method, so closures capture the whole `Shared`, not its pointer.)
    #[inline(always)]
    pub(crate) unsafe fn write(self, i: usize, v: T) {
        *self.0.add(i) = v;
    }
}

/// Runs `job(c)` for each of `n` chunks, chunk 0 on the calling thread,
/// the others on scoped threads; their results in chunk order (a panic on
/// a thread is raised again here).
pub(crate) fn on_threads<R: Send>(n: usize, job: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let job = &job;
    std::thread::scope(|s| {
        let hs: Vec<_> = (1..n).map(|c| s.spawn(move || job(c))).collect();
        let first = job(0);
        std::iter::once(first).chain(hs.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))).collect()
    })
}

/// [`partition`] with its passes split over `threads` chunks of the rows:
/// the same `Partition`, whatever the threads (keyed rolling's grouping was
/// a fifth of its time on one core, issue 36). Each chunk numbers its own
/// keys; the numberings merge in chunk order, which is the order of first
/// appearance (a key first seen in chunk 2 follows every key of chunks 0
/// and 1, and within chunk 2 its own order holds); then each chunk places
/// its rows in each segment after the earlier chunks' rows of that key.
pub fn partition_on(ids: &[u32], threads: usize) -> Partition {
    let n = ids.len();
    let threads = threads.min(n).max(1);
    if threads == 1 {
        return partition(ids, &mut Vec::new());
    }
    let step = n.div_ceil(threads);
    let chunk = |c: usize| &ids[(c * step).min(n)..((c + 1) * step).min(n)];
    let parts = on_threads(threads, |c| number(chunk(c), &mut Vec::new()));
    // Merge: each chunk's numbers mapped to the call's, counts summed.
    let max = parts.iter().flat_map(|p| p.seg_key.iter().copied()).max().map_or(0, |m| m as usize + 1);
    let mut slot = vec![0u32; max];
    let (mut seg_key, mut counts) = (Vec::new(), Vec::<usize>::new());
    let maps: Vec<Vec<u32>> = parts
        .iter()
        .map(|p| {
            p.seg_key
                .iter()
                .zip(&p.counts)
                .map(|(&g, &k)| {
                    let s = &mut slot[g as usize];
                    if *s == 0 {
                        seg_key.push(g);
                        counts.push(0);
                        *s = seg_key.len() as u32;
                    }
                    counts[*s as usize - 1] += k;
                    *s - 1
                })
                .collect()
        })
        .collect();
    let bounds = starts(&mut counts);
    // Each chunk's first position in each of its segments.
    let firsts: Vec<Vec<usize>> = parts
        .iter()
        .zip(&maps)
        .map(|(p, m)| {
            m.iter()
                .zip(&p.counts)
                .map(|(&l, &k)| {
                    let at = counts[l as usize];
                    counts[l as usize] += k;
                    at
                })
                .collect()
        })
        .collect();
    // Not zeroed (every position is written once, below); debug builds
    // fill it with u32::MAX and check that none is left.
    let mut perm: Vec<u32> = Vec::with_capacity(n);
    if cfg!(debug_assertions) {
        perm.resize(n, u32::MAX);
    } else {
        // SAFETY: capacity n; u32 has no invalid bit patterns, and every
        // position is written before `perm` is read.
        unsafe { perm.set_len(n) };
    }
    let out = Shared(perm.as_mut_ptr());
    on_threads(threads, |c| {
        let mut next = firsts[c].clone();
        for (i, &l) in parts[c].local.iter().enumerate() {
            let at = &mut next[l as usize];
            // SAFETY: the chunks' positions are disjoint and inside perm:
            // chunk c's rows of segment s fill [firsts[c][l], + its count).
            unsafe { out.write(*at, (c * step + i) as u32) };
            *at += 1;
        }
    });
    debug_assert!(!perm.contains(&u32::MAX), "a position of perm was never written");
    Partition { perm, bounds, seg_key }
}

pub fn gather<T: Copy>(xs: &[T], perm: &[u32]) -> Vec<T> {
    perm.iter().map(|&i| xs[i as usize]).collect()
}

/// The validity of the rows `perm` picks, in its order, packed 64 rows a
/// word (a builder's append per row measured longer than keyed rolling's
/// kernel, issue 36), the words split over `threads`.
pub fn gather_nulls(nulls: Option<&NullBuffer>, perm: &[u32], threads: usize) -> Option<NullBuffer> {
    let nb = nulls?;
    let n = perm.len();
    let words = n.div_ceil(64);
    let threads = threads.min(words).max(1);
    let step = words.div_ceil(threads);
    // each chunk's words, then joined (n / 8 bytes: nothing next to the rows)
    let out: Vec<u64> = on_threads(threads, |c| {
        ((c * step).min(words)..((c + 1) * step).min(words))
            .map(|k| perm[k * 64..(k * 64 + 64).min(n)].iter().enumerate().fold(0u64, |b, (j, &i)| b | (nb.is_valid(i as usize) as u64) << j))
            .collect::<Vec<u64>>()
    })
    .concat();
    let bits = BooleanBuffer::new(arrow_buffer::Buffer::from_vec(out), 0, n);
    Some(NullBuffer::new(bits)).filter(|n| n.null_count() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_nulls_picks_each_rows_bit_at_any_offset() {
        let mut st = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            st
        };
        for n in [1usize, 63, 64, 65, 200, 1000] {
            for off in [0usize, 3, 64, 71] {
                let bits: Vec<bool> = (0..n + off).map(|_| next() % 5 != 0).collect();
                let nb = NullBuffer::new(BooleanBuffer::from(bits.clone()).slice(off, n));
                let perm: Vec<u32> = (0..n + n / 3).map(|_| (next() % n as u64) as u32).collect();
                for threads in [1, 2, 3, 40] {
                    let got = gather_nulls(Some(&nb), &perm, threads);
                    for (j, &i) in perm.iter().enumerate() {
                        let want = bits[off + i as usize];
                        assert_eq!(got.as_ref().map_or(true, |g| g.is_valid(j)), want, "n {n} off {off} row {j} threads {threads}");
                    }
                }
            }
        }
        assert!(gather_nulls(None, &[0, 1], 2).is_none());
    }

    /// The chunked partition is the serial one, whatever the chunks: keys
    /// first seen in a later chunk, a key in one chunk only, one key, a
    /// chunk per row, more chunks than rows (up to 100 rows: a thread per
    /// chunk, and 5,000 threads spawned per case were 18 s of CI's CPU).
    #[test]
    fn partition_on_threads_is_the_serial_partition() {
        let mut st = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || crate::rolling::xorshift(&mut st);
        for case in 0..60 {
            let n = [0usize, 1, 2, 7, 100, 1000, 5000][case % 7];
            let keys = [1u64, 2, 5, 50, 3000][case % 5];
            let mut ids: Vec<u32> = (0..n).map(|_| (next() % keys) as u32).collect();
            if case % 3 == 0 && n > 4 {
                // keys first seen late: the last quarter's rows get new ids
                for i in n - n / 4..n {
                    ids[i] += 10_000 + (i % 3) as u32;
                }
            }
            let want = partition(&ids, &mut Vec::new());
            let per_row: &[usize] = if n <= 100 { &[n.max(1), n + 5] } else { &[] };
            for &threads in [1, 2, 3, 4, 7].iter().chain(per_row) {
                let got = partition_on(&ids, threads);
                assert_eq!(got.perm, want.perm, "case {case} threads {threads}");
                assert_eq!(got.bounds, want.bounds, "case {case} threads {threads}");
                assert_eq!(got.seg_key, want.seg_key, "case {case} threads {threads}");
            }
        }
    }
}
