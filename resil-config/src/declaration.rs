//! One protected function as its attribute declared it, and every one
//! linked into the binary: below the reports and the global registries that
//! name them ([`declared`](crate::declared) says which are linked).

use std::cmp::Ordering;
use std::fmt;

use crate::aspect::Aspect;

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
