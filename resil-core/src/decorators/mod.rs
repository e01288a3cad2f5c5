//! [`Decorators`]: any subset of the primitives around one call, in
//! Resilience4j's fixed order.
//!
//! Whatever order the builder methods are called in, the chain is
//!
//! ```text
//! Deadline( Retry( Hedge( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead( call ) ) ) ) ) ) )
//! ```
//!
//! the order Spring Boot's aspects give Resilience4j by default (resil's
//! [deadline](crate::deadline) outside it, and the hedge, which
//! Resilience4j lacks, inside the retry), and the order the attribute
//! macros expand into. So every attempt of
//! the retry passes through the breaker (the breaker counts attempts, not
//! logical calls), a refusal of the breaker is retried like any other error
//! unless `ignore_errors` says otherwise, and the time limiter's timeout is a
//! failure the breaker records.
//!
//! Innermost, around the call, a fault of any of the instances' names
//! ([`crate::fault`]) delays or aborts the call.
//!
//! A fallback wraps only its own layer, as in Resilience4j: a circuit-breaker
//! fallback sees the errors and rejections of the breaker and of everything
//! inside it, and the value it returns is what the retry outside sees (so a
//! fallback that answers hides the failure from the retry).
//!
//! # Examples
//!
//! ```
//! use resil_core::circuit_breaker::CircuitBreaker;
//! use resil_core::decorators::{Decorators, Layer};
//! use resil_core::retry::Retry;
//! use resil_core::clock::ManualClock;
//! use resil_core::Error;
//!
//! let clock = ManualClock::new();
//! let retry = Retry::with_clock("inventory-query", Default::default(), clock.clone());
//! let breaker = CircuitBreaker::with_clock("inventory-query", Default::default(), clock);
//!
//! let mut attempts = 0;
//! let stock = Decorators::new()
//!     .with_circuit_breaker(&breaker) // order of these calls does not matter
//!     .with_retry(&retry)
//!     .with_fallback(Layer::Retry, |_err: Error<&str>| Ok(0))
//!     .call(|| {
//!         attempts += 1;
//!         Err::<u32, _>("connection refused")
//!     });
//! assert_eq!(stock, Ok(0));
//! assert_eq!(attempts, 3); // max_attempts counts the first call
//! assert_eq!(breaker.metrics().number_of_failed_calls(), 3);
//! ```

mod fallback;

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

pub use self::fallback::{Recover, RecoverAttempt};
pub use crate::chain::Layer;

use self::fallback::{Fallback, WithFallback};
use crate::Error;
use crate::bulkhead::Bulkhead;
use crate::chain::{ChainFuture, Lift, Stack};
use crate::circuit_breaker::{CircuitBreaker, CircuitBreakerClassifier};
use crate::deadline::Deadline;
use crate::fault::{FaultPart, FaultSites};
use crate::hedge::Hedge;
use crate::rate_limiter::RateLimiter;
use crate::retry::{Retry, RetryClassifier};
use crate::time_limiter::TimeLimiter;

/// One fallback per layer of [`Layer::ORDER`].
const FALLBACKS: usize = Layer::ORDER.len();

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Marks a chain that may run synchronously.
#[derive(Debug, Clone, Copy)]
pub struct Blocking;
/// Marks a chain that needs an async call (it has a time limiter, a hedge
/// or an async fallback).
#[derive(Debug, Clone, Copy)]
pub struct AsyncOnly;

/// Composes primitives around one call; see the [module documentation](self).
///
/// Without fallbacks, building and running a chain allocates nothing.
pub struct Decorators<'a, T, E, Mode = Blocking> {
    deadline: Option<&'a Deadline>,
    retry: Option<(&'a Retry, RetryClassifier<T, E>)>,
    hedge: Option<&'a Hedge>,
    circuit_breaker: Option<(&'a CircuitBreaker, CircuitBreakerClassifier<T, E>)>,
    rate_limiter: Option<&'a RateLimiter>,
    time_limiter: Option<&'a TimeLimiter>,
    bulkhead: Option<&'a Bulkhead>,
    fallbacks: [Option<Fallback<'a, T, E>>; FALLBACKS],
    mode: PhantomData<Mode>,
}

impl<'a, T, E> Decorators<'a, T, E, Blocking> {
    /// An empty chain: the call runs bare.
    pub fn new() -> Self {
        Decorators {
            deadline: None,
            retry: None,
            hedge: None,
            circuit_breaker: None,
            rate_limiter: None,
            time_limiter: None,
            bulkhead: None,
            fallbacks: [const { None }; FALLBACKS],
            mode: PhantomData,
        }
    }

    /// Runs `f` through the chain, on this thread (waits and backoffs block it).
    ///
    /// # Errors
    ///
    /// The error of the outermost layer that did not recover: the caller's
    /// error as [`Error::Inner`], or a rejection.
    pub fn call<F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        // No hedge and no time limiter in a blocking chain (`with_hedge` and
        // `with_time_limiter` make it async).
        if self.has_fallbacks() {
            let fit = Recovering(&self.fallbacks);
            let deadline = fit.fit(self.deadline.map(Deadline::part), Layer::Deadline);
            self.stack(&fit, deadline, (), ()).call(Lift(f))
        } else {
            self.stack(&Bare, self.deadline.map(Deadline::part), (), ())
                .call(Lift(f))
        }
    }

    /// Adds a time limiter (async calls only).
    pub fn with_time_limiter(
        self,
        time_limiter: &'a TimeLimiter,
    ) -> Decorators<'a, T, E, AsyncOnly> {
        let mut this = self.into_async();
        this.time_limiter = Some(time_limiter);
        this
    }

    /// Adds a hedge (async calls only: a blocking call has nothing to run
    /// beside it). `f` is then called once per attempt, hedged ones
    /// included.
    pub fn with_hedge(self, hedge: &'a Hedge) -> Decorators<'a, T, E, AsyncOnly> {
        let mut this = self.into_async();
        this.hedge = Some(hedge);
        this
    }

    /// Adds a fallback to `layer` that awaits (async calls only).
    pub fn with_async_fallback<F, Fut>(self, layer: Layer, f: F) -> Decorators<'a, T, E, AsyncOnly>
    where
        F: Fn(Error<E>) -> Fut + Send + Sync + 'a,
        Fut: Future<Output = Result<T, Error<E>>> + Send + 'a,
    {
        self.into_async().with_async_fallback(layer, f)
    }

    fn into_async(self) -> Decorators<'a, T, E, AsyncOnly> {
        Decorators {
            deadline: self.deadline,
            retry: self.retry,
            hedge: self.hedge,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
            fallbacks: self.fallbacks,
            mode: PhantomData,
        }
    }
}

impl<T, E> Default for Decorators<'_, T, E, Blocking> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, T, E> Decorators<'a, T, E, AsyncOnly> {
    /// Adds a time limiter.
    pub fn with_time_limiter(mut self, time_limiter: &'a TimeLimiter) -> Self {
        self.time_limiter = Some(time_limiter);
        self
    }

    /// Adds a hedge: `f` is called once per attempt, hedged ones included.
    pub fn with_hedge(mut self, hedge: &'a Hedge) -> Self {
        self.hedge = Some(hedge);
        self
    }

    /// Adds a fallback to `layer` that awaits.
    pub fn with_async_fallback<F, Fut>(mut self, layer: Layer, f: F) -> Self
    where
        F: Fn(Error<E>) -> Fut + Send + Sync + 'a,
        Fut: Future<Output = Result<T, Error<E>>> + Send + 'a,
    {
        self.fallbacks[layer as usize] = Some(Fallback::Async(Box::new(move |e| Box::pin(f(e)))));
        self
    }
}

impl<'a, T, E, Mode> Decorators<'a, T, E, Mode> {
    /// Adds a deadline, outermost: the call and every layer inside it spend
    /// from it (see [`crate::deadline`]), and a call with no time left does
    /// not run ([`Error::DeadlineExceeded`]).
    pub fn with_deadline(mut self, deadline: &'a Deadline) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Adds a retry (every error retried, per its configuration).
    pub fn with_retry(self, retry: &'a Retry) -> Self {
        self.with_retry_classified(retry, RetryClassifier::new())
    }

    /// Adds a retry that decides with `classifier`.
    pub fn with_retry_classified(
        mut self,
        retry: &'a Retry,
        classifier: RetryClassifier<T, E>,
    ) -> Self {
        self.retry = Some((retry, classifier));
        self
    }

    /// Adds a circuit breaker (every error a failure, per its configuration).
    pub fn with_circuit_breaker(self, circuit_breaker: &'a CircuitBreaker) -> Self {
        self.with_circuit_breaker_classified(circuit_breaker, CircuitBreakerClassifier::new())
    }

    /// Adds a circuit breaker that classifies with `classifier`.
    pub fn with_circuit_breaker_classified(
        mut self,
        circuit_breaker: &'a CircuitBreaker,
        classifier: CircuitBreakerClassifier<T, E>,
    ) -> Self {
        self.circuit_breaker = Some((circuit_breaker, classifier));
        self
    }

    /// Adds a rate limiter (one permit per call).
    pub fn with_rate_limiter(mut self, rate_limiter: &'a RateLimiter) -> Self {
        self.rate_limiter = Some(rate_limiter);
        self
    }

    /// Adds a semaphore bulkhead.
    pub fn with_bulkhead(mut self, bulkhead: &'a Bulkhead) -> Self {
        self.bulkhead = Some(bulkhead);
        self
    }

    /// Adds a fallback to `layer`: it receives that layer's error (including
    /// the rejections and errors of the layers inside it) and its result is
    /// what the layers outside see. Replaces an earlier fallback of the layer.
    pub fn with_fallback<F>(mut self, layer: Layer, f: F) -> Self
    where
        F: Fn(Error<E>) -> Result<T, Error<E>> + Send + Sync + 'a,
    {
        self.fallbacks[layer as usize] = Some(Fallback::Sync(Box::new(f)));
        self
    }

    /// Runs the future that `f` returns through the chain.
    ///
    /// `f` is called once per attempt. The returned future is `Send` whenever
    /// `f`'s futures, `T` and `E` are; dropping it releases every permit held.
    ///
    /// Nothing happens until the returned future is first polled. Then each
    /// attempt goes through the layers from the outside in, each one asking
    /// for its permission, and `f` is called inside the innermost one; the
    /// result goes out through each layer's completion and fallback. It is
    /// one state machine for all the layers (the engine's
    /// [`ChainFuture`]): it holds `f`'s future once, in place, and each
    /// layer adds a few words to it, whatever the size of `f`'s future.
    ///
    /// # Errors
    ///
    /// As [`Decorators::call`].
    #[inline(always)]
    pub fn call_async<F, Fut>(&self, f: F) -> impl Future<Output = Result<T, Error<E>>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let hedge = self.hedge.map(Hedge::part);
        let time_limiter = self.time_limiter.map(TimeLimiter::part);
        // A chain without fallbacks runs with no recovering node between
        // its layers, and the usual one (no deadline, no hedge either) with
        // no place for those two: one branch here instead of one per layer
        // and poll.
        if self.has_fallbacks() {
            let fit = Recovering(&self.fallbacks);
            let deadline = fit.fit(self.deadline.map(Deadline::part), Layer::Deadline);
            let hedge = fit.fit(hedge, Layer::Hedge);
            let time_limiter = fit.fit(time_limiter, Layer::TimeLimiter);
            Either::Recovering {
                future: ChainFuture::lazy(
                    self.stack(&fit, deadline, hedge, time_limiter)
                        .around(Lift(f)),
                ),
            }
        } else if self.deadline.is_none() && hedge.is_none() {
            Either::Plain {
                future: ChainFuture::lazy(self.stack(&Bare, (), (), time_limiter).around(Lift(f))),
            }
        } else {
            let deadline = self.deadline.map(Deadline::part);
            Either::Bare {
                future: ChainFuture::lazy(
                    self.stack(&Bare, deadline, hedge, time_limiter)
                        .around(Lift(f)),
                ),
            }
        }
    }

    /// Whether any layer has a fallback.
    #[inline(always)]
    fn has_fallbacks(&self) -> bool {
        self.fallbacks.iter().any(Option::is_some)
    }

    /// The chain's layers in the engine's order, each fitted by `fit` (with
    /// its fallback, or bare), the deadline, hedge and time limiter fitted
    /// already (or left out).
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn stack<'s, W, DL, HG, TL>(
        &'s self,
        fit: &W,
        deadline: DL,
        hedge: HG,
        time_limiter: TL,
    ) -> Stack<
        DL,
        W::Out<Option<crate::retry::RetryPart<&'a crate::retry::Inner, &'s RetryClassifier<T, E>>>>,
        HG,
        W::Out<
            Option<
                crate::circuit_breaker::CircuitBreakerPart<
                    &'a crate::circuit_breaker::Inner,
                    &'s CircuitBreakerClassifier<T, E>,
                >,
            >,
        >,
        W::Out<Option<crate::rate_limiter::RateLimiterPart<&'a crate::rate_limiter::Inner>>>,
        TL,
        W::Out<Option<crate::bulkhead::BulkheadPart<&'a crate::bulkhead::Inner>>>,
        FaultPart<'static, &'s Self>,
    >
    where
        W: Fit<'s, 'a, T, E>,
    {
        Stack::new()
            .deadline(deadline)
            .retry(fit.fit(self.retry.as_ref().map(|(r, c)| r.part(c)), Layer::Retry))
            .hedge(hedge)
            .circuit_breaker(fit.fit(
                self.circuit_breaker.as_ref().map(|(cb, c)| cb.part(c)),
                Layer::CircuitBreaker,
            ))
            .rate_limiter(fit.fit(self.rate_limiter.map(|l| l.part(1)), Layer::RateLimiter))
            .time_limiter(time_limiter)
            .bulkhead(fit.fit(self.bulkhead.map(Bulkhead::part), Layer::Bulkhead))
            .fault(FaultPart::global(self))
    }
}

/// A chain answers to the names of its instances: a fault of any of them
/// ([`crate::fault`]) applies to its calls, innermost.
impl<T, E, Mode> FaultSites for &Decorators<'_, T, E, Mode> {
    fn names(&self) -> impl Iterator<Item = &str> {
        [
            self.deadline.map(Deadline::name),
            self.retry.as_ref().map(|(r, _)| r.name()),
            self.hedge.map(Hedge::name),
            self.circuit_breaker.as_ref().map(|(c, _)| c.name()),
            self.rate_limiter.map(RateLimiter::name),
            self.time_limiter.map(TimeLimiter::name),
            self.bulkhead.map(Bulkhead::name),
        ]
        .into_iter()
        .flatten()
    }
}

/// How a chain's part takes its place: bare, or with its layer's fallback.
trait Fit<'s, 'a, T, E> {
    type Out<P>;
    fn fit<P>(&self, part: P, layer: Layer) -> Self::Out<P>;
}

/// Parts as they are: a chain without fallbacks.
struct Bare;

impl<'s, 'a, T, E> Fit<'s, 'a, T, E> for Bare {
    type Out<P> = P;

    #[inline(always)]
    fn fit<P>(&self, part: P, _: Layer) -> P {
        part
    }
}

/// Each part with its layer's fallback, if it has one.
struct Recovering<'s, 'a, T, E>(&'s [Option<Fallback<'a, T, E>>; FALLBACKS]);

impl<'s, 'a, T, E> Fit<'s, 'a, T, E> for Recovering<'s, 'a, T, E> {
    type Out<P> = WithFallback<'s, 'a, P, T, E>;

    #[inline(always)]
    fn fit<P>(&self, part: P, layer: Layer) -> WithFallback<'s, 'a, P, T, E> {
        WithFallback {
            part,
            fallback: self.0[layer as usize].as_ref(),
        }
    }
}

pin_project_lite::pin_project! {
    /// [`Decorators::call_async`]'s future: the chain without a deadline, a
    /// hedge or fallbacks, or with a deadline or a hedge, or with its
    /// fallbacks.
    #[project = EitherProj]
    enum Either<P, A, B> {
        Plain { #[pin] future: P },
        Bare { #[pin] future: A },
        Recovering { #[pin] future: B },
    }
}

impl<P, A, B, O> Future for Either<P, A, B>
where
    P: Future<Output = O>,
    A: Future<Output = O>,
    B: Future<Output = O>,
{
    type Output = O;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<O> {
        match self.project() {
            EitherProj::Plain { future } => future.poll(cx),
            EitherProj::Bare { future } => future.poll(cx),
            EitherProj::Recovering { future } => future.poll(cx),
        }
    }
}

impl<T, E, Mode> fmt::Debug for Decorators<'_, T, E, Mode> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut layers = Vec::new();
        if let Some(d) = self.deadline {
            layers.push(format!("Deadline({})", d.name()));
        }
        if let Some((r, _)) = &self.retry {
            layers.push(format!("Retry({})", r.name()));
        }
        if let Some(h) = self.hedge {
            layers.push(format!("Hedge({})", h.name()));
        }
        if let Some((c, _)) = &self.circuit_breaker {
            layers.push(format!("CircuitBreaker({})", c.name()));
        }
        if let Some(l) = self.rate_limiter {
            layers.push(format!("RateLimiter({})", l.name()));
        }
        if let Some(t) = self.time_limiter {
            layers.push(format!("TimeLimiter({})", t.name()));
        }
        if let Some(b) = self.bulkhead {
            layers.push(format!("Bulkhead({})", b.name()));
        }
        f.debug_struct("Decorators")
            .field("layers", &layers)
            .field(
                "fallbacks",
                &Layer::ORDER
                    .iter()
                    .filter(|l| self.fallbacks[**l as usize].is_some())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}
