//! What the service answers: the Java service's `InventoryStatus` and
//! `InventoryView`, the reservation records of the write path, and the
//! error type the protected calls return.

use resil::{Error, Rejection};
use serde::{Deserialize, Serialize};

/// The stock status of a SKU, as the business sees it.
///
/// `Unknown` is what a degraded answer says: the service could not ask the
/// inventory, so it does not know. A fallback never guesses `Available`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub(crate) enum InventoryStatus {
    Available,
    OutOfStock,
    Unknown,
}

/// The answer to `GET /inventory/{sku}`: the Java service's `InventoryView` record,
/// serialized with the same field names as the Java service (`skuId`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InventoryView {
    pub(crate) sku_id: String,
    pub(crate) status: InventoryStatus,
    /// `true` when the answer did not come from the inventory.
    pub(crate) degraded: bool,
    /// `CONFIRMED` for an answer of the inventory; for a degraded one, the
    /// kind of the failure (`Unavailable`, `Timeout`, `CallNotPermitted`, ...).
    pub(crate) reason: String,
}

impl InventoryView {
    /// What the inventory confirmed.
    pub(crate) fn confirmed(sku: &str, status: InventoryStatus) -> Self {
        InventoryView {
            sku_id: sku.to_owned(),
            status,
            degraded: false,
            reason: "CONFIRMED".to_owned(),
        }
    }

    /// The degraded answer: the stock is unknown, and `reason` says why.
    pub(crate) fn unknown(sku: &str, reason: &str) -> Self {
        InventoryView {
            sku_id: sku.to_owned(),
            status: InventoryStatus::Unknown,
            degraded: true,
            reason: reason.to_owned(),
        }
    }
}

/// How the simulated inventory behaves for one request (`?mode=`), the
/// Java service's four modes plus `sluggish`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Mode {
    /// Answers at once (after the client's base latency).
    #[default]
    Success,
    /// Answers `503` (the Java service's `IllegalStateException("inventory 503")`).
    Fail,
    /// Refuses the connection (the Java service's `InventoryConnectionException`).
    Connect,
    /// Answers after 1.2 s: longer than the 800 ms time limit.
    Slow,
    /// Answers after 600 ms: a slow call (over the 500 ms threshold) that
    /// still succeeds within the time limit.
    Sluggish,
}

/// A reservation, as the inventory records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Reservation {
    /// The `Idempotency-Key` the client chose.
    pub(crate) key: String,
    pub(crate) sku_id: String,
    pub(crate) quantity: u32,
    pub(crate) status: ReservationStatus,
    /// How many requests with this key reached the inventory; the stock was
    /// taken once whatever this says.
    pub(crate) requests: u32,
}

/// Where a reservation stands in the inventory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub(crate) enum ReservationStatus {
    /// The inventory received it and is still working on it.
    Pending,
    /// The stock is taken.
    Confirmed,
    /// Not enough stock: a business answer, not a failure.
    OutOfStock,
}

/// The body of `POST /inventory/{sku}/reservations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ReserveBody {
    pub(crate) quantity: u32,
}

/// The errors of calls to the inventory.
///
/// The kind names (`#[derive(Classify)]`) are what resilience.toml's
/// `retry-errors` and `ignore-errors` name.
#[derive(Debug, Clone, PartialEq, Eq, resil::Classify)]
pub(crate) enum InventoryError {
    /// The connection was refused: nothing reached the inventory, so this is
    /// the one error worth retrying.
    ConnectionRefused,
    /// The inventory answered 503.
    Unavailable,
    /// Not a SKU (`SKU-` and digits): the caller's mistake, which says nothing
    /// about the inventory's health; neither retried nor counted by the
    /// breaker.
    InvalidSku,
    /// The `Idempotency-Key` was used before for a different request.
    KeyReused,
    /// A resilience layer refused the call or stopped waiting for it.
    Rejected(Rejection),
}

impl From<Rejection> for InventoryError {
    fn from(r: Rejection) -> Self {
        InventoryError::Rejected(r)
    }
}

impl InventoryError {
    /// The failure's kind, for a degraded answer's `reason`.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            InventoryError::Rejected(r) => Error::<()>::from(r.clone())
                .rejection_kind()
                .unwrap_or("Rejected"),
            other => resil::Classify::kind(other),
        }
    }
}

/// The kind of any failure of a protected call, rejections included.
pub(crate) fn reason(error: &Error<InventoryError>) -> &'static str {
    match error {
        Error::Inner(e) => e.reason(),
        other => other.rejection_kind().unwrap_or("Rejected"),
    }
}

/// Whether `sku` names a SKU: `SKU-` followed by digits.
pub(crate) fn is_sku(sku: &str) -> bool {
    sku.strip_prefix("SKU-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}
