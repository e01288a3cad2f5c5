//! The bulkhead's semaphore: one atomic word for the uncontended path, a FIFO
//! of wakers behind a mutex for callers that wait.
//!
//! The word packs, from the low bits up:
//!
//! | bits | meaning |
//! | --- | --- |
//! | 0..32 | available permits plus `2^31` (signed: a shrink below the calls in flight makes it negative) |
//! | 32 | set when waiters may be overtaken (unfair mode) |
//! | 33..64 | waiters in the queue |
//!
//! Keeping the waiter count in the same word as the permits is what lets the
//! fast paths stay a single compare-and-swap (acquire) and a single `fetch_add`
//! (release): a fair acquire sees queued waiters in the value it swaps, and a
//! release learns from the value it replaced whether someone must be woken.
//! The bias keeps the signed count from borrowing from or carrying into the
//! bits above it, since it always stays within `±(2^31 - 1)`.
//!
//! Fair mode hands a released permit to the head of the queue under the lock
//! (the waiter finds it granted), so nobody can take a permit while older
//! waiters wait, like Java's fair `Semaphore` and tokio's. Unfair mode puts
//! the permit back in the pool and wakes the head waiter, which competes for
//! it with any caller that arrives meanwhile, like Java's default semaphore.

use std::collections::VecDeque;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::sync::{AtomicU32, AtomicU64, Mutex, Ordering, lock};

const AVAILABLE: u64 = 0xFFFF_FFFF;
const BIAS: u64 = 1 << 31;
const UNFAIR: u64 = 1 << 32;
const WAITER: u64 = 1 << 33;

/// The largest number of permits (Resilience4j's `int`); it keeps the
/// biased count within its 32 bits.
pub(crate) const MAX_PERMITS: u32 = i32::MAX as u32;

/// A waiter's state; written under the queue lock.
const QUEUED: u32 = 0;
/// Unfair mode: woken to compete for a free permit.
const NOTIFIED: u32 = 1;
/// Fair mode: a permit was handed over; the waiter owns it.
const GRANTED: u32 = 2;

#[inline]
fn available(word: u64) -> i64 {
    (word & AVAILABLE) as i64 - BIAS as i64
}

#[inline]
fn waiters(word: u64) -> u64 {
    word >> 33
}

pub(crate) struct Semaphore {
    word: AtomicU64,
    queue: Mutex<Queue>,
}

struct Queue {
    entries: VecDeque<Entry>,
    /// Entries in the NOTIFIED state (unfair mode).
    notified: u64,
}

struct Entry {
    node: Arc<Node>,
    waker: Option<Waker>,
}

struct Node {
    state: AtomicU32,
}

impl Semaphore {
    pub(crate) fn new(permits: u32, fair: bool) -> Self {
        let permits = u64::from(permits.min(MAX_PERMITS));
        Semaphore {
            word: AtomicU64::new(BIAS + permits + if fair { 0 } else { UNFAIR }),
            queue: Mutex::new(Queue {
                entries: VecDeque::new(),
                notified: 0,
            }),
        }
    }

    /// Takes a permit if one is free and, in fair mode, nobody waits.
    #[inline]
    pub(crate) fn try_acquire(&self) -> bool {
        let mut w = self.word.load(Ordering::Relaxed);
        loop {
            if (w & AVAILABLE) <= BIAS || (w & UNFAIR == 0 && w >= WAITER) {
                return false;
            }
            match self
                .word
                .compare_exchange_weak(w, w - 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(actual) => w = actual,
            }
        }
    }

    /// Gives a permit back; wakes a waiter if there are any.
    #[inline]
    pub(crate) fn release(&self) {
        let prev = self.word.fetch_add(1, Ordering::Release);
        if prev >= WAITER {
            self.wake_waiters();
        }
    }

    /// [`Semaphore::release`], returning the permits that were free before
    /// (an adaptive limit's count of the calls in flight).
    #[inline]
    pub(crate) fn release_counted(&self) -> i64 {
        let prev = self.word.fetch_add(1, Ordering::Release);
        if prev >= WAITER {
            self.wake_waiters();
        }
        available(prev)
    }

    /// Adds `n` permits (a larger limit).
    pub(crate) fn add_permits(&self, n: u32) {
        let prev = self.word.fetch_add(u64::from(n), Ordering::AcqRel);
        if prev >= WAITER {
            self.wake_waiters();
        }
    }

    /// Takes a permit whether one is free or not: the count may go negative,
    /// and the permit is given back with [`Semaphore::release`] as any other
    /// (shadow mode's calls beyond the limit).
    pub(crate) fn force_acquire(&self) {
        self.word.fetch_sub(1, Ordering::Acquire);
    }

    /// Removes `n` permits (a smaller limit). Permits in use beyond the new
    /// limit leave the count negative and are retired as they come back.
    pub(crate) fn forget_permits(&self, n: u32) {
        self.word.fetch_sub(u64::from(n), Ordering::AcqRel);
    }

    /// Switches between fair and unfair handling of waiters.
    pub(crate) fn set_fair(&self, fair: bool) {
        if fair {
            self.word.fetch_and(!UNFAIR, Ordering::AcqRel);
        } else {
            self.word.fetch_or(UNFAIR, Ordering::AcqRel);
        }
        self.wake_if_needed();
    }

    /// Free permits; negative while calls in flight exceed a lowered limit.
    pub(crate) fn available(&self) -> i64 {
        available(self.word.load(Ordering::Acquire))
    }

    /// Callers queued for a permit.
    pub(crate) fn waiting(&self) -> u32 {
        u32::try_from(waiters(self.word.load(Ordering::Acquire))).unwrap_or(u32::MAX)
    }

    /// A future that waits in the queue for a permit (no deadline: the caller
    /// races it against one and calls [`Acquire::cancel`]).
    pub(crate) fn acquire(&self) -> Acquire<&Semaphore> {
        Acquire::new(self)
    }

    #[inline]
    fn wake_if_needed(&self) {
        let w = self.word.load(Ordering::Acquire);
        if available(w) > 0 && w >= WAITER {
            self.wake_waiters();
        }
    }

    /// Hands free permits to waiters (fair) or wakes waiters to compete for
    /// them (unfair); wakers run outside the lock.
    #[cold]
    fn wake_waiters(&self) {
        loop {
            let mut wakers = WakeList::new();
            let more = {
                let mut q = lock(&self.queue);
                self.wake_locked(&mut q, &mut wakers)
            };
            wakers.wake_all();
            if !more {
                return;
            }
        }
    }

    /// Returns `true` when `wakers` filled up before the work was done.
    fn wake_locked(&self, q: &mut Queue, wakers: &mut WakeList) -> bool {
        let mut w = self.word.load(Ordering::Acquire);
        loop {
            if wakers.is_full() {
                return true;
            }
            let free = available(w);
            // The waiter count changes only under this lock, so it equals the
            // queue's length here.
            if free <= 0 || q.entries.is_empty() {
                return false;
            }
            if w & UNFAIR == 0 {
                if let Err(actual) = self.word.compare_exchange_weak(
                    w,
                    w - 1 - WAITER,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    w = actual;
                    continue;
                }
                if let Some(mut entry) = q.entries.pop_front() {
                    if entry.node.state.load(Ordering::Relaxed) == NOTIFIED {
                        q.notified -= 1;
                    }
                    entry.node.state.store(GRANTED, Ordering::Release);
                    wakers.push(entry.waker.take());
                }
                w = self.word.load(Ordering::Acquire);
            } else {
                if q.notified >= free as u64 {
                    return false;
                }
                let Some(entry) = q
                    .entries
                    .iter_mut()
                    .find(|e| e.node.state.load(Ordering::Relaxed) == QUEUED)
                else {
                    return false;
                };
                entry.node.state.store(NOTIFIED, Ordering::Relaxed);
                q.notified += 1;
                wakers.push(entry.waker.take());
            }
        }
    }

    /// First poll: take a free permit as `try_acquire` would, else join the
    /// queue. Returns the queued node, or `None` when a permit was taken.
    fn take_or_enqueue(&self, q: &mut Queue, waker: &Waker) -> Option<Arc<Node>> {
        let mut w = self.word.load(Ordering::Acquire);
        loop {
            let free = (w & AVAILABLE) > BIAS && (w & UNFAIR != 0 || w < WAITER);
            let next = if free { w - 1 } else { w + WAITER };
            match self
                .word
                .compare_exchange_weak(w, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if free => return None,
                Ok(_) => break,
                Err(actual) => w = actual,
            }
        }
        let node = Arc::new(Node {
            state: AtomicU32::new(QUEUED),
        });
        q.entries.push_back(Entry {
            node: node.clone(),
            waker: Some(waker.clone()),
        });
        Some(node)
    }

    /// A later poll of a queued waiter. Returns `true` once it holds a permit.
    fn poll_queued(&self, q: &mut Queue, node: &Arc<Node>, waker: &Waker) -> bool {
        let state = node.state.load(Ordering::Relaxed);
        if state == GRANTED {
            return true;
        }
        let mut w = self.word.load(Ordering::Acquire);
        // Unfair: compete for a free permit like any newcomer.
        while w & UNFAIR != 0 && (w & AVAILABLE) > BIAS {
            match self.word.compare_exchange_weak(
                w,
                w - 1 - WAITER,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    let removed = q.remove(node);
                    debug_assert!(removed, "a waiter that is not granted is queued");
                    if state == NOTIFIED {
                        q.notified -= 1;
                    }
                    return true;
                }
                Err(actual) => w = actual,
            }
        }
        if state == NOTIFIED {
            node.state.store(QUEUED, Ordering::Relaxed);
            q.notified -= 1;
        }
        if let Some(entry) = q.entries.iter_mut().find(|e| Arc::ptr_eq(&e.node, node)) {
            match &entry.waker {
                Some(current) if current.will_wake(waker) => {}
                _ => entry.waker = Some(waker.clone()),
            }
        }
        false
    }

    /// Leaves the queue. Returns `true` if a permit was granted meanwhile: the
    /// caller then owns it.
    fn cancel(&self, node: &Arc<Node>) -> bool {
        {
            let mut q = lock(&self.queue);
            let state = node.state.load(Ordering::Relaxed);
            if state == GRANTED {
                return true;
            }
            // Not granted, so still queued and counted.
            if q.remove(node) {
                self.word.fetch_sub(WAITER, Ordering::AcqRel);
                if state == NOTIFIED {
                    q.notified -= 1;
                }
            }
        }
        // A notified waiter that leaves passes its turn on.
        self.wake_if_needed();
        false
    }
}

impl Queue {
    fn remove(&mut self, node: &Arc<Node>) -> bool {
        // Waiters mostly leave from the front (the oldest time out first).
        match self.entries.iter().position(|e| Arc::ptr_eq(&e.node, node)) {
            Some(i) => self.entries.remove(i).is_some(),
            None => false,
        }
    }
}

/// Waits in the semaphore's queue for a permit; dropping it leaves the queue
/// (and gives back a permit granted meanwhile).
///
/// It holds the semaphore by reference, or through whatever owns it (a
/// bulkhead's `Arc`, for a future that must not borrow the bulkhead).
pub(crate) struct Acquire<S: Deref<Target = Semaphore>> {
    sem: S,
    node: Option<Arc<Node>>,
    done: bool,
}

impl<S: Deref<Target = Semaphore>> Acquire<S> {
    /// A wait in `sem`'s queue (see [`Semaphore::acquire`]).
    pub(crate) fn new(sem: S) -> Self {
        Acquire {
            sem,
            node: None,
            done: false,
        }
    }

    /// Stops waiting. Returns `true` if the permit was granted before the
    /// waiter could leave the queue: the caller then owns it.
    pub(crate) fn cancel(&mut self) -> bool {
        if self.done {
            return false;
        }
        self.done = true;
        match self.node.take() {
            Some(node) => self.sem.cancel(&node),
            None => false,
        }
    }
}

// Nothing in a wait is pinned: the queue holds its node by `Arc`.
impl<S: Deref<Target = Semaphore>> Unpin for Acquire<S> {}

impl<S: Deref<Target = Semaphore>> Future for Acquire<S> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(());
        }
        let sem: &Semaphore = &this.sem;
        if let Some(node) = &this.node {
            // Granted nodes have left the queue: no lock needed to see it.
            if node.state.load(Ordering::Acquire) == GRANTED {
                this.done = true;
                return Poll::Ready(());
            }
        }
        let ready = {
            let mut q = lock(&sem.queue);
            match &this.node {
                None => match sem.take_or_enqueue(&mut q, cx.waker()) {
                    None => true,
                    Some(node) => {
                        this.node = Some(node);
                        false
                    }
                },
                Some(node) => sem.poll_queued(&mut q, node, cx.waker()),
            }
        };
        // Fair mode, head waiter that went back to QUEUED, or an unfair
        // winner that leaves permits behind: let the queue move on.
        sem.wake_if_needed();
        if ready {
            this.done = true;
            this.node = None;
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl<S: Deref<Target = Semaphore>> Drop for Acquire<S> {
    fn drop(&mut self) {
        if self.cancel() {
            self.sem.release();
        }
    }
}

/// Wakers collected under the lock and woken after it is released, so that a
/// waker that polls inline cannot deadlock on the queue.
struct WakeList {
    wakers: [Option<Waker>; 16],
    len: usize,
}

impl WakeList {
    fn new() -> Self {
        WakeList {
            wakers: [const { None }; 16],
            len: 0,
        }
    }

    fn is_full(&self) -> bool {
        self.len == self.wakers.len()
    }

    fn push(&mut self, waker: Option<Waker>) {
        if let Some(waker) = waker {
            self.wakers[self.len] = Some(waker);
            self.len += 1;
        }
    }

    fn wake_all(&mut self) {
        for waker in self.wakers[..self.len].iter_mut() {
            if let Some(waker) = waker.take() {
                waker.wake();
            }
        }
        self.len = 0;
    }
}

#[cfg(all(test, not(resil_loom)))]
mod tests {
    use super::*;
    use std::task::Waker;

    fn poll(acquire: &mut Acquire<&Semaphore>) -> Poll<()> {
        Pin::new(acquire).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn the_bias_keeps_negative_counts_apart_from_the_flags() {
        let sem = Semaphore::new(2, true);
        assert!(sem.try_acquire());
        assert!(sem.try_acquire());
        sem.forget_permits(2);
        assert_eq!(sem.available(), -2);
        assert_eq!(sem.waiting(), 0);
        assert!(!sem.try_acquire());
        sem.release();
        sem.release();
        assert_eq!(sem.available(), 0);
        sem.add_permits(1);
        assert!(sem.try_acquire());
    }

    #[test]
    fn the_extremes_fit() {
        let sem = Semaphore::new(MAX_PERMITS, false);
        assert_eq!(sem.available(), i64::from(MAX_PERMITS));
        assert!(sem.try_acquire());
        sem.forget_permits(MAX_PERMITS);
        assert_eq!(sem.available(), -1);
        sem.release();
        assert_eq!(sem.available(), 0);
        let mut waiter = sem.acquire();
        assert!(poll(&mut waiter).is_pending());
        assert_eq!(sem.waiting(), 1);
        sem.add_permits(MAX_PERMITS);
        assert!(poll(&mut waiter).is_ready());
        assert_eq!(sem.available(), i64::from(MAX_PERMITS) - 1);
    }

    #[test]
    fn fair_release_grants_the_head_and_newcomers_queue_behind() {
        let sem = Semaphore::new(1, true);
        assert!(sem.try_acquire());
        let mut a = sem.acquire();
        let mut b = sem.acquire();
        assert!(poll(&mut a).is_pending());
        assert!(poll(&mut b).is_pending());
        sem.release();
        assert_eq!(sem.available(), 0);
        assert_eq!(sem.waiting(), 1);
        assert!(!sem.try_acquire());
        assert!(poll(&mut b).is_pending());
        assert!(poll(&mut a).is_ready());
        drop(a); // completed: dropping it gives nothing back
        assert_eq!(sem.available(), 0);
        sem.release();
        assert!(poll(&mut b).is_ready());
        sem.release();
        assert_eq!((sem.available(), sem.waiting()), (1, 0));
    }

    #[test]
    fn a_granted_waiter_that_leaves_passes_the_permit_on() {
        let sem = Semaphore::new(1, true);
        assert!(sem.try_acquire());
        let mut a = sem.acquire();
        let mut b = sem.acquire();
        assert!(poll(&mut a).is_pending());
        assert!(poll(&mut b).is_pending());
        sem.release(); // granted to `a`, which never looks
        drop(a);
        assert!(poll(&mut b).is_ready());
        assert_eq!((sem.available(), sem.waiting()), (0, 0));
    }

    #[test]
    fn unfair_waiters_compete_and_a_notified_leaver_passes_its_turn() {
        let sem = Semaphore::new(1, false);
        assert!(sem.try_acquire());
        let mut a = sem.acquire();
        let mut b = sem.acquire();
        assert!(poll(&mut a).is_pending());
        assert!(poll(&mut b).is_pending());
        sem.release(); // notifies `a`; the permit stays in the pool
        assert_eq!(sem.available(), 1);
        drop(a); // passes the notification to `b`
        assert!(poll(&mut b).is_ready());
        assert_eq!((sem.available(), sem.waiting()), (0, 0));
        sem.release();
        assert_eq!(sem.available(), 1);
    }
}
