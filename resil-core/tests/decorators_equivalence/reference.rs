//! The reference: `Decorators::call_async` as single-layer chains nested
//! by hand, each layer's fallback applied after that layer.

use super::*;

/// `Decorators::call_async`, as single-layer chains nested by hand.
pub(super) struct Reference<'s> {
    pub(super) sc: &'s Scenario,
    pub(super) p: &'s Prims,
    pub(super) ctx: &'s Ctx,
    pub(super) breaker: CircuitBreakerClassifier<u32, E>,
    pub(super) retry: RetryClassifier<u32, E>,
}

impl Reference<'_> {
    pub(super) async fn call<F, Fut>(&self, f: F) -> R
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<u32, E>>,
    {
        let result = match &self.p.retry {
            // Each attempt is a fresh breaker layer (and everything inside
            // it), made when the retry starts the attempt.
            Some(retry) => {
                ChainFuture::new(
                    Stack::new()
                        .retry(retry.part(&self.retry))
                        .around(Call(|| self.circuit_breaker(&f))),
                )
                .await
            }
            None => self.circuit_breaker(&f).await,
        };
        self.recover(Layer::Retry, result).await
    }

    /// A layer's result after the layer's fallback, if it has one.
    async fn recover(&self, layer: Layer, result: R) -> R {
        match (self.sc.fallbacks[slot(layer)], result) {
            (FallbackSpec::Sync(a), Err(e)) => sync_fallback(self.ctx, layer, a, e),
            (FallbackSpec::Async(a), Err(e)) => async_fallback(self.ctx, layer, a, e).await,
            (_, result) => result,
        }
    }

    async fn circuit_breaker<F, Fut>(&self, f: &F) -> R
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<u32, E>>,
    {
        let result = match &self.p.cb {
            Some(cb) => {
                ChainFuture::new(
                    Stack::new()
                        .circuit_breaker(cb.part(&self.breaker))
                        .around(Call(|| self.rate_limiter(f))),
                )
                .await
            }
            None => self.rate_limiter(f).await,
        };
        self.recover(Layer::CircuitBreaker, result).await
    }

    async fn rate_limiter<F, Fut>(&self, f: &F) -> R
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<u32, E>>,
    {
        let result = match &self.p.rl {
            Some(rl) => {
                ChainFuture::new(
                    Stack::new()
                        .rate_limiter(rl.part(1))
                        .around(Call(|| self.time_limiter(f))),
                )
                .await
            }
            None => self.time_limiter(f).await,
        };
        self.recover(Layer::RateLimiter, result).await
    }

    async fn time_limiter<F, Fut>(&self, f: &F) -> R
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<u32, E>>,
    {
        let result = match &self.p.tl {
            Some(tl) => {
                ChainFuture::new(
                    Stack::new()
                        .time_limiter(tl.part())
                        .around(Call(|| self.bulkhead(f))),
                )
                .await
            }
            None => self.bulkhead(f).await,
        };
        self.recover(Layer::TimeLimiter, result).await
    }

    async fn bulkhead<F, Fut>(&self, f: &F) -> R
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<u32, E>>,
    {
        let result = match &self.p.bh {
            // The caller's future is created when the bulkhead calls the
            // closure (once it has a permit).
            Some(bh) => ChainFuture::new(Stack::new().bulkhead(bh.part()).around(Lift(f))).await,
            None => inner_errors(f()).await,
        };
        self.recover(Layer::Bulkhead, result).await
    }
}

/// The caller's future with its error as `Error::Inner`.
async fn inner_errors<Fut: Future<Output = Result<u32, E>>>(fut: Fut) -> R {
    fut.await.map_err(Error::Inner)
}
