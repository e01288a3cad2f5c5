//! A panicking supplier, fallback or future through the Spring Cloud
//! facade, and a dropped `run_async`: the panic reaches the caller, the
//! breaker counts what it saw, and every permit goes back.

use resil::cloud::BlockingBulkhead;

mod support_cloud;

use support_cloud::factory;

/// A panicking supplier, on the executor or on the caller's thread: the
/// panic reaches the caller, the breaker counts a failure, and every permit
/// goes back.
#[test]
fn a_panicking_supplier_is_resumed_and_every_permit_goes_back() {
    // A timeout no loaded machine reaches before the task panics: the test
    // is about the panic, not the time limiter.
    for toml in [
        "[cloud]\nenable-semaphore-default-bulkhead = true\n",
        "[cloud]\nenable-semaphore-default-bulkhead = true\ndisable-thread-pool = true\n",
    ] {
        let f = factory(&format!(
            "{toml}[timelimiter.configs.default]\ntimeout-duration = \"60s\"\n"
        ));
        let breaker = f.create_in_group("panicky", "panicky-group");
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            breaker.run(|| -> Result<u32, ()> { panic!("supplier bug") }, |_| 0)
        }));
        let message = caught.unwrap_err();
        assert_eq!(
            message.downcast_ref::<&str>(),
            Some(&"supplier bug"),
            "{toml}"
        );
        assert_eq!(
            breaker.circuit_breaker().metrics().number_of_failed_calls(),
            1
        );
        let BlockingBulkhead::Semaphore(bulkhead) = breaker.bulkhead() else {
            panic!("a semaphore bulkhead");
        };
        assert_eq!(
            bulkhead.metrics().available_concurrent_calls(),
            bulkhead.config().max_concurrent_calls()
        );
        // and the next call goes through
        assert_eq!(breaker.run(|| Ok::<_, ()>(5), |_| 0), 5);
    }
}

/// The thread-pool bulkhead of a group survives a panicking supplier too.
#[test]
fn a_panicking_supplier_through_the_thread_pool_bulkhead() {
    // A timeout no loaded machine reaches before the task panics.
    let f = factory("[timelimiter.configs.default]\ntimeout-duration = \"60s\"\n");
    let breaker = f.create_in_group("panicky", "pool");
    assert!(matches!(
        breaker.bulkhead(),
        BlockingBulkhead::ThreadPool(_)
    ));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        breaker.run(|| -> Result<u32, ()> { panic!("supplier bug") }, |_| 0)
    }));
    assert!(caught.is_err());
    assert_eq!(breaker.run(|| Ok::<_, ()>(5), |_| 0), 5);
    let BlockingBulkhead::ThreadPool(pool) = breaker.bulkhead() else {
        unreachable!()
    };
    assert_eq!(pool.metrics().queue_depth(), 0);
}

/// A panicking fallback propagates; the breaker had recorded the error first.
#[test]
fn a_panicking_fallback_propagates_after_the_error_was_recorded() {
    let f = factory("[cloud]\nenable-semaphore-default-bulkhead = true\n");
    let breaker = f.create("fallback-bug");
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        breaker.run(|| Err::<u32, _>("down"), |_| panic!("fallback bug"))
    }));
    assert!(caught.is_err());
    assert_eq!(
        breaker.circuit_breaker().metrics().number_of_failed_calls(),
        1
    );
    assert_eq!(breaker.run(|| Ok::<_, &str>(5), |_| 0), 5);
}

/// Dropping `run_async` at its await gives every permit back and records nothing.
#[tokio::test(start_paused = true)]
async fn dropping_run_async_gives_every_permit_back() {
    let f = factory("[bulkhead.configs.dropped]\nmax-concurrent-calls = 1\n");
    let breaker = f.create_in_group("dropped-call", "dropped");
    let call = breaker.run_async(std::future::pending::<Result<u32, ()>>, |e| {
        panic!("no outcome expected, got {e:?}")
    });
    let mut call = Box::pin(call);
    // polled once: the permits are taken and the future is waiting
    assert!(futures_poll_once(call.as_mut()).await.is_none());
    assert_eq!(
        breaker
            .async_bulkhead()
            .metrics()
            .available_concurrent_calls(),
        0
    );
    drop(call);
    assert_eq!(
        breaker
            .async_bulkhead()
            .metrics()
            .available_concurrent_calls(),
        1
    );
    let m = breaker.circuit_breaker().metrics();
    assert_eq!(m.number_of_buffered_calls(), 0);
    assert_eq!(
        breaker
            .time_limiter()
            .unwrap()
            .metrics()
            .number_of_timeout_calls(),
        0
    );
    // and a panicking future resumes its panic with the permit back
    let caught = tokio::spawn({
        let breaker = breaker.clone();
        async move {
            breaker
                .run_async(
                    || async {
                        if true {
                            panic!("future bug");
                        }
                        Ok::<u32, ()>(1)
                    },
                    |_| 0,
                )
                .await
        }
    })
    .await;
    assert!(caught.unwrap_err().is_panic());
    assert_eq!(
        breaker
            .async_bulkhead()
            .metrics()
            .available_concurrent_calls(),
        1
    );
    assert_eq!(
        breaker.circuit_breaker().metrics().number_of_failed_calls(),
        1
    );
}

/// Polls `f` once.
async fn futures_poll_once<F: std::future::Future + Unpin>(f: F) -> Option<F::Output> {
    let mut f = f;
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut f).poll(cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        })
    })
    .await
}
