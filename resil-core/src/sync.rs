//! The atomics and locks of the lock-free parts, from `std` or, under
//! `--cfg resil_loom`, from loom so that its models explore every interleaving.
//!
//! The cfg is our own (`resil_loom`), not `loom`: tokio switches its own code on
//! `cfg(loom)`, and we only want to swap ours.

#[cfg(resil_loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(resil_loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(resil_loom)]
#[allow(unused_imports)]
pub(crate) use loom::{hint::spin_loop, sync::atomic::fence};

#[cfg(not(resil_loom))]
#[allow(unused_imports)]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(not(resil_loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};
#[cfg(not(resil_loom))]
#[allow(unused_imports)]
pub(crate) use std::{hint::spin_loop, sync::atomic::fence};

/// Locks `mutex`, ignoring poisoning: every critical section in this crate
/// leaves its data consistent before anything that could panic, so a poisoned
/// lock still guards valid state.
#[inline]
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(not(resil_loom))]
    {
        mutex
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    #[cfg(resil_loom)]
    {
        mutex.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The `std` locks of the parts that loom does not model (clocks, events,
/// registries, the thread pool), taken ignoring poisoning for the same reason
/// as [`lock`]: one helper for every such lock in the crate.
pub(crate) mod std_lock {
    use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

    /// Locks `m`, ignoring poisoning.
    #[inline]
    pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        m.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Read-locks `m`, ignoring poisoning.
    #[inline]
    pub(crate) fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
        m.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Write-locks `m`, ignoring poisoning.
    #[inline]
    pub(crate) fn write<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
        m.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A mutex for critical sections of a few instructions on a hot path (a
/// breaker's window): parking_lot's, which does not track poisoning (std's
/// reads the thread's panic count on every lock and unlock) and spins briefly
/// before parking, so two threads sharing a breaker rarely sleep.
#[cfg(not(resil_loom))]
pub(crate) type ShortMutex<T> = parking_lot::Mutex<T>;
#[cfg(resil_loom)]
pub(crate) type ShortMutex<T> = loom::sync::Mutex<T>;

/// Locks a [`ShortMutex`].
#[inline]
#[cfg(not(resil_loom))]
pub(crate) fn short_lock<T>(mutex: &ShortMutex<T>) -> parking_lot::MutexGuard<'_, T> {
    mutex.lock()
}

/// Locks a [`ShortMutex`].
#[inline]
#[cfg(resil_loom)]
pub(crate) fn short_lock<T>(mutex: &ShortMutex<T>) -> loom::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A lock for a critical section of a few instructions taken on every call
/// (the write of an event into its buffer): with the `spin` feature (a
/// default), one atomic read-modify-write to take it and a plain store to
/// give it back, a thread that finds it held waiting as for a lock bit
/// ([`relax`]: a few spins, then yielding its thread); without it, a
/// [`ShortMutex`], which takes one read-modify-write of each.
#[cfg(all(feature = "spin", not(resil_loom)))]
pub(crate) type SpinLock<T> = spin::mutex::SpinMutex<T>;
#[cfg(any(not(feature = "spin"), resil_loom))]
pub(crate) type SpinLock<T> = ShortMutex<T>;

/// Locks a [`SpinLock`].
#[inline]
#[cfg(all(feature = "spin", not(resil_loom)))]
pub(crate) fn spin_lock<T>(lock: &SpinLock<T>) -> spin::mutex::SpinMutexGuard<'_, T> {
    loop {
        if let Some(guard) = lock.try_lock_weak() {
            return guard;
        }
        wait_unlocked(lock);
    }
}

/// Waits until `lock` looks free, as for a lock bit ([`relax`]).
#[cold]
#[inline(never)]
#[cfg(all(feature = "spin", not(resil_loom)))]
fn wait_unlocked<T>(lock: &SpinLock<T>) {
    let mut spins = 0;
    while lock.is_locked() {
        relax(&mut spins);
    }
}

/// Locks a [`SpinLock`].
#[inline]
#[cfg(any(not(feature = "spin"), resil_loom))]
pub(crate) fn spin_lock<T>(lock: &SpinLock<T>) -> impl std::ops::DerefMut<Target = T> + '_ {
    short_lock(lock)
}

/// Waits a moment for a lock bit that is held for a few instructions: spins a
/// little, then yields the thread (so a holder that was preempted gets to run).
#[inline]
pub(crate) fn relax(spins: &mut u32) {
    #[cfg(resil_loom)]
    {
        let _ = spins;
        loom::thread::yield_now();
    }
    #[cfg(not(resil_loom))]
    {
        if *spins < 64 {
            *spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}
