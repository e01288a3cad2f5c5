//! The link-time registry: what the code declares, and the per-call-site cache.
//!
//! Every `#[circuit_breaker]`, `#[retry]`, ... attribute submits one
//! [`Declaration`] through [`inventory`]: the aspect, the instance name, the
//! function, where it is, its fallback and the error kinds its error type
//! knows. [`declarations`] reads them back (sorted), and [`init`](crate::init)
//! checks them against resilience.toml.
//!
//! # The linking rule
//!
//! A declaration exists only if the code that holds it is linked into the
//! binary. Rust links a dependency only when the binary *names* it: a library
//! whose protected functions live in a crate that `main` never mentions (no
//! `use`, no call) is left out, and so are its declarations, on every
//! platform and with every linker. The [`Report`](crate::Report) prints how
//! many declarations it found so that a missing crate shows; name the crate
//! (`use inventory_service as _;`) to link it. Integration tests see the
//! declarations of the crates they name. On targets where `inventory` has no
//! life-before-main support the list is empty, and everything still runs on
//! the configuration.
//!
//! # Per-call-site cache
//!
//! Generated code keeps a `static` [`CallSite`] per protected function. Its
//! first call looks the instance up in the global registries (building them
//! on the defaults if [`init`](crate::init) was not called); every later call
//! costs one atomic load.

use std::fmt;
use std::marker::PhantomData;
use std::sync::OnceLock;

use resil_core::Classify;

pub use crate::aspect::Aspect;
pub use crate::declaration::{Declaration, declarations};
use crate::global::GlobalPrimitive;

/// The error kinds of `E`: `E::KINDS` when `E` implements [`Classify`], else
/// none (through [`NoKinds`], which must be in scope).
///
/// This lets a macro fill [`Declaration::error_kinds`] in a constant without
/// knowing whether the error type derives `Classify`. It works for concrete
/// types; inside a generic function, where `E` is a parameter, use `&[]`.
///
/// # Examples
///
/// ```
/// use resil_config::declared::{KindsOf, NoKinds as _};
/// # #[allow(dead_code)] enum Classified { A }
/// # impl resil_core::Classify for Classified {
/// #     const KINDS: &'static [&'static str] = &["A"];
/// #     fn kind(&self) -> &'static str { "A" }
/// # }
///
/// assert_eq!(KindsOf::<Classified>::KINDS, ["A"]);
/// assert!(KindsOf::<std::io::Error>::KINDS.is_empty());
/// ```
#[derive(Debug)]
pub struct KindsOf<E: ?Sized>(PhantomData<E>);

/// The fallback of [`KindsOf`] for error types without kinds.
pub trait NoKinds {
    /// No kinds.
    const KINDS: &'static [&'static str] = &[];
}

impl<E: ?Sized> NoKinds for KindsOf<E> {}

impl<E: Classify + ?Sized> KindsOf<E> {
    /// `E`'s kinds.
    pub const KINDS: &'static [&'static str] = E::KINDS;
}

/// The instance a protected function uses, cached in a `static` of the generated code.
///
/// The first [`get`](CallSite::get) finds (or creates) the instance of this
/// name in the global registries; every later one is a single atomic load.
/// The global registries are built once per process (by
/// [`init`](crate::init), or on the defaults at the first call), and
/// [`init`](crate::init) refuses to replace them afterwards, so a cached
/// instance is never stale. Removing or replacing an instance in a global
/// registry by hand does not reach call sites that already cached it; resil
/// logs a warning through `tracing` when that happens.
///
/// # Examples
///
/// ```
/// use resil_config::CallSite;
/// use resil_core::circuit_breaker::CircuitBreaker;
///
/// fn query() -> Result<u32, resil_core::Error<std::io::Error>> {
///     static SITE: CallSite<CircuitBreaker> = CallSite::new("inventory-query");
///     SITE.get().call(|| Ok(7))
/// }
/// assert_eq!(query().unwrap(), 7);
/// ```
pub struct CallSite<P: 'static> {
    name: &'static str,
    instance: OnceLock<&'static P>,
}

impl<P: 'static> CallSite<P> {
    /// A call site for the instance named `name`; nothing is looked up until the first call.
    pub const fn new(name: &'static str) -> Self {
        CallSite {
            name,
            instance: OnceLock::new(),
        }
    }

    /// The instance name.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl<P: GlobalPrimitive> CallSite<P> {
    /// The instance: looked up once, then one atomic load.
    #[inline]
    pub fn get(&'static self) -> &'static P {
        #[cfg(feature = "testing")]
        if let Some(p) = crate::scoped::instance::<P>(self.name) {
            return p;
        }
        match self.instance.get() {
            Some(p) => p,
            None => self.first_get(),
        }
    }

    #[cold]
    #[inline(never)]
    fn first_get(&'static self) -> &'static P {
        self.instance
            .get_or_init(|| crate::global::pin::<P>(self.name))
    }
}

impl<P> fmt::Debug for CallSite<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallSite")
            .field("name", &self.name)
            .field("resolved", &self.instance.get().is_some())
            .finish()
    }
}
