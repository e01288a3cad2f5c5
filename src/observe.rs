//! One event consumer per instance, feeding metrics, `tracing` and the
//! actuator's event streams.
//!
//! A [`Binding`] belongs to one [`Registries`] (kept with
//! [`Registries::extension`], so binding twice is binding once). It
//! subscribes to each registry's added, removed and replaced events and to
//! every instance already there, and gives each instance one consumer that
//! does what the enabled features need: record the event-driven meters,
//! write a `tracing` event, push the event to the actuator's streams.
//! Gauges have no events: [`Binding::refresh`] reads every instance's
//! snapshot and sets them.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use resil_config::{GlobalHook, GlobalPrimitive, Registries};
#[cfg(feature = "actuator")]
use resil_core::Tags;
use resil_core::bulkhead::{Bulkhead, BulkheadEvent};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerEvent};
use resil_core::event::{Event, EventKind, EventPublisher, SubscriptionId};
use resil_core::rate_limiter::{RateLimiter, RateLimiterEvent};
use resil_core::registry::{Registry, RegistryEvent};
use resil_core::retry::{Retry, RetryEvent};
use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadEvent};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterEvent};

/// Observes `registries`: from now on every instance they hold or will hold
/// feeds the enabled features (metrics, `tracing`, the actuator's event
/// streams). Binding the same registries again does nothing.
///
/// The global registries are observed without this call (as soon as
/// [`init`](crate::init) or the first protected call builds them); call it
/// for registries built with [`Resilience::builder()`](crate::Resilience::builder)`.load()`.
///
/// # Examples
///
/// ```
/// use resil::Resilience;
///
/// let loaded = Resilience::builder()
///     .file_contents("resilience.toml", "[circuitbreaker.instances.inventory-query]\n")
///     .env_vars(Vec::<(String, String)>::new())
///     .load()?;
/// resil::observe(loaded.registries());
/// # Ok::<(), resil::InitError>(())
/// ```
pub fn observe(registries: &Registries) {
    let _ = Binding::of(registries);
}

/// Observes the global registries as soon as they are built.
fn observe_global(registries: &'static Registries) {
    observe(registries);
}

inventory::submit! {
    GlobalHook(observe_global)
}

/// Every live binding, for [`refresh_all`].
static BINDINGS: Mutex<Vec<Weak<Binding>>> = Mutex::new(Vec::new());

/// Refreshes the gauges of every observed registries (and observes the
/// global registries first, in case no hook could run).
#[cfg(feature = "metrics")]
pub(crate) fn refresh_all() {
    if let Some(global) = resil_config::global::built() {
        observe(global);
    }
    let live: Vec<Arc<Binding>> = {
        let mut all = lock(&BINDINGS);
        all.retain(|b| b.strong_count() > 0);
        all.iter().filter_map(Weak::upgrade).collect()
    };
    for binding in live {
        binding.refresh();
    }
}

/// The subscriptions of one [`Registries`].
pub(crate) struct Binding {
    circuit_breakers: Attached<CircuitBreaker>,
    retries: Attached<Retry>,
    bulkheads: Attached<Bulkhead>,
    thread_pool_bulkheads: Attached<ThreadPoolBulkhead>,
    rate_limiters: Attached<RateLimiter>,
    time_limiters: Attached<TimeLimiter>,
    #[cfg(feature = "actuator")]
    pub(crate) hub: Arc<crate::actuator::stream::Hub>,
}

impl Binding {
    /// The binding of `registries`, created and attached the first time.
    pub(crate) fn of(registries: &Registries) -> Arc<Binding> {
        let mut fresh = None;
        let binding = registries
            .extension(|| {
                let b = Arc::new(Binding::new());
                fresh = Some(b.clone());
                b
            })
            .cloned()
            // another extension took the slot: observe through a binding of our own
            .unwrap_or_else(|| {
                let b = Arc::new(Binding::new());
                fresh = Some(b.clone());
                b
            });
        if let Some(b) = fresh {
            lock(&BINDINGS).push(Arc::downgrade(&b));
            b.attach(registries.circuit_breakers());
            b.attach(registries.retries());
            b.attach(registries.bulkheads());
            b.attach(registries.thread_pool_bulkheads());
            b.attach(registries.rate_limiters());
            b.attach(registries.time_limiters());
        }
        binding
    }

    fn new() -> Self {
        Binding {
            circuit_breakers: Attached::default(),
            retries: Attached::default(),
            bulkheads: Attached::default(),
            thread_pool_bulkheads: Attached::default(),
            rate_limiters: Attached::default(),
            time_limiters: Attached::default(),
            #[cfg(feature = "actuator")]
            hub: Arc::new(crate::actuator::stream::Hub::new()),
        }
    }

    /// Follows `registry`: its instances now, and those added, removed or replaced later.
    fn attach<P: Observed>(self: &Arc<Self>, registry: &Registry<P>) {
        let weak = Arc::downgrade(self);
        registry.event_publisher().on_event(move |event| {
            let Some(binding) = weak.upgrade() else {
                return;
            };
            match event.kind() {
                RegistryEvent::Added(p) => binding.add(p),
                RegistryEvent::Removed(p) => binding.remove(p),
                RegistryEvent::Replaced { old, new } => {
                    binding.remove(old);
                    binding.add(new);
                }
                _ => {}
            }
        });
        // after subscribing, so that an instance added meanwhile is not
        // missed (and one seen twice is attached once)
        for p in registry.all() {
            self.add(&p);
        }
    }

    fn add<P: Observed>(&self, p: &Arc<P>) {
        let mut entries = lock(&P::attached(self).entries);
        let name = p.instance_name();
        if let Some(entry) = entries.get(name) {
            if std::ptr::eq(entry.instance.as_ptr(), Arc::as_ptr(p)) {
                return;
            }
            if let Some(old) = entry.instance.upgrade() {
                old.publisher().unsubscribe(entry.subscription);
            }
        }
        let observer = Observer::<P>::new(p, self);
        let subscription = p.publisher().on_event(move |e| observer.on_event(e));
        entries.insert(
            name.to_owned(),
            Entry {
                instance: Arc::downgrade(p),
                subscription,
            },
        );
    }

    fn remove<P: Observed>(&self, p: &Arc<P>) {
        let mut entries = lock(&P::attached(self).entries);
        let name = p.instance_name();
        if entries
            .get(name)
            .is_some_and(|e| std::ptr::eq(e.instance.as_ptr(), Arc::as_ptr(p)))
            && let Some(entry) = entries.remove(name)
        {
            p.publisher().unsubscribe(entry.subscription);
        }
    }

    /// The live instances of one aspect, by name.
    #[cfg(feature = "metrics")]
    fn instances<P: Observed>(&self) -> Vec<Arc<P>> {
        lock(&P::attached(self).entries)
            .values()
            .filter_map(|e| e.instance.upgrade())
            .collect()
    }

    /// Sets every gauge (and snapshot counter) from the instances' snapshots.
    #[cfg(feature = "metrics")]
    pub(crate) fn refresh(&self) {
        fn each<P: Observed>(b: &Binding) {
            for p in b.instances::<P>() {
                p.refresh();
            }
        }
        crate::metrics::describe();
        each::<CircuitBreaker>(self);
        each::<Retry>(self);
        each::<Bulkhead>(self);
        each::<ThreadPoolBulkhead>(self);
        each::<RateLimiter>(self);
        each::<TimeLimiter>(self);
    }
}

pub(crate) struct Entry<P> {
    instance: Weak<P>,
    subscription: SubscriptionId,
}

pub(crate) struct Attached<P> {
    entries: Mutex<BTreeMap<String, Entry<P>>>,
}

impl<P> Default for Attached<P> {
    fn default() -> Self {
        Attached {
            entries: Mutex::new(BTreeMap::new()),
        }
    }
}

/// What one instance's consumer holds.
struct Observer<P: Observed> {
    kind: PhantomData<fn(&P)>,
    #[cfg(feature = "metrics")]
    meters: P::Meters,
    #[cfg(feature = "tracing")]
    name: resil_core::Name,
    #[cfg(feature = "actuator")]
    hub: Arc<crate::actuator::stream::Hub>,
}

impl<P: Observed> Observer<P> {
    #[allow(unused_variables)] // which parts exist depends on the features
    fn new(p: &P, binding: &Binding) -> Self {
        Observer {
            kind: PhantomData,
            #[cfg(feature = "metrics")]
            meters: P::meters(p),
            #[cfg(feature = "tracing")]
            name: resil_core::Name::from(p.instance_name()),
            #[cfg(feature = "actuator")]
            hub: binding.hub.clone(),
        }
    }

    #[allow(unused_variables)]
    fn on_event(&self, event: &Event<P::Kind>) {
        #[cfg(feature = "metrics")]
        P::record(&self.meters, event);
        #[cfg(feature = "tracing")]
        P::trace(&self.name, event);
        #[cfg(feature = "actuator")]
        self.hub.publish::<P>(event);
    }
}

/// A primitive that resil's observers know: its events, its meters, its
/// `tracing` events and its JSON.
pub(crate) trait Observed: GlobalPrimitive {
    /// Its event enum.
    type Kind: EventKind;
    /// The handles of its event-driven meters.
    #[cfg(feature = "metrics")]
    type Meters: Send + Sync + 'static;

    /// Its event publisher.
    fn publisher(&self) -> &EventPublisher<Self::Kind>;
    /// Its tags (registry tags overlaid by its own).
    #[cfg(feature = "actuator")]
    fn instance_tags(&self) -> &Tags;
    /// Its aspect's subscriptions in `binding`.
    fn attached(binding: &Binding) -> &Attached<Self>;

    /// Its event-driven meters.
    #[cfg(feature = "metrics")]
    fn meters(&self) -> Self::Meters;
    /// Records one event in the event-driven meters.
    #[cfg(feature = "metrics")]
    fn record(meters: &Self::Meters, event: &Event<Self::Kind>);
    /// Sets its gauges (and snapshot counters) from a snapshot.
    #[cfg(feature = "metrics")]
    fn refresh(&self);

    /// Writes the `tracing` event of an event, if it has one.
    #[cfg(feature = "tracing")]
    fn trace(name: &str, event: &Event<Self::Kind>);

    /// The event's type name (`STATE_TRANSITION`) and its actuator JSON.
    #[cfg(feature = "actuator")]
    fn event_json(event: &Event<Self::Kind>) -> (&'static str, serde_json::Value);
}

macro_rules! observed {
    ($ty:ty, $kind:ty, $field:ident, $meters:ty, $m:ident, $json:ident) => {
        impl Observed for $ty {
            type Kind = $kind;
            #[cfg(feature = "metrics")]
            type Meters = $meters;

            fn publisher(&self) -> &EventPublisher<$kind> {
                self.event_publisher()
            }
            #[cfg(feature = "actuator")]
            fn instance_tags(&self) -> &Tags {
                self.tags()
            }
            fn attached(binding: &Binding) -> &Attached<Self> {
                &binding.$field
            }
            #[cfg(feature = "metrics")]
            fn meters(&self) -> $meters {
                crate::metrics::$m::meters(self.name(), self.tags())
            }
            #[cfg(feature = "metrics")]
            fn record(meters: &$meters, event: &Event<$kind>) {
                crate::metrics::$m::record(meters, event)
            }
            #[cfg(feature = "metrics")]
            fn refresh(&self) {
                crate::metrics::$m::refresh(self)
            }
            #[cfg(feature = "tracing")]
            fn trace(name: &str, event: &Event<$kind>) {
                crate::trace::$m(name, event)
            }
            #[cfg(feature = "actuator")]
            fn event_json(event: &Event<$kind>) -> (&'static str, serde_json::Value) {
                crate::actuator::json::$json(event)
            }
        }
    };
}

observed!(
    CircuitBreaker,
    CircuitBreakerEvent,
    circuit_breakers,
    crate::metrics::circuit_breaker::Meters,
    circuit_breaker,
    circuit_breaker_event
);
observed!(Retry, RetryEvent, retries, (), retry, retry_event);
observed!(
    Bulkhead,
    BulkheadEvent,
    bulkheads,
    (),
    bulkhead,
    bulkhead_event
);
observed!(
    ThreadPoolBulkhead,
    ThreadPoolBulkheadEvent,
    thread_pool_bulkheads,
    (),
    thread_pool_bulkhead,
    thread_pool_bulkhead_event
);
observed!(
    RateLimiter,
    RateLimiterEvent,
    rate_limiters,
    (),
    rate_limiter,
    rate_limiter_event
);
observed!(
    TimeLimiter,
    TimeLimiterEvent,
    time_limiters,
    (),
    time_limiter,
    time_limiter_event
);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
