//! `named`: the global instances of a name stacked in the fixed order
//! whatever the order they are written in, the hedge inside the retry and
//! outside the breaker, and inner rejections passed through flat.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resil::Error;
use resil::hedge::HedgeConfig;
use resil::retry::RetryConfig;
use resil::tower::named;
use tower::{ServiceBuilder, ServiceExt, service_fn};

type IoResult<T> = Result<T, std::io::Error>;

fn io_error() -> std::io::Error {
    std::io::Error::other("upstream down")
}

#[tokio::test(start_paused = true)]
async fn named_puts_the_hedge_inside_the_retry_and_outside_the_breaker() {
    let name = "tower-named-hedge";
    let registries = resil::registries();
    let hedge = registries.hedges().hedge_with(
        name,
        HedgeConfig::builder()
            .delay(Duration::from_millis(25))
            .build()
            .unwrap(),
    );
    let retry = registries.retries().retry_with(
        name,
        RetryConfig::builder()
            .max_attempts(2)
            .wait_duration(Duration::from_millis(1))
            .build()
            .unwrap(),
    );
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let svc = ServiceBuilder::new()
        .layer(named(name).circuit_breaker().hedge().retry().build())
        .service(service_fn(move |_: ()| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>(io_error()) }
        }));
    let result: Result<(), Error<std::io::Error>> = svc.oneshot(()).await;
    assert!(matches!(result, Err(Error::Inner(_))));
    // two retry attempts, each a hedged call of two failed attempts
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert_eq!(hedge.metrics().number_of_failed_calls(), 2);
    let cb = registries.circuit_breakers().circuit_breaker(name);
    assert_eq!(cb.metrics().number_of_failed_calls(), 4);
    assert_eq!(
        retry.metrics().number_of_failed_calls_with_retry_attempt(),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn named_stacks_the_global_instances_in_the_fixed_order() {
    let name = "tower-named-order";
    // Written in reverse: the stack is the same.
    let layer = named(name)
        .bulkhead()
        .time_limiter()
        .rate_limiter()
        .circuit_breaker()
        .retry()
        .build();
    let registries = resil::registries();
    let rl = registries.rate_limiters().rate_limiter(name);
    rl.event_publisher().enable_buffer(100);
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let svc = ServiceBuilder::new()
        .layer(layer)
        .service(service_fn(move |_: ()| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>(io_error()) }
        }));
    // One flat error type for five layers.
    let result: Result<(), Error<std::io::Error>> = svc.oneshot(()).await;
    assert!(matches!(result, Err(Error::Inner(_))));
    let retry = registries.retries().retry(name);
    let attempts = u64::from(retry.config().max_attempts());
    assert_eq!(u64::from(calls.load(Ordering::SeqCst)), attempts);
    // Retry outside the breaker: the breaker saw every attempt.
    let cb = registries.circuit_breakers().circuit_breaker(name);
    assert_eq!(cb.metrics().number_of_failed_calls(), attempts);
    // The limiter inside the breaker and the retry: one permit per attempt.
    let acquired = rl.event_publisher().recent_events().len();
    assert_eq!(acquired as u64, attempts);
    // The bulkhead innermost: every permit back.
    let bh = registries.bulkheads().bulkhead(name);
    assert_eq!(
        bh.metrics().available_concurrent_calls(),
        bh.metrics().max_allowed_concurrent_calls()
    );
    assert_eq!(
        retry.metrics().number_of_failed_calls_with_retry_attempt(),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn named_passes_inner_rejections_through_flat() {
    let name = "tower-named-flat";
    let cb = resil::registries().circuit_breakers().circuit_breaker(name);
    cb.transition_to_open_state().unwrap();
    let svc = ServiceBuilder::new()
        .layer(named(name).circuit_breaker().bulkhead().build())
        .service(service_fn(|_: ()| async { IoResult::Ok(()) }));
    assert!(matches!(
        svc.oneshot(()).await,
        Err(Error::CallNotPermitted(_))
    ));
}
