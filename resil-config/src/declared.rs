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

use std::cmp::Ordering;
use std::fmt;
use std::marker::PhantomData;
use std::sync::OnceLock;

use resil_core::Classify;

pub use crate::aspect::Aspect;
use crate::global::GlobalPrimitive;

/// One protected function, as an attribute macro declared it.
///
/// The macros build it with a struct literal inside the function body
/// (fields are public for them, hidden from the documentation) and submit it
/// with `::resil::__private::inventory::submit!`; everything in it is
/// `'static` constant data. Read it through the getters.
///
/// # Examples
///
/// What an expansion of
/// `#[circuit_breaker(name = "inventory-query", fallback = Self::unknown)]`
/// on `fn query(..) -> Result<View, InventoryError>` submits:
///
/// ```
/// use resil_config::{Aspect, Declaration};
/// # #[allow(dead_code)] #[derive(Debug)] enum InventoryError { ConnectionRefused, OutOfStock }
/// # impl resil_core::Classify for InventoryError {
/// #     const KINDS: &'static [&'static str] = &["ConnectionRefused", "OutOfStock"];
/// #     fn kind(&self) -> &'static str { Self::KINDS[0] }
/// # }
///
/// const DECLARED: Declaration = Declaration {
///     aspect: Aspect::CircuitBreaker,
///     name: "inventory-query",
///     module: module_path!(),
///     function: "query",
///     file: file!(),
///     line: line!(),
///     fallback: Some("Self::unknown"),
///     error_type: "InventoryError",
///     error_kinds: {
///         #[allow(unused_imports)] // used only when the type has no kinds
///         use resil_config::declared::NoKinds as _;
///         resil_config::declared::KindsOf::<InventoryError>::KINDS
///     },
///     detachable: false,
/// };
/// assert_eq!(DECLARED.error_kinds(), ["ConnectionRefused", "OutOfStock"]);
/// assert!(DECLARED.path().ends_with("::query"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Declaration {
    #[doc(hidden)]
    pub aspect: Aspect,
    #[doc(hidden)]
    pub name: &'static str,
    #[doc(hidden)]
    pub module: &'static str,
    #[doc(hidden)]
    pub function: &'static str,
    #[doc(hidden)]
    pub file: &'static str,
    #[doc(hidden)]
    pub line: u32,
    #[doc(hidden)]
    pub fallback: Option<&'static str>,
    #[doc(hidden)]
    pub error_type: &'static str,
    #[doc(hidden)]
    pub error_kinds: &'static [&'static str],
    #[doc(hidden)]
    pub detachable: bool,
}

inventory::collect!(Declaration);

impl Declaration {
    /// The aspect the attribute declares.
    pub fn aspect(&self) -> Aspect {
        self.aspect
    }
    /// The instance name (`name = "..."`).
    pub fn name(&self) -> &'static str {
        self.name
    }
    /// `module_path!()` where the function is.
    pub fn module(&self) -> &'static str {
        self.module
    }
    /// The function's name.
    pub fn function(&self) -> &'static str {
        self.function
    }
    /// The function's path: module and name.
    pub fn path(&self) -> String {
        format!("{}::{}", self.module, self.function)
    }
    /// The source file of the attribute.
    pub fn file(&self) -> &'static str {
        self.file
    }
    /// The line of the attribute.
    pub fn line(&self) -> u32 {
        self.line
    }
    /// The fallback as written (`Self::unknown_inventory`), if any.
    pub fn fallback(&self) -> Option<&'static str> {
        self.fallback
    }
    /// The error type of the function's `Result`, as written.
    pub fn error_type(&self) -> &'static str {
        self.error_type
    }
    /// A `#[time_limiter]` whose future owns what it uses (an async
    /// function of owned arguments, without a fallback that needs them), so
    /// that `cancel-running-future = false` leaves it running after a
    /// timeout; `false` for every other attribute.
    pub fn detachable(&self) -> bool {
        self.detachable
    }
    /// The kind names of the error type (`#[derive(resil::Classify)]`), empty
    /// when it has none.
    pub fn error_kinds(&self) -> &'static [&'static str] {
        self.error_kinds
    }

    fn sort_key(&self) -> (Aspect, &str, &str, u32, &str, &str) {
        (
            self.aspect,
            self.name,
            self.module,
            self.line,
            self.function,
            self.file,
        )
    }
}

impl PartialOrd for Declaration {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Declaration {
    /// By aspect, name, module, line.
    fn cmp(&self, other: &Self) -> Ordering {
        self.sort_key().cmp(&other.sort_key())
    }
}

impl fmt::Display for Declaration {
    /// ``circuitbreaker `inventory-query` at inventory::query (src/inventory.rs:12)``
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} `{}` at {}::{} ({}:{})",
            self.aspect, self.name, self.module, self.function, self.file, self.line
        )
    }
}

/// Every declaration linked into this binary, sorted by aspect, name, module and line.
///
/// Call it after `main` started (never from another constructor).
///
/// # Examples
///
/// ```
/// // a doctest declares nothing
/// assert!(resil_config::declarations().is_empty());
/// ```
pub fn declarations() -> Vec<&'static Declaration> {
    let mut all: Vec<_> = inventory::iter::<Declaration>.into_iter().collect();
    all.sort();
    all
}

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
