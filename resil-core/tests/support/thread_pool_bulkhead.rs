//! Helpers of the thread-pool bulkhead's tests.

use resil_core::thread_pool_bulkhead::ThreadPoolBulkheadConfig;

/// A pool's settings: `core` and `max` threads, a queue of `queue` tasks.
pub fn config(core: u32, max: u32, queue: u32) -> ThreadPoolBulkheadConfig {
    ThreadPoolBulkheadConfig::builder()
        .core_thread_pool_size(core)
        .max_thread_pool_size(max)
        .queue_capacity(queue)
        .build()
        .unwrap()
}

/// The current thread's name.
pub fn thread_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("<unnamed>")
        .to_owned()
}
