//! The process-wide registries that generated code uses.
//!
//! There is one set of eight registries per process. [`init`](crate::init)
//! builds it from resilience.toml; if a protected function runs first, it is
//! built on the library defaults instead, and resil says so once through
//! `tracing` (a `WARN` event of target `resil`). Either way it is built once:
//! `init` after that is an error ([`InitError::AfterFirstCall`]), never a
//! silent reconfiguration, so the instance each [`CallSite`](crate::CallSite)
//! cached stays the one in the registry.
//!
//! Extensions (resil's `metrics`, `tracing` and `actuator` features) learn
//! that the global registries exist through a [`GlobalHook`], and keep their
//! per-registries state with [`Registries::extension`].

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use resil_core::Tags;
use resil_core::bulkhead::Bulkhead;
use resil_core::circuit_breaker::CircuitBreaker;
use resil_core::deadline::Deadline;
use resil_core::hedge::Hedge;
use resil_core::rate_limiter::RateLimiter;
use resil_core::registry::{
    BulkheadRegistry, CircuitBreakerRegistry, DeadlineRegistry, HedgeRegistry, Primitive,
    RateLimiterRegistry, Registry, RegistryEvent, RegistryEventType, RetryRegistry,
    ThreadPoolBulkheadRegistry, TimeLimiterRegistry,
};
use resil_core::retry::Retry;
use resil_core::thread_pool_bulkhead::ThreadPoolBulkhead;
use resil_core::time_limiter::TimeLimiter;

use crate::aspect::Aspect;
use crate::bind::Binder;
use crate::cloud::CloudSettings;
use crate::error::InitError;
use crate::keyed_table::{DEFAULT_MAX_KEYS, Keyed, KeyedRegistry, KeyedSettings};
use crate::reloader::Reloader;
use crate::report::{InstanceReport, Report};

/// The eight registries, one per aspect.
///
/// # Examples
///
/// ```
/// use resil_config::Registries;
///
/// let registries = Registries::of_defaults();
/// let cb = registries.circuit_breakers().circuit_breaker("inventory-query");
/// assert_eq!(cb.name(), "inventory-query");
/// ```
pub struct Registries {
    circuit_breakers: CircuitBreakerRegistry,
    retries: RetryRegistry,
    bulkheads: BulkheadRegistry,
    thread_pool_bulkheads: ThreadPoolBulkheadRegistry,
    rate_limiters: RateLimiterRegistry,
    time_limiters: TimeLimiterRegistry,
    hedges: HedgeRegistry,
    deadlines: DeadlineRegistry,
    cloud: CloudSettings,
    keyed: KeyedRegistries,
    extension: OnceLock<Box<dyn Any + Send + Sync>>,
}

/// The keyed tables of the eight aspects.
#[derive(Debug)]
struct KeyedRegistries {
    circuit_breakers: KeyedRegistry<CircuitBreaker>,
    retries: KeyedRegistry<Retry>,
    bulkheads: KeyedRegistry<Bulkhead>,
    thread_pool_bulkheads: KeyedRegistry<ThreadPoolBulkhead>,
    rate_limiters: KeyedRegistry<RateLimiter>,
    time_limiters: KeyedRegistry<TimeLimiter>,
    hedges: KeyedRegistry<Hedge>,
    deadlines: KeyedRegistry<Deadline>,
}

impl KeyedRegistries {
    fn new() -> Self {
        KeyedRegistries {
            circuit_breakers: KeyedRegistry::new(),
            retries: KeyedRegistry::new(),
            bulkheads: KeyedRegistry::new(),
            thread_pool_bulkheads: KeyedRegistry::new(),
            rate_limiters: KeyedRegistry::new(),
            time_limiters: KeyedRegistry::new(),
            hedges: KeyedRegistry::new(),
            deadlines: KeyedRegistry::new(),
        }
    }
}

impl Registries {
    /// Eight registries on the library defaults and the system clock.
    pub fn of_defaults() -> Self {
        Registries {
            circuit_breakers: Registry::of_defaults(),
            retries: Registry::of_defaults(),
            bulkheads: Registry::of_defaults(),
            // with the propagators registered as defaults
            thread_pool_bulkheads: Registry::new(
                <ThreadPoolBulkhead as crate::bind::Binder>::library_default(),
            ),
            rate_limiters: Registry::of_defaults(),
            time_limiters: Registry::of_defaults(),
            hedges: Registry::of_defaults(),
            deadlines: Registry::of_defaults(),
            cloud: CloudSettings::default(),
            keyed: KeyedRegistries::new(),
            extension: OnceLock::new(),
        }
    }

    pub(crate) fn from_parts(
        circuit_breakers: CircuitBreakerRegistry,
        retries: RetryRegistry,
        bulkheads: BulkheadRegistry,
        thread_pool_bulkheads: ThreadPoolBulkheadRegistry,
        rate_limiters: RateLimiterRegistry,
        time_limiters: TimeLimiterRegistry,
        cloud: CloudSettings,
    ) -> Self {
        Registries {
            circuit_breakers,
            retries,
            bulkheads,
            thread_pool_bulkheads,
            rate_limiters,
            time_limiters,
            hedges: Registry::of_defaults(),
            deadlines: Registry::of_defaults(),
            cloud,
            keyed: KeyedRegistries::new(),
            extension: OnceLock::new(),
        }
    }

    /// These registries with `hedges`.
    pub(crate) fn with_hedges(mut self, hedges: HedgeRegistry) -> Self {
        self.hedges = hedges;
        self
    }

    /// These registries with `deadlines`.
    pub(crate) fn with_deadlines(mut self, deadlines: DeadlineRegistry) -> Self {
        self.deadlines = deadlines;
        self
    }

    /// The value an extension keeps with these registries: created by `init`
    /// on the first call, the same one afterwards; `None` when a value of
    /// another type was attached first.
    ///
    /// resil's `metrics`, `tracing` and `actuator` features keep their
    /// subscriptions here, so that binding the same registries twice does not
    /// count every event twice, and the subscriptions live as long as the
    /// registries.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_config::Registries;
    ///
    /// let registries = Registries::of_defaults();
    /// assert_eq!(registries.extension(|| 7_u32), Some(&7));
    /// assert_eq!(registries.extension(|| 8_u32), Some(&7)); // created once
    /// assert_eq!(registries.extension(|| "another type"), None);
    /// ```
    pub fn extension<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Option<&T> {
        self.extension
            .get_or_init(|| Box::new(init()))
            .downcast_ref::<T>()
    }

    /// The circuit breakers.
    pub fn circuit_breakers(&self) -> &CircuitBreakerRegistry {
        &self.circuit_breakers
    }
    /// The retries.
    pub fn retries(&self) -> &RetryRegistry {
        &self.retries
    }
    /// The retry budgets that the retries spend (`budget = "<name>"`), by
    /// name: those of the running retries, of the named configurations and
    /// of the default one.
    pub fn retry_budgets(&self) -> Vec<resil_core::retry::RetryBudget> {
        crate::budget::spent(&self.retries).into_values().collect()
    }
    /// The semaphore bulkheads.
    pub fn bulkheads(&self) -> &BulkheadRegistry {
        &self.bulkheads
    }
    /// The thread-pool bulkheads.
    pub fn thread_pool_bulkheads(&self) -> &ThreadPoolBulkheadRegistry {
        &self.thread_pool_bulkheads
    }
    /// The rate limiters.
    pub fn rate_limiters(&self) -> &RateLimiterRegistry {
        &self.rate_limiters
    }
    /// The time limiters.
    pub fn time_limiters(&self) -> &TimeLimiterRegistry {
        &self.time_limiters
    }
    /// The hedges.
    pub fn hedges(&self) -> &HedgeRegistry {
        &self.hedges
    }
    /// The deadlines.
    pub fn deadlines(&self) -> &DeadlineRegistry {
        &self.deadlines
    }

    /// The `[cloud]` settings (Spring Cloud CircuitBreaker's properties),
    /// which resil's `cloud` facade reads.
    pub fn cloud(&self) -> &CloudSettings {
        &self.cloud
    }

    /// The registry of `P`'s aspect.
    pub fn of<P: GlobalPrimitive>(&self) -> &Registry<P> {
        P::registry(self)
    }

    /// The keyed tables of `P`'s aspect (`key = expr` on an attribute; see
    /// [`keyed`](crate::keyed)).
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_config::Registries;
    /// use resil_core::circuit_breaker::CircuitBreaker;
    ///
    /// let registries = Registries::of_defaults();
    /// assert!(registries.keyed::<CircuitBreaker>().tables().is_empty());
    /// ```
    pub fn keyed<P: GlobalPrimitive>(&self) -> &KeyedRegistry<P> {
        P::keyed(self)
    }

    /// Warns through `tracing` when an instance that call sites may have
    /// cached is removed or replaced.
    fn watch(&self) {
        watch(&self.circuit_breakers, Aspect::CircuitBreaker);
        watch(&self.retries, Aspect::Retry);
        watch(&self.bulkheads, Aspect::Bulkhead);
        watch(&self.thread_pool_bulkheads, Aspect::ThreadPoolBulkhead);
        watch(&self.rate_limiters, Aspect::RateLimiter);
        watch(&self.time_limiters, Aspect::TimeLimiter);
        watch(&self.hedges, Aspect::Hedge);
        watch(&self.deadlines, Aspect::Deadline);
    }
}

fn watch<P: Primitive>(registry: &Registry<P>, aspect: Aspect) {
    for kind in [RegistryEventType::Removed, RegistryEventType::Replaced] {
        registry.event_publisher().on(kind, move |event| {
            let (what, p) = match event.kind() {
                RegistryEvent::Removed(p) => ("removed", p),
                RegistryEvent::Replaced { new, .. } => ("replaced", new),
                _ => return,
            };
            tracing::warn!(
                target: "resil",
                "{aspect} `{}` was {what} in the global registry; protected functions that already ran keep the instance they cached",
                p.instance_name()
            );
        });
    }
}

impl Default for Registries {
    fn default() -> Self {
        Self::of_defaults()
    }
}

impl fmt::Debug for Registries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registries")
            .field("circuit_breakers", &self.circuit_breakers)
            .field("retries", &self.retries)
            .field("bulkheads", &self.bulkheads)
            .field("thread_pool_bulkheads", &self.thread_pool_bulkheads)
            .field("rate_limiters", &self.rate_limiters)
            .field("time_limiters", &self.time_limiters)
            .field("hedges", &self.hedges)
            .field("deadlines", &self.deadlines)
            .finish_non_exhaustive()
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A primitive that has a registry among the global [`Registries`]: the eight of resil-core.
pub trait GlobalPrimitive: Primitive + sealed::Sealed {
    /// Its aspect.
    const ASPECT: Aspect;

    /// Its registry among `registries`.
    fn registry(registries: &Registries) -> &Registry<Self>;

    /// Its keyed tables among `registries`.
    fn keyed(registries: &Registries) -> &KeyedRegistry<Self>;

    /// The configuration it was built with.
    fn configuration(&self) -> Self::Config;

    /// Its tags (the registry's overlaid by its own).
    fn instance_tags(&self) -> &Tags;

    /// The settings of `config` by key, as resilience.toml writes them (the
    /// list [`InstanceReport::settings`] shows).
    ///
    /// A wait that is a function (exponential, randomized) is written as
    /// `report` describes it when `report` is given (the function itself
    /// cannot say how it was configured).
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_config::GlobalPrimitive;
    /// use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
    ///
    /// let config = BulkheadConfig::builder().max_concurrent_calls(20).build()?;
    /// let settings = Bulkhead::settings(&config, None);
    /// assert!(settings.contains(&("max-concurrent-calls", "20".to_owned())));
    /// # Ok::<(), resil_core::ConfigError>(())
    /// ```
    fn settings(
        config: &Self::Config,
        report: Option<&InstanceReport>,
    ) -> Vec<(&'static str, String)>;
}

macro_rules! global_primitive {
    ($ty:ty, $field:ident) => {
        impl sealed::Sealed for $ty {}
        impl GlobalPrimitive for $ty {
            const ASPECT: Aspect = <$ty as Binder>::ASPECT;
            fn registry(registries: &Registries) -> &Registry<Self> {
                &registries.$field
            }
            fn keyed(registries: &Registries) -> &KeyedRegistry<Self> {
                &registries.keyed.$field
            }
            #[allow(clippy::clone_on_copy, clippy::redundant_clone)]
            fn configuration(&self) -> Self::Config {
                Clone::clone(&self.config())
            }
            fn instance_tags(&self) -> &Tags {
                self.tags()
            }
            fn settings(
                config: &Self::Config,
                report: Option<&InstanceReport>,
            ) -> Vec<(&'static str, String)> {
                let notes: BTreeMap<&'static str, String> = report
                    .map(|r| r.settings().iter().cloned().collect())
                    .unwrap_or_default();
                <$ty as Binder>::describe(config, &notes)
            }
        }
    };
}

global_primitive!(CircuitBreaker, circuit_breakers);
global_primitive!(Retry, retries);
global_primitive!(Bulkhead, bulkheads);
global_primitive!(ThreadPoolBulkhead, thread_pool_bulkheads);
global_primitive!(RateLimiter, rate_limiters);
global_primitive!(TimeLimiter, time_limiters);
global_primitive!(Hedge, hedges);
global_primitive!(Deadline, deadlines);

enum Origin {
    /// Built by `init`: its report, and what reloads read again.
    Init(Box<Report>, Box<Reloader>),
    Defaults {
        first: String,
    },
}

struct Global {
    registries: Registries,
    origin: Origin,
}

static GLOBAL: OnceLock<Global> = OnceLock::new();

/// A function run on the global registries right after they are built
/// (by [`init`](crate::init), or on the defaults by the first protected
/// call), submitted with [`inventory::submit!`].
///
/// resil's `metrics`, `tracing` and `actuator` features submit one to
/// subscribe to every instance before the first call. It runs once per
/// process, on the thread that built the registries, after they became
/// visible to other threads; it must not panic. On targets where
/// `inventory` has no life-before-main support (see [`declared`](crate::declared))
/// no hook runs.
///
/// # Examples
///
/// ```
/// use resil_config::{GlobalHook, Registries};
///
/// fn count_instances(registries: &'static Registries) {
///     let n = registries.circuit_breakers().all().len();
///     let _ = n;
/// }
///
/// resil_config::inventory::submit! {
///     GlobalHook(count_instances)
/// }
/// # fn main() {}
/// ```
#[derive(Debug, Clone, Copy)]
pub struct GlobalHook(pub fn(&'static Registries));

inventory::collect!(GlobalHook);

fn run_hooks(registries: &'static Registries) {
    for hook in inventory::iter::<GlobalHook> {
        (hook.0)(registries);
    }
}

/// The global registries: those [`init`](crate::init) built, or, if it was
/// not called, registries on the library defaults (built now, with a
/// one-time `tracing` warning).
///
/// # Examples
///
/// ```
/// let cb = resil_config::registries().circuit_breakers().circuit_breaker("inventory-query");
/// assert_eq!(cb.name(), "inventory-query");
/// ```
pub fn registries() -> &'static Registries {
    global(|| "resil_config::registries()".to_owned())
}

/// Whether [`init`](crate::init) built the global registries (`false` before,
/// and when they run on the defaults because a protected call came first).
pub fn is_initialized() -> bool {
    matches!(
        GLOBAL.get(),
        Some(Global {
            origin: Origin::Init(..),
            ..
        })
    )
}

/// The global registries if they were built (by [`init`](crate::init) or
/// by a protected call), without building them.
///
/// # Examples
///
/// ```
/// // nothing built them in this doctest
/// assert!(resil_config::global::built().is_none());
/// ```
pub fn built() -> Option<&'static Registries> {
    GLOBAL.get().map(|g| &g.registries)
}

/// The [`Report`] of [`init`](crate::init), if `init` built the global
/// registries; after a [`reload`](crate::reload()), [`current_report`]
/// describes the settings in force.
///
/// # Examples
///
/// ```
/// assert!(resil_config::global::report().is_none());
/// ```
pub fn report() -> Option<&'static Report> {
    match GLOBAL.get() {
        Some(Global {
            origin: Origin::Init(report, _),
            ..
        }) => Some(report),
        _ => None,
    }
}

/// The report of the settings in force in the global registries: that of
/// [`init`](crate::init), or of the last [`reload`](crate::reload()) that
/// applied; `None` when `init` did not build them.
///
/// # Examples
///
/// ```
/// assert!(resil_config::global::current_report().is_none());
/// ```
pub fn current_report() -> Option<Arc<Report>> {
    reloader().map(|(_, r)| r.current())
}

/// The global registries and what reloads them, when `init` built them.
pub(crate) fn reloader() -> Option<(&'static Registries, &'static Reloader)> {
    match GLOBAL.get() {
        Some(Global {
            registries,
            origin: Origin::Init(_, reloader),
        }) => Some((registries, reloader)),
        _ => None,
    }
}

fn global(first: impl FnOnce() -> String) -> &'static Registries {
    if let Some(g) = GLOBAL.get() {
        return &g.registries;
    }
    let mut built = false;
    let registries = &GLOBAL
        .get_or_init(|| {
            built = true;
            let first = first();
            tracing::warn!(
                target: "resil",
                "resil::init() was not called before the first protected call ({first}); every instance runs on the library defaults"
            );
            let registries = Registries::of_defaults();
            registries.watch();
            Global {
                registries,
                origin: Origin::Defaults { first },
            }
        })
        .registries;
    // outside `get_or_init`, so that a hook may read the registries
    if built {
        run_hooks(registries);
    }
    registries
}

/// Installs `registries` as the global ones, with the report that describes them.
pub(crate) fn install(
    registries: Registries,
    report: Report,
    reloader: Reloader,
) -> Result<&'static Registries, InitError> {
    let mut fresh = Some((registries, report, reloader));
    let global = GLOBAL.get_or_init(|| {
        let (registries, report, reloader) = fresh.take().unwrap_or_else(|| unreachable!());
        registries.watch();
        Global {
            registries,
            origin: Origin::Init(Box::new(report), Box::new(reloader)),
        }
    });
    match (&global.origin, fresh) {
        // ours was installed
        (_, None) => {
            run_hooks(&global.registries);
            Ok(&global.registries)
        }
        (Origin::Init(..), Some(_)) => Err(InitError::AlreadyInitialized),
        (Origin::Defaults { first }, Some(_)) => Err(InitError::AfterFirstCall {
            first: first.clone(),
        }),
    }
}

/// The global instance of `name`, kept alive for the rest of the process
/// (one small allocation per name and kind, so that a chain holds a plain
/// reference and no reference count to touch per call): what
/// `resil::tower::named` stacks.
///
/// # Examples
///
/// ```
/// use resil_core::retry::Retry;
///
/// let a: &'static Retry = resil_config::global::pinned("quote");
/// let b: &'static Retry = resil_config::global::pinned("quote");
/// assert!(std::ptr::eq(a, b));
/// ```
pub fn pinned<P: GlobalPrimitive>(name: &str) -> &'static P {
    type Pins = BTreeMap<(Aspect, String), &'static (dyn Any + Send + Sync)>;
    static PINS: std::sync::Mutex<Pins> = std::sync::Mutex::new(BTreeMap::new());
    let mut pins = PINS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let pinned = pins
        .entry((P::ASPECT, name.to_owned()))
        .or_insert_with(|| pin_named::<P>(name));
    pinned
        .downcast_ref::<P>()
        .expect("each kind pins its own instances")
}

/// The instance of `name` for a call site, kept alive for the rest of the process.
pub(crate) fn pin<P: GlobalPrimitive>(name: &'static str) -> &'static P {
    pin_named(name)
}

fn pin_named<P: GlobalPrimitive>(name: &str) -> &'static P {
    let registries = global(|| format!("{} `{name}`", P::ASPECT));
    let registry = P::registry(registries);
    let instance: Arc<P> = registry.get_or_create(name, || registry.default_config());
    // One small allocation per call site and process, so that the hot path
    // holds a plain reference (no reference count to touch per call).
    let leaked: &'static Arc<P> = Box::leak(Box::new(instance));
    leaked
}

/// The keyed table of `name` for a keyed call site, kept alive for the rest
/// of the process: its instances get the settings, tags and clock of the
/// registry's instance of `name`, and the name's `max-keys` and `key-label`.
pub(crate) fn pin_keyed<P: GlobalPrimitive>(name: &'static str) -> &'static Keyed<P> {
    let named = pin::<P>(name);
    let registries = global(|| format!("{} `{name}`", P::ASPECT));
    let report = current_report();
    let table = keyed_table(registries, report.as_deref(), named, name);
    let leaked: &'static Arc<Keyed<P>> = Box::leak(Box::new(table));
    leaked
}

/// The keyed table of `name` in `registries`, made with the settings,
/// tags and clock of `named` and the name's `max-keys` and `key-label` in
/// `report`.
pub(crate) fn keyed_table<P: GlobalPrimitive>(
    registries: &Registries,
    report: Option<&Report>,
    named: &P,
    name: &'static str,
) -> Arc<Keyed<P>> {
    let extras = report
        .and_then(|r| r.instance(P::ASPECT, name).map(InstanceReport::extras))
        .unwrap_or_default();
    let settings = KeyedSettings {
        max_keys: extras.max_keys.unwrap_or(DEFAULT_MAX_KEYS),
        key_label: extras.key_label.unwrap_or(false),
    };
    let clock = P::registry(registries).clock().clone();
    P::keyed(registries).table_or_create(name, |listeners| {
        Keyed::new(
            name,
            named.configuration(),
            named.instance_tags().clone(),
            clock,
            settings,
            listeners,
        )
    })
}
