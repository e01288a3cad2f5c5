//! Keyed instances (`key = expr`): a call for a key the table holds against
//! the unkeyed call through the same attribute, and the memory one key costs.
//!
//! ```text
//! cargo bench -p resil-bench --features bench --bench keyed -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! The keyed call formats the key into a stack buffer, takes the name's
//! table lock for one hash lookup and clones an `Arc`; the unkeyed one loads
//! its cached instance. Before the benches run, the bytes one keyed breaker
//! keeps (its instance, its key and its table slot) are counted with
//! `resil-testkit`'s allocator and printed.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resil_config::{Resilience, registries};
use resil_core::circuit_breaker::CircuitBreaker;

#[global_allocator]
static ALLOC: resil_testkit::CountingAlloc = resil_testkit::CountingAlloc;

#[derive(Debug)]
struct Refused;

impl From<resil::Rejection> for Refused {
    fn from(_: resil::Rejection) -> Self {
        Refused
    }
}

#[resil::circuit_breaker(name = "bench-plain")]
fn plain(x: u64) -> Result<u64, Refused> {
    Ok(black_box(x))
}

#[resil::circuit_breaker(name = "bench-keyed", key = tenant)]
fn keyed(tenant: &str, x: u64) -> Result<u64, Refused> {
    Ok(black_box(x))
}

#[resil::circuit_breaker(name = "bench-keyed-id", key = id)]
fn keyed_id(id: u64, x: u64) -> Result<u64, Refused> {
    Ok(black_box(x))
}

#[resil::circuit_breaker(name = "bench-memory", key = id)]
fn memory(id: u64) -> Result<u64, Refused> {
    Ok(id)
}

const KEYS: u64 = 10_000;

fn bench(c: &mut Criterion) {
    let toml = "[circuitbreaker.instances.bench-plain]\n\
                [circuitbreaker.instances.bench-keyed]\n\
                [circuitbreaker.instances.bench-keyed-id]\n\
                [circuitbreaker.instances.bench-memory]\nmax-keys = 20000\n";
    Resilience::builder()
        .file_contents("resilience.toml", toml)
        .env_vars(Vec::<(String, String)>::new())
        .init()
        .expect("a valid configuration");

    // the bytes a key keeps: the first call creates the table, then every
    // new key adds its breaker, its key and its slot (the map's growth included)
    memory(u64::MAX).unwrap();
    let ((), kept) = resil_testkit::bytes_during(|| {
        for id in 0..KEYS {
            memory(id).unwrap();
        }
    });
    let table = registries()
        .keyed::<CircuitBreaker>()
        .table("bench-memory")
        .expect("the table");
    assert_eq!(table.len() as u64, KEYS + 1);
    println!(
        "bytes per keyed breaker (default settings, {KEYS} keys): {}",
        kept / KEYS as i64
    );

    let tenants: Vec<String> = (0..100).map(|i| format!("tenant-{i}")).collect();
    for t in &tenants {
        keyed(t, 0).unwrap();
    }
    for id in 0..100 {
        keyed_id(id, 0).unwrap();
    }

    let mut g = c.benchmark_group("keyed call");
    g.bench_function("unkeyed", |b| b.iter(|| plain(black_box(1))));
    g.bench_function("keyed, one &str key", |b| {
        b.iter(|| keyed(black_box("tenant-7"), black_box(1)))
    });
    g.bench_function("keyed, one u64 key", |b| {
        b.iter(|| keyed_id(black_box(7), black_box(1)))
    });
    let mut i = 0;
    g.bench_function("keyed, 100 &str keys in turn", |b| {
        b.iter(|| {
            i = (i + 1) % tenants.len();
            keyed(black_box(&tenants[i]), black_box(1))
        })
    });
    g.finish();
}

/// Alternating rounds of the unkeyed and the keyed call (one `&str` key),
/// a million calls a round: the minimum and median per call and their
/// ratio, which a machine shared with other work skews less than
/// criterion's separate groups.
fn interleaved(_: &mut Criterion) {
    #[inline(never)]
    fn unkeyed_once() -> bool {
        plain(black_box(1)).is_ok()
    }
    #[inline(never)]
    fn keyed_once() -> bool {
        keyed(black_box("tenant-7"), black_box(1)).is_ok()
    }
    resil_bench::interleaved(
        "keyed call",
        ("keyed", &keyed_once),
        ("unkeyed", &unkeyed_once),
        21,
        1_000_000,
    );
}

criterion_group!(benches, bench, interleaved);
criterion_main!(benches);
