//! The extension's allocator: the system's, except that the last large
//! blocks freed (a rolling output of millions of rows, its scratch) are
//! kept, up to 256 MiB, and handed to the next request of the same size.
//!
//! Why: a large block comes from mmap and goes back at free, so every call
//! first-touches fresh pages. On a VM whose host backs guest memory lazily
//! (this project's EPYC machine), a fresh 2 MiB page can cost ~2.5 ms of
//! kernel time instead of ~0.2 (the host faults it in 4 KiB at a time):
//! the same 10M-row call then took 90-120 ms instead of 7, in phases
//! (DESIGN §6). A kept block is already backed. The Rust core allocates
//! through whatever allocator its host gives it; only the Python
//! extension, which owns the process's calls, chooses this.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;

/// Blocks this large or larger are kept when freed.
const LARGE: usize = 16 << 20;
/// The most bytes kept at once (so at most a few blocks).
const KEEP_BYTES: usize = 256 << 20;
const SLOTS: usize = 4;

pub struct Retain;

/// Kept blocks: (address, size, align); address 0 is an empty slot.
static KEPT: Mutex<[(usize, usize, usize); SLOTS]> = Mutex::new([(0, 0, 0); SLOTS]);

fn kept() -> std::sync::MutexGuard<'static, [(usize, usize, usize); SLOTS]> {
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

/// A kept block of exactly `l`'s size and alignment (it was allocated by
/// `System` with that layout), or null.
fn take(l: Layout) -> *mut u8 {
    if l.size() < LARGE {
        return std::ptr::null_mut();
    }
    let mut k = kept();
    match k.iter_mut().find(|e| e.0 != 0 && e.1 == l.size() && e.2 == l.align()) {
        Some(e) => std::mem::replace(e, (0, 0, 0)).0 as *mut u8,
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
            // Keep it, making room by freeing the largest kept blocks
            // (outside the lock: System.dealloc may take its own).
            let mut out: [(usize, usize, usize); SLOTS] = [(0, 0, 0); SLOTS];
            {
                let mut k = kept();
                let mut total: usize = k.iter().map(|e| e.1).sum();
                let mut n = 0;
                while total + l.size() > KEEP_BYTES || k.iter().all(|e| e.0 != 0) {
                    let i = (0..SLOTS).filter(|&i| k[i].0 != 0).max_by_key(|&i| k[i].1).expect("a kept block");
                    total -= k[i].1;
                    out[n] = std::mem::replace(&mut k[i], (0, 0, 0));
                    n += 1;
                }
                let slot = k.iter_mut().find(|e| e.0 == 0).expect("a free slot");
                *slot = (p as usize, l.size(), l.align());
            }
            for (a, s, al) in out.into_iter().filter(|e| e.0 != 0) {
                // SAFETY: each was allocated by System with this layout.
                System.dealloc(a as *mut u8, Layout::from_size_align_unchecked(s, al));
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
