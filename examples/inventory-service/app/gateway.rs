//! The calls to the inventory, protected: the Java service's
//! `InventoryGateway` with resil's attributes and, line by line, through the
//! Spring Cloud facade; its `NativeInventoryGateway` composed by hand; and
//! the write path.

use std::sync::Arc;

use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerClassifier};
use resil::cloud::CircuitBreakerFactory;
use resil::config::Registries;
use resil::retry::{Retry, RetryClassifier};
use resil::{Decorators, Error};

use crate::app::domain::{InventoryError, InventoryView, Mode, Reservation, reason};
use crate::app::downstream::InventoryHttpClient;

/// Stock queries through the attributes, in Resilience4j's order:
/// `Retry(CircuitBreaker(TimeLimiter(Bulkhead(query))))`.
///
/// Every threshold comes from `[*.instances.inventory-query]` in
/// resilience.toml: the retry retries only `ConnectionRefused`, the breaker
/// ignores `InvalidSku`, the bulkhead admits 20 calls without waiting, and
/// the time limiter gives up after 800 ms.
#[derive(Debug, Clone)]
pub(crate) struct InventoryGateway {
    client: Arc<InventoryHttpClient>,
}

impl InventoryGateway {
    pub(crate) fn new(client: Arc<InventoryHttpClient>) -> Self {
        InventoryGateway { client }
    }

    /// The stock of `sku`; when the inventory cannot say, an `UNKNOWN`
    /// answer with `degraded = true` and the reason.
    ///
    /// # Errors
    ///
    /// Only the caller's mistakes (`InvalidSku`): a fallback answers every
    /// failure of the inventory and every rejection; and, when the request's
    /// deadline (`[deadline.instances.inventory-query]`, or a caller's that
    /// ends earlier) has passed, `DeadlineExceeded`.
    #[resil::deadline(name = "inventory-query")]
    #[resil::retry(name = "inventory-query", fallback = Self::unknown_inventory)]
    #[resil::circuit_breaker(name = "inventory-query")]
    #[resil::time_limiter(name = "inventory-query")]
    #[resil::bulkhead(name = "inventory-query")]
    pub(crate) async fn query(
        &self,
        sku: &str,
        mode: Mode,
    ) -> Result<InventoryView, InventoryError> {
        self.client.query(sku, mode).await
    }

    /// The stock of `sku`, hedged (`[hedge.instances.inventory-read]`): when
    /// the inventory has not answered within the 90th percentile of its
    /// recent answers (150 ms until it has seen enough of them), the query
    /// goes out again beside the first, and the first answer wins; the other
    /// query is dropped. A read may run twice at once; the write path is
    /// never hedged. When both fail, the answer is `UNKNOWN`, as for
    /// [`InventoryGateway::query`].
    ///
    /// # Errors
    ///
    /// Only the caller's mistakes (`InvalidSku`).
    #[resil::hedge(name = "inventory-read", fallback = Self::unknown_inventory)]
    pub(crate) async fn read(
        &self,
        sku: &str,
        mode: Mode,
    ) -> Result<InventoryView, InventoryError> {
        self.client.query(sku, mode).await
    }

    /// The fallback of the outermost layer, so that it runs once the retry
    /// is done (a fallback on the breaker would answer before the retry could
    /// try again). It says that the stock is unknown, never that it is there.
    async fn unknown_inventory(
        &self,
        sku: &str,
        _mode: Mode,
        error: Error<InventoryError>,
    ) -> Result<InventoryView, InventoryError> {
        degrade(sku, error)
    }
}

/// Answers a failure with `UNKNOWN`; the caller's own mistakes stay errors,
/// so that a fallback does not hide them.
fn degrade(sku: &str, error: Error<InventoryError>) -> Result<InventoryView, InventoryError> {
    match error {
        Error::Inner(e @ (InventoryError::InvalidSku | InventoryError::KeyReused)) => Err(e),
        other => Ok(InventoryView::unknown(sku, reason(&other))),
    }
}

/// The Java service's `InventoryGateway` as it is written there, on Spring Cloud's
/// facade: `factory.create("inventory-query", "inventory-service")` and
/// `breaker.run(() -> client.query(skuId, mode), fallback)`.
///
/// The breaker and the time limiter are the `inventory-query` instances of
/// resilience.toml (the id's, which Spring Cloud takes first), shared with
/// the attributes' route; the bulkhead is the group's, `inventory-service`
/// (`[bulkhead.configs.inventory-service]`). There is no retry: Spring
/// Cloud's `run` composes TimeLimiter, Bulkhead and CircuitBreaker only
/// (`Resilience4JCircuitBreaker`).
#[derive(Debug, Clone)]
pub(crate) struct CloudInventoryGateway {
    factory: Arc<CircuitBreakerFactory>,
    client: Arc<InventoryHttpClient>,
}

impl CloudInventoryGateway {
    pub(crate) fn new(registries: &'static Registries, client: Arc<InventoryHttpClient>) -> Self {
        CloudInventoryGateway {
            factory: Arc::new(
                CircuitBreakerFactory::builder()
                    .static_registries(registries)
                    .build(),
            ),
            client,
        }
    }

    /// The stock of `sku`, or, for any failure, an `UNKNOWN` answer whose
    /// reason is the failure's kind (the Java `error.getClass().getSimpleName()`).
    pub(crate) async fn query(&self, sku: &str, mode: Mode) -> InventoryView {
        let breaker = self
            .factory
            .create_in_group("inventory-query", "inventory-service");
        let fallback = |error: Error<InventoryError>| InventoryView::unknown(sku, reason(&error));
        breaker
            .run_async_with(&BREAKER, || self.client.query(sku, mode), fallback)
            .await
    }
}

/// The Java service's `NativeInventoryGateway`: Retry outside
/// CircuitBreaker, written out so that the order can be read and tested.
///
/// Each physical attempt passes through the breaker on its own; swapping the
/// two would let the breaker see only the retry's final outcome. The
/// instances are the registries' `inventory-query` ones, the same the
/// attributes use in the service.
#[derive(Debug, Clone)]
pub(crate) struct NativeInventoryGateway {
    breaker: Arc<CircuitBreaker>,
    retry: Arc<Retry>,
    client: Arc<InventoryHttpClient>,
}

/// The breaker names errors by their kinds, for `ignore-errors`.
const BREAKER: CircuitBreakerClassifier<InventoryView, InventoryError> =
    CircuitBreakerClassifier::classified();
/// The retry names errors by their kinds, for `retry-errors`.
const RETRY: RetryClassifier<InventoryView, InventoryError> = RetryClassifier::classified();

impl NativeInventoryGateway {
    pub(crate) fn new(registries: &Registries, client: Arc<InventoryHttpClient>) -> Self {
        NativeInventoryGateway {
            breaker: registries
                .circuit_breakers()
                .circuit_breaker("inventory-query"),
            retry: registries.retries().retry("inventory-query"),
            client,
        }
    }

    /// The breaker this gateway goes through.
    #[allow(dead_code)] // read by tests/drills.rs
    pub(crate) fn breaker(&self) -> &CircuitBreaker {
        &self.breaker
    }

    /// The retry this gateway goes through.
    #[allow(dead_code)] // read by tests/drills.rs
    pub(crate) fn retry(&self) -> &Retry {
        &self.retry
    }

    /// As [`InventoryGateway::query`].
    ///
    /// # Errors
    ///
    /// As [`InventoryGateway::query`].
    pub(crate) async fn query(
        &self,
        sku: &str,
        mode: Mode,
    ) -> Result<InventoryView, InventoryError> {
        // Retry outside the breaker, as the attributes compose them.
        let retry_outside_circuit = Decorators::new()
            .with_retry_classified(&self.retry, RETRY)
            .with_circuit_breaker_classified(&self.breaker, BREAKER)
            .call_async(|| self.client.query(sku, mode))
            .await;
        match retry_outside_circuit {
            Ok(view) => Ok(view),
            Err(error) => degrade(sku, error),
        }
    }
}

/// Reservations: the write path, bounded by its own time limiter and
/// bulkhead (`inventory-reserve`), so that a flood of slow stock queries
/// cannot take its capacity.
///
/// It has no retry and no fallback. A write that timed out may still happen
/// in the inventory (the caller's timeout does not stop it), so it is never
/// repeated blindly nor answered with a guess: the caller learns that the
/// outcome is unknown and asks the inventory for the fact, or repeats the
/// request with the same idempotency key, which cannot reserve twice.
#[derive(Debug, Clone)]
pub(crate) struct ReservationGateway {
    client: Arc<InventoryHttpClient>,
}

impl ReservationGateway {
    pub(crate) fn new(client: Arc<InventoryHttpClient>) -> Self {
        ReservationGateway { client }
    }

    /// Reserves `quantity` units of `sku` under the idempotency key `key`.
    ///
    /// # Errors
    ///
    /// The inventory's errors, and `Rejected` with the time limiter's
    /// `Timeout` or the bulkhead's `BulkheadFull`.
    #[resil::time_limiter(name = "inventory-reserve")]
    #[resil::bulkhead(name = "inventory-reserve")]
    pub(crate) async fn reserve(
        &self,
        key: &str,
        sku: &str,
        quantity: u32,
        mode: Mode,
    ) -> Result<Reservation, InventoryError> {
        self.client.reserve(key, sku, quantity, mode).await
    }

    /// The inventory's record of the reservation `key`, if it has one.
    pub(crate) fn fact(&self, key: &str) -> Option<Reservation> {
        self.client.reservation(key)
    }
}
