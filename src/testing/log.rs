//! The events of a test scope's instances, in order: a sink of the
//! observer that records only for the registries a scope started it on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resil_config::Aspect;
use resil_core::event::{Event, EventKind};

use crate::observe::Observed;
use crate::observe::sink::{Follower, Sink};

/// One event of a test scope ([`TestScope::events`](super::TestScope::events)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeEvent {
    aspect: Aspect,
    name: String,
    at: Duration,
    event_type: String,
    detail: String,
}

impl ScopeEvent {
    /// The pattern of the instance that published it.
    pub fn aspect(&self) -> Aspect {
        self.aspect
    }

    /// The instance's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// When it was published, on the scope's clock.
    pub fn at(&self) -> Duration {
        self.at
    }

    /// Its type, as the event enum's variant is named (`StateTransition`,
    /// `Retry`, `CallNotPermitted`, ...).
    pub fn event_type(&self) -> &str {
        &self.event_type
    }

    /// The whole event, as its `Debug` prints it.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

/// The sink: off in every binding but a scope's.
#[derive(Default)]
pub(crate) struct EventLog {
    on: Arc<AtomicBool>,
    events: Arc<Mutex<Vec<ScopeEvent>>>,
}

impl EventLog {
    /// Records from now on.
    pub(crate) fn start(&self) {
        self.on.store(true, Ordering::Release);
    }

    /// What it recorded.
    pub(crate) fn events(&self) -> Vec<ScopeEvent> {
        crate::sync::lock(&self.events).clone()
    }
}

impl<P: Observed> Sink<P> for EventLog {
    fn follow(&self, _: &P) -> Follower<P::Kind> {
        let on = Arc::clone(&self.on);
        let events = Arc::clone(&self.events);
        Box::new(move |e: &Event<P::Kind>| {
            if !on.load(Ordering::Acquire) {
                return;
            }
            let event = ScopeEvent {
                aspect: P::ASPECT,
                name: e.name().to_owned(),
                at: Duration::from_nanos(e.created_at().as_u64()),
                event_type: format!("{:?}", e.kind().event_type()),
                detail: format!("{:?}", e.kind()),
            };
            crate::sync::lock(&events).push(event);
        })
    }
}
