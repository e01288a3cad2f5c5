//! A retry budget shared by a fleet ([`RetryBudgetCluster`]): the
//! process's share of it, kept by round trips in the background.
//!
//! The fleet's window lives on the backend (first attempts and retries in
//! tenths of `ttl` of the backend's clock). A process counts its first
//! attempts and sends them at most once per tenth of `ttl` while it has
//! traffic; each round trip also asks for retries up to the lease, which
//! the backend grants from the fleet's balance and counts as spent. A retry
//! takes one from the lease with an atomic update and never waits on the
//! backend: when the lease is spent it is denied, and a round trip asks for
//! more (at most once per tenth of `ttl` once the fleet granted nothing).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::budget::{BudgetInner, RetryBudgetConfig, SLICES_PER_TTL};
use crate::cluster::{
    BudgetGrant, BudgetRequest, ClusterBackend, ClusterFailureMode, RetryBudgetCluster, default_key,
};

/// The largest reserve sent, in thousandths of a retry: the backend's
/// numbers are doubles, exact below 2^53.
const MAX_RESERVE: u64 = 1 << 50;

/// The process's share of a fleet budget.
pub(crate) struct Fleet {
    backend: Arc<dyn ClusterBackend>,
    key: Arc<str>,
    lease_size: u32,
    mode: ClusterFailureMode,
    slice: Duration,
    per_first: u64,
    reserve: u64,
    /// First attempts not sent yet.
    pending: AtomicU64,
    /// The retries held: the slice of their oldest grant (high 32 bits) and
    /// their count. A lease older than `ttl` is dropped.
    lease: AtomicU64,
    /// The slice (+ 1) of the last round trip started; 0 before the first.
    synced: AtomicU64,
    /// The slice (+ 1) in which the round trip under way started; 0: none.
    in_flight: AtomicU64,
    /// The slice (+ 1) in which the fleet last granted nothing.
    exhausted: AtomicU64,
    /// The fleet's balance at the last answer.
    fleet_balance: AtomicU64,
}

fn pack(slice: u64, count: u32) -> u64 {
    (slice << 32) | u64::from(count)
}

fn unpack(word: u64) -> (u32, u32) {
    ((word >> 32) as u32, word as u32)
}

impl Fleet {
    pub(super) fn new(
        settings: &RetryBudgetCluster,
        name: &str,
        config: &RetryBudgetConfig,
        ttl_nanos: u64,
    ) -> Self {
        let key = settings
            .key
            .clone()
            .unwrap_or_else(|| default_key("retrybudget", name).into());
        // retries per second × seconds × 1000 = per second × nanoseconds / 10^6
        let reserve =
            u128::from(config.min_retries_per_second()) * u128::from(ttl_nanos) / 1_000_000;
        Fleet {
            backend: Arc::clone(&settings.backend),
            key,
            lease_size: settings.lease,
            mode: settings.failure_mode,
            slice: Duration::from_nanos((ttl_nanos / SLICES_PER_TTL).max(1_000)),
            per_first: (config.ratio() * 1000.0) as u64,
            reserve: u64::try_from(reserve)
                .unwrap_or(MAX_RESERVE)
                .min(MAX_RESERVE),
            pending: AtomicU64::new(0),
            lease: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            exhausted: AtomicU64::new(0),
            fleet_balance: AtomicU64::new(0),
        }
    }

    /// The retries held at `slice`.
    fn held(&self, slice: u64) -> u32 {
        let (granted, count) = unpack(self.lease.load(Ordering::Acquire));
        if fresh(slice, granted) { count } else { 0 }
    }

    /// Counts a first attempt; starts a round trip at the first of a slice.
    #[inline]
    pub(super) fn deposit(&self, inner: &Arc<BudgetInner>, slice: u64) {
        self.pending.fetch_add(1, Ordering::Relaxed);
        if self.synced.load(Ordering::Relaxed) != slice + 1 {
            self.sync(inner, slice);
        }
    }

    /// A retry: `Some(true)` when the lease paid for it, `Some(false)` when
    /// it is denied, `None` when the process's own budget decides (the
    /// backend is down and the failure mode is `local`).
    pub(super) fn withdraw(&self, inner: &Arc<BudgetInner>, slice: u64) -> Option<bool> {
        if !self.backend.is_up(&self.key) {
            return match self.mode {
                ClusterFailureMode::Local => None,
                ClusterFailureMode::Allow => Some(true),
                ClusterFailureMode::Deny => Some(false),
            };
        }
        let taken = self
            .lease
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                let (granted, count) = unpack(word);
                (count > 0 && fresh(slice, granted)).then(|| pack(u64::from(granted), count - 1))
            })
            .is_ok();
        if !taken && self.exhausted.load(Ordering::Relaxed) != slice + 1 {
            self.sync(inner, slice);
        }
        Some(taken)
    }

    /// What [`RetryBudget::balance`](super::RetryBudget::balance) says of a
    /// fleet budget; `None` while the process's own budget decides.
    pub(super) fn balance(&self, slice: u64) -> Option<u64> {
        if !self.backend.is_up(&self.key) && self.mode == ClusterFailureMode::Local {
            return None;
        }
        Some(u64::from(self.held(slice)) + self.fleet_balance.load(Ordering::Relaxed))
    }

    /// Sends the pending first attempts and asks for the lease's missing
    /// retries, unless a round trip is under way (one started less than a
    /// `ttl` ago: an answer that never came does not stop the budget).
    #[cold]
    fn sync(&self, inner: &Arc<BudgetInner>, slice: u64) {
        let started = self.in_flight.load(Ordering::Acquire);
        if started != 0 && slice + 1 < started + SLICES_PER_TTL {
            return;
        }
        if self
            .in_flight
            .compare_exchange(started, slice + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        self.synced.store(slice + 1, Ordering::Relaxed);
        let want = self.lease_size.saturating_sub(self.held(slice));
        let request = BudgetRequest {
            key: Arc::clone(&self.key),
            slice: self.slice,
            per_first: self.per_first,
            reserve: self.reserve,
            deposits: self.pending.swap(0, Ordering::AcqRel),
            want,
        };
        let weak = Arc::downgrade(inner);
        self.backend.sync_budget(
            request,
            Box::new(move |answer| {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                let Some(fleet) = inner.fleet() else {
                    return;
                };
                // First attempts a failed round trip carried are lost:
                // fewer retries for the fleet, never more.
                if let Ok(grant) = answer {
                    fleet.granted(inner.slice_now(), want, grant);
                }
                let _ = fleet.in_flight.compare_exchange(
                    slice + 1,
                    0,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }),
        );
    }

    /// Adds `grant` to the lease at `slice`; the lease keeps the slice of
    /// its oldest retries still held, so that none is held beyond `ttl`.
    fn granted(&self, slice: u64, want: u32, grant: BudgetGrant) {
        let _ = self
            .lease
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                let (held_since, count) = unpack(word);
                let (since, count) = if count > 0 && fresh(slice, held_since) {
                    (u64::from(held_since), count)
                } else {
                    (slice, 0)
                };
                Some(pack(since, count.saturating_add(grant.granted)))
            });
        if want > 0 && grant.granted == 0 {
            self.exhausted.store(slice + 1, Ordering::Relaxed);
        }
        self.fleet_balance.store(grant.balance, Ordering::Relaxed);
    }
}

/// Whether a lease granted in slice `granted` (its low 32 bits) is still
/// good at `slice`: granted less than a `ttl` ago.
fn fresh(slice: u64, granted: u32) -> bool {
    (slice as u32).wrapping_sub(granted) < SLICES_PER_TTL as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_good_for_a_ttl() {
        assert!(fresh(5, 5));
        assert!(fresh(14, 5));
        assert!(!fresh(15, 5));
        assert!(fresh(u64::from(u32::MAX) + 3, u32::MAX), "the slices wrap");
        assert_eq!(unpack(pack(7, 3)), (7, 3));
    }
}
