//! [`RetryBudget`]: retries bounded by the traffic that asks for them
//! (Finagle's retry budget).

use std::fmt;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::fleet::Fleet;
use crate::Name;
use crate::clock::{Clock, SharedClock, SystemClock};
use crate::cluster::RetryBudgetCluster;
use crate::error::{ConfigError, Dur, Problems};

/// The settings of a [`RetryBudget`].
///
/// | setting | default |
/// | --- | --- |
/// | `ratio` | 0.2 (retries per first attempt, from 0 to 1000) |
/// | `min_retries_per_second` | 10 (a reserve for callers with little traffic) |
/// | `ttl` | 10 s (how long a deposit counts; from 1 ms to 1 h) |
/// | `cluster` | none: the process's own budget; `Some` shares one budget across a fleet ([`RetryBudgetCluster`]) |
///
/// # Examples
///
/// ```
/// use resil_core::retry::RetryBudgetConfig;
/// use std::time::Duration;
///
/// let config = RetryBudgetConfig::builder().ratio(0.1).ttl(Duration::from_secs(5)).build()?;
/// assert_eq!(config.ratio(), 0.1);
/// assert!(RetryBudgetConfig::builder().ratio(-1.0).build().is_err());
/// assert!(RetryBudgetConfig::builder().ttl(Duration::ZERO).build().is_err());
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RetryBudgetConfig {
    ratio: f64,
    min_retries_per_second: u32,
    ttl: Duration,
    cluster: Option<RetryBudgetCluster>,
}

impl Default for RetryBudgetConfig {
    fn default() -> Self {
        RetryBudgetConfig {
            ratio: 0.2,
            min_retries_per_second: 10,
            ttl: Duration::from_secs(10),
            cluster: None,
        }
    }
}

impl RetryBudgetConfig {
    /// A builder with the defaults.
    pub fn builder() -> RetryBudgetConfigBuilder {
        RetryBudgetConfigBuilder {
            config: RetryBudgetConfig::default(),
        }
    }

    /// Retries allowed per first attempt, on top of the reserve.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// The reserve: retries allowed per second of `ttl` whatever the traffic.
    pub fn min_retries_per_second(&self) -> u32 {
        self.min_retries_per_second
    }

    /// How long a first attempt's deposit counts.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The fleet the budget is shared with, if any.
    pub fn cluster(&self) -> Option<&RetryBudgetCluster> {
        self.cluster.as_ref()
    }
}

/// Builds a [`RetryBudgetConfig`] (the default: the defaults).
#[derive(Debug, Clone, Default)]
pub struct RetryBudgetConfigBuilder {
    config: RetryBudgetConfig,
}

impl RetryBudgetConfigBuilder {
    /// Retries allowed per first attempt (0.2: one retry per five calls),
    /// from 0 to 1000.
    pub fn ratio(mut self, ratio: f64) -> Self {
        self.config.ratio = ratio;
        self
    }

    /// Retries allowed per second whatever the traffic (0: none).
    pub fn min_retries_per_second(mut self, retries: u32) -> Self {
        self.config.min_retries_per_second = retries;
        self
    }

    /// How long a first attempt's deposit counts (from 1 ms to 1 h).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.config.ttl = ttl;
        self
    }

    /// Shares the budget across a fleet (see [`RetryBudgetCluster`]);
    /// `None` (the default) keeps it the process's own.
    pub fn cluster(mut self, cluster: Option<RetryBudgetCluster>) -> Self {
        self.config.cluster = cluster;
        self
    }

    /// Checks the settings.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming each setting out of range.
    pub fn build(self) -> Result<RetryBudgetConfig, ConfigError> {
        let c = self.config;
        let mut p = Problems::default();
        p.check(
            c.ratio.is_finite() && (0.0..=MAX_RATIO).contains(&c.ratio),
            "ratio",
            c.ratio,
            "must be from 0 to 1000",
        );
        p.check(
            c.ttl >= MIN_TTL && c.ttl <= MAX_TTL,
            "ttl",
            Dur(c.ttl),
            "must be more than zero: from 1ms to 1h",
        );
        if let Some(cluster) = &c.cluster {
            p.check(
                (1..=MAX_LEASE).contains(&cluster.lease),
                "cluster_lease",
                cluster.lease,
                "must be from 1 to 1000",
            );
        }
        p.finish(c)
    }
}

/// The largest lease of a fleet budget.
const MAX_LEASE: u32 = 1000;
/// The most `ratio` accepted.
const MAX_RATIO: f64 = 1000.0;
/// The shortest `ttl` accepted: its tenths are whole microseconds.
const MIN_TTL: Duration = Duration::from_millis(1);
/// The longest `ttl` accepted.
const MAX_TTL: Duration = Duration::from_secs(3600);
/// Tokens a retry costs; a first attempt earns `ratio` times as many
/// (rounded down), so the ratio holds to a millionth and never rounds up.
const SCALE: i128 = 1_000_000;
/// The window of `ttl` is counted in this many slices.
const SLICES: u64 = 10;
/// Places of the two rings of slices: a first attempt counts for the
/// [`SLICES`] slices ending at the current one (never longer than `ttl`),
/// a retry for one more (never shorter than `ttl`).
const PLACES: usize = SLICES as usize + 1;

/// A tenth of `ttl`: the slices of a budget's window.
pub(super) const SLICES_PER_TTL: u64 = SLICES;

/// A slice's count packed with the slice it counts: the slice's number
/// (its low 32 bits) above, the count below.
fn pack(slice: u64, count: u32) -> u64 {
    (slice << 32) | u64::from(count)
}

fn unpack(word: u64) -> (u32, u32) {
    ((word >> 32) as u32, word as u32)
}

/// How many slices `held` lies before `slice` (both as packed: their low
/// 32 bits); a slice after `slice` is far in the past for this purpose.
fn age(slice: u64, held: u32) -> u32 {
    (slice as u32).wrapping_sub(held)
}

/// Retries bounded by the traffic that asks for them, shared by any number
/// of retries (`budget = "<name>"`): at each retry, the retries of the last
/// `ttl` are at most `min_retries_per_second × ttl + ratio × first attempts`
/// of that `ttl` (Finagle's retry budget). Each call's first attempt
/// deposits; each retry withdraws, or is not made when the balance cannot
/// pay for it.
///
/// The window moves in tenths of `ttl`, rounded so that the bound holds
/// over every window of `ttl` ending at a retry: a first attempt counts for
/// between 0.9 and 1 `ttl`, a retry for between 1 and 1.1 `ttl`. Deposits
/// are lock-free (an atomic update on the call's first attempt); withdrawals,
/// which happen only on failures, take a lock.
///
/// # Examples
///
/// ```
/// use resil_core::clock::ManualClock;
/// use resil_core::retry::{RetryBudget, RetryBudgetConfig};
///
/// let config = RetryBudgetConfig::builder().ratio(0.5).min_retries_per_second(0).build()?;
/// let budget = RetryBudget::with_clock("downstream", config, ManualClock::new());
/// for _ in 0..4 {
///     budget.deposit(); // four calls
/// }
/// assert!(budget.try_withdraw());
/// assert!(budget.try_withdraw());
/// assert!(!budget.try_withdraw()); // half of four
/// assert_eq!(budget.metrics().denied(), 1);
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct RetryBudget {
    inner: Arc<BudgetInner>,
}

/// Two budgets are equal when they are the same budget (clones of one
/// [`RetryBudget`]): equal settings do not make one balance.
impl PartialEq for RetryBudget {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for RetryBudget {}

/// The budgets made, for [`RetryBudget::live`].
static LIVE: Mutex<Vec<std::sync::Weak<BudgetInner>>> = Mutex::new(Vec::new());

pub(super) struct BudgetInner {
    name: Name,
    config: RetryBudgetConfig,
    clock: SharedClock,
    /// Tokens a first attempt earns.
    deposit: i128,
    /// Tokens that `min_retries_per_second × ttl` retries cost.
    reserve: i128,
    slice_nanos: u64,
    /// The latest slice any operation saw: moving it on clears the places
    /// of the slices it passed, so that no place is older than the window.
    head: AtomicU64,
    deposits: [AtomicU64; PLACES],
    withdrawals: [AtomicU64; PLACES],
    /// Serializes withdrawals (the balance is checked and debited at once)
    /// and the moves of the head.
    serial: Mutex<()>,
    denied: AtomicU64,
    /// The fleet's share, when the budget has a cluster.
    fleet: Option<Fleet>,
}

impl RetryBudget {
    /// A budget on the system clock.
    pub fn new(name: impl Into<Name>, config: RetryBudgetConfig) -> Self {
        Self::with_clock(name, config, SystemClock::new())
    }

    /// A budget with the defaults.
    pub fn of_defaults(name: impl Into<Name>) -> Self {
        Self::new(name, RetryBudgetConfig::default())
    }

    /// A budget on `clock`.
    pub fn with_clock(name: impl Into<Name>, config: RetryBudgetConfig, clock: impl Clock) -> Self {
        let ttl_nanos = crate::clock::saturating_nanos(config.ttl);
        // Rounded down: a first attempt never earns more than `ratio` retries.
        let deposit = (config.ratio * SCALE as f64) as i128;
        let reserve = i128::from(config.min_retries_per_second) * i128::from(ttl_nanos) * SCALE
            / 1_000_000_000;
        let clock = clock.into_shared();
        let slice_nanos = (ttl_nanos / SLICES).max(1);
        let head = clock.now().as_u64() / slice_nanos;
        let place = |i: usize| {
            // the slice of the window ending at `head` that place `i` holds
            let back = (head % PLACES as u64 + PLACES as u64 - i as u64) % PLACES as u64;
            AtomicU64::new(pack(head.wrapping_sub(back), 0))
        };
        let name: Name = name.into();
        let fleet = config
            .cluster
            .as_ref()
            .map(|c| Fleet::new(c, &name, &config, ttl_nanos));
        let budget = RetryBudget {
            inner: Arc::new(BudgetInner {
                name,
                config,
                clock,
                deposit,
                reserve,
                slice_nanos,
                head: AtomicU64::new(head),
                deposits: std::array::from_fn(place),
                withdrawals: std::array::from_fn(place),
                serial: Mutex::new(()),
                denied: AtomicU64::new(0),
                fleet,
            }),
        };
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|b| b.strong_count() > 0);
        live.push(Arc::downgrade(&budget.inner));
        budget
    }

    /// Every budget alive in the process, sorted by name: what the meters
    /// `resil_retry_budget_balance` and `resil_retry_budget_denied_total`
    /// read.
    pub fn live() -> Vec<RetryBudget> {
        let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<RetryBudget> = live
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .map(|inner| RetryBudget { inner })
            .collect();
        out.sort_by(|a, b| a.name().cmp(b.name()));
        out
    }

    /// The budget's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Its settings.
    pub fn config(&self) -> &RetryBudgetConfig {
        &self.inner.config
    }

    /// A call's first attempt: credit for later retries.
    #[inline]
    pub fn deposit(&self) {
        let inner = &*self.inner;
        if inner.deposit == 0 && inner.fleet.is_none() {
            return;
        }
        let slice = inner.slice_now();
        if inner.deposit != 0 {
            BudgetInner::add(&inner.deposits, slice);
        }
        if let Some(fleet) = &inner.fleet {
            fleet.deposit(&self.inner, slice);
        }
    }

    /// Takes one retry from the balance: `false` (and nothing taken) when
    /// the balance cannot pay for it.
    pub fn try_withdraw(&self) -> bool {
        let inner = &*self.inner;
        if let Some(fleet) = &inner.fleet {
            let slice = inner.slice_now();
            if let Some(allowed) = fleet.withdraw(&self.inner, slice) {
                if allowed {
                    // the process's own window follows the fleet's, for the
                    // `local` failure mode
                    let _serial = inner.lock();
                    BudgetInner::add(&inner.withdrawals, slice);
                } else {
                    inner.denied.fetch_add(1, Ordering::Relaxed);
                }
                return allowed;
            }
        }
        let _serial = inner.lock();
        let slice = inner.clock.now().as_u64() / inner.slice_nanos;
        inner.advance_locked(slice);
        if inner.tokens(slice) >= SCALE {
            BudgetInner::add(&inner.withdrawals, slice);
            true
        } else {
            inner.denied.fetch_add(1, Ordering::Relaxed);
            false
        }
    }

    /// The retries the balance pays for now; of a fleet budget whose
    /// backend is up, the retries this process holds plus what the fleet's
    /// balance paid for at the last round trip.
    pub fn balance(&self) -> u64 {
        let inner = &*self.inner;
        let slice = inner.slice_now();
        if let Some(fleet) = &inner.fleet
            && let Some(balance) = fleet.balance(slice)
        {
            return balance;
        }
        let tokens = inner.tokens(slice);
        u64::try_from(tokens / SCALE).unwrap_or(0)
    }

    /// Its counts.
    pub fn metrics(&self) -> RetryBudgetMetrics {
        RetryBudgetMetrics {
            balance: self.balance(),
            denied: self.inner.denied.load(Ordering::Relaxed),
        }
    }
}

impl BudgetInner {
    pub(super) fn fleet(&self) -> Option<&Fleet> {
        self.fleet.as_ref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.serial.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current slice, after clearing the places of the slices the
    /// window moved past since the last operation.
    #[inline]
    pub(super) fn slice_now(&self) -> u64 {
        let slice = self.clock.now().as_u64() / self.slice_nanos;
        if slice > self.head.load(Ordering::Acquire) {
            self.advance(slice);
        }
        slice
    }

    #[cold]
    fn advance(&self, slice: u64) {
        let _serial = self.lock();
        self.advance_locked(slice);
    }

    /// Clears the places of the slices after the head up to `slice`, then
    /// moves the head: an operation that sees the new head finds them
    /// cleared. Withdrawals hold the same lock; only a deposit that a thread
    /// overtaken by the clock adds meanwhile to a slice before the head can
    /// be lost (fewer retries, never more than the bound).
    fn advance_locked(&self, slice: u64) {
        let old = self.head.load(Ordering::Acquire);
        if old >= slice {
            return;
        }
        let from = (old + 1).max(slice.saturating_sub(PLACES as u64 - 1));
        for s in from..=slice {
            let i = (s % PLACES as u64) as usize;
            self.deposits[i].store(pack(s, 0), Ordering::Release);
            self.withdrawals[i].store(pack(s, 0), Ordering::Release);
        }
        self.head.store(slice, Ordering::Release);
    }

    /// Counts one in `slice`'s place of `ring`, starting the place afresh
    /// when it held an older slice; a place already on a later slice (this
    /// thread was overtaken) keeps it: the count would be out of the window.
    fn add(ring: &[AtomicU64; PLACES], slice: u64) {
        let place = &ring[(slice % PLACES as u64) as usize];
        let _ = place.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
            let (held, count) = unpack(word);
            if held == slice as u32 {
                Some(pack(slice, count.saturating_add(1)))
            } else if age(slice, held) <= u32::MAX / 2 {
                Some(pack(slice, 1))
            } else {
                None
            }
        });
    }

    /// The counts of `ring`'s slices at most `oldest` slices before `slice`.
    fn count(ring: &[AtomicU64; PLACES], slice: u64, oldest: u32) -> i128 {
        ring.iter()
            .map(|place| {
                let (held, count) = unpack(place.load(Ordering::Acquire));
                if age(slice, held) <= oldest {
                    i128::from(count)
                } else {
                    0
                }
            })
            .sum()
    }

    /// The balance in tokens: the reserve, plus what the first attempts of
    /// the window earned, less what its retries cost.
    fn tokens(&self, slice: u64) -> i128 {
        let firsts = Self::count(&self.deposits, slice, SLICES as u32 - 1);
        let retries = Self::count(&self.withdrawals, slice, SLICES as u32);
        self.reserve + firsts * self.deposit - retries * SCALE
    }
}

/// A snapshot of a [`RetryBudget`]'s counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryBudgetMetrics {
    balance: u64,
    denied: u64,
}

impl RetryBudgetMetrics {
    /// The retries the balance paid for when the snapshot was taken.
    pub fn balance(&self) -> u64 {
        self.balance
    }

    /// Retries the budget denied since it was made.
    pub fn denied(&self) -> u64 {
        self.denied
    }
}

/// Prints the name and settings only, so that two configurations naming
/// one budget print alike (the balance moves).
impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("name", &self.inner.name)
            .field("config", &self.inner.config)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_pack_with_their_slice() {
        for (slice, count) in [
            (0, 0),
            (1, 1),
            (7, 1000),
            (u64::from(u32::MAX) + 3, u32::MAX),
        ] {
            assert_eq!(unpack(pack(slice, count)), (slice as u32, count));
        }
        assert_eq!(age(1 << 32, u32::MAX), 1, "the slices' numbers wrap");
    }
}
