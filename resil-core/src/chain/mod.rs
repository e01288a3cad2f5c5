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
//! Retry( Hedge( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead( call ) ) ) ) ) )
//! ```
//!
//! Resilience4j's default aspect order (Spring Boot's), whatever order a face
//! is given its layers in, with the hedge (which Resilience4j lacks) between
//! the retry and the breaker: each hedged attempt is an attempt the breaker
//! counts and the bulkhead admits. So every attempt of the retry passes through the
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
//! `layer.rs`: its part is a [`LayerPart`], its node the [`Layered`] node of
//! that part (how a part wraps the next node is said once, there), and the
//! file says what the node does. A new pattern is such a file and one line
//! in [`Around`]'s implementation for [`Stack`] (and one in
//! [`Layer::ORDER`], which the tests hold to it).
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
mod given_up;
mod layered;
mod node;

pub use self::future::ChainFuture;
pub(crate) use self::given_up::{GivenUp, drop_given_up, given_up};
pub(crate) use self::layered::layer_part;
pub use self::layered::{LayerPart, Layered};
pub use self::node::once;
pub use self::node::{Call, Ctx, HasAttempt, Lift, Node, SyncNode, Wrap};
pub(crate) use self::node::{OutOfLine, holding};

/// A layer of the chain, ordered from the outside in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Layer {
    /// The outermost layer: the request's deadline, which every layer
    /// inside it spends.
    Deadline,
    /// Inside the deadline: its attempts pass every layer inside it.
    Retry,
    /// Inside the retry: its attempts, the primary and the hedged ones,
    /// pass every layer inside it (async calls only).
    Hedge,
    /// Inside the hedge: it counts each attempt.
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
    pub const ORDER: [Layer; 8] = [
        Layer::Deadline,
        Layer::Retry,
        Layer::Hedge,
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
pub struct Stack<D = (), R = (), H = (), C = (), L = (), T = (), B = (), F = ()> {
    deadline: D,
    retry: R,
    hedge: H,
    circuit_breaker: C,
    rate_limiter: L,
    time_limiter: T,
    bulkhead: B,
    fault: F,
}

impl Stack {
    /// No layer: the call runs bare.
    #[inline(always)]
    pub fn new() -> Self {
        Stack::default()
    }
}

impl<D, R, H, C, L, T, B, F> Stack<D, R, H, C, L, T, B, F> {
    /// The deadline's part, outermost: it bounds everything inside it, the
    /// retry's waits included.
    #[inline(always)]
    pub fn deadline<X>(self, deadline: X) -> Stack<X, R, H, C, L, T, B, F> {
        Stack {
            deadline,
            retry: self.retry,
            hedge: self.hedge,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
            fault: self.fault,
        }
    }

    /// The retry's part ([`Retry::part`](crate::retry::Retry::part)), inside the
    /// deadline: every attempt passes the layers inside it.
    #[inline(always)]
    pub fn retry<X>(self, retry: X) -> Stack<D, X, H, C, L, T, B, F> {
        Stack {
            deadline: self.deadline,
            retry,
            hedge: self.hedge,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
            fault: self.fault,
        }
    }

    /// The hedge's part, inside the retry: its attempts pass the layers
    /// inside it.
    #[inline(always)]
    pub fn hedge<X>(self, hedge: X) -> Stack<D, R, X, C, L, T, B, F> {
        Stack {
            deadline: self.deadline,
            retry: self.retry,
            hedge,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
            fault: self.fault,
        }
    }

    /// The circuit breaker's part ([`CircuitBreaker::part`](crate::circuit_breaker::CircuitBreaker::part)).
    #[inline(always)]
    pub fn circuit_breaker<X>(self, circuit_breaker: X) -> Stack<D, R, H, X, L, T, B, F> {
        Stack {
            deadline: self.deadline,
            retry: self.retry,
            hedge: self.hedge,
            circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
            fault: self.fault,
        }
    }

    /// The rate limiter's part ([`RateLimiter::part`](crate::rate_limiter::RateLimiter::part)).
    #[inline(always)]
    pub fn rate_limiter<X>(self, rate_limiter: X) -> Stack<D, R, H, C, X, T, B, F> {
        Stack {
            deadline: self.deadline,
            retry: self.retry,
            hedge: self.hedge,
            circuit_breaker: self.circuit_breaker,
            rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
            fault: self.fault,
        }
    }

    /// The time limiter's part ([`TimeLimiter::part`](crate::time_limiter::TimeLimiter::part)).
    #[inline(always)]
    pub fn time_limiter<X>(self, time_limiter: X) -> Stack<D, R, H, C, L, X, B, F> {
        Stack {
            deadline: self.deadline,
            retry: self.retry,
            hedge: self.hedge,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter,
            bulkhead: self.bulkhead,
            fault: self.fault,
        }
    }

    /// The bulkhead's part: a semaphore bulkhead's
    /// ([`Bulkhead::part`](crate::bulkhead::Bulkhead::part)) or a thread
    /// pool's ([`ThreadPoolBulkhead::part`](crate::thread_pool_bulkhead::ThreadPoolBulkhead::part)).
    #[inline(always)]
    pub fn bulkhead<X>(self, bulkhead: X) -> Stack<D, R, H, C, L, T, X, F> {
        Stack {
            deadline: self.deadline,
            retry: self.retry,
            hedge: self.hedge,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead,
            fault: self.fault,
        }
    }

    /// The fault's part, innermost, around the call itself.
    #[inline(always)]
    pub fn fault<X>(self, fault: X) -> Stack<D, R, H, C, L, T, B, X> {
        Stack {
            deadline: self.deadline,
            retry: self.retry,
            hedge: self.hedge,
            circuit_breaker: self.circuit_breaker,
            rate_limiter: self.rate_limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
            fault,
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
    #[allow(clippy::type_complexity)]
    pub fn parts(&self) -> (&D, &R, &H, &C, &L, &T, &B, &F) {
        (
            &self.deadline,
            &self.retry,
            &self.hedge,
            &self.circuit_breaker,
            &self.rate_limiter,
            &self.time_limiter,
            &self.bulkhead,
            &self.fault,
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

impl<D, R, H, C, L, T, B, F, N> Around<N> for Stack<D, R, H, C, L, T, B, F>
where
    F: Wrap<N>,
    B: Wrap<F::Node>,
    T: Wrap<B::Node>,
    L: Wrap<T::Node>,
    C: Wrap<L::Node>,
    H: Wrap<C::Node>,
    R: Wrap<H::Node>,
    D: Wrap<R::Node>,
{
    type Node = D::Node;

    #[inline(always)]
    fn around(self, call: N) -> D::Node {
        let node = self.fault.wrap(call);
        let node = self.bulkhead.wrap(node);
        let node = self.time_limiter.wrap(node);
        let node = self.rate_limiter.wrap(node);
        let node = self.circuit_breaker.wrap(node);
        let node = self.hedge.wrap(node);
        let node = self.retry.wrap(node);
        self.deadline.wrap(node)
    }
}
