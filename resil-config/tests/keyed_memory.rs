//! What a key weighs: the heap bytes one keyed breaker keeps (its instance,
//! its key, its slot in the table), counted with the counting allocator so
//! that they cannot grow unnoticed. (One test: the registries are per
//! process.)

use resil_config::{KeyedCallSite, Resilience, registries};
use resil_core::circuit_breaker::CircuitBreaker;

#[global_allocator]
static ALLOC: resil_testkit::CountingAlloc = resil_testkit::CountingAlloc;

static SITE: KeyedCallSite<CircuitBreaker> = KeyedCallSite::new("memory");

fn call(id: u64) {
    SITE.get(&id)
        .call(|| Ok::<_, std::io::Error>(id))
        .expect("closed");
}

/// The goal is 1.5 KiB a key with the default settings (a 100-call window,
/// a 100-event buffer): a key that saw a call keeps its breaker (1014
/// bytes), its key and slot, and the few events it published; the buffer
/// takes its memory as events come. It kept 5 831 bytes when every key's
/// buffer took room for 100 events at once.
#[test]
fn a_keyed_breaker_keeps_at_most_one_and_a_half_kib() {
    Resilience::builder()
        .file_contents(
            "resilience.toml",
            "[circuitbreaker.instances.memory]\nmax-keys = 20000\n",
        )
        .env_vars(Vec::<(String, String)>::new())
        .init()
        .unwrap_or_else(|e| panic!("{e}"));
    call(u64::MAX); // creates the table
    const KEYS: u64 = 10_000;
    let ((), kept) = resil_testkit::bytes_during(|| {
        for id in 0..KEYS {
            call(id);
        }
    });
    let per_key = kept / KEYS as i64;
    println!("bytes per keyed breaker: {per_key}");
    assert!(per_key <= 1536, "a keyed breaker keeps {per_key} bytes");

    // a busy key's buffer grows to the configured size, and no further
    let busy = SITE.get(&7_u64);
    let ((), grown) = resil_testkit::bytes_during(|| {
        for _ in 0..1_000 {
            call(7);
        }
    });
    let events = busy.event_publisher().recent_events().len();
    assert_eq!(events, 100);
    assert!(
        grown < 6 * 1024,
        "the buffer of a busy key took {grown} bytes"
    );
    let table = registries()
        .keyed::<CircuitBreaker>()
        .table("memory")
        .expect("the table");
    assert_eq!(table.len() as u64, KEYS + 1);
}
