//! Events: per-instance publishers, subscriptions and a bounded buffer of recent events.
//!
//! Every primitive owns an [`EventPublisher`] for its own event enum
//! (`CircuitBreakerEvent`, `RetryEvent`, ...). Subscribe to every event with
//! [`EventPublisher::on_event`] or to one kind with [`EventPublisher::on`];
//! keep the last `n` events with [`EventPublisher::enable_buffer`] (registries
//! do this for every instance they create, with the configuration's
//! `event-consumer-buffer-size`, default 100, as Spring Boot's actuator does).
//!
//! With no subscriber and no buffer, publishing costs one relaxed load and a
//! branch: no event is built and nothing is allocated. A subscriber that
//! panics is isolated: the panic is caught, the other subscribers still run,
//! and the guarded call is not affected (Resilience4j catches consumer
//! exceptions only in some modules; resil does it everywhere).
//!
//! Consumers run on the thread that publishes (the caller's, or a timer's for
//! automatic transitions), from a snapshot of the subscriber list and with no
//! lock of the publisher held. A consumer may therefore subscribe, unsubscribe
//! (itself included: it still sees the event being delivered), read
//! [`EventPublisher::recent_events`] or call the instance that published; a
//! subscription made during a delivery sees the next event, not the current
//! one. A consumer should still be quick: it runs inside the guarded call.
//!
//! # Examples
//!
//! ```
//! use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerEvent, CircuitBreakerEventType, State};
//! use std::sync::{Arc, Mutex};
//!
//! let cb = CircuitBreaker::of_defaults("inventory-query");
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let sink = seen.clone();
//! cb.event_publisher().on(CircuitBreakerEventType::StateTransition, move |e| {
//!     sink.lock().unwrap().push(e.kind().clone());
//! });
//! cb.transition_to_open_state().unwrap();
//! assert_eq!(
//!     *seen.lock().unwrap(),
//!     [CircuitBreakerEvent::StateTransition { from: State::Closed, to: State::Open }]
//! );
//! ```

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use crate::Name;
use crate::clock::{Clock, Nanos, SharedClock, Stamp};

/// An event enum of one primitive.
pub trait EventKind: Clone + fmt::Debug + Send + Sync + 'static {
    /// The fieldless tag of each variant, to subscribe to one kind.
    type Type: Copy + Eq + fmt::Debug + Send + Sync + 'static;

    /// Returns the tag of this event.
    fn event_type(&self) -> Self::Type;
}

/// An event with the name of the instance that published it and when.
#[derive(Clone, PartialEq)]
pub struct Event<K> {
    name: Name,
    created_at: Nanos,
    wall_time: SystemTime,
    kind: K,
}

impl<K> Event<K> {
    /// The name of the instance that published the event.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// When the event was published, on the instance's clock.
    pub fn created_at(&self) -> Nanos {
        self.created_at
    }

    /// When the event was published, in wall-clock time (from the instance's clock).
    pub fn wall_time(&self) -> SystemTime {
        self.wall_time
    }

    /// What happened.
    pub fn kind(&self) -> &K {
        &self.kind
    }

    /// What happened, by value.
    pub fn into_kind(self) -> K {
        self.kind
    }
}

impl<K: fmt::Debug> fmt::Debug for Event<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("name", &self.name)
            .field("created_at", &self.created_at)
            .field("kind", &self.kind)
            .finish()
    }
}

/// The largest `event_consumer_buffer_size` of every primitive: the buffer
/// keeps whole events in memory, per instance.
pub const MAX_EVENT_CONSUMER_BUFFER_SIZE: u32 = 100_000;

/// Every primitive's builder check of its `event_consumer_buffer_size`.
pub(crate) fn check_buffer_size(p: &mut crate::error::Problems, size: u32) {
    p.check(
        size <= MAX_EVENT_CONSUMER_BUFFER_SIZE,
        "event_consumer_buffer_size",
        size,
        "must be at most 100000",
    );
}

type Consumer<K> = Arc<dyn Fn(&Event<K>) + Send + Sync>;

struct Subscriber<K: EventKind> {
    id: u64,
    only: Option<K::Type>,
    consumer: Consumer<K>,
}

impl<K: EventKind> Clone for Subscriber<K> {
    fn clone(&self) -> Self {
        Subscriber {
            id: self.id,
            only: self.only,
            consumer: Arc::clone(&self.consumer),
        }
    }
}

/// The subscriber list, copied on write: a publisher takes a snapshot (one
/// reference count) and runs the consumers with no lock held.
type Subscribers<K> = Arc<[Subscriber<K>]>;

/// Identifies a subscription, to remove it with [`EventPublisher::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

/// The event publisher of one instance.
pub struct EventPublisher<K: EventKind> {
    name: Name,
    clock: SharedClock,
    /// `true` while there is a subscriber or a buffer; the hot path reads only this.
    active: AtomicBool,
    /// `true` while there is a subscriber, so a buffer alone skips the subscriber list.
    subscribed: AtomicBool,
    next_id: AtomicU64,
    subscribers: RwLock<Subscribers<K>>,
    /// The recent events, kept compact (no name, no wall time: both are added
    /// when the buffer is read), so buffering costs a short lock and a write
    /// of the event in place.
    buffer: SpinLock<Option<Ring<(Nanos, K)>>>,
}

impl<K: EventKind> EventPublisher<K> {
    pub(crate) fn new(name: Name, clock: SharedClock) -> Self {
        EventPublisher {
            name,
            clock,
            active: AtomicBool::new(false),
            subscribed: AtomicBool::new(false),
            next_id: AtomicU64::new(0),
            subscribers: RwLock::new(Arc::from(Vec::new())),
            buffer: SpinLock::new(None),
        }
    }

    /// Calls `consumer` for every event.
    pub fn on_event<F>(&self, consumer: F) -> SubscriptionId
    where
        F: Fn(&Event<K>) + Send + Sync + 'static,
    {
        self.subscribe(None, Arc::new(consumer))
    }

    /// Calls `consumer` for every event of one kind.
    pub fn on<F>(&self, event_type: K::Type, consumer: F) -> SubscriptionId
    where
        F: Fn(&Event<K>) + Send + Sync + 'static,
    {
        self.subscribe(Some(event_type), Arc::new(consumer))
    }

    fn subscribe(&self, only: Option<K::Type>, consumer: Consumer<K>) -> SubscriptionId {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut subs = write(&self.subscribers);
        let mut list = subs.to_vec();
        list.push(Subscriber { id, only, consumer });
        *subs = Arc::from(list);
        self.subscribed.store(true, Ordering::Release);
        self.active.store(true, Ordering::Release);
        SubscriptionId(id)
    }

    /// Removes a subscription; returns whether it existed.
    pub fn unsubscribe(&self, id: SubscriptionId) -> bool {
        let mut subs = write(&self.subscribers);
        let before = subs.len();
        let list: Vec<_> = subs.iter().filter(|s| s.id != id.0).cloned().collect();
        let removed = list.len() != before;
        let empty = list.is_empty();
        if removed {
            *subs = Arc::from(list);
        }
        self.refresh_active(empty);
        removed
    }

    fn refresh_active(&self, no_subscribers: bool) {
        self.subscribed.store(!no_subscribers, Ordering::Release);
        let buffered = spin_lock(&self.buffer).is_some();
        self.active
            .store(!no_subscribers || buffered, Ordering::Release);
    }

    /// Keeps the last `capacity` events (0 turns the buffer off), readable with
    /// [`EventPublisher::recent_events`].
    ///
    /// The buffer takes its memory now (up to 1024 events), so that
    /// publishing allocates nothing; a buffer enabled before with the same
    /// capacity is kept as it is.
    pub fn enable_buffer(&self, capacity: usize) {
        self.set_buffer(capacity, false);
    }

    /// [`EventPublisher::enable_buffer`], the buffer taking its memory as
    /// events come (doubling up to `capacity`): for the many instances of
    /// keyed call sites, most of which see a few calls.
    pub(crate) fn enable_growing_buffer(&self, capacity: usize) {
        self.set_buffer(capacity, true);
    }

    fn set_buffer(&self, capacity: usize, growing: bool) {
        {
            let mut buffer = spin_lock(&self.buffer);
            if buffer.as_ref().map(|r| r.capacity) != Some(capacity) {
                // a new size keeps the newest events that fit, and the
                // way the buffer takes its memory
                let growing = buffer.as_ref().map_or(growing, |r| r.growing);
                let kept = buffer.take().map(Ring::into_vec).unwrap_or_default();
                *buffer = (capacity > 0).then(|| {
                    let mut ring = Ring::new(capacity, growing);
                    let skip = kept.len().saturating_sub(capacity);
                    kept.into_iter().skip(skip).for_each(|item| ring.push(item));
                    ring
                });
            }
        }
        let no_subscribers = read(&self.subscribers).is_empty();
        self.refresh_active(no_subscribers);
    }

    /// The buffered events, oldest first (empty when the buffer is off).
    pub fn recent_events(&self) -> Vec<Event<K>> {
        let items: Vec<(Nanos, K)> = spin_lock(&self.buffer)
            .as_ref()
            .map(|r| r.iter().cloned().collect())
            .unwrap_or_default();
        items
            .into_iter()
            .map(|(at, kind)| self.event(at, kind))
            .collect()
    }

    fn event(&self, at: Nanos, kind: K) -> Event<K> {
        Event {
            name: self.name.clone(),
            created_at: at,
            wall_time: self.clock.system_time(at),
            kind,
        }
    }

    /// The capacity of the buffer, 0 when it is off.
    pub fn buffer_capacity(&self) -> usize {
        spin_lock(&self.buffer).as_ref().map_or(0, |r| r.capacity)
    }

    /// `true` when publishing would reach a subscriber or the buffer.
    #[inline(always)]
    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Publishes an event stamped now.
    #[inline(always)]
    pub(crate) fn publish(&self, kind: impl FnOnce() -> K) {
        self.publish_timed(|_| kind());
    }

    /// Publishes an event stamped now, made from that time.
    ///
    /// With nothing to reach, a load and a branch where it is called: the
    /// rest is a function of its own, which the compiler may inline or not.
    #[inline(always)]
    pub(crate) fn publish_timed(&self, kind: impl FnOnce(Nanos) -> K) {
        if self.is_active() {
            self.publish_now(kind);
        }
    }

    #[inline]
    fn publish_now(&self, kind: impl FnOnce(Nanos) -> K) {
        let at = self.clock.now();
        self.publish_at(at, kind(at));
    }

    /// Publishes an event stamped with `stamp`'s reading of this publisher's
    /// clock (see [`Stamp`]); consumers that ran clear it.
    #[inline(always)]
    pub(crate) fn publish_stamped(&self, stamp: &mut Stamp, kind: impl FnOnce() -> K) {
        self.publish_stamped_timed(stamp, |_| kind());
    }

    /// [`EventPublisher::publish_stamped`], the event made from the time
    /// it is stamped; as [`EventPublisher::publish_timed`], a load and a
    /// branch where it is called when there is nothing to reach.
    #[inline(always)]
    pub(crate) fn publish_stamped_timed(&self, stamp: &mut Stamp, kind: impl FnOnce(Nanos) -> K) {
        if self.is_active() {
            self.publish_stamped_now(stamp, kind);
        }
    }

    #[inline]
    fn publish_stamped_now(&self, stamp: &mut Stamp, kind: impl FnOnce(Nanos) -> K) {
        let at = stamp.now(&self.clock);
        self.publish_at(at, kind(at));
        if self.subscribed.load(Ordering::Relaxed) {
            stamp.clear();
        }
    }

    /// Publishes an event stamped `at` (a time the caller already read).
    ///
    /// Inlined where the event is made: buffering it is a short lock and a
    /// write in place, and the consumers' part, out of line, is passed by
    /// with one load when there are none. That part takes the event by
    /// value and buffers it itself: were the event lent to the consumers
    /// here, it would be kept in memory on every path and copied from
    /// there into the buffer, where it now goes from the registers that
    /// made it into its slot (about 4 ns an event less, BENCHMARKS.md).
    #[inline(always)]
    pub(crate) fn publish_at(&self, at: Nanos, kind: K) {
        if self.subscribed.load(Ordering::Acquire) {
            self.deliver_and_buffer(at, kind);
        } else {
            self.buffer_event(at, kind);
        }
    }

    /// Writes an event into the buffer, if there is one.
    #[inline(always)]
    fn buffer_event(&self, at: Nanos, kind: K) {
        if let Some(ring) = spin_lock(&self.buffer).as_mut() {
            ring.push((at, kind));
        }
    }

    /// Hands an event to the consumers, then to the buffer (see
    /// [`EventPublisher::publish_at`]).
    #[inline(never)]
    fn deliver_and_buffer(&self, at: Nanos, kind: K) {
        self.deliver(at, &kind);
        self.buffer_event(at, kind);
    }

    /// Hands an event to the consumers.
    #[inline]
    fn deliver(&self, at: Nanos, kind: &K) {
        let event = self.event(at, kind.clone());
        // A snapshot: the consumers run with no lock held, so one may
        // subscribe or unsubscribe on this publisher, and a slow one holds
        // up only its own call, never a concurrent subscribe or publish.
        let subs = Arc::clone(&read(&self.subscribers));
        let ty = event.kind.event_type();
        for s in subs.iter() {
            if s.only.is_none_or(|t| t == ty) {
                let consumer = &s.consumer;
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| consumer(&event)));
            }
        }
    }
}

impl<K: EventKind> fmt::Debug for EventPublisher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventPublisher")
            .field("name", &self.name)
            .field("subscribers", &read(&self.subscribers).len())
            .field("buffer_capacity", &self.buffer_capacity())
            .finish()
    }
}

/// The last `capacity` items, written in place: once full, a push
/// overwrites the oldest (no shift, no allocation).
struct Ring<T> {
    capacity: usize,
    /// Once full, the oldest item, which the next push overwrites.
    head: usize,
    items: Vec<T>,
    /// Whether the items' memory was left to grow as they come.
    growing: bool,
}

impl<T> Ring<T> {
    /// A ring that takes its memory now (up to 1024 items), or as items
    /// come (`growing`).
    fn new(capacity: usize, growing: bool) -> Self {
        Ring {
            capacity,
            head: 0,
            items: if growing {
                Vec::new()
            } else {
                Vec::with_capacity(capacity.min(1024))
            },
            growing,
        }
    }

    #[inline]
    fn push(&mut self, item: T) {
        if self.items.len() < self.capacity {
            if self.items.len() == self.items.capacity() {
                self.grow();
            }
            self.items.push(item);
        } else {
            self.items[self.head] = item;
            self.head = if self.head + 1 == self.capacity {
                0
            } else {
                self.head + 1
            };
        }
    }

    /// Room for twice the items (at least 4), never past the capacity.
    #[cold]
    fn grow(&mut self) {
        let len = self.items.len();
        let to = (len * 2).clamp(4, self.capacity.max(4)).min(self.capacity);
        self.items.reserve_exact(to - len);
    }

    /// The items, oldest first.
    fn iter(&self) -> impl Iterator<Item = &T> {
        let (newer, older) = self.items.split_at(self.head);
        older.iter().chain(newer)
    }

    /// The items, oldest first.
    fn into_vec(mut self) -> Vec<T> {
        self.items.rotate_left(self.head);
        self.items
    }
}

use crate::sync::std_lock::{read, write};
use crate::sync::{SpinLock, spin_lock};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::sync::Mutex;

    #[derive(Debug, Clone, PartialEq)]
    enum Ev {
        A(u32),
        B,
    }
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum EvType {
        A,
        B,
    }
    impl EventKind for Ev {
        type Type = EvType;
        fn event_type(&self) -> EvType {
            match self {
                Ev::A(_) => EvType::A,
                Ev::B => EvType::B,
            }
        }
    }

    fn publisher() -> EventPublisher<Ev> {
        EventPublisher::new("p".into(), SharedClock::new(ManualClock::new()))
    }

    #[test]
    fn inactive_publisher_builds_nothing() {
        let p = publisher();
        p.publish(|| unreachable!("no subscriber, no event"));
    }

    #[test]
    fn filters_by_kind_and_unsubscribes() {
        let p = publisher();
        let all = Arc::new(Mutex::new(Vec::new()));
        let only_b = Arc::new(Mutex::new(Vec::new()));
        let (a, b) = (all.clone(), only_b.clone());
        let id = p.on_event(move |e| a.lock().unwrap().push(e.kind().clone()));
        p.on(EvType::B, move |e| b.lock().unwrap().push(e.kind().clone()));
        p.publish(|| Ev::A(1));
        p.publish(|| Ev::B);
        assert!(p.unsubscribe(id));
        assert!(!p.unsubscribe(id));
        p.publish(|| Ev::A(2));
        assert_eq!(*all.lock().unwrap(), [Ev::A(1), Ev::B]);
        assert_eq!(*only_b.lock().unwrap(), [Ev::B]);
    }

    /// Threads publishing into one buffer while another reads it: every
    /// event is kept exactly once, each thread's in the order it published
    /// them, and every snapshot read meanwhile is in that order too.
    #[test]
    fn concurrent_publishers_lose_nothing_and_keep_their_order() {
        const THREADS: u32 = 4;
        const EACH: u32 = 2_000;
        let p = publisher();
        p.enable_buffer((THREADS * EACH) as usize);
        let in_order = |kinds: &[Ev]| {
            let mut last = [None; THREADS as usize];
            kinds.iter().all(|k| {
                let Ev::A(n) = k else { return false };
                let (t, i) = ((n / EACH) as usize, n % EACH);
                let ok = last[t].is_none_or(|l| l < i);
                last[t] = Some(i);
                ok
            })
        };
        let done = std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (p, done) = (&p, &done);
                s.spawn(move || {
                    for i in 0..EACH {
                        p.publish(|| Ev::A(t * EACH + i));
                    }
                    done.fetch_add(1, std::sync::atomic::Ordering::Release);
                });
            }
            s.spawn(|| {
                while done.load(std::sync::atomic::Ordering::Acquire) < THREADS {
                    let kinds: Vec<_> = p
                        .recent_events()
                        .into_iter()
                        .map(Event::into_kind)
                        .collect();
                    assert!(in_order(&kinds), "a snapshot out of order");
                }
            });
        });
        let kinds: Vec<_> = p
            .recent_events()
            .into_iter()
            .map(Event::into_kind)
            .collect();
        assert_eq!(kinds.len(), (THREADS * EACH) as usize);
        assert!(in_order(&kinds));
    }

    #[test]
    fn buffer_keeps_the_last_n_and_a_panicking_consumer_is_isolated() {
        let p = publisher();
        p.enable_buffer(2);
        p.on_event(|_| panic!("consumer bug"));
        for i in 0..5 {
            p.publish(|| Ev::A(i));
        }
        let kinds: Vec<_> = p
            .recent_events()
            .into_iter()
            .map(Event::into_kind)
            .collect();
        assert_eq!(kinds, [Ev::A(3), Ev::A(4)]);
        p.enable_buffer(0);
        assert!(p.recent_events().is_empty());
    }

    #[test]
    fn the_ring_keeps_the_newest_in_order_and_a_resize_keeps_what_fits() {
        let mut ring = Ring::new(3, false);
        for i in 0..7u32 {
            ring.push(i);
            let kept: Vec<_> = ring.iter().copied().collect();
            let from = (i + 1).saturating_sub(3);
            assert_eq!(kept, (from..=i).collect::<Vec<_>>(), "after pushing {i}");
        }
        assert_eq!(ring.into_vec(), vec![4, 5, 6]);

        // a growing ring keeps the same items, its memory doubling up to
        // the capacity and no further
        let mut ring = Ring::new(100, true);
        assert_eq!(ring.items.capacity(), 0);
        for i in 0..250u32 {
            ring.push(i);
            let cap = ring.items.capacity();
            assert!(
                cap <= 100 && cap < 2 * ring.items.len() + 4,
                "{cap} for {}",
                i + 1
            );
        }
        assert_eq!(ring.items.capacity(), 100);
        assert_eq!(ring.into_vec(), (150..250).collect::<Vec<_>>());

        let p = publisher();
        p.enable_buffer(4);
        for i in 0..6 {
            p.publish(|| Ev::A(i));
        }
        p.enable_buffer(2);
        let kinds: Vec<_> = p
            .recent_events()
            .into_iter()
            .map(Event::into_kind)
            .collect();
        assert_eq!(kinds, vec![Ev::A(4), Ev::A(5)]);
        p.enable_buffer(5);
        p.publish(|| Ev::B);
        let kinds: Vec<_> = p
            .recent_events()
            .into_iter()
            .map(Event::into_kind)
            .collect();
        assert_eq!(kinds, vec![Ev::A(4), Ev::A(5), Ev::B]);
    }
}
