//! The atomics and locks of the lock-free parts, from `std` or, under
//! `--cfg resil_loom`, from loom so that its models explore every interleaving.
//!
//! The cfg is our own (`resil_loom`), not `loom`: tokio switches its own code on
//! `cfg(loom)`, and we only want to swap ours.

#[cfg(resil_loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
#[cfg(resil_loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(resil_loom)]
#[allow(unused_imports)]
pub(crate) use loom::{hint::spin_loop, sync::atomic::fence};

#[cfg(not(resil_loom))]
#[allow(unused_imports)]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
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
