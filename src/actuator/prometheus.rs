//! `/actuator/prometheus`: the Prometheus text, its gauges refreshed first.

#[allow(clippy::wildcard_imports)]
use super::*;

/// `/actuator/prometheus` (404 without a handle).
pub(super) async fn prometheus(State(s): St) -> Response {
    let Some(text) = s.render_prometheus() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    (
        StatusCode::OK,
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        text,
    )
        .into_response()
}
