//! A `tracing` subscriber that keeps the messages of `resil` events.

use std::fmt;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Messages of the `resil` target, with their level.
#[derive(Clone, Default)]
pub(crate) struct Messages(Arc<Mutex<Vec<(Level, String)>>>);

impl Messages {
    /// Installs a subscriber that records into the returned messages (once per process).
    pub(crate) fn install() -> Messages {
        let messages = Messages::default();
        tracing::subscriber::set_global_default(messages.clone())
            .expect("one subscriber per test binary");
        messages
    }

    pub(crate) fn take(&self) -> Vec<(Level, String)> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

struct Message<'a>(&'a mut String);

impl Visit for Message<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            *self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Messages {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "resil"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut text = String::new();
        event.record(&mut Message(&mut text));
        self.0
            .lock()
            .unwrap()
            .push((*event.metadata().level(), text));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}
