//! Spring Cloud CircuitBreaker's facade: `factory.create(id, group)` and
//! `run(supplier, fallback)`, as Spring Cloud CircuitBreaker 3.3's
//! Resilience4j implementation does them (feature `cloud`).
//!
//! A Java service that calls
//! `factory.create("inventory-query", "inventory-service").run(supplier, fallback)`
//! maps line by line:
//!
//! ```
//! use resil::cloud;
//!
//! #[derive(Debug)]
//! struct Refused;
//!
//! fn query(sku: &str) -> Result<u32, Refused> {
//!     if sku.is_empty() { Err(Refused) } else { Ok(7) }
//! }
//!
//! # fn main() {
//! # let dir = std::env::temp_dir().join(format!("resil-cloud-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! # std::env::set_current_dir(&dir).unwrap();
//! resil::init().expect("a valid resilience.toml");
//! let breaker = cloud::factory().create_in_group("inventory-query", "inventory-service");
//! let sku = String::from("SKU-1001");
//! let stock = breaker.run(move || query(&sku), |error| {
//!     // a timeout, an open breaker, a full bulkhead or the call's own error
//!     eprintln!("degraded: {error:?}");
//!     0
//! });
//! assert_eq!(stock, 7);
//! # std::fs::remove_dir(&dir).unwrap();
//! # }
//! ```
//!
//! # Where the settings come from
//!
//! As Spring Cloud's `Resilience4JCircuitBreakerFactory` looks them up:
//!
//! * The circuit breaker: the instance `id` when it exists (an
//!   `instances.<id>` entry creates it at [`init`](crate::init), and it is
//!   used as it is); else one created with `configs.<id>`, else with
//!   `configs.<group>`, else with the factory's default (the one
//!   [`configure`](CircuitBreakerFactoryBuilder::configure) gave for the id,
//!   else [`configure_default`](CircuitBreakerFactoryBuilder::configure_default)'s,
//!   else `configs.default`).
//! * The time limiter: the instance `id` when it exists, else the instance
//!   `group` when it exists, else one named `id` created as the breaker is
//!   (`configs.<id>`, `configs.<group>`, the factory's default). Spring Cloud
//!   3.3.3 took the registry's default at that last step, ignoring
//!   `configureDefault`; later versions take the factory's default, as here.
//! * The bulkhead, Spring Cloud's bulkhead provider's: one per group, named
//!   after it, configured from what
//!   [`configure_bulkhead`](CircuitBreakerFactoryBuilder::configure_bulkhead)
//!   gave for the group, else `configs.<group>`, else the default. For
//!   [`run`](CloudCircuitBreaker::run) a thread-pool bulkhead when one of
//!   that name exists; else a semaphore bulkhead when
//!   `enable-semaphore-default-bulkhead` is set or one of that name exists;
//!   else a thread-pool bulkhead. [`run_async`](CloudCircuitBreaker::run_async)
//!   always takes the semaphore bulkhead (Spring Cloud's reactive provider
//!   has no thread pool).
//!
//! Instances the factory creates carry the tag `group = <group>`, so their
//! meters do; `create(id)` is `create_in_group(id, id)`, as in Spring Cloud.
//! They are ordinary registry instances: `/actuator/circuitbreakers`,
//! `/actuator/resilience` and the meters list them as any other.
//!
//! # The call
//!
//! Both forms compose TimeLimiter inside Bulkhead inside CircuitBreaker, and
//! every error reaches the fallback as a [`resil::Error`](crate::Error), so
//! it can tell a timeout from an open breaker from a full bulkhead from the
//! call's own error. The breaker records a timeout and a full bulkhead as
//! failures (unless `ignore-errors` names `Timeout` or `BulkheadFull`).
//!
//! The blocking [`run`](CloudCircuitBreaker::run) runs the supplier on the
//! factory's executor and waits for it at most the time limiter's
//! `timeout-duration`. The executor is bounded: at most
//! `executor-max-threads` threads per group (and as many for the ids
//! created without one), with `executor-queue-capacity` places to wait;
//! past that the call is refused with the executor's `BulkheadFull`
//! (Spring Cloud's default executor is an unbounded cached thread pool,
//! which a hanging downstream grows without limit). A supplier that timed
//! out runs on until it returns, since a thread cannot be stopped. With
//! `disable-thread-pool` the supplier runs on the caller's thread with no
//! time limiter, and with `disable-time-limiter` (or its map's entry for
//! the id or group) without a time limiter.
//!
//! Names are `&'static str`: an instance per request, or a business id in
//! the name (unbounded instances, each with its own window), does not
//! compile from a `format!`.
//!
//! ```compile_fail
//! let sku = "SKU-1001".to_owned();
//! let name = format!("inventory-{sku}");
//! let _ = resil::cloud::factory().create(&name); // `name` does not live long enough
//! ```

mod breaker;
mod bulkhead;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use resil_config::cloud::GROUP_TAG;
use resil_config::{CloudSettings, Registries};
use resil_core::Tags;
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};

pub use self::breaker::{BlockingBulkhead, CloudCircuitBreaker};
pub use self::bulkhead::BulkheadConfiguration;

use self::breaker::Parts;
use self::bulkhead::{BulkheadDefault, BulkheadProvider};
use crate::sync::lock;

/// How long an idle executor thread waits for work before it exits (a
/// cached thread pool's 60 s).
const EXECUTOR_KEEP_ALIVE: Duration = Duration::from_secs(60);

/// The factory on the global registries ([`registries`](crate::registries)),
/// built on first use with the `[cloud]` settings of resilience.toml, or
/// the one [`install`](CircuitBreakerFactoryBuilder::install)ed before.
///
/// # Examples
///
/// ```
/// let breaker = resil::cloud::factory().create("inventory-query");
/// assert_eq!(breaker.id(), "inventory-query");
/// assert_eq!(breaker.group(), "inventory-query");
/// ```
pub fn factory() -> &'static CircuitBreakerFactory {
    GLOBAL.get_or_init(|| CircuitBreakerFactory::builder().build())
}

static GLOBAL: OnceLock<CircuitBreakerFactory> = OnceLock::new();

/// The circuit breaker's and the time limiter's settings for an id: Spring
/// Cloud's `Resilience4JCircuitBreakerConfiguration`.
#[derive(Debug, Clone, Default)]
pub struct BreakerConfig {
    circuit_breaker: CircuitBreakerConfig,
    time_limiter: TimeLimiterConfig,
}

impl BreakerConfig {
    /// Both settings; Resilience4j's defaults are `BreakerConfig::default()`.
    pub fn new(circuit_breaker: CircuitBreakerConfig, time_limiter: TimeLimiterConfig) -> Self {
        BreakerConfig {
            circuit_breaker,
            time_limiter,
        }
    }

    /// The circuit breaker's.
    pub fn circuit_breaker_config(&self) -> &CircuitBreakerConfig {
        &self.circuit_breaker
    }

    /// The time limiter's.
    pub fn time_limiter_config(&self) -> &TimeLimiterConfig {
        &self.time_limiter
    }
}

type BreakerDefault = Arc<dyn Fn(&str) -> BreakerConfig + Send + Sync>;
type Customizer = Arc<dyn Fn(&CircuitBreaker) + Send + Sync>;

/// Spring Cloud's `Resilience4JCircuitBreakerFactory` over a set of
/// [`Registries`]: creates [`CloudCircuitBreaker`]s by id and group.
///
/// See the [module documentation](self).
pub struct CircuitBreakerFactory {
    registries: RegistriesRef,
    settings: CloudSettings,
    /// `configure(.., ids)`, and the defaults computed for ids since.
    configurations: Mutex<HashMap<String, BreakerConfig>>,
    default: Option<BreakerDefault>,
    customizers: HashMap<&'static str, Customizer>,
    bulkheads: BulkheadProvider,
    /// The executor of `create(id)` (`None`) and one per group.
    executors: Mutex<HashMap<Option<&'static str>, Arc<ThreadPoolBulkhead>>>,
    created: RwLock<HashMap<(&'static str, &'static str, bool), CloudCircuitBreaker>>,
}

enum RegistriesRef {
    Global,
    Static(&'static Registries),
    Shared(Arc<Registries>),
}

impl RegistriesRef {
    fn get(&self) -> &Registries {
        match self {
            RegistriesRef::Global => crate::registries(),
            RegistriesRef::Static(r) => r,
            RegistriesRef::Shared(r) => r,
        }
    }
}

impl CircuitBreakerFactory {
    /// A builder over the global registries (see
    /// [`registries`](CircuitBreakerFactoryBuilder::registries) for others).
    pub fn builder() -> CircuitBreakerFactoryBuilder {
        CircuitBreakerFactoryBuilder {
            registries: RegistriesRef::Global,
            settings: None,
            configurations: HashMap::new(),
            default: None,
            customizers: HashMap::new(),
            bulkhead_configurations: HashMap::new(),
            bulkhead_default: None,
        }
    }

    /// The registries the factory's instances live in.
    pub fn registries(&self) -> &Registries {
        self.registries.get()
    }

    /// The `[cloud]` settings in force.
    pub fn settings(&self) -> &CloudSettings {
        &self.settings
    }

    /// The breaker `id`, in the group `id` (Spring Cloud's `create(id)`),
    /// running blocking calls on the factory's shared executor.
    pub fn create(&self, id: &'static str) -> CloudCircuitBreaker {
        self.resolve(id, id, false)
    }

    /// The breaker `id` in `group` (Spring Cloud's `create(id, groupName)`):
    /// the group picks the bulkhead, the settings when there are none for
    /// the id, the meters' `group` tag, and the executor of blocking calls
    /// (one per group).
    pub fn create_in_group(&self, id: &'static str, group: &'static str) -> CloudCircuitBreaker {
        self.resolve(id, group, true)
    }

    fn resolve(&self, id: &'static str, group: &'static str, grouped: bool) -> CloudCircuitBreaker {
        let key = (id, group, grouped);
        if let Some(b) = self
            .created
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
        {
            return b.clone();
        }
        let breaker = self.build(id, group, grouped);
        self.created
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(key)
            .or_insert(breaker)
            .clone()
    }

    fn build(&self, id: &'static str, group: &'static str, grouped: bool) -> CloudCircuitBreaker {
        let registries = self.registries();
        let defaults = self.default_for(id);
        let tags: Tags = [(GROUP_TAG.to_owned(), group.to_owned())].into();
        let breakers = registries.circuit_breakers();
        let circuit_breaker = breakers.get_or_create_tagged(
            id,
            || {
                breakers
                    .configuration(id)
                    .or_else(|| breakers.configuration(group))
                    .unwrap_or_else(|| defaults.circuit_breaker.clone())
            },
            tags.clone(),
        );
        if let Some(customize) = self.customizers.get(id) {
            customize(&circuit_breaker);
        }
        let time_limiter = (!self.settings.is_time_limiter_disabled(id, group))
            .then(|| self.time_limiter(registries, id, group, &defaults, &tags));
        let executor =
            (!self.settings.disable_thread_pool()).then(|| self.executor(grouped.then_some(group)));
        CloudCircuitBreaker::new(Parts {
            id,
            group,
            circuit_breaker,
            time_limiter,
            executor,
            bulkhead: self.bulkheads.blocking(registries, group, &tags),
            async_bulkhead: self.bulkheads.semaphore(registries, group, &tags),
        })
    }

    /// The factory's default for `id`: `configure`'s, else the default
    /// function's (remembered, as Spring Cloud's `computeIfAbsent`).
    fn default_for(&self, id: &str) -> BreakerConfig {
        let mut configurations = lock(&self.configurations);
        if let Some(c) = configurations.get(id) {
            return c.clone();
        }
        let registries = self.registries();
        let config = match &self.default {
            Some(f) => f(id),
            None => BreakerConfig::new(
                registries.circuit_breakers().default_config(),
                registries.time_limiters().default_config(),
            ),
        };
        configurations.insert(id.to_owned(), config.clone());
        config
    }

    fn time_limiter(
        &self,
        registries: &Registries,
        id: &str,
        group: &str,
        defaults: &BreakerConfig,
        tags: &Tags,
    ) -> Arc<TimeLimiter> {
        let limiters = registries.time_limiters();
        if let Some(tl) = limiters.find(id).or_else(|| limiters.find(group)) {
            return tl;
        }
        limiters.get_or_create_tagged(
            id,
            || {
                limiters
                    .configuration(id)
                    .or_else(|| limiters.configuration(group))
                    .unwrap_or(defaults.time_limiter)
            },
            tags.clone(),
        )
    }

    /// The bounded executor of a group (`None`: of the ungrouped ids).
    fn executor(&self, group: Option<&'static str>) -> Arc<ThreadPoolBulkhead> {
        let mut executors = lock(&self.executors);
        if let Some(e) = executors.get(&group) {
            return e.clone();
        }
        let name = match group {
            Some(g) => format!("cloud-executor-{g}"),
            None => "cloud-executor".to_owned(),
        };
        let propagators = self
            .registries()
            .thread_pool_bulkheads()
            .default_config()
            .context_propagators()
            .to_vec();
        let mut config = ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(1)
            .max_thread_pool_size(self.settings.executor_max_threads())
            .queue_capacity(self.settings.executor_queue_capacity())
            .keep_alive_duration(EXECUTOR_KEEP_ALIVE)
            .clear_context_propagators();
        for p in propagators {
            config = config.shared_context_propagator(p);
        }
        // the settings were checked against the same bounds when bound
        let config = config.build().unwrap_or_default();
        let executor = Arc::new(ThreadPoolBulkhead::new(name, config));
        executors.insert(group, executor.clone());
        executor
    }
}

impl fmt::Debug for CircuitBreakerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerFactory")
            .field("settings", &self.settings)
            .field("bulkheads", &self.bulkheads)
            .finish_non_exhaustive()
    }
}

/// Builds a [`CircuitBreakerFactory`]: what Spring's
/// `Customizer<Resilience4JCircuitBreakerFactory>` and
/// `Customizer<Resilience4jBulkheadProvider>` beans do to the factory.
///
/// # Examples
///
/// ```
/// use resil::cloud::{BreakerConfig, CircuitBreakerFactory};
/// use resil::circuit_breaker::CircuitBreakerConfig;
/// use resil::time_limiter::TimeLimiterConfig;
/// use resil_config::Registries;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let factory = CircuitBreakerFactory::builder()
///     .registries(Arc::new(Registries::of_defaults()))
///     .configure_default(|_id| {
///         BreakerConfig::new(
///             CircuitBreakerConfig::builder().sliding_window_size(10).build().unwrap(),
///             TimeLimiterConfig::builder().timeout_duration(Duration::from_secs(4)).build().unwrap(),
///         )
///     })
///     .build();
/// let breaker = factory.create_in_group("inventory-query", "inventory-service");
/// assert_eq!(breaker.circuit_breaker().config().sliding_window_size(), 10);
/// assert_eq!(breaker.circuit_breaker().tags()["group"], "inventory-service");
/// ```
pub struct CircuitBreakerFactoryBuilder {
    registries: RegistriesRef,
    settings: Option<CloudSettings>,
    configurations: HashMap<String, BreakerConfig>,
    default: Option<BreakerDefault>,
    customizers: HashMap<&'static str, Customizer>,
    bulkhead_configurations: HashMap<String, BulkheadConfiguration>,
    bulkhead_default: Option<BulkheadDefault>,
}

impl CircuitBreakerFactoryBuilder {
    /// Builds over these registries instead of the global ones.
    pub fn registries(mut self, registries: Arc<Registries>) -> Self {
        self.registries = RegistriesRef::Shared(registries);
        self
    }

    /// Builds over registries that live for the rest of the process.
    pub fn static_registries(mut self, registries: &'static Registries) -> Self {
        self.registries = RegistriesRef::Static(registries);
        self
    }

    /// Replaces the `[cloud]` settings of the registries.
    pub fn settings(mut self, settings: CloudSettings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// Spring Cloud's `configureDefault`: the settings of an id that has
    /// neither a `configs.<id>` nor a `configs.<group>` entry, nor a
    /// [`configure`](Self::configure) of its own. Without it, `configs.default`
    /// (or the library defaults).
    pub fn configure_default(
        mut self,
        default: impl Fn(&str) -> BreakerConfig + Send + Sync + 'static,
    ) -> Self {
        self.default = Some(Arc::new(default));
        self
    }

    /// Spring Cloud's `configure(builder, ids)`: the factory's settings for
    /// these ids (still behind `configs.<id>` and `configs.<group>`, as in
    /// Spring Cloud).
    pub fn configure(mut self, config: BreakerConfig, ids: &[&str]) -> Self {
        for id in ids {
            self.configurations.insert((*id).to_owned(), config.clone());
        }
        self
    }

    /// Spring Cloud's `addCircuitBreakerCustomizer(customizer, ids)`: runs
    /// on the breaker of each id once, when the factory first creates it
    /// (Spring Cloud runs it on every call unless it is wrapped in
    /// `Customizer.once`, which is what one wants: subscribing to events on
    /// every call subscribes without end).
    pub fn add_circuit_breaker_customizer(
        mut self,
        customizer: impl Fn(&CircuitBreaker) + Send + Sync + 'static,
        ids: &[&'static str],
    ) -> Self {
        let customizer: Customizer = Arc::new(customizer);
        for id in ids {
            self.customizers.insert(id, customizer.clone());
        }
        self
    }

    /// The bulkhead provider's `configure(builder, ids)`: the bulkhead
    /// settings of these groups.
    pub fn configure_bulkhead(mut self, config: BulkheadConfiguration, groups: &[&str]) -> Self {
        for group in groups {
            self.bulkhead_configurations
                .insert((*group).to_owned(), config.clone());
        }
        self
    }

    /// The bulkhead provider's `configureDefault`: the bulkhead settings of
    /// a group that has no `configs.<group>` and no
    /// [`configure_bulkhead`](Self::configure_bulkhead).
    pub fn configure_bulkhead_default(
        mut self,
        default: impl Fn(&str) -> BulkheadConfiguration + Send + Sync + 'static,
    ) -> Self {
        self.bulkhead_default = Some(Arc::new(default));
        self
    }

    /// The factory.
    pub fn build(self) -> CircuitBreakerFactory {
        let settings = self
            .settings
            .unwrap_or_else(|| self.registries.get().cloud().clone());
        CircuitBreakerFactory {
            bulkheads: BulkheadProvider::new(
                self.bulkhead_configurations,
                self.bulkhead_default,
                settings.enable_semaphore_default_bulkhead(),
            ),
            registries: self.registries,
            settings,
            configurations: Mutex::new(self.configurations),
            default: self.default,
            customizers: self.customizers,
            executors: Mutex::new(HashMap::new()),
            created: RwLock::new(HashMap::new()),
        }
    }

    /// Builds the factory and makes it the one [`factory`] returns.
    ///
    /// # Errors
    ///
    /// [`AlreadyInstalled`] when [`factory`] was already called or a factory
    /// installed: the one in use stays.
    pub fn install(self) -> Result<&'static CircuitBreakerFactory, AlreadyInstalled> {
        let mut fresh = Some(self);
        let installed = GLOBAL.get_or_init(|| match fresh.take() {
            Some(builder) => builder.build(),
            None => unreachable!("get_or_init runs its closure once"),
        });
        match fresh {
            None => Ok(installed),
            Some(_) => Err(AlreadyInstalled),
        }
    }
}

impl fmt::Debug for CircuitBreakerFactoryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerFactoryBuilder")
            .field("settings", &self.settings)
            .field(
                "configured",
                &self.configurations.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// The global factory was already in use when another was installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlreadyInstalled;

impl fmt::Display for AlreadyInstalled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "the global circuit breaker factory is already in use; install a factory before the first `resil::cloud::factory()`",
        )
    }
}

impl std::error::Error for AlreadyInstalled {}
