//! Error kinds: names for the variants of an error type, so that
//! resilience.toml can say which errors a breaker records or ignores and
//! which errors a retry retries.
//!
//! `#[derive(resil::Classify)]` implements [`Classify`] for an enum: each
//! variant's kind is its name (`ConnectionRefused`), or the name given with
//! `#[classify(kind = "...")]`.

/// An error type whose values have kind names.
///
/// # Examples
///
/// ```
/// use resil_core::Classify;
///
/// enum InventoryError { ConnectionRefused, OutOfStock }
///
/// impl Classify for InventoryError {
///     const KINDS: &'static [&'static str] = &["ConnectionRefused", "OutOfStock"];
///     fn kind(&self) -> &'static str {
///         match self {
///             InventoryError::ConnectionRefused => "ConnectionRefused",
///             InventoryError::OutOfStock => "OutOfStock",
///         }
///     }
/// }
/// assert_eq!(InventoryError::OutOfStock.kind(), "OutOfStock");
/// assert_eq!(InventoryError::ConnectionRefused.kind(), InventoryError::KINDS[0]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no error kinds",
    note = "derive them with `#[derive(resil::Classify)]` on the error enum"
)]
pub trait Classify {
    /// Every kind name this type can return from [`Classify::kind`].
    const KINDS: &'static [&'static str];

    /// The kind name of this error.
    fn kind(&self) -> &'static str;
}

/// Returns `kind` when one of `kinds` names it.
pub(crate) fn listed(kinds: &[Box<str>], kind: Option<&'static str>) -> bool {
    match kind {
        Some(k) => kinds.iter().any(|n| &**n == k),
        None => false,
    }
}
