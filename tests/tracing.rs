//! The `tracing` feature: which events reach a subscriber, at which level
//! and target, with the instance name as a field.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use resil::clock::ManualClock;
use resil::config::Resilience;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

#[global_allocator]
static ALLOC: resil_testkit::CountingAlloc = resil_testkit::CountingAlloc;

#[derive(Debug, resil::Classify)]
enum InventoryError {
    ConnectionRefused,
}

/// (level, target, fields) of every event of a `resil::` target.
type Seen = Arc<Mutex<Vec<(Level, String, BTreeMap<String, String>)>>>;

struct Capture(Seen);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        if !meta.target().starts_with("resil::") {
            return;
        }
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0
            .lock()
            .unwrap()
            .push((*meta.level(), meta.target().to_owned(), fields));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

const CONFIG: &str = r#"
[circuitbreaker.instances.inventory-query]
sliding-window-size = 2
minimum-number-of-calls = 2

[retry.instances.inventory-query]
max-attempts = 2
wait-duration = "100ms"

[bulkhead.instances.inventory-query]
max-concurrent-calls = 0

[ratelimiter.instances.inventory-query]
limit-for-period = 1
timeout-duration = "0ms"

[timelimiter.instances.inventory-query]
timeout-duration = "800ms"
"#;

#[test]
fn transitions_rejections_retries_and_timeouts_are_traced() {
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", CONFIG)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .clock(ManualClock::new())
        .load()
        .unwrap();
    let r = loaded.registries();
    resil::observe(r);
    let seen = Seen::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    tracing::subscriber::with_default(Capture(seen.clone()), || {
        let cb = r.circuit_breakers().circuit_breaker("inventory-query");
        for _ in 0..3 {
            let _ = cb.call(|| Err::<(), _>(InventoryError::ConnectionRefused));
        }
        let retry = r.retries().retry("inventory-query");
        let classified = resil::retry::RetryClassifier::classified();
        let _ = resil::Decorators::new()
            .with_retry_classified(&retry, classified)
            .call(|| Err::<(), _>(InventoryError::ConnectionRefused));
        let bulkhead = r.bulkheads().bulkhead("inventory-query");
        let _ = bulkhead.call(|| Ok::<_, InventoryError>(()));
        let limiter = r.rate_limiters().rate_limiter("inventory-query");
        let _ = limiter.call(|| Ok::<_, InventoryError>(()));
        let _ = limiter.call(|| Ok::<_, InventoryError>(()));
        let limiter = r.time_limiters().time_limiter("inventory-query");
        let _ = runtime
            .block_on(limiter.call_async(std::future::pending::<Result<(), InventoryError>>));
        cb.reset();
    });
    let seen = seen.lock().unwrap();
    let summary: Vec<(Level, &str, &str)> = seen
        .iter()
        .map(|(level, target, fields)| (*level, target.as_str(), fields["message"].as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (
                Level::DEBUG,
                "resil::circuit_breaker",
                "circuit breaker `inventory-query`: failure rate 100% above its threshold"
            ),
            (
                Level::WARN,
                "resil::circuit_breaker",
                "circuit breaker `inventory-query` changed state from CLOSED to OPEN"
            ),
            (
                Level::DEBUG,
                "resil::circuit_breaker",
                "circuit breaker `inventory-query` did not permit a call"
            ),
            (
                Level::DEBUG,
                "resil::retry",
                "retry `inventory-query`: attempt 1 failed with ConnectionRefused, next in 100 ms"
            ),
            (
                Level::INFO,
                "resil::retry",
                "retry `inventory-query`: the call failed after 2 attempts with ConnectionRefused"
            ),
            (
                Level::DEBUG,
                "resil::bulkhead",
                "bulkhead `inventory-query` is full and rejected a call"
            ),
            (
                Level::DEBUG,
                "resil::rate_limiter",
                "rate limiter `inventory-query` did not permit a request"
            ),
            (
                Level::DEBUG,
                "resil::time_limiter",
                "time limiter `inventory-query`: the call timed out"
            ),
            (
                Level::INFO,
                "resil::circuit_breaker",
                "circuit breaker `inventory-query` changed state from OPEN to CLOSED"
            ),
            (
                Level::INFO,
                "resil::circuit_breaker",
                "circuit breaker `inventory-query` was reset"
            ),
        ]
    );
    for (_, _, fields) in seen.iter() {
        assert_eq!(fields["name"], "inventory-query");
    }
    let transition = &seen[1].2;
    assert_eq!(
        (transition["from"].as_str(), transition["to"].as_str()),
        ("CLOSED", "OPEN")
    );
    let retry = &seen[3].2;
    assert_eq!(
        (
            retry["attempt"].as_str(),
            retry["wait_ms"].as_str(),
            retry["error"].as_str()
        ),
        ("1", "100", "ConnectionRefused")
    );
}

#[test]
fn each_enabled_fault_is_a_warning_at_each_reload() {
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", "")
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
        .unwrap();
    let seen = Seen::default();
    tracing::subscriber::with_default(Capture(seen.clone()), || {
        let faults = "[fault.instances.traced-fault]\nenabled = true\nabort-percent = 5\n\
                      [fault.instances.quiet-fault]\nabort-percent = 5\n";
        loaded
            .reload_from_contents("resilience.toml", faults)
            .unwrap();
        loaded.reload_from_contents("resilience.toml", "").unwrap();
    });
    let seen = seen.lock().unwrap();
    let warned: Vec<(Level, &str, &str)> = seen
        .iter()
        .filter(|(_, target, _)| target == "resil::fault")
        .map(|(level, _, fields)| (*level, fields["fault"].as_str(), fields["message"].as_str()))
        .collect();
    assert_eq!(
        warned,
        [(
            Level::WARN,
            "traced-fault",
            "resil: fault injection is enabled for `traced-fault`: delay 0ms for 0% of calls, abort 5% of calls (fault.instances.traced-fault)"
        )],
        "one warning, for the enabled fault, and none once it is gone"
    );
}

#[test]
fn each_reload_is_traced_with_its_outcome() {
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", "[bulkhead.instances.a]\n")
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
        .unwrap();
    let seen = Seen::default();
    tracing::subscriber::with_default(Capture(seen.clone()), || {
        let good = "[bulkhead.instances.a]\nmax-concurrent-calls = 3\n";
        loaded
            .reload_from_contents("resilience.toml", good)
            .unwrap();
        let bad = "[bulkhead.instances.a]\nmax-concurrent-calls = -3\n";
        loaded
            .reload_from_contents("resilience.toml", bad)
            .unwrap_err();
        loaded.reload_dry_run().unwrap();
    });
    let seen = seen.lock().unwrap();
    let summary: Vec<(Level, &str, &str, &str)> = seen
        .iter()
        .filter(|(_, target, _)| target == "resil::reload")
        .map(|(level, target, fields)| {
            (
                *level,
                target.as_str(),
                fields["outcome"].as_str(),
                fields["message"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                Level::INFO,
                "resil::reload",
                "applied",
                "resil: configuration reloaded: bulkhead a: max-concurrent-calls 25 -> 3"
            ),
            (
                Level::WARN,
                "resil::reload",
                "rejected",
                "resil: configuration reload rejected, the settings in force are kept: invalid resil configuration (1 problem):\n  resilience.toml: bulkhead.instances.a.max-concurrent-calls = -3: expected a whole number from 0 to 4294967295"
            ),
            (
                Level::INFO,
                "resil::reload",
                "dry-run",
                "resil: configuration checked, nothing applied (dry run): no changes"
            ),
        ]
    );
}

/// The values recorded on spans after their creation, in order.
type Recorded = Arc<Mutex<Vec<(String, String)>>>;

struct SpanFields(Recorded);

impl<S: Subscriber> tracing_subscriber::Layer<S> for SpanFields {
    fn on_record(&self, _: &Id, values: &Record<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut fields = BTreeMap::new();
        values.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().extend(fields);
    }
}

/// The span of a request, with the fields resil records declared.
macro_rules! request_span {
    () => {
        tracing::info_span!(
            "request",
            resil.name = tracing::field::Empty,
            resil.circuit_breaker.state = tracing::field::Empty,
            resil.retry.attempts = tracing::field::Empty,
            resil.rejected = tracing::field::Empty,
        )
    };
}

#[test]
fn a_protected_call_records_its_fields_on_the_callers_span() {
    use tracing::Instrument as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    let loaded = Resilience::builder()
        .file_contents(
            "resilience.toml",
            r#"
[circuitbreaker.instances.span-query]
sliding-window-size = 2
minimum-number-of-calls = 2

[retry.instances.span-retry]
max-attempts = 3
wait-duration = 0

[bulkhead.instances.span-bulkhead]
max-concurrent-calls = 0

[ratelimiter.instances.span-limiter]
limit-for-period = 1
limit-refresh-period = "1h"
timeout-duration = 0

[timelimiter.instances.span-timeout]
timeout-duration = "800ms"
"#,
        )
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .clock(ManualClock::new())
        .load()
        .unwrap();
    let r = loaded.registries();
    resil::observe(r);
    let recorded = Recorded::default();
    let subscriber = tracing_subscriber::registry().with(SpanFields(recorded.clone()));
    // the last value of each field one request's span got (what an
    // exporter that keeps one value per field keeps)
    let take = || -> BTreeMap<String, String> {
        std::mem::take(&mut *recorded.lock().unwrap())
            .into_iter()
            .collect()
    };
    let fields = |p: &[(&str, &str)]| -> BTreeMap<String, String> {
        p.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    tracing::subscriber::with_default(subscriber, || {
        let cb = r.circuit_breakers().circuit_breaker("span-query");
        let failing = || Err::<(), _>(InventoryError::ConnectionRefused);

        // failures the breaker let through while CLOSED, the second opens it
        for _ in 0..2 {
            request_span!().in_scope(|| cb.call(failing)).unwrap_err();
            assert_eq!(
                take(),
                fields(&[
                    ("resil.name", "span-query"),
                    ("resil.circuit_breaker.state", "CLOSED"),
                ])
            );
        }
        // refused while OPEN
        request_span!().in_scope(|| cb.call(failing)).unwrap_err();
        assert_eq!(
            take(),
            fields(&[
                ("resil.name", "span-query"),
                ("resil.circuit_breaker.state", "OPEN"),
                ("resil.rejected", "CallNotPermitted"),
            ])
        );

        // three attempts, each failed
        let retry = r.retries().retry("span-retry");
        let classified = resil::retry::RetryClassifier::classified();
        request_span!()
            .in_scope(|| {
                resil::Decorators::new()
                    .with_retry_classified(&retry, classified)
                    .call(failing)
            })
            .unwrap_err();
        assert_eq!(
            take(),
            fields(&[("resil.name", "span-retry"), ("resil.retry.attempts", "3")])
        );

        // refusals of a full bulkhead and of a spent rate limiter
        let bulkhead = r.bulkheads().bulkhead("span-bulkhead");
        request_span!()
            .in_scope(|| bulkhead.call(|| Ok::<_, InventoryError>(())))
            .unwrap_err();
        assert_eq!(
            take(),
            fields(&[
                ("resil.name", "span-bulkhead"),
                ("resil.rejected", "BulkheadFull"),
            ])
        );
        let limiter = r.rate_limiters().rate_limiter("span-limiter");
        request_span!()
            .in_scope(|| limiter.call(|| Ok::<_, InventoryError>(())))
            .unwrap();
        assert_eq!(take(), fields(&[("resil.name", "span-limiter")]));
        request_span!()
            .in_scope(|| limiter.call(|| Ok::<_, InventoryError>(())))
            .unwrap_err();
        assert_eq!(
            take(),
            fields(&[
                ("resil.name", "span-limiter"),
                ("resil.rejected", "RequestNotPermitted"),
            ])
        );

        // an async call that timed out, in its instrumented future
        let limiter = r.time_limiters().time_limiter("span-timeout");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime
            .block_on(
                limiter
                    .call_async(std::future::pending::<Result<(), InventoryError>>)
                    .instrument(request_span!()),
            )
            .unwrap_err();
        assert_eq!(
            take(),
            fields(&[
                ("resil.name", "span-timeout"),
                ("resil.rejected", "Timeout")
            ])
        );

        // a span that declares none of the fields gets none; no span, nothing
        tracing::info_span!("other", unrelated = tracing::field::Empty)
            .in_scope(|| cb.call(failing))
            .unwrap_err();
        cb.call(failing).unwrap_err();
        assert_eq!(take(), BTreeMap::new());
    });

    // recording allocates nothing (what the subscriber does with the values
    // is its own: a bare registry keeps none), on a span that declares the
    // fields or on one that does not
    tracing::subscriber::with_default(tracing_subscriber::registry(), || {
        let quiet = r.circuit_breakers().circuit_breaker("span-quiet");
        let ok = || Ok::<_, InventoryError>(1);
        for span in [
            request_span!(),
            tracing::info_span!("other", unrelated = tracing::field::Empty),
        ] {
            span.in_scope(|| {
                quiet.call(ok).unwrap();
                let ((), n) = resil_testkit::allocations_during(|| {
                    for _ in 0..999 {
                        quiet.call(ok).unwrap();
                    }
                });
                assert_eq!(n, 0, "allocations in 999 calls");
            });
        }
    });
}

#[test]
fn hedged_attempts_are_traced_with_what_started_them() {
    let loaded = Resilience::builder()
        .file_contents(
            "resilience.toml",
            "[hedge.instances.inventory-read]\ndelay = \"40ms\"\n",
        )
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .clock(ManualClock::new())
        .load()
        .unwrap();
    let r = loaded.registries();
    resil::observe(r);
    let seen = Seen::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    tracing::subscriber::with_default(Capture(seen.clone()), || {
        let hedge = r.hedges().hedge("inventory-read");
        // a primary that answers at once: nothing to trace
        let _ = runtime.block_on(hedge.call_async(|| async { Ok::<_, InventoryError>(()) }));
        // on the manual clock the delay is due at once: a pending primary is hedged
        let mut first = true;
        let _ = runtime.block_on(hedge.call_async(|| {
            let pending = std::mem::take(&mut first);
            async move {
                if pending {
                    std::future::pending::<()>().await;
                }
                Ok::<_, InventoryError>(())
            }
        }));
        // a failed primary starts the hedged attempt at once
        let _ = runtime.block_on(
            hedge.call_async(|| async { Err::<(), _>(InventoryError::ConnectionRefused) }),
        );
    });
    let seen = seen.lock().unwrap();
    let summary: Vec<(Level, &str, &str)> = seen
        .iter()
        .map(|(level, target, fields)| (*level, target.as_str(), fields["message"].as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (
                Level::DEBUG,
                "resil::hedge",
                "hedge `inventory-read`: attempt 1 started after 40ms"
            ),
            (
                Level::DEBUG,
                "resil::hedge",
                "hedge `inventory-read`: attempt 1 started after a failure"
            ),
        ]
    );
    assert_eq!(seen[0].2["attempt"], "1");
    assert_eq!(seen[0].2["after"], "40ms");
    assert!(!seen[1].2.contains_key("after"));
}
