//! Without `init`, the first protected call builds the global registries on
//! the library defaults and says so once; `init` afterwards is refused.
//! (One test: the global registries are per process.)

mod support;

use std::ptr;

use resil_config::{CallSite, InitError, Resilience, is_initialized, registries};
use resil_core::bulkhead::Bulkhead;
use resil_core::circuit_breaker::CircuitBreaker;
use tracing::Level;

fn query() -> &'static CircuitBreaker {
    static SITE: CallSite<CircuitBreaker> = CallSite::new("inventory-query");
    SITE.get()
}

fn reserve() -> &'static Bulkhead {
    static SITE: CallSite<Bulkhead> = CallSite::new("inventory-command");
    SITE.get()
}

#[test]
fn the_first_call_runs_on_defaults_and_init_is_refused_afterwards() {
    let messages = support::Messages::install();
    assert!(!is_initialized());

    let cb = query();
    assert_eq!(cb.name(), "inventory-query");
    assert_eq!(cb.config().sliding_window_size(), 100, "library default");
    assert!(ptr::eq(query(), cb), "the call site caches its instance");
    assert_eq!(reserve().config().max_concurrent_calls(), 25);
    let found = registries()
        .circuit_breakers()
        .find("inventory-query")
        .unwrap();
    assert!(
        ptr::eq(&*found, cb),
        "the cached instance is the registry's"
    );

    let said = messages.take();
    assert_eq!(said.len(), 1, "said once: {said:?}");
    assert_eq!(said[0].0, Level::WARN);
    assert!(said[0].1.contains("resil::init() was not called before the first protected call (circuitbreaker `inventory-query`)"), "{}", said[0].1);

    let err = Resilience::builder()
        .file_contents(
            "resilience.toml",
            "[circuitbreaker.instances.inventory-query]\nsliding-window-size = 5\n",
        )
        .env_vars(Vec::<(String, String)>::new())
        .init()
        .unwrap_err();
    assert!(
        matches!(&err, InitError::AfterFirstCall { first } if first == "circuitbreaker `inventory-query`"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("call resil::init() at the start of main"),
        "{err}"
    );
    assert!(!is_initialized());
    assert_eq!(
        query().config().sliding_window_size(),
        100,
        "nothing changed under the call site"
    );

    // replacing an instance by hand does not reach the call site, and says so
    registries()
        .circuit_breakers()
        .replace("inventory-query", Default::default());
    let said = messages.take();
    assert!(
        said.iter().any(|(l, m)| *l == Level::WARN
            && m.contains("circuitbreaker `inventory-query` was replaced in the global registry")),
        "{said:?}"
    );
}
