//! A global allocator that counts allocations, for the tests that show a loop does not
//! allocate per packet. The count is process-wide: a test binary using it holds one test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // Const-initialised and without a destructor: reading it never allocates, so the
    // allocator itself may use it.
    static HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn count() {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    HERE.with(|n| n.set(n.get() + 1));
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as for `dealloc` and `alloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The allocations (and reallocations) made while `f` runs, by any thread.
#[allow(dead_code)]
pub fn allocations(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    f();
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

/// The allocations (and reallocations) made by this thread while `f` runs, for work
/// that stays on one thread: the test harness's own thread may allocate meanwhile (it
/// waits for the test on a channel), which the process-wide count would take in.
#[allow(dead_code)]
pub fn allocations_here(f: impl FnOnce()) -> u64 {
    let before = HERE.with(|n| n.get());
    f();
    HERE.with(|n| n.get()) - before
}
