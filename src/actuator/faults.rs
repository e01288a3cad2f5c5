//! `/actuator/faults`: the faults in force, and a fault started for a while
//! or stopped by an operator (state changes: token and audit).

use resil_core::fault::{FaultConfig, FaultView, Faults, MAX_INJECTED_FOR};

#[allow(clippy::wildcard_imports)]
use super::*;

/// The keys of `POST /actuator/faults/{name}`'s body.
const KEYS: [&str; 4] = ["delay", "delayPercent", "abortPercent", "for"];

/// `GET /actuator/faults`: `{"faults":[{name, delay, delayPercent,
/// abortPercent, source, remaining, delayed, aborted}]}`.
pub(super) async fn faults(State(_s): St) -> Response {
    ok(&json!({ "faults": Faults::global().list().iter().map(view).collect::<Vec<_>>() }))
}

fn view(f: &FaultView) -> Value {
    json!({
        "name": f.name,
        "delay": resil_config::duration::format(f.config.delay()),
        "delayPercent": shown(f.config.delay_percent()),
        "abortPercent": shown(f.config.abort_percent()),
        "source": f.source.as_str(),
        // in whole seconds: a countdown, not a measurement
        "remaining": f.remaining.map(|r| resil_config::duration::format(Duration::from_secs(r.as_secs()))),
        "delayed": f.delayed,
        "aborted": f.aborted,
    })
}

/// A percentage as it was written: `10`, not `10.0`.
fn shown(p: f64) -> Value {
    if p.fract() == 0.0 && (0.0..=100.0).contains(&p) {
        json!(p as u64)
    } else {
        json!(p)
    }
}

pub(super) async fn start_fault(
    State(s): St,
    Path(name): Path<String>,
    uri: Uri,
    request: axum::extract::Request,
) -> Response {
    audited(&s, &name, &uri, request, change_start).await
}

pub(super) async fn stop_fault(
    State(s): St,
    Path(name): Path<String>,
    uri: Uri,
    request: axum::extract::Request,
) -> Response {
    audited(&s, &name, &uri, request, change_stop).await
}

/// Whether the application knows `name`: an instance of the registries, a
/// protected function's, or a fault of the configuration.
fn known(s: &Shared, name: &str) -> bool {
    let r = s.registries();
    r.circuit_breakers().find(name).is_some()
        || r.retries().find(name).is_some()
        || r.bulkheads().find(name).is_some()
        || r.thread_pool_bulkheads().find(name).is_some()
        || r.rate_limiters().find(name).is_some()
        || r.time_limiters().find(name).is_some()
        || r.hedges().find(name).is_some()
        || resil_config::declarations()
            .iter()
            .any(|d| d.name() == name)
        || s.report().is_some_and(|report| {
            report.instances().iter().any(|i| i.name() == name)
                || report.enabled_faults().iter().any(|(n, _)| n == name)
        })
        || Faults::global().list().iter().any(|f| f.name == name)
}

fn not_found(name: &str) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        format!("no instance or protected function named `{name}`"),
    )
}

fn change_start(s: &Shared, name: &str, body: &Bytes) -> Result<Value, Problem> {
    if !known(s, name) {
        return Err(not_found(name));
    }
    let body = body_object(body)?;
    if let Some(key) = body.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(Problem::bad_request(format!(
            "`{key}` is not a fault setting; expected {}",
            KEYS.map(|k| format!("`{k}`")).join(", ")
        )));
    }
    let duration = |key: &str, required: bool| -> Result<Option<(Duration, String)>, Problem> {
        match body.get(key) {
            None if required => Err(Problem::bad_request(format!(
                "`{key}` is required: how long the fault lasts, at most 24h, like \"10m\""
            ))),
            None => Ok(None),
            Some(Value::String(text)) => resil_config::duration::parse(text)
                .map(|d| Some((d, text.clone())))
                .map_err(|e| Problem::bad_request(format!("`{key}` = \"{text}\": {e}"))),
            Some(other) => Err(Problem::bad_request(format!(
                "`{key}` takes a duration as a string, like \"200ms\"; got {other}"
            ))),
        }
    };
    let percent = |key: &str| -> Result<f64, Problem> {
        match body.get(key) {
            None => Ok(0.0),
            Some(v) => v.as_f64().ok_or_else(|| {
                Problem::bad_request(format!("`{key}` must be a number from 0 to 100; got {v}"))
            }),
        }
    };
    let delay = duration("delay", false)?.map_or(Duration::ZERO, |(d, _)| d);
    let (delay_percent, abort_percent) = (percent("delayPercent")?, percent("abortPercent")?);
    let (lasting, text) = duration("for", true)?.expect("`for` is required");
    if lasting.is_zero() || lasting > MAX_INJECTED_FOR {
        return Err(Problem::bad_request(format!(
            "`for` = \"{text}\": must be more than zero and at most 24h"
        )));
    }
    let config = FaultConfig::builder()
        .delay(delay)
        .delay_percent(delay_percent)
        .abort_percent(abort_percent)
        .build()
        .map_err(|e| {
            let p = &e.problems()[0];
            let field = match p.field() {
                "delay_percent" => "delayPercent",
                "abort_percent" => "abortPercent",
                other => other,
            };
            Problem::bad_request(format!("`{field}` = {}: {}", p.value(), p.rule()))
        })?;
    Faults::global()
        .inject(
            name,
            config,
            lasting,
            s.registries().circuit_breakers().clock(),
        )
        .map_err(|e| Problem::bad_request(format!("`for` = \"{text}\": {e}")))?;
    tracing::warn!(
        target: "resil::actuator",
        fault = name,
        "resil: fault injection started for `{name}` for {text}: {config}"
    );
    Ok(json!({
        "name": name,
        "delay": resil_config::duration::format(delay),
        "delayPercent": shown(delay_percent),
        "abortPercent": shown(abort_percent),
        "for": text,
        "message": format!("fault `{name}` started for {text}: {config}"),
    }))
}

fn change_stop(s: &Shared, name: &str, _body: &Bytes) -> Result<Value, Problem> {
    if !known(s, name) {
        return Err(not_found(name));
    }
    let stopped = Faults::global().stop(name);
    let message = if stopped {
        format!("fault `{name}` stopped; the configured state is back")
    } else {
        format!("fault `{name}` had no fault started by the actuator; nothing changed")
    };
    Ok(json!({ "name": name, "stopped": stopped, "message": message }))
}
