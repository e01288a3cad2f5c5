//! The meters' descriptions and units, given to each recorder once.

use std::sync::atomic::{AtomicUsize, Ordering};

use ::metrics::Recorder;

use super::names::*;
use super::{fault, keyed};

/// Identifies the recorder that the facade would use on this thread now.
pub(super) fn recorder_id() -> usize {
    ::metrics::with_recorder(|r: &dyn Recorder| r as *const dyn Recorder as *const () as usize)
}

/// The recorder the descriptions were last given to.
static DESCRIBED: AtomicUsize = AtomicUsize::new(0);

/// Gives the current recorder Resilience4j's descriptions and units, once per recorder.
pub(crate) fn describe() {
    if keyed::active() {
        return; // a keyed instance's own series: nothing to describe there
    }
    let id = recorder_id();
    if DESCRIBED.swap(id, Ordering::AcqRel) == id {
        return;
    }
    use ::metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_gauge!(CIRCUIT_BREAKER_STATE, "The states of the circuit breaker");
    describe_gauge!(
        CIRCUIT_BREAKER_BUFFERED_CALLS,
        "The number of buffered calls stored in the ring buffer"
    );
    describe_gauge!(
        CIRCUIT_BREAKER_SLOW_CALLS,
        "The number of slow calls which were slower than a certain threshold"
    );
    describe_gauge!(
        CIRCUIT_BREAKER_FAILURE_RATE,
        "The failure rate of the circuit breaker"
    );
    describe_gauge!(
        CIRCUIT_BREAKER_SLOW_CALL_RATE,
        "The slow call of the circuit breaker"
    );
    describe_histogram!(
        CIRCUIT_BREAKER_CALLS,
        Unit::Seconds,
        "Total number of calls"
    );
    describe_counter!(
        CIRCUIT_BREAKER_NOT_PERMITTED_CALLS,
        "Total number of not permitted calls"
    );
    describe_counter!(
        CIRCUIT_BREAKER_CALLS_TOTAL,
        "Total number of not permitted calls"
    );
    describe_gauge!(
        CIRCUIT_BREAKER_MAX_BUFFERED_CALLS,
        "The maximum number of buffered calls which can be stored in the ring buffer"
    );
    describe_gauge!(
        CIRCUIT_BREAKER_FAILURE_RATE_THRESHOLD,
        "The failure rate threshold of the circuit breaker, in percent"
    );
    describe_gauge!(
        CIRCUIT_BREAKER_SLOW_CALL_RATE_THRESHOLD,
        "The slow call rate threshold of the circuit breaker, in percent"
    );
    describe_counter!(RETRY_CALLS, "The number of calls");
    describe_counter!(HEDGE_CALLS, "The number of hedged calls, by winner");
    describe_counter!(HEDGE_ATTEMPTS, "The number of hedged attempts started");
    fault::describe();
    describe_gauge!(
        BULKHEAD_AVAILABLE_CONCURRENT_CALLS,
        "The number of available permissions"
    );
    describe_gauge!(
        BULKHEAD_MAX_ALLOWED_CONCURRENT_CALLS,
        "The maximum number of available permissions"
    );
    describe_gauge!(
        BULKHEAD_LIMIT,
        "The bulkhead's current limit, which an adaptive bulkhead moves"
    );
    describe_gauge!(THREAD_POOL_BULKHEAD_QUEUE_DEPTH, "The queue depth");
    describe_gauge!(THREAD_POOL_BULKHEAD_QUEUE_CAPACITY, "The queue capacity");
    describe_gauge!(
        THREAD_POOL_BULKHEAD_THREAD_POOL_SIZE,
        "The thread pool size"
    );
    describe_gauge!(
        THREAD_POOL_BULKHEAD_MAX_THREAD_POOL_SIZE,
        "The maximum thread pool size"
    );
    describe_gauge!(
        THREAD_POOL_BULKHEAD_CORE_THREAD_POOL_SIZE,
        "The core thread pool size"
    );
    describe_gauge!(
        THREAD_POOL_BULKHEAD_ACTIVE_THREAD_COUNT,
        "The number of active threads"
    );
    describe_gauge!(
        THREAD_POOL_BULKHEAD_AVAILABLE_THREAD_COUNT,
        "The number of available threads"
    );
    describe_gauge!(
        RATE_LIMITER_AVAILABLE_PERMISSIONS,
        "The number of available permissions"
    );
    describe_gauge!(
        RATE_LIMITER_WAITING_THREADS,
        "The number of waiting threads"
    );
    describe_gauge!(
        CLUSTER_BACKEND_UP,
        "Whether the cluster backend answers (1) or is down (0)"
    );
    describe_counter!(TIME_LIMITER_CALLS, "The number of calls");
    describe_counter!(
        RETRY_ATTEMPTS,
        "The number of attempts that reached the downstream"
    );
    describe_counter!(REJECTIONS, "The number of calls the instance refused");
    describe_counter!(
        DEADLINE_EXCEEDED,
        "The number of calls the request's deadline refused or cut short"
    );
    describe_counter!(
        RETRY_BUDGET_DENIED,
        "The number of retries the retry budget denied"
    );
    describe_gauge!(
        RETRY_BUDGET_BALANCE,
        "The number of retries the retry budget's balance pays for"
    );
    describe_counter!(FALLBACK_CALLS, "The number of fallbacks run");
    describe_gauge!(
        THREAD_POOL_BULKHEAD_QUEUE_OLDEST_AGE,
        Unit::Seconds,
        "How long the oldest queued task has waited"
    );
    describe_counter!(
        RETRY_NESTED,
        "The number of retrying calls made inside another retrying call"
    );
    describe_counter!(
        SHADOW_REFUSALS,
        "The number of calls an instance in shadow mode would have refused"
    );
    describe_counter!(
        CONFIG_RELOADS,
        "The number of configuration reloads, applied or rejected"
    );
    describe_gauge!(
        CONFIG_RELOAD_PENDING,
        "1 while a changed configuration file waits for its reload-stagger delay"
    );
}
