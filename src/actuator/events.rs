//! The event routes: the buffered events of every instance or one, by type,
//! and their streams.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The buffered events of `P`'s instances (of one, with `name`).
pub(super) fn buffered<P: Shown>(
    registries: &Registries,
    name: Option<&str>,
) -> Vec<(Nanos, Value)> {
    let registry = P::registry(registries);
    match name {
        Some(name) => registry.find(name).map(|p| p.events()).unwrap_or_default(),
        None => registry.all().iter().flat_map(|p| p.events()).collect(),
    }
}

/// The events an events route shows: `P`'s, and for `bulkhead` the
/// thread-pool bulkheads' too (by name: the semaphore bulkhead's if there is
/// one, as Resilience4j looks them up).
pub(super) fn events_of<P: Shown>(
    registries: &Registries,
    name: Option<&str>,
) -> Vec<(Nanos, Value)> {
    let mut events = buffered::<P>(registries, name);
    if P::ASPECT == Aspect::Bulkhead {
        match name {
            None => events.extend(buffered::<ThreadPoolBulkhead>(registries, None)),
            Some(n) if registries.bulkheads().find(n).is_none() => {
                events = buffered::<ThreadPoolBulkhead>(registries, Some(n));
            }
            Some(_) => {}
        }
    }
    events
}

pub(super) fn events_response<P: Shown>(mut events: Vec<(Nanos, Value)>, sort: bool) -> Response {
    if sort {
        events.sort_by_key(|(at, _)| *at);
    }
    let list: Vec<Value> = events.into_iter().map(|(_, e)| e).collect();
    ok(&json!({ P::EVENTS_KEY: list }))
}

pub(super) async fn events_all<P: Shown>(State(s): St) -> Response {
    events_response::<P>(events_of::<P>(s.registries(), None), true)
}

pub(super) async fn events_named<P: Shown>(State(s): St, Path(name): Path<String>) -> Response {
    events_response::<P>(events_of::<P>(s.registries(), Some(&name)), false)
}

/// The event type in Resilience4j's spelling, or a 400.
pub(super) fn event_type<P: Shown>(ty: &str) -> Result<String, Problem> {
    let upper = ty.to_ascii_uppercase();
    if P::EVENT_TYPES.contains(&upper.as_str()) {
        Ok(upper)
    } else {
        Err(Problem::bad_request(format!(
            "unknown event type `{ty}`; expected one of {}",
            P::EVENT_TYPES.join(", ")
        )))
    }
}

pub(super) async fn events_typed<P: Shown>(
    State(s): St,
    Path((name, ty)): Path<(String, String)>,
    uri: Uri,
) -> Response {
    let ty = match event_type::<P>(&ty) {
        Ok(ty) => ty,
        Err(p) => return p.into_response(&uri),
    };
    let events = events_of::<P>(s.registries(), Some(&name))
        .into_iter()
        .filter(|(_, e)| e.get("type").and_then(Value::as_str) == Some(ty.as_str()))
        .collect();
    events_response::<P>(events, false)
}

/// Who asks for a stream: the operator (the bearer token), or anyone else
/// from the request's peer address (when the server knows it).
fn stream_client(s: &Shared, request: &axum::extract::Request) -> stream::Client {
    if s.token.is_some() && authorize(s, request.headers()).is_ok() {
        return stream::Client::Operator;
    }
    let peer = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip());
    stream::Client::Anonymous(peer)
}

pub(super) fn stream_response(
    s: &Shared,
    uri: &Uri,
    aspects: &'static [Aspect],
    name: Option<String>,
    ty: Option<String>,
    request: &axum::extract::Request,
) -> Response {
    let slot = match s.streams.take(stream_client(s, request)) {
        Ok(slot) => slot,
        Err(stream::Full::Slots) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "the event streams this actuator serves to this client are all open ({} in all)",
                    s.streams.max()
                ),
                uri,
            );
        }
        Err(stream::Full::Peer) => {
            return error(
                StatusCode::TOO_MANY_REQUESTS,
                &format!(
                    "this address has {} event streams open, the most one peer may hold without the bearer token",
                    s.streams.per_peer()
                ),
                uri,
            );
        }
    };
    let hub = s
        .binding()
        .sink::<stream::Hub>()
        .expect("the actuator feature registers the streams' sink");
    let listener = hub.listen(aspects, name, ty, slot);
    Sse::new(listener).into_response()
}

/// The event routes of one kind: buffered and streamed.
pub(super) fn events_routes<P: Shown>(
    r: Router<Arc<Shared>>,
    kind: &str,
    aspects: &'static [Aspect],
) -> Router<Arc<Shared>> {
    type Request = axum::extract::Request;
    let stream_all = move |State(s): St, uri: Uri, request: Request| async move {
        stream_response(&s, &uri, aspects, None, None, &request)
    };
    let stream_named = move |State(s): St, Path(name): Path<String>, uri: Uri, request: Request| async move {
        stream_response(&s, &uri, aspects, Some(name), None, &request)
    };
    let stream_typed = move |State(s): St,
                             Path((name, ty)): Path<(String, String)>,
                             uri: Uri,
                             request: Request| async move {
        match event_type::<P>(&ty) {
            Ok(ty) => stream_response(&s, &uri, aspects, Some(name), Some(ty), &request),
            Err(p) => p.into_response(&uri),
        }
    };
    r.route(&format!("/actuator/{kind}events"), get(events_all::<P>))
        .route(
            &format!("/actuator/{kind}events/{{name}}"),
            get(events_named::<P>),
        )
        .route(
            &format!("/actuator/{kind}events/{{name}}/{{eventType}}"),
            get(events_typed::<P>),
        )
        .route(&format!("/actuator/stream{kind}events"), get(stream_all))
        .route(
            &format!("/actuator/stream{kind}events/{{name}}"),
            get(stream_named),
        )
        .route(
            &format!("/actuator/stream{kind}events/{{name}}/{{eventType}}"),
            get(stream_typed),
        )
}
