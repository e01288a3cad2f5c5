//! The time limiter on a future that is ready at once, against the bare
//! future and `tokio::time::timeout`, in the same run and on the same
//! current-thread runtime:
//!
//! ```text
//! cargo bench -p resil-bench --features bench --bench time_limiter -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};

async fn ready(x: u64) -> Result<u64, ()> {
    Ok(x.wrapping_mul(3))
}

fn time_limiter(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let timeout = Duration::from_secs(1);
    let ours = TimeLimiter::new(
        "bench",
        TimeLimiterConfig::builder()
            .timeout_duration(timeout)
            .build()
            .expect("valid config"),
    );

    let mut g = c.benchmark_group("time_limiter");
    g.bench_function("bare ready future", |b| {
        b.to_async(&rt).iter(|| ready(black_box(1)))
    });
    g.bench_function("tokio::time::timeout", |b| {
        b.to_async(&rt)
            .iter(|| tokio::time::timeout(timeout, ready(black_box(1))))
    });
    g.bench_function("resil call_async", |b| {
        b.to_async(&rt)
            .iter(|| ours.call_async(|| ready(black_box(1))))
    });
    g.finish();
}

criterion_group!(benches, time_limiter);
criterion_main!(benches);
