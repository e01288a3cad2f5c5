//! Test scopes: annotated functions tested in parallel in one binary, each
//! test with its own settings, state and clock (feature `testing`).
//!
//! [`scope`] builds private registries from resilience.toml text, on a
//! [`ManualClock`] (or on tokio's clock with [`TestScope::tokio_time`], for
//! tests under `#[tokio::test(start_paused = true)]`). Inside
//! [`TestScope::run`] (a future) or [`TestScope::enter`] (a thread), every
//! call site — the attributes', keyed ones, their faults, a
//! `#[deadline(timeout = "..")]` — uses the scope's instances instead of the
//! global ones: a breaker opened in one test is closed in the test beside
//! it. A name the scope's text does not configure gets its defaults in the
//! scope, never the global instance.
//!
//! [`TestScope::advance`] moves the manual clock and fires what falls due
//! (a breaker's wait in OPEN, a rate limiter's cycles, timers of the
//! time limiter and of faults' delays); [`TestScope::events`] lists the
//! events of the scope's instances in the order they were published.
//!
//! Call sites reached from a task the scope's future spawns, or from
//! another thread, do not follow the scope: enter it there too. While no
//! scope exists a call site pays one relaxed load for scopes, and nothing
//! without this feature.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//!
//! #[derive(Debug)]
//! struct Down;
//! impl From<resil::Rejection> for Down {
//!     fn from(_: resil::Rejection) -> Self { Down }
//! }
//!
//! #[resil::circuit_breaker(name = "inventory-query")]
//! fn query(up: bool) -> Result<u32, Down> {
//!     if up { Ok(7) } else { Err(Down) }
//! }
//!
//! let scope = resil::testing::scope(r#"
//!     [circuitbreaker.instances.inventory-query]
//!     sliding-window-size = 2
//!     minimum-number-of-calls = 2
//!     wait-duration-in-open-state = "10s"
//! "#)?;
//! let _in_scope = scope.enter();
//! assert!(query(false).is_err());
//! assert!(query(false).is_err()); // two failures of two: OPEN
//! let breaker = scope.registries().circuit_breakers().circuit_breaker("inventory-query");
//! assert_eq!(breaker.state(), resil::circuit_breaker::State::Open);
//! scope.advance(Duration::from_secs(11)); // the wait is over: HALF_OPEN
//! assert_eq!(query(true).unwrap(), 7);
//! assert!(scope.events().iter().any(|e| e.event_type() == "StateTransition"));
//! # Ok::<(), resil::config::InitError>(())
//! ```

mod log;

#[cfg(doctest)]
#[doc = include_str!("../../docs/testing.md")]
struct TestingGuideDoctests;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use resil_config::scoped::{Entered, Scope};
use resil_config::{InitError, Registries, Resilience};
use resil_core::clock::{Clock, ManualClock, SharedClock, TokioClock};

pub(crate) use self::log::EventLog;
pub use self::log::ScopeEvent;

/// Private registries from `toml` (resilience.toml's text) on a
/// [`ManualClock`] that reads zero: see the [module documentation](self).
///
/// # Errors
///
/// [`InitError`] with every problem of `toml`, as [`init`](crate::init)
/// reports them (the file is named `resilience.toml` in them).
pub fn scope(toml: &str) -> Result<TestScope, InitError> {
    let manual = ManualClock::new();
    let clock = manual.clone().into_shared();
    TestScope::build(toml, clock, Some(manual))
}

/// Private registries for a test, and the clock they run on. See the
/// [module documentation](self).
pub struct TestScope {
    scope: Arc<Scope>,
    toml: String,
    manual: Option<ManualClock>,
    log: Arc<EventLog>,
}

impl TestScope {
    fn build(
        toml: &str,
        clock: SharedClock,
        manual: Option<ManualClock>,
    ) -> Result<Self, InitError> {
        let loaded = Resilience::builder()
            .file_contents("resilience.toml", toml)
            .env_vars(Vec::<(String, String)>::new())
            .clock(clock.clone())
            .load()?;
        let (registries, report) = loaded.into_parts();
        let scope = Scope::new(registries, report, clock);
        let log = crate::observe::binding(scope.registries())
            .sink::<EventLog>()
            .expect("the `testing` feature registers the event log");
        log.start();
        Ok(TestScope {
            scope,
            toml: toml.to_owned(),
            manual,
            log,
        })
    }

    /// The same scope on tokio's clock instead of a manual one: under
    /// `#[tokio::test(start_paused = true)]`, `tokio::time::advance` (or
    /// tokio's auto-advance while every task waits) moves it, and the
    /// scope's waits are tokio timers. Its instances start afresh.
    pub fn tokio_time(self) -> TestScope {
        TestScope::build(&self.toml, TokioClock::new().into_shared(), None)
            .expect("a configuration already loaded once loads again")
    }

    /// `future`, with every call site it reaches while polled using this
    /// scope.
    pub fn run<F: Future>(&self, future: F) -> InScope<F> {
        InScope {
            scope: Arc::clone(&self.scope),
            future,
        }
    }

    /// Makes this scope the one of this thread's call sites until the guard
    /// is dropped (scopes nest: the innermost is used).
    pub fn enter(&self) -> ScopeGuard {
        ScopeGuard {
            _entered: self.scope.enter(),
        }
    }

    /// Moves the scope's manual clock forward by `by` and runs what falls
    /// due.
    ///
    /// # Panics
    ///
    /// On a scope that follows tokio's clock ([`TestScope::tokio_time`]):
    /// advance tokio's (`tokio::time::advance`).
    pub fn advance(&self, by: Duration) {
        match &self.manual {
            Some(clock) => clock.advance(by),
            None => panic!(
                "this scope follows tokio's clock (`tokio_time()`): move it with `tokio::time::advance`"
            ),
        }
    }

    /// The time on the scope's clock.
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.scope.clock().now().as_u64())
    }

    /// Every event of the scope's instances so far, in the order they were
    /// published.
    pub fn events(&self) -> Vec<ScopeEvent> {
        self.log.events()
    }

    /// The scope's registries (its instances, to look at or call directly).
    pub fn registries(&self) -> &Registries {
        self.scope.registries()
    }

    /// What loading the scope's configuration reported (warnings, the
    /// worst cases).
    pub fn report(&self) -> &resil_config::Report {
        self.scope.report()
    }
}

impl std::fmt::Debug for TestScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestScope")
            .field("now", &self.now())
            .field("tokio_time", &self.manual.is_none())
            .finish_non_exhaustive()
    }
}

/// A test scope entered on this thread ([`TestScope::enter`]). Not `Send`.
#[derive(Debug)]
pub struct ScopeGuard {
    _entered: Entered,
}

pin_project_lite::pin_project! {
    /// A future whose call sites use a test scope while it is polled
    /// ([`TestScope::run`]).
    pub struct InScope<F> {
        scope: Arc<Scope>,
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for InScope<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _entered = this.scope.enter();
        this.future.poll(cx)
    }
}

impl<F> std::fmt::Debug for InScope<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InScope").finish_non_exhaustive()
    }
}
