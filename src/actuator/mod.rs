//! Spring Boot's actuator endpoints for resil, as an axum 0.8 router.
//!
//! A Resilience4j service answers `/actuator/circuitbreakers`,
//! `/actuator/circuitbreakerevents`, `/actuator/health` and
//! `/actuator/prometheus`; operators, scripts and dashboards read them.
//! [`Actuator`] serves the same paths with the same JSON, so they keep
//! working, and adds what a Rust service can tell: every protected function
//! with its stack (`/actuator/resilience`), live event streams for every
//! kind, and, only when enabled with a bearer token, state changes.
//!
//! ```
//! use metrics_exporter_prometheus::PrometheusBuilder;
//! use resil::actuator::Actuator;
//!
//! // at start-up: resil::init()?, then
//! let prometheus = PrometheusBuilder::new().build_recorder().handle();
//! let actuator = Actuator::builder()
//!     .prometheus(prometheus)
//!     .state_changes("s3cr3t-token")
//!     .build();
//! let app: axum::Router = axum::Router::new()
//!     // .route("/inventory/{sku}", get(query))
//!     .merge(actuator.router());
//! # drop(app);
//! ```
//!
//! # Routes
//!
//! Every route is a `GET` unless said otherwise; names are sorted, events
//! are oldest first (the instances' buffers of `event-consumer-buffer-size`,
//! default 100). `{name}` is an instance name; `{eventType}` one of
//! Resilience4j's event type names, in any case (an unknown one is a 400).
//!
//! | route | answer |
//! | --- | --- |
//! | `/actuator/health` | Spring Boot's health document; see below |
//! | `/actuator/health/{component}` | one component (`circuitBreakers`, `rateLimiters`, `ping`) |
//! | `/actuator/circuitbreakers` | `{"circuitBreakers":{"inventory-query":{..details..}}}`; a keyed name's details hold its `keys` (see [Keyed instances](#keyed-instances)) |
//! | `/actuator/retries`, `/actuator/ratelimiters`, `/actuator/timelimiters`, `/actuator/hedges`, `/actuator/deadlines` | `{"retries":["inventory-query"]}` (`rateLimiters`, `timeLimiters`, `hedges`, `deadlines`), and `keyed` when a name has keys |
//! | `/actuator/bulkheads` | `{"bulkheads":[..]}`: semaphore and thread-pool bulkheads, as Resilience4j lists them, and `keyed` |
//! | `/actuator/threadpoolbulkheads` | `{"threadPoolBulkheads":[..]}` (resil's), and `keyed` |
//! | `/actuator/{kind}events[/{name}[/{eventType}]]` | `{"circuitBreakerEvents":[..]}`; kinds `circuitbreaker`, `retry`, `bulkhead` (both kinds of bulkhead), `threadpoolbulkhead`, `ratelimiter`, `timelimiter`, `hedge` (`HEDGED`, `SUCCESS`, `ERROR`: `hedgeEvents`) |
//! | `/actuator/stream{kind}events[/{name}[/{eventType}]]` | server-sent events: `id` the instance, `event` the type, `data` the event's JSON; an `event: ping` every second; at most [`ActuatorBuilder::max_stream_clients`] open (default 16), a 503 past it, of which [`ActuatorBuilder::operator_stream_clients`] (default a quarter) only for requests with the bearer token, and at most [`ActuatorBuilder::max_stream_clients_per_peer`] (default 4) per IP address without it, a 429 past it |
//! | `/actuator/prometheus` | the Prometheus text of [`ActuatorBuilder::prometheus`]'s handle, after [`metrics::refresh`](crate::metrics::refresh)-ing the gauges of these registries (404 without a handle) |
//! | `/actuator/resilience` | every protected function, its stack, each layer's effective configuration and live state (a retry's with the budget it spends: `retryBudget` with `name`, `balance`, `denied`), and every instance; file paths and source lines only with [`ActuatorBuilder::expose_sources`] |
//! | `POST /actuator/circuitbreakers/{name}` | body `{"updateState":"FORCE_OPEN"}`: `CLOSE`, `FORCE_OPEN`, `DISABLE` (Resilience4j's), `METRICS_ONLY`, `RESET` (resil's); `{"updateState":"FORCE_OPEN","for":"10m"}` moves to HALF_OPEN after 10 minutes on its own, so that the half-open probes decide whether it closes (a `for` outside 1ms ..= 365 days is a 400 that states the range); only with [`ActuatorBuilder::state_changes`] |
//! | `GET /actuator/metrics`, `GET /actuator/metrics/{name}?tag=key:value` | Spring Boot's metrics endpoint (`names`; `name`, `description`, `baseUnit`, `measurements`, `availableTags`) over the Prometheus registry, only with [`ActuatorBuilder::prometheus`]: `resilience4j.circuitbreaker.calls` is the family `resilience4j_circuitbreaker_calls_seconds` |
//! | `GET /actuator/resilienceaudit` | `entries`: the last 100 requests made with the bearer token (time, path, request, peer address, identity, status, and the `outcome` of a change made), oldest first; `rejected`: the count of requests refused without it and the last 20 of them, kept apart so that no number of them pushes a change out of the log; also `tracing` events with target `resil::actuator` (for refused requests, the 1st, 2nd, 4th, 8th ...); with the bearer token, only with [`ActuatorBuilder::state_changes`]; peer addresses need `into_make_service_with_connect_info::<SocketAddr>()`; URL passwords in a request body are kept as `***` |
//! | `POST /actuator/ratelimiters/{name}` | body `{"limitForPeriod":20,"timeoutDuration":"500ms"}` (either or both); only with [`ActuatorBuilder::state_changes`] |
//! | `GET /actuator/faults` | `{"faults":[{"name":"inventory-query","delay":"200ms","delayPercent":10,"abortPercent":5,"source":"injected","remaining":"9m 58s","delayed":12,"aborted":3}]}`: the faults in force, configured (`[fault.instances.*]`) or started here (`source`), with the calls each delayed and aborted |
//! | `POST /actuator/faults/{name}` | body `{"delay":"200ms","delayPercent":10,"abortPercent":5,"for":"10m"}`: delays or aborts that share of the calls of every call site of `name` until `for` is over (required, at most 24h), then the configured state is back; a name the application does not know is a 404, a bad field a 400 naming it; only with [`ActuatorBuilder::state_changes`] |
//! | `DELETE /actuator/faults/{name}` | ends the fault started for `name`; only with [`ActuatorBuilder::state_changes`] |
//! | `POST /actuator/refresh[?dryRun=true]` | reloads the configuration (see [Refresh](#refresh)): 200 `{"changed":["circuitbreaker.instances.inventory-query.failure-rate-threshold",..]}`, 400 with the problems; `dryRun=true` applies nothing; only with [`ActuatorBuilder::state_changes`] |
//!
//! `GET /actuator/circuitbreakers`:
//!
//! ```json
//! {"circuitBreakers":{"inventory-query":{
//!   "failureRate":"-1.0%","failureRateThreshold":"50.0%",
//!   "slowCallRate":"-1.0%","slowCallRateThreshold":"60.0%",
//!   "bufferedCalls":3,"failedCalls":2,"slowCalls":0,"slowFailedCalls":0,
//!   "notPermittedCalls":0,"state":"CLOSED"}}}
//! ```
//!
//! `GET /actuator/circuitbreakerevents/inventory-query` (`errorMessage` is
//! the error's kind; Resilience4j prints the exception):
//!
//! ```json
//! {"circuitBreakerEvents":[
//!   {"circuitBreakerName":"inventory-query","type":"ERROR","creationTime":"2025-05-01T10:15:30.120Z",
//!    "errorMessage":"ConnectionRefused","durationInMs":12},
//!   {"circuitBreakerName":"inventory-query","type":"STATE_TRANSITION","creationTime":"2025-05-01T10:15:30.121Z",
//!    "stateTransition":"CLOSED_TO_OPEN"}]}
//! ```
//!
//! The other events: `{"retryName":..,"type":"RETRY","creationTime":..,"errorMessage":"ConnectionRefused","numberOfAttempts":1}`,
//! `{"bulkheadName":..,"type":"CALL_REJECTED","creationTime":..}`,
//! `{"rateLimiterName":..,"type":"FAILED_ACQUIRE","creationTime":..}`,
//! `{"timeLimiterName":..,"type":"TIMEOUT","creationTime":..}`.
//!
//! `GET /actuator/health` (as Spring Boot answers with `show-details: always`
//! and both of Resilience4j's health indicators enabled; see
//! [Health](#health) for the statuses):
//!
//! ```json
//! {"status":"UP","components":{
//!   "circuitBreakers":{"status":"UP","details":{"inventory-query":{"status":"CIRCUIT_OPEN",
//!     "details":{"failureRate":"60.0%",..,"state":"OPEN"}},"payment":{"status":"UP","details":{..}}}},
//!   "rateLimiters":{"status":"UNKNOWN"},
//!   "ping":{"status":"UP"}}}
//! ```
//!
//! `GET /actuator/resilience` with [`ActuatorBuilder::expose_sources`]
//! (without it, `source` has no `file` nor `warnings`, and call sites and
//! their layers no `file` nor `line`):
//!
//! ```json
//! {"source":{"file":"resilience.toml","envOverrides":[],"warnings":[],"declarations":2},
//!  "callSites":[{"function":"inventory::Inventory::query","file":"src/inventory.rs","line":41,
//!    "errorType":"InventoryError","stack":[
//!      {"aspect":"retry","name":"inventory-query","line":41,"configured":true,
//!       "chain":["instances.inventory-query"],"settings":{"max-attempts":"2",..},"tags":{},
//!       "state":{"numberOfSuccessfulCallsWithoutRetryAttempt":7,..}},
//!      {"aspect":"circuitbreaker","name":"inventory-query","line":42,"fallback":"Self::unknown",..}]}],
//!  "instances":{"circuitbreaker":{"inventory-query":{..,"usedBy":["inventory::Inventory::query"]}},
//!    "retry":{..},"bulkhead":{..},"thread-pool-bulkhead":{},"ratelimiter":{},"timelimiter":{..},"hedge":{},"deadline":{}}}
//! ```
//!
//! `POST /actuator/circuitbreakers/inventory-query` with
//! `Authorization: Bearer <token>` and `{"updateState":"FORCE_OPEN"}`:
//!
//! ```json
//! {"circuitBreakerName":"inventory-query","currentState":"FORCED_OPEN",
//!  "message":"inventory-query state has been changed successfully"}
//! ```
//!
//! # Health
//!
//! Resilience4j's `CircuitBreakersHealthIndicator` and
//! `RateLimitersHealthIndicator` report the instances whose
//! `register-health-indicator` is `true` in resilience.toml (default
//! `false`), with the details of `/actuator/circuitbreakers`:
//!
//! | circuit breaker state | status |
//! | --- | --- |
//! | CLOSED | `UP` |
//! | OPEN | `DOWN` if `allow-health-indicator-to-fail`, else `CIRCUIT_OPEN` |
//! | HALF_OPEN | `CIRCUIT_HALF_OPEN` |
//! | DISABLED, FORCED_OPEN, METRICS_ONLY | `UNKNOWN` |
//!
//! A rate limiter is `UP` while it has permits or nobody waits; when a
//! permit would take longer than its timeout it is `DOWN` if
//! `allow-health-indicator-to-fail`, else `RATE_LIMITED`; otherwise
//! `UNKNOWN` (details `availablePermissions`, `numberOfWaitingThreads`).
//!
//! Statuses are aggregated as Spring Boot's `SimpleStatusAggregator` does:
//! the first of `DOWN`, `OUT_OF_SERVICE`, `UP`, `UNKNOWN` present, ignoring
//! the others (`CIRCUIT_OPEN` alone aggregates to `UNKNOWN`, and next to a
//! breaker that is `UP` to `UP`). A `ping` component is always `UP`, as
//! Spring Boot's is. The answer is 503 when the status is `DOWN` or
//! `OUT_OF_SERVICE`, else 200.
//!
//! # Keyed instances
//!
//! The instances of `key = expr` call sites (one per key under the
//! attribute's name) are not entries of the registries; the actuator shows
//! them under their name, so that an operator sees which tenant is refused.
//! A name's keys are listed refusing first (an OPEN or FORCED_OPEN breaker,
//! a full bulkhead, a rate limiter without permits, then a HALF_OPEN
//! breaker), then by key, at most `max-keys` of them, each its key and its
//! state as the name's own instance shows it:
//!
//! ```json
//! {"circuitBreakers":{"payment":{..,"state":"CLOSED","keys":[
//!   {"key":"acme","state":"OPEN","failedCalls":2,..},
//!   {"key":"globex","state":"CLOSED",..}]}}}
//! ```
//!
//! The other lists add `"keyed":[{"name":"payment","maxKeys":100,"keys":[..]}]`
//! beside the names. In `/actuator/health`, a keyed name whose health
//! indicator is registered lists its keys in its details the same way, each
//! with its own `status`; the keys do not count in the name's status, which
//! stays its unkeyed instance's (one tenant's open breaker is not the
//! service's health). `/actuator/resilience` shows every live key's state.
//!
//! # State changes
//!
//! Without [`ActuatorBuilder::state_changes`] the `POST` routes do not exist
//! (404), whatever the request. With it, a request without
//! `Authorization: Bearer <token>` carrying that token is refused with 401
//! before anything else is looked at. An unknown instance is a 404 (unlike
//! Resilience4j, which creates it), a malformed body a 400, an illegal
//! transition a 409. The body is read only once the token is checked, and
//! at most 64 KiB of it whatever body limit the application's router sets
//! (also under `DefaultBodyLimit::disable()`): past it a 413. The token is
//! compared without stopping at the first difference or at a difference of
//! length. `Debug` never prints it. Serve the router on an address operators reach, not the
//! public one: the read routes are not authenticated, as Spring Boot's
//! actuator is not unless Spring Security is added.
//!
//! A forced open with a limit, `{"updateState":"FORCE_OPEN","for":"10m"}`,
//! refuses every call for that long and then moves to HALF_OPEN (a
//! `FORCED_OPEN_TO_HALF_OPEN` event): the half-open probes decide whether
//! the breaker closes or opens again, as after any OPEN, so the end of the
//! limit never sends the whole load to a dependency that may still be down.
//! The answer and the audit entry's `outcome` say so; a limit outside 1ms
//! ..= 365 days is a 400 that states the range. Without a limit a warning is
//! logged: nothing ends it but another change.
//!
//! The audit log names the client's address only when the server hands it
//! to the router: serve it with connect info, as the example inventory
//! service does, or every entry's `peer` is `"unknown"`:
//!
//! ```no_run
//! # async fn serve(app: axum::Router) -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(
//!     listener,
//!     app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
//! )
//! .await
//! # }
//! # let _ = serve;
//! ```
//!
//! # Refresh
//!
//! `POST /actuator/refresh` (Spring Cloud's name for it) is a state change:
//! the bearer token, the audit log and the body limit are those of the other
//! `POST` routes. It reloads the configuration of the registries shown, all
//! or nothing, as [`reload`](crate::reload) does: for the global registries
//! [`reload`](crate::reload) itself, for a [`Resilience`] given with
//! [`ActuatorBuilder::resilience`] its [`Resilience::reload`], or what
//! [`ActuatorBuilder::reload_with`] gives. The reload (reading, parsing
//! and checking the file, at most 1 MiB) runs on tokio's blocking pool, so
//! the runtime's other tasks go on meanwhile. The answer lists the key paths
//! that changed, `{"changed":[]}` for none (an instance created or back to
//! the defaults is its table's path, `bulkhead.instances.inventory-query`).
//! A refused configuration is a 400: Spring Boot's error document with
//! `problems`, each `{"source":"resilience.toml","key":"..","value":"..","message":".."}`,
//! and nothing changes. `?dryRun=true` answers the same without applying
//! anything. Registries given without a way to reload them answer 404, and
//! global registries that [`init`](crate::init) did not build 409.
//!
//! ```json
//! {"changed":["circuitbreaker.instances.inventory-query.failure-rate-threshold"]}
//! ```
//!
//! # Event streams
//!
//! Every stream of one set of registries reads one broadcast channel. A
//! protected call pays for the streams only while one is open, and then the
//! same whatever their number: one JSON of the event and one send into that
//! channel (which wakes the streams that wait, at most
//! [`ActuatorBuilder::max_stream_clients`]); each stream filters by
//! instance and type on its own task. A stream that falls more than 256
//! events behind misses the oldest.
//!
//! The streams' routes are read routes, open to anyone who reaches the
//! actuator; each stream holds a slot while it is open. So that anonymous
//! clients cannot take them all, some are kept for the operator (requests
//! with the bearer token; [`ActuatorBuilder::operator_stream_clients`]),
//! and one IP address holds at most
//! [`ActuatorBuilder::max_stream_clients_per_peer`] without the token.
//!
//! # Registries
//!
//! By default the router shows the global registries ([`registries`](crate::registries))
//! and the report of the settings in force (that of [`init`](crate::init),
//! or of the last [`reload`](crate::reload)); it never builds them (call
//! `init` first). [`ActuatorBuilder::resilience`] shows those of
//! [`Resilience::builder()`](crate::config::Resilience::builder)`.load()`, with
//! their report and their reload; [`ActuatorBuilder::registries`] and
//! [`ActuatorBuilder::report`] show any others.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::sse::Sse;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use metrics_exporter_prometheus::PrometheusHandle;
use resil_config::{Aspect, InitError, Registries, ReloadReport, Report, Resilience};
use resil_core::bulkhead::Bulkhead;
use resil_core::circuit_breaker::CircuitBreaker;
use resil_core::clock::Nanos;
use resil_core::deadline::Deadline;
use resil_core::hedge::Hedge;
use resil_core::rate_limiter::RateLimiter;
use resil_core::retry::Retry;
use resil_core::thread_pool_bulkhead::ThreadPoolBulkhead;
use resil_core::time_limiter::TimeLimiter;
use serde_json::{Map, Value, json};

use crate::observe::Binding;

mod audit;
mod change;
mod events;
mod faults;
mod health;
mod instances;
pub(crate) mod json;
mod metrics_json;
mod prometheus;
mod resilience;
mod response;
mod router;
mod shared;
pub(crate) mod stream;

/// `metrics-exporter-prometheus`, whose [`PrometheusHandle`] [`ActuatorBuilder::prometheus`]
/// takes, re-exported so that the application uses the same version.
pub use metrics_exporter_prometheus;

use self::audit::audit_log;
use self::change::*;
use self::events::*;
use self::json::Shown;
use self::response::*;
use self::shared::*;

/// The actuator: what it shows and what it allows; [`Actuator::router`] serves it.
///
/// # Examples
///
/// ```
/// use resil::actuator::Actuator;
///
/// let router: axum::Router = Actuator::builder().build().router();
/// # drop(router);
/// ```
#[derive(Debug, Clone)]
pub struct Actuator {
    shared: Arc<Shared>,
}

/// Chooses the registries, the Prometheus handle and whether state changes exist.
///
/// # Examples
///
/// Registries loaded without [`init`](crate::init), shown with their report:
///
/// ```
/// use resil::config::Resilience;
/// use resil::actuator::Actuator;
///
/// let (registries, report) = Resilience::builder()
///     .file_contents("resilience.toml", "[circuitbreaker.instances.inventory-query]\n")
///     .env_vars(Vec::<(String, String)>::new())
///     .load()?
///     .into_parts();
/// let actuator = Actuator::builder()
///     .registries(registries)
///     .report(report)
///     .state_changes(std::env::var("ACTUATOR_TOKEN").unwrap_or_default())
///     .build();
/// let router: axum::Router = actuator.router();
/// # drop(router);
/// # Ok::<(), resil::config::InitError>(())
/// ```
pub struct ActuatorBuilder {
    source: Source,
    report: Option<Report>,
    reload: Option<ReloadFn>,
    prometheus: Option<PrometheusHandle>,
    token: Option<String>,
    max_stream_clients: usize,
    operator_stream_clients: Option<usize>,
    max_stream_clients_per_peer: usize,
    expose_sources: bool,
}

/// What the token's place shows in `Debug`: whether there is one, never its text.
const REDACTED: &str = "<redacted>";

impl std::fmt::Debug for ActuatorBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActuatorBuilder")
            .field("source", &self.source)
            .field("report", &self.report.is_some())
            .field("reload", &self.reload.is_some())
            .field("prometheus", &self.prometheus.is_some())
            .field("token", &self.token.as_ref().map(|_| REDACTED))
            .field("max_stream_clients", &self.max_stream_clients)
            .field("operator_stream_clients", &self.operator_stream_clients)
            .field(
                "max_stream_clients_per_peer",
                &self.max_stream_clients_per_peer,
            )
            .field("expose_sources", &self.expose_sources)
            .finish()
    }
}

/// The registries an [`Actuator`] shows: a `&'static Registries` (the
/// global ones), an `Arc<Registries>` or owned [`Registries`].
///
/// # Examples
///
/// ```
/// use resil::config::Registries;
/// use resil::actuator::{Actuator, SharedRegistries};
/// use std::sync::Arc;
///
/// let shared = Arc::new(Registries::of_defaults());
/// let _ = Actuator::builder().registries(shared.clone()).build();
/// let _: SharedRegistries = resil::registries().into();
/// ```
#[derive(Debug)]
pub struct SharedRegistries(Source);

impl From<&'static Registries> for SharedRegistries {
    fn from(r: &'static Registries) -> Self {
        SharedRegistries(Source::Static(r))
    }
}

impl From<Arc<Registries>> for SharedRegistries {
    fn from(r: Arc<Registries>) -> Self {
        SharedRegistries(Source::Owned(r))
    }
}

impl From<Registries> for SharedRegistries {
    fn from(r: Registries) -> Self {
        SharedRegistries(Source::Owned(Arc::new(r)))
    }
}

/// The registries of a [`Resilience`], with its report in force and its reload
/// (what [`ActuatorBuilder::resilience`] shows).
impl From<Arc<Resilience>> for SharedRegistries {
    fn from(r: Arc<Resilience>) -> Self {
        SharedRegistries(Source::Resilience(r))
    }
}

impl Actuator {
    /// A builder: the global registries, no Prometheus route, no state changes.
    pub fn builder() -> ActuatorBuilder {
        ActuatorBuilder {
            source: Source::Global,
            report: None,
            reload: None,
            prometheus: None,
            token: None,
            max_stream_clients: DEFAULT_MAX_STREAM_CLIENTS,
            operator_stream_clients: None,
            max_stream_clients_per_peer: DEFAULT_MAX_STREAM_CLIENTS_PER_PEER,
            expose_sources: false,
        }
    }

    /// The routes, as a stateless router to [`merge`](Router::merge) into the application's.
    pub fn router(&self) -> Router {
        router::routes(&self.shared)
    }
}

impl ActuatorBuilder {
    /// Shows these registries instead of the global ones (without a
    /// [`report`](ActuatorBuilder::report), `/actuator/resilience` shows no
    /// inheritance chain and health indicators are off).
    pub fn registries(mut self, registries: impl Into<SharedRegistries>) -> Self {
        self.source = registries.into().0;
        self
    }

    /// The report of the registries (from [`Resilience::into_parts`](crate::config::Resilience::into_parts)):
    /// inheritance chains, health-indicator settings, declarations. The
    /// global registries use the report in force (of [`init`](crate::init)
    /// or of the last [`reload`](crate::reload)) without it, and a
    /// [`Resilience`] its own.
    pub fn report(mut self, report: Report) -> Self {
        self.report = Some(report);
        self
    }

    /// Shows the registries of `resilience` with its report in force, and
    /// makes `POST /actuator/refresh` call its [`Resilience::reload`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use resil::config::Resilience;
    /// use resil::actuator::Actuator;
    ///
    /// let loaded = Arc::new(
    ///     Resilience::builder()
    ///         .file_contents("resilience.toml", "[circuitbreaker.instances.inventory-query]\n")
    ///         .env_vars(Vec::<(String, String)>::new())
    ///         .load()?,
    /// );
    /// let router: axum::Router = Actuator::builder()
    ///     .resilience(loaded.clone())
    ///     .state_changes("s3cr3t-token")
    ///     .build()
    ///     .router();
    /// # drop(router);
    /// # Ok::<(), resil::config::InitError>(())
    /// ```
    pub fn resilience(mut self, resilience: Arc<Resilience>) -> Self {
        self.source = Source::Resilience(resilience);
        self
    }

    /// What `POST /actuator/refresh` calls (`true` for `?dryRun=true`),
    /// instead of the reload of the registries shown.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil::actuator::Actuator;
    ///
    /// let actuator = Actuator::builder()
    ///     .state_changes("s3cr3t-token")
    ///     .reload_with(|dry_run| if dry_run { resil::reload_dry_run() } else { resil::reload() })
    ///     .build();
    /// # drop(actuator);
    /// ```
    pub fn reload_with<F>(mut self, reload: F) -> Self
    where
        F: Fn(bool) -> Result<ReloadReport, InitError> + Send + Sync + 'static,
    {
        self.reload = Some(Arc::new(reload));
        self
    }

    /// Serves `/actuator/prometheus` from this handle (the route does not exist without one).
    pub fn prometheus(mut self, handle: PrometheusHandle) -> Self {
        self.prometheus = Some(handle);
        self
    }

    /// Enables the `POST` routes that change state, for requests that carry
    /// `Authorization: Bearer <bearer_token>`. Without this call they do not
    /// exist; with an empty token they exist and refuse every request.
    pub fn state_changes(mut self, bearer_token: impl Into<String>) -> Self {
        self.token = Some(bearer_token.into());
        self
    }

    /// At most `n` event streams open at once, all `/actuator/stream*events`
    /// routes together (default 16); past it a stream is refused with 503
    /// until one closes. With 0 every stream is refused.
    pub fn max_stream_clients(mut self, n: usize) -> Self {
        self.max_stream_clients = n;
        self
    }

    /// Of [`ActuatorBuilder::max_stream_clients`], `n` only for clients that
    /// send `Authorization: Bearer <token>` (the token of
    /// [`ActuatorBuilder::state_changes`]), so that no number of anonymous
    /// clients keeps the operator from watching. Default: a quarter of the
    /// streams, at least 1, with state changes enabled; none without (there
    /// is no token to tell the operator by). The operator may take any
    /// free slot; anonymous clients get a 503 once only reserved ones are
    /// left.
    pub fn operator_stream_clients(mut self, n: usize) -> Self {
        self.operator_stream_clients = Some(n);
        self
    }

    /// At most `n` event streams open from one IP address without the
    /// bearer token (default 4); past it a 429. Needs the peer's address:
    /// serve the router with
    /// `into_make_service_with_connect_info::<SocketAddr>()`, without which
    /// only the limits of all streams apply.
    pub fn max_stream_clients_per_peer(mut self, n: usize) -> Self {
        self.max_stream_clients_per_peer = n;
        self
    }

    /// Shows where things come from in `/actuator/resilience`: the
    /// configuration file's path and its warnings (which name it), and each
    /// call site's source file and lines. Off by default: the document then
    /// leaves them out.
    pub fn expose_sources(mut self, expose: bool) -> Self {
        self.expose_sources = expose;
        self
    }

    /// Builds the actuator, and subscribes to the registries' instances for
    /// the event streams and the meters (the global registries are
    /// subscribed to as soon as they are built).
    pub fn build(self) -> Actuator {
        let reserved = match (&self.token, self.operator_stream_clients) {
            (_, Some(n)) => n,
            (Some(_), None) => (self.max_stream_clients / 4).max(1),
            (None, None) => 0,
        };
        let streams = stream::Slots::new(
            self.max_stream_clients,
            reserved,
            self.max_stream_clients_per_peer,
        );
        let shared = Shared {
            source: self.source,
            report: self.report.map(Arc::new),
            reload: self.reload,
            prometheus: self.prometheus,
            token: self.token,
            streams,
            expose_sources: self.expose_sources,
            audit: audit::Audit::default(),
        };
        if let Some(registries) = shared.registries_if_any() {
            let _ = Binding::of(registries);
        }
        Actuator {
            shared: Arc::new(shared),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_does_not_print_the_token() {
        let builder = Actuator::builder().state_changes("s3cr3t-token");
        let printed = format!("{builder:?}");
        assert!(!printed.contains("s3cr3t"), "{printed}");
        assert!(
            printed.contains(r#"token: Some("<redacted>")"#),
            "{printed}"
        );
        let printed = format!("{:?}", Actuator::builder());
        assert!(printed.contains("token: None"), "{printed}");
    }
}
