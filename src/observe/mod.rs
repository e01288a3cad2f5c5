//! One event consumer per instance, feeding the sinks: metrics, `tracing`
//! and the actuator's event streams.
//!
//! A [`Binding`] belongs to one [`Registries`] (kept with
//! [`Registries::extension`], so binding twice is binding once). It
//! subscribes to each registry's added, removed and replaced events and to
//! every instance already there, and gives each instance one consumer that
//! hands its events to the binding's sinks ([`sink`]: the enabled features
//! choose them, in one place). Gauges have no events: [`Binding::refresh`]
//! gives every sink the live instances to read their snapshots.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};

#[cfg(any(feature = "metrics", feature = "tracing", feature = "actuator"))]
use resil_config::GlobalHook;
use resil_config::keyed::{KeyedEvent, KeyedRegistry};
use resil_config::{GlobalPrimitive, Registries};
use resil_core::bulkhead::{Bulkhead, BulkheadEvent};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerEvent};
use resil_core::event::{Event, EventKind, EventPublisher, SubscriptionId};
use resil_core::hedge::{Hedge, HedgeEvent};
use resil_core::rate_limiter::{RateLimiter, RateLimiterEvent};
use resil_core::registry::{Registry, RegistryEvent};
use resil_core::retry::{Retry, RetryEvent};
use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadEvent};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterEvent};

use self::sink::{DynSink, Follower, Sink};

pub(crate) mod sink;

/// Observes `registries`: from now on every instance they hold or will hold
/// feeds the enabled features (metrics, `tracing`, the actuator's event
/// streams) and the recording ([`record`](crate::record)), when one is on.
/// Binding the same registries again does nothing.
///
/// The global registries are observed without this call (as soon as
/// [`init`](crate::init) or the first protected call builds them); call it
/// for registries built with [`Resilience::builder()`](crate::config::Resilience::builder)`.load()`.
///
/// # Examples
///
/// ```
/// use resil::config::Resilience;
///
/// let loaded = Resilience::builder()
///     .file_contents("resilience.toml", "[circuitbreaker.instances.inventory-query]\n")
///     .env_vars(Vec::<(String, String)>::new())
///     .load()?;
/// resil::observe(loaded.registries());
/// # Ok::<(), resil::config::InitError>(())
/// ```
pub fn observe(registries: &Registries) {
    let _ = Binding::of(registries);
}

// observes the global registries as soon as they are built, for the
// features whose sinks are always on; a recording observes them when it
// starts (`record`), so that a build without these features publishes no
// event nobody reads
#[cfg(any(feature = "metrics", feature = "tracing", feature = "actuator"))]
inventory::submit! {
    GlobalHook(observe)
}

/// The binding of `registries` (made and attached if there is none yet).
#[cfg(feature = "testing")]
pub(crate) fn binding(registries: &Registries) -> Arc<Binding> {
    Binding::of(registries)
}

/// Every binding, by the address of its registries, for [`refresh_all`]
/// (and to find a binding when another extension took the registries' slot).
/// A binding lives as long as its registries: their publishers hold it.
static BINDINGS: Mutex<Vec<(usize, Weak<Binding>)>> = Mutex::new(Vec::new());

/// The live bindings.
#[cfg(feature = "metrics")]
pub(crate) fn bindings() -> Vec<Arc<Binding>> {
    let mut all = lock(&BINDINGS);
    all.retain(|(_, b)| b.strong_count() > 0);
    all.iter().filter_map(|(_, b)| b.upgrade()).collect()
}

/// Refreshes the gauges of every observed registries (and observes the
/// global registries first, in case no hook could run).
#[cfg(feature = "metrics")]
pub(crate) fn refresh_all() {
    if let Some(global) = resil_config::global::built() {
        observe(global);
    }
    for binding in bindings() {
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
    hedges: Attached<Hedge>,
    /// Where the instances' events go ([`sink::registered`]).
    sinks: Box<[Arc<dyn DynSink>]>,
}

impl Binding {
    /// The binding of `registries`, created and attached the first time.
    pub(crate) fn of(registries: &Registries) -> Arc<Binding> {
        let address = std::ptr::from_ref(registries) as usize;
        let mut fresh = None;
        let binding = match registries.extension(|| {
            let b = Arc::new(Binding::new());
            fresh = Some(b.clone());
            b
        }) {
            Some(b) => b.clone(),
            // another extension took the slot: find ours by the registries' address
            None => {
                let mut all = lock(&BINDINGS);
                all.retain(|(_, b)| b.strong_count() > 0);
                match all
                    .iter()
                    .find(|(a, _)| *a == address)
                    .and_then(|(_, b)| b.upgrade())
                {
                    Some(b) => b,
                    None => {
                        let b = Arc::new(Binding::new());
                        all.push((address, Arc::downgrade(&b)));
                        b.attach(registries);
                        return b;
                    }
                }
            }
        };
        if let Some(b) = fresh {
            let mut all = lock(&BINDINGS);
            all.retain(|(_, b)| b.strong_count() > 0);
            all.push((address, Arc::downgrade(&b)));
            drop(all);
            b.attach(registries);
        }
        binding
    }

    /// Follows every registry of `registries`.
    fn attach(self: &Arc<Self>, registries: &Registries) {
        self.attach_one(registries.circuit_breakers());
        self.attach_one(registries.retries());
        self.attach_one(registries.bulkheads());
        self.attach_one(registries.thread_pool_bulkheads());
        self.attach_one(registries.rate_limiters());
        self.attach_one(registries.time_limiters());
        self.attach_one(registries.hedges());
        self.attach_keyed::<CircuitBreaker>(registries.keyed());
        self.attach_keyed::<Retry>(registries.keyed());
        self.attach_keyed::<Bulkhead>(registries.keyed());
        self.attach_keyed::<ThreadPoolBulkhead>(registries.keyed());
        self.attach_keyed::<RateLimiter>(registries.keyed());
        self.attach_keyed::<TimeLimiter>(registries.keyed());
        self.attach_keyed::<Hedge>(registries.keyed());
    }

    /// Follows the keyed instances of one aspect (`key = expr`): each key
    /// added gets a consumer of its own, whose meters carry the name's tags
    /// (and its `key` with `key-label = true`); an evicted key loses it.
    fn attach_keyed<P: Observed>(self: &Arc<Self>, keyed: &KeyedRegistry<P>) {
        let binding = self.clone();
        keyed.on_change(move |event| match event {
            KeyedEvent::Added { instance, .. } => binding.add_keyed(instance),
            KeyedEvent::Evicted { instance, .. } => binding.remove_keyed(instance),
            _ => {}
        });
        for table in keyed.tables() {
            for (_, p) in table.entries() {
                self.add_keyed(&p);
            }
        }
    }

    fn add_keyed<P: Observed>(&self, p: &Arc<P>) {
        let mut keyed = lock(&P::attached(self).keyed);
        let address = Arc::as_ptr(p) as usize;
        // an entry at this address is this instance (seen twice), or a
        // dropped one whose address was reused: replaced below
        if keyed
            .get(&address)
            .and_then(|e| e.instance.upgrade())
            .is_some_and(|old| Arc::ptr_eq(&old, p))
        {
            return;
        }
        let observer = Observer::<P>::new_keyed(p, self);
        let subscription = p.publisher().on_event(move |e| observer.on_event(e));
        keyed.insert(
            address,
            Entry {
                instance: Arc::downgrade(p),
                subscription,
            },
        );
    }

    fn remove_keyed<P: Observed>(&self, p: &Arc<P>) {
        let mut keyed = lock(&P::attached(self).keyed);
        let address = Arc::as_ptr(p) as usize;
        if let Some(entry) = keyed.remove(&address) {
            p.publisher().unsubscribe(entry.subscription);
            for s in &self.sinks {
                P::sink(&**s).unfollow_keyed(p);
            }
        }
    }

    fn new() -> Self {
        Binding {
            circuit_breakers: Attached::default(),
            retries: Attached::default(),
            bulkheads: Attached::default(),
            thread_pool_bulkheads: Attached::default(),
            rate_limiters: Attached::default(),
            time_limiters: Attached::default(),
            hedges: Attached::default(),
            sinks: sink::registered(),
        }
    }

    /// This binding's sink of type `S` (the actuator's streams find their
    /// channel so), if its feature registered one.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))] // the actuator and the meters look one up
    pub(crate) fn sink<S: DynSink>(&self) -> Option<Arc<S>> {
        sink::find(&self.sinks)
    }

    /// Follows `registry`: its instances now, and those added, removed or replaced later.
    fn attach_one<P: Observed>(self: &Arc<Self>, registry: &Registry<P>) {
        // the registry keeps the binding alive; the binding holds no
        // reference to the registry, so there is no cycle
        let binding = self.clone();
        registry
            .event_publisher()
            .on_event(move |event| match event.kind() {
                RegistryEvent::Added(p) => binding.add(p),
                RegistryEvent::Removed(p) => binding.remove(p),
                RegistryEvent::Replaced { old, new } => {
                    binding.remove(old);
                    binding.add(new);
                }
                _ => {}
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
        if let Some(entry) = entries.get(name)
            && let Some(old) = entry.instance.upgrade()
        {
            if Arc::ptr_eq(&old, p) {
                return;
            }
            old.publisher().unsubscribe(entry.subscription);
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
            .and_then(|e| e.instance.upgrade())
            .is_some_and(|old| Arc::ptr_eq(&old, p))
            && let Some(entry) = entries.remove(name)
        {
            p.publisher().unsubscribe(entry.subscription);
        }
    }

    /// The live instances of one aspect whose gauges are set: one per
    /// name, and (by weak reference) each keyed instance with a `key` tag
    /// (`key-label = true`; without it the keys share the name's series,
    /// whose gauges stay the unkeyed instance's).
    #[cfg(feature = "metrics")]
    fn instances<P: Observed>(&self) -> (Vec<Arc<P>>, Vec<Weak<P>>) {
        let attached = P::attached(self);
        let named = lock(&attached.entries)
            .values()
            .filter_map(|e| e.instance.upgrade())
            .collect();
        let keyed = lock(&attached.keyed)
            .values()
            .map(|e| e.instance.clone())
            .collect();
        (named, keyed)
    }

    /// Gives every sink the live instances to read their snapshots: sets
    /// every gauge (and snapshot counter).
    ///
    /// A keyed instance is held for its own refresh only: holding them all
    /// at once would make every key of a table busy for that time, and a
    /// table that must add a key while no key is idle grows past its
    /// `max-keys` (until its next new key).
    #[cfg(feature = "metrics")]
    pub(crate) fn refresh(&self) {
        fn each<P: Observed>(b: &Binding) {
            let (named, keyed) = b.instances::<P>();
            for s in &b.sinks {
                P::sink(&**s).refresh(&named);
            }
            for p in keyed {
                let Some(p) = p.upgrade() else { continue };
                if !p.instance_tags().contains_key(resil_config::keyed::KEY_TAG) {
                    continue;
                }
                for s in &b.sinks {
                    P::sink(&**s).refresh(std::slice::from_ref(&p));
                }
            }
        }
        each::<CircuitBreaker>(self);
        each::<Retry>(self);
        each::<Bulkhead>(self);
        each::<ThreadPoolBulkhead>(self);
        each::<RateLimiter>(self);
        each::<TimeLimiter>(self);
        each::<Hedge>(self);
    }
}

pub(crate) struct Entry<P> {
    instance: Weak<P>,
    subscription: SubscriptionId,
}

pub(crate) struct Attached<P> {
    entries: Mutex<BTreeMap<String, Entry<P>>>,
    /// Keyed instances, by address (they share their name).
    keyed: Mutex<HashMap<usize, Entry<P>>>,
}

impl<P> Default for Attached<P> {
    fn default() -> Self {
        Attached {
            entries: Mutex::new(BTreeMap::new()),
            keyed: Mutex::new(HashMap::new()),
        }
    }
}

/// What one instance's consumer holds: one follower per sink.
struct Observer<P: Observed> {
    followers: Box<[Follower<P::Kind>]>,
}

impl<P: Observed> Observer<P> {
    fn new(p: &P, binding: &Binding) -> Self {
        Observer {
            followers: binding
                .sinks
                .iter()
                .map(|s| P::sink(&**s).follow(p))
                .collect(),
        }
    }

    /// The observer of a keyed instance (`key = expr`).
    fn new_keyed(p: &Arc<P>, binding: &Binding) -> Self {
        Observer {
            followers: binding
                .sinks
                .iter()
                .map(|s| P::sink(&**s).follow_keyed(p))
                .collect(),
        }
    }

    fn on_event(&self, event: &Event<P::Kind>) {
        for follower in &self.followers {
            follower(event);
        }
    }
}

/// A primitive that resil's observer knows: its events, its publisher, its
/// place in a binding. What each sink does with it is the sink's own trait.
pub(crate) trait Observed: GlobalPrimitive {
    /// Its event enum.
    type Kind: EventKind;

    /// Its event publisher.
    fn publisher(&self) -> &EventPublisher<Self::Kind>;
    /// Its aspect's subscriptions in `binding`.
    fn attached(binding: &Binding) -> &Attached<Self>;
    /// What `sink` does with its events.
    fn sink(sink: &dyn DynSink) -> &dyn Sink<Self>;
}

macro_rules! observed {
    ($($ty:ty, $kind:ty, $field:ident;)*) => {$(
        impl Observed for $ty {
            type Kind = $kind;

            fn publisher(&self) -> &EventPublisher<$kind> {
                self.event_publisher()
            }
            fn attached(binding: &Binding) -> &Attached<Self> {
                &binding.$field
            }
            fn sink(sink: &dyn DynSink) -> &dyn Sink<Self> {
                sink
            }
        }
    )*};
}

observed! {
    CircuitBreaker, CircuitBreakerEvent, circuit_breakers;
    Retry, RetryEvent, retries;
    Bulkhead, BulkheadEvent, bulkheads;
    ThreadPoolBulkhead, ThreadPoolBulkheadEvent, thread_pool_bulkheads;
    RateLimiter, RateLimiterEvent, rate_limiters;
    TimeLimiter, TimeLimiterEvent, time_limiters;
    Hedge, HedgeEvent, hedges;
}

pub(crate) use crate::sync::lock;

#[cfg(all(test, feature = "actuator"))]
mod tests {
    use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
    use resil_core::circuit_breaker::CircuitBreakerConfig;

    use super::*;

    /// The successful calls the `successful` timer of `name` counted.
    fn successes(handle: &PrometheusHandle, name: &str) -> u64 {
        let series = format!(
            r#"resilience4j_circuitbreaker_calls_seconds_count{{kind="successful",name="{name}"}} "#
        );
        handle
            .render()
            .lines()
            .find_map(|l| l.strip_prefix(&series))
            .map_or(0, |v| v.parse().unwrap())
    }

    fn succeed(cb: &CircuitBreaker) {
        cb.call(|| Ok::<_, std::io::Error>(())).unwrap();
    }

    #[test]
    fn binding_twice_counts_once_and_follows_replace_and_remove() {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        ::metrics::with_local_recorder(&recorder, || {
            let registries = Registries::of_defaults();
            let old = registries.circuit_breakers().circuit_breaker("a");
            observe(&registries);
            observe(&registries);
            succeed(&old);
            assert_eq!(successes(&handle, "a"), 1);

            registries
                .circuit_breakers()
                .replace("a", CircuitBreakerConfig::default());
            let new = registries.circuit_breakers().circuit_breaker("a");
            succeed(&old); // no longer in the registry: no longer observed
            succeed(&new);
            assert_eq!(successes(&handle, "a"), 2);

            registries.circuit_breakers().remove("a");
            succeed(&new);
            assert_eq!(successes(&handle, "a"), 2);
        });
    }

    /// The value of one series of `resil_shadow_refusals_total`.
    fn shadow_refusals(handle: &PrometheusHandle, kind: &str, name: &str) -> u64 {
        let series = format!(r#"resil_shadow_refusals_total{{kind="{kind}",name="{name}"}} "#);
        handle
            .render()
            .lines()
            .find_map(|l| l.strip_prefix(&series))
            .map_or(0, |v| v.parse().unwrap())
    }

    #[test]
    fn shadow_refusals_are_counted_per_kind_and_instance() {
        use resil_core::bulkhead::BulkheadConfig;
        use resil_core::circuit_breaker::State;
        use resil_core::rate_limiter::RateLimiterConfig;
        use resil_core::retry::RetryConfig;
        use std::time::Duration;

        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        ::metrics::with_local_recorder(&recorder, || {
            let registries = Registries::of_defaults();
            observe(&registries);
            let bulkhead = registries.bulkheads().bulkhead_with(
                "b",
                BulkheadConfig::builder()
                    .max_concurrent_calls(1)
                    .shadow(true)
                    .build()
                    .unwrap(),
            );
            let held = bulkhead.try_acquire_permission().unwrap();
            bulkhead.call(|| Ok::<_, ()>(())).unwrap(); // would have been refused
            drop(held);
            bulkhead.call(|| Ok::<_, ()>(())).unwrap(); // a permit was free
            assert_eq!(shadow_refusals(&handle, "bulkhead", "b"), 1);

            let limiter = registries.rate_limiters().rate_limiter_with(
                "r",
                RateLimiterConfig::builder()
                    .limit_for_period(1)
                    .limit_refresh_period(Duration::from_secs(3600))
                    .timeout_duration(Duration::ZERO)
                    .shadow(true)
                    .build()
                    .unwrap(),
            );
            for _ in 0..3 {
                limiter.call(|| Ok::<_, ()>(())).unwrap();
            }
            assert_eq!(shadow_refusals(&handle, "ratelimiter", "r"), 2);

            let retry = registries.retries().retry_with(
                "t",
                RetryConfig::builder()
                    .max_attempts(3)
                    .wait_duration(Duration::from_millis(1))
                    .shadow(true)
                    .build()
                    .unwrap(),
            );
            let mut attempts = 0;
            let _ = retry.call(|| {
                attempts += 1;
                Err::<(), _>("down")
            });
            assert_eq!(attempts, 1, "shadow: not repeated");
            assert_eq!(shadow_refusals(&handle, "retry", "t"), 1);

            // a breaker in METRICS_ONLY: the crossing it would have opened on
            let cb = registries.circuit_breakers().circuit_breaker_with(
                "c",
                CircuitBreakerConfig::builder()
                    .sliding_window_size(2)
                    .minimum_number_of_calls(2)
                    .initial_state(State::MetricsOnly)
                    .build()
                    .unwrap(),
            );
            for _ in 0..2 {
                let _ = cb.call(|| Err::<(), _>("down"));
            }
            assert_eq!(cb.state(), State::MetricsOnly);
            assert_eq!(shadow_refusals(&handle, "circuitbreaker", "c"), 1);
            // nothing counted for an instance that is not in shadow mode
            assert_eq!(shadow_refusals(&handle, "bulkhead", "other"), 0);
        });
    }

    #[test]
    fn reloads_are_counted_by_outcome_and_dry_runs_are_not() {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let count = |outcome: &str| {
            let series = format!(r#"resil_config_reloads_total{{outcome="{outcome}"}} "#);
            handle
                .render()
                .lines()
                .find_map(|l| l.strip_prefix(&series))
                .map_or(0, |v| v.parse::<u64>().unwrap())
        };
        ::metrics::with_local_recorder(&recorder, || {
            let loaded = resil_config::Resilience::builder()
                .file_contents("resilience.toml", "[bulkhead.instances.a]\n")
                .env_vars(Vec::<(String, String)>::new())
                .load()
                .unwrap();
            let good = "[bulkhead.instances.a]\nmax-concurrent-calls = 3\n";
            let bad = "[bulkhead.instances.a]\nmax-concurrent-calls = -3\n";
            loaded
                .reload_from_contents("resilience.toml", good)
                .unwrap();
            loaded.reload().unwrap(); // no changes: applied all the same
            loaded
                .reload_from_contents("resilience.toml", bad)
                .unwrap_err();
            loaded
                .reload_from_contents_dry_run("resilience.toml", bad)
                .unwrap_err();
            loaded.reload_dry_run().unwrap();
        });
        assert_eq!((count("applied"), count("rejected")), (2, 1));
    }

    #[test]
    fn a_foreign_extension_does_not_make_bindings_pile_up() {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        ::metrics::with_local_recorder(&recorder, || {
            let registries = Registries::of_defaults();
            assert_eq!(registries.extension(|| 5_u8), Some(&5));
            observe(&registries);
            observe(&registries);
            let cb = registries.circuit_breakers().circuit_breaker("b");
            succeed(&cb);
            assert_eq!(successes(&handle, "b"), 1);
        });
    }
}
