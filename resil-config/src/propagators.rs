//! Context propagators that resilience.toml can name: a thread-pool
//! bulkhead's `context-propagators = ["tracing", "tenant"]` picks them by
//! name from those registered at link time with `resil::context_propagator!`.

use std::fmt;
use std::sync::Arc;

use resil_core::thread_pool_bulkhead::ContextPropagator;

/// One context propagator registered at link time under a name.
///
/// Build it with `resil::context_propagator!` (which submits it to
/// [`inventory`]); the fields are public for that macro. A propagator
/// registered with `default: true` is given to every thread-pool bulkhead
/// whose configuration does not list its propagators (`resil`'s `tracing`
/// feature registers the current span's, named `tracing`, that way); a
/// listed `context-propagators` replaces the defaults, and `[]` turns them off.
#[derive(Clone, Copy)]
pub struct NamedContextPropagator {
    #[doc(hidden)]
    pub name: &'static str,
    #[doc(hidden)]
    pub make: fn() -> Arc<dyn ContextPropagator>,
    #[doc(hidden)]
    pub default: bool,
}

inventory::collect!(NamedContextPropagator);

impl NamedContextPropagator {
    /// The name resilience.toml gives it.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether thread-pool bulkheads get it when they list no propagators.
    pub fn is_default(&self) -> bool {
        self.default
    }

    /// A new instance of the propagator.
    pub fn propagator(&self) -> Arc<dyn ContextPropagator> {
        (self.make)()
    }
}

impl fmt::Debug for NamedContextPropagator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamedContextPropagator")
            .field("name", &self.name)
            .field("default", &self.default)
            .finish_non_exhaustive()
    }
}

/// Every registered propagator, sorted by name.
pub fn context_propagators() -> Vec<&'static NamedContextPropagator> {
    let mut all: Vec<_> = inventory::iter::<NamedContextPropagator>
        .into_iter()
        .collect();
    all.sort_by_key(|p| p.name);
    all
}

/// The registered propagator named `name`.
pub(crate) fn find(name: &str) -> Option<&'static NamedContextPropagator> {
    inventory::iter::<NamedContextPropagator>
        .into_iter()
        .find(|p| p.name == name)
}

/// The propagators every thread-pool bulkhead gets unless it lists its own.
pub(crate) fn defaults() -> impl Iterator<Item = &'static NamedContextPropagator> {
    context_propagators().into_iter().filter(|p| p.default)
}
