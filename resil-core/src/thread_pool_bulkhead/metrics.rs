//! The metrics snapshot of a thread-pool bulkhead.

/// A snapshot of a thread-pool bulkhead (Resilience4j's
/// `ThreadPoolBulkhead.Metrics`), taken under the pool's lock by
/// [`ThreadPoolBulkhead::metrics`](super::ThreadPoolBulkhead::metrics), so
/// its numbers are consistent with each other.
///
/// Resilience4j's Micrometer gauges read these:
/// `resilience4j.bulkhead.queue.depth`, `.queue.capacity`,
/// `.thread.pool.size`, `.max.thread.pool.size`, `.core.thread.pool.size`,
/// `.active.thread.count`, `.available.thread.count`.
///
/// # Examples
///
/// ```
/// use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
///
/// let config = ThreadPoolBulkheadConfig::builder()
///     .core_thread_pool_size(1)
///     .max_thread_pool_size(2)
///     .queue_capacity(5)
///     .build()?;
/// let bulkhead = ThreadPoolBulkhead::new("report-export", config);
/// let m = bulkhead.metrics();
/// assert_eq!(m.thread_pool_size(), 0); // threads start on demand
/// assert_eq!(m.available_thread_count(), 2);
/// assert_eq!(m.remaining_queue_capacity(), 5);
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadPoolBulkheadMetrics {
    pub(crate) core_thread_pool_size: u32,
    pub(crate) thread_pool_size: u32,
    pub(crate) maximum_thread_pool_size: u32,
    pub(crate) queue_depth: u32,
    pub(crate) queue_capacity: u32,
    pub(crate) active_thread_count: u32,
}

impl ThreadPoolBulkheadMetrics {
    /// The configured core size.
    pub fn core_thread_pool_size(&self) -> u32 {
        self.core_thread_pool_size
    }
    /// The threads the pool has now (started and not retired).
    pub fn thread_pool_size(&self) -> u32 {
        self.thread_pool_size
    }
    /// The configured maximum size.
    pub fn maximum_thread_pool_size(&self) -> u32 {
        self.maximum_thread_pool_size
    }
    /// Tasks waiting in the queue for a thread (a task handed to an idle
    /// thread is not counted, as with Java's `SynchronousQueue`).
    pub fn queue_depth(&self) -> u32 {
        self.queue_depth
    }
    /// Tasks the queue can still take.
    pub fn remaining_queue_capacity(&self) -> u32 {
        self.queue_capacity.saturating_sub(self.queue_depth)
    }
    /// The configured queue capacity.
    pub fn queue_capacity(&self) -> u32 {
        self.queue_capacity
    }
    /// Threads running a task.
    pub fn active_thread_count(&self) -> u32 {
        self.active_thread_count
    }
    /// `maximum_thread_pool_size - active_thread_count`, as in Resilience4j.
    pub fn available_thread_count(&self) -> u32 {
        self.maximum_thread_pool_size
            .saturating_sub(self.active_thread_count)
    }
}
