//! Live events as server-sent events, from a broadcast channel fed by the
//! instances' consumers: the event-stream sink.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::response::sse::Event as SseEvent;
use resil_config::Aspect;
use resil_core::event::Event;
use tokio::sync::broadcast;
use tokio_stream::Stream;
use tokio_stream::wrappers::BroadcastStream;

use super::json::EventJson;
use crate::observe::sink::{Follower, Sink};

/// How many events a slow client may fall behind before it misses some
/// (Resilience4j's stream drops on back-pressure too).
const CAPACITY: usize = 256;

/// How often a client gets a `ping` event when nothing happens, as
/// Resilience4j's stream sends one every second.
const PING: Duration = Duration::from_secs(1);

/// One event on its way to the streams.
#[derive(Debug)]
pub(crate) struct Item {
    aspect: Aspect,
    name: String,
    event_type: &'static str,
    data: String,
}

/// The broadcast channel of one [`Registries`](resil_config::Registries):
/// the sink of its streams, one per binding.
/// Its clones, one in each instance's follower, share the channel.
#[derive(Debug, Clone)]
pub(crate) struct Hub {
    tx: broadcast::Sender<Arc<Item>>,
    /// Open streams; with none, an event costs one load and no JSON.
    listeners: Arc<AtomicUsize>,
}

impl Hub {
    pub(crate) fn new() -> Self {
        Hub {
            tx: broadcast::channel(CAPACITY).0,
            listeners: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Sends `event` to the open streams, if there are any.
    pub(crate) fn publish<P: EventJson>(&self, event: &Event<P::Kind>) {
        if self.listeners.load(Ordering::Acquire) == 0 {
            return;
        }
        let (event_type, json) = P::event_json(event);
        let _ = self.tx.send(Arc::new(Item {
            aspect: P::ASPECT,
            name: event.name().to_owned(),
            event_type,
            data: json.to_string(),
        }));
    }

    /// A stream of the events of `aspects`, optionally of one instance and one type.
    pub(crate) fn listen(
        self: &Arc<Self>,
        aspects: &'static [Aspect],
        name: Option<String>,
        event_type: Option<String>,
        slot: Slot,
    ) -> Listener {
        self.listeners.fetch_add(1, Ordering::AcqRel);
        let mut ping = tokio::time::interval(PING);
        // the first tick of an interval is immediate; the first ping is not
        ping.reset();
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Listener {
            rx: BroadcastStream::new(self.tx.subscribe()),
            hub: self.clone(),
            aspects,
            name,
            event_type,
            ping,
            _slot: slot,
        }
    }
}

impl<P: EventJson> Sink<P> for Hub {
    fn follow(&self, _: &P) -> Follower<P::Kind> {
        let hub = self.clone();
        Box::new(move |event| hub.publish::<P>(event))
    }
}

/// The events of one client, with a `ping` every second.
pub(crate) struct Listener {
    rx: BroadcastStream<Arc<Item>>,
    hub: Arc<Hub>,
    aspects: &'static [Aspect],
    name: Option<String>,
    event_type: Option<String>,
    ping: tokio::time::Interval,
    /// Its place among the actuator's open streams, given back when it is dropped.
    _slot: Slot,
}

impl Listener {
    fn wants(&self, item: &Item) -> bool {
        self.aspects.contains(&item.aspect)
            && self.name.as_ref().is_none_or(|n| *n == item.name)
            && self
                .event_type
                .as_ref()
                .is_none_or(|t| t.eq_ignore_ascii_case(item.event_type))
    }
}

/// Resilience4j's server-sent event: `id` the instance, `event` the type,
/// `data` the DTO.
fn sse_event(item: &Item) -> SseEvent {
    let event = SseEvent::default().event(item.event_type).data(&item.data);
    // an id with a line break would end the field early (axum refuses it)
    if item.name.contains(['\n', '\r', '\0']) {
        event
    } else {
        event.id(&item.name)
    }
}

impl Stream for Listener {
    type Item = Result<SseEvent, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match Pin::new(&mut self.rx).poll_next(cx) {
                Poll::Ready(Some(Ok(item))) => {
                    if self.wants(&item) {
                        return Poll::Ready(Some(Ok(sse_event(&item))));
                    }
                }
                // fell behind: the missed events are gone, go on with the next
                Poll::Ready(Some(Err(_))) => {}
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => break,
            }
        }
        match self.ping.poll_tick(cx) {
            Poll::Ready(_) => Poll::Ready(Some(Ok(SseEvent::default().event("ping")))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.hub.listeners.fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("aspects", &self.aspects)
            .field("name", &self.name)
            .field("event_type", &self.event_type)
            .finish_non_exhaustive()
    }
}

/// The open streams of one actuator, at most `max`
/// ([`ActuatorBuilder::max_stream_clients`](super::ActuatorBuilder::max_stream_clients)).
#[derive(Debug)]
pub(crate) struct Slots {
    open: Arc<AtomicUsize>,
    max: usize,
}

impl Slots {
    pub(crate) fn new(max: usize) -> Self {
        Slots {
            open: Arc::new(AtomicUsize::new(0)),
            max,
        }
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// A place for one more stream, or `None` when `max` are open.
    pub(crate) fn take(&self) -> Option<Slot> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()?;
        Some(Slot(self.open.clone()))
    }
}

/// One open stream's place in its [`Slots`]; dropping it frees the place.
#[derive(Debug)]
pub(crate) struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
