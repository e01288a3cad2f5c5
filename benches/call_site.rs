//! Finding the instance of a protected function: the per-call-site cache of
//! resil-config against a registry lookup, and a guarded call through each.
//!
//! ```text
//! cargo bench -p resil-bench --features bench --bench call_site
//! ```
//!
//! After its first call, `CallSite::get` is one atomic load; a registry
//! lookup takes a read lock, searches a map and clones an `Arc`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resil_config::{CallSite, Resilience, registries};
use resil_core::circuit_breaker::CircuitBreaker;

fn work(x: u64) -> Result<u64, u64> {
    Ok(black_box(x))
}

fn site() -> &'static CircuitBreaker {
    static SITE: CallSite<CircuitBreaker> = CallSite::new("inventory-query");
    SITE.get()
}

fn bench(c: &mut Criterion) {
    let toml = "[circuitbreaker.instances.inventory-query]\nsliding-window-size = 100\n";
    Resilience::builder()
        .file_contents("resilience.toml", toml)
        .env_vars(Vec::<(String, String)>::new())
        .init()
        .expect("a valid configuration");
    let registry = registries().circuit_breakers();
    let held = registry.circuit_breaker("inventory-query");

    let mut g = c.benchmark_group("find the instance");
    g.bench_function("CallSite::get", |b| b.iter(|| black_box(site())));
    g.bench_function("registry.circuit_breaker(name)", |b| {
        b.iter(|| black_box(registry.circuit_breaker(black_box("inventory-query"))))
    });
    g.finish();

    let mut g = c.benchmark_group("guarded call");
    g.bench_function("bare call", |b| b.iter(|| work(1)));
    g.bench_function("held instance", |b| b.iter(|| held.call(|| work(1))));
    g.bench_function("through the call site", |b| {
        b.iter(|| site().call(|| work(1)))
    });
    g.bench_function("through a registry lookup", |b| {
        b.iter(|| {
            registry
                .circuit_breaker(black_box("inventory-query"))
                .call(|| work(1))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
