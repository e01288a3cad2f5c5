//! What the semaphore bulkhead tests share: a configuration in one call and
//! the two gauges of its metrics.

use std::time::Duration;

use resil_core::bulkhead::{Bulkhead, BulkheadConfig};

pub fn config(max: u32, wait: Duration, fair: bool) -> BulkheadConfig {
    BulkheadConfig::builder()
        .max_concurrent_calls(max)
        .max_wait_duration(wait)
        .fair_call_handling_enabled(fair)
        .build()
        .unwrap()
}

pub fn available(b: &Bulkhead) -> u32 {
    b.metrics().available_concurrent_calls()
}

pub fn waiting(b: &Bulkhead) -> u32 {
    b.metrics().number_of_waiting_calls()
}
