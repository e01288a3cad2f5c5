//! Instruction counts of the semaphore bulkhead's call paths, for callgrind
//! (deterministic where wall-clock benchmarks on a shared machine are not):
//!
//! ```text
//! cargo build --release -p resil-bench --example bulkhead_probe
//! for m in bare try-acquire call call-async chain try-acquire-buffered chain-buffered; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg-$m.out target/release/examples/bulkhead_probe $m
//! done
//! ```
//!
//! Each mode makes 200 000 calls of a ready query on a `ManualClock`:
//! `bare` calls it, `try-acquire` takes `try_acquire_permission` and drops
//! the permit around it, `call` runs it through `Bulkhead::call`,
//! `call-async` through `Bulkhead::call_async` (polled once with a no-op
//! waker), `chain` through `Decorators` with the bulkhead alone (async).
//! `-buffered` after a mode turns on a 100-event buffer (the registries'
//! default). The difference of two totals divided by 200 000 is what one
//! call adds.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use resil_core::Decorators;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
use resil_core::clock::ManualClock;

const CALLS: usize = 200_000;

#[inline(never)]
fn query(x: u64) -> Result<u64, std::io::Error> {
    Ok(black_box(x).wrapping_mul(3))
}

fn ready<F: Future>(f: F) -> F::Output {
    match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("a ready call"),
    }
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let (mode, buffered) = match mode.strip_suffix("-buffered") {
        Some(mode) => (mode.to_owned(), true),
        None => (mode, false),
    };
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(1000)
        .build()
        .expect("a configuration");
    let bulkhead = Bulkhead::with_clock("probe", config, ManualClock::new());
    if buffered {
        bulkhead.event_publisher().enable_buffer(100);
    }
    let chain = Decorators::new().with_bulkhead(&bulkhead);
    match mode.as_str() {
        "bare" => repeat(|| query(black_box(1)).ok()),
        "try-acquire" => repeat(|| {
            let permit = bulkhead.try_acquire_permission();
            let out = query(black_box(1)).ok();
            drop(black_box(permit));
            out
        }),
        "call" => repeat(|| bulkhead.call(|| query(black_box(1))).ok()),
        "call-async" => {
            repeat(|| ready(bulkhead.call_async(|| async { query(black_box(1)) })).ok())
        }
        "chain" => repeat(|| ready(chain.call_async(|| async { query(black_box(1)) })).ok()),
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
