//! The state changes: who may make them (the bearer token, a bounded body)
//! and what they do to a breaker, a rate limiter or the configuration.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A refused request: its status and why; Spring Boot's error document
/// once the path is known.
#[derive(Debug)]
pub(super) struct Problem {
    pub(super) status: StatusCode,
    pub(super) message: String,
    /// A refused configuration's problems, as the document's `problems`.
    pub(super) problems: Vec<Value>,
}

impl Problem {
    pub(super) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Problem {
            status,
            message: message.into(),
            problems: Vec::new(),
        }
    }

    pub(super) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    pub(super) fn into_response(self, uri: &Uri) -> Response {
        let mut r = if self.problems.is_empty() {
            error(self.status, &self.message, uri)
        } else {
            json_response(
                self.status,
                &json!({
                    "status": self.status.as_u16(),
                    "error": self.status.canonical_reason().unwrap_or(""),
                    "message": self.message,
                    "path": uri.path(),
                    "problems": self.problems,
                }),
            )
        };
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        r
    }
}

/// `Ok` when the request carries the bearer token; else the 401.
pub(super) fn authorize(s: &Shared, headers: &HeaderMap) -> Result<(), Problem> {
    let expected = s.token.as_deref().unwrap_or("");
    let given = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then_some(token.trim())
        });
    match given {
        Some(token)
            if !expected.is_empty() && constant_time_eq(token.as_bytes(), expected.as_bytes()) =>
        {
            Ok(())
        }
        _ => Err(Problem::new(
            StatusCode::UNAUTHORIZED,
            "state changes need `Authorization: Bearer <token>`",
        )),
    }
}

/// Compares a `given` token with the `expected` one without stopping at the
/// first difference or at a length mismatch: the work is one step per byte
/// of `given` (each against `expected`'s byte at that index, cycling), with
/// the lengths' difference folded into the same accumulator, so the time
/// taken depends only on what the client sent and tells neither how much of
/// a guess was right nor how long the expected token is.
pub(super) fn constant_time_eq(given: &[u8], expected: &[u8]) -> bool {
    if expected.is_empty() {
        return given.is_empty(); // nothing secret to protect
    }
    let mut diff = given.len() ^ expected.len();
    for (i, g) in given.iter().enumerate() {
        diff |= usize::from(g ^ expected[i % expected.len()]);
    }
    std::hint::black_box(diff) == 0
}

/// The body of a state change, read only once the request is authorized
/// (a stranger's body is never polled) and at most [`MAX_BODY`] bytes of
/// it, whatever limit the application's router sets; past it a 413.
/// The body of an authorized state change, at most [`MAX_BODY`] bytes.
pub(super) async fn read_body(headers: &HeaderMap, body: Body) -> Result<Bytes, Problem> {
    let too_large = || {
        Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a state change's body holds at most {MAX_BODY} bytes"),
        )
    };
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(too_large());
    }
    axum::body::to_bytes(body, MAX_BODY).await.map_err(|e| {
        if is_length_limit(&e) {
            too_large()
        } else {
            Problem::bad_request(format!("the body could not be read: {e}"))
        }
    })
}

/// Whether reading a body failed at [`MAX_BODY`] (`http-body-util`'s
/// `LengthLimitError`, somewhere in the error's sources).
pub(super) fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err.to_string() == "length limit exceeded" {
            return true;
        }
        source = err.source();
    }
    false
}

/// The JSON object of a request body, or a 400.
pub(super) fn body_object(body: &Bytes) -> Result<Map<String, Value>, Problem> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Problem::bad_request("the body must be a JSON object")),
        Err(e) => Err(Problem::bad_request(format!("the body is not JSON: {e}"))),
    }
}

pub(super) fn respond(result: Result<Value, Problem>, uri: &Uri) -> Response {
    match result {
        Ok(body) => ok(&body),
        Err(p) => p.into_response(uri),
    }
}

pub(super) async fn update_circuit_breaker(
    State(s): St,
    Path(name): Path<String>,
    uri: Uri,
    request: axum::extract::Request,
) -> Response {
    audited(&s, &name, &uri, request, change_circuit_breaker).await
}

pub(super) fn change_circuit_breaker(
    s: &Shared,
    name: &str,
    body: &Bytes,
) -> Result<Value, Problem> {
    let Some(cb) = s.registries().circuit_breakers().find(name) else {
        return Err(Problem::new(
            StatusCode::NOT_FOUND,
            format!("no circuit breaker `{name}`"),
        ));
    };
    let body = body_object(body)?;
    const EXPECTED: &str = "CLOSE, FORCE_OPEN, DISABLE, METRICS_ONLY, RESET";
    let update = body.get("updateState").and_then(Value::as_str);
    // `"for": "10m"`: a forced open that ends on its own.
    let limit = match body.get("for") {
        None => None,
        Some(_) if update != Some("FORCE_OPEN") => {
            return Err(Problem::bad_request(
                "`for` limits a FORCE_OPEN only (`{\"updateState\":\"FORCE_OPEN\",\"for\":\"10m\"}`)"
                    .to_owned(),
            ));
        }
        Some(Value::String(text)) => match resil_config::duration::parse(text) {
            Ok(limit) => Some((limit, text.as_str())),
            Err(e) => {
                return Err(Problem::bad_request(format!("`for` = \"{text}\": {e}")));
            }
        },
        Some(other) => {
            return Err(Problem::bad_request(format!(
                "`for` takes a duration as a string, like \"10m\"; got {other}"
            )));
        }
    };
    let result = match update {
        Some("CLOSE") => cb.transition_to_closed_state(),
        Some("FORCE_OPEN") => match limit {
            Some((limit, text)) => {
                cb.transition_to_forced_open_state_for(limit)
                    .map_err(|e| Problem::bad_request(format!("`for` = \"{text}\": {e}")))?;
                // what happens at the end of the limit, for the answer and the audit log
                let then = format!(
                    "FORCED_OPEN for {text}, then HALF_OPEN: the half-open probes decide whether it closes"
                );
                return Ok(json!({
                    "circuitBreakerName": name,
                    "currentState": cb.state().as_str(),
                    "forcedOpenFor": text,
                    "afterLimit": "HALF_OPEN",
                    "message": format!("{name} state has been changed successfully: {then}"),
                }));
            }
            None => {
                // a forced open needs an end, or it outlives
                // the incident that called for it
                tracing::warn!(
                    target: "resil::actuator",
                    name,
                    "circuit breaker `{name}` forced open with no limit: it refuses every call until someone closes it; give a limit, {{\"updateState\":\"FORCE_OPEN\",\"for\":\"10m\"}}"
                );
                cb.transition_to_forced_open_state()
            }
        },
        Some("DISABLE") => cb.transition_to_disabled_state(),
        Some("METRICS_ONLY") => cb.transition_to_metrics_only_state(),
        Some("RESET") => {
            cb.reset();
            Ok(())
        }
        other => {
            let given = other.map_or_else(|| "nothing".to_owned(), |v| format!("`{v}`"));
            return Err(Problem::bad_request(format!(
                "`updateState` must be one of {EXPECTED}; got {given}"
            )));
        }
    };
    result.map_err(|e| Problem::new(StatusCode::CONFLICT, e.to_string()))?;
    Ok(json!({
        "circuitBreakerName": name,
        "currentState": cb.state().as_str(),
        "message": format!("{name} state has been changed successfully"),
    }))
}

pub(super) async fn update_rate_limiter(
    State(s): St,
    Path(name): Path<String>,
    uri: Uri,
    request: axum::extract::Request,
) -> Response {
    audited(&s, &name, &uri, request, change_rate_limiter).await
}

pub(super) fn change_rate_limiter(s: &Shared, name: &str, body: &Bytes) -> Result<Value, Problem> {
    let Some(rl) = s.registries().rate_limiters().find(name) else {
        return Err(Problem::new(
            StatusCode::NOT_FOUND,
            format!("no rate limiter `{name}`"),
        ));
    };
    let body = body_object(body)?;
    let limit = match body.get("limitForPeriod") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    Problem::bad_request(format!(
                        "`limitForPeriod` must be a whole number of permits; got {v}"
                    ))
                })?,
        ),
    };
    let timeout = match body.get("timeoutDuration") {
        None => None,
        Some(Value::String(text)) => Some(
            resil_config::duration::parse(text)
                .map_err(|e| Problem::bad_request(format!("`timeoutDuration` {e}")))?,
        ),
        Some(v) => Some(v.as_u64().map(Duration::from_millis).ok_or_else(|| {
            Problem::bad_request(format!(
                "`timeoutDuration` must be a duration (\"500ms\") or milliseconds; got {v}"
            ))
        })?),
    };
    if limit.is_none() && timeout.is_none() {
        return Err(Problem::bad_request(
            "the body must set `limitForPeriod`, `timeoutDuration` or both",
        ));
    }
    let invalid = |e: resil_core::ConfigError| Problem::bad_request(e.to_string());
    // both are checked before either is applied, so a refusal changes nothing
    let mut check = rl.config().to_builder();
    if let Some(limit) = limit {
        check = check.limit_for_period(limit);
    }
    if let Some(timeout) = timeout {
        check = check.timeout_duration(timeout);
    }
    check.build().map_err(invalid)?;
    if let Some(limit) = limit {
        rl.change_limit_for_period(limit).map_err(invalid)?;
    }
    if let Some(timeout) = timeout {
        rl.change_timeout_duration(timeout).map_err(invalid)?;
    }
    let config = rl.config();
    Ok(json!({
        "rateLimiterName": name,
        "limitForPeriod": config.limit_for_period(),
        "timeoutDuration": resil_config::duration::format(config.timeout_duration()),
        "message": format!("{name} limits have been changed successfully"),
    }))
}

/// `POST /actuator/refresh[?dryRun=true]`: reloads the configuration, on
/// the blocking pool: reading, parsing and validating a file (up to the
/// 1 MiB resil reads) must not stall the runtime's other tasks.
pub(super) async fn refresh(State(s): St, uri: Uri, request: axum::extract::Request) -> Response {
    // the query is judged after the token, like a body
    let dry_run = dry_run(&uri);
    let shared = s.clone();
    audited_with(&s, "", &uri, request, move |_, _, _| async move {
        let dry_run = dry_run?;
        tokio::task::spawn_blocking(move || reload(&shared, dry_run))
            .await
            .unwrap_or_else(|e| {
                Err(Problem::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("the reload did not finish: {e}"),
                ))
            })
    })
    .await
}

/// `?dryRun=true` (or `false`); anything else is a 400.
fn dry_run(uri: &Uri) -> Result<bool, Problem> {
    let mut dry_run = false;
    for pair in uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key != "dryRun" {
            continue;
        }
        dry_run = match value.to_ascii_lowercase().as_str() {
            "true" | "" => true,
            "false" => false,
            other => {
                return Err(Problem::bad_request(format!(
                    "`dryRun` is true or false; got `{other}`"
                )));
            }
        };
    }
    Ok(dry_run)
}

/// Reloads and answers the changed keys, or the problems.
fn reload(s: &Shared, dry_run: bool) -> Result<Value, Problem> {
    let Some(result) = s.reload(dry_run) else {
        return Err(Problem::new(
            StatusCode::NOT_FOUND,
            "these registries have no configuration to reload: build the actuator with `ActuatorBuilder::resilience` or `ActuatorBuilder::reload_with`",
        ));
    };
    match result {
        Ok(report) => Ok(json!({ "changed": report.changed_keys() })),
        Err(InitError::Invalid(problems)) => {
            let n = problems.len();
            let mut p = Problem::bad_request(format!(
                "the configuration was refused ({n} problem{}); nothing changed",
                if n == 1 { "" } else { "s" }
            ));
            p.problems = problems
                .iter()
                .map(|c| {
                    json!({
                        "source": c.source(),
                        "key": c.key(),
                        "value": c.value(),
                        "message": c.message(),
                    })
                })
                .collect();
            Err(p)
        }
        Err(e) => Err(Problem::new(StatusCode::CONFLICT, e.to_string())),
    }
}

/// The client's address, when the server was started with
/// `into_make_service_with_connect_info::<SocketAddr>()`.
fn peer_of(extensions: &axum::http::Extensions) -> Option<std::net::SocketAddr> {
    extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0)
}

/// A state change: authorized, read, made by `change`, answered, and
/// recorded in the audit log whatever the outcome.
pub(super) async fn audited(
    s: &Shared,
    name: &str,
    uri: &Uri,
    request: axum::extract::Request,
    change: impl FnOnce(&Shared, &str, &Bytes) -> Result<Value, Problem>,
) -> Response {
    audited_with(s, name, uri, request, |s, name, body| {
        std::future::ready(change(s, name, body))
    })
    .await
}

/// [`audited`] for a change that is awaited.
async fn audited_with<F>(
    s: &Shared,
    name: &str,
    uri: &Uri,
    request: axum::extract::Request,
    change: impl FnOnce(&Shared, &str, &Bytes) -> F,
) -> Response
where
    F: Future<Output = Result<Value, Problem>>,
{
    let (parts, body) = request.into_parts();
    let authorized = authorize(s, &parts.headers);
    let identity = audit::identity(authorized.is_ok(), &parts.headers);
    let read = match authorized {
        Ok(()) => read_body(&parts.headers, body).await,
        Err(p) => Err(p),
    };
    let (response, body) = match read {
        Ok(body) => {
            let result = change(s, name, &body).await;
            // the answer's message, for the audit log: what the change did
            let outcome = result
                .as_ref()
                .ok()
                .and_then(|v| v.get("message"))
                .and_then(Value::as_str)
                .map(|m| audit::Outcome(m.to_owned()));
            let mut response = respond(result, uri);
            if let Some(outcome) = outcome {
                response.extensions_mut().insert(outcome);
            }
            (response, Some(body))
        }
        Err(p) => (p.into_response(uri), None),
    };
    audit::record(
        s,
        uri,
        peer_of(&parts.extensions),
        identity,
        body.as_deref(),
        &response,
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_compares_every_length() {
        assert!(constant_time_eq(b"s3cr3t", b"s3cr3t"));
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"s3cr3t", b"s3cr3x"));
        assert!(!constant_time_eq(b"s3cr", b"s3cr3t"), "a prefix");
        assert!(!constant_time_eq(b"s3cr3t-and-more", b"s3cr3t"), "longer");
        assert!(!constant_time_eq(b"", b"s3cr3t"));
        // a longer guess padded with the zeros a missing byte reads as
        assert!(!constant_time_eq(b"ab\0", b"ab"));
    }
}
