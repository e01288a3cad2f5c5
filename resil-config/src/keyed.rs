//! Keyed instances: `key = expr` on an attribute.
//!
//! A keyed call site keeps, per instance name, one instance per distinct key
//! (the `Display` of the attribute's `key` expression, evaluated per call),
//! each built with the name's settings: the configuration, tags and clock of
//! the global registry's instance of that name. The keys of one name share
//! one [`Keyed`] table, whichever functions use them.
//!
//! # The bound
//!
//! `max-keys` (default [`DEFAULT_MAX_KEYS`]) bounds the keys of a name. A
//! new key past the bound evicts the least recently used *idle* key (no
//! call in flight, and no thread holding it: see below). An evicted key's
//! state is dropped: its next call starts afresh.
//!
//! Keys whose circuit breaker refuses calls (`OPEN`, `HALF_OPEN` or
//! `FORCED_OPEN`) are kept while a key in another state exists, so that a
//! flood of new keys cannot reset a failing tenant's breaker, but at most
//! half the table of them (`max-keys / 2`, the most recently used): the
//! other half is room for the keys being called. Without that room, open
//! keys that nobody calls again would pin the table, and two tenants that
//! keep failing would evict each other at every call, each starting afresh,
//! so that neither breaker ever opened and every call reached the
//! downstream. With it, a failing tenant is refused once its breaker has
//! seen its minimum of calls, as long as the keys being called fit in the
//! room (raise `max-keys` when they do not).
//!
//! When no key can be evicted (every key has a call in flight or is held,
//! or the only idle keys are kept open breakers), the new key is still
//! served and kept: the table exceeds `max-keys` by at most the number of
//! calls in flight and of threads, and the next new key evicts back down to
//! the bound as soon as keys are idle. Calls are never refused for the
//! bound's sake, and the table never grows with the number of distinct keys
//! seen.
//!
//! # Cost
//!
//! A call formats its key into a buffer of its thread's (no allocation
//! once the buffer has held the longest key). A thread that calls with the
//! same key twice in a row *holds* that key until it calls with another
//! (of any name): its calls then find the instance in the thread's own
//! memory and clone its `Arc`, without the table's lock or a hash, and
//! the key counts as busy. Any other call takes the table's mutex for one
//! hash lookup (foldhash) and clones an `Arc`. A new key allocates its
//! instance and the key, and scans the table (`O(max-keys)`) when it is
//! full.
//!
//! # Seeing the keys
//!
//! Keyed instances are not entries of the registry (a registry holds one
//! instance per name). [`KeyedRegistry`] lists the tables of each aspect
//! and tells listeners ([`KeyedRegistry::on_change`]) of every key added
//! and evicted; resil's metrics, `tracing` and actuator features follow
//! them there.

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::global::GlobalPrimitive;
pub use crate::keyed_table::{
    DEFAULT_MAX_KEYS, KEY_TAG, Keyed, KeyedEvent, KeyedRegistry, KeyedSettings,
};

/// The instances a protected function uses when its attribute has a `key`,
/// cached in a `static` of the generated code.
///
/// The first call finds (or creates) the [`Keyed`] table of this name in the
/// global registries, built with the settings of the registry's instance of
/// that name and the name's `max-keys` and `key-label`; every call then asks
/// the table for its key's instance.
///
/// # Examples
///
/// ```
/// use resil_config::KeyedCallSite;
/// use resil_core::circuit_breaker::CircuitBreaker;
///
/// fn charge(tenant: &str) -> Result<u32, resil_core::Error<std::io::Error>> {
///     static SITE: KeyedCallSite<CircuitBreaker> = KeyedCallSite::new("pay");
///     SITE.get(tenant).call(|| Ok(7))
/// }
/// assert_eq!(charge("acme").unwrap(), 7);
/// assert_eq!(resil_config::registries().circuit_breakers().find("pay").map(|_| ()), Some(()));
/// ```
pub struct KeyedCallSite<P: GlobalPrimitive> {
    name: &'static str,
    table: OnceLock<&'static Keyed<P>>,
}

impl<P: GlobalPrimitive> KeyedCallSite<P> {
    /// A keyed call site for the instances named `name`; nothing is looked
    /// up until the first call.
    pub const fn new(name: &'static str) -> Self {
        KeyedCallSite {
            name,
            table: OnceLock::new(),
        }
    }

    /// The instance name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The instance of `key` (its `Display`).
    #[inline]
    pub fn get<K: fmt::Display + ?Sized>(&'static self, key: &K) -> Arc<P> {
        self.table().get(key)
    }

    /// The table of this name.
    #[inline]
    pub fn table(&'static self) -> &'static Keyed<P> {
        #[cfg(feature = "testing")]
        if let Some(t) = crate::scoped::keyed::<P>(self.name) {
            return t;
        }
        match self.table.get() {
            Some(t) => t,
            None => self.first_table(),
        }
    }

    #[cold]
    #[inline(never)]
    fn first_table(&'static self) -> &'static Keyed<P> {
        self.table
            .get_or_init(|| crate::global::pin_keyed::<P>(self.name))
    }
}

impl<P: GlobalPrimitive> fmt::Debug for KeyedCallSite<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedCallSite")
            .field("name", &self.name)
            .field("resolved", &self.table.get().is_some())
            .finish()
    }
}
