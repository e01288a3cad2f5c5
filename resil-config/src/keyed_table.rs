//! The keyed tables behind [`keyed`](crate::keyed): one table of instances
//! per keyed name, bounded by `max-keys`, and the registry of an aspect's
//! tables, below the global registries that hold them.

use std::any::Any;
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::sync::lock;

use resil_core::circuit_breaker::{CircuitBreaker, State};
use resil_core::clock::SharedClock;
use resil_core::registry::Primitive;
use resil_core::{Name, Tags};

use crate::bind::Binder;

/// The keys a name keeps when `max-keys` is not set.
pub const DEFAULT_MAX_KEYS: u32 = 100;

/// The tag a keyed instance carries when its name says `key-label = true`.
pub const KEY_TAG: &str = "key";

/// What happened to the keys of a [`KeyedRegistry`].
#[derive(Debug)]
#[non_exhaustive]
pub enum KeyedEvent<'a, P> {
    /// A key got its instance.
    Added {
        /// The key.
        key: &'a str,
        /// Its instance.
        instance: &'a Arc<P>,
    },
    /// A key was evicted past `max-keys`; its state is dropped.
    Evicted {
        /// The key.
        key: &'a str,
        /// Its instance, which the table no longer holds.
        instance: &'a Arc<P>,
    },
}

type Listener<P> = Arc<dyn Fn(&KeyedEvent<'_, P>) + Send + Sync>;
type Listeners<P> = RwLock<Vec<Listener<P>>>;

/// The keyed tables of one aspect, by instance name.
pub struct KeyedRegistry<P: Primitive> {
    tables: Mutex<BTreeMap<String, Arc<Keyed<P>>>>,
    listeners: Arc<Listeners<P>>,
}

impl<P: Primitive> KeyedRegistry<P> {
    pub(crate) fn new() -> Self {
        KeyedRegistry {
            tables: Mutex::new(BTreeMap::new()),
            listeners: Arc::new(RwLock::new(Vec::new())),
        }
    }

    /// The keyed table of `name`, if a keyed call site created it.
    pub fn table(&self, name: &str) -> Option<Arc<Keyed<P>>> {
        lock(&self.tables).get(name).cloned()
    }

    /// Every keyed table, sorted by name.
    pub fn tables(&self) -> Vec<Arc<Keyed<P>>> {
        lock(&self.tables).values().cloned().collect()
    }

    /// Calls `listener` for every key added to or evicted from any table of
    /// this aspect, on the thread of the call that added or evicted it, with
    /// no table lock held (so it may read the tables). A call on another
    /// thread that finds a new key in the table before its `Added` listeners
    /// ran is not seen by a subscription they make.
    pub fn on_change<F>(&self, listener: F)
    where
        F: Fn(&KeyedEvent<'_, P>) + Send + Sync + 'static,
    {
        self.listeners
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::new(listener));
    }

    /// The table of `name`, created with `make` the first time.
    pub(crate) fn table_or_create(
        &self,
        name: &str,
        make: impl FnOnce(Arc<Listeners<P>>) -> Keyed<P>,
    ) -> Arc<Keyed<P>> {
        let mut tables = lock(&self.tables);
        if let Some(t) = tables.get(name) {
            return t.clone();
        }
        let table = Arc::new(make(self.listeners.clone()));
        tables.insert(name.to_owned(), table.clone());
        table
    }
}

impl<P: Primitive> fmt::Debug for KeyedRegistry<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedRegistry")
            .field("tables", &lock(&self.tables).keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The keyed instances of one name: at most `max-keys` of them (see the
/// [module documentation](crate::keyed) for the bound and when it is exceeded).
pub struct Keyed<P: Primitive> {
    /// Tells this table apart from every other (see [`Keyed::get`]).
    id: u64,
    name: Name,
    /// What a new key gets; a reload replaces it (under the slots' lock, so
    /// that no key is created from the old one after the reload's pass).
    config: Mutex<P::Config>,
    tags: Tags,
    clock: SharedClock,
    max_keys: AtomicUsize,
    key_label: AtomicBool,
    slots: Mutex<Slots<P>>,
    listeners: Arc<Listeners<P>>,
}

struct Slots<P> {
    /// foldhash, seeded per table: a key is hashed on every lookup, and
    /// SipHash cost more than the rest of it (`max-keys` bounds what
    /// colliding keys could cost).
    map: HashMap<Box<str>, Slot<P>, foldhash::fast::RandomState>,
    evictions: u64,
}

struct Slot<P> {
    instance: Arc<P>,
    use_: Arc<Use>,
}

impl<P> Slot<P> {
    /// Only the table holds the instance: no call in flight, and no thread
    /// holds the key (see [`Keyed::get`]), so the key may be evicted.
    fn idle(&self) -> bool {
        Arc::strong_count(&self.instance) == 1
    }

    /// The [`TICK`] of the key's last use.
    fn used(&self) -> u64 {
        self.use_.last.load(Ordering::Relaxed)
    }
}

/// The recency of a key, shared by its slot and the threads that hold it:
/// the [`TICK`] of its last lookup, or of a thread letting go of it.
#[derive(Default)]
struct Use {
    last: AtomicU64,
}

/// The clock of every key's recency: a lookup, or a thread letting go of
/// the key it held, takes the next tick.
static TICK: AtomicU64 = AtomicU64::new(0);

/// The tables' ids.
static TABLES: AtomicU64 = AtomicU64::new(0);

impl Use {
    fn touch(&self) {
        self.last
            .store(TICK.fetch_add(1, Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}

/// The settings of a keyed table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyedSettings {
    /// `max-keys`: the keys the name keeps (at least 1).
    pub max_keys: u32,
    /// `key-label`: whether each key's meters carry a `key` tag.
    pub key_label: bool,
}

impl Default for KeyedSettings {
    fn default() -> Self {
        KeyedSettings {
            max_keys: DEFAULT_MAX_KEYS,
            key_label: false,
        }
    }
}

impl<P: Primitive> Keyed<P> {
    /// A table whose keys get instances named `name`, built from `config`
    /// with `tags` (the registry's and the name's) and `clock`.
    pub(crate) fn new(
        name: &str,
        config: P::Config,
        tags: Tags,
        clock: SharedClock,
        settings: KeyedSettings,
        listeners: Arc<Listeners<P>>,
    ) -> Self {
        Keyed {
            id: TABLES.fetch_add(1, Ordering::Relaxed),
            name: Name::from(name),
            config: Mutex::new(config),
            tags,
            clock,
            max_keys: AtomicUsize::new(settings.max_keys.max(1) as usize),
            key_label: AtomicBool::new(settings.key_label),
            slots: Mutex::new(Slots {
                map: HashMap::default(),
                evictions: 0,
            }),
            listeners,
        }
    }

    /// The instance name the keys share.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `max-keys`.
    pub fn max_keys(&self) -> usize {
        self.max_keys.load(Ordering::Relaxed)
    }

    /// Applies a reloaded configuration of the name: every live key's
    /// instance changes in place (its state kept, as
    /// [`Primitive::change_config`](resil_core::registry::Primitive::change_config)
    /// says), and keys added afterwards start from it.
    pub(crate) fn change_config(&self, config: &P::Config)
    where
        P: Binder,
    {
        let slots = lock(&self.slots);
        *lock(&self.config) = config.clone();
        for (key, slot) in &slots.map {
            // checked with `can_change_config` just before; a key that
            // refuses now (another change came between) keeps its settings
            if let Err(e) = slot.instance.change_config(config.clone()) {
                tracing::warn!(
                    target: "resil::reload",
                    "resil: {} `{}` key `{key}` kept its settings: {e}",
                    P::ASPECT,
                    self.name
                );
            }
        }
    }

    /// Whether every live key accepts `config` (the first refusal, if not).
    pub(crate) fn can_change_config(
        &self,
        config: &P::Config,
    ) -> Result<(), resil_core::live::ChangeRefused> {
        let slots = lock(&self.slots);
        slots
            .map
            .values()
            .try_for_each(|slot| slot.instance.can_change_config(config))
    }

    /// A reloaded `max-keys`: a smaller bound evicts down to it as new keys come.
    pub(crate) fn set_max_keys(&self, max_keys: u32) {
        self.max_keys
            .store(max_keys.max(1) as usize, Ordering::Relaxed);
    }

    /// `key-label`.
    pub fn key_label(&self) -> bool {
        self.key_label.load(Ordering::Relaxed)
    }

    /// A reloaded `key-label`: keys added from now on carry the `key` tag
    /// or not (a live key keeps the tags its meters were made with).
    pub(crate) fn set_key_label(&self, key_label: bool) {
        self.key_label.store(key_label, Ordering::Relaxed);
    }

    /// The instance of `key` (its `Display`), created if the table does not
    /// hold it, evicting past `max-keys`.
    ///
    /// The key is written into a buffer of the thread's, which keeps its
    /// room from call to call (no allocation once it has held the longest
    /// key). A thread that looks up the same key twice in a row holds it
    /// from then on, until it looks up another: its next lookups of that key
    /// take neither the table's lock nor a hash, and the key counts as busy
    /// meanwhile (it is not evicted).
    #[inline]
    pub fn get<K: fmt::Display + ?Sized>(&self, key: &K) -> Arc<P> {
        THREAD.with(|t| match t.try_borrow_mut() {
            Ok(mut t) => {
                let t = &mut *t;
                t.key.clear();
                // a `Display` that fails leaves what it wrote: the key
                let _ = write!(t.key, "{key}");
                if t.table == self.id
                    && t.last == t.key
                    && let Some(held) = &t.held
                    && let Ok(instance) = Arc::clone(&held.instance).downcast::<P>()
                {
                    return instance;
                }
                self.get_slow(t)
            }
            // a key whose `Display` calls a keyed call site
            Err(_) => self.get_str(&key.to_string()),
        })
    }

    /// [`Keyed::get`] when the thread does not hold the key: the table's
    /// lookup, and the thread holds the key if it looked it up just before.
    #[inline(never)]
    fn get_slow(&self, t: &mut ThreadKeys) -> Arc<P> {
        if t.table == self.id && t.last == t.key {
            let (instance, use_) = self.lookup(&t.key, true);
            t.held = use_.map(|use_| Held {
                instance: Arc::clone(&instance) as Arc<dyn Any + Send + Sync>,
                use_,
            });
            return instance;
        }
        // another key: let go of the one held, and remember this one
        t.held = None;
        t.table = self.id;
        std::mem::swap(&mut t.last, &mut t.key);
        self.lookup(&t.last, false).0
    }

    /// The instance of `key`, created if the table does not hold it.
    pub fn get_str(&self, key: &str) -> Arc<P> {
        self.lookup(key, false).0
    }

    /// The instance of `key`, created if the table does not hold it, and
    /// (`hold`) its recency, for a thread that holds the key.
    fn lookup(&self, key: &str, hold: bool) -> (Arc<P>, Option<Arc<Use>>) {
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.map.get(key) {
            slot.use_.touch();
            return (slot.instance.clone(), hold.then(|| Arc::clone(&slot.use_)));
        }
        let evicted = self.make_room(&mut slots);
        let instance = Arc::new(self.create(key));
        let slot = Slot {
            instance: instance.clone(),
            use_: Arc::default(),
        };
        slot.use_.touch();
        let held = hold.then(|| Arc::clone(&slot.use_));
        slots.map.insert(Box::from(key), slot);
        drop(slots);
        self.tell(evicted, key, &instance);
        (instance, held)
    }

    /// The instance of `key` if the table holds it (neither created nor
    /// made more recent).
    pub fn find(&self, key: &str) -> Option<Arc<P>> {
        lock(&self.slots).map.get(key).map(|s| s.instance.clone())
    }

    /// The live keys, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = lock(&self.slots)
            .map
            .keys()
            .map(|k| k.to_string())
            .collect();
        keys.sort();
        keys
    }

    /// The live keys and their instances, sorted by key.
    pub fn entries(&self) -> Vec<(String, Arc<P>)> {
        let mut entries: Vec<(String, Arc<P>)> = lock(&self.slots)
            .map
            .iter()
            .map(|(k, s)| (k.to_string(), s.instance.clone()))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries
    }

    /// How many keys the table holds.
    pub fn len(&self) -> usize {
        lock(&self.slots).map.len()
    }

    /// Whether the table holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many keys were evicted so far.
    pub fn evictions(&self) -> u64 {
        lock(&self.slots).evictions
    }

    fn create(&self, key: &str) -> P {
        let mut tags = self.tags.clone();
        if self.key_label() {
            tags.insert(KEY_TAG.to_owned(), key.to_owned());
        }
        let config = lock(&self.config).clone();
        P::create_keyed(self.name.clone(), config, self.clock.clone(), tags)
    }

    /// Evicts until a new key fits, or until no key may go.
    fn make_room(&self, slots: &mut Slots<P>) -> Vec<(Box<str>, Arc<P>)> {
        let mut evicted = Vec::new();
        let max_keys = self.max_keys();
        while slots.map.len() >= max_keys {
            let Some(victim) = victim(&slots.map, max_keys) else {
                break;
            };
            if let Some(slot) = slots.map.remove(&victim) {
                slots.evictions += 1;
                evicted.push((victim, slot.instance));
            }
        }
        evicted
    }

    fn tell(&self, evicted: Vec<(Box<str>, Arc<P>)>, key: &str, instance: &Arc<P>) {
        let listeners: Vec<Listener<P>> = self
            .listeners
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for (k, p) in &evicted {
            for l in &listeners {
                l(&KeyedEvent::Evicted {
                    key: k,
                    instance: p,
                });
            }
        }
        for l in &listeners {
            l(&KeyedEvent::Added { key, instance });
        }
    }
}

impl<P: Primitive> fmt::Debug for Keyed<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyed")
            .field("name", &self.name)
            .field("max_keys", &self.max_keys())
            .field("key_label", &self.key_label())
            .field("keys", &self.len())
            .finish_non_exhaustive()
    }
}

/// The key a new key evicts: the least recently used *idle* key (only the
/// table holds its instance) that is not kept, if any.
///
/// A key whose breaker refuses calls (`OPEN`, `HALF_OPEN`, `FORCED_OPEN`)
/// is kept while a key in another state exists, so that a churn of new keys
/// cannot reset a failing tenant's breaker; but only the most recently used
/// of them, at most half the table (`max_keys / 2`): the other half is room
/// for the keys that are called, so that open keys nobody calls again (junk
/// tenants) cannot pin the table and make the active keys evict each other
/// before any of them gathers the calls that open its breaker.
fn victim<P: 'static>(
    map: &HashMap<Box<str>, Slot<P>, foldhash::fast::RandomState>,
    max_keys: usize,
) -> Option<Box<str>> {
    // each key's recency, and whether its breaker refuses calls
    let mut refusing: Vec<u64> = map
        .values()
        .filter(|s| protected(&*s.instance))
        .map(|s| s.used())
        .collect();
    let quota = max_keys / 2;
    // the refusing keys used at or after this tick are kept (recencies are
    // distinct: one tick per call)
    let kept_from = if refusing.len() == map.len() || quota == 0 {
        u64::MAX // no key in another state, or no room for refusing keys
    } else if refusing.len() <= quota {
        0
    } else {
        let (_, nth, _) = refusing.select_nth_unstable_by_key(quota - 1, |used| Reverse(*used));
        *nth
    };
    map.iter()
        .filter(|(_, s)| s.idle())
        .filter(|(_, s)| !(s.used() >= kept_from && protected(&*s.instance)))
        .min_by_key(|(_, s)| s.used())
        .map(|(k, _)| k.clone())
}

/// A circuit breaker that is `OPEN`, `HALF_OPEN` or `FORCED_OPEN`: kept
/// (within half the table) while a key in another state exists.
fn protected<P: 'static>(p: &P) -> bool {
    (p as &dyn std::any::Any)
        .downcast_ref::<CircuitBreaker>()
        .is_some_and(|cb| {
            matches!(
                cb.state(),
                State::Open | State::HalfOpen | State::ForcedOpen
            )
        })
}

/// A thread's keys (see [`Keyed::get`]).
struct ThreadKeys {
    /// The key being looked up, as its `Display` writes it.
    key: String,
    /// The table and key of the thread's previous lookup.
    table: u64,
    last: String,
    /// That key's instance and use, once looked up twice in a row.
    held: Option<Held>,
}

/// A key a thread holds: its instance (of the table's type), which keeps
/// it busy, and its recency.
struct Held {
    instance: Arc<dyn Any + Send + Sync>,
    use_: Arc<Use>,
}

impl Drop for Held {
    /// Lets go of the key, last used now.
    fn drop(&mut self) {
        self.use_.touch();
    }
}

thread_local! {
    static THREAD: RefCell<ThreadKeys> = const {
        RefCell::new(ThreadKeys {
            key: String::new(),
            table: u64::MAX,
            last: String::new(),
            held: None,
        })
    };
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use resil_core::circuit_breaker::CircuitBreakerConfig;
    use resil_core::retry::Retry;

    use super::*;

    fn table<P: Primitive>(config: P::Config, max_keys: u32) -> Keyed<P> {
        Keyed::new(
            "t",
            config,
            Tags::new(),
            SharedClock::default(),
            KeyedSettings {
                max_keys,
                key_label: false,
            },
            Arc::new(RwLock::new(Vec::new())),
        )
    }

    fn fail(cb: &CircuitBreaker) {
        let _ = cb.call(|| Err::<(), _>(std::io::Error::other("down")));
    }

    fn opening() -> CircuitBreakerConfig {
        CircuitBreakerConfig::builder()
            .sliding_window_size(2)
            .minimum_number_of_calls(2)
            .wait_duration_in_open_state(Duration::from_secs(60))
            .build()
            .unwrap()
    }

    #[test]
    fn the_same_key_is_the_same_instance_and_long_keys_work() {
        let t = table::<Retry>(Default::default(), 10);
        let long = "k".repeat(200);
        assert!(Arc::ptr_eq(&t.get("a"), &t.get(&String::from("a"))));
        assert!(Arc::ptr_eq(&t.get(&long), &t.get_str(&long)));
        assert!(Arc::ptr_eq(&t.get(&7_u32), &t.get("7")));
        assert_eq!(t.keys(), vec!["7".to_owned(), "a".to_owned(), long]);
    }

    #[test]
    fn past_the_bound_the_least_recently_used_idle_key_goes() {
        let t = table::<Retry>(Default::default(), 2);
        let a = t.get("a");
        t.get("b");
        t.get("a");
        drop(a);
        t.get("c"); // b is the least recently used
        assert_eq!(t.keys(), ["a", "c"]);
        assert_eq!(t.evictions(), 1);
    }

    #[test]
    fn a_busy_key_is_kept_and_the_table_shrinks_back() {
        let t = table::<Retry>(Default::default(), 2);
        let a = t.get("a");
        let b = t.get("b");
        let c = t.get("c"); // every key busy: served and kept
        assert_eq!(t.len(), 3);
        drop((a, b, c));
        t.get("d");
        assert_eq!(t.len(), 2);
        assert_eq!(t.keys(), ["c", "d"]);
    }

    #[test]
    fn an_open_breaker_is_never_evicted_while_a_closed_one_exists() {
        let t = table::<CircuitBreaker>(opening(), 2);
        let a = t.get("a");
        fail(&a);
        fail(&a);
        assert_eq!(a.state(), State::Open);
        drop(a);
        t.get("b"); // b is more recent than a, and closed
        t.get("c");
        assert_eq!(t.keys(), ["a", "c"]);
        assert_eq!(t.find("a").unwrap().state(), State::Open);
        // a busy closed key still protects the open one
        let c = t.get("c");
        t.get("d");
        assert!(t.find("a").is_some());
        assert_eq!(t.len(), 3);
        drop(c);
    }

    #[test]
    fn open_keys_nobody_calls_hold_at_most_half_the_table() {
        let t = table::<CircuitBreaker>(opening(), 10);
        for junk in 0..9 {
            let cb = t.get(&format!("junk-{junk}"));
            fail(&cb);
            fail(&cb);
            assert_eq!(cb.state(), State::Open);
        }
        t.get("idle");
        // two tenants that keep failing: each gathers its calls and opens
        let mut reached = 0;
        for call in 0..1_000 {
            let cb = t.get(if call % 2 == 0 { "a" } else { "b" });
            let _ = cb.call(|| {
                reached += 1;
                Err::<(), _>(std::io::Error::other("down"))
            });
        }
        assert_eq!(reached, 4, "two failures each, then refused");
        assert_eq!(t.find("a").unwrap().state(), State::Open);
        assert_eq!(t.find("b").unwrap().state(), State::Open);
        assert_eq!(t.len(), 10);
        // the open keys kept are the most recently used: a, b and the
        // latest junk; the oldest junk went first
        assert!(t.find("junk-0").is_none() && t.find("junk-8").is_some());
    }

    #[test]
    fn an_evicted_key_starts_afresh() {
        let t = table::<CircuitBreaker>(opening(), 1);
        let a = t.get("a");
        fail(&a);
        fail(&a);
        assert_eq!(a.state(), State::Open);
        drop(a);
        // only open keys are idle and no closed key exists: the open one goes
        t.get("b");
        assert_eq!(t.keys(), ["b"]);
        assert_eq!(t.get("a").state(), State::Closed);
    }

    #[test]
    fn a_key_looked_up_twice_in_a_row_is_held_until_another() {
        let t = table::<Retry>(Default::default(), 1);
        let a = t.get("a");
        let held = t.get("a"); // twice in a row: this thread holds "a"
        assert!(Arc::ptr_eq(&a, &held));
        drop((a, held));
        assert!(
            Arc::ptr_eq(&t.get("a"), &t.get(&'a')),
            "held, without a lookup"
        );
        // a key held is busy: another thread's new key does not evict it
        std::thread::scope(|s| {
            s.spawn(|| t.get("b"));
        });
        assert_eq!(t.keys(), ["a", "b"]);
        // looking up another key lets go of it: it is the older one now
        t.get("c");
        assert_eq!(t.keys(), ["c"]);
        assert_eq!(t.evictions(), 2);
        // a key is held in its own table only
        let other = table::<Retry>(Default::default(), 1);
        t.get("c");
        assert!(!Arc::ptr_eq(&other.get("c"), &t.get("c")));
    }

    #[test]
    fn listeners_hear_of_added_and_evicted_keys() {
        let registry = KeyedRegistry::<Retry>::new();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h = heard.clone();
        registry.on_change(move |e| {
            let line = match e {
                KeyedEvent::Added { key, .. } => format!("+{key}"),
                KeyedEvent::Evicted { key, .. } => format!("-{key}"),
            };
            lock(&h).push(line);
        });
        let t = registry.table_or_create("r", |l| {
            Keyed::new(
                "r",
                Default::default(),
                Tags::new(),
                SharedClock::default(),
                KeyedSettings {
                    max_keys: 1,
                    key_label: true,
                },
                l,
            )
        });
        t.get("a");
        t.get("b");
        assert_eq!(*lock(&heard), ["+a", "-a", "+b"]);
        assert_eq!(
            t.get("b").tags().get(KEY_TAG).map(String::as_str),
            Some("b")
        );
        assert_eq!(registry.tables().len(), 1);
    }
}
