//! Ten fault drills, each an exact test against the
//! inventory service's own components (`examples/inventory-service`), with
//! the repository's `resilience.toml` and paused tokio time.
//!
//! Failures and slow calls are injected with fault injection, as an
//! operator injects them (drill 1 through the actuator's route), where a
//! drill needs no particular answer of the inventory; the simulated
//! inventory's own modes serve where it does: one probe slower than the
//! others (drill 5), a slow write that still commits (drill 7), the errors
//! a retry or a fallback tells apart (drills 8 and 9).
//!
//! The attributes use the process-wide registries, so the drills that go
//! through them take turns (`Drill::start`), and each starts from a CLOSED,
//! empty breaker and a fresh simulated inventory.

#[allow(dead_code)] // a test binary uses only part of the example
#[path = "../examples/inventory-service/app/mod.rs"]
mod app;
mod support_drills;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use resil::chain::{Call, Lift, Stack};
use resil::circuit_breaker::{CircuitBreakerClassifier, CircuitBreakerEvent, State};
use resil::fault::FaultConfig;
use resil::retry::RetryClassifier;
use serde_json::{Value, json};

use crate::app::domain::{InventoryError, Mode, ReservationStatus};
use crate::app::downstream::{INITIAL_STOCK, InventoryHttpClient, SLOW};
use crate::app::gateway::NativeInventoryGateway;
use crate::support_drills::{
    DRILL_TOKEN, Drill, EndFault, FAILED_CALLS, FAILURE_RATE, Log, NOT_PERMITTED, OPEN_WAIT, PAST,
    SKU, STATE_CLOSED, STATE_OPEN, SUCCESSFUL_CALLS, available, local_registries, metric,
    prometheus, send, send_authorized, send_text, unknown, until,
};

/// Drill 1: the inventory fails every call, by a fault injected with the
/// actuator (`POST /actuator/faults/inventory-query`, as the runbook's
/// drill does, no code change); the breaker opens on the 10th call
/// (`minimum-number-of-calls`), not before, and the inventory itself is
/// never called. The fault ends at `DELETE`, and the breaker's OPEN stays
/// to recover as from a real outage.
#[tokio::test(start_paused = true)]
async fn drill_01_continuous_failures_open_after_the_minimum_calls() {
    let d = Drill::start(Duration::ZERO).await;
    let _ends = EndFault("inventory-query");
    let router = app::service(
        d.inventory.clone(),
        &app::actuator(prometheus(), Some(DRILL_TOKEN.to_owned())),
    );
    let (status, body) = send_authorized(
        &router,
        "POST",
        "/actuator/faults/inventory-query",
        Some(json!({"abortPercent": 100, "for": "10m"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for call in 1..=9 {
        assert_eq!(d.query(Mode::Success).await, unknown("FaultInjected"));
        assert_eq!(d.breaker.state(), State::Closed, "after call {call}");
        // below the minimum, the rate is not computed
        assert_eq!(d.breaker.metrics().failure_rate(), -1.0);
    }
    assert_eq!(d.query(Mode::Success).await, unknown("FaultInjected"));
    assert_eq!(d.breaker.state(), State::Open);
    let m = d.breaker.metrics();
    assert_eq!(m.failure_rate(), 100.0);
    assert_eq!(m.number_of_buffered_calls(), 10);
    assert_eq!(m.number_of_failed_calls(), 10);
    // an aborted call never reaches the inventory, and is not retried
    // (`retry-errors` names ConnectionRefused only)
    assert_eq!(d.client.attempts(), 0);
    assert_eq!(d.transitions(), [(State::Closed, State::Open)]);

    let (status, body) =
        send_authorized(&router, "DELETE", "/actuator/faults/inventory-query", None).await;
    assert_eq!((status, &body["stopped"]), (StatusCode::OK, &json!(true)));
    assert_eq!(
        d.query(Mode::Success).await,
        unknown("CallNotPermitted"),
        "the fault is over; the breaker recovers as from a real outage"
    );
}

/// Drill 2: every call succeeds, but some slowly, delayed by an injected
/// fault of 600 ms (past the 500 ms slow-call threshold, within the time
/// limiter's 800 ms); the slow-call rate opens the breaker at 60 % of 10
/// calls, and 50 % does not.
#[tokio::test(start_paused = true)]
async fn drill_02_slow_successes_trip_the_slow_call_rate() {
    let d = Drill::start(Duration::ZERO).await;
    let slow = || {
        FaultConfig::builder()
            .delay(Duration::from_millis(600))
            .delay_percent(100.0)
    };
    // 5 fast and 5 slow: 50 %, below the threshold
    for _ in 0..5 {
        assert_eq!(d.query(Mode::Success).await, available());
    }
    let fault = d.inject(slow());
    for _ in 0..5 {
        let started = d.now();
        assert_eq!(d.query(Mode::Success).await, available());
        assert_eq!(d.now() - started, Duration::from_millis(600));
    }
    drop(fault);
    assert_eq!(d.breaker.metrics().slow_call_rate(), 50.0);
    assert_eq!(d.breaker.state(), State::Closed);

    d.breaker.reset();
    // 4 fast and 6 slow: 60 %, the threshold
    for _ in 0..4 {
        assert_eq!(d.query(Mode::Success).await, available());
    }
    let _fault = d.inject(slow());
    for call in 1..=6 {
        assert_eq!(d.query(Mode::Success).await, available());
        let expected = if call < 6 { State::Closed } else { State::Open };
        assert_eq!(d.breaker.state(), expected, "after slow call {call}");
    }
    let m = d.breaker.metrics();
    assert_eq!(m.slow_call_rate(), 60.0);
    assert_eq!(m.failure_rate(), 0.0);
    assert_eq!(m.number_of_slow_successful_calls(), 6);
    assert_eq!(m.number_of_failed_calls(), 0);
    assert!(d.events.lock().unwrap().iter().any(|e| matches!(
        e,
        CircuitBreakerEvent::SlowCallRateExceeded { slow_call_rate } if *slow_call_rate == 60.0
    )));
    assert_eq!(d.transitions(), [(State::Closed, State::Open)]);
}

/// Drill 3: while OPEN, nothing reaches the inventory for the whole wait.
#[tokio::test(start_paused = true)]
async fn drill_03_open_sends_nothing_downstream() {
    let d = Drill::start(Duration::ZERO).await;
    d.open().await;
    d.client.reset();
    for _ in 0..50 {
        assert_eq!(d.query(Mode::Success).await, unknown("CallNotPermitted"));
    }
    // the whole wait, to its last instant
    tokio::time::advance(OPEN_WAIT).await;
    assert_eq!(d.query(Mode::Success).await, unknown("CallNotPermitted"));
    assert_eq!(d.client.attempts(), 0);
    assert_eq!(d.breaker.state(), State::Open);
    assert_eq!(d.breaker.metrics().number_of_not_permitted_calls(), 51);
    // the rejections are counted apart, not as new failures of the inventory
    assert_eq!(d.breaker.metrics().number_of_failed_calls(), 10);
}

/// Drill 4: once the wait is over, a burst of 10 requests finds HALF_OPEN:
/// exactly `permitted-number-of-calls-in-half-open-state` (3) reach the
/// inventory, the others are refused at once.
#[tokio::test(start_paused = true)]
async fn drill_04_half_open_admits_only_the_configured_probes() {
    let d = Drill::start(Duration::from_millis(100)).await;
    d.open().await;
    d.client.reset();
    tokio::time::advance(OPEN_WAIT + PAST).await;

    let burst: Vec<_> = (0..10)
        .map(|_| {
            let gateway = d.inventory.gateway.clone();
            tokio::spawn(async move { gateway.query(SKU, Mode::Success).await.unwrap() })
        })
        .collect();
    until("the refused requests answer", || {
        burst.iter().filter(|t| t.is_finished()).count() == 7
    })
    .await;
    assert_eq!(d.breaker.state(), State::HalfOpen);
    assert_eq!(d.client.attempts(), 3);
    assert_eq!(d.breaker.metrics().number_of_not_permitted_calls(), 7);

    let mut answers = Vec::new();
    for task in burst {
        answers.push(task.await.unwrap());
    }
    let probes = answers.iter().filter(|v| **v == available()).count();
    let refused = answers
        .iter()
        .filter(|v| **v == unknown("CallNotPermitted"))
        .count();
    assert_eq!((probes, refused), (3, 7));
    assert_eq!(d.client.attempts(), 3);
    assert_eq!(d.client.peak_in_flight(), 3);
}

/// Drill 5: the inventory is back; the breaker closes only when all three
/// probes have answered, and the requests that arrive meanwhile do not
/// reach the inventory: no recovery storm.
#[tokio::test(start_paused = true)]
async fn drill_05_recovery_closes_without_a_flood() {
    let d = Drill::start(Duration::from_millis(100)).await;
    d.open().await;
    d.client.reset();
    tokio::time::advance(OPEN_WAIT + PAST).await;

    // two quick probes and one slow one (600 ms: slow, but still a success)
    let spawn = |mode| {
        let gateway = d.inventory.gateway.clone();
        tokio::spawn(async move { gateway.query(SKU, mode).await.unwrap() })
    };
    let probes = [
        spawn(Mode::Success),
        spawn(Mode::Success),
        spawn(Mode::Sluggish),
    ];
    until("three probes in flight", || d.client.attempts() == 3).await;
    assert_eq!(d.breaker.state(), State::HalfOpen);

    // a flood arrives while the probes are out
    for _ in 0..100 {
        assert_eq!(d.query(Mode::Success).await, unknown("CallNotPermitted"));
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(probes[0].is_finished() && probes[1].is_finished());
    // two probes answered; the third decides
    assert_eq!(d.breaker.state(), State::HalfOpen);
    assert_eq!(d.query(Mode::Success).await, unknown("CallNotPermitted"));
    assert_eq!(d.breaker.metrics().number_of_not_permitted_calls(), 101);

    for probe in probes {
        assert_eq!(probe.await.unwrap(), available());
    }
    assert_eq!(d.breaker.state(), State::Closed);
    assert_eq!(d.client.attempts(), 3);
    assert_eq!(d.client.peak_in_flight(), 3);
    // closed: traffic flows again
    assert_eq!(d.query(Mode::Success).await, available());
    assert_eq!(d.client.attempts(), 4);
    assert_eq!(
        d.transitions(),
        [
            (State::Closed, State::Open),
            (State::Open, State::HalfOpen),
            (State::HalfOpen, State::Closed),
        ]
    );
}

/// Drill 6: twenty queries made slow (an injected delay of 1.2 s, inside
/// the bulkhead) fill the `inventory-query` bulkhead; the next query is
/// refused without waiting, and reservations, behind their own bulkhead,
/// are not affected.
#[tokio::test(start_paused = true)]
async fn drill_06_a_full_bulkhead_rejects_fast_and_spares_other_dependencies() {
    let d = Drill::start(Duration::ZERO).await;
    let registries = resil::registries();
    let queries = registries.bulkheads().bulkhead("inventory-query");
    let reservations = registries.bulkheads().bulkhead("inventory-reserve");

    let _slow = d.inject(
        FaultConfig::builder()
            .delay(Duration::from_millis(1200))
            .delay_percent(100.0),
    );
    let slow: Vec<_> = (0..20)
        .map(|_| {
            let gateway = d.inventory.gateway.clone();
            tokio::spawn(async move { gateway.query(SKU, Mode::Success).await.unwrap() })
        })
        .collect();
    until("twenty queries in flight", || {
        queries.metrics().available_concurrent_calls() == 0
    })
    .await;

    let started = d.now();
    assert_eq!(d.query(Mode::Success).await, unknown("BulkheadFull"));
    assert_eq!(d.now() - started, Duration::ZERO);
    // the delayed queries wait before the inventory, the refused one never
    // gets there
    assert_eq!(d.client.attempts(), 0);

    // the other dependency still has all its capacity
    let reservation = d
        .inventory
        .reservations
        .reserve("drill-6", SKU, 1, Mode::Success)
        .await
        .unwrap();
    assert_eq!(reservation.status, ReservationStatus::Confirmed);
    assert_eq!(d.now() - started, Duration::ZERO);
    assert_eq!(reservations.metrics().available_concurrent_calls(), 10);

    for task in slow {
        assert_eq!(task.await.unwrap(), unknown("Timeout"));
    }
    assert_eq!(d.now() - started, Duration::from_millis(800));
    assert_eq!(queries.metrics().available_concurrent_calls(), 20);
}

/// Drill 7: a reservation times out for the caller at 800 ms while the
/// inventory still commits it at 1.2 s; the service says UNKNOWN, the fact
/// query tells the truth, and repeating the request with the same key does
/// not reserve twice.
#[tokio::test(start_paused = true)]
async fn drill_07_a_timed_out_write_is_reconciled_by_its_idempotency_key() {
    let d = Drill::start(Duration::ZERO).await;
    let router = d.router();
    let started = d.now();
    let reserve = |mode: &str, quantity: u32| {
        let router = router.clone();
        let uri = format!("/inventory/{SKU}/reservations?mode={mode}");
        async move {
            send(
                &router,
                "POST",
                &uri,
                Some("order-7"),
                Some(json!({ "quantity": quantity })),
            )
            .await
        }
    };

    let (status, body) = reserve("slow", 2).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(
        body,
        json!({
            "key": "order-7", "skuId": SKU, "status": "UNKNOWN", "degraded": true,
            "reason": "Timeout", "fact": "/reservations/order-7"
        })
    );
    assert_eq!(d.now() - started, Duration::from_millis(800));
    // the caller gave up; the inventory did not
    let (status, fact) = send(&router, "GET", "/reservations/order-7", None, None).await;
    assert_eq!(
        (status, &fact["status"]),
        (StatusCode::OK, &json!("PENDING"))
    );
    assert_eq!(d.client.stock(SKU), INITIAL_STOCK);

    // repeated while the first is in progress: the same reservation, pending
    let (status, body) = reserve("success", 2).await;
    assert_eq!(
        (status, &body["status"]),
        (StatusCode::ACCEPTED, &json!("PENDING"))
    );

    // the inventory commits at 1.2 s
    tokio::time::sleep(started + SLOW + PAST - d.now()).await;
    let (status, fact) = send(&router, "GET", "/reservations/order-7", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        fact,
        json!({ "key": "order-7", "skuId": SKU, "quantity": 2, "status": "CONFIRMED", "requests": 2 })
    );
    assert_eq!(d.client.stock(SKU), INITIAL_STOCK - 2);

    // repeated after the fact: the confirmed reservation, and the stock taken once
    let (status, body) = reserve("success", 2).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (&body["status"], &body["requests"]),
        (&json!("CONFIRMED"), &json!(3))
    );
    assert_eq!(d.client.stock(SKU), INITIAL_STOCK - 2);
    assert_eq!(d.client.reservation_requests(), 3);

    // the same key for a different request is refused, not applied
    let (status, _) = reserve("success", 5).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(d.client.stock(SKU), INITIAL_STOCK - 2);
}

/// Drill 8: only a refused connection is retried, with at most
/// `max-attempts` (2) physical attempts per request and the 100 ms wait.
#[tokio::test(start_paused = true)]
async fn drill_08_retry_only_on_allowed_errors_within_the_budget() {
    let d = Drill::start(Duration::ZERO).await;
    let retry = resil::registries().retries().retry("inventory-query");
    let before = retry.metrics();

    let started = d.now();
    assert_eq!(d.query(Mode::Connect).await, unknown("ConnectionRefused"));
    assert_eq!(d.client.attempts(), 2);
    assert_eq!(d.now() - started, Duration::from_millis(100));

    // not retried: a 503, a timeout, the caller's mistake
    assert_eq!(d.query(Mode::Fail).await, unknown("Unavailable"));
    assert_eq!(d.client.attempts(), 3);
    assert_eq!(d.query(Mode::Slow).await, unknown("Timeout"));
    assert_eq!(d.client.attempts(), 4);
    let invalid = d.inventory.gateway.query("not-a-sku", Mode::Success).await;
    assert_eq!(invalid, Err(InventoryError::InvalidSku));
    assert_eq!(d.client.attempts(), 5);
    // every attempt went through the breaker; the invalid SKU was ignored
    let m = d.breaker.metrics();
    assert_eq!(m.number_of_buffered_calls(), 4);
    assert_eq!(m.number_of_failed_calls(), 4);

    // the budget holds under load: 5 requests, 10 attempts, never more; the
    // 10th failed attempt opens the breaker, which then cuts the retries off
    d.breaker.reset();
    d.client.reset();
    for _ in 0..5 {
        assert_eq!(d.query(Mode::Connect).await, unknown("ConnectionRefused"));
    }
    assert_eq!(d.client.attempts(), 10);
    assert_eq!(d.breaker.state(), State::Open);
    assert_eq!(d.query(Mode::Connect).await, unknown("CallNotPermitted"));
    assert_eq!(d.client.attempts(), 10);

    let after = retry.metrics();
    assert_eq!(
        after.number_of_failed_calls_with_retry_attempt()
            - before.number_of_failed_calls_with_retry_attempt(),
        6
    );
    assert_eq!(
        after.number_of_failed_calls_without_retry_attempt()
            - before.number_of_failed_calls_without_retry_attempt(),
        4 // the 503, the timeout, the invalid SKU and the refusal
    );
}

/// Drill 8, composed by hand: with Retry outside CircuitBreaker each
/// physical attempt passes through the breaker; swapped, the breaker sees
/// only the retry's final outcome.
#[tokio::test(start_paused = true)]
async fn drill_08_retry_outside_the_breaker_counts_every_attempt() {
    let client = Arc::new(InventoryHttpClient::new());
    let native = NativeInventoryGateway::new(&local_registries(), client.clone());
    let view = native.query(SKU, Mode::Connect).await.unwrap();
    assert_eq!(view, unknown("ConnectionRefused"));
    assert_eq!(client.attempts(), 2);
    assert_eq!(native.breaker().metrics().number_of_failed_calls(), 2);

    // the same instances the other way round
    let local = local_registries();
    let (breaker, retry) = (
        local.circuit_breakers().circuit_breaker("inventory-query"),
        local.retries().retry("inventory-query"),
    );
    let swapped = Arc::new(InventoryHttpClient::new());
    let (breaker_kinds, retry_kinds) = (
        CircuitBreakerClassifier::classified(),
        RetryClassifier::classified(),
    );
    // Two chains nested by hand: the breaker's call is the whole retry.
    let outcome = Stack::new()
        .circuit_breaker(breaker.part(&breaker_kinds))
        .call_async(Call(|| {
            Stack::new()
                .retry(retry.part(&retry_kinds))
                .call_async(Lift(|| swapped.query(SKU, Mode::Connect)))
        }))
        .await;
    assert_eq!(
        outcome,
        Err(resil::Error::Inner(InventoryError::ConnectionRefused))
    );
    assert_eq!(swapped.attempts(), 2);
    assert_eq!(breaker.metrics().number_of_failed_calls(), 1);
    assert_eq!(
        native
            .retry()
            .metrics()
            .number_of_failed_calls_with_retry_attempt(),
        1
    );
}

/// Drill 9: every failure and rejection is answered UNKNOWN with the reason,
/// never AVAILABLE; a failed or timed-out write records nothing; and the
/// caller's own mistakes are not hidden behind a fallback.
#[tokio::test(start_paused = true)]
async fn drill_09_fallbacks_answer_degraded_and_write_nothing() {
    let d = Drill::start(Duration::ZERO).await;
    let router = d.router();
    let get = |uri: &'static str| {
        let router = router.clone();
        async move { send(&router, "GET", uri, None, None).await }
    };
    let degraded = |reason: &str| json!({ "skuId": SKU, "status": "UNKNOWN", "degraded": true, "reason": reason });
    assert_eq!(
        get("/inventory/SKU-1001?mode=fail").await,
        (StatusCode::OK, degraded("Unavailable"))
    );
    assert_eq!(
        get("/inventory/SKU-1001?mode=connect").await,
        (StatusCode::OK, degraded("ConnectionRefused"))
    );
    assert_eq!(
        get("/inventory/SKU-1001?mode=slow").await,
        (StatusCode::OK, degraded("Timeout"))
    );
    assert_eq!(
        get("/native/inventory/SKU-1001?mode=fail").await,
        (StatusCode::OK, degraded("Unavailable"))
    );
    d.breaker.transition_to_forced_open_state().unwrap();
    assert_eq!(
        get("/inventory/SKU-1001").await,
        (StatusCode::OK, degraded("CallNotPermitted"))
    );
    assert_eq!(
        get("/native/inventory/SKU-1001").await,
        (StatusCode::OK, degraded("CallNotPermitted"))
    );
    d.breaker.reset();

    // the caller's mistake is an error, not a degraded answer
    let (status, _) = get("/inventory/SKU-x?mode=success").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // failed writes: UNKNOWN for the caller, nothing in the inventory
    for (mode, status, reason) in [
        ("fail", StatusCode::SERVICE_UNAVAILABLE, "Unavailable"),
        (
            "connect",
            StatusCode::SERVICE_UNAVAILABLE,
            "ConnectionRefused",
        ),
    ] {
        let key = format!("order-9-{mode}");
        let uri = format!("/inventory/{SKU}/reservations?mode={mode}");
        let (got, body) = send(
            &router,
            "POST",
            &uri,
            Some(&key),
            Some(json!({ "quantity": 1 })),
        )
        .await;
        assert_eq!(got, status);
        assert_eq!(
            (&body["status"], &body["reason"]),
            (&json!("UNKNOWN"), &json!(reason))
        );
        let (got, fact) = send(&router, "GET", &format!("/reservations/{key}"), None, None).await;
        assert_eq!(
            (got, fact),
            (
                StatusCode::NOT_FOUND,
                json!({ "key": key, "status": "NOT_FOUND" })
            )
        );
    }
    // no key, no write
    let uri = format!("/inventory/{SKU}/reservations");
    let (status, _) = send(&router, "POST", &uri, None, Some(json!({ "quantity": 1 }))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(d.client.stock(SKU), INITIAL_STOCK);
}

/// Drill 10: what an operator has (the actuator's events, the Prometheus
/// meters and the log) explains every transition of a failure and its
/// recovery, with the numbers that caused it.
#[tokio::test(start_paused = true)]
async fn drill_10_events_metrics_and_the_actuator_explain_every_transition() {
    let d = Drill::start(Duration::ZERO).await;
    let log = Log::default();
    let _log = tracing::subscriber::set_default(log.subscriber());
    let router = app::service(d.inventory.clone(), &app::actuator(prometheus(), None));
    let scrape = || async { send_text(&router, "/actuator/prometheus").await };
    let before = scrape().await;

    d.open().await;
    assert_eq!(d.query(Mode::Success).await, unknown("CallNotPermitted"));
    let open = scrape().await;
    assert_eq!(metric(&open, STATE_OPEN), 1.0);
    assert_eq!(metric(&open, STATE_CLOSED), 0.0);
    assert_eq!(metric(&open, FAILURE_RATE), 100.0);
    tokio::time::advance(OPEN_WAIT + PAST).await;
    for _ in 0..3 {
        assert_eq!(d.query(Mode::Success).await, available());
    }
    assert_eq!(d.breaker.state(), State::Closed);

    // the actuator's events, since this drill's reset
    let (status, events) = send(
        &router,
        "GET",
        "/actuator/circuitbreakerevents/inventory-query",
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let events = events["circuitBreakerEvents"].as_array().unwrap();
    let since_reset = events.rsplit(|e| e["type"] == "RESET").next().unwrap();
    let explained: Vec<String> = since_reset
        .iter()
        .map(
            |e| match (&e["type"], &e["stateTransition"], &e["errorMessage"]) {
                (_, Value::String(t), _) => t.clone(),
                (ty, _, Value::String(error)) => format!("{} {error}", ty.as_str().unwrap()),
                (ty, _, _) => ty.as_str().unwrap().to_owned(),
            },
        )
        .collect();
    let mut expected = vec!["ERROR FaultInjected"; 10];
    expected.extend([
        "FAILURE_RATE_EXCEEDED",
        "CLOSED_TO_OPEN",
        "NOT_PERMITTED",
        "OPEN_TO_HALF_OPEN",
        "SUCCESS",
        "SUCCESS",
        "SUCCESS",
        "HALF_OPEN_TO_CLOSED",
    ]);
    assert_eq!(explained, expected);

    // the meters moved by exactly what happened
    let after = scrape().await;
    assert_eq!(metric(&after, STATE_CLOSED), 1.0);
    assert_eq!(metric(&after, STATE_OPEN), 0.0);
    assert_eq!(
        metric(&after, NOT_PERMITTED) - metric(&before, NOT_PERMITTED),
        1.0
    );
    assert_eq!(
        metric(&after, FAILED_CALLS) - metric(&before, FAILED_CALLS),
        10.0
    );
    assert_eq!(
        metric(&after, SUCCESSFUL_CALLS) - metric(&before, SUCCESSFUL_CALLS),
        3.0
    );

    // the log tells the transitions, and only them, at INFO and above
    assert_eq!(
        log.lines(),
        [
            " WARN resil::circuit_breaker: circuit breaker `inventory-query` changed state from CLOSED to OPEN",
            " INFO resil::circuit_breaker: circuit breaker `inventory-query` changed state from OPEN to HALF_OPEN",
            " INFO resil::circuit_breaker: circuit breaker `inventory-query` changed state from HALF_OPEN to CLOSED",
        ]
    );
}
