//! [`ThreadPoolBulkheadConfig`] and its builder.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::context::ContextPropagator;
use crate::error::{ConfigError, Problems};

/// The largest `max_thread_pool_size` (and `core_thread_pool_size`) resil
/// accepts: every thread is a real OS thread with its own stack, so an absurd
/// size is refused at start-up instead of exhausting the process later.
pub const MAX_THREAD_POOL_SIZE: u32 = 10_000;

/// The largest `queue_capacity` resil accepts. A queue this long already
/// means minutes of backlog for blocking calls; larger values are a typo.
pub const MAX_QUEUE_CAPACITY: u32 = 1_000_000;

/// The processors the pool sizes default to (Resilience4j's
/// `Runtime.availableProcessors()`, read once, like its static defaults).
fn available_processors() -> u32 {
    static CPUS: OnceLock<u32> = OnceLock::new();
    *CPUS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
    })
}

/// The configuration of a thread-pool bulkhead: Resilience4j's settings and defaults.
///
/// | setting | default |
/// | --- | --- |
/// | `max_thread_pool_size` | the number of CPUs (`std::thread::available_parallelism`) |
/// | `core_thread_pool_size` | the number of CPUs minus one, at least 1 |
/// | `queue_capacity` | 100 (0: hand-off, a task is admitted only if a thread can take it now) |
/// | `keep_alive_duration` | 20 ms (how long a thread above the core size may idle) |
/// | context propagators | none |
/// | `event_consumer_buffer_size` | 100 (the recent-events buffer a registry attaches) |
/// | `shadow` | `false` (decide, never refuse: would-be refusals become events) |
///
/// Resilience4j's `writableStackTraceEnabled` and `rejectedExecutionHandler`
/// have no counterpart: Rust errors carry no stack trace, and a refused task is
/// always a [`BulkheadFull`](super::BulkheadFull) (the `AbortPolicy` default).
///
/// # Examples
///
/// ```
/// use resil_core::thread_pool_bulkhead::ThreadPoolBulkheadConfig;
/// use std::time::Duration;
///
/// let config = ThreadPoolBulkheadConfig::builder()
///     .core_thread_pool_size(2)
///     .max_thread_pool_size(4)
///     .queue_capacity(10)
///     .keep_alive_duration(Duration::from_millis(500))
///     .build()?;
/// assert_eq!(config.max_thread_pool_size(), 4);
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct ThreadPoolBulkheadConfig {
    pub(crate) max_thread_pool_size: u32,
    pub(crate) core_thread_pool_size: u32,
    pub(crate) queue_capacity: u32,
    pub(crate) keep_alive_duration: Duration,
    pub(crate) context_propagators: Arc<[Arc<dyn ContextPropagator>]>,
    pub(crate) event_consumer_buffer_size: u32,
    pub(crate) shadow: bool,
}

impl Default for ThreadPoolBulkheadConfig {
    fn default() -> Self {
        let cpus = available_processors();
        ThreadPoolBulkheadConfig {
            max_thread_pool_size: cpus,
            core_thread_pool_size: if cpus > 1 { cpus - 1 } else { 1 },
            queue_capacity: 100,
            keep_alive_duration: Duration::from_millis(20),
            context_propagators: Arc::new([]),
            event_consumer_buffer_size: 100,
            shadow: false,
        }
    }
}

impl ThreadPoolBulkheadConfig {
    /// A builder with Resilience4j's defaults.
    pub fn builder() -> ThreadPoolBulkheadConfigBuilder {
        ThreadPoolBulkheadConfigBuilder {
            config: ThreadPoolBulkheadConfig::default(),
        }
    }

    /// A builder that starts from a copy of this configuration (Resilience4j's
    /// `ThreadPoolBulkheadConfig.from(base)`, which mutates `base`; here the
    /// original is never changed).
    pub fn to_builder(&self) -> ThreadPoolBulkheadConfigBuilder {
        ThreadPoolBulkheadConfigBuilder {
            config: self.clone(),
        }
    }

    crate::config_kit::getters! {
        /// The most threads the pool runs at once.
        max_thread_pool_size: u32;
        /// The threads kept alive even when idle, once started.
        core_thread_pool_size: u32;
        /// Tasks that may wait for a thread; 0 means hand-off.
        queue_capacity: u32;
        /// How long a thread above the core size may idle before it exits.
        keep_alive_duration: Duration;
    }

    /// The context propagators, in the order they were added.
    pub fn context_propagators(&self) -> &[Arc<dyn ContextPropagator>] {
        &self.context_propagators
    }
    crate::config_kit::getters! {
        @buffer;
        @shadow;
    }

    /// The tasks admitted at once: `max_thread_pool_size + queue_capacity`.
    pub fn capacity(&self) -> u32 {
        self.max_thread_pool_size
            .saturating_add(self.queue_capacity)
    }
}

impl fmt::Debug for ThreadPoolBulkheadConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolBulkheadConfig")
            .field("max_thread_pool_size", &self.max_thread_pool_size)
            .field("core_thread_pool_size", &self.core_thread_pool_size)
            .field("queue_capacity", &self.queue_capacity)
            .field("keep_alive_duration", &self.keep_alive_duration)
            .field("context_propagators", &self.context_propagators.len())
            .field(
                "event_consumer_buffer_size",
                &self.event_consumer_buffer_size,
            )
            .field("shadow", &self.shadow)
            .finish()
    }
}

/// Builds a [`ThreadPoolBulkheadConfig`]; `build()` checks every value and reports all problems.
#[derive(Clone, Debug)]
pub struct ThreadPoolBulkheadConfigBuilder {
    config: ThreadPoolBulkheadConfig,
}

impl ThreadPoolBulkheadConfigBuilder {
    crate::config_kit::setters! {
        /// The most threads the pool runs at once; `1..=10_000` and at least the core size.
        max_thread_pool_size: u32;
        /// The threads kept alive even when idle; `1..=10_000`.
        core_thread_pool_size: u32;
        /// Tasks that may wait for a thread; `0..=1_000_000`, 0 meaning hand-off
        /// (Java's `SynchronousQueue`).
        queue_capacity: u32;
        /// How long a thread above the core size may idle before it exits (zero: at once).
        keep_alive_duration: Duration;
    }

    /// Adds a context propagator: what it captures on the submitting thread is
    /// re-entered on the worker around the task. Propagators are entered in the
    /// order they were added and left in reverse order.
    pub fn context_propagator(self, propagator: impl ContextPropagator) -> Self {
        self.shared_context_propagator(Arc::new(propagator))
    }
    /// Like [`context_propagator`](Self::context_propagator), for a
    /// propagator already shared (a registered one).
    pub fn shared_context_propagator(mut self, propagator: Arc<dyn ContextPropagator>) -> Self {
        let mut all: Vec<Arc<dyn ContextPropagator>> = self.config.context_propagators.to_vec();
        all.push(propagator);
        self.config.context_propagators = all.into();
        self
    }
    /// Removes every context propagator (those of a base configuration included).
    pub fn clear_context_propagators(mut self) -> Self {
        self.config.context_propagators = Arc::new([]);
        self
    }
    crate::config_kit::setters! {
        @buffer;
        @shadow;
    }

    /// Checks every value (Resilience4j's builder rules, plus upper bounds) and
    /// builds the configuration.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] listing every value out of range, including a maximum
    /// pool size below the core size.
    pub fn build(self) -> Result<ThreadPoolBulkheadConfig, ConfigError> {
        let c = self.config;
        let mut p = Problems::default();
        let sizes = [
            ("max_thread_pool_size", c.max_thread_pool_size),
            ("core_thread_pool_size", c.core_thread_pool_size),
        ];
        for (field, size) in sizes {
            p.check(size >= 1, field, size, "must be at least 1");
            p.check(
                size <= MAX_THREAD_POOL_SIZE,
                field,
                size,
                "must be at most 10000",
            );
        }
        if c.max_thread_pool_size >= 1 && c.core_thread_pool_size >= 1 {
            p.check(
                c.max_thread_pool_size >= c.core_thread_pool_size,
                "max_thread_pool_size",
                c.max_thread_pool_size,
                "must be at least core_thread_pool_size",
            );
        }
        p.check(
            c.queue_capacity <= MAX_QUEUE_CAPACITY,
            "queue_capacity",
            c.queue_capacity,
            "must be at most 1000000",
        );
        crate::event::check_buffer_size(&mut p, c.event_consumer_buffer_size);
        // Any keep-alive is valid: Resilience4j only refuses negative ones,
        // which `Duration` cannot hold.
        p.finish(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_resilience4j_defaults() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        let c = ThreadPoolBulkheadConfig::default();
        assert_eq!(c.max_thread_pool_size(), cpus);
        assert_eq!(
            c.core_thread_pool_size(),
            if cpus > 1 { cpus - 1 } else { 1 }
        );
        assert_eq!(c.queue_capacity(), 100);
        assert_eq!(c.keep_alive_duration(), Duration::from_millis(20));
        assert!(c.context_propagators().is_empty());
        assert_eq!(c.event_consumer_buffer_size(), 100);
        assert!(ThreadPoolBulkheadConfig::builder().build().is_ok());
    }

    #[test]
    fn every_rule_is_reported_at_once() {
        let err = ThreadPoolBulkheadConfig::builder()
            .max_thread_pool_size(0)
            .core_thread_pool_size(10_001)
            .queue_capacity(1_000_001)
            .build()
            .unwrap_err();
        let fields: Vec<_> = err.problems().iter().map(|p| p.field()).collect();
        assert_eq!(
            fields,
            [
                "max_thread_pool_size",
                "core_thread_pool_size",
                "queue_capacity"
            ]
        );
        assert_eq!(
            err.to_string(),
            "max_thread_pool_size = 0: must be at least 1; \
             core_thread_pool_size = 10001: must be at most 10000; \
             queue_capacity = 1000001: must be at most 1000000"
        );
    }

    #[test]
    fn max_below_core_is_refused_at_build() {
        let err = ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(4)
            .max_thread_pool_size(2)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "max_thread_pool_size = 2: must be at least core_thread_pool_size"
        );
        let ok = ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(2)
            .max_thread_pool_size(2)
            .queue_capacity(0)
            .keep_alive_duration(Duration::ZERO)
            .build()
            .unwrap();
        assert_eq!(ok.capacity(), 2);
    }

    #[test]
    fn to_builder_copies_and_never_mutates_the_base() {
        let base = ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(1)
            .max_thread_pool_size(2)
            .queue_capacity(3)
            .context_propagator(|| || ())
            .build()
            .unwrap();
        let derived = base
            .to_builder()
            .queue_capacity(7)
            .max_thread_pool_size(5)
            .context_propagator(|| || ())
            .build()
            .unwrap();
        assert_eq!((base.max_thread_pool_size(), base.queue_capacity()), (2, 3));
        assert_eq!(base.context_propagators().len(), 1);
        assert_eq!(
            (derived.max_thread_pool_size(), derived.queue_capacity()),
            (5, 7)
        );
        assert_eq!(derived.context_propagators().len(), 2);
        let cleared = derived
            .to_builder()
            .clear_context_propagators()
            .build()
            .unwrap();
        assert!(cleared.context_propagators().is_empty());
        assert_eq!(derived.context_propagators().len(), 2);
    }
}
