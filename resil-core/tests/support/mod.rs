//! Helpers shared by the integration tests of resil-core; those of one
//! primitive's tests are in its module.
#![allow(dead_code, unreachable_pub, missing_docs, unused_imports)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use resil_core::event::{Event, EventKind, EventPublisher};

/// Records every event of a publisher, in order; `take()` drains them.
#[derive(Clone)]
pub struct Recorder<K> {
    events: Arc<Mutex<Vec<K>>>,
}

impl<K: EventKind> Recorder<K> {
    pub fn attach(publisher: &EventPublisher<K>) -> Self {
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        publisher.on_event(move |e: &Event<K>| sink.lock().unwrap().push(e.kind().clone()));
        Recorder { events }
    }

    /// The events recorded since the last `take`, oldest first.
    pub fn take(&self) -> Vec<K> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }
}

pub use resil_testkit::{CountingAlloc, allocations_during};

pub mod bulkhead;
pub mod circuit_breaker;
pub mod retry;
pub mod thread_pool_bulkhead;

/// `n` milliseconds.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
