//! Scopes: private registries that the call sites of one thread (or of one
//! future, while it is polled) use instead of the global ones, for tests
//! that run in parallel in one binary (the `testing` feature; the user's
//! face is `resil::testing`).
//!
//! While no scope exists, a call site pays one relaxed load for this. In a
//! scope, a call site looks its instance up by name in the scope's
//! registries (a lock and a map: test speed, not production speed) and the
//! instance is kept for the scope's life; instances a scope made are leaked
//! when it ends (a few hundred bytes each), which tests can afford and which
//! keeps a call site's `&'static` reference sound.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use resil_core::clock::SharedClock;
use resil_core::fault::Faults;

use crate::global::{GlobalPrimitive, Registries};
use crate::keyed_table::Keyed;
use crate::report::Report;

/// Scopes alive in the process: zero is the one load a call site pays.
static ALIVE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The scopes entered on this thread, innermost last.
    static CURRENT: RefCell<Vec<Arc<Scope>>> = const { RefCell::new(Vec::new()) };
}

type Pinned = &'static (dyn Any + Send + Sync);

/// Private registries, their report, their faults, and what the call sites
/// that ran in the scope took from them.
pub struct Scope {
    registries: Registries,
    report: Report,
    clock: SharedClock,
    faults: &'static Faults,
    pinned: Mutex<HashMap<(TypeId, &'static str), Pinned>>,
}

impl Scope {
    /// A scope of `registries` (and `report`, which they were built with),
    /// on `clock`: the faults the report enables are in force in it.
    pub fn new(registries: Registries, report: Report, clock: SharedClock) -> Arc<Scope> {
        let faults: &'static Faults = Box::leak(Box::new(Faults::new()));
        let enabled = report.enabled_faults().into_iter().collect();
        faults.configure_all(&enabled, &clock);
        ALIVE.fetch_add(1, Ordering::AcqRel);
        Arc::new(Scope {
            registries,
            report,
            clock,
            faults,
            pinned: Mutex::new(HashMap::new()),
        })
    }

    /// Its registries.
    pub fn registries(&self) -> &Registries {
        &self.registries
    }

    /// What loading its configuration reported.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Its clock.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// Its faults (`[fault.instances.*]` of its configuration).
    pub fn faults(&self) -> &'static Faults {
        self.faults
    }

    /// What `make` gives, once per scope and `(T, name)`, kept (and leaked)
    /// for the scope's call sites.
    pub fn pin<T: Any + Send + Sync>(
        &self,
        name: &'static str,
        make: impl FnOnce() -> T,
    ) -> &'static T {
        let key = (TypeId::of::<T>(), name);
        let mut pinned = crate::sync::lock(&self.pinned);
        let any: Pinned = match pinned.get(&key) {
            Some(p) => *p,
            None => {
                let leaked: &'static T = Box::leak(Box::new(make()));
                pinned.insert(key, leaked);
                leaked
            }
        };
        any.downcast_ref::<T>()
            .expect("a pinned value has the type it was pinned with")
    }

    /// Makes this scope the current one on this thread until the guard is
    /// dropped (scopes nest: the innermost is current).
    pub fn enter(self: &Arc<Self>) -> Entered {
        CURRENT.with(|c| c.borrow_mut().push(Arc::clone(self)));
        Entered {
            _thread: PhantomData,
        }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        ALIVE.fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope").finish_non_exhaustive()
    }
}

/// A scope entered on this thread; leaving it when dropped. Not `Send`:
/// it is the thread's.
#[derive(Debug)]
pub struct Entered {
    _thread: PhantomData<*const ()>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        CURRENT.with(|c| {
            c.borrow_mut().pop();
        });
    }
}

/// The scope current on this thread, if any scope exists at all.
#[inline]
pub fn current() -> Option<Arc<Scope>> {
    if ALIVE.load(Ordering::Relaxed) == 0 {
        return None;
    }
    current_slow()
}

#[cold]
fn current_slow() -> Option<Arc<Scope>> {
    CURRENT
        .try_with(|c| c.borrow().last().cloned())
        .ok()
        .flatten()
}

/// The instance a call site of `name` uses in the current scope.
pub(crate) fn instance<P: GlobalPrimitive>(name: &'static str) -> Option<&'static P> {
    let scope = current()?;
    let held: &'static Arc<P> = scope.pin(name, || {
        let registry = P::registry(&scope.registries);
        registry.get_or_create(name, || registry.default_config())
    });
    Some(held)
}

/// The keyed table a keyed call site of `name` uses in the current scope.
pub(crate) fn keyed<P: GlobalPrimitive>(name: &'static str) -> Option<&'static Keyed<P>> {
    let scope = current()?;
    let named = instance::<P>(name)?;
    let held: &'static Arc<Keyed<P>> = scope.pin(name, || {
        crate::global::keyed_table(&scope.registries, Some(&scope.report), named, name)
    });
    Some(held)
}
