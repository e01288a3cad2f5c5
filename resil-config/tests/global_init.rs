//! `init` builds the global registries once; call sites find the configured
//! instances; a second `init` is refused. (One test: the registries are per process.)

use std::ptr;

use resil_config::{CallSite, InitError, Resilience, is_initialized, registries};
use resil_core::circuit_breaker::CircuitBreaker;
use resil_core::clock::{Clock, ManualClock};
use std::time::Duration;

fn query() -> &'static CircuitBreaker {
    static SITE: CallSite<CircuitBreaker> = CallSite::new("inventory-query");
    SITE.get()
}

#[test]
fn init_configures_the_call_sites_once() {
    let clock = ManualClock::new();
    let report = Resilience::builder()
        .file_contents(
            "resilience.toml",
            "[circuitbreaker.instances.inventory-query]\nsliding-window-size = 20\nminimum-number-of-calls = 2\n",
        )
        .env_vars(Vec::<(String, String)>::new())
        .clock(clock.clone())
        .init()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(is_initialized());
    assert_eq!(report.instances().len(), 1);

    let cb = query();
    assert_eq!(cb.config().sliding_window_size(), 20);
    assert!(ptr::eq(query(), cb));
    assert!(ptr::eq(
        &*registries()
            .circuit_breakers()
            .find("inventory-query")
            .unwrap(),
        cb
    ));
    // the instances run on the clock given to the builder
    clock.advance(Duration::from_secs(5));
    assert_eq!(cb.clock().now().as_duration(), Duration::from_secs(5));
    // names not configured run on the registry default
    static OTHER: CallSite<CircuitBreaker> = CallSite::new("payment");
    assert_eq!(OTHER.get().config().sliding_window_size(), 100);

    let again = Resilience::builder()
        .file_contents("resilience.toml", "")
        .env_vars(Vec::<(String, String)>::new())
        .init()
        .unwrap_err();
    assert!(matches!(again, InitError::AlreadyInitialized), "{again}");
    assert!(ptr::eq(query(), cb), "a refused init changes nothing");
}
