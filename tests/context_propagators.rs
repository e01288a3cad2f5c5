//! Context propagators named in resilience.toml: registered at link time
//! with `resil::context_propagator!`, the `tracing` span's by default, and an
//! unknown name refused at start-up.

use std::cell::RefCell;

use resil::config::Resilience;

thread_local! {
    static TENANT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Puts the worker's previous tenant back after the task.
struct Restore(Option<String>);

impl Drop for Restore {
    fn drop(&mut self) {
        TENANT.with(|t| *t.borrow_mut() = self.0.take());
    }
}

resil::context_propagator!("tenant", || {
    let tenant = TENANT.with(|t| t.borrow().clone());
    move || Restore(TENANT.with(|t| t.replace(tenant)))
});

const TOML: &str = r#"
[threadpoolbulkhead.instances.tenant-pool]
context-propagators = ["tenant", "tracing"]

[threadpoolbulkhead.instances.quiet-pool]
context-propagators = []

[threadpoolbulkhead.configs.with-tenant]
context-propagators = ["tenant"]

[threadpoolbulkhead.instances.inherits]
base-config = "with-tenant"
"#;

fn load(toml: &str) -> Result<Resilience, resil::config::InitError> {
    Resilience::builder()
        .file_contents("resilience.toml", toml)
        .env_vars(Vec::<(String, String)>::new())
        .load()
}

fn tenant_on_the_worker(resilience: &Resilience, pool: &str) -> Option<String> {
    let pool = resilience
        .registries()
        .thread_pool_bulkheads()
        .thread_pool_bulkhead(pool);
    TENANT.with(|t| *t.borrow_mut() = Some("acme".to_owned()));
    let seen = pool
        .submit(|| TENANT.with(|t| t.borrow().clone()))
        .wait()
        .unwrap();
    TENANT.with(|t| *t.borrow_mut() = None);
    seen
}

#[test]
fn a_listed_propagator_carries_the_callers_context_to_the_worker() {
    let resilience = load(TOML).unwrap();
    assert_eq!(
        tenant_on_the_worker(&resilience, "tenant-pool").as_deref(),
        Some("acme")
    );
    assert_eq!(
        tenant_on_the_worker(&resilience, "inherits").as_deref(),
        Some("acme")
    );
    assert_eq!(
        tenant_on_the_worker(&resilience, "quiet-pool"),
        None,
        "`[]`: none"
    );
    // Not listed: the defaults (the span's), not the tenant's.
    assert_eq!(tenant_on_the_worker(&resilience, "unlisted-pool"), None);
    let config = |name| {
        resilience
            .registries()
            .thread_pool_bulkheads()
            .thread_pool_bulkhead(name)
            .config()
            .context_propagators()
            .len()
    };
    assert_eq!(config("tenant-pool"), 2);
    assert_eq!(config("quiet-pool"), 0);
    assert_eq!(config("unlisted-pool"), 1, "the `tracing` default");
}

#[test]
fn an_unknown_propagator_is_a_start_up_error_that_names_it() {
    let bad = r#"
[threadpoolbulkhead.instances.pool]
context-propagators = ["tenant", "tennant"]
"#;
    let error = load(bad).unwrap_err().to_string();
    assert!(error.contains("`tennant`"), "{error}");
    assert!(
        error.contains("threadpoolbulkhead.instances.pool.context-propagators"),
        "{error}"
    );
    assert!(error.contains("resil::context_propagator!"), "{error}");
    assert!(
        error.contains("`tenant`"),
        "lists the registered ones: {error}"
    );
}

#[resil::thread_pool_bulkhead(name = "span-pool")]
fn current_span() -> Result<Option<&'static str>, resil::Rejection> {
    Ok(tracing::Span::current().metadata().map(|m| m.name()))
}

#[test]
fn the_attribute_carries_the_callers_span_by_default() {
    tracing::subscriber::set_global_default(tracing_subscriber::registry()).unwrap();
    let span = tracing::info_span!("checkout");
    let seen = span.in_scope(current_span);
    assert_eq!(seen.unwrap(), Some("checkout"));
    assert_eq!(current_span().unwrap(), None, "outside the span");
}
