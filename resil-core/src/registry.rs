//! Registries: named configurations and the shared instances created from them.
//!
//! A registry holds a `default` configuration, named configurations that
//! instances can be created from, registry-wide tags, and one shared instance
//! per name: asking twice for `inventory-query` returns the same `Arc`, and a
//! configuration passed for a name that already exists is ignored (as in
//! Resilience4j's `computeIfAbsent`). Instances get the registry's clock, its
//! tags overlaid by their own, and a recent-events buffer of their
//! configuration's `event_consumer_buffer_size`. The registry publishes
//! [`RegistryEvent`]s when entries are added, removed or replaced.
//!
//! # Examples
//!
//! ```
//! use resil_core::registry::CircuitBreakerRegistry;
//! use resil_core::circuit_breaker::CircuitBreakerConfig;
//! use std::sync::Arc;
//!
//! let registry = CircuitBreakerRegistry::of_defaults();
//! registry
//!     .add_configuration("inventory-base", CircuitBreakerConfig::builder().sliding_window_size(20).build()?)
//!     .unwrap();
//! let a = registry.circuit_breaker_with_config("inventory-query", "inventory-base")?;
//! let b = registry.circuit_breaker("inventory-query");
//! assert!(Arc::ptr_eq(&a, &b));
//! assert_eq!(b.config().sliding_window_size(), 20);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, RwLock};

use crate::Name;
use crate::bulkhead::{Bulkhead, BulkheadConfig};
use crate::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use crate::clock::{Clock, SharedClock};
use crate::deadline::{Deadline, DeadlineConfig};
use crate::error::{ConfigurationNotFound, DefaultConfigReserved};
use crate::event::{EventKind, EventPublisher};
use crate::hedge::{Hedge, HedgeConfig};
use crate::live::ChangeRefused;
use crate::rate_limiter::{RateLimiter, RateLimiterConfig};
use crate::retry::{Retry, RetryConfig};
use crate::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
use crate::time_limiter::{TimeLimiter, TimeLimiterConfig};

use crate::Tags;

/// The name of the configuration every registry has.
pub const DEFAULT_CONFIG: &str = "default";

mod sealed {
    pub trait Sealed {}
}

/// A primitive that a [`Registry`] can hold. Implemented by the eight primitives.
pub trait Primitive: sealed::Sealed + fmt::Debug + Send + Sync + Sized + 'static {
    /// Its configuration.
    type Config: Clone + Default + fmt::Debug + Send + Sync + 'static;

    /// Creates an instance for a registry (with the registry's clock and tags,
    /// and the recent-events buffer of its configuration).
    #[doc(hidden)]
    fn create(name: Name, config: Self::Config, clock: SharedClock, tags: Tags) -> Self;

    /// [`Primitive::create`] for one key of a keyed call site: its
    /// recent-events buffer takes its memory as its events come, since
    /// most keys see a few calls.
    #[doc(hidden)]
    fn create_keyed(name: Name, config: Self::Config, clock: SharedClock, tags: Tags) -> Self {
        Self::create(name, config, clock, tags)
    }

    /// The instance's name.
    fn instance_name(&self) -> &str;

    /// Applies `config` to the live instance in place, keeping its identity
    /// and its state (each primitive's `change_config` says what is kept);
    /// the recent-events buffer follows `event_consumer_buffer_size`.
    ///
    /// # Errors
    ///
    /// [`ChangeRefused`] when the instance already holds
    /// [`MAX_VERSIONS`](crate::live::MAX_VERSIONS) distinct configurations;
    /// nothing changes then. [`Primitive::can_change_config`] tells beforehand.
    fn change_config(&self, config: Self::Config) -> Result<(), ChangeRefused>;

    /// Whether [`Primitive::change_config`] would accept `config`.
    ///
    /// # Errors
    ///
    /// The [`ChangeRefused`] that `change_config` would return.
    fn can_change_config(&self, config: &Self::Config) -> Result<(), ChangeRefused>;
}

/// The result of a primitive's own `change_config`, as the trait returns it.
trait Changed {
    fn changed(self) -> Result<(), ChangeRefused>;
}

impl Changed for () {
    fn changed(self) -> Result<(), ChangeRefused> {
        Ok(())
    }
}

impl Changed for Result<(), ChangeRefused> {
    fn changed(self) -> Result<(), ChangeRefused> {
        self
    }
}

macro_rules! primitive {
    ($ty:ty, $config:ty) => {
        impl sealed::Sealed for $ty {}
        impl Primitive for $ty {
            type Config = $config;
            fn create(name: Name, config: $config, clock: SharedClock, tags: Tags) -> Self {
                let buffer = config.event_consumer_buffer_size() as usize;
                let instance = <$ty>::with_parts(name, config, clock, tags);
                instance.event_publisher().enable_buffer(buffer);
                instance
            }
            fn create_keyed(name: Name, config: $config, clock: SharedClock, tags: Tags) -> Self {
                let buffer = config.event_consumer_buffer_size() as usize;
                let instance = <$ty>::with_parts(name, config, clock, tags);
                instance.event_publisher().enable_growing_buffer(buffer);
                instance
            }
            fn instance_name(&self) -> &str {
                self.name()
            }
            fn change_config(&self, config: $config) -> Result<(), ChangeRefused> {
                let buffer = config.event_consumer_buffer_size() as usize;
                Changed::changed(<$ty>::change_config(self, config))?;
                self.event_publisher().enable_buffer(buffer);
                Ok(())
            }
            fn can_change_config(&self, config: &$config) -> Result<(), ChangeRefused> {
                <$ty>::can_change_config(self, config)
            }
        }
    };
}

primitive!(CircuitBreaker, CircuitBreakerConfig);
primitive!(Retry, RetryConfig);
primitive!(Bulkhead, BulkheadConfig);
primitive!(ThreadPoolBulkhead, ThreadPoolBulkheadConfig);
primitive!(RateLimiter, RateLimiterConfig);
primitive!(TimeLimiter, TimeLimiterConfig);
primitive!(Hedge, HedgeConfig);

// A deadline publishes no events of its own (the patterns that notice it
// count `resil_deadline_exceeded_total`): it has no buffer to size.
impl sealed::Sealed for Deadline {}
impl Primitive for Deadline {
    type Config = DeadlineConfig;
    fn create(name: Name, config: DeadlineConfig, clock: SharedClock, tags: Tags) -> Self {
        Deadline::with_parts(name, config, clock, tags)
    }
    fn instance_name(&self) -> &str {
        self.name()
    }
    fn change_config(&self, config: DeadlineConfig) -> Result<(), ChangeRefused> {
        Deadline::change_config(self, config)
    }
    fn can_change_config(&self, config: &DeadlineConfig) -> Result<(), ChangeRefused> {
        Deadline::can_change_config(self, config)
    }
}

/// What happened to a registry's entries.
#[derive(Debug)]
#[non_exhaustive]
pub enum RegistryEvent<P> {
    /// An instance was created.
    Added(Arc<P>),
    /// An instance was removed.
    Removed(Arc<P>),
    /// An instance was replaced.
    Replaced {
        /// The instance before.
        old: Arc<P>,
        /// The instance after.
        new: Arc<P>,
    },
}

impl<P> Clone for RegistryEvent<P> {
    fn clone(&self) -> Self {
        match self {
            RegistryEvent::Added(p) => RegistryEvent::Added(p.clone()),
            RegistryEvent::Removed(p) => RegistryEvent::Removed(p.clone()),
            RegistryEvent::Replaced { old, new } => RegistryEvent::Replaced {
                old: old.clone(),
                new: new.clone(),
            },
        }
    }
}

/// The kinds of [`RegistryEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegistryEventType {
    /// [`RegistryEvent::Added`]
    Added,
    /// [`RegistryEvent::Removed`]
    Removed,
    /// [`RegistryEvent::Replaced`]
    Replaced,
}

impl<P: fmt::Debug + Send + Sync + 'static> EventKind for RegistryEvent<P> {
    type Type = RegistryEventType;
    fn event_type(&self) -> RegistryEventType {
        match self {
            RegistryEvent::Added(_) => RegistryEventType::Added,
            RegistryEvent::Removed(_) => RegistryEventType::Removed,
            RegistryEvent::Replaced { .. } => RegistryEventType::Replaced,
        }
    }
}

/// A registry of one kind of primitive; see the [module documentation](self).
pub struct Registry<P: Primitive> {
    configs: RwLock<HashMap<String, P::Config>>,
    instances: RwLock<BTreeMap<String, Arc<P>>>,
    tags: Tags,
    clock: SharedClock,
    events: EventPublisher<RegistryEvent<P>>,
}

/// Builds a [`Registry`] with a default configuration, named ones, tags and a clock.
pub struct RegistryBuilder<P: Primitive> {
    configs: HashMap<String, P::Config>,
    tags: Tags,
    clock: SharedClock,
}

impl<P: Primitive> RegistryBuilder<P> {
    /// Sets the `default` configuration.
    pub fn default_config(mut self, config: P::Config) -> Self {
        self.configs.insert(DEFAULT_CONFIG.to_owned(), config);
        self
    }

    /// Adds a named configuration (`default` sets the default one).
    pub fn configuration(mut self, name: impl Into<String>, config: P::Config) -> Self {
        self.configs.insert(name.into(), config);
        self
    }

    /// Sets the tags merged into every instance.
    pub fn tags(mut self, tags: Tags) -> Self {
        self.tags = tags;
        self
    }

    /// Sets the clock every instance reads.
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = clock.into_shared();
        self
    }

    /// Builds the registry.
    pub fn build(self) -> Registry<P> {
        let mut configs = self.configs;
        configs.entry(DEFAULT_CONFIG.to_owned()).or_default();
        Registry {
            configs: RwLock::new(configs),
            instances: RwLock::new(BTreeMap::new()),
            tags: self.tags,
            clock: self.clock.clone(),
            events: EventPublisher::new(Name::from("registry"), self.clock),
        }
    }
}

impl<P: Primitive> fmt::Debug for RegistryBuilder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryBuilder")
            .field("configs", &self.configs)
            .field("tags", &self.tags)
            .finish_non_exhaustive()
    }
}

impl<P: Primitive> Registry<P> {
    /// A registry whose `default` is the library defaults.
    pub fn of_defaults() -> Self {
        Self::builder().build()
    }

    /// A registry with the given `default` configuration.
    pub fn new(default_config: P::Config) -> Self {
        Self::builder().default_config(default_config).build()
    }

    /// A builder.
    pub fn builder() -> RegistryBuilder<P> {
        RegistryBuilder {
            configs: HashMap::new(),
            tags: Tags::new(),
            clock: SharedClock::default(),
        }
    }

    /// Adds (or replaces) a named configuration.
    ///
    /// # Errors
    ///
    /// [`DefaultConfigReserved`] for the name `default`.
    pub fn add_configuration(
        &self,
        name: impl Into<String>,
        config: P::Config,
    ) -> Result<(), DefaultConfigReserved> {
        let name = name.into();
        if name == DEFAULT_CONFIG {
            return Err(DefaultConfigReserved);
        }
        write(&self.configs).insert(name, config);
        Ok(())
    }

    /// Removes a named configuration; instances created from it keep it.
    ///
    /// # Errors
    ///
    /// [`DefaultConfigReserved`] for the name `default`.
    pub fn remove_configuration(
        &self,
        name: &str,
    ) -> Result<Option<P::Config>, DefaultConfigReserved> {
        if name == DEFAULT_CONFIG {
            return Err(DefaultConfigReserved);
        }
        Ok(write(&self.configs).remove(name))
    }

    /// Replaces the `default` configuration (the one instances get when they
    /// are created without one); instances that exist keep theirs.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::registry::BulkheadRegistry;
    /// use resil_core::bulkhead::BulkheadConfig;
    ///
    /// let registry = BulkheadRegistry::of_defaults();
    /// let before = registry.bulkhead("a");
    /// registry.set_default_config(BulkheadConfig::builder().max_concurrent_calls(3).build()?);
    /// assert_eq!(registry.bulkhead("b").config().max_concurrent_calls(), 3);
    /// assert_eq!(before.config().max_concurrent_calls(), 25);
    /// # Ok::<(), resil_core::ConfigError>(())
    /// ```
    pub fn set_default_config(&self, config: P::Config) {
        write(&self.configs).insert(DEFAULT_CONFIG.to_owned(), config);
    }

    /// Replaces every configuration at once, `default` included (the
    /// library defaults when `configs` has none): a name missing from
    /// `configs` is removed. Instances that exist keep theirs. A reload
    /// swaps the configurations of a new file in with it, so that no
    /// lookup sees half of the old set and half of the new.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::registry::RetryRegistry;
    /// use resil_core::retry::RetryConfig;
    ///
    /// let registry = RetryRegistry::of_defaults();
    /// registry.add_configuration("old", RetryConfig::default()).unwrap();
    /// registry.set_configurations([("new".to_owned(), RetryConfig::builder().max_attempts(5).build()?)]);
    /// assert_eq!(registry.configuration_names(), ["default", "new"]);
    /// assert_eq!(registry.default_config().max_attempts(), 3);
    /// # Ok::<(), resil_core::ConfigError>(())
    /// ```
    pub fn set_configurations(&self, configs: impl IntoIterator<Item = (String, P::Config)>) {
        let mut configs: HashMap<String, P::Config> = configs.into_iter().collect();
        configs.entry(DEFAULT_CONFIG.to_owned()).or_default();
        *write(&self.configs) = configs;
    }

    /// The names of the configurations, `default` included, sorted.
    pub fn configuration_names(&self) -> Vec<String> {
        let mut names: Vec<String> = read(&self.configs).keys().cloned().collect();
        names.sort();
        names
    }

    /// A named configuration.
    pub fn configuration(&self, name: &str) -> Option<P::Config> {
        read(&self.configs).get(name).cloned()
    }

    /// The `default` configuration.
    pub fn default_config(&self) -> P::Config {
        self.configuration(DEFAULT_CONFIG).unwrap_or_default()
    }

    /// The registry-wide tags.
    pub fn tags(&self) -> &Tags {
        &self.tags
    }

    /// The clock instances are created with.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// The instance of `name`, if it exists (never creates one).
    pub fn find(&self, name: &str) -> Option<Arc<P>> {
        read(&self.instances).get(name).cloned()
    }

    /// Every instance, sorted by name.
    pub fn all(&self) -> Vec<Arc<P>> {
        read(&self.instances).values().cloned().collect()
    }

    /// Removes the instance of `name`.
    pub fn remove(&self, name: &str) -> Option<Arc<P>> {
        let removed = write(&self.instances).remove(name);
        if let Some(p) = &removed {
            self.events.publish(|| RegistryEvent::Removed(p.clone()));
        }
        removed
    }

    /// Replaces the instance of `name` with one built from `config`; returns the old one.
    pub fn replace(&self, name: &str, config: P::Config) -> Option<Arc<P>> {
        let new = Arc::new(self.create(name, config, Tags::new()));
        let old = write(&self.instances).insert(name.to_owned(), new.clone());
        match &old {
            Some(old) => self.events.publish(|| RegistryEvent::Replaced {
                old: old.clone(),
                new: new.clone(),
            }),
            None => self.events.publish(|| RegistryEvent::Added(new.clone())),
        }
        old
    }

    /// Registry events (added, removed, replaced).
    pub fn event_publisher(&self) -> &EventPublisher<RegistryEvent<P>> {
        &self.events
    }

    /// The instance of `name`, created with `config()` if it does not exist.
    pub fn get_or_create(&self, name: &str, config: impl FnOnce() -> P::Config) -> Arc<P> {
        self.get_or_create_tagged(name, config, Tags::new())
    }

    /// Like [`Registry::get_or_create`], with instance tags.
    pub fn get_or_create_tagged(
        &self,
        name: &str,
        config: impl FnOnce() -> P::Config,
        tags: Tags,
    ) -> Arc<P> {
        if let Some(p) = read(&self.instances).get(name) {
            return p.clone();
        }
        let mut instances = write(&self.instances);
        if let Some(p) = instances.get(name) {
            return p.clone();
        }
        let p = Arc::new(self.create(name, config(), tags));
        instances.insert(name.to_owned(), p.clone());
        drop(instances);
        self.events.publish(|| RegistryEvent::Added(p.clone()));
        p
    }

    /// The instance of `name`, created from the named configuration if it does not exist.
    ///
    /// # Errors
    ///
    /// [`ConfigurationNotFound`] when there is no such configuration (even if the
    /// instance exists, as in Resilience4j).
    pub fn get_or_create_with_config(
        &self,
        name: &str,
        config_name: &str,
    ) -> Result<Arc<P>, ConfigurationNotFound> {
        let config = self
            .configuration(config_name)
            .ok_or_else(|| ConfigurationNotFound::new(config_name))?;
        Ok(self.get_or_create(name, || config))
    }

    fn create(&self, name: &str, config: P::Config, tags: Tags) -> P {
        let mut merged = self.tags.clone();
        merged.extend(tags);
        P::create(Name::from(name), config, self.clock.clone(), merged)
    }
}

impl<P: Primitive> Default for Registry<P> {
    fn default() -> Self {
        Self::of_defaults()
    }
}

impl<P: Primitive> fmt::Debug for Registry<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field(
                "instances",
                &read(&self.instances).keys().collect::<Vec<_>>(),
            )
            .field("tags", &self.tags)
            .finish_non_exhaustive()
    }
}

macro_rules! typed {
    ($(#[$doc:meta])* $alias:ident, $ty:ty, $config:ty, $get:ident, $with_config:ident, $with:ident) => {
        $(#[$doc])*
        pub type $alias = Registry<$ty>;

        impl Registry<$ty> {
            /// The shared instance of `name`, created with the `default` configuration
            /// if it does not exist.
            pub fn $get(&self, name: &str) -> Arc<$ty> {
                self.get_or_create(name, || self.default_config())
            }

            /// The shared instance of `name`, created from the configuration named
            /// `config_name` if it does not exist.
            ///
            /// # Errors
            ///
            /// [`ConfigurationNotFound`] when there is no such configuration.
            pub fn $with_config(&self, name: &str, config_name: &str) -> Result<Arc<$ty>, ConfigurationNotFound> {
                self.get_or_create_with_config(name, config_name)
            }

            /// The shared instance of `name`, created with `config` if it does not exist.
            pub fn $with(&self, name: &str, config: $config) -> Arc<$ty> {
                self.get_or_create(name, || config)
            }
        }
    };
}

typed!(
    /// A registry of circuit breakers.
    CircuitBreakerRegistry, CircuitBreaker, CircuitBreakerConfig,
    circuit_breaker, circuit_breaker_with_config, circuit_breaker_with
);
typed!(
    /// A registry of retries.
    RetryRegistry, Retry, RetryConfig, retry, retry_with_config, retry_with
);
typed!(
    /// A registry of semaphore bulkheads.
    BulkheadRegistry, Bulkhead, BulkheadConfig, bulkhead, bulkhead_with_config, bulkhead_with
);
typed!(
    /// A registry of thread-pool bulkheads.
    ThreadPoolBulkheadRegistry, ThreadPoolBulkhead, ThreadPoolBulkheadConfig,
    thread_pool_bulkhead, thread_pool_bulkhead_with_config, thread_pool_bulkhead_with
);
typed!(
    /// A registry of rate limiters.
    RateLimiterRegistry, RateLimiter, RateLimiterConfig,
    rate_limiter, rate_limiter_with_config, rate_limiter_with
);
typed!(
    /// A registry of time limiters.
    TimeLimiterRegistry, TimeLimiter, TimeLimiterConfig,
    time_limiter, time_limiter_with_config, time_limiter_with
);
typed!(
    /// A registry of deadlines.
    DeadlineRegistry, Deadline, DeadlineConfig, deadline, deadline_with_config, deadline_with
);
typed!(
    /// A registry of hedges.
    HedgeRegistry, Hedge, HedgeConfig, hedge, hedge_with_config, hedge_with
);

use crate::sync::std_lock::{read, write};
