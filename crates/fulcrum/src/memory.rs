//! The process's memory allocator: the system's (glibc's), with small per-thread caches for
//! the blocks glibc serves slowly and every connection needs a few of.
//!
//! Measured (callgrind, one connection per request): each connection made three such requests
//! and their frees cost about 3,500 instructions, a sixth of the proxy's user-space work per
//! connection. They are the over-aligned blocks (Tokio's task cells and I/O registrations are
//! aligned on 128 bytes; glibc's `posix_memalign` takes its slow path every time) and those
//! above glibc's per-thread cache limit of 1,032 bytes (an HTTP session's state, ~3 kB). Later,
//! HTTP/2: blocks of a few hundred bytes that streams take and give back by the hundred, past
//! the 7 of a size glibc's cache holds (so blocks above 256 bytes are kept here). HAProxy
//! keeps pools per object type for the same reason; a general allocator crate would replace
//! glibc for everything, which this does not need.
//!
//! Those blocks, up to 4 kB, are sorted in size classes: over-aligned ones by steps of 128
//! bytes (the sizes of such types are multiples of their alignment); the others by steps of 16
//! bytes, as glibc sizes them (coarser classes cost about 50 bytes of resident memory per idle
//! connection: the rounded-up blocks freed when sessions go idle leave larger holes among the
//! connections' long-lived blocks). A freed block goes to the freeing thread's list for its
//! class; an allocation takes from the list first. The lists are intrusive (a free block holds
//! the address of the next), so the cache allocates nothing itself. Every other request goes
//! straight to glibc.
//!
//! Over-aligned blocks are carved one after the other from 64 kB regions the thread takes from
//! glibc, never asked of glibc one by one: `posix_memalign` cuts each out of a larger chunk
//! and leaves the pieces around it as holes, about 300 bytes per connection (a task cell and
//! a registration; measured in C, 10,000 pairs of 384 and 256 bytes: 1,046 bytes each pair
//! aligned, 743 not). Such a block, once freed, is kept for reuse and never given back (as
//! HAProxy's pools keep theirs): the memory of the busiest moment's connections stays with
//! the process. A thread keeps up to two batches of them per class (128 kB each); past that, a
//! full batch goes to a pool shared by all threads, where a thread whose list is empty takes
//! one before carving more (a lock per batch), so that blocks one worker frees and another
//! allocates are not lost to either. The other classes' lists are bounded; past the bound,
//! blocks go back to glibc.
//!
//! Must not touch: anything but memory (no I/O, no lock but the pool's, no panics: it runs
//! inside every allocation of every thread).

// An allocator is unsafe code by nature; each block says why it holds.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ptr;

/// The largest block cached.
const MAX_SIZE: usize = 4096;
/// The class step and the alignment of the over-aligned classes.
const WIDE: usize = 128;
/// glibc's alignment, and the class step of the other classes.
const PLAIN: usize = 16;
/// Over-aligned classes (128 bytes to 4 kB), then the others (272 bytes to 4 kB).
const WIDE_CLASSES: usize = MAX_SIZE / WIDE;
const CLASSES: usize = WIDE_CLASSES + (MAX_SIZE - GLIBC_FAST) / PLAIN;
/// Most bytes of one class's blocks a thread keeps. What the lists hold is memory no
/// connection uses; a class's blocks absorb the frees and allocations that alternate as
/// connections and streams end and begin (with 16 kB, 56 views of 288 bytes: a burst of
/// HTTP/2 streams freed and asked for hundreds, and five in six still went to glibc's slow
/// path).
const MAX_BYTES: usize = 128 * 1024;
/// glibc's per-thread cache serves blocks up to 1,024 bytes quickly, but only 7 of a size:
/// past that, frees and allocations take its slow path. Blocks up to this size are left to it
/// (many small ones of many sizes: its cache is where they belong); larger ones are kept
/// here, where a class keeps up to `MAX_BYTES` (a burst of HTTP/2 streams ends and begins a
/// hundred views of 288 and 384 bytes at once).
const GLIBC_FAST: usize = 256;

/// The allocator (see the module doc).
pub struct Allocator;

/// The class of blocks of this layout, if cached here.
fn class_of(l: Layout) -> Option<usize> {
    let (size, align) = (l.size(), l.align());
    if size == 0 || size > MAX_SIZE || align > WIDE {
        return None;
    }
    if align > PLAIN {
        Some((size - 1) / WIDE)
    } else if size > GLIBC_FAST {
        Some(WIDE_CLASSES + (size - GLIBC_FAST - 1) / PLAIN)
    } else {
        None
    }
}

/// The layout every block of class `c` is allocated with.
fn class_layout(c: usize) -> Layout {
    let (size, align) = match c.checked_sub(WIDE_CLASSES) {
        None => ((c + 1) * WIDE, WIDE),
        Some(k) => (GLIBC_FAST + (k + 1) * PLAIN, PLAIN),
    };
    // SAFETY: both alignments are powers of two and the size (<= 4096) is far from overflowing.
    unsafe { Layout::from_size_align_unchecked(size, align) }
}

/// Most blocks of class `c` a thread keeps in its list (an over-aligned class: a batch, and
/// a full batch aside, see [`keep_wide`]).
fn max_blocks(c: usize) -> u32 {
    (MAX_BYTES / class_layout(c).size()).max(1) as u32
}

/// The size of the regions over-aligned blocks are carved from.
const REGION: usize = 64 * 1024;

/// One class's free blocks in one thread.
struct FreeList {
    head: Cell<*mut u8>,
    len: Cell<u32>,
    /// Over-aligned classes: a full batch (`max_blocks` blocks, linked), or null.
    spare: Cell<*mut u8>,
}

/// Every thread's surplus of over-aligned blocks, by class: a stack of full batches, each
/// linked through its first block's second word. A thread that frees more such blocks than it
/// allocates (a server connection made by one worker and closed by another) gives its batches
/// here, and one that allocates more takes them, a lock per batch.
static POOL: [std::sync::Mutex<usize>; WIDE_CLASSES] =
    [const { std::sync::Mutex::new(0) }; WIDE_CLASSES];

fn pool(c: usize) -> std::sync::MutexGuard<'static, usize> {
    POOL[c].lock().unwrap_or_else(|e| e.into_inner())
}

thread_local! {
    // No destructor (nothing here needs drop), so the lists are usable until the thread ends;
    // blocks still cached then are not returned (MAX_BYTES per class at most).
    static FREE: [FreeList; CLASSES] = const {
        [const {
            FreeList {
                head: Cell::new(ptr::null_mut()),
                len: Cell::new(0),
                spare: Cell::new(ptr::null_mut()),
            }
        }; CLASSES]
    };
    /// What is left of the thread's current region: its next free address and its end.
    static CARVE: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// A new over-aligned block of `size` bytes (a multiple of 128) from the thread's region, a
/// new region when it has not that much left (the rest of the old one, less than one block,
/// is not used), or null.
fn carve(size: usize) -> *mut u8 {
    CARVE
        .try_with(|c| {
            let (mut next, mut end) = c.get();
            if end - next < size {
                // SAFETY: a non-zero size; 128 is a power of two.
                let base = unsafe { System.alloc(Layout::from_size_align_unchecked(REGION, WIDE)) };
                if base.is_null() {
                    return ptr::null_mut();
                }
                (next, end) = (base as usize, base as usize + REGION);
            }
            c.set((next + size, end));
            next as *mut u8
        })
        .unwrap_or(ptr::null_mut())
}

/// A cached block of class `c`, or null.
fn take(c: usize) -> *mut u8 {
    FREE.try_with(|lists| {
        let list = &lists[c];
        if list.head.get().is_null() && c < WIDE_CLASSES {
            // Empty: the batch aside, else one from the pool.
            let mut batch = list.spare.replace(ptr::null_mut());
            if batch.is_null() {
                let mut top = pool(c);
                batch = *top as *mut u8;
                if !batch.is_null() {
                    // SAFETY: a pooled batch's first block holds the next batch in its second word.
                    *top = unsafe { batch.cast::<usize>().add(1).read() };
                }
            }
            if !batch.is_null() {
                list.head.set(batch);
                list.len.set(max_blocks(c));
            }
        }
        let p = list.head.get();
        if !p.is_null() {
            // SAFETY: a listed block is over 128 bytes, aligned on 16 at least, and holds the next one.
            list.head.set(unsafe { p.cast::<*mut u8>().read() });
            list.len.set(list.len.get() - 1);
        }
        p
    })
    .unwrap_or(ptr::null_mut())
}

/// Keeps block `p` of class `c` if the thread's list has room (an over-aligned one: always,
/// the list's full batch set aside, or given to the pool when one is aside already).
fn keep(c: usize, p: *mut u8) -> bool {
    FREE.try_with(|lists| {
        let list = &lists[c];
        if list.len.get() >= max_blocks(c) {
            if c >= WIDE_CLASSES {
                return false;
            }
            let full = list.head.replace(ptr::null_mut());
            list.len.set(0);
            let old = list.spare.replace(full);
            if !old.is_null() {
                let mut top = pool(c);
                // SAFETY: `old` is a free block of over 128 bytes: its second word links the batches.
                unsafe { old.cast::<usize>().add(1).write(*top) };
                *top = old as usize;
            }
        }
        // SAFETY: `p` is a block of this class no longer in use: aligned, over 128 bytes.
        unsafe { p.cast::<*mut u8>().write(list.head.get()) };
        list.head.set(p);
        list.len.set(list.len.get() + 1);
        true
    })
    .unwrap_or(false)
}

// SAFETY: every block handed out is at least `layout.size()` bytes and aligned on at least
// `layout.align()` (class blocks: a multiple of 128 bytes >= the size, aligned on 128 when
// more than 16 is asked (carved at multiples of 128 from regions aligned on 128), else on
// glibc's 16); a block is cached only once freed, and `dealloc` finds the same class as `alloc`
// from the same layout, as the `GlobalAlloc` contract guarantees it.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match class_of(layout) {
            Some(c) => {
                let p = take(c);
                if !p.is_null() {
                    p
                } else if c < WIDE_CLASSES {
                    let p = carve(class_layout(c).size());
                    if p.is_null() {
                        // (The thread is ending: a block of its own, never freed either.)
                        // SAFETY: a non-zero size.
                        unsafe { System.alloc(class_layout(c)) }
                    } else {
                        p
                    }
                } else {
                    // SAFETY: a non-zero size.
                    unsafe { System.alloc(class_layout(c)) }
                }
            }
            // SAFETY: forwarded as received.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match class_of(layout) {
            Some(_) => {
                // SAFETY: as `alloc`; the block is then zeroed over the requested size.
                let p = unsafe { self.alloc(layout) };
                if !p.is_null() {
                    unsafe { ptr::write_bytes(p, 0, layout.size()) };
                }
                p
            }
            // SAFETY: forwarded as received.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        match class_of(layout) {
            // An over-aligned block may be part of a region: it is never given back (and is
            // lost only when the thread is ending).
            Some(c) => {
                if !keep(c, p) && c >= WIDE_CLASSES {
                    // SAFETY: allocated by `System` with this class's layout.
                    unsafe { System.dealloc(p, class_layout(c)) }
                }
            }
            // SAFETY: allocated by `System` with this very layout.
            None => unsafe { System.dealloc(p, layout) },
        }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `new_size`, rounded to `layout.align()`, fits an isize.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (class_of(layout), class_of(new_layout)) {
            // SAFETY: both from and to `System` with these layouts.
            (None, None) => unsafe { System.realloc(p, layout, new_size) },
            // The block is large enough already.
            (Some(a), Some(b)) if a == b => p,
            _ => {
                // SAFETY: a new block, then the old one's bytes that fit, then the old one freed.
                let q = unsafe { self.alloc(new_layout) };
                if !q.is_null() {
                    unsafe {
                        ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                        self.dealloc(p, layout);
                    }
                }
                q
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_cover_the_slow_blocks_and_leave_the_rest_to_glibc() {
        let l = |s, a| Layout::from_size_align(s, a).expect("a layout");
        assert_eq!(class_of(l(256, 128)), Some(1), "a Tokio registration");
        assert_eq!(class_of(l(384, 128)), Some(2), "a Tokio task cell");
        let session = class_of(l(3224, 8)).expect("an HTTP session's state is cached");
        assert_eq!(class_layout(session), l(3232, 16), "as glibc would size it");
        assert_eq!(class_of(l(4096, 16)), Some(CLASSES - 1));
        assert_eq!(class_of(l(4096, 64)), Some(WIDE_CLASSES - 1));
        assert_eq!(class_of(l(100, 8)), None, "glibc's own cache serves it");
        assert_eq!(class_of(l(256, 16)), None);
        assert_eq!(class_of(l(257, 8)), Some(WIDE_CLASSES));
        assert_eq!(class_layout(WIDE_CLASSES), l(272, 16));
        let view = class_of(l(288, 8)).expect("an HTTP/2 stream's view is cached");
        assert_eq!(class_layout(view), l(288, 16));
        assert_eq!(class_layout(2), l(384, 128));
        // Every class's blocks hold every size that maps to it.
        for size in 1..=MAX_SIZE {
            for align in [8, 16, 32, 128] {
                if let Some(c) = class_of(l(size, align)) {
                    let b = class_layout(c);
                    assert!(b.size() >= size && b.align() >= align, "{size} {align}");
                }
            }
        }
        assert_eq!(class_of(l(4097, 8)), None, "too large to keep");
        assert_eq!(class_of(l(64, 256)), None, "aligned beyond the classes");
    }

    #[test]
    fn blocks_are_reused_within_a_thread_and_keep_their_contents_through_realloc() {
        let a = Allocator;
        let l = Layout::from_size_align(3000, 8).expect("a layout");
        unsafe {
            let p = a.alloc(l);
            assert!(!p.is_null() && (p as usize).is_multiple_of(PLAIN));
            a.dealloc(p, l);
            let q = a.alloc(l);
            assert_eq!(p, q, "the freed block comes back first");
            q.write_bytes(7, 3000);
            // Growing within the class keeps the block; beyond it moves the bytes.
            let r = a.realloc(q, l, 3008);
            assert_eq!(r, q);
            let big = a.realloc(r, Layout::from_size_align(3008, 8).expect("l"), 9000);
            assert!(!big.is_null());
            assert!((0..3000).all(|i| *big.add(i) == 7), "contents kept");
            a.dealloc(big, Layout::from_size_align(9000, 8).expect("l"));
            // Zeroed blocks are zero even when they were used before.
            let z = Layout::from_size_align(384, 128).expect("l");
            let x = a.alloc(z);
            x.write_bytes(9, 384);
            a.dealloc(x, z);
            let y = a.alloc_zeroed(z);
            assert_eq!(x, y);
            assert!((y as usize).is_multiple_of(128));
            assert!((0..384).all(|i| *y.add(i) == 0));
            a.dealloc(y, z);
        }
    }

    #[test]
    fn over_aligned_blocks_come_one_after_the_other_from_a_region_and_are_all_kept() {
        std::thread::spawn(|| {
            let a = Allocator;
            let (task, reg) = (
                Layout::from_size_align(384, 128).expect("a task cell"),
                Layout::from_size_align(256, 128).expect("a registration"),
            );
            let blocks: Vec<(*mut u8, Layout)> = (0..400)
                .map(|i| if i % 2 == 0 { task } else { reg })
                .map(|l| (unsafe { a.alloc(l) }, l))
                .collect();
            assert!(blocks.iter().all(|&(p, _)| (p as usize).is_multiple_of(128)));
            // Side by side, no hole between, but where a region ends (128 kB: two or three).
            let jumps =
                blocks.windows(2).filter(|w| w[1].0 as usize != w[0].0 as usize + w[0].1.size());
            assert!(jumps.count() <= 3);
            for &(p, l) in &blocks {
                unsafe { a.dealloc(p, l) };
            }
            let kept = |l| FREE.with(|f| f[class_of(l).expect("a class")].len.get());
            assert_eq!((kept(task), kept(reg)), (200, 200), "every freed block kept");
            // And handed out again, most recently freed first.
            assert_eq!(unsafe { a.alloc(task) }, blocks[398].0);
        })
        .join()
        .expect("the thread");
    }

    #[test]
    fn a_thread_that_frees_more_than_it_allocates_gives_its_surplus_to_the_others() {
        // A class no other test uses (3,968 bytes, aligned on 128: batches of 33).
        let l = Layout::from_size_align(3968, 128).expect("a layout");
        let c = class_of(l).expect("a class");
        let n = 3 * max_blocks(c) as usize;
        let made: Vec<usize> = std::thread::spawn(move || {
            (0..n).map(|_| unsafe { Allocator.alloc(l) } as usize).collect()
        })
        .join()
        .expect("the allocating thread");
        std::thread::spawn(move || {
            for &p in &made {
                unsafe { Allocator.dealloc(p as *mut u8, l) };
            }
            // A batch in its list, one aside, the first given to the pool.
            assert_eq!(FREE.with(|f| f[c].len.get()), max_blocks(c));
            assert_ne!(*pool(c), 0);
            let first = made[..max_blocks(c) as usize].to_vec();
            std::thread::spawn(move || {
                let p = unsafe { Allocator.alloc(l) } as usize;
                assert!(first.contains(&p), "a block of the pooled batch");
                assert_eq!(*pool(c), 0);
                assert_eq!(FREE.with(|f| f[c].len.get()), max_blocks(c) - 1);
            })
            .join()
            .expect("the third thread");
        })
        .join()
        .expect("the freeing thread");
    }

    #[test]
    fn a_thread_keeps_a_bounded_number_of_blocks() {
        std::thread::spawn(|| {
            let a = Allocator;
            let l = Layout::from_size_align(2048, 8).expect("a layout");
            let blocks: Vec<*mut u8> = (0..100).map(|_| unsafe { a.alloc(l) }).collect();
            for &p in &blocks {
                unsafe { a.dealloc(p, l) };
            }
            let c = class_of(l).expect("cached class");
            assert_eq!(FREE.with(|f| f[c].len.get()), max_blocks(c));
            assert_eq!(max_blocks(c), 64, "128 kB of 2,048-byte blocks");
        })
        .join()
        .expect("the thread");
    }
}
