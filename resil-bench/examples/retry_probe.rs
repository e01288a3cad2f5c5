//! Instruction counts of an async retry's success at once, for callgrind
//! (deterministic where wall-clock benchmarks on a shared machine are not):
//!
//! ```text
//! cargo build --release -p resil-bench --features bench --example retry_probe
//! for m in bare backon resil; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg-$m.out target/release/examples/retry_probe $m
//! done
//! ```
//!
//! Each mode makes 200 000 calls of a ready async query on one current-thread
//! runtime: `bare` awaits it, `backon` through backon's `Retryable`, `resil`
//! through `Retry::call_async` (default configuration, a `ManualClock`);
//! `bare-sync`, `backon-sync` and `resil-sync` call the query itself, through
//! `BlockingRetryable` and through `Retry::call`.
//! The difference of two totals divided by 200 000 is what one call adds.

use std::hint::black_box;
use std::time::Duration;

use backon::{BlockingRetryable, ConstantBuilder, Retryable};
use resil_core::clock::ManualClock;
use resil_core::retry::{Retry, RetryConfig};

#[inline(never)]
fn query(x: u64) -> Result<u64, ()> {
    Ok(black_box(x).wrapping_add(1))
}

async fn query_async(x: u64) -> Result<u64, ()> {
    query(x)
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    let retry = Retry::with_clock("probe", RetryConfig::default(), ManualClock::new());
    let builder = ConstantBuilder::new()
        .with_delay(Duration::from_millis(500))
        .with_max_times(2);
    match mode.as_str() {
        "bare-sync" | "backon-sync" | "resil-sync" => {
            for _ in 0..200_000 {
                match mode.as_str() {
                    "bare-sync" => black_box(query(black_box(1)).ok()),
                    "backon-sync" => black_box((|| query(black_box(1))).retry(builder).call().ok()),
                    _ => black_box(retry.call(|| query(black_box(1))).ok()),
                };
            }
            return;
        }
        _ => {}
    }
    rt.block_on(async {
        for _ in 0..200_000 {
            match mode.as_str() {
                "bare" => {
                    black_box(query_async(black_box(1)).await.ok());
                }
                "backon" => {
                    let call = (|| query_async(black_box(1)))
                        .retry(builder)
                        .sleep(|_: Duration| std::future::ready(()));
                    black_box(call.await.ok());
                }
                _ => {
                    black_box(retry.call_async(|| query_async(black_box(1))).await.ok());
                }
            }
        }
    });
}
