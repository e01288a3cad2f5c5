//! Spring Cloud's `Resilience4JCircuitBreaker`: the call through the
//! instances one id and group resolved to.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use resil_config::Aspect;
use resil_core::Error;
use resil_core::bulkhead::Bulkhead;
use resil_core::chain::{Lift, Stack, once};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerClassifier};
use resil_core::fault::FaultPart;
use resil_core::thread_pool_bulkhead::{ChainJobs, ThreadPoolBulkhead};
use resil_core::time_limiter::TimeLimiter;

use super::bulkhead::GroupBulkhead;

/// What [`CircuitBreakerFactory`](super::CircuitBreakerFactory) resolved for an id and group.
pub(crate) struct Parts {
    pub(crate) id: &'static str,
    pub(crate) group: &'static str,
    pub(crate) circuit_breaker: Arc<CircuitBreaker>,
    /// `None` when the time limiter is disabled for the id or group.
    pub(crate) time_limiter: Option<Arc<TimeLimiter>>,
    /// `None` with `disable-thread-pool`.
    pub(crate) executor: Option<Arc<ThreadPoolBulkhead>>,
    /// The bulkhead of blocking calls.
    pub(crate) bulkhead: GroupBulkhead,
    /// The bulkhead of async calls.
    pub(crate) async_bulkhead: Arc<Bulkhead>,
}

/// A breaker the factory created for an id and a group: Spring Cloud's
/// `CircuitBreaker` with `run(supplier, fallback)`. Cheap to clone.
///
/// See the [module documentation](super) for what it is made of.
#[derive(Clone)]
pub struct CloudCircuitBreaker {
    parts: Arc<Parts>,
}

/// The bulkhead of a [`CloudCircuitBreaker`]'s blocking calls.
#[derive(Debug, Clone, Copy)]
pub enum BlockingBulkhead<'a> {
    /// A semaphore bulkhead: the call keeps the caller's thread while it
    /// holds a permit.
    Semaphore(&'a Bulkhead),
    /// A thread-pool bulkhead: the call runs on one of its threads.
    ThreadPool(&'a ThreadPoolBulkhead),
}

impl CloudCircuitBreaker {
    pub(crate) fn new(parts: Parts) -> Self {
        CloudCircuitBreaker {
            parts: Arc::new(parts),
        }
    }

    /// The id it was created with.
    pub fn id(&self) -> &'static str {
        self.parts.id
    }

    /// Its group (the id, for `create(id)`).
    pub fn group(&self) -> &'static str {
        self.parts.group
    }

    /// The circuit breaker (the registry's instance named after the id).
    pub fn circuit_breaker(&self) -> &CircuitBreaker {
        &self.parts.circuit_breaker
    }

    /// The time limiter, unless it is disabled for the id or group.
    /// [`run`](Self::run) uses it only with the executor (not with
    /// `disable-thread-pool`).
    pub fn time_limiter(&self) -> Option<&TimeLimiter> {
        self.parts.time_limiter.as_deref()
    }

    /// The bulkhead of [`run`](Self::run): the group's.
    pub fn bulkhead(&self) -> BlockingBulkhead<'_> {
        match &self.parts.bulkhead {
            GroupBulkhead::Semaphore(b) => BlockingBulkhead::Semaphore(b),
            GroupBulkhead::ThreadPool(b) => BlockingBulkhead::ThreadPool(b),
        }
    }

    /// The bulkhead of [`run_async`](Self::run_async): the group's semaphore bulkhead.
    pub fn async_bulkhead(&self) -> &Bulkhead {
        &self.parts.async_bulkhead
    }

    /// The executor [`run`](Self::run) runs suppliers on; `None` with
    /// `disable-thread-pool`.
    pub fn executor(&self) -> Option<&ThreadPoolBulkhead> {
        self.parts.executor.as_deref()
    }

    /// Runs `supplier` through the time limiter, the bulkhead and the
    /// circuit breaker, and returns its value, or `fallback`'s for any error.
    ///
    /// The supplier runs on the factory's bounded executor and is waited for
    /// at most the time limiter's timeout; with `disable-thread-pool` it runs
    /// on this thread, without a time limiter. A panic in the supplier is
    /// resumed here (the breaker records it as a failure), not given to the
    /// fallback.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil::Error;
    ///
    /// let breaker = resil::cloud::factory().create_in_group("stock-count", "inventory-service");
    /// let degraded = breaker.run(
    ///     || Err::<u32, _>("connection refused"),
    ///     |error| match error {
    ///         Error::Inner(_) => 0,             // the downstream's own error
    ///         Error::Timeout(_) => 1,           // it took too long
    ///         Error::CallNotPermitted(_) => 2,  // the breaker is open
    ///         _ => 3,                           // a bulkhead or executor is full
    ///     },
    /// );
    /// assert_eq!(degraded, 0);
    /// ```
    pub fn run<T, E, F, FB>(&self, supplier: F, fallback: FB) -> T
    where
        F: FnOnce() -> Result<T, E> + Send + 'static,
        FB: FnOnce(Error<E>) -> T,
        T: Send + 'static,
        E: Send + 'static,
    {
        self.run_with(&CircuitBreakerClassifier::new(), supplier, fallback)
    }

    /// Like [`run`](Self::run), with the breaker classifying outcomes with
    /// `classifier` (which errors count, which are ignored, which values
    /// are failures).
    pub fn run_with<T, E, F, FB>(
        &self,
        classifier: &CircuitBreakerClassifier<T, E>,
        supplier: F,
        fallback: FB,
    ) -> T
    where
        F: FnOnce() -> Result<T, E> + Send + 'static,
        FB: FnOnce(Error<E>) -> T,
        T: Send + 'static,
        E: Send + 'static,
    {
        let parts = &*self.parts;
        let cb = parts.circuit_breaker.part(classifier);
        let time_limiter = parts.time_limiter.as_deref().map(TimeLimiter::part);
        // The fault, innermost, around the supplier wherever it runs (on
        // the pool's or the executor's thread, with the part found here).
        let fault = parts.fault();
        let result = match (&parts.executor, &parts.bulkhead) {
            // Spring Cloud's bulkhead provider: the time limiter around the
            // group's thread pool, which is the executor (no second one).
            (Some(_), GroupBulkhead::ThreadPool(pool)) => Stack::new()
                .circuit_breaker(cb)
                .time_limiter(time_limiter)
                .bulkhead(pool.part())
                .call(ChainJobs(once(move || {
                    move || Stack::new().fault(fault).call(Lift(once(supplier)))
                }))),
            // A semaphore bulkhead runs on the executor's thread, around
            // the supplier (`CompletableFuture.supplyAsync(bulkheadSupplier)`).
            (Some(executor), GroupBulkhead::Semaphore(bulkhead)) => {
                let bulkhead = Bulkhead::clone(bulkhead);
                Stack::new()
                    .circuit_breaker(cb)
                    .time_limiter(time_limiter)
                    .bulkhead(executor.part())
                    .call(ChainJobs(once(move || {
                        move || {
                            Stack::new()
                                .bulkhead(bulkhead.part())
                                .fault(fault)
                                .call(Lift(once(supplier)))
                        }
                    })))
            }
            // `disable-thread-pool`: the caller's thread, no time limiter.
            (None, GroupBulkhead::Semaphore(bulkhead)) => Stack::new()
                .circuit_breaker(cb)
                .bulkhead(bulkhead.part())
                .fault(fault)
                .call(Lift(once(supplier))),
            (None, GroupBulkhead::ThreadPool(pool)) => Stack::new()
                .circuit_breaker(cb)
                .bulkhead(pool.part())
                .call(ChainJobs(once(move || {
                    move || Stack::new().fault(fault).call(Lift(once(supplier)))
                }))),
        };
        result.unwrap_or_else(|e| parts.fall_back(e, fallback))
    }

    /// Runs the future `f` returns through the time limiter, the group's
    /// semaphore bulkhead and the circuit breaker, and returns its value, or
    /// `fallback`'s for any error.
    ///
    /// A timed-out future is dropped (cancelled). Dropping the returned
    /// future gives every permit back and records nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let breaker = resil::cloud::factory().create_in_group("stock-count", "inventory-service");
    /// let stock = breaker
    ///     .run_async(|| async { Ok::<u32, std::io::Error>(7) }, |_error| 0)
    ///     .await;
    /// assert_eq!(stock, 7);
    /// # }
    /// ```
    pub async fn run_async<T, E, F, Fut, FB>(&self, f: F, fallback: FB) -> T
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        FB: FnOnce(Error<E>) -> T,
    {
        self.run_async_with(&CircuitBreakerClassifier::new(), f, fallback)
            .await
    }

    /// Like [`run_async`](Self::run_async), with the breaker classifying
    /// outcomes with `classifier`.
    pub async fn run_async_with<T, E, F, Fut, FB>(
        &self,
        classifier: &CircuitBreakerClassifier<T, E>,
        f: F,
        fallback: FB,
    ) -> T
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        FB: FnOnce(Error<E>) -> T,
    {
        let parts = &*self.parts;
        let result = Stack::new()
            .circuit_breaker(parts.circuit_breaker.part(classifier))
            .time_limiter(parts.time_limiter.as_deref().map(TimeLimiter::part))
            .bulkhead(parts.async_bulkhead.part())
            .fault(parts.fault())
            .call_async(Lift(once(f)))
            .await;
        result.unwrap_or_else(|e| parts.fall_back(e, fallback))
    }
}

impl Parts {
    /// The fault of the id's name, else of the group's, innermost, around
    /// the supplier, on whatever thread runs it.
    #[inline(always)]
    fn fault(&self) -> FaultPart<'static, [&'static str; 2]> {
        FaultPart::global([self.id, self.group])
    }

    /// Runs the fallback, counted as the breaker's in `resil_fallback_calls_total`
    /// (a fallback that returns has succeeded).
    fn fall_back<T, E>(&self, error: Error<E>, fallback: impl FnOnce(Error<E>) -> T) -> T {
        let count = crate::__private::count_fallback(self.id, Aspect::CircuitBreaker, &error, None);
        let value = fallback(error);
        count.finished(true);
        value
    }
}

impl fmt::Debug for CloudCircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &*self.parts;
        f.debug_struct("CloudCircuitBreaker")
            .field("id", &p.id)
            .field("group", &p.group)
            .field("time_limiter", &p.time_limiter.as_ref().map(|t| t.name()))
            .field("bulkhead", &p.bulkhead)
            .field("async_bulkhead", &p.async_bulkhead.name())
            .field("executor", &p.executor.as_ref().map(|e| e.name()))
            .finish()
    }
}
