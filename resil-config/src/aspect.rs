//! The eight aspects, at the bottom of the crate: every other module names them.

use std::fmt;

/// The eight aspects, named as the tables of resilience.toml name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Aspect {
    /// `#[circuit_breaker]`, table `circuitbreaker`.
    CircuitBreaker,
    /// `#[retry]`, table `retry`.
    Retry,
    /// `#[bulkhead]`, table `bulkhead`.
    Bulkhead,
    /// `#[thread_pool_bulkhead]`, table `thread-pool-bulkhead`.
    ThreadPoolBulkhead,
    /// `#[rate_limiter]`, table `ratelimiter`.
    RateLimiter,
    /// `#[time_limiter]`, table `timelimiter`.
    TimeLimiter,
    /// `#[hedge]`, table `hedge`.
    Hedge,
    /// `#[deadline]`, table `deadline`.
    Deadline,
}

impl Aspect {
    /// Every aspect, in the order of resilience.toml's documentation.
    pub const ALL: [Aspect; 8] = [
        Aspect::CircuitBreaker,
        Aspect::Retry,
        Aspect::Bulkhead,
        Aspect::ThreadPoolBulkhead,
        Aspect::RateLimiter,
        Aspect::TimeLimiter,
        Aspect::Hedge,
        Aspect::Deadline,
    ];

    /// The table of resilience.toml (Resilience4j's property prefix without
    /// `resilience4j.`): `circuitbreaker`, `retry`, `bulkhead`,
    /// `thread-pool-bulkhead`, `ratelimiter`, `timelimiter`, `hedge`,
    /// `deadline`.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_config::Aspect;
    /// assert_eq!(Aspect::ThreadPoolBulkhead.as_str(), "thread-pool-bulkhead");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Aspect::CircuitBreaker => "circuitbreaker",
            Aspect::Retry => "retry",
            Aspect::Bulkhead => "bulkhead",
            Aspect::ThreadPoolBulkhead => "thread-pool-bulkhead",
            Aspect::RateLimiter => "ratelimiter",
            Aspect::TimeLimiter => "timelimiter",
            Aspect::Hedge => "hedge",
            Aspect::Deadline => "deadline",
        }
    }

    /// The attribute that declares it: `circuit_breaker`, `retry`, ...
    pub const fn attribute(self) -> &'static str {
        match self {
            Aspect::CircuitBreaker => "circuit_breaker",
            Aspect::Retry => "retry",
            Aspect::Bulkhead => "bulkhead",
            Aspect::ThreadPoolBulkhead => "thread_pool_bulkhead",
            Aspect::RateLimiter => "rate_limiter",
            Aspect::TimeLimiter => "time_limiter",
            Aspect::Hedge => "hedge",
            Aspect::Deadline => "deadline",
        }
    }

    /// Its layer of the engine's chain, whose order (`Layer`'s `Ord`) is
    /// the order of the layers around a call.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_config::Aspect;
    /// assert!(Aspect::Retry.layer() < Aspect::CircuitBreaker.layer());
    /// ```
    pub const fn layer(self) -> resil_core::chain::Layer {
        use resil_core::chain::Layer;
        match self {
            Aspect::CircuitBreaker => Layer::CircuitBreaker,
            Aspect::Retry => Layer::Retry,
            Aspect::Bulkhead => Layer::Bulkhead,
            Aspect::ThreadPoolBulkhead => Layer::ThreadPoolBulkhead,
            Aspect::RateLimiter => Layer::RateLimiter,
            Aspect::TimeLimiter => Layer::TimeLimiter,
            Aspect::Hedge => Layer::Hedge,
            Aspect::Deadline => Layer::Deadline,
        }
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Aspect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
