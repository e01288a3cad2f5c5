//! The attributes' success path allocates nothing once the call site has
//! found its instances: the four sync layers and the five async layers, on
//! the global registries' instances with their defaults (recent-events
//! buffers on, as the actuator reads them), counted by the counting allocator;
//! and a deadline, named or fixed, around them.

use std::hint::black_box;
use std::task::{Context, Poll, Waker};

use resil::Rejection;

#[global_allocator]
static ALLOC: resil_testkit::CountingAlloc = resil_testkit::CountingAlloc;

#[derive(Debug)]
enum DbError {
    Rejected,
}

impl From<Rejection> for DbError {
    fn from(_: Rejection) -> Self {
        DbError::Rejected
    }
}

#[resil::retry(name = "alloc-sync")]
#[resil::circuit_breaker(name = "alloc-sync")]
#[resil::rate_limiter(name = "alloc-sync")]
#[resil::bulkhead(name = "alloc-sync")]
fn four_layers(x: u64) -> Result<u64, DbError> {
    Ok(black_box(x))
}

#[resil::retry(name = "alloc-async")]
#[resil::circuit_breaker(name = "alloc-async")]
#[resil::rate_limiter(name = "alloc-async")]
#[resil::time_limiter(name = "alloc-async")]
#[resil::bulkhead(name = "alloc-async")]
async fn five_layers(x: u64) -> Result<u64, DbError> {
    Ok(black_box(x))
}

/// Polls a future that completes without waiting, once.
#[resil::deadline(name = "alloc-deadline")]
#[resil::retry(name = "alloc-deadline")]
#[resil::circuit_breaker(name = "alloc-deadline")]
fn named_deadline(x: u64) -> Result<u64, DbError> {
    Ok(x + 1)
}

#[resil::deadline(timeout = "800ms")]
#[resil::retry(name = "alloc-deadline")]
#[resil::time_limiter(name = "alloc-deadline")]
async fn fixed_deadline(x: u64) -> Result<u64, DbError> {
    Ok(x + 1)
}

fn poll_once<F: std::future::Future>(f: F) -> Poll<F::Output> {
    let f = std::pin::pin!(f);
    f.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn the_attributes_success_path_allocates_nothing() {
    // The first calls find (and create) the instances and fill the call
    // sites' caches; the buffers are full after 100 events.
    for _ in 0..200 {
        four_layers(1).expect("permitted");
        assert!(matches!(poll_once(five_layers(1)), Poll::Ready(Ok(1))));
    }
    let buffer = resil::registries()
        .circuit_breakers()
        .circuit_breaker("alloc-async")
        .event_publisher()
        .buffer_capacity();
    assert!(buffer > 0, "the registry's instances keep recent events");

    let (_, n) = resil_testkit::allocations_during(|| {
        for _ in 0..100 {
            black_box(four_layers(black_box(1)).ok());
        }
    });
    assert_eq!(n, 0, "allocations of the four sync attributes");
    let (_, n) = resil_testkit::allocations_during(|| {
        for _ in 0..100 {
            assert!(matches!(
                poll_once(five_layers(black_box(1))),
                Poll::Ready(Ok(1))
            ));
        }
    });
    assert_eq!(n, 0, "allocations of the five async attributes");
}

#[test]
fn a_deadline_adds_no_allocation() {
    for _ in 0..200 {
        named_deadline(1).expect("permitted");
        assert!(matches!(poll_once(fixed_deadline(1)), Poll::Ready(Ok(2))));
    }
    let (_, n) = resil_testkit::allocations_during(|| {
        for _ in 0..100 {
            black_box(named_deadline(black_box(1)).ok());
        }
    });
    assert_eq!(
        n, 0,
        "allocations of a named deadline outside sync attributes"
    );
    let (_, n) = resil_testkit::allocations_during(|| {
        for _ in 0..100 {
            assert!(matches!(
                poll_once(fixed_deadline(black_box(1))),
                Poll::Ready(Ok(2))
            ));
        }
    });
    assert_eq!(
        n, 0,
        "allocations of a fixed deadline outside async attributes"
    );
}
