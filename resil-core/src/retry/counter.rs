//! A counter for the success path: one cell per thread, so that counting a
//! call is a plain load and store instead of a locked read-modify-write.
//!
//! Resilience4j counts with `LongAdder`, which stripes a counter over cells to
//! spread contention but still pays a compare-and-swap per increment. Here
//! every live thread that counts owns a *slot* (a small integer, process-wide),
//! and every counter has one cache-line-sized cell per slot. Only the owner of
//! a slot ever writes its cells, so `load`, add one, `store` cannot lose an
//! increment; readers sum the cells. A thread returns its slot when it exits
//! (a thread-local destructor), and the next thread to take it continues the
//! same cells: the pool's mutex orders the last store of the one before the
//! first load of the other. Threads beyond the number of cells (or counting
//! while their thread-locals are torn down) share one atomic, counted with
//! `fetch_add`.
//!
//! The atomics and the mutex are std's, not `crate::sync`'s: the hand-over
//! relies on thread-locals and thread exit, which loom does not model; the
//! tests count every increment across more short-lived threads than there
//! are slots instead (`counts_from_many_short_lived_threads` here and
//! `concurrent_calls_count_every_outcome` in `tests/retry.rs`).

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// `SLOT` before the thread asked for one.
const UNCLAIMED: usize = usize::MAX;
/// `SLOT` of a thread that has no slot (none left, or exiting): it counts in `shared`.
const NO_SLOT: usize = usize::MAX - 1;

thread_local! {
    /// This thread's slot, read on every increment (const-initialized and
    /// without a destructor, so reading it is one thread-pointer-relative load).
    static SLOT: Cell<usize> = const { Cell::new(UNCLAIMED) };
    /// Owns the slot and gives it back when the thread exits.
    static OWNER: SlotOwner = const { SlotOwner(Cell::new(None)) };
}

struct SlotOwner(Cell<Option<usize>>);

impl Drop for SlotOwner {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            // Stop writing the slot's cells before anyone else can take it.
            SLOT.with(|s| s.set(NO_SLOT));
            pool().free.push(Reverse(slot));
        }
    }
}

struct Pool {
    /// Returned slots, lowest first, so that slot numbers stay small.
    free: BinaryHeap<Reverse<usize>>,
    next: usize,
}

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    static POOL: Mutex<Pool> = Mutex::new(Pool {
        free: BinaryHeap::new(),
        next: 0,
    });
    crate::sync::std_lock::lock(&POOL)
}

/// Cells per counter: twice the parallelism, between 8 and 256.
fn slots() -> usize {
    static SLOTS: OnceLock<usize> = OnceLock::new();
    *SLOTS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(8, |n| n.get().saturating_mul(2))
            .clamp(8, 256)
    })
}

/// Claims a slot for this thread (on its first increment).
#[cold]
fn claim() -> usize {
    let claimed = OWNER.try_with(|owner| {
        let mut pool = pool();
        let slot = match pool.free.pop() {
            Some(Reverse(slot)) => slot,
            None if pool.next < slots() => {
                pool.next += 1;
                pool.next - 1
            }
            None => return NO_SLOT,
        };
        owner.0.set(Some(slot));
        slot
    });
    let slot = claimed.unwrap_or(NO_SLOT);
    SLOT.with(|s| s.set(slot));
    slot
}

#[repr(align(64))]
#[derive(Default)]
struct Padded(AtomicU64);

/// A counter incremented without locked instructions (see the module docs).
pub(crate) struct StripedCounter {
    cells: Box<[Padded]>,
    shared: AtomicU64,
}

impl StripedCounter {
    pub(crate) fn new() -> Self {
        StripedCounter {
            cells: (0..slots()).map(|_| Padded::default()).collect(),
            shared: AtomicU64::new(0),
        }
    }

    /// Adds one.
    #[inline]
    pub(crate) fn increment(&self) {
        // `UNCLAIMED` and `NO_SLOT` are out of range: one bounds check covers them.
        match self.cells.get(SLOT.with(Cell::get)) {
            Some(cell) => Self::bump(cell),
            None => self.increment_slow(),
        }
    }

    #[inline]
    fn bump(cell: &Padded) {
        // Only this thread writes this cell while it holds the slot.
        let n = cell.0.load(Ordering::Relaxed);
        cell.0.store(n.wrapping_add(1), Ordering::Relaxed);
    }

    #[cold]
    fn increment_slow(&self) {
        let slot = match SLOT.with(Cell::get) {
            UNCLAIMED => claim(),
            slot => slot,
        };
        match self.cells.get(slot) {
            Some(cell) => Self::bump(cell),
            None => {
                self.shared.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The count so far (increments racing with the read may be missed).
    pub(crate) fn sum(&self) -> u64 {
        self.cells
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .fold(self.shared.load(Ordering::Relaxed), u64::wrapping_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_short_lived_threads() {
        let counter = StripedCounter::new();
        // More threads alive at once than there are slots, so that some count
        // in `shared`; then a second round takes the slots handed back.
        let threads = slots() * 2 + 3;
        let round = |counter: &StripedCounter| {
            let barrier = std::sync::Barrier::new(threads);
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| {
                        barrier.wait();
                        for _ in 0..1000 {
                            counter.increment();
                        }
                        barrier.wait();
                    });
                }
            });
        };
        round(&counter);
        let per_round = threads as u64 * 1000;
        assert_eq!(counter.sum(), per_round);
        let beyond_slots = (threads - slots()) as u64 * 1000;
        assert!(counter.shared.load(Ordering::Relaxed) >= beyond_slots);
        round(&counter);
        assert_eq!(counter.sum(), 2 * per_round);
    }
}
