//! The fleet: state that several processes share through a backend (Redis,
//! with `resil`'s `redis` feature).
//!
//! Two things are shared, and nothing else:
//!
//! - a rate limiter's permits: every process using one key shares
//!   `limit_for_period` per `limit_refresh_period`, in cycles counted on the
//!   backend's clock, with Resilience4j's reservations up to
//!   `timeout_duration` (see [`RateLimiterCluster`]);
//! - a circuit breaker's half-open episode: at most
//!   `permitted_number_of_calls_in_half_open_state` probes across the fleet,
//!   whose outcomes are counted together and decide for every process (see
//!   [`CircuitBreakerCluster`]). Each process keeps its own window and state
//!   otherwise.
//!
//! A backend is a [`ClusterBackend`]: a few atomic operations, each one
//! round trip, answered through a callback so that no caller is tied to the
//! backend's runtime. The leasing, the waits and the failure modes are this
//! crate's and the same for every backend.
//!
//! # Leases
//!
//! A rate limiter in cluster mode takes up to `lease` permits per round trip
//! and spends them locally under one short lock, so the common call makes no
//! round trip. Leased permits belong to the backend's cycle they were taken
//! in and are spent only before that cycle ends (the process counts the
//! cycle's remaining time from *before* it sent the request, so it never
//! overruns the backend's boundary); what is left at the end of the cycle is
//! discarded, never carried over and never handed back. So the backend never
//! hands out more than the limit per cycle, and a permit is counted once.
//! Measured on each process's own clock, the boundaries of the cycles differ
//! by up to a round trip, and the documented worst case per cycle is
//! `limit + lease × (processes − 1)` admitted calls.
//!
//! Each answer also says how long the fleet has no permit left (the cycle
//! is spent, or owed to reservations). Until then the process refuses a
//! call that cannot wait that long itself, without a round trip, and takes
//! no lease ahead: a refused call costs the backend nothing.
//!
//! # Faults
//!
//! No call waits on the backend longer than the cluster timeout, and an
//! async caller ([`RateLimiter::acquire_permission`](crate::rate_limiter::RateLimiter::acquire_permission))
//! waits without blocking its thread. The health of an instance's key
//! follows the outcomes of its own operations, not a `PING`: a round trip
//! that fails (the server is gone, or the key holds a value of another type)
//! or is late marks the key down; from then on calls do not wait at all but
//! follow the failure mode ([`ClusterFailureMode`]: the process's own
//! limiter, allow, or deny) while the backend runs the key's own operation in
//! the background, harmlessly, until it succeeds. Leased permits that are
//! still valid are spent first, down or not. Each change of a key's state is
//! published as an event of every instance that uses it.
//!
//! What an outage costs, in numbers: with `local`, each process admits its
//! own `limit_for_period` per cycle while the backend is down (the fleet up
//! to `processes × limit`); with `allow`, everything. A permit leased before
//! the outage is still spent at most once, and an answer that comes after
//! its caller gave up still fills the pool. A server restarted empty (no
//! persistence) starts the current cycle afresh, so that one cycle may
//! admit up to twice the limit; a server that keeps its data (AOF, a
//! replica) does not.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// The default `cluster-timeout`: the longest a call waits on the backend.
pub const DEFAULT_CLUSTER_TIMEOUT: Duration = Duration::from_millis(50);

/// The default expiry of a half-open probe's lease (`cluster-probe-expiry`).
pub const DEFAULT_PROBE_EXPIRY: Duration = Duration::from_secs(10);

/// The key an instance shares when it sets none: `resil:{<name>}:<kind>`
/// (`kind` is `ratelimiter` or `circuitbreaker`).
///
/// The name is the key's hash tag, so on Redis Cluster every key of one
/// instance lies in one slot, and each operation (one script on one key)
/// runs on one node.
///
/// ```
/// use resil_core::cluster::default_key;
///
/// assert_eq!(default_key("ratelimiter", "partner-api"), "resil:{partner-api}:ratelimiter");
/// ```
pub fn default_key(kind: &str, name: &str) -> String {
    format!("resil:{{{name}}}:{kind}")
}

/// What a cluster rate limiter does while its backend is down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ClusterFailureMode {
    /// The process's own limiter, with the same settings (the default).
    #[default]
    Local,
    /// Admit every call.
    Allow,
    /// Refuse every call with the limiter's `RequestNotPermitted`.
    Deny,
}

impl ClusterFailureMode {
    /// The name in resilience.toml: `local`, `allow` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterFailureMode::Local => "local",
            ClusterFailureMode::Allow => "allow",
            ClusterFailureMode::Deny => "deny",
        }
    }
}

impl fmt::Display for ClusterFailureMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing a [`ClusterFailureMode`] from text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFailureMode(String);

impl fmt::Display for UnknownFailureMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown cluster failure mode `{}`; expected `local`, `allow` or `deny`",
            self.0
        )
    }
}

impl std::error::Error for UnknownFailureMode {}

impl FromStr for ClusterFailureMode {
    type Err = UnknownFailureMode;

    /// Parses `local`, `allow` or `deny` (exactly: resilience.toml is case-sensitive).
    ///
    /// ```
    /// use resil_core::cluster::ClusterFailureMode;
    /// assert_eq!("deny".parse(), Ok(ClusterFailureMode::Deny));
    /// assert!("open".parse::<ClusterFailureMode>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "local" => Ok(ClusterFailureMode::Local),
            "allow" => Ok(ClusterFailureMode::Allow),
            "deny" => Ok(ClusterFailureMode::Deny),
            other => Err(UnknownFailureMode(other.to_owned())),
        }
    }
}

/// One round trip's request for rate-limiter permits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermitRequest {
    /// The key shared by every process of the limiter.
    pub key: Arc<str>,
    /// Permits per cycle, for the whole fleet.
    pub limit: u32,
    /// The cycle's length; cycles are counted on the backend's clock.
    pub period: Duration,
    /// Permits the calling request needs now (0 for a lease taken ahead).
    pub need: u32,
    /// The most permits to take when they are available now (at least `need`).
    pub lease: u32,
    /// How far ahead `need` permits may be reserved (Resilience4j's
    /// `timeout_duration`); 0 never reserves.
    pub timeout: Duration,
}

/// The backend's answer to a [`PermitRequest`].
///
/// Each answer carries `free_in`: how long after the backend read its clock
/// the fleet has no permit at all (zero when one is left). The process
/// refuses calls that cannot wait that long without asking again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermitGrant {
    /// `permits` were taken now, for the backend's cycle `cycle`, which
    /// ends `cycle_left` after the backend read its clock.
    Leased {
        /// The backend's cycle number.
        cycle: u64,
        /// Permits taken (0 when none were left and `need` was 0).
        permits: u32,
        /// Time left in the cycle when the backend answered.
        cycle_left: Duration,
        /// How long no permit is left after this one.
        free_in: Duration,
    },
    /// `need` permits were reserved from a later cycle: the caller may go
    /// after `wait`.
    Reserved {
        /// How long the caller waits for them.
        wait: Duration,
        /// How long no permit is left after this one.
        free_in: Duration,
    },
    /// Not available within the timeout; nothing was taken.
    Refused {
        /// When `need` permits would be available.
        wait: Duration,
        /// When one permit would be available.
        free_in: Duration,
    },
}

impl PermitGrant {
    /// How long the fleet has no permit left, as the backend answered.
    pub fn free_in(&self) -> Duration {
        match *self {
            PermitGrant::Leased { free_in, .. }
            | PermitGrant::Reserved { free_in, .. }
            | PermitGrant::Refused { free_in, .. } => free_in,
        }
    }
}

/// One round trip's request for a half-open probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeRequest {
    /// The key shared by every process of the breaker.
    pub key: Arc<str>,
    /// The fleet's probe budget for one half-open episode.
    pub budget: u32,
    /// How long a probe's lease lives if its holder never reports back.
    pub expiry: Duration,
    /// A token unique to this probe (per process and call).
    pub token: u64,
    /// The fleet's episode this process takes part in, from an earlier
    /// answer in its current HALF_OPEN state; `None` for its first request
    /// (it follows a verdict reached since it opened, or joins the episode
    /// under way, or starts one).
    pub episode: Option<u64>,
    /// How long ago the process last opened (entered OPEN or FORCED_OPEN),
    /// on its own clock: a verdict the fleet reached since then is about the
    /// outage it opened for.
    pub opened_ago: Duration,
}

/// What a fleet's half-open episode decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FleetVerdict {
    /// The probes went well: every process of the episode closes.
    Closed,
    /// A rate reached its threshold: every process of the episode opens.
    Open,
}

/// A decided episode: which, and what it decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EpisodeVerdict {
    /// The episode.
    pub episode: u64,
    /// Its verdict.
    pub verdict: FleetVerdict,
}

/// The backend's answer to a [`ProbeRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeGrant {
    /// The call is one of the episode's probes.
    Taken {
        /// The episode it belongs to.
        episode: u64,
    },
    /// The episode's probes are all out or spent, and it has not decided yet.
    Refused {
        /// The episode under way.
        episode: u64,
    },
    /// The episode this process takes part in has decided: it follows.
    Decided(EpisodeVerdict),
}

/// A probe's outcome, counted toward its episode's verdict.
///
/// The verdict is taken when the episode has `minimum` outcomes, as
/// Resilience4j's half-open window decides after
/// `min(minimum_number_of_calls, permitted)` calls: OPEN when at least
/// `failures_to_open` of them failed or `slow_calls_to_open` were slow (the
/// breaker's thresholds turned into counts by the process, with its own
/// arithmetic), else CLOSED.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeReport {
    /// The key shared by every process of the breaker.
    pub key: Arc<str>,
    /// The episode the probe was taken in.
    pub episode: u64,
    /// The probe's token.
    pub token: u64,
    /// Whether the call failed (a recorded error).
    pub failed: bool,
    /// Whether the call was slower than the slow-call threshold.
    pub slow: bool,
    /// The outcomes that decide.
    pub minimum: u32,
    /// The fewest failures among `minimum` outcomes that open.
    pub failures_to_open: u32,
    /// The fewest slow calls among `minimum` outcomes that open.
    pub slow_calls_to_open: u32,
    /// The probe expiry, which also bounds how long an idle episode is kept.
    pub expiry: Duration,
}

/// A fleet retry budget's round trip: the first attempts this process saw
/// since its last one, and the retries it asks for.
///
/// The budget's window is `ttl` in ten slices of the backend's clock, as a
/// local budget's: the retries of the fleet over a window are at most
/// `reserve + per_first × first attempts` of it (in thousandths of a retry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetRequest {
    /// The key shared by every process of the budget.
    pub key: Arc<str>,
    /// A tenth of the budget's `ttl`.
    pub slice: Duration,
    /// What a first attempt earns, in thousandths of a retry (`ratio` × 1000,
    /// rounded down).
    pub per_first: u64,
    /// The reserve, in thousandths of a retry
    /// (`min_retries_per_second × ttl` × 1000).
    pub reserve: u64,
    /// First attempts to count now.
    pub deposits: u64,
    /// Retries asked for (0: only count the deposits).
    pub want: u32,
}

/// What a [`BudgetRequest`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetGrant {
    /// Retries granted to the process (counted as spent on the backend).
    pub granted: u32,
    /// The whole retries the fleet's balance still pays for after the grant.
    pub balance: u64,
}

/// Why a round trip gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendError {
    message: String,
}

impl BackendError {
    /// An error with a message (what the backend's client said).
    pub fn new(message: impl Into<String>) -> Self {
        BackendError {
            message: message.into(),
        }
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cluster backend: {}", self.message)
    }
}

impl std::error::Error for BackendError {}

/// The callback that receives a round trip's answer.
pub type Reply<T> = Box<dyn FnOnce(Result<T, BackendError>) + Send + 'static>;

/// The callback told of each change of a key's state (`true`: up).
pub type Watcher = Box<dyn Fn(bool) + Send + Sync + 'static>;

/// A store that processes share: the atomic operations the fleet needs,
/// each one round trip.
///
/// Operations answer through a callback, called once, on the backend's own
/// thread, possibly after the caller stopped waiting (an answer that comes
/// late is still honoured: leased permits go to the pool). An
/// implementation must never block the calling thread, must run each
/// operation atomically on the server (a script, a transaction), and must
/// read time from the server's clock.
///
/// Health is per key, and follows the operations' own outcomes: a round
/// trip on a key that fails, or that a caller reports late
/// ([`ClusterBackend::report_late`]), marks that key down, and the backend
/// brings it up again by itself once the key's own operation succeeds
/// (run harmlessly in the background: no permit, no probe taken). A key
/// never used is up.
pub trait ClusterBackend: Send + Sync + fmt::Debug + 'static {
    /// Takes up to `request.lease` permits now, or reserves `request.need`
    /// within `request.timeout`.
    fn take_permits(&self, request: PermitRequest, reply: Reply<PermitGrant>);

    /// Takes one probe of a half-open episode's budget, or says what the
    /// episode `request.episode` decided.
    fn take_probe(&self, request: ProbeRequest, reply: Reply<ProbeGrant>);

    /// Counts a probe's outcome toward its episode; answers the episode's
    /// verdict once it has one (`None` while it is still undecided, or when
    /// the episode is no longer known).
    fn report_probe(&self, report: ProbeReport, reply: Reply<Option<EpisodeVerdict>>);

    /// Counts a fleet retry budget's first attempts and grants up to
    /// `request.want` retries from its balance.
    fn sync_budget(&self, request: BudgetRequest, reply: Reply<BudgetGrant>);

    /// Gives a probe that will not report back to its episode's budget (the
    /// call was not made, or its process left HALF_OPEN). Fire and forget.
    fn release_probe(&self, key: Arc<str>, episode: u64, token: u64);

    /// Whether the operations on `key` succeed (the last one, or the last
    /// background check since it failed).
    fn is_up(&self, key: &str) -> bool;

    /// Why `key` is down, while it is.
    fn last_error(&self, key: &str) -> Option<String>;

    /// Tells the backend that a caller gave up waiting for an answer on
    /// `key`: it is marked down until its operation answers in time.
    fn report_late(&self, key: &str);

    /// Registers `watcher`, called on the backend's thread at each change of `key`'s state.
    fn watch(&self, key: &str, watcher: Watcher);

    /// The round trips made so far (for benchmarks and tests).
    fn round_trips(&self) -> u64;

    /// Where the backend is, without secrets (`redis://host:port/db`), for reports.
    fn location(&self) -> String;
}

/// The backend that cluster settings name: settings are equal when they
/// name the same backend (the same `Arc`), whatever state it holds.
#[derive(Clone)]
pub(crate) struct Backend(pub(crate) Arc<dyn ClusterBackend>);

impl std::ops::Deref for Backend {
    type Target = Arc<dyn ClusterBackend>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl PartialEq for Backend {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Backend {}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Cluster settings of a rate limiter: which backend, which key, how many
/// permits per round trip, how long a call may wait on the backend and what
/// to do while it is down.
///
/// # Examples
///
/// ```
/// use resil_core::cluster::{ClusterBackend, ClusterFailureMode, RateLimiterCluster};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// // `backend`: `resil::redis::RedisBackend::connect("redis://...")`, say
/// fn partner_api(backend: Arc<dyn ClusterBackend>) -> RateLimiterCluster {
///     RateLimiterCluster::new(backend)
///         .key("resil:{partner-api}:ratelimiter") // the default for a limiter named `partner-api`
///         .lease(10)
///         .timeout(Duration::from_millis(20))
///         .failure_mode(ClusterFailureMode::Deny)
/// }
/// # let _ = partner_api;
/// /// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimiterCluster {
    pub(crate) backend: Backend,
    pub(crate) key: Option<Arc<str>>,
    pub(crate) lease: u32,
    pub(crate) timeout: Duration,
    pub(crate) failure_mode: ClusterFailureMode,
}

impl RateLimiterCluster {
    /// Settings on `backend`: the key `resil:{<name>}:ratelimiter`, a lease
    /// of 1 permit, the default timeout (50 ms) and failure mode (`local`).
    pub fn new(backend: Arc<dyn ClusterBackend>) -> Self {
        RateLimiterCluster {
            backend: Backend(backend),
            key: None,
            lease: 1,
            timeout: DEFAULT_CLUSTER_TIMEOUT,
            failure_mode: ClusterFailureMode::Local,
        }
    }

    /// The key every process of the limiter shares (default
    /// `resil:{<name>}:ratelimiter`, see [`default_key`]).
    pub fn key(mut self, key: impl Into<Arc<str>>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Permits taken per round trip (at least 1, at most `limit_for_period`).
    pub fn lease(mut self, lease: u32) -> Self {
        self.lease = lease;
        self
    }

    /// The longest a call waits on the backend.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// What to do while the backend is down.
    pub fn failure_mode(mut self, mode: ClusterFailureMode) -> Self {
        self.failure_mode = mode;
        self
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn ClusterBackend> {
        &self.backend.0
    }

    /// The shared key, when set (else the limiter's default).
    pub fn key_name(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// Permits taken per round trip.
    pub fn lease_size(&self) -> u32 {
        self.lease
    }

    /// The longest a call waits on the backend.
    pub fn timeout_duration(&self) -> Duration {
        self.timeout
    }

    /// What to do while the backend is down.
    pub fn mode(&self) -> ClusterFailureMode {
        self.failure_mode
    }
}

/// Cluster settings of a retry budget: the backend and key that hold the
/// fleet's balance, how many retries a process holds at a time (its lease)
/// and what to do while the backend is down.
///
/// Every process counts its first attempts and asks the backend for
/// retries in the background, never on a call's path: at most once per
/// tenth of the budget's `ttl` while it has traffic, and when a retry finds
/// its lease spent. A retry takes one from the process's lease, or is
/// denied (the lease is spent, or the fleet's balance is). Retries leased
/// count as spent on the backend when they are granted, and a lease not
/// spent within `ttl` is dropped, so the fleet's retries stay within its
/// bound; a lease a process does not use makes the fleet's budget smaller
/// by as much. First attempts reach the backend up to a tenth of `ttl`
/// after they happen. While the backend is down, retries go by
/// [`ClusterFailureMode`]: the process's own budget (`local`, the
/// default), all allowed, or all denied.
///
/// # Examples
///
/// ```
/// use resil_core::cluster::{ClusterBackend, ClusterFailureMode, RetryBudgetCluster};
/// use std::sync::Arc;
///
/// // `backend`: `resil::redis::RedisBackend::connect("redis://...")`, say
/// fn inventory(backend: Arc<dyn ClusterBackend>) -> RetryBudgetCluster {
///     RetryBudgetCluster::new(backend)
///         .key("resil:{inventory}:retrybudget") // the default for a budget named `inventory`
///         .lease(5)
///         .failure_mode(ClusterFailureMode::Local)
/// }
/// # let _ = inventory;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryBudgetCluster {
    pub(crate) backend: Backend,
    pub(crate) key: Option<Arc<str>>,
    pub(crate) lease: u32,
    pub(crate) failure_mode: ClusterFailureMode,
}

impl RetryBudgetCluster {
    /// Settings on `backend`: the key `resil:{<name>}:retrybudget`, a lease
    /// of 5 retries, failure mode `local`.
    pub fn new(backend: Arc<dyn ClusterBackend>) -> Self {
        RetryBudgetCluster {
            backend: Backend(backend),
            key: None,
            lease: 5,
            failure_mode: ClusterFailureMode::Local,
        }
    }

    /// The key every process of the budget shares (default
    /// `resil:{<name>}:retrybudget`, see [`default_key`]).
    pub fn key(mut self, key: impl Into<Arc<str>>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The most retries a process holds at a time (from 1 to 1000).
    pub fn lease(mut self, lease: u32) -> Self {
        self.lease = lease;
        self
    }

    /// What to do while the backend is down.
    pub fn failure_mode(mut self, mode: ClusterFailureMode) -> Self {
        self.failure_mode = mode;
        self
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn ClusterBackend> {
        &self.backend.0
    }

    /// The shared key, when set (else the budget's default).
    pub fn key_name(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The most retries a process holds at a time.
    pub fn lease_size(&self) -> u32 {
        self.lease
    }

    /// What to do while the backend is down.
    pub fn mode(&self) -> ClusterFailureMode {
        self.failure_mode
    }
}

/// Cluster settings of a circuit breaker: the backend and key that hold the
/// fleet's half-open episode.
///
/// A process that reaches HALF_OPEN joins the episode under way, or starts
/// one. The episode hands out at most
/// `permitted_number_of_calls_in_half_open_state` probes across the fleet
/// and counts every probe's outcome on the backend; once
/// `min(minimum_number_of_calls, permitted)` outcomes are in, it decides
/// with the breaker's thresholds, exactly as one breaker's half-open window
/// would, and every process of the episode follows: CLOSED, or back to OPEN
/// (the process whose report decides at once, the others at their next
/// call or report). So the fleet recovers however its probes were spread,
/// and a process that got no probe follows too.
///
/// Each probe is a lease with an expiry ([`CircuitBreakerCluster::probe_expiry`],
/// `cluster-probe-expiry`, default 10 s): a process that dies mid-probe does
/// not hold the fleet HALF_OPEN; its probe goes back to the budget when the
/// lease expires, for another process to take. An episode in which nothing
/// happens for twice the probe expiry is forgotten, and the processes still
/// HALF_OPEN start a new one. A process that leaves HALF_OPEN on its own
/// (`max_wait_duration_in_half_open_state`, or by hand) gives its probes
/// back and the episode goes on for the others. While the backend is down
/// or slower than the timeout, a probe goes by the process's own budget and
/// its own window decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitBreakerCluster {
    pub(crate) backend: Backend,
    pub(crate) key: Option<Arc<str>>,
    pub(crate) timeout: Duration,
    pub(crate) probe_expiry: Duration,
}

impl CircuitBreakerCluster {
    /// Settings on `backend`: the key `resil:{<name>}:circuitbreaker`, the
    /// default timeout (50 ms) and probe expiry (10 s).
    pub fn new(backend: Arc<dyn ClusterBackend>) -> Self {
        CircuitBreakerCluster {
            backend: Backend(backend),
            key: None,
            timeout: DEFAULT_CLUSTER_TIMEOUT,
            probe_expiry: DEFAULT_PROBE_EXPIRY,
        }
    }

    /// The key every process of the breaker shares (default
    /// `resil:{<name>}:circuitbreaker`, see [`default_key`]).
    pub fn key(mut self, key: impl Into<Arc<str>>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The longest a call waits on the backend for a probe.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long a probe's lease lives if its holder never reports back.
    pub fn probe_expiry(mut self, expiry: Duration) -> Self {
        self.probe_expiry = expiry;
        self
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn ClusterBackend> {
        &self.backend.0
    }

    /// The shared key, when set (else the breaker's default).
    pub fn key_name(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The longest a call waits on the backend for a probe.
    pub fn timeout_duration(&self) -> Duration {
        self.timeout
    }

    /// How long a probe's lease lives.
    pub fn probe_expiry_duration(&self) -> Duration {
        self.probe_expiry
    }
}

/// Counters of a cluster rate limiter, for tests, benchmarks and dashboards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClusterLimiterMetrics {
    pub(crate) round_trips: u64,
    pub(crate) leased: u64,
    pub(crate) spent: u64,
    pub(crate) discarded: u64,
    pub(crate) fallback_calls: u64,
    pub(crate) local_refusals: u64,
    pub(crate) up: bool,
}

impl ClusterLimiterMetrics {
    /// Round trips this limiter asked for.
    pub fn round_trips(&self) -> u64 {
        self.round_trips
    }
    /// Permits leased from the backend.
    pub fn leased_permits(&self) -> u64 {
        self.leased
    }
    /// Leased permits spent by calls (never more than were leased).
    pub fn spent_permits(&self) -> u64 {
        self.spent
    }
    /// Leased permits left unspent when their cycle ended.
    pub fn discarded_permits(&self) -> u64 {
        self.discarded
    }
    /// Calls decided by the failure mode while the backend was down.
    pub fn fallback_calls(&self) -> u64 {
        self.fallback_calls
    }
    /// Calls refused without a round trip: the backend had said that the
    /// fleet has no permit left for longer than they could wait.
    pub fn local_refusals(&self) -> u64 {
        self.local_refusals
    }
    /// Whether the limiter's key on the backend is up (its operations succeed).
    pub fn backend_up(&self) -> bool {
        self.up
    }
}
