//! The audit log of state changes: every `POST` to a state-change route, with
//! when, what, from which peer and with which identity, and its outcome; the
//! last [`AUDIT_CAPACITY`] at `GET /actuator/resilienceaudit` (with the bearer
//! token) and each one as a `tracing` event (target `resil::actuator`).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Mutex;

use resil_core::clock::Clock as _;

use crate::observe::lock;

#[allow(clippy::wildcard_imports)]
use super::*;

/// The entries kept: older ones leave as new ones come.
pub(super) const AUDIT_CAPACITY: usize = 100;

/// At most this much of a request's body is kept in an entry.
const KEPT_BODY: usize = 512;

/// The bounded log.
#[derive(Debug, Default)]
pub(super) struct Audit(Mutex<VecDeque<Value>>);

impl Audit {
    fn record(&self, entry: Value) {
        let mut log = lock(&self.0);
        if log.len() == AUDIT_CAPACITY {
            log.pop_front();
        }
        log.push_back(entry);
    }

    fn entries(&self) -> Vec<Value> {
        lock(&self.0).iter().cloned().collect()
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

/// Records one state-change request and its answer.
pub(super) fn record(
    s: &Shared,
    uri: &Uri,
    peer: Option<SocketAddr>,
    identity: &str,
    body: Option<&[u8]>,
    response: &Response,
) {
    let request = body.map(|b| {
        serde_json::from_slice::<Value>(b).unwrap_or_else(|_| {
            let text = String::from_utf8_lossy(&b[..b.len().min(KEPT_BODY)]);
            Value::String(text.into_owned())
        })
    });
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
    #[cfg(feature = "tracing")]
    tracing::info!(
        target: "resil::actuator",
        path = uri.path(),
        peer = %peer,
        identity,
        status,
        request = %entry["request"],
        "state change requested"
    );
    s.audit.record(entry);
}

/// `GET /actuator/resilienceaudit`: the log, oldest first (bearer token).
pub(super) async fn audit_log(State(s): St, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(p) = authorize(&s, &headers) {
        return p.into_response(&uri);
    }
    ok(&json!({ "capacity": AUDIT_CAPACITY, "entries": s.audit.entries() }))
}
