//! Deadlines: one budget of time for a whole request, spent by every
//! pattern beneath it.
//!
//! A request's deadline is set by [`scope`] (a future, across its
//! `.await`s), [`enter`] (blocking code on the current thread), a
//! [`Deadline`] instance's layer (outermost in a chain:
//! `Deadline(Retry(CircuitBreaker(...)))`), or the `tower` layer from an
//! incoming `grpc-timeout` header. An inner deadline can only shorten an
//! outer one. [`remaining`] reads it; [`grpc_timeout`] formats it for an
//! outgoing call.
//!
//! Every pattern spends from it:
//!
//! | pattern | with a deadline |
//! | --- | --- |
//! | deadline layer | a call that finds no time left does not run; an async call still running when the deadline passes is dropped |
//! | retry | starts no wait (and so no attempt) that would end at or past the deadline: the call ends with the outcome it has |
//! | time limiter | waits at most the time left |
//! | rate limiter | `timeout-duration` cut to the time left |
//! | bulkhead | `max-wait-duration` cut to the time left |
//! | thread-pool bulkhead | the deadline travels with the task to the worker; a task whose deadline passed in the queue is not run |
//! | circuit breaker | a call cut short by the deadline is not a failure (it counts as slow past the slow-call threshold) |
//! | adaptive bulkhead | a call cut short by the deadline is a drop |
//!
//! A call cut short is one the deadline runs out on: a pattern inside the
//! deadline's layer notices it (a time limiter), or the layer itself gives
//! up on the call and drops it. The breaker and the bulkhead count it so
//! also when they belong to a chain inside the call (an annotated function
//! called by one with a deadline, a breaker's `tower` layer under the
//! deadline's): the deadline drops the call under a mark that it ran out.
//! A call its caller drops while time is left is cancelled, and counted by
//! none of them.
//!
//! A pattern that refuses or cuts short a call because of the deadline
//! answers [`Error::DeadlineExceeded`](crate::Error::DeadlineExceeded), a
//! rejection naming the pattern and instance that noticed, counted by
//! [`exceeded_totals`] (the meter `resil_deadline_exceeded_total`).
//!
//! With no deadline set anywhere in the process, reading it costs one
//! relaxed load of a process-wide flag.
//!
//! # Examples
//!
//! ```
//! use resil_core::chain::{Lift, Stack, once};
//! use resil_core::clock::ManualClock;
//! use resil_core::deadline::{self, Deadline, DeadlineConfig};
//! use resil_core::Error;
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let config = DeadlineConfig::builder().timeout(Duration::from_millis(800)).build()?;
//! let checkout = Deadline::with_clock("checkout", config, clock.clone());
//!
//! let left = Stack::new()
//!     .deadline(checkout.part())
//!     .call(Lift(once(|| Ok::<_, std::io::Error>(deadline::remaining()))));
//! assert_eq!(left.unwrap(), Some(Duration::from_millis(800)));
//!
//! // Inside an enclosing deadline that has passed, the call does not run.
//! let _outer = deadline::enter_on(clock.clone(), Duration::from_millis(100));
//! clock.advance(Duration::from_millis(100));
//! let refused = Stack::new()
//!     .deadline(checkout.part())
//!     .call(Lift(once(|| Ok::<_, std::io::Error>(()))));
//! assert!(matches!(refused, Err(Error::DeadlineExceeded(e)) if e.kind() == "deadline"));
//! # Ok::<(), resil_core::ConfigError>(())
//! ```

mod ambient;
mod error;
mod instance;
mod layer;

pub(crate) use self::ambient::{At, Installed, current, cut};
pub use self::ambient::{
    DeadlineGuard, Scope, enter, enter_on, format_grpc_timeout, grpc_timeout, parse_grpc_timeout,
    remaining, scope, scope_on,
};
pub(crate) use self::error::count;
pub use self::error::{DeadlineExceeded, exceeded_totals};
#[doc(hidden)]
pub use self::instance::Inner;
pub use self::instance::{Deadline, DeadlineConfig, DeadlineConfigBuilder};
pub use self::layer::{DeadlineAttempt, DeadlineNode, DeadlinePart};
