//! The audit log of state changes: every `POST` to a state-change route, with
//! when, what, from which peer and with which identity, and its outcome;
//! each one also a `tracing` event (target `resil::actuator`), served at
//! `GET /actuator/resilienceaudit` (with the bearer token).
//!
//! The requests that carried the token are the log: the last
//! [`AUDIT_CAPACITY`] of them, in a ring of their own. Requests refused for
//! want of it are counted, and the last [`REJECTED_SAMPLES`] kept apart, so
//! that no number of anonymous requests pushes an operator's change out of
//! the log; their `tracing` events are sampled too (the 1st, 2nd, 4th, 8th
//! ... refused request), so that they cannot flood the logs either.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Mutex;

use resil_core::clock::Clock as _;

use crate::observe::lock;

#[allow(clippy::wildcard_imports)]
use super::*;

/// The state changes kept: older ones leave as new ones come.
pub(super) const AUDIT_CAPACITY: usize = 100;

/// The refused requests kept, apart from the changes.
pub(super) const REJECTED_SAMPLES: usize = 20;

/// At most this much of a request's body is kept in an entry.
const KEPT_BODY: usize = 512;

/// The bounded log.
#[derive(Debug, Default)]
pub(super) struct Audit(Mutex<Log>);

#[derive(Debug, Default)]
struct Log {
    /// Requests with the token, whatever their outcome.
    changes: VecDeque<Value>,
    /// The last requests refused without it.
    rejected: VecDeque<Value>,
    /// Every request refused without it.
    rejected_total: u64,
}

/// Pushes `entry`, dropping the oldest past `capacity`.
fn push(ring: &mut VecDeque<Value>, capacity: usize, entry: Value) {
    if ring.len() == capacity {
        ring.pop_front();
    }
    ring.push_back(entry);
}

impl Audit {
    /// Records `entry`; for a refused request, returns how many have been
    /// refused so far.
    fn record(&self, authorized: bool, entry: Value) -> Option<u64> {
        let mut log = lock(&self.0);
        if authorized {
            push(&mut log.changes, AUDIT_CAPACITY, entry);
            None
        } else {
            push(&mut log.rejected, REJECTED_SAMPLES, entry);
            log.rejected_total += 1;
            Some(log.rejected_total)
        }
    }

    fn document(&self) -> Value {
        let log = lock(&self.0);
        json!({
            "capacity": AUDIT_CAPACITY,
            "entries": log.changes,
            "rejected": {
                "count": log.rejected_total,
                "capacity": REJECTED_SAMPLES,
                "entries": log.rejected,
            },
        })
    }
}

/// Who asked: `operator` (the bearer token), `invalid-token`, or `no-token`.
/// resil has one operator token, so the identity is whether it was presented.
pub(super) fn identity(authorized: bool, headers: &HeaderMap) -> &'static str {
    if authorized {
        "operator"
    } else if headers.contains_key(axum::http::header::AUTHORIZATION) {
        "invalid-token"
    } else {
        "no-token"
    }
}

/// What a state change did, in its answer's words (a response extension
/// that [`record`] adds to the entry as `outcome`).
#[derive(Debug, Clone)]
pub(super) struct Outcome(pub(super) String);
/// The request's body as kept: its JSON, else its text (the first
/// [`KEPT_BODY`] bytes), without the userinfo of any URL in it.
fn kept(body: &[u8]) -> Value {
    let text = match serde_json::from_slice::<Value>(body) {
        Ok(json) => json.to_string(),
        Err(_) => String::from_utf8_lossy(&body[..body.len().min(KEPT_BODY)]).into_owned(),
    };
    let shown = resil_core::redact::userinfo(&text);
    serde_json::from_str(&shown).unwrap_or_else(|_| Value::String(shown.into_owned()))
}

/// Records one state-change request and its answer.
pub(super) fn record(
    s: &Shared,
    uri: &Uri,
    peer: Option<SocketAddr>,
    identity: &str,
    body: Option<&[u8]>,
    response: &Response,
) {
    let request = body.map(kept);
    let peer = peer.map_or_else(|| "unknown".to_owned(), |p| p.to_string());
    let status = response.status().as_u16();
    // On the registries' clock, as the events' times are.
    let clock = s.registries().circuit_breakers().clock();
    let mut entry = json!({
        "time": json::creation_time(clock.system_time(clock.now())),
        "path": uri.path(),
        "request": request,
        "peer": peer,
        "identity": identity,
        "status": status,
    });
    if let Some(Outcome(outcome)) = response.extensions().get::<Outcome>() {
        entry["outcome"] = json!(outcome);
    }
    let authorized = identity == "operator";
    #[cfg(feature = "tracing")]
    let text = entry["request"].to_string();
    let refused = s.audit.record(authorized, entry);
    #[cfg(feature = "tracing")]
    match refused {
        None => tracing::info!(
            target: "resil::actuator",
            path = uri.path(),
            peer = %peer,
            identity,
            status,
            request = %text,
            "state change requested"
        ),
        // sampled: one line for the 1st, 2nd, 4th, 8th ... refusal
        Some(n) if n.is_power_of_two() => tracing::warn!(
            target: "resil::actuator",
            path = uri.path(),
            peer = %peer,
            identity,
            status,
            refused = n,
            "state change refused without the token ({n} so far)"
        ),
        Some(_) => {}
    }
    #[cfg(not(feature = "tracing"))]
    let _ = refused;
}

/// `GET /actuator/resilienceaudit`: the log, oldest first (bearer token).
pub(super) async fn audit_log(State(s): St, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(p) = authorize(&s, &headers) {
        return p.into_response(&uri);
    }
    ok(&s.audit.document())
}
