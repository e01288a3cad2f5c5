//! Instruction counts of the five-layer chain on a ready async call, for
//! callgrind (deterministic where wall-clock benchmarks on a shared machine
//! are not), and the sizes of the futures involved:
//!
//! ```text
//! cargo build --release -p resil-bench --features bench --example chain_probe
//! target/release/examples/chain_probe sizes
//! for m in bare empty five five-buffered five-system five-buffered-system tower attributes attributes-without-retry registry-decorators rate-limiter time-limiter-own bulkhead-own retry-own bulkhead-sync retry-sync breaker breaker-sync five-sync resil-three named hedge time-limiter stack-breaker stack-breaker-fault stack-breaker-owning stack-breaker-fault-owning; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg-$m.out target/release/examples/chain_probe $m
//! done
//! ```
//!
//! Each mode makes 200 000 calls on one current-thread runtime: `bare`
//! awaits the query, `empty` runs it through `Decorators` without a layer,
//! `five` through Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead))))
//! (limits that never refuse, a `ManualClock`, no event buffers; with
//! `-system` after the mode, `five-system` and `five-buffered-system`, on
//! the system clock, whose readings are one instruction each here),
//! `five-buffered` the same with a 100-event buffer on every instance (the
//! registries' default), `tower` through tower's
//! `ConcurrencyLimit + RateLimit + Timeout`, `attributes` through the five
//! attributes on the global registries' instances (defaults: their
//! recent-events buffers on), `attributes-without-retry` through the four
//! other attributes on the same instances, `registry-decorators` through `Decorators` on
//! those same instances, `breaker-sync`, `bulkhead-sync` and `retry-sync` a
//! blocking call through the breaker, the bulkhead or the retry alone (its
//! own `call`), `five-sync` a blocking call through `Decorators` with the
//! four layers that take one (no time limiter), `resil-three` through
//! resil's tower `BulkheadLayer`, `RateLimiterLayer` and
//! `TimeLimiterLayer` (tower's three), `named` through
//! `resil::tower::named` with five layers on the global instances,
//! `hedge` through `Decorators` with a hedge alone (a 1 s delay the ready
//! call never reaches) and `time-limiter` with a time limiter alone, its
//! peer; `rate-limiter`, `breaker`, `time-limiter-own`, `bulkhead-own` and
//! `retry-own` through each primitive's own `call_async`; `stack-breaker` the engine's breaker place alone and
//! `stack-breaker-fault` the same with the fault place (no fault in
//! force), and `stack-breaker-owning`, `stack-breaker-fault-owning` the
//! same two with a call whose future owns something to drop. The
//! difference of two totals divided by 200 000 is what one call adds.

use std::hint::black_box;
use std::time::Duration;

use resil_core::Decorators;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
use resil_core::chain::{Lift, Stack};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerClassifier, CircuitBreakerConfig};
use resil_core::clock::{ManualClock, SharedClock, SystemClock};
use resil_core::fault::FaultPart;
use resil_core::hedge::{Hedge, HedgeConfig};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil_core::retry::{Retry, RetryConfig};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
use tower::{Service, ServiceBuilder, ServiceExt};

#[inline(never)]
fn query(x: u64) -> Result<u64, std::io::Error> {
    Ok(black_box(x).wrapping_mul(3))
}

async fn ready(x: u64) -> Result<u64, std::io::Error> {
    query(x)
}

/// A call whose future owns something to drop (as a real call's does: a
/// request, a connection): an empty `String`, which allocates nothing.
async fn owning(x: u64, sku: String) -> Result<u64, std::io::Error> {
    black_box(&sku);
    query(x)
}

const CALLS: usize = 200_000;

#[derive(Debug)]
struct Rejected;

impl From<resil::Rejection> for Rejected {
    fn from(_: resil::Rejection) -> Self {
        Rejected
    }
}

#[resil::retry(name = "probe")]
#[resil::circuit_breaker(name = "probe")]
#[resil::rate_limiter(name = "probe")]
#[resil::time_limiter(name = "probe")]
#[resil::bulkhead(name = "probe")]
async fn attributes(x: u64) -> Result<u64, Rejected> {
    query(x).map_err(|_| Rejected)
}

#[resil::circuit_breaker(name = "probe")]
#[resil::rate_limiter(name = "probe")]
#[resil::time_limiter(name = "probe")]
#[resil::bulkhead(name = "probe")]
async fn attributes_without_retry(x: u64) -> Result<u64, Rejected> {
    query(x).map_err(|_| Rejected)
}

async fn ready_rejected(x: u64) -> Result<u64, Rejected> {
    query(x).map_err(|_| Rejected)
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    // `five-system` and `five-buffered-system`: the same on the system clock.
    let (mode, clock) = match mode.strip_suffix("-system") {
        Some(mode) => (mode.to_owned(), SharedClock::new(SystemClock::new())),
        None => (mode, SharedClock::new(ManualClock::new())),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let retry = Retry::with_clock("probe", RetryConfig::default(), clock.clone());
    let breaker =
        CircuitBreaker::with_clock("probe", CircuitBreakerConfig::default(), clock.clone());
    let limiter = RateLimiter::with_clock(
        "probe",
        RateLimiterConfig::builder()
            .limit_for_period(1_000_000_000)
            .limit_refresh_period(Duration::from_secs(1))
            .build()
            .expect("valid config"),
        clock.clone(),
    );
    let timeout = TimeLimiter::with_clock(
        "probe",
        TimeLimiterConfig::builder()
            .timeout_duration(Duration::from_secs(1))
            .build()
            .expect("valid config"),
        clock.clone(),
    );
    let bulkhead = Bulkhead::with_clock(
        "probe",
        BulkheadConfig::builder()
            .max_concurrent_calls(1000)
            .build()
            .expect("valid config"),
        clock.clone(),
    );
    if mode == "five-buffered" {
        retry.event_publisher().enable_buffer(100);
        breaker.event_publisher().enable_buffer(100);
        limiter.event_publisher().enable_buffer(100);
        timeout.event_publisher().enable_buffer(100);
        bulkhead.event_publisher().enable_buffer(100);
    }
    let five = Decorators::new()
        .with_retry(&retry)
        .with_circuit_breaker(&breaker)
        .with_rate_limiter(&limiter)
        .with_time_limiter(&timeout)
        .with_bulkhead(&bulkhead);
    let empty = Decorators::new();
    // a hedge whose primary answers before its delay, beside a time limiter
    let hedge = Hedge::with_clock(
        "probe",
        HedgeConfig::builder()
            .delay(Duration::from_secs(1))
            .build()
            .expect("valid config"),
        clock.clone(),
    );
    let hedged = Decorators::new().with_hedge(&hedge);
    let time_limited = Decorators::new().with_time_limiter(&timeout);
    if mode == "sizes" {
        let f = five.call_async(|| ready(1));
        println!(
            "five-layer chain future: {} bytes",
            std::mem::size_of_val(&f)
        );
        let f = empty.call_async(|| ready(1));
        println!("empty chain future: {} bytes", std::mem::size_of_val(&f));
        println!(
            "the query's future: {} bytes",
            std::mem::size_of_val(&ready(1))
        );
        println!(
            "CircuitBreakerConfig: {} bytes, its event publisher: {} bytes",
            std::mem::size_of::<CircuitBreakerConfig>(),
            std::mem::size_of::<
                resil_core::event::EventPublisher<resil_core::circuit_breaker::CircuitBreakerEvent>,
            >()
        );
        return;
    }
    rt.block_on(async {
        match mode.as_str() {
            "bare" => {
                for _ in 0..CALLS {
                    black_box(ready(black_box(1)).await.ok());
                }
            }
            "empty" => {
                for _ in 0..CALLS {
                    black_box(empty.call_async(|| ready(black_box(1))).await.ok());
                }
            }
            "five" | "five-buffered" => {
                for _ in 0..CALLS {
                    black_box(five.call_async(|| ready(black_box(1))).await.ok());
                }
            }
            "hedge" => {
                for _ in 0..CALLS {
                    black_box(hedged.call_async(|| ready(black_box(1))).await.ok());
                }
            }
            "time-limiter" => {
                for _ in 0..CALLS {
                    black_box(time_limited.call_async(|| ready(black_box(1))).await.ok());
                }
            }
            "rate-limiter" => {
                for _ in 0..CALLS {
                    black_box(limiter.call_async(|| ready(black_box(1))).await.ok());
                }
            }
            // the other primitives' own async calls
            "time-limiter-own" => {
                for _ in 0..CALLS {
                    black_box(timeout.call_async(|| ready(black_box(1))).await.ok());
                }
            }
            "bulkhead-own" => {
                for _ in 0..CALLS {
                    black_box(bulkhead.call_async(|| ready(black_box(1))).await.ok());
                }
            }
            "retry-own" => {
                for _ in 0..CALLS {
                    black_box(retry.call_async(|| ready(black_box(1))).await.ok());
                }
            }
            "bulkhead-sync" => {
                for _ in 0..CALLS {
                    black_box(bulkhead.call(|| query(black_box(1))).ok());
                }
            }
            "retry-sync" => {
                for _ in 0..CALLS {
                    black_box(retry.call(|| query(black_box(1))).ok());
                }
            }
            "breaker" => {
                for _ in 0..CALLS {
                    black_box(breaker.call_async(|| ready(black_box(1))).await.ok());
                }
            }
            // the engine's breaker place alone, without and with the fault
            // place (no fault in force): what the fault place costs a call
            "stack-breaker" => {
                let classifier = CircuitBreakerClassifier::new();
                for _ in 0..CALLS {
                    let call = Stack::new()
                        .circuit_breaker(breaker.part(&classifier))
                        .call_async(Lift(|| ready(black_box(1))));
                    black_box(call.await.ok());
                }
            }
            "stack-breaker-fault" => {
                let classifier = CircuitBreakerClassifier::new();
                for _ in 0..CALLS {
                    let call = Stack::new()
                        .circuit_breaker(breaker.part(&classifier))
                        .fault(FaultPart::global("probe"))
                        .call_async(Lift(|| ready(black_box(1))));
                    black_box(call.await.ok());
                }
            }
            // the same two with a call whose future owns something to drop
            "stack-breaker-owning" => {
                let classifier = CircuitBreakerClassifier::new();
                for _ in 0..CALLS {
                    let call = Stack::new()
                        .circuit_breaker(breaker.part(&classifier))
                        .call_async(Lift(|| owning(black_box(1), String::new())));
                    black_box(call.await.ok());
                }
            }
            "stack-breaker-fault-owning" => {
                let classifier = CircuitBreakerClassifier::new();
                for _ in 0..CALLS {
                    let call = Stack::new()
                        .circuit_breaker(breaker.part(&classifier))
                        .fault(FaultPart::global("probe"))
                        .call_async(Lift(|| owning(black_box(1), String::new())));
                    black_box(call.await.ok());
                }
            }
            "tower" => {
                let mut svc = ServiceBuilder::new()
                    .concurrency_limit(1000)
                    .rate_limit(1_000_000_000, Duration::from_secs(1))
                    .timeout(Duration::from_secs(1))
                    .service(tower::service_fn(ready));
                for _ in 0..CALLS {
                    let r = svc.ready().await.expect("ready").call(black_box(1)).await;
                    black_box(r.ok());
                }
            }
            "attributes" => {
                for _ in 0..CALLS {
                    black_box(attributes(black_box(1)).await.ok());
                }
            }
            "attributes-without-retry" => {
                for _ in 0..CALLS {
                    black_box(attributes_without_retry(black_box(1)).await.ok());
                }
            }
            "registry-decorators" => {
                let r = resil::registries();
                let (retry, cb, rl, tl, bh) = (
                    r.retries().retry("probe"),
                    r.circuit_breakers().circuit_breaker("probe"),
                    r.rate_limiters().rate_limiter("probe"),
                    r.time_limiters().time_limiter("probe"),
                    r.bulkheads().bulkhead("probe"),
                );
                let chain = Decorators::new()
                    .with_retry(&retry)
                    .with_circuit_breaker(&cb)
                    .with_rate_limiter(&rl)
                    .with_time_limiter(&tl)
                    .with_bulkhead(&bh);
                for _ in 0..CALLS {
                    black_box(chain.call_async(|| ready_rejected(black_box(1))).await.ok());
                }
            }
            "breaker-sync" => {
                for _ in 0..CALLS {
                    black_box(breaker.call(|| query(black_box(1))).ok());
                }
            }
            "five-sync" => {
                // the five layers but the time limiter (a blocking call
                // cannot be timed out)
                let four = Decorators::new()
                    .with_retry(&retry)
                    .with_circuit_breaker(&breaker)
                    .with_rate_limiter(&limiter)
                    .with_bulkhead(&bulkhead);
                for _ in 0..CALLS {
                    black_box(four.call(|| query(black_box(1))).ok());
                }
            }
            "resil-three" => {
                use resil::tower::{BulkheadLayer, RateLimiterLayer, TimeLimiterLayer};
                let mut svc = ServiceBuilder::new()
                    .layer(BulkheadLayer::new(bulkhead.clone()))
                    .layer(RateLimiterLayer::new(limiter.clone()))
                    .layer(TimeLimiterLayer::new(timeout.clone()))
                    .service(tower::service_fn(ready));
                for _ in 0..CALLS {
                    let r = svc.ready().await.expect("ready").call(black_box(1)).await;
                    black_box(r.ok());
                }
            }
            "named" => {
                // the global instances of `probe`, as the attributes use
                // them, with limits that never refuse
                let mut svc = ServiceBuilder::new()
                    .layer(
                        resil::tower::named("probe")
                            .retry()
                            .circuit_breaker()
                            .rate_limiter()
                            .time_limiter()
                            .bulkhead()
                            .build(),
                    )
                    .service(tower::service_fn(ready));
                for _ in 0..CALLS {
                    let r = svc.ready().await.expect("ready").call(black_box(1)).await;
                    black_box(r.ok());
                }
            }
            other => panic!("unknown mode {other:?}"),
        }
    });
}
