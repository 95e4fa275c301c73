//! The extension's allocator: the system's, except that the last large
//! blocks freed (a rolling output of millions of rows, its validity
//! bitmap, their scratch) are kept, up to 32 blocks and 256 MiB, and handed
//! to the next request of the same size.
//!
//! Why: a large block comes from mmap and goes back at free, so every call
//! first-touches fresh pages. On a VM whose host backs guest memory lazily
//! (this project's EPYC machine), a fresh 2 MiB page can cost ~2.5 ms of
//! kernel time instead of ~0.2 (the host faults it in 4 KiB at a time):
//! the same 10M-row call then took 90-120 ms instead of 7, in phases
//! (DESIGN §6). A kept block is already backed. Blocks from 1 MiB are
//! kept (issue 36): a 10M-row mean with nulls also frees two 1.25 MB
//! bitmaps a call, which glibc serves from mmap or trims back, 578 page
//! faults a call and 0.6x of the clean call's speed, where the clean
//! call's one 80 MB output, kept, faulted none. The Rust core allocates
//! through whatever allocator its host gives it; only the Python
//! extension, which owns the process's calls, chooses this.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;

/// Blocks this large or larger are kept when freed.
const LARGE: usize = 1 << 20;
/// The most bytes kept at once.
const KEEP_BYTES: usize = 256 << 20;
/// The most blocks kept at once: a call's output, its bitmaps and scratch,
/// with room for blocks of other sizes freed between two such calls.
const SLOTS: usize = 32;

pub struct Retain;

/// A kept block: address (0: an empty slot), size, align, and when it
/// was kept (a count of keeps).
type Slot = (usize, usize, usize, u64);

/// The kept blocks and the count of keeps so far.
static KEPT: Mutex<([Slot; SLOTS], u64)> = Mutex::new(([(0, 0, 0, 0); SLOTS], 0));

fn kept() -> std::sync::MutexGuard<'static, ([Slot; SLOTS], u64)> {
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

/// A kept block of exactly `l`'s size and alignment (it was allocated by
/// `System` with that layout), or null.
fn take(l: Layout) -> *mut u8 {
    if l.size() < LARGE {
        return std::ptr::null_mut();
    }
    let mut k = kept();
    match k.0.iter_mut().find(|e| e.0 != 0 && e.1 == l.size() && e.2 == l.align()) {
        Some(e) => std::mem::replace(e, (0, 0, 0, 0)).0 as *mut u8,
        None => std::ptr::null_mut(),
    }
}

unsafe impl GlobalAlloc for Retain {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = take(l);
        if !p.is_null() {
            return p;
        }
        System.alloc(l)
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = take(l);
        if !p.is_null() {
            // SAFETY: the block has l.size() bytes.
            p.write_bytes(0, l.size());
            return p;
        }
        System.alloc_zeroed(l)
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        if (LARGE..=KEEP_BYTES).contains(&l.size()) {
            // Keep it, making room (outside the lock: System.dealloc may
            // take its own) by freeing the smallest kept blocks (the oldest
            // first); or free it, where room would take blocks as large.
            // A block costs its pages to fault in again, so blocks of sizes
            // no later call asks for (bitmaps, shorter columns' outputs)
            // must not push out the last call's output, which the next call
            // asks for again: dropping the oldest instead ran a page's
            // rolling means at 0.12x of their speed (80 MB faulted in).
            let mut out: [Slot; SLOTS] = [(0, 0, 0, 0); SLOTS];
            let keep;
            {
                let mut g = kept();
                let (k, keeps) = &mut *g;
                let total: usize = k.iter().map(|e| e.1).sum();
                // What freeing every smaller kept block would leave.
                let smaller = k.iter().filter(|e| e.0 != 0 && e.1 < l.size());
                let (sb, sn) = smaller.fold((0, 0), |(b, n), e| (b + e.1, n + 1));
                let free = k.iter().filter(|e| e.0 == 0).count();
                keep = total - sb + l.size() <= KEEP_BYTES && free + sn > 0;
                if keep {
                    let mut total = total;
                    let mut n = 0;
                    while total + l.size() > KEEP_BYTES || k.iter().all(|e| e.0 != 0) {
                        let i = (0..SLOTS).filter(|&i| k[i].0 != 0).min_by_key(|&i| (k[i].1, k[i].3)).expect("a smaller kept block");
                        total -= k[i].1;
                        out[n] = std::mem::replace(&mut k[i], (0, 0, 0, 0));
                        n += 1;
                    }
                    *keeps += 1;
                    let slot = k.iter_mut().find(|e| e.0 == 0).expect("a free slot");
                    *slot = (p as usize, l.size(), l.align(), *keeps);
                }
            }
            for (a, s, al, _) in out.into_iter().filter(|e| e.0 != 0) {
                // SAFETY: each was allocated by System with this layout.
                System.dealloc(a as *mut u8, Layout::from_size_align_unchecked(s, al));
            }
            if !keep {
                System.dealloc(p, l);
            }
            return;
        }
        System.dealloc(p, l)
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        // Every block, kept ones too, is a System block of layout `l`.
        System.realloc(p, l, new_size)
    }
}
