//! The engine under every face: how a call passes the layers, in one fixed
//! order.
//!
//! The attributes, [`Decorators`](crate::Decorators), the `tower` layers and
//! the Spring Cloud facade all run their calls here. They differ only in
//! how they find their instances (a call site's static, a builder's
//! references, a service's clones), how they classify outcomes and how they
//! present errors; the order of the layers, and what each layer does, is
//! written once:
//!
//! ```text
//! Retry( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead( call ) ) ) ) )
//! ```
//!
//! Resilience4j's default aspect order (Spring Boot's), whatever order a face
//! is given its layers in. So every attempt of the retry passes through the
//! breaker (the breaker counts attempts, not logical calls), a refusal of
//! the breaker is retried like any other error unless the retry's
//! classification says otherwise, and the time limiter's timeout, which
//! covers the wait in the bulkhead's queue, is a failure the breaker
//! records. A [`ThreadPoolBulkhead`](crate::thread_pool_bulkhead::ThreadPoolBulkhead)
//! takes the bulkhead's place.
//!
//! # How one layer wraps the next
//!
//! [`Stack`] holds one part per layer and [`Around`] wraps them, in
//! the order, around the caller's call: each part's [`Wrap`] makes its
//! layer's node around the node inside it. A [`Node`] starts attempts (the
//! layer's admission, then the inner node's) and polls them (the inner
//! node's result, then the layer's completion); a [`SyncNode`] does the same
//! for a blocking call. [`ChainFuture`] drives a node as one future.
//!
//! Each pattern's part, node and attempt live in its own folder, in
//! `layer.rs`; a new pattern is such a file and one line in [`Around`]'s
//! implementation for [`Stack`] (and one in [`Layer::ORDER`], which the
//! tests hold to it).
//!
//! # Examples
//!
//! ```
//! use resil_core::chain::{Lift, Stack};
//! use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerClassifier};
//! use resil_core::retry::{Retry, RetryClassifier};
//! use resil_core::Error;
//!
//! let retry = Retry::of_defaults("inventory-query");
//! let breaker = CircuitBreaker::of_defaults("inventory-query");
//! let (rc, cc) = (RetryClassifier::new(), CircuitBreakerClassifier::new());
//! let mut attempts = 0;
//! let outcome: Result<u32, Error<&str>> = Stack::new()
//!     .circuit_breaker(breaker.part(&cc)) // the order of these calls does not matter
//!     .retry(retry.part(&rc))
//!     .call(Lift(|| {
//!         attempts += 1;
//!         Err::<u32, _>("connection refused")
//!     }));
//! assert!(matches!(outcome, Err(Error::Inner("connection refused"))));
//! assert_eq!(attempts, 3);
//! assert_eq!(breaker.metrics().number_of_failed_calls(), 3);
//! ```

mod future;
mod node;

pub use self::future::ChainFuture;
pub(crate) use self::node::holding;
pub use self::node::once;
pub use self::node::{Call, Ctx, HasAttempt, Lift, Node, SyncNode, Wrap};

/// A layer of the chain, ordered from the outside in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Layer {
    /// The outermost layer: its attempts pass every layer inside it.
    Retry,
    /// Inside the retry: it counts each attempt.
    CircuitBreaker,
    /// Inside the breaker.
    RateLimiter,
    /// Inside the rate limiter (async calls, or a thread pool's).
    TimeLimiter,
    /// The innermost layer, around the call.
    Bulkhead,
    /// The bulkhead's place, for a call that runs on a pool of its own.
    ThreadPoolBulkhead,
}

impl Layer {
    /// The layers from the outermost to the innermost. A call has at most
    /// one of the two bulkheads.
    pub const ORDER: [Layer; 6] = [
        Layer::Retry,
        Layer::CircuitBreaker,
        Layer::RateLimiter,
        Layer::TimeLimiter,
        Layer::Bulkhead,
        Layer::ThreadPoolBulkhead,
    ];
}

/// One part per layer, wrapped around a call in the fixed order by
/// [`Stack::around`]; see the [module documentation](self).
///
/// A layer left out is `()`; `Option` of a part is a layer that a face has
/// or not at run time (one test per call when it has not).
#[derive(Debug, Clone, Copy, Default)]
pub struct Stack<R = (), C = (), L = (), T = (), B = ()> {
    retry: R,
    circuit_breaker: C,
    rate_limiter: L,
    time_limiter: T,
    bulkhead: B,
}

impl Stack {
    /// No layer: the call runs bare.
    #[inline(always)]
    pub fn new() -> Self {
        Stack::default()
    }
}

impl<R, C, L, T, B> Stack<R, C, L, T, B> {
    /// The retry's part ([`Retry::part`](crate::retry::Retry::part)), outermost.
    #[inline(always)]
    pub fn retry<X>(self, retry: X) -> Stack<X, C, L, T, B> {
        Stack {
            retry,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
        }
    }

    /// The circuit breaker's part ([`CircuitBreaker::part`](crate::circuit_breaker::CircuitBreaker::part)).
    #[inline(always)]
    pub fn circuit_breaker<X>(self, circuit_breaker: X) -> Stack<R, X, L, T, B> {
        Stack {
            retry: self.retry,
            circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
        }
    }

    /// The rate limiter's part ([`RateLimiter::part`](crate::rate_limiter::RateLimiter::part)).
    #[inline(always)]
    pub fn rate_limiter<X>(self, rate_limiter: X) -> Stack<R, C, X, T, B> {
        Stack {
            retry: self.retry,
            circuit_breaker: self.circuit_breaker,
            rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
        }
    }

    /// The time limiter's part ([`TimeLimiter::part`](crate::time_limiter::TimeLimiter::part)).
    #[inline(always)]
    pub fn time_limiter<X>(self, time_limiter: X) -> Stack<R, C, L, X, B> {
        Stack {
            retry: self.retry,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter,
            bulkhead: self.bulkhead,
        }
    }

    /// The bulkhead's part: a semaphore bulkhead's
    /// ([`Bulkhead::part`](crate::bulkhead::Bulkhead::part)) or a thread
    /// pool's ([`ThreadPoolBulkhead::part`](crate::thread_pool_bulkhead::ThreadPoolBulkhead::part)).
    #[inline(always)]
    pub fn bulkhead<X>(self, bulkhead: X) -> Stack<R, C, L, T, X> {
        Stack {
            retry: self.retry,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead,
        }
    }

    /// The layers around `call`, outermost first (see [`Around`]).
    #[inline(always)]
    pub fn around<N>(self, call: N) -> <Self as Around<N>>::Node
    where
        Self: Around<N>,
    {
        Around::around(self, call)
    }

    /// Makes a blocking call through the layers: `call` is [`Lift`] of the
    /// caller's function, or [`Call`] of one that fails with
    /// `resil::Error<E>` already.
    #[inline(always)]
    pub fn call<N>(self, call: N) -> <<Self as Around<N>>::Node as SyncNode>::Output
    where
        Self: Around<N>,
        <Self as Around<N>>::Node: SyncNode,
    {
        self.around(call).call(&mut Ctx::new())
    }

    /// The future of an async call through the layers, which admit it now
    /// (see [`ChainFuture::new`]).
    #[inline(always)]
    pub fn call_async<N>(self, call: N) -> ChainFuture<<Self as Around<N>>::Node>
    where
        Self: Around<N>,
        <Self as Around<N>>::Node: Node,
    {
        ChainFuture::new(self.around(call))
    }

    /// The parts, outermost first.
    pub fn parts(&self) -> (&R, &C, &L, &T, &B) {
        (
            &self.retry,
            &self.circuit_breaker,
            &self.rate_limiter,
            &self.time_limiter,
            &self.bulkhead,
        )
    }
}

/// Layers wrapped around a call: for [`Stack`], the one place that spells
/// the order.
pub trait Around<N> {
    /// The outermost layer's node.
    type Node;

    /// Wraps the layers around `call`, the innermost first.
    fn around(self, call: N) -> Self::Node;
}

impl<R, C, L, T, B, N> Around<N> for Stack<R, C, L, T, B>
where
    B: Wrap<N>,
    T: Wrap<B::Node>,
    L: Wrap<T::Node>,
    C: Wrap<L::Node>,
    R: Wrap<C::Node>,
{
    type Node = R::Node;

    #[inline(always)]
    fn around(self, call: N) -> R::Node {
        let node = self.bulkhead.wrap(call);
        let node = self.time_limiter.wrap(node);
        let node = self.rate_limiter.wrap(node);
        let node = self.circuit_breaker.wrap(node);
        self.retry.wrap(node)
    }
}
