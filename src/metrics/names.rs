//! The meters' names, as Prometheus shows them.

/// `resilience4j_circuitbreaker_state`: 1 for the current state (tag `state`), 0 for the others.
pub const CIRCUIT_BREAKER_STATE: &str = "resilience4j_circuitbreaker_state";
/// `resilience4j_circuitbreaker_buffered_calls`: calls in the window (tag `kind` = `failed`, `successful`).
pub const CIRCUIT_BREAKER_BUFFERED_CALLS: &str = "resilience4j_circuitbreaker_buffered_calls";
/// `resilience4j_circuitbreaker_slow_calls`: slow calls in the window (tag `kind`).
pub const CIRCUIT_BREAKER_SLOW_CALLS: &str = "resilience4j_circuitbreaker_slow_calls";
/// `resilience4j_circuitbreaker_failure_rate`: percent, `-1` below the minimum number of calls.
pub const CIRCUIT_BREAKER_FAILURE_RATE: &str = "resilience4j_circuitbreaker_failure_rate";
/// `resilience4j_circuitbreaker_slow_call_rate`: percent, `-1` below the minimum number of calls.
pub const CIRCUIT_BREAKER_SLOW_CALL_RATE: &str = "resilience4j_circuitbreaker_slow_call_rate";
/// `resilience4j_circuitbreaker_calls_seconds`: call durations (tag `kind` = `successful`, `failed`, `ignored`).
pub const CIRCUIT_BREAKER_CALLS: &str = "resilience4j_circuitbreaker_calls_seconds";
/// `resilience4j_circuitbreaker_not_permitted_calls_total`: refused calls (tag `kind` = `not_permitted`).
pub const CIRCUIT_BREAKER_NOT_PERMITTED_CALLS: &str =
    "resilience4j_circuitbreaker_not_permitted_calls_total";
/// `resilience4j_circuitbreaker_calls_total`: refused calls (tag `kind` =
/// `not_permitted`), Resilience4j 1.x's name for the not-permitted counter,
/// which the official Grafana board of Resilience4j still queries.
pub const CIRCUIT_BREAKER_CALLS_TOTAL: &str = "resilience4j_circuitbreaker_calls_total";
/// `resilience4j_circuitbreaker_max_buffered_calls`: the calls the window
/// holds (`sliding-window-size` of a count-based window, `NaN` for a
/// time-based one), Resilience4j 1.x's gauge.
pub const CIRCUIT_BREAKER_MAX_BUFFERED_CALLS: &str =
    "resilience4j_circuitbreaker_max_buffered_calls";
/// Bucket bounds (seconds) for [`CIRCUIT_BREAKER_CALLS`], what Micrometer's
/// `percentiles-histogram` gives a timer, in fewer buckets: 1 ms to 30 s,
/// each about 2.5 times the one before (see the module's docs).
pub const CALL_DURATION_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];
/// `resil_circuitbreaker_failure_rate_threshold`: the breaker's
/// `failure-rate-threshold` in force (percent).
pub const CIRCUIT_BREAKER_FAILURE_RATE_THRESHOLD: &str =
    "resil_circuitbreaker_failure_rate_threshold";
/// `resil_circuitbreaker_slow_call_rate_threshold`: the breaker's
/// `slow-call-rate-threshold` in force (percent).
pub const CIRCUIT_BREAKER_SLOW_CALL_RATE_THRESHOLD: &str =
    "resil_circuitbreaker_slow_call_rate_threshold";
/// `resilience4j_retry_calls_total`: ended calls by outcome (tag `kind`).
pub const RETRY_CALLS: &str = "resilience4j_retry_calls_total";
/// `resilience4j_bulkhead_available_concurrent_calls`: free permits.
pub const BULKHEAD_AVAILABLE_CONCURRENT_CALLS: &str =
    "resilience4j_bulkhead_available_concurrent_calls";
/// `resilience4j_bulkhead_max_allowed_concurrent_calls`: the limit.
pub const BULKHEAD_MAX_ALLOWED_CONCURRENT_CALLS: &str =
    "resilience4j_bulkhead_max_allowed_concurrent_calls";
/// `resil_bulkhead_limit`: the semaphore bulkhead's live limit (an adaptive
/// one's as it moves), also set at each `LIMIT_CHANGED` event.
pub const BULKHEAD_LIMIT: &str = "resil_bulkhead_limit";
/// `resilience4j_bulkhead_queue_depth`: tasks waiting in a thread-pool bulkhead's queue.
pub const THREAD_POOL_BULKHEAD_QUEUE_DEPTH: &str = "resilience4j_bulkhead_queue_depth";
/// `resilience4j_bulkhead_queue_capacity`: the queue's configured capacity.
pub const THREAD_POOL_BULKHEAD_QUEUE_CAPACITY: &str = "resilience4j_bulkhead_queue_capacity";
/// `resilience4j_bulkhead_thread_pool_size`: threads in the pool now.
pub const THREAD_POOL_BULKHEAD_THREAD_POOL_SIZE: &str = "resilience4j_bulkhead_thread_pool_size";
/// `resilience4j_bulkhead_max_thread_pool_size`: the configured maximum.
pub const THREAD_POOL_BULKHEAD_MAX_THREAD_POOL_SIZE: &str =
    "resilience4j_bulkhead_max_thread_pool_size";
/// `resilience4j_bulkhead_core_thread_pool_size`: the configured core size.
pub const THREAD_POOL_BULKHEAD_CORE_THREAD_POOL_SIZE: &str =
    "resilience4j_bulkhead_core_thread_pool_size";
/// `resilience4j_bulkhead_active_thread_count`: threads running a task.
pub const THREAD_POOL_BULKHEAD_ACTIVE_THREAD_COUNT: &str =
    "resilience4j_bulkhead_active_thread_count";
/// `resilience4j_bulkhead_available_thread_count`: maximum minus active threads.
pub const THREAD_POOL_BULKHEAD_AVAILABLE_THREAD_COUNT: &str =
    "resilience4j_bulkhead_available_thread_count";
/// `resilience4j_ratelimiter_available_permissions`: permits in the current cycle.
pub const RATE_LIMITER_AVAILABLE_PERMISSIONS: &str =
    "resilience4j_ratelimiter_available_permissions";
/// `resilience4j_ratelimiter_waiting_threads`: callers waiting (Resilience4j's underscore kept).
pub const RATE_LIMITER_WAITING_THREADS: &str = "resilience4j_ratelimiter_waiting_threads";
/// `resil_cluster_backend_up`: 1 while the scripts on the Redis key of a
/// fleet-wide limiter (`kind` = `ratelimiter`) or half-open episode (`kind`
/// = `circuitbreaker`) succeed, 0 while they fail or are late (only for
/// instances with a `cluster-url`).
pub const CLUSTER_BACKEND_UP: &str = "resil_cluster_backend_up";
/// `resilience4j_timelimiter_calls_total`: calls by outcome (tag `kind` = `successful`, `failed`, `timeout`).
pub const TIME_LIMITER_CALLS: &str = "resilience4j_timelimiter_calls_total";
/// `resil_retry_attempts_total`: attempts that reached the downstream, per retry.
pub const RETRY_ATTEMPTS: &str = "resil_retry_attempts_total";
/// `resil_rejections_total`: refused calls, per instance (tag `kind` = the aspect).
pub const REJECTIONS: &str = "resil_rejections_total";
/// `resil_fallback_calls_total`: fallbacks run (tags `layer`, `cause`, `outcome`).
pub const FALLBACK_CALLS: &str = "resil_fallback_calls_total";
/// `resil_thread_pool_bulkhead_queue_oldest_age_seconds`: the oldest queued task's wait.
pub const THREAD_POOL_BULKHEAD_QUEUE_OLDEST_AGE: &str =
    "resil_thread_pool_bulkhead_queue_oldest_age_seconds";
/// `resil_retry_nested_total`: retrying calls inside retrying calls (tags `outer`, `inner`).
pub const RETRY_NESTED: &str = "resil_retry_nested_total";
/// `resil_shadow_refusals_total`: calls an instance in shadow mode would have
/// refused (tag `kind` = the aspect, as resilience.toml names it).
pub const SHADOW_REFUSALS: &str = "resil_shadow_refusals_total";
/// `resil_deadline_exceeded_total`: calls the request's deadline refused
/// or cut short (tag `kind` = the pattern that noticed).
pub const DEADLINE_EXCEEDED: &str = "resil_deadline_exceeded_total";
/// `resil_retry_budget_denied_total`: retries a retry budget denied (tag `name`, the budget's).
pub const RETRY_BUDGET_DENIED: &str = "resil_retry_budget_denied_total";
/// `resil_retry_budget_balance`: the retries a retry budget's balance pays for (tag `name`).
pub const RETRY_BUDGET_BALANCE: &str = "resil_retry_budget_balance";
/// `resil_hedge_calls_total`: hedged calls by who answered (tag `winner` =
/// `primary`, `hedge`, `none` when every attempt failed).
pub const HEDGE_CALLS: &str = "resil_hedge_calls_total";
/// `resil_hedge_attempts_total`: hedged attempts started (the primaries are
/// not counted).
pub const HEDGE_ATTEMPTS: &str = "resil_hedge_attempts_total";
pub use super::fault::FAULTS_INJECTED;
/// `resil_config_reloads_total`: reloads of the configuration (tag `outcome` = `applied`, `rejected`).
pub const CONFIG_RELOADS: &str = "resil_config_reloads_total";
/// `resil_config_reload_pending`: 1 while a changed file waits in `watch()`
/// for its delay (`[resil] reload-stagger`), 0 otherwise.
pub const CONFIG_RELOAD_PENDING: &str = "resil_config_reload_pending";
