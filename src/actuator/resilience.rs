//! `/actuator/resilience`: every declared call site with its stack, the
//! effective configuration and the live state of each layer, and every
//! instance of the registries.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::Response;
use resil_config::{Aspect, Declaration, InstanceReport, Registries, Report};
use resil_core::bulkhead::Bulkhead;
use resil_core::circuit_breaker::CircuitBreaker;
use resil_core::deadline::Deadline;
use resil_core::hedge::Hedge;
use resil_core::rate_limiter::RateLimiter;
use resil_core::retry::Retry;
use resil_core::thread_pool_bulkhead::ThreadPoolBulkhead;
use resil_core::time_limiter::TimeLimiter;
use serde_json::{Map, Value, json};

use super::json::Listed;
use super::response::{St, ok};

/// The configuration and state of one instance, as JSON fields.
fn instance_fields<P: Listed>(
    registries: &Registries,
    report: Option<&Report>,
    name: &str,
) -> Map<String, Value> {
    let registry = P::registry(registries);
    let from_report: Option<&InstanceReport> = report.and_then(|r| r.instance(P::ASPECT, name));
    let live = registry.find(name);
    let mut m = Map::new();
    if let Some(i) = from_report {
        m.insert("configured".to_owned(), json!(i.configured()));
        m.insert("chain".to_owned(), json!(i.chain()));
    }
    let settings: Option<Vec<(&'static str, String)>> = match (&live, from_report) {
        (Some(p), _) => Some(P::settings(&p.current_config(), from_report)),
        (None, Some(i)) => Some(i.settings().to_vec()),
        (None, None) => None,
    };
    if let Some(settings) = settings {
        let settings: Map<String, Value> = settings
            .into_iter()
            .map(|(k, v)| (k.to_owned(), Value::String(v)))
            .collect();
        m.insert("settings".to_owned(), Value::Object(settings));
    }
    if let Some(p) = &live {
        m.insert("tags".to_owned(), json!(p.instance_tags()));
        m.insert("state".to_owned(), p.state());
    } else {
        m.insert("state".to_owned(), Value::Null);
    }
    // `key = expr` call sites: the live keys and each one's state
    if let Some(table) = registries.keyed::<P>().table(name) {
        let keys: Map<String, Value> = table
            .entries()
            .into_iter()
            .map(|(key, p)| (key, p.state()))
            .collect();
        m.insert(
            "keyed".to_owned(),
            json!({
                "maxKeys": table.max_keys(),
                "keyLabel": table.key_label(),
                "evictions": table.evictions(),
                "keys": keys,
            }),
        );
    }
    m
}

fn instance_fields_of(
    aspect: Aspect,
    registries: &Registries,
    report: Option<&Report>,
    name: &str,
) -> Map<String, Value> {
    match aspect {
        Aspect::CircuitBreaker => instance_fields::<CircuitBreaker>(registries, report, name),
        Aspect::Retry => instance_fields::<Retry>(registries, report, name),
        Aspect::Bulkhead => instance_fields::<Bulkhead>(registries, report, name),
        Aspect::ThreadPoolBulkhead => {
            instance_fields::<ThreadPoolBulkhead>(registries, report, name)
        }
        Aspect::RateLimiter => instance_fields::<RateLimiter>(registries, report, name),
        Aspect::TimeLimiter => instance_fields::<TimeLimiter>(registries, report, name),
        Aspect::Hedge => instance_fields::<Hedge>(registries, report, name),
        Aspect::Deadline => instance_fields::<Deadline>(registries, report, name),
    }
}

/// The protected functions: declarations grouped by function, in source order.
///
/// Declarations carry the function's module, name and file and the line of
/// each attribute; the attributes of one function share the first three and
/// never repeat an aspect, so a repeated aspect starts another function of
/// the same name (two methods `query` in one module).
fn functions(declarations: &[&'static Declaration]) -> Vec<Vec<&'static Declaration>> {
    let mut by_fn: BTreeMap<(&str, &str, &str), Vec<&'static Declaration>> = BTreeMap::new();
    for d in declarations {
        by_fn
            .entry((d.file(), d.module(), d.function()))
            .or_default()
            .push(d);
    }
    let mut out = Vec::new();
    for (_, mut ds) in by_fn {
        ds.sort_by_key(|d| d.line());
        let mut current: Vec<&'static Declaration> = Vec::new();
        for d in ds {
            if current.iter().any(|c| c.aspect() == d.aspect()) {
                out.push(std::mem::take(&mut current));
            }
            current.push(d);
        }
        if !current.is_empty() {
            out.push(current);
        }
    }
    out.sort_by_key(|f| (f[0].file(), f[0].line()));
    out
}

fn call_site(
    mut layers: Vec<&'static Declaration>,
    registries: &Registries,
    report: Option<&Report>,
    expose_sources: bool,
) -> Value {
    let first = layers[0];
    let line = layers
        .iter()
        .map(|d| d.line())
        .min()
        .unwrap_or(first.line());
    // The engine's order, outermost first.
    layers.sort_by_key(|d| d.aspect().layer());
    let stack: Vec<Value> = layers
        .iter()
        .map(|d| {
            let mut m = Map::new();
            m.insert("aspect".to_owned(), json!(d.aspect().as_str()));
            m.insert("name".to_owned(), json!(d.name()));
            if expose_sources {
                m.insert("line".to_owned(), json!(d.line()));
            }
            if let Some(f) = d.fallback() {
                m.insert("fallback".to_owned(), json!(f));
            }
            m.extend(instance_fields_of(d.aspect(), registries, report, d.name()));
            Value::Object(m)
        })
        .collect();
    let mut site = Map::new();
    site.insert("function".to_owned(), json!(first.path()));
    if expose_sources {
        site.insert("file".to_owned(), json!(first.file()));
        site.insert("line".to_owned(), json!(line));
    }
    site.insert("errorType".to_owned(), json!(first.error_type()));
    site.insert("stack".to_owned(), Value::Array(stack));
    Value::Object(site)
}

fn instances<P: Listed>(
    registries: &Registries,
    report: Option<&Report>,
    declarations: &[&'static Declaration],
) -> Value {
    let mut names: Vec<String> = P::registry(registries)
        .all()
        .iter()
        .map(|p| p.instance_name().to_owned())
        .collect();
    if let Some(r) = report {
        names.extend(
            r.instances()
                .iter()
                .filter(|i| i.aspect() == P::ASPECT)
                .map(|i| i.name().to_owned()),
        );
    }
    names.sort();
    names.dedup();
    let all: Map<String, Value> = names
        .into_iter()
        .map(|name| {
            let mut m = instance_fields::<P>(registries, report, &name);
            let used_by: Vec<String> = declarations
                .iter()
                .filter(|d| d.aspect() == P::ASPECT && d.name() == name)
                .map(|d| d.path())
                .collect();
            m.insert("usedBy".to_owned(), json!(used_by));
            (name, Value::Object(m))
        })
        .collect();
    Value::Object(all)
}

/// The whole document; without `expose_sources`, no file-system path or
/// source location: no configuration file nor its warnings (they name it),
/// no call site's file or lines.
pub(crate) fn document(
    registries: &Registries,
    report: Option<&Report>,
    expose_sources: bool,
) -> Value {
    let declarations: Vec<&'static Declaration> = match report {
        Some(r) => r.declarations().to_vec(),
        None => resil_config::declarations(),
    };
    let call_sites: Vec<Value> = functions(&declarations)
        .into_iter()
        .map(|f| call_site(f, registries, report, expose_sources))
        .collect();
    let mut source = Map::new();
    if let Some(r) = report {
        if expose_sources {
            source.insert("file".to_owned(), json!(r.file()));
        }
        source.insert("envOverrides".to_owned(), json!(r.env_overrides()));
        if expose_sources {
            let warnings: Vec<String> = r.warnings().iter().map(ToString::to_string).collect();
            source.insert("warnings".to_owned(), json!(warnings));
        }
    }
    source.insert("declarations".to_owned(), json!(declarations.len()));
    // the `[cloud]` settings in force (Spring Cloud CircuitBreaker's facade)
    let cloud: Map<String, Value> = registries
        .cloud()
        .settings()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::String(v)))
        .collect();
    json!({
        "source": source,
        "cloud": cloud,
        "callSites": call_sites,
        "instances": {
            "circuitbreaker": instances::<CircuitBreaker>(registries, report, &declarations),
            "retry": instances::<Retry>(registries, report, &declarations),
            "bulkhead": instances::<Bulkhead>(registries, report, &declarations),
            "thread-pool-bulkhead": instances::<ThreadPoolBulkhead>(registries, report, &declarations),
            "ratelimiter": instances::<RateLimiter>(registries, report, &declarations),
            "timelimiter": instances::<TimeLimiter>(registries, report, &declarations),
            "hedge": instances::<Hedge>(registries, report, &declarations),
            "deadline": instances::<Deadline>(registries, report, &declarations),
        },
    })
}

/// `/actuator/resilience`.
pub(super) async fn resilience_document(State(s): St) -> Response {
    ok(&document(
        s.registries(),
        s.report().as_deref(),
        s.expose_sources,
    ))
}
