//! Resilience4j's Micrometer meters through the [`metrics`](https://docs.rs/metrics) facade.
//!
//! Every meter that Resilience4j 2.2's Micrometer binders register, with the
//! same names, the same tags and the same values, so that the Prometheus
//! queries and Grafana dashboards written for Resilience4j work unchanged.
//! Micrometer names meters with dots (`resilience4j.circuitbreaker.calls`)
//! and its Prometheus registry adds the unit and `_total`; resil gives the
//! facade the names as Prometheus shows them
//! (`resilience4j_circuitbreaker_calls_seconds`), so that any exporter
//! prints them as Spring Boot does. Every meter carries the tag `name` (the
//! instance), `kind` or `state` where the table says so, and the instance's
//! tags (registry tags overlaid by its own), sorted by key as Micrometer
//! sorts them.
//!
//! | meter | type | tags | value |
//! | --- | --- | --- | --- |
//! | `resilience4j_circuitbreaker_state` | gauge × 6 | `state` = `closed`, `open`, `half_open`, `forced_open`, `disabled`, `metrics_only` | 1 for the current state, else 0 |
//! | `resilience4j_circuitbreaker_buffered_calls` | gauge × 2 | `kind` = `failed`, `successful` | calls in the window |
//! | `resilience4j_circuitbreaker_slow_calls` | gauge × 2 | `kind` = `successful`, `failed` | slow calls in the window |
//! | `resilience4j_circuitbreaker_failure_rate` | gauge | | percent, `-1` below the minimum number of calls |
//! | `resilience4j_circuitbreaker_slow_call_rate` | gauge | | percent, `-1` below the minimum |
//! | `resilience4j_circuitbreaker_calls_seconds` | histogram × 3 | `kind` = `successful`, `failed`, `ignored` | the duration of each call, from the `SUCCESS`, `ERROR` and `IGNORED_ERROR` events |
//! | `resilience4j_circuitbreaker_not_permitted_calls_total` | counter | `kind` = `not_permitted` | one per `NOT_PERMITTED` event |
//! | `resilience4j_circuitbreaker_calls_total` | counter | `kind` = `not_permitted` | the same count under Resilience4j 1.x's name, which its official Grafana board still plots |
//! | `resilience4j_circuitbreaker_max_buffered_calls` | gauge | | the calls the window holds: `sliding-window-size` of a `COUNT_BASED` window, `NaN` for a `TIME_BASED` one (no number of calls bounds it); Resilience4j 1.x's name |
//! | `resilience4j_retry_calls_total` | counter × 4 | `kind` = `successful_without_retry`, `successful_with_retry`, `failed_without_retry`, `failed_with_retry` | the retry's counters |
//! | `resilience4j_bulkhead_available_concurrent_calls` | gauge | | free permits |
//! | `resilience4j_bulkhead_max_allowed_concurrent_calls` | gauge | | the limit |
//! | `resilience4j_bulkhead_queue_depth`, `_queue_capacity`, `_thread_pool_size`, `_max_thread_pool_size`, `_core_thread_pool_size`, `_active_thread_count`, `_available_thread_count` | gauges | | the thread-pool bulkhead's snapshot |
//! | `resilience4j_ratelimiter_available_permissions` | gauge | | permits in the current cycle (negative while reserved ahead) |
//! | `resilience4j_ratelimiter_waiting_threads` | gauge | | callers waiting |
//! | `resil_cluster_backend_up` | gauge | `kind` = `ratelimiter`, `circuitbreaker` | 1 while the scripts on the instance's Redis key succeed, 0 while they fail or are late (Redis down, or the key holds another type) (instances with a `cluster-url` only) |
//! | `resilience4j_timelimiter_calls_total` | counter × 3 | `kind` = `successful`, `failed`, `timeout` | the time limiter's counts |
//!
//! Beyond Resilience4j's, signals its meters do not give, with bounded tags
//! (instance names, aspects and kind names are finite sets of the program):
//!
//! | meter | type | tags | value |
//! | --- | --- | --- | --- |
//! | `resil_retry_attempts_total` | counter | | attempts that reached the downstream (physical calls; `resilience4j_retry_calls_total` counts logical ones) |
//! | `resil_rejections_total` | counter | `kind` = `circuit_breaker`, `bulkhead`, `thread_pool_bulkhead`, `rate_limiter` | calls refused by the instance (`NOT_PERMITTED`, `CALL_REJECTED`, `FAILED_ACQUIRE` events) |
//! | `resil_fallback_calls_total` | counter | `layer` (the aspect whose fallback ran), `cause` (`CallNotPermitted`, `BulkheadFull`, `RequestNotPermitted`, `Timeout`, the error's kind, or `error`), `outcome` = `success`, `failed` (the fallback returned an error too) | fallbacks run by the attributes and by `resil::cloud` |
//! | `resil_thread_pool_bulkhead_queue_oldest_age_seconds` | gauge | | how long the oldest queued task has waited (0 with an empty queue) |
//! | `resil_bulkhead_limit` | gauge | | the semaphore bulkhead's live limit: `max-concurrent-calls`, or where an adaptive `limit-algorithm` has moved it (also set at each `LIMIT_CHANGED` event, as is `resilience4j_bulkhead_max_allowed_concurrent_calls`) |
//! | `resil_circuitbreaker_failure_rate_threshold`, `resil_circuitbreaker_slow_call_rate_threshold` | gauges | | the breaker's `failure-rate-threshold` and `slow-call-rate-threshold` in force (percent), to plot the rates against |
//! | `resil_retry_nested_total` | counter | `outer`, `inner` (retry names; no `name`) | calls of a retrying function made inside another retrying call ("retry at several layers": the attempts multiply); the first of each pair is also a `WARN` of target `resil::retry` |
//! | `resil_shadow_refusals_total` | counter | `kind` = `ratelimiter`, `bulkhead`, `thread-pool-bulkhead`, `timelimiter`, `retry`, `circuitbreaker` | calls an instance in shadow mode (`shadow = true`) would have refused and let through (its `SHADOW_REFUSAL` events); for a circuit breaker in METRICS_ONLY, each failure or slow-call rate crossing it would have opened on |
//! | `resil_deadline_exceeded_total` | counter | `kind` = `deadline`, `retry`, `timelimiter`, `ratelimiter`, `bulkhead`, `thread-pool-bulkhead` (the pattern that noticed) | calls the request's deadline refused or cut short, and retries it stopped ([`resil::deadline`](mod@crate::deadline)); set by [`refresh`] |
//! | `resil_faults_injected_total` | counter | `name` (the fault's), `kind` = `delay`, `abort` | calls a fault injection delayed or aborted ([`resil::fault`](crate::fault)); set by [`refresh`] |
//! | `resil_retry_budget_denied_total` | counter | `name` (the budget's) | retries a retry budget denied ([`RetryBudget`](crate::retry::RetryBudget)); set by [`refresh`] |
//! | `resil_retry_budget_balance` | gauge | `name` (the budget's) | the retries the budget's balance pays for now |
//! | `resil_config_reloads_total` | counter | `outcome` = `applied`, `rejected` (no `name`) | reloads of the configuration ([`reload`](crate::reload()), the actuator's `POST /actuator/refresh`, [`watch`](crate::watch())); dry runs are not counted |
//! | `resil_config_reload_pending` | gauge | (no `name`) | 1 while a changed file waits in `watch()` for its delay (`[resil] reload-stagger`), 0 otherwise (feature `watch`, from the start of a watch) |
//!
//! # When values move
//!
//! The histograms and the not-permitted counter are recorded by an event
//! consumer on each instance, as Resilience4j's are, so they miss what is
//! not published (refusals in FORCED_OPEN; see the circuit breaker's
//! events). The facade has no gauges that are read when scraped, so the
//! gauges, and the counters that Resilience4j reads from the instances
//! (retry, time limiter), are set by [`refresh`]: the actuator's
//! `/actuator/prometheus` calls it before it renders, and a background
//! thread calls it every [`DEFAULT_REFRESH_INTERVAL`] (see
//! [`set_refresh_interval`]), so that any exporter scrapes values at most
//! that old without the application doing anything. The state gauges are
//! also set on every state transition.
//!
//! # Keyed instances
//!
//! Keyed instances (`key = expr` on an attribute) add into their name's
//! series. With `key-label = true` each key's meters carry a `key` tag
//! instead, and those series are kept by resil rather than by the
//! recorder: the `metrics` facade cannot remove a series, and an evicted
//! key's series must go with it, so that a name shows at most its live keys
//! (`max-keys`) whatever the number of keys seen. `/actuator/prometheus`
//! merges them into its text; with another exporter, pass its text through
//! [`with_keyed_series`]. A key's timers there are summaries of `_sum` and
//! `_count` (no quantiles).
//!
//! # Recorders
//!
//! A `metrics` handle obtained before a recorder is installed stays a no-op
//! forever. resil therefore never keeps a handle across a change of
//! recorder: the handles of the event-driven meters are taken again when
//! the current recorder differs from the one they came from, and gauges are
//! looked up at each refresh. Installing the recorder after [`init`](crate::init)
//! loses nothing but the events published before it.
//!
//! `metrics-exporter-prometheus` renders histograms as summaries unless
//! buckets are configured; Micrometer renders a timer without percentile
//! histograms as a summary too (`_count`, `_sum`), so the queries of
//! Resilience4j's dashboards on those work either way. Queries on
//! `resilience4j_circuitbreaker_calls_seconds_bucket` (the percentile panels
//! of Resilience4j's official board, `histogram_quantile(...)`) need
//! buckets, as Micrometer's need `percentiles-histogram` turned on for the
//! meter: give the exporter [`CALL_DURATION_BUCKETS`] for it when it is
//! built. That is the whole setting, read once: the exporter records every
//! duration the same way whether it renders buckets or a summary, so a
//! protected call costs the same with the buckets as without them.
//!
//! ```
//! # #[cfg(feature = "actuator")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
//! use resil::metrics::{CALL_DURATION_BUCKETS, CIRCUIT_BREAKER_CALLS};
//!
//! let recorder = PrometheusBuilder::new()
//!     .set_buckets_for_metric(
//!         Matcher::Full(CIRCUIT_BREAKER_CALLS.to_owned()),
//!         CALL_DURATION_BUCKETS,
//!     )?
//!     .build_recorder();
//! # let _ = recorder;
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "actuator"))]
//! # fn main() {}
//! ```
//!
//! # Binding
//!
//! The global registries are bound as soon as they are built (by
//! [`init`](crate::init) or by the first protected call). Registries built
//! with [`Resilience::builder()`](crate::config::Resilience::builder)`.load()` are
//! bound with [`bind`]. Removing an instance from a registry stops its
//! meters from moving; the facade cannot remove them.
//!
//! # Examples
//!
//! With `metrics-exporter-prometheus` (the `actuator` feature brings it):
//!
//! ```
//! # #[cfg(feature = "actuator")]
//! # fn main() -> Result<(), resil::config::InitError> {
//! use metrics_exporter_prometheus::PrometheusBuilder;
//! use resil::config::Resilience;
//!
//! let loaded = Resilience::builder()
//!     .file_contents("resilience.toml", "[circuitbreaker.instances.inventory-query]\n")
//!     .env_vars(Vec::<(String, String)>::new())
//!     .load()?;
//! let recorder = PrometheusBuilder::new().build_recorder();
//! let handle = recorder.handle();
//! metrics::with_local_recorder(&recorder, || {
//!     resil::metrics::bind(loaded.registries());
//!     let cb = loaded.registries().circuit_breakers().circuit_breaker("inventory-query");
//!     cb.transition_to_open_state().unwrap();
//!     resil::metrics::refresh();
//! });
//! let text = handle.render();
//! assert!(text.contains(r#"resilience4j_circuitbreaker_state{name="inventory-query",state="open"} 1"#));
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "actuator"))]
//! # fn main() {}
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use ::metrics::Label;
use resil_config::Registries;
use resil_core::Tags;
use resil_core::clock::{Clock, SystemClock};
use resil_core::event::Event;

use crate::observe::Observed;
use crate::observe::sink::{Follower, Sink};

// each primitive's meters, in its own file
pub(crate) mod bulkhead;
pub(crate) mod circuit_breaker;
mod describe;
pub(crate) mod fault;
pub(crate) mod hedge;
mod keyed;
pub(crate) mod rate_limiter;
pub(crate) mod retry;
pub(crate) mod thread_pool_bulkhead;
pub(crate) mod time_limiter;
// the meters' names, and their descriptions
mod names;

pub(crate) use self::describe::describe;
use self::describe::recorder_id;
pub use self::names::*;

/// Binds `registries` to the metrics facade (and to the other enabled
/// observers, as [`observe`](crate::observe) does); binding again does nothing.
///
/// The global registries are bound without this call.
///
/// # Examples
///
/// ```
/// let registries = resil::config::Registries::of_defaults();
/// resil::metrics::bind(&registries);
/// registries.circuit_breakers().circuit_breaker("inventory-query"); // bound as it is created
/// ```
pub fn bind(registries: &Registries) {
    crate::observe::observe(registries);
}

/// Sets every gauge, and the counters Resilience4j reads from the instances
/// (retry, time limiter), from the instances' snapshots, for every bound
/// registries, through the current recorder.
///
/// `/actuator/prometheus` calls it before rendering; with another exporter,
/// call it before each export.
///
/// # Examples
///
/// ```
/// let registries = resil::config::Registries::of_defaults();
/// resil::metrics::bind(&registries);
/// resil::metrics::refresh(); // no recorder installed: nothing is recorded, nothing fails
/// ```
pub fn refresh() {
    crate::observe::refresh_all();
    refresh_deadlines();
    fault::refresh();
    refresh_budgets(&resil_core::retry::RetryBudget::live());
}

/// Sets `resil_deadline_exceeded_total` (process-wide counts).
pub(crate) fn refresh_deadlines() {
    for (kind, name, n) in resil_core::deadline::exceeded_totals() {
        ::metrics::counter!(DEADLINE_EXCEEDED, "kind" => kind, "name" => name).absolute(n);
    }
}

/// Sets the meters of `budgets`.
pub(crate) fn refresh_budgets(budgets: &[resil_core::retry::RetryBudget]) {
    for budget in budgets {
        let m = budget.metrics();
        let name = budget.name().to_owned();
        ::metrics::counter!(RETRY_BUDGET_DENIED, "name" => name.clone()).absolute(m.denied());
        ::metrics::gauge!(RETRY_BUDGET_BALANCE, "name" => name).set(m.balance() as f64);
    }
}

/// How often the gauges are set when nobody calls [`refresh`].
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(1);

/// The refresher's period in milliseconds; 0 while it is stopped.
static REFRESH_EVERY_MS: AtomicU64 = AtomicU64::new(1000);

/// Sets how often the background refresher sets every gauge (and the
/// snapshot counters), whatever exporter the application installed;
/// `None` stops it (then call [`refresh`] before each export). The default
/// is [`DEFAULT_REFRESH_INTERVAL`], so a scrape sees values at most that old
/// even from an exporter that knows nothing of resil; `/actuator/prometheus`
/// refreshes before it renders, so its values are exact.
///
/// The refresher is a thread named `resil-metrics`, started when the global
/// registries are built.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// resil::metrics::set_refresh_interval(Some(Duration::from_millis(250)));
/// resil::metrics::set_refresh_interval(None); // refresh by hand from now on
/// ```
pub fn set_refresh_interval(every: Option<Duration>) {
    let ms = every.map_or(0, |d| {
        u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
    });
    REFRESH_EVERY_MS.store(ms, Ordering::Relaxed);
    if let Some(thread) = REFRESHER.get() {
        thread.unpark();
    }
}

/// The refresher's thread, once it runs.
static REFRESHER: OnceLock<std::thread::Thread> = OnceLock::new();

inventory::submit! {
    // the global registries are built: from now on their gauges move alone
    resil_config::GlobalHook(|_| start_refresher())
}

/// Starts the background refresher, once per process.
fn start_refresher() {
    static START: std::sync::Once = std::sync::Once::new();
    START.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("resil-metrics".to_owned())
            .spawn(|| {
                let clock = SystemClock::new();
                loop {
                    match REFRESH_EVERY_MS.load(Ordering::Relaxed) {
                        0 => std::thread::park(),
                        ms => {
                            clock.sleep(Duration::from_millis(ms));
                            if REFRESH_EVERY_MS.load(Ordering::Relaxed) != 0 {
                                refresh();
                            }
                        }
                    }
                }
            });
        match spawned {
            Ok(handle) => {
                let _ = REFRESHER.set(handle.thread().clone());
            }
            Err(e) => tracing::warn!(
                target: "resil",
                "the metrics refresher thread could not start ({e}); call resil::metrics::refresh() before each export"
            ),
        }
    });
}

/// Counts a reload that applied or was refused (dry runs are not reported).
fn reloaded(outcome: Result<&resil_config::ReloadReport, &resil_config::InitError>) {
    describe();
    let outcome = if outcome.is_ok() {
        "applied"
    } else {
        "rejected"
    };
    ::metrics::counter!(CONFIG_RELOADS, "outcome" => outcome).increment(1);
}

inventory::submit! {
    resil_config::ReloadHook(reloaded)
}

/// Shows whether a changed file waits in `watch()` for its delay.
#[cfg(feature = "watch")]
fn reload_pending(waiting: bool) {
    describe();
    ::metrics::gauge!(CONFIG_RELOAD_PENDING).set(f64::from(u8::from(waiting)));
}

#[cfg(feature = "watch")]
inventory::submit! {
    resil_config::PendingHook(reload_pending)
}

/// Counts a fallback that ran: the instance, the aspect whose fallback it
/// is, the rejection or error kind that caused it, and whether it returned
/// a value (`success`) or an error (`failed`).
pub(crate) fn fallback_called(
    name: &'static str,
    layer: &'static str,
    cause: &'static str,
    outcome: &'static str,
) {
    describe();
    // static labels: no allocation on a path an open breaker takes per call
    ::metrics::counter!(
        FALLBACK_CALLS,
        "cause" => cause,
        "layer" => layer,
        "name" => name,
        "outcome" => outcome
    )
    .increment(1);
}

/// Counts a retrying call made inside another retrying call.
pub(crate) fn nested_retry(outer: &'static str, inner: &'static str) {
    describe();
    ::metrics::counter!(RETRY_NESTED, "inner" => inner, "outer" => outer).increment(1);
}

/// A rejection counter of one instance, taken again when the recorder changes.
pub(crate) fn rejections(
    name: &str,
    tags: &Tags,
    kind: &'static str,
) -> Cached<::metrics::Counter> {
    let make = match kind {
        "bulkhead" => |name: &str, tags: &Tags| {
            ::metrics::counter!(REJECTIONS, labels(name, Some(("kind", "bulkhead")), tags))
        },
        "thread_pool_bulkhead" => |name: &str, tags: &Tags| {
            ::metrics::counter!(
                REJECTIONS,
                labels(name, Some(("kind", "thread_pool_bulkhead")), tags)
            )
        },
        _ => |name: &str, tags: &Tags| {
            ::metrics::counter!(
                REJECTIONS,
                labels(name, Some(("kind", "rate_limiter")), tags)
            )
        },
    };
    Cached::new(name, tags, make)
}

/// The shadow-refusal counter of one instance (`kind` = the aspect as
/// resilience.toml names it), taken again when the recorder changes.
pub(crate) fn shadow_refusals(
    name: &str,
    tags: &Tags,
    kind: &'static str,
) -> Cached<::metrics::Counter> {
    // one `fn` per kind: the label is static, the closure cannot capture it
    macro_rules! of {
        ($kind:literal) => {
            |name: &str, tags: &Tags| {
                ::metrics::counter!(SHADOW_REFUSALS, labels(name, Some(("kind", $kind)), tags))
            }
        };
    }
    let make: fn(&str, &Tags) -> ::metrics::Counter = match kind {
        "ratelimiter" => of!("ratelimiter"),
        "bulkhead" => of!("bulkhead"),
        "thread-pool-bulkhead" => of!("thread-pool-bulkhead"),
        "timelimiter" => of!("timelimiter"),
        "retry" => of!("retry"),
        _ => of!("circuitbreaker"),
    };
    Cached::new(name, tags, make)
}

/// A rejection counter and a shadow-refusal counter of one instance.
pub(crate) struct Refusals {
    rejected: Cached<::metrics::Counter>,
    shadow: Cached<::metrics::Counter>,
}

impl Refusals {
    fn new(name: &str, tags: &Tags, rejection: &'static str, shadow: &'static str) -> Self {
        Refusals {
            rejected: rejections(name, tags, rejection),
            shadow: shadow_refusals(name, tags, shadow),
        }
    }

    fn rejected(&self) {
        self.rejected.with(|c| c.increment(1));
    }

    fn shadow(&self) {
        self.shadow.with(|c| c.increment(1));
    }
}

/// The labels of one meter: `name`, the meter's own tag, then the
/// instance's tags (which win on a clash, as Micrometer's `Tags.and` does),
/// sorted by key.
fn labels(name: &str, tag: Option<(&'static str, &'static str)>, tags: &Tags) -> Vec<Label> {
    let mut all: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
    all.insert("name", name);
    if let Some((k, v)) = tag {
        all.insert(k, v);
    }
    for (k, v) in tags {
        all.insert(k, v);
    }
    all.into_iter()
        .map(|(k, v)| Label::new(k.to_owned(), v.to_owned()))
        .collect()
}

fn gauge(
    meter: &'static str,
    name: &str,
    tag: Option<(&'static str, &'static str)>,
    tags: &Tags,
    value: f64,
) {
    ::metrics::gauge!(meter, labels(name, tag, tags)).set(value);
}

fn absolute(
    meter: &'static str,
    name: &str,
    tag: Option<(&'static str, &'static str)>,
    tags: &Tags,
    value: u64,
) {
    ::metrics::counter!(meter, labels(name, tag, tags)).absolute(value);
}

/// The meters' sink: the event-driven meters of each instance followed,
/// and the gauges set from the snapshots on [`refresh`]; the series of the
/// keyed instances with a `key` tag kept apart ([`keyed`]).
#[derive(Debug, Default)]
pub(crate) struct MetricsSink {
    keyed: keyed::KeyedSeries,
}

impl MetricsSink {
    /// The `key`-tagged series of the keyed instances this sink follows, by family.
    pub(crate) fn keyed_families(&self, families: &mut keyed::Families) {
        self.keyed.collect(families);
    }
}

/// A primitive with meters: its event-driven handles and its gauges.
pub(crate) trait Metered: Observed {
    /// The handles of its event-driven meters.
    type Meters: Send + Sync + 'static;

    /// Its event-driven meters.
    fn meters(&self) -> Self::Meters;
    /// Records one event in the event-driven meters.
    fn record(meters: &Self::Meters, event: &Event<Self::Kind>);
    /// Sets its gauges (and snapshot counters) from a snapshot.
    fn refresh(&self);
}

impl<P: Metered> Sink<P> for MetricsSink {
    fn follow(&self, p: &P) -> Follower<P::Kind> {
        let meters = p.meters();
        Box::new(move |event| P::record(&meters, event))
    }

    /// A keyed instance with a `key` tag records into series of its own,
    /// which its eviction drops; without the tag, it adds into the name's.
    fn follow_keyed(&self, p: &Arc<P>) -> Follower<P::Kind> {
        if !p.instance_tags().contains_key(resil_config::keyed::KEY_TAG) {
            return Sink::<P>::follow(self, p);
        }
        let series = self.keyed.add(address(p));
        let meters = p.meters();
        Box::new(move |event| keyed::with(&series, || P::record(&meters, event)))
    }

    fn unfollow_keyed(&self, p: &Arc<P>) {
        self.keyed.remove(address(p));
    }

    fn refresh(&self, instances: &[Arc<P>]) {
        describe();
        for p in instances {
            match self.keyed.get(address(p)) {
                Some(series) => keyed::with(&series, || p.refresh()),
                None => p.refresh(),
            }
        }
    }
}

/// What identifies a keyed instance among the live ones.
fn address<P>(p: &Arc<P>) -> usize {
    Arc::as_ptr(p) as usize
}

/// `exposition` (the Prometheus text of the process's recorder) with the
/// series of the keyed instances that carry a `key` tag (`key-label =
/// true`) put into their families.
///
/// Those series are kept by resil, not by the recorder: the `metrics`
/// facade cannot remove a series, and a key's series must go when the key
/// is evicted, so that a name's series hold at most its `max-keys` keys
/// whatever the number of keys seen. `/actuator/prometheus` shows them
/// already; with another exporter, pass its text through this function
/// (after [`refresh`]). Counters and gauges keep their meter's name and
/// tags, a timer is a summary of its `_sum` and `_count`.
///
/// # Examples
///
/// ```
/// let text = "# TYPE resil_retry_attempts_total counter\nresil_retry_attempts_total{name=\"a\"} 3\n\n";
/// resil::metrics::refresh();
/// let with_keys = resil::metrics::with_keyed_series(text);
/// assert!(with_keys.starts_with(text));
/// ```
pub fn with_keyed_series(exposition: &str) -> String {
    let mut families = keyed::Families::new();
    for binding in crate::observe::bindings() {
        if let Some(sink) = binding.sink::<MetricsSink>() {
            sink.keyed_families(&mut families);
        }
    }
    keyed::merge(exposition, families)
}

/// [`with_keyed_series`] of one binding's keyed instances.
#[cfg(feature = "actuator")]
pub(crate) fn with_keyed_series_of(binding: &crate::observe::Binding, exposition: &str) -> String {
    let mut families = keyed::Families::new();
    if let Some(sink) = binding.sink::<MetricsSink>() {
        sink.keyed_families(&mut families);
    }
    keyed::merge(exposition, families)
}

macro_rules! metered {
    ($($ty:ty => $m:ident;)*) => {$(
        impl Metered for $ty {
            type Meters = $m::Meters;

            fn meters(&self) -> $m::Meters {
                $m::meters(self)
            }
            fn record(meters: &$m::Meters, event: &Event<Self::Kind>) {
                $m::record(meters, event)
            }
            fn refresh(&self) {
                $m::refresh(self)
            }
        }
    )*};
}

metered! {
    resil_core::circuit_breaker::CircuitBreaker => circuit_breaker;
    resil_core::retry::Retry => retry;
    resil_core::bulkhead::Bulkhead => bulkhead;
    resil_core::thread_pool_bulkhead::ThreadPoolBulkhead => thread_pool_bulkhead;
    resil_core::rate_limiter::RateLimiter => rate_limiter;
    resil_core::time_limiter::TimeLimiter => time_limiter;
    resil_core::hedge::Hedge => hedge;
}

/// Handles taken from one recorder, taken again when the recorder changes.
pub(crate) struct Cached<H> {
    name: String,
    tags: Tags,
    make: fn(&str, &Tags) -> H,
    cache: RwLock<Option<(usize, H)>>,
}

impl<H> Cached<H> {
    fn new(name: &str, tags: &Tags, make: fn(&str, &Tags) -> H) -> Self {
        Cached {
            name: name.to_owned(),
            tags: tags.clone(),
            make,
            cache: RwLock::new(None),
        }
    }

    /// Runs `f` with handles of the current recorder.
    fn with(&self, f: impl FnOnce(&H)) {
        let id = recorder_id();
        {
            let cache = self
                .cache
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some((from, handles)) = cache.as_ref()
                && *from == id
            {
                f(handles);
                return;
            }
        }
        describe();
        let handles = (self.make)(&self.name, &self.tags);
        f(&handles);
        *self
            .cache
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((id, handles));
    }
}
