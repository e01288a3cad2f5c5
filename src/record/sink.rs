//! The recorder as a sink of the observer: each instance's events become
//! [`Line`]s for the recording in force.

use std::time::SystemTime;

use resil_core::Name;
use resil_core::bulkhead::{Bulkhead, BulkheadEvent};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerEvent};
use resil_core::event::Event;
use resil_core::hedge::Hedge;
use resil_core::rate_limiter::{RateLimiter, RateLimiterEvent};
use resil_core::registry::Primitive as _;
use resil_core::retry::{Retry, RetryEvent};
use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadEvent};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterEvent};

use super::emit;
use super::line::Line;
use crate::observe::sink::{Follower, Sink};

/// Writes every call outcome to the recording in force (nothing but one
/// load when none is).
#[derive(Debug, Default)]
pub(crate) struct RecordSink;

fn line(e: &Event<impl Sized>, kind: &'static str, name: &Name, outcome: &'static str) -> Line {
    Line::new(wall(e), kind, name, outcome)
}

fn wall<K>(e: &Event<K>) -> SystemTime {
    e.wall_time()
}

impl Sink<CircuitBreaker> for RecordSink {
    fn follow(&self, p: &CircuitBreaker) -> Follower<CircuitBreakerEvent> {
        let name = Name::from(p.instance_name());
        Box::new(move |e| {
            emit(|| {
                let l = |outcome| line(e, "circuitbreaker", &name, outcome);
                match *e.kind() {
                    CircuitBreakerEvent::Success { elapsed } => Line {
                        duration: Some(elapsed),
                        ..l("success")
                    },
                    CircuitBreakerEvent::Error {
                        elapsed,
                        error_kind,
                    } => Line {
                        duration: Some(elapsed),
                        error: error_kind,
                        ..l("error")
                    },
                    CircuitBreakerEvent::IgnoredError {
                        elapsed,
                        error_kind,
                    } => Line {
                        duration: Some(elapsed),
                        error: error_kind,
                        ..l("ignored")
                    },
                    CircuitBreakerEvent::CallNotPermitted => l("refused"),
                    CircuitBreakerEvent::StateTransition { from, to } => Line {
                        from: Some(from.as_str()),
                        to: Some(to.as_str()),
                        ..l("transition")
                    },
                    _ => return None,
                }
                .into()
            });
        })
    }
}

impl Sink<Retry> for RecordSink {
    fn follow(&self, p: &Retry) -> Follower<RetryEvent> {
        let name = Name::from(p.instance_name());
        // A call that succeeds at its first attempt publishes no event:
        // the retry shows it to the recorder while a recording is on.
        let quiet = name.clone();
        p.watch_quiet_successes(&super::ON, move |wall| {
            emit(|| {
                Some(Line {
                    attempts: Some(0),
                    ..Line::new(wall, "retry", &quiet, "success")
                })
            });
        });
        Box::new(move |e| {
            emit(|| {
                let l = |outcome| Line {
                    attempts: Some(e.kind().number_of_retry_attempts()),
                    error: e.kind().error_kind(),
                    ..line(e, "retry", &name, outcome)
                };
                match *e.kind() {
                    RetryEvent::Retry { wait_interval, .. } => Line {
                        wait: Some(wait_interval),
                        ..l("retry")
                    },
                    RetryEvent::Success { .. } => l("success"),
                    RetryEvent::Error { .. } => l("error"),
                    RetryEvent::IgnoredError { .. } => l("ignored"),
                    RetryEvent::BudgetExhausted { .. } => l("refused"),
                    _ => return None,
                }
                .into()
            });
        })
    }
}

impl Sink<RateLimiter> for RecordSink {
    fn follow(&self, p: &RateLimiter) -> Follower<RateLimiterEvent> {
        let name = Name::from(p.instance_name());
        Box::new(move |e| {
            emit(|| {
                let outcome = match e.kind() {
                    RateLimiterEvent::SuccessfulAcquire { .. } => "permitted",
                    RateLimiterEvent::FailedAcquire { .. } => "refused",
                    _ => return None,
                };
                Some(line(e, "ratelimiter", &name, outcome))
            });
        })
    }
}

impl Sink<Bulkhead> for RecordSink {
    fn follow(&self, p: &Bulkhead) -> Follower<BulkheadEvent> {
        let name = Name::from(p.instance_name());
        Box::new(move |e| {
            emit(|| {
                let outcome = match e.kind() {
                    BulkheadEvent::CallPermitted => "permitted",
                    BulkheadEvent::CallFinished => "finished",
                    BulkheadEvent::CallRejected => "refused",
                    _ => return None,
                };
                Some(line(e, "bulkhead", &name, outcome))
            });
        })
    }
}

impl Sink<ThreadPoolBulkhead> for RecordSink {
    fn follow(&self, p: &ThreadPoolBulkhead) -> Follower<ThreadPoolBulkheadEvent> {
        let name = Name::from(p.instance_name());
        Box::new(move |e| {
            emit(|| {
                let outcome = match e.kind() {
                    ThreadPoolBulkheadEvent::CallPermitted => "permitted",
                    ThreadPoolBulkheadEvent::CallFinished => "finished",
                    ThreadPoolBulkheadEvent::CallRejected => "refused",
                    _ => return None,
                };
                Some(line(e, "thread-pool-bulkhead", &name, outcome))
            });
        })
    }
}

impl Sink<TimeLimiter> for RecordSink {
    fn follow(&self, p: &TimeLimiter) -> Follower<TimeLimiterEvent> {
        let name = Name::from(p.instance_name());
        Box::new(move |e| {
            emit(|| {
                let (outcome, error) = match *e.kind() {
                    TimeLimiterEvent::Success { .. } => ("success", None),
                    TimeLimiterEvent::Error { error_kind, .. } => ("error", error_kind),
                    TimeLimiterEvent::Timeout { .. } => ("timeout", None),
                    _ => return None,
                };
                Some(Line {
                    duration: e.kind().elapsed(),
                    error,
                    ..line(e, "timelimiter", &name, outcome)
                })
            });
        })
    }
}

impl Sink<Hedge> for RecordSink {
    fn follow(&self, _: &Hedge) -> Follower<resil_core::hedge::HedgeEvent> {
        // a hedge's calls are recorded by the patterns below it
        Box::new(|_| {})
    }
}
