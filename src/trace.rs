//! `tracing` events for what an operator wants to see in the logs.
//!
//! | target | level | event |
//! | --- | --- | --- |
//! | `resil::circuit_breaker` | `WARN` | a transition to OPEN or FORCED_OPEN |
//! | `resil::circuit_breaker` | `INFO` | any other state transition, a reset |
//! | `resil::circuit_breaker` | `DEBUG` | a call not permitted; a rate above its threshold |
//! | `resil::retry` | `DEBUG` | a retry (fields `attempt`, `wait_ms`, `error`: the kind, when known) |
//! | `resil::retry` | `INFO` | a call that failed after its retries |
//! | `resil::bulkhead`, `resil::thread_pool_bulkhead` | `DEBUG` | a call rejected |
//! | `resil::bulkhead` | `DEBUG` | a change of the limit (fields `from`, `to`: an adaptive limit's, at most once a sampling window, or a new configuration's) |
//! | `resil::rate_limiter` | `DEBUG` | a request not permitted |
//! | `resil::time_limiter` | `DEBUG` | a timeout |
//! | `resil::hedge` | `DEBUG` | a hedged attempt started (fields `attempt`, and `after`: the delay, unless a failure started it) |
//! | each of the above but the breaker's | `DEBUG` | in shadow mode (`shadow = true`), a call it would have refused and let through |
//! | `resil::reload` | `INFO`, `WARN` | a reload applied (its changes), or refused (its problems; the settings in force are kept); field `outcome` |
//!
//! Every event has the field `name` (the instance). Per-call events are at
//! `DEBUG` so that an outage does not flood the logs; the transitions say
//! when it starts and ends.
//!
//! # The fields of the caller's span
//!
//! A protected call also records what happened to it on the caller's
//! current span (the span current where each event is published), in those
//! of these fields the span declares (`tracing` records no field a span did
//! not declare; declare them `Empty`):
//!
//! | field | value | recorded at |
//! | --- | --- | --- |
//! | `resil.name` | the instance's name | each call's events, of every pattern |
//! | `resil.circuit_breaker.state` | `CLOSED`, `OPEN`, `HALF_OPEN`, `FORCED_OPEN`, `DISABLED`, `METRICS_ONLY`: the breaker's state when it let the call through or refused it | the breaker's `SUCCESS`, `ERROR`, `IGNORED_ERROR`, `NOT_PERMITTED` |
//! | `resil.retry.attempts` | the attempts made so far (1, 2, ...) | each retry, and the end of a call that was retried |
//! | `resil.rejected` | the refusal's kind: `CallNotPermitted`, `BulkheadFull`, `RequestNotPermitted`, `Timeout` | a refusal (a retried call keeps its last one) |
//!
//! A call that passes several patterns records a field more than once; a
//! subscriber that keeps one value per field (OpenTelemetry's attributes)
//! keeps the last. A span that declares none of them costs a look at its
//! field names per event, and no allocation. The README shows a span that
//! declares them, exported with `tracing-opentelemetry`.

use std::sync::atomic::{AtomicU8, Ordering};

use resil_core::bulkhead::BulkheadEvent;
use resil_core::circuit_breaker::{CircuitBreakerEvent, State};
use resil_core::error::REJECTION_KINDS;
use resil_core::event::Event;
use resil_core::rate_limiter::RateLimiterEvent;
use resil_core::retry::RetryEvent;
use resil_core::thread_pool_bulkhead::ThreadPoolBulkheadEvent;
use resil_core::time_limiter::TimeLimiterEvent;
use tracing::field::Value;
use tracing::span::Record;
use tracing::{debug, info, warn};

use crate::observe::Observed;
use crate::observe::sink::{Follower, Sink};

/// The `tracing` sink: the events of the table above, for each instance followed.
#[derive(Debug)]
pub(crate) struct TracingSink;

/// A primitive with `tracing` events.
pub(crate) trait Traced: Observed {
    /// Writes the `tracing` event of an event, if it has one.
    fn trace(name: &str, event: &Event<Self::Kind>);

    /// What the fields of the caller's span get from a per-call event
    /// (nothing from the others); `state` is what the instance's follower
    /// keeps, from [`Traced::initial_state`] on.
    fn on_call(event: &Event<Self::Kind>, state: &AtomicU8) -> Option<CallFields>;

    /// What an instance's follower keeps between events, to start with: a
    /// breaker's state as an index of [`State::ALL`].
    fn initial_state(&self) -> u8 {
        0
    }
}

impl<P: Traced> Sink<P> for TracingSink {
    fn follow(&self, p: &P) -> Follower<P::Kind> {
        let name = resil_core::Name::from(p.instance_name());
        let state = AtomicU8::new(p.initial_state());
        Box::new(move |event| {
            P::trace(&name, event);
            if let Some(fields) = P::on_call(event, &state) {
                fields.record(&name);
            }
        })
    }
}

macro_rules! traced {
    ($($ty:ty => $f:ident, $on_call:ident;)*) => {$(
        impl Traced for $ty {
            fn trace(name: &str, event: &Event<Self::Kind>) {
                $f(name, event)
            }
            fn on_call(event: &Event<Self::Kind>, state: &AtomicU8) -> Option<CallFields> {
                $on_call(event, state)
            }
        }
    )*};
}

traced! {
    resil_core::retry::Retry => retry, retry_call;
    resil_core::bulkhead::Bulkhead => bulkhead, bulkhead_call;
    resil_core::thread_pool_bulkhead::ThreadPoolBulkhead => thread_pool_bulkhead, thread_pool_bulkhead_call;
    resil_core::rate_limiter::RateLimiter => rate_limiter, rate_limiter_call;
    resil_core::time_limiter::TimeLimiter => time_limiter, time_limiter_call;
    resil_core::hedge::Hedge => hedge, hedge_call;
}

impl Traced for resil_core::circuit_breaker::CircuitBreaker {
    fn trace(name: &str, event: &Event<CircuitBreakerEvent>) {
        circuit_breaker(name, event)
    }
    fn on_call(event: &Event<CircuitBreakerEvent>, state: &AtomicU8) -> Option<CallFields> {
        circuit_breaker_call(event, state)
    }
    fn initial_state(&self) -> u8 {
        state_index(self.state())
    }
}

/// The span fields that resil records, in the order of the module's table.
const NAME: &str = "resil.name";
const STATE: &str = "resil.circuit_breaker.state";
const ATTEMPTS: &str = "resil.retry.attempts";
const REJECTED: &str = "resil.rejected";

/// What one per-call event tells the caller's span besides the instance's
/// name.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CallFields {
    state: Option<&'static str>,
    attempts: Option<u32>,
    rejected: Option<&'static str>,
}

impl CallFields {
    /// Records the fields on the current span, those it declares (a span
    /// that declares none costs a look at its field names, nothing more).
    fn record(self, name: &str) {
        tracing::dispatcher::get_default(|dispatch| {
            let current = dispatch.current_span();
            let (Some(id), Some(meta)) = (current.id(), current.metadata()) else {
                return;
            };
            let fields = meta.fields();
            let one = |key: &str, value: &dyn Value| {
                if let Some(field) = fields.field(key) {
                    let values = [(&field, Some(value))];
                    dispatch.record(id, &Record::new(&fields.value_set(&values)));
                }
            };
            one(NAME, &name);
            if let Some(state) = self.state {
                one(STATE, &state);
            }
            if let Some(attempts) = self.attempts {
                one(ATTEMPTS, &u64::from(attempts));
            }
            if let Some(rejected) = self.rejected {
                one(REJECTED, &rejected);
            }
        });
    }
}

fn circuit_breaker(name: &str, event: &Event<CircuitBreakerEvent>) {
    const T: &str = "resil::circuit_breaker";
    match *event.kind() {
        CircuitBreakerEvent::StateTransition { from, to } => {
            let (from, to_str) = (from.as_str(), to.as_str());
            if matches!(to, State::Open | State::ForcedOpen) {
                warn!(target: T, name, from, to = to_str, "circuit breaker `{name}` changed state from {from} to {to_str}");
            } else {
                info!(target: T, name, from, to = to_str, "circuit breaker `{name}` changed state from {from} to {to_str}");
            }
        }
        CircuitBreakerEvent::Reset => {
            info!(target: T, name, "circuit breaker `{name}` was reset");
        }
        CircuitBreakerEvent::CallNotPermitted => {
            debug!(target: T, name, "circuit breaker `{name}` did not permit a call");
        }
        CircuitBreakerEvent::FailureRateExceeded { failure_rate } => {
            debug!(target: T, name, failure_rate, "circuit breaker `{name}`: failure rate {failure_rate}% above its threshold");
        }
        CircuitBreakerEvent::SlowCallRateExceeded { slow_call_rate } => {
            debug!(target: T, name, slow_call_rate, "circuit breaker `{name}`: slow-call rate {slow_call_rate}% above its threshold");
        }
        CircuitBreakerEvent::ClusterBackendChanged { up: false } => {
            warn!(target: "resil::cluster", kind = "circuitbreaker", name, up = false, "circuit breaker `{name}`: the cluster backend is down; HALF_OPEN probes go by this process's own budget");
        }
        CircuitBreakerEvent::ClusterBackendChanged { up: true } => {
            info!(target: "resil::cluster", kind = "circuitbreaker", name, up = true, "circuit breaker `{name}`: the cluster backend is up again");
        }
        _ => {}
    }
}

fn retry(name: &str, event: &Event<RetryEvent>) {
    const T: &str = "resil::retry";
    match *event.kind() {
        RetryEvent::Retry {
            number_of_retry_attempts: attempt,
            wait_interval,
            error_kind,
        } => {
            let wait_ms = u64::try_from(wait_interval.as_millis()).unwrap_or(u64::MAX);
            let with = with_kind(error_kind);
            debug!(target: T, name, attempt, wait_ms, error = error_kind, "retry `{name}`: attempt {attempt} failed{with}, next in {wait_ms} ms");
        }
        RetryEvent::Error {
            number_of_retry_attempts: attempts,
            error_kind,
        } => {
            let with = with_kind(error_kind);
            info!(target: T, name, attempts, error = error_kind, "retry `{name}`: the call failed after {attempts} attempts{with}");
        }
        RetryEvent::BudgetExhausted {
            number_of_retry_attempts: attempts,
            error_kind,
        } => {
            let with = with_kind(error_kind);
            info!(target: T, name, attempts, error = error_kind, budget_exhausted = true, "retry `{name}`: its budget denied a retry; the call failed after {attempts} attempts{with}");
        }
        RetryEvent::ShadowRefusal { error_kind, .. } => {
            let with = with_kind(error_kind);
            debug!(target: T, name, shadow = true, error = error_kind, "retry `{name}` (shadow): would have retried a call that failed{with}");
        }
        _ => {}
    }
}

/// ` with ConnectionRefused` when the error's kind is known.
fn with_kind(kind: Option<&'static str>) -> String {
    kind.map(|k| format!(" with {k}")).unwrap_or_default()
}

fn bulkhead(name: &str, event: &Event<BulkheadEvent>) {
    match event.kind() {
        BulkheadEvent::CallRejected => {
            debug!(target: "resil::bulkhead", name, "bulkhead `{name}` is full and rejected a call");
        }
        BulkheadEvent::ShadowRefusal => {
            debug!(target: "resil::bulkhead", name, shadow = true, "bulkhead `{name}` (shadow): is full, would have rejected a call");
        }
        BulkheadEvent::LimitChanged { from, to } => {
            debug!(target: "resil::bulkhead", name, from, to, "bulkhead `{name}`: limit {from} -> {to}");
        }
        _ => {}
    }
}

fn thread_pool_bulkhead(name: &str, event: &Event<ThreadPoolBulkheadEvent>) {
    match event.kind() {
        ThreadPoolBulkheadEvent::CallRejected => {
            debug!(target: "resil::thread_pool_bulkhead", name, "thread-pool bulkhead `{name}` is full and rejected a call");
        }
        ThreadPoolBulkheadEvent::ShadowRefusal => {
            debug!(target: "resil::thread_pool_bulkhead", name, shadow = true, "thread-pool bulkhead `{name}` (shadow): is full, would have rejected a call");
        }
        _ => {}
    }
}

fn rate_limiter(name: &str, event: &Event<RateLimiterEvent>) {
    match *event.kind() {
        RateLimiterEvent::FailedAcquire { permits } => {
            debug!(target: "resil::rate_limiter", name, permits, "rate limiter `{name}` did not permit a request");
        }
        RateLimiterEvent::ShadowRefusal { permits } => {
            debug!(target: "resil::rate_limiter", name, permits, shadow = true, "rate limiter `{name}` (shadow): would not have permitted a request");
        }
        RateLimiterEvent::ClusterBackendChanged { up: false } => {
            warn!(target: "resil::cluster", kind = "ratelimiter", name, up = false, "rate limiter `{name}`: the cluster backend is down; calls follow the failure mode");
        }
        RateLimiterEvent::ClusterBackendChanged { up: true } => {
            info!(target: "resil::cluster", kind = "ratelimiter", name, up = true, "rate limiter `{name}`: the cluster backend is up again");
        }
        _ => {}
    }
}

fn time_limiter(name: &str, event: &Event<TimeLimiterEvent>) {
    match event.kind() {
        TimeLimiterEvent::Timeout { .. } => {
            debug!(target: "resil::time_limiter", name, "time limiter `{name}`: the call timed out");
        }
        TimeLimiterEvent::ShadowRefusal => {
            debug!(target: "resil::time_limiter", name, shadow = true, "time limiter `{name}` (shadow): a call ran past the timeout and was left to finish");
        }
        _ => {}
    }
}

/// The index of `state` in [`State::ALL`].
fn state_index(state: State) -> u8 {
    State::ALL.iter().position(|s| *s == state).unwrap_or(0) as u8
}

fn circuit_breaker_call(
    event: &Event<CircuitBreakerEvent>,
    state: &AtomicU8,
) -> Option<CallFields> {
    let seen =
        |state: &AtomicU8| Some(State::ALL[usize::from(state.load(Ordering::Relaxed))].as_str());
    match *event.kind() {
        CircuitBreakerEvent::StateTransition { to, .. } => {
            state.store(state_index(to), Ordering::Relaxed);
            None
        }
        CircuitBreakerEvent::Success { .. }
        | CircuitBreakerEvent::Error { .. }
        | CircuitBreakerEvent::IgnoredError { .. } => Some(CallFields {
            state: seen(state),
            ..CallFields::default()
        }),
        CircuitBreakerEvent::CallNotPermitted => Some(CallFields {
            state: seen(state),
            rejected: Some(REJECTION_KINDS[0]),
            ..CallFields::default()
        }),
        _ => None,
    }
}

fn retry_call(event: &Event<RetryEvent>, _: &AtomicU8) -> Option<CallFields> {
    let attempts = match *event.kind() {
        // the attempts made so far; the next one starts after the wait
        RetryEvent::Retry {
            number_of_retry_attempts: n,
            ..
        }
        | RetryEvent::Error {
            number_of_retry_attempts: n,
            ..
        } => Some(n),
        RetryEvent::Success {
            number_of_retry_attempts: n,
            ..
        } => Some(n.saturating_add(1)),
        RetryEvent::IgnoredError { .. } => None,
        _ => return None,
    };
    Some(CallFields {
        attempts,
        ..CallFields::default()
    })
}

fn bulkhead_call(event: &Event<BulkheadEvent>, _: &AtomicU8) -> Option<CallFields> {
    match event.kind() {
        BulkheadEvent::CallPermitted => Some(CallFields::default()),
        BulkheadEvent::CallRejected => Some(rejected(1)),
        _ => None,
    }
}

fn thread_pool_bulkhead_call(
    event: &Event<ThreadPoolBulkheadEvent>,
    _: &AtomicU8,
) -> Option<CallFields> {
    match event.kind() {
        ThreadPoolBulkheadEvent::CallPermitted => Some(CallFields::default()),
        ThreadPoolBulkheadEvent::CallRejected => Some(rejected(1)),
        _ => None,
    }
}

fn rate_limiter_call(event: &Event<RateLimiterEvent>, _: &AtomicU8) -> Option<CallFields> {
    match event.kind() {
        RateLimiterEvent::SuccessfulAcquire { .. } => Some(CallFields::default()),
        RateLimiterEvent::FailedAcquire { .. } => Some(rejected(2)),
        _ => None,
    }
}

fn time_limiter_call(event: &Event<TimeLimiterEvent>, _: &AtomicU8) -> Option<CallFields> {
    match event.kind() {
        TimeLimiterEvent::Success { .. } | TimeLimiterEvent::Error { .. } => {
            Some(CallFields::default())
        }
        TimeLimiterEvent::Timeout { .. } => Some(rejected(3)),
        _ => None,
    }
}

/// A refusal of the kind `REJECTION_KINDS[kind]`.
fn rejected(kind: usize) -> CallFields {
    CallFields {
        rejected: Some(REJECTION_KINDS[kind]),
        ..CallFields::default()
    }
}

// The caller's span on the thread-pool bulkhead's worker, for every
// thread-pool bulkhead that lists no `context-propagators` (`["tracing"]`
// names it among others; `[]` turns it off).
inventory::submit! {
    resil_config::NamedContextPropagator {
        name: "tracing",
        make: || {
            std::sync::Arc::new(|| {
                let span = tracing::Span::current();
                move || span.entered()
            })
        },
        default: true,
    }
}

fn hedge(name: &str, event: &Event<resil_core::hedge::HedgeEvent>) {
    use resil_core::hedge::HedgeEvent;
    const T: &str = "resil::hedge";
    match *event.kind() {
        HedgeEvent::Hedged {
            attempt,
            delay: Some(delay),
        } => {
            let after = format!("{delay:?}");
            debug!(target: T, name, attempt, after, "hedge `{name}`: attempt {attempt} started after {after}");
        }
        HedgeEvent::Hedged {
            attempt,
            delay: None,
        } => {
            debug!(target: T, name, attempt, "hedge `{name}`: attempt {attempt} started after a failure");
        }
        HedgeEvent::BudgetExhausted { attempt } => {
            info!(target: T, name, attempt, budget_exhausted = true, "hedge `{name}`: its budget denied attempt {attempt}; the call goes on with the attempts running");
        }
        _ => {}
    }
}

/// A hedge's events set no field of the caller's span: it publishes only
/// for the calls it hedged, and the layers below it name the call.
fn hedge_call(_: &Event<resil_core::hedge::HedgeEvent>, _: &AtomicU8) -> Option<CallFields> {
    None
}
