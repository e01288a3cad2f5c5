//! The answers every handler builds: JSON, and Spring Boot's error document.

#[allow(clippy::wildcard_imports)]
use super::*;

pub(super) type St = State<Arc<Shared>>;

pub(super) fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

pub(super) fn ok(body: &Value) -> Response {
    json_response(StatusCode::OK, body)
}

/// Spring Boot's error document.
pub(super) fn error(status: StatusCode, message: &str, uri: &Uri) -> Response {
    json_response(
        status,
        &json!({
            "status": status.as_u16(),
            "error": status.canonical_reason().unwrap_or(""),
            "message": message,
            "path": uri.path(),
        }),
    )
}
