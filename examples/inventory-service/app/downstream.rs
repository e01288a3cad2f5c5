//! The simulated inventory service: the Java service's `InventoryHttpClient`
//! with an attempt counter, and a reservation endpoint that, like
//! any remote service, finishes its work whether or not the caller still waits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::app::domain::{
    InventoryError, InventoryStatus, InventoryView, Mode, Reservation, ReservationStatus, is_sku,
};

/// The units of every SKU when the simulation starts.
pub(crate) const INITIAL_STOCK: u32 = 10;

/// How long `slow` takes: longer than the 800 ms time limit.
pub(crate) const SLOW: Duration = Duration::from_millis(1200);

/// How long `sluggish` takes: over the 500 ms slow-call threshold, within the time limit.
pub(crate) const SLUGGISH: Duration = Duration::from_millis(600);

/// The client of the remote inventory, simulated in process.
///
/// Every request that leaves the client counts as one physical attempt, as
/// the Java client's `attempts` counter does: the number to compare with the
/// number of logical requests when retries are suspected.
#[derive(Debug)]
pub(crate) struct InventoryHttpClient {
    /// Added to every answer: the network and the inventory's own work.
    latency: Duration,
    attempts: AtomicU32,
    in_flight: AtomicU32,
    peak_in_flight: AtomicU32,
    remote: Arc<Remote>,
}

/// The inventory's own state, which the service can only learn by asking.
#[derive(Debug, Default)]
struct Remote {
    ledger: Mutex<Ledger>,
    reservation_requests: AtomicU32,
}

#[derive(Debug, Default)]
struct Ledger {
    /// Units left per SKU; a SKU not listed has `INITIAL_STOCK`.
    stock: HashMap<String, u32>,
    /// Reservations by idempotency key.
    reservations: HashMap<String, Reservation>,
}

impl Ledger {
    fn stock(&self, sku: &str) -> u32 {
        self.stock.get(sku).copied().unwrap_or(INITIAL_STOCK)
    }
}

impl Remote {
    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        // A panic while holding the lock leaves the ledger consistent: every
        // update is a single insert.
        self.ledger.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The inventory's side of a reservation: at most once per key.
    async fn reserve(
        &self,
        key: String,
        sku: String,
        quantity: u32,
        work: Duration,
    ) -> Result<Reservation, InventoryError> {
        {
            let mut ledger = self.ledger();
            if let Some(seen) = ledger.reservations.get_mut(&key) {
                if seen.sku_id != sku || seen.quantity != quantity {
                    return Err(InventoryError::KeyReused);
                }
                // A repeated request: answer what the first one did (or is doing).
                seen.requests += 1;
                return Ok(seen.clone());
            }
            ledger.reservations.insert(
                key.clone(),
                Reservation {
                    key: key.clone(),
                    sku_id: sku.clone(),
                    quantity,
                    status: ReservationStatus::Pending,
                    requests: 1,
                },
            );
        }
        tokio::time::sleep(work).await;
        let mut ledger = self.ledger();
        let left = ledger.stock(&sku);
        let status = if left >= quantity {
            ledger.stock.insert(sku, left - quantity);
            ReservationStatus::Confirmed
        } else {
            ReservationStatus::OutOfStock
        };
        let reservation = ledger
            .reservations
            .get_mut(&key)
            .expect("a pending reservation stays in the ledger");
        reservation.status = status;
        Ok(reservation.clone())
    }
}

impl InventoryHttpClient {
    /// A client whose inventory answers at once.
    pub(crate) fn new() -> Self {
        Self::with_latency(Duration::ZERO)
    }

    /// A client whose inventory takes `latency` for every answer.
    pub(crate) fn with_latency(latency: Duration) -> Self {
        InventoryHttpClient {
            latency,
            attempts: AtomicU32::new(0),
            in_flight: AtomicU32::new(0),
            peak_in_flight: AtomicU32::new(0),
            remote: Arc::default(),
        }
    }

    /// Asks the inventory for the stock of `sku`, behaving as `mode` says.
    ///
    /// # Errors
    ///
    /// `Unavailable` for `fail`, `ConnectionRefused` for `connect`,
    /// `InvalidSku` for a malformed SKU.
    pub(crate) async fn query(
        &self,
        sku: &str,
        mode: Mode,
    ) -> Result<InventoryView, InventoryError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let _in_flight = InFlight::enter(self);
        match mode {
            Mode::Connect => return Err(InventoryError::ConnectionRefused),
            Mode::Fail => {
                tokio::time::sleep(self.latency).await;
                return Err(InventoryError::Unavailable);
            }
            Mode::Slow => tokio::time::sleep(SLOW).await,
            Mode::Sluggish => tokio::time::sleep(SLUGGISH).await,
            Mode::Success => tokio::time::sleep(self.latency).await,
        }
        if !is_sku(sku) {
            return Err(InventoryError::InvalidSku);
        }
        let left = self.remote.ledger().stock(sku);
        let status = if left > 0 {
            InventoryStatus::Available
        } else {
            InventoryStatus::OutOfStock
        };
        Ok(InventoryView::confirmed(sku, status))
    }

    /// Asks the inventory to reserve `quantity` units of `sku` under the
    /// idempotency key `key`.
    ///
    /// The request is on the wire once this is called: dropping the returned
    /// future stops the wait for the answer, not the inventory's work, which
    /// goes on and commits (`slow` takes 1.2 s to do so). A repeated key gets
    /// the first request's reservation back, and the stock is taken once.
    ///
    /// # Errors
    ///
    /// `Unavailable` for `fail` and `ConnectionRefused` for `connect` (neither
    /// reserves anything), `InvalidSku`, and `KeyReused` when the key was
    /// used for another SKU or quantity.
    pub(crate) async fn reserve(
        &self,
        key: &str,
        sku: &str,
        quantity: u32,
        mode: Mode,
    ) -> Result<Reservation, InventoryError> {
        if mode == Mode::Connect {
            return Err(InventoryError::ConnectionRefused);
        }
        self.remote
            .reservation_requests
            .fetch_add(1, Ordering::SeqCst);
        let work = match mode {
            Mode::Fail => return Err(InventoryError::Unavailable),
            Mode::Slow => SLOW,
            Mode::Sluggish => SLUGGISH,
            Mode::Success | Mode::Connect => self.latency,
        };
        if !is_sku(sku) {
            return Err(InventoryError::InvalidSku);
        }
        let remote = Arc::clone(&self.remote);
        let (key, sku) = (key.to_owned(), sku.to_owned());
        // The inventory runs in its own task: the caller giving up does not
        // reach it, as a timed-out HTTP request does not undo the server's work.
        let work = tokio::spawn(async move { remote.reserve(key, sku, quantity, work).await });
        match work.await {
            Ok(answer) => answer,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }

    /// What the inventory knows of the reservation `key`: the fact to check
    /// after a write whose outcome the caller did not see.
    pub(crate) fn reservation(&self, key: &str) -> Option<Reservation> {
        self.remote.ledger().reservations.get(key).cloned()
    }

    /// The units of `sku` left in the inventory.
    #[allow(dead_code)] // read by tests/drills.rs
    pub(crate) fn stock(&self, sku: &str) -> u32 {
        self.remote.ledger().stock(sku)
    }

    /// The stock queries that left the client (physical attempts).
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::SeqCst)
    }

    /// The reservation requests that reached the inventory (refused
    /// connections do not).
    #[allow(dead_code)] // read by tests/drills.rs
    pub(crate) fn reservation_requests(&self) -> u32 {
        self.remote.reservation_requests.load(Ordering::SeqCst)
    }

    /// The most stock queries the inventory had in progress at once.
    #[allow(dead_code)] // read by tests/drills.rs
    pub(crate) fn peak_in_flight(&self) -> u32 {
        self.peak_in_flight.load(Ordering::SeqCst)
    }

    /// Starts counting attempts and the peak of concurrent queries again.
    #[allow(dead_code)] // read by tests/drills.rs
    pub(crate) fn reset(&self) {
        self.attempts.store(0, Ordering::SeqCst);
        self.peak_in_flight
            .store(self.in_flight.load(Ordering::SeqCst), Ordering::SeqCst);
    }
}

impl Default for InventoryHttpClient {
    fn default() -> Self {
        Self::new()
    }
}

/// Counts a query in progress until it ends, however it ends (a dropped
/// future included).
struct InFlight<'a>(&'a InventoryHttpClient);

impl<'a> InFlight<'a> {
    fn enter(client: &'a InventoryHttpClient) -> Self {
        let now = client.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        client.peak_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(client)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}
