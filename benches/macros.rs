//! A macro-protected function against the same chain written by hand, in one
//! run: the attributes should add nothing measurable over the hand-written
//! `decorate` calls (ratio at most 1.05).
//!
//! ```text
//! cargo bench -p resil-bench --features bench --bench macros
//! ```
//!
//! Both use instances of the global registries on the same (default)
//! configuration, so both publish the same events to the same recent-events
//! buffers; the macro also finds its instances through its per-call-site
//! cache (one atomic load per layer) and builds its classifier per call.

use std::hint::black_box;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use criterion::{Criterion, criterion_group, criterion_main};
use resil::bulkhead::Bulkhead;
use resil::circuit_breaker::{CircuitBreaker, Classifier};
use resil::{Error, Rejection};

#[derive(Debug)]
enum DbError {
    Rejected,
}

impl From<Rejection> for DbError {
    fn from(_: Rejection) -> Self {
        DbError::Rejected
    }
}

fn work(x: u64) -> Result<u64, DbError> {
    Ok(black_box(x))
}

#[resil::circuit_breaker(name = "bench-macro-cb")]
fn macro_breaker(x: u64) -> Result<u64, DbError> {
    work(x)
}

#[resil::circuit_breaker(name = "bench-macro-chain-cb")]
#[resil::bulkhead(name = "bench-macro-chain-bh")]
fn macro_chain(x: u64) -> Result<u64, DbError> {
    work(x)
}

#[resil::circuit_breaker(name = "bench-macro-async-cb")]
#[resil::bulkhead(name = "bench-macro-async-bh")]
async fn macro_chain_async(x: u64) -> Result<u64, DbError> {
    work(x)
}

fn hand_breaker(cb: &CircuitBreaker, x: u64) -> Result<u64, DbError> {
    cb.decorate(&Classifier::new(), || work(x).map_err(Error::Inner))
        .map_err(Error::into_error)
}

fn hand_chain(cb: &CircuitBreaker, bh: &Bulkhead, x: u64) -> Result<u64, DbError> {
    cb.decorate(&Classifier::new(), || {
        bh.decorate(|| work(x).map_err(Error::Inner))
    })
    .map_err(Error::into_error)
}

async fn hand_chain_async(cb: &CircuitBreaker, bh: &Bulkhead, x: u64) -> Result<u64, DbError> {
    cb.decorate_async(&Classifier::new(), || async {
        bh.decorate_async(|| async { work(x).map_err(Error::Inner) })
            .await
    })
    .await
    .map_err(Error::into_error)
}

/// Polls a future that completes without waiting.
fn poll_ready<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn instances(cb: &str, bh: &str) -> (Arc<CircuitBreaker>, Arc<Bulkhead>) {
    let registries = resil_config::registries();
    (
        registries.circuit_breakers().circuit_breaker(cb),
        registries.bulkheads().bulkhead(bh),
    )
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("circuit_breaker");
    g.bench_function("bare", |b| b.iter(|| work(black_box(1))));
    let (cb, _) = instances("bench-hand-cb", "bench-unused");
    g.bench_function("hand", |b| b.iter(|| hand_breaker(&cb, black_box(1))));
    g.bench_function("macro", |b| b.iter(|| macro_breaker(black_box(1))));
    g.finish();

    let mut g = c.benchmark_group("circuit_breaker_bulkhead");
    g.bench_function("bare", |b| b.iter(|| work(black_box(1))));
    let (cb, bh) = instances("bench-hand-chain-cb", "bench-hand-chain-bh");
    g.bench_function("hand", |b| b.iter(|| hand_chain(&cb, &bh, black_box(1))));
    g.bench_function("macro", |b| b.iter(|| macro_chain(black_box(1))));
    g.finish();

    let mut g = c.benchmark_group("circuit_breaker_bulkhead_async");
    g.bench_function("bare", |b| {
        b.iter(|| poll_ready(async { work(black_box(1)) }))
    });
    let (cb, bh) = instances("bench-hand-async-cb", "bench-hand-async-bh");
    g.bench_function("hand", |b| {
        b.iter(|| poll_ready(hand_chain_async(&cb, &bh, black_box(1))))
    });
    g.bench_function("macro", |b| {
        b.iter(|| poll_ready(macro_chain_async(black_box(1))))
    });
    g.finish();
}

criterion_group!(macros, benches);
criterion_main!(macros);
