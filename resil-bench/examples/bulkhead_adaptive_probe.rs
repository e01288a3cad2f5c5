//! Instruction counts of an adaptive bulkhead's calls against a fixed one's
//! on the same clock, for callgrind (deterministic where wall-clock
//! benchmarks on a shared machine are not):
//!
//! ```text
//! cargo build --release -p resil-bench --example bulkhead_adaptive_probe
//! for m in bare try-acquire call chain chain-buffered breaker-chain; do
//!   for a in fixed aimd gradient2 vegas; do
//!     valgrind --tool=callgrind --callgrind-out-file=/tmp/cg-$a-$m.out \
//!       target/release/examples/bulkhead_adaptive_probe $a $m
//!   done
//! done
//! ```
//!
//! Each run makes 200 000 calls of a query that takes a millisecond of a
//! `ManualClock` (it advances the clock), through a bulkhead of 1000 calls
//! whose limit is `fixed` or adapts (`aimd`, `gradient2`, `vegas`, with
//! windows of a second: the algorithm runs every thousand calls). `bare`
//! calls the query, `try-acquire` takes `try_acquire_permission` and drops
//! the permit around it, `call` runs it through `Bulkhead::call`, `chain`
//! through `Decorators` with the bulkhead alone (async, polled once),
//! `breaker-chain` with a circuit breaker outside it (which reads the clock
//! at both ends of the call too: the chain shares those readings);
//! `-buffered` turns on a 100-event buffer (the registries' default). The
//! difference of two totals divided by 200 000 is what one call adds: an
//! algorithm's minus `fixed`'s is what adapting costs.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resil_core::Decorators;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig, LimitAlgorithm};
use resil_core::circuit_breaker::CircuitBreaker;
use resil_core::clock::ManualClock;

const CALLS: usize = 200_000;

#[inline(never)]
fn query(clock: &ManualClock, x: u64) -> Result<u64, std::io::Error> {
    clock.advance(Duration::from_millis(1));
    Ok(black_box(x).wrapping_mul(3))
}

fn ready<F: Future>(f: F) -> F::Output {
    match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("a ready call"),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let algorithm: LimitAlgorithm = args
        .next()
        .unwrap_or_default()
        .parse()
        .expect("fixed, aimd, gradient2 or vegas");
    let mode = args.next().unwrap_or_default();
    let (mode, buffered) = match mode.strip_suffix("-buffered") {
        Some(mode) => (mode.to_owned(), true),
        None => (mode, false),
    };
    let config = BulkheadConfig::builder()
        .limit_algorithm(algorithm)
        .max_concurrent_calls(1000)
        .build()
        .expect("a configuration");
    let clock = ManualClock::new();
    let bulkhead = Bulkhead::with_clock("probe", config, clock.clone());
    if buffered {
        bulkhead.event_publisher().enable_buffer(100);
    }
    let breaker = CircuitBreaker::with_clock("probe", Default::default(), clock.clone());
    if buffered {
        breaker.event_publisher().enable_buffer(100);
    }
    let chain = Decorators::new().with_bulkhead(&bulkhead);
    let breaker_chain = Decorators::new()
        .with_circuit_breaker(&breaker)
        .with_bulkhead(&bulkhead);
    let clock = &clock;
    match mode.as_str() {
        "bare" => repeat(|| query(clock, black_box(1)).ok()),
        "try-acquire" => repeat(|| {
            let permit = bulkhead.try_acquire_permission();
            let out = query(clock, black_box(1)).ok();
            drop(black_box(permit));
            out
        }),
        "call" => repeat(|| bulkhead.call(|| query(clock, black_box(1))).ok()),
        "chain" => repeat(|| ready(chain.call_async(|| async { query(clock, black_box(1)) })).ok()),
        "breaker-chain" => {
            repeat(|| ready(breaker_chain.call_async(|| async { query(clock, black_box(1)) })).ok())
        }
        other => panic!("unknown mode `{other}`"),
    }
}

/// `CALLS` calls of `f`, one loop per mode so that choosing the mode costs
/// nothing per call.
#[inline(never)]
fn repeat(mut f: impl FnMut() -> Option<u64>) {
    for _ in 0..CALLS {
        black_box(f());
    }
}
