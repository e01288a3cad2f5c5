//! Live events as server-sent events, from a broadcast channel fed by the
//! instances' consumers: the event-stream sink.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::response::sse::Event as SseEvent;
use resil_config::Aspect;
use resil_core::event::Event;
use tokio::sync::broadcast;
use tokio_stream::Stream;
use tokio_stream::wrappers::BroadcastStream;

use super::json::EventJson;
use crate::observe::lock;
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

/// The open streams of one actuator: at most `max` in all
/// ([`ActuatorBuilder::max_stream_clients`](super::ActuatorBuilder::max_stream_clients)),
/// of which `reserved` only for clients that present the bearer token
/// ([`ActuatorBuilder::operator_stream_clients`](super::ActuatorBuilder::operator_stream_clients)),
/// and at most `per_peer` for the clients of one IP address without it
/// ([`ActuatorBuilder::max_stream_clients_per_peer`](super::ActuatorBuilder::max_stream_clients_per_peer)).
#[derive(Debug)]
pub(crate) struct Slots {
    open: Arc<Mutex<Open>>,
    max: usize,
    reserved: usize,
    per_peer: usize,
}

/// The streams open now.
#[derive(Debug, Default)]
struct Open {
    operator: usize,
    anonymous: usize,
    peers: HashMap<IpAddr, usize>,
}

/// Who asks for a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Client {
    /// A request with the bearer token.
    Operator,
    /// Any other, from this address when the server knows it.
    Anonymous(Option<IpAddr>),
}

/// Why a stream was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// Every slot this client may take is open.
    Slots,
    /// Its address has `per_peer` streams open.
    Peer,
}

impl Slots {
    pub(crate) fn new(max: usize, reserved: usize, per_peer: usize) -> Self {
        Slots {
            open: Arc::new(Mutex::new(Open::default())),
            max,
            reserved: reserved.min(max),
            per_peer,
        }
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    pub(crate) fn per_peer(&self) -> usize {
        self.per_peer
    }

    /// A place for one more stream of `client`, or why there is none.
    pub(crate) fn take(&self, client: Client) -> Result<Slot, Full> {
        let mut open = lock(&self.open);
        if open.operator + open.anonymous >= self.max {
            return Err(Full::Slots);
        }
        match client {
            Client::Operator => open.operator += 1,
            Client::Anonymous(peer) => {
                if open.anonymous >= self.max - self.reserved {
                    return Err(Full::Slots);
                }
                if let Some(ip) = peer {
                    let n = open.peers.entry(ip).or_default();
                    if *n >= self.per_peer {
                        return Err(Full::Peer);
                    }
                    *n += 1;
                }
                open.anonymous += 1;
            }
        }
        Ok(Slot {
            open: self.open.clone(),
            client,
        })
    }
}

/// One open stream's place in its [`Slots`]; dropping it frees the place.
#[derive(Debug)]
pub(crate) struct Slot {
    open: Arc<Mutex<Open>>,
    client: Client,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = lock(&self.open);
        match self.client {
            Client::Operator => open.operator -= 1,
            Client::Anonymous(peer) => {
                open.anonymous -= 1;
                if let Some(ip) = peer
                    && let Some(n) = open.peers.get_mut(&ip)
                {
                    *n -= 1;
                    if *n == 0 {
                        open.peers.remove(&ip);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Client = Client::Anonymous(Some(IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1))));
    const B: Client = Client::Anonymous(Some(IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2))));

    #[test]
    fn anonymous_clients_leave_the_reserved_slots_and_a_share_per_peer() {
        let slots = Slots::new(4, 1, 2);
        let a: Vec<Slot> = (0..2).map(|_| slots.take(A).unwrap()).collect();
        assert_eq!(slots.take(A).unwrap_err(), Full::Peer);
        let b = slots.take(B).unwrap();
        // three anonymous streams: the fourth slot is the operator's
        assert_eq!(
            slots.take(Client::Anonymous(None)).unwrap_err(),
            Full::Slots
        );
        let operator = slots.take(Client::Operator).unwrap();
        assert_eq!(slots.take(Client::Operator).unwrap_err(), Full::Slots);
        drop(b);
        // the freed slot is anyone's
        let again = slots.take(Client::Operator).unwrap();
        drop((a, operator, again));
        assert!(lock(&slots.open).peers.is_empty());
        let all: Vec<Slot> = (0..4)
            .map(|_| slots.take(Client::Operator).unwrap())
            .collect();
        assert_eq!(all.len(), 4);
    }
}
