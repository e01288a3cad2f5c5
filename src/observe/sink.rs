//! Where the observer sends events: its sinks, and the one place that
//! chooses them.
//!
//! A sink is one destination of the instances' events: the meters
//! ([`crate::metrics`]), the `tracing` events, the actuator's event streams.
//! Each implements [`Sink`] for every primitive, in its own file, through a
//! trait of its own over the primitives ([`Observed`] knows none of them);
//! [`registered`] lists the sinks the enabled features bring, and a
//! [`Binding`](super::Binding) holds that list for its registries.
//!
//! # Cost
//!
//! The list is dynamic: a `Box<[Arc<dyn DynSink>]>` per binding, chosen when
//! it is made. When the observer starts following an instance, each sink
//! gives it a [`Follower`] (a boxed closure holding what the sink keeps for
//! that instance: its meter handles, its name), allocated once per instance.
//! An event then costs one indirect call per sink (at most three) and no
//! allocation beyond what the sinks did before they were behind this trait:
//! a sink that has nothing to do returns from its own closure (the streams
//! after one load while none is open). Static generics would save those
//! calls but need one type per combination of features; the observer's
//! dispatch would then have to name the sinks again.

use std::any::Any;
use std::sync::Arc;

use resil_core::bulkhead::Bulkhead;
use resil_core::circuit_breaker::CircuitBreaker;
use resil_core::event::Event;
use resil_core::hedge::Hedge;
use resil_core::rate_limiter::RateLimiter;
use resil_core::retry::Retry;
use resil_core::thread_pool_bulkhead::ThreadPoolBulkhead;
use resil_core::time_limiter::TimeLimiter;

use super::Observed;

/// What receives one instance's events for one sink, with what the sink
/// keeps for that instance.
pub(crate) type Follower<K> = Box<dyn Fn(&Event<K>) + Send + Sync>;

/// A destination of the events of `P`'s instances.
pub(crate) trait Sink<P: Observed>: Send + Sync + 'static {
    /// Starts following `p`: the observer calls the follower with each of
    /// its events, until `p` leaves its registry.
    fn follow(&self, p: &P) -> Follower<P::Kind>;

    /// Starts following a keyed instance (`key = expr`), which leaves when
    /// its key is evicted ([`unfollow_keyed`](Sink::unfollow_keyed)); the
    /// same as [`follow`](Sink::follow) unless the sink keeps something per key.
    fn follow_keyed(&self, p: &Arc<P>) -> Follower<P::Kind> {
        self.follow(p)
    }

    /// Stops following a keyed instance: its key was evicted.
    fn unfollow_keyed(&self, p: &Arc<P>) {
        let _ = p;
    }

    /// Reads what has no events from the live `instances`' snapshots (the
    /// gauges); most sinks have nothing to read.
    #[cfg(feature = "metrics")] // only the meters read snapshots
    fn refresh(&self, instances: &[Arc<P>]) {
        let _ = instances;
    }
}

/// A sink of every primitive's events: what a binding's list holds. Any
/// type with the seven [`Sink`] impls is one.
pub(crate) trait DynSink:
    Sink<CircuitBreaker>
    + Sink<Retry>
    + Sink<Bulkhead>
    + Sink<ThreadPoolBulkhead>
    + Sink<RateLimiter>
    + Sink<TimeLimiter>
    + Sink<Hedge>
    + Any
    + Send
    + Sync
{
}

impl<S> DynSink for S where
    S: Sink<CircuitBreaker>
        + Sink<Retry>
        + Sink<Bulkhead>
        + Sink<ThreadPoolBulkhead>
        + Sink<RateLimiter>
        + Sink<TimeLimiter>
        + Sink<Hedge>
{
}

/// The sinks of one binding, in the order they see each event: the one
/// place that names them, each behind its feature.
pub(super) fn registered() -> Box<[Arc<dyn DynSink>]> {
    let sinks: Vec<Arc<dyn DynSink>> = vec![
        #[cfg(feature = "metrics")]
        Arc::new(crate::metrics::MetricsSink::default()),
        #[cfg(feature = "tracing")]
        Arc::new(crate::trace::TracingSink),
        // one broadcast channel per binding: its registries' streams
        #[cfg(feature = "actuator")]
        Arc::new(crate::actuator::stream::Hub::new()),
        // one load per event while no recording is on
        Arc::new(crate::record::sink::RecordSink),
        // off but in a test scope's binding
        #[cfg(feature = "testing")]
        Arc::new(crate::testing::EventLog::default()),
    ];
    sinks.into_boxed_slice()
}

/// The sink of type `S` among `sinks`, if it is registered.
pub(super) fn find<S: DynSink>(sinks: &[Arc<dyn DynSink>]) -> Option<Arc<S>> {
    sinks.iter().find_map(|s| {
        let any: Arc<dyn Any + Send + Sync> = s.clone();
        any.downcast::<S>().ok()
    })
}
