//! Test support for resil: a global allocator that counts the allocations of
//! the current thread, so that "this path allocates nothing" is asserted
//! deterministically while other tests run in parallel.
//!
//! ```
//! #[global_allocator]
//! static ALLOC: resil_testkit::CountingAlloc = resil_testkit::CountingAlloc;
//!
//! fn main() {
//!     let (v, n) = resil_testkit::allocations_during(|| vec![1, 2, 3]);
//!     assert_eq!((v.len(), n), (3, 1));
//!     let (_, n) = resil_testkit::allocations_during(|| v.iter().sum::<i32>());
//!     assert_eq!(n, 0);
//! }
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts allocations and reallocations per thread, then defers to [`System`].
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Bytes allocated minus bytes freed by this thread.
    static LIVE_BYTES: Cell<i64> = const { Cell::new(0) };
}

fn bump() {
    // `try_with`: the allocator may run while this thread's locals are torn down.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

fn bytes(delta: i64) {
    let _ = LIVE_BYTES.try_with(|c| c.set(c.get() + delta));
}

fn size(layout: Layout) -> i64 {
    i64::try_from(layout.size()).unwrap_or(i64::MAX)
}

#[allow(unsafe_code)]
// SAFETY: every method forwards to `System` with the caller's arguments unchanged.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        bytes(size(layout));
        // SAFETY: forwarded contract of `GlobalAlloc::alloc`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        bytes(size(layout));
        // SAFETY: forwarded contract of `GlobalAlloc::alloc_zeroed`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        bytes(-size(layout));
        // SAFETY: forwarded contract of `GlobalAlloc::dealloc`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        bytes(i64::try_from(new_size).unwrap_or(i64::MAX) - size(layout));
        // SAFETY: forwarded contract of `GlobalAlloc::realloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The allocations this thread has made so far.
pub fn allocations() -> u64 {
    ALLOCATIONS.try_with(Cell::get).unwrap_or(0)
}

/// Runs `f` and returns its result with the number of allocations this thread
/// made meanwhile (zero unless `CountingAlloc` is the global allocator).
pub fn allocations_during<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = allocations();
    let r = f();
    (r, allocations() - before)
}

/// Bytes this thread allocated minus those it freed, so far (memory freed
/// by another thread counts there).
pub fn live_bytes() -> i64 {
    LIVE_BYTES.try_with(Cell::get).unwrap_or(0)
}

/// Runs `f` and returns its result with the bytes this thread allocated
/// minus those it freed meanwhile: what `f` left allocated (zero unless
/// `CountingAlloc` is the global allocator).
///
/// ```
/// #[global_allocator]
/// static ALLOC: resil_testkit::CountingAlloc = resil_testkit::CountingAlloc;
///
/// fn main() {
///     let (v, kept) = resil_testkit::bytes_during(|| vec![0_u8; 100]);
///     assert_eq!(kept, 100);
///     let ((), kept) = resil_testkit::bytes_during(|| drop(v));
///     assert_eq!(kept, -100);
/// }
/// ```
pub fn bytes_during<R>(f: impl FnOnce() -> R) -> (R, i64) {
    let before = live_bytes();
    let r = f();
    (r, live_bytes() - before)
}

mod prometheus;
mod redis;
mod redis_cluster;
pub use prometheus::{PrometheusServer, encode, promtool_or_skip, promtool_with_input};
pub use redis::RedisServer;
pub use redis_cluster::{NODE_TIMEOUT, RedisCluster};
