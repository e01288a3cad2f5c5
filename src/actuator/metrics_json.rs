//! `GET /actuator/metrics` and `GET /actuator/metrics/{name}` in Spring Boot's
//! shape, read from the same Prometheus registry as `/actuator/prometheus`,
//! so that the Spring Boot check
//! `curl .../actuator/metrics/resilience4j.circuitbreaker.calls` works.
//!
//! A meter's Spring name is its Prometheus family with Micrometer's suffixes
//! taken off (`_total` of a counter, `_seconds` of a timer) and `_` read as
//! `.`: `resilience4j_circuitbreaker_calls_seconds` is
//! `resilience4j.circuitbreaker.calls`. Measurements add up the series that
//! match the `?tag=key:value` filters: `COUNT` for counters and timers,
//! `TOTAL_TIME` (seconds) for timers, `VALUE` for gauges.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::{Path, Query};

#[allow(clippy::wildcard_imports)]
use super::*;

/// One Prometheus family, as Spring Boot shows a meter.
#[derive(Debug, Default)]
struct Meter {
    description: Option<String>,
    /// `counter`, `gauge`, `summary`, `histogram`.
    kind: String,
    /// (labels, statistic, value) per sample.
    samples: Vec<(BTreeMap<String, String>, &'static str, f64)>,
}

/// The Spring name of a Prometheus family.
fn spring_name(family: &str, kind: &str) -> String {
    let base = match kind {
        "counter" => family.strip_suffix("_total").unwrap_or(family),
        "summary" | "histogram" => family.strip_suffix("_seconds").unwrap_or(family),
        _ => family,
    };
    base.replace('_', ".")
}

/// `k="v",k2="v2"` (Prometheus label syntax, with its escapes).
fn labels(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = text;
    while let Some((key, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, other)) => value.push(other),
                    None => {}
                },
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        out.insert(key.trim_start_matches(',').trim().to_owned(), value);
        rest = &after[end..];
    }
    out
}

/// The meters of a Prometheus text, by Spring name.
fn parse(text: &str) -> BTreeMap<String, Meter> {
    let mut kinds: BTreeMap<&str, &str> = BTreeMap::new();
    let mut help: BTreeMap<&str, &str> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ")
            && let Some((family, kind)) = rest.split_once(' ')
        {
            kinds.insert(family, kind.trim());
        } else if let Some(rest) = line.strip_prefix("# HELP ")
            && let Some((family, text)) = rest.split_once(' ')
        {
            help.insert(family, text);
        }
    }
    let mut meters: BTreeMap<String, Meter> = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (series, value) = match line.rsplit_once(' ') {
            Some((series, value)) => (series, value),
            None => continue,
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name, labels(rest.trim_end_matches('}'))),
            None => (series, BTreeMap::new()),
        };
        // The family and the statistic this sample is of.
        let (family, statistic) = if let Some(kind) = kinds.get(name) {
            match *kind {
                "counter" => (name, "COUNT"),
                "gauge" | "untyped" => (name, "VALUE"),
                // a summary's quantiles: not a Spring measurement
                _ => continue,
            }
        } else if let Some(family) = name.strip_suffix("_count") {
            (family, "COUNT")
        } else if let Some(family) = name.strip_suffix("_sum") {
            (family, "TOTAL_TIME")
        } else {
            continue; // a histogram's buckets
        };
        if family == crate::metrics::CIRCUIT_BREAKER_CALLS_TOTAL {
            // Resilience4j 1.x's alias of the not-permitted counter, for its
            // Prometheus dashboards: its Spring name is the timer's, whose
            // counts it must not join
            continue;
        }
        let kind = kinds.get(family).copied().unwrap_or("untyped");
        let meter = meters.entry(spring_name(family, kind)).or_default();
        meter.kind = kind.to_owned();
        meter.description = help.get(family).map(|h| (*h).to_owned());
        let mut labels = labels;
        labels.remove("quantile");
        meter.samples.push((labels, statistic, value));
    }
    meters
}

/// `GET /actuator/metrics`: the names.
pub(super) async fn metric_names(State(s): St) -> Response {
    let Some(text) = s.render_prometheus() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let names: Vec<String> = parse(&text).into_keys().collect();
    ok(&json!({ "names": names }))
}

/// `GET /actuator/metrics/{name}?tag=key:value`: one meter.
pub(super) async fn metric(
    State(s): St,
    Path(name): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
    uri: Uri,
) -> Response {
    let Some(text) = s.render_prometheus() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut filters = Vec::new();
    for (key, value) in query.iter().filter(|(k, _)| k == "tag") {
        match value.split_once(':') {
            Some((k, v)) => filters.push((k.to_owned(), v.to_owned())),
            None => {
                return Problem::bad_request(format!(
                    "`{key}={value}`: a tag filter is `key:value`, like `tag=kind:failed`"
                ))
                .into_response(&uri);
            }
        }
    }
    let meters = parse(&text);
    let Some(meter) = meters.get(&name) else {
        return Problem::new(StatusCode::NOT_FOUND, format!("no meter `{name}`"))
            .into_response(&uri);
    };
    let matching: Vec<_> = meter
        .samples
        .iter()
        .filter(|(labels, _, _)| {
            filters
                .iter()
                .all(|(k, v)| labels.get(k).is_some_and(|l| l == v))
        })
        .collect();
    if matching.is_empty() {
        return Problem::new(
            StatusCode::NOT_FOUND,
            format!("no series of `{name}` has the tags asked for"),
        )
        .into_response(&uri);
    }
    let mut sums: BTreeMap<&str, f64> = BTreeMap::new();
    let mut tags: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (labels, statistic, value) in &matching {
        *sums.entry(statistic).or_default() += value;
        for (k, v) in labels {
            if !filters.iter().any(|(f, _)| f == k) {
                tags.entry(k).or_default().insert(v);
            }
        }
    }
    // Spring Boot's order: COUNT, TOTAL_TIME, VALUE.
    let order = ["COUNT", "TOTAL_TIME", "VALUE"];
    let measurements: Vec<Value> = order
        .iter()
        .filter_map(|st| sums.get(st).map(|v| json!({ "statistic": st, "value": v })))
        .collect();
    let available: Vec<Value> = tags
        .iter()
        .map(|(k, vs)| json!({ "tag": k, "values": vs.iter().collect::<Vec<_>>() }))
        .collect();
    let base_unit = matches!(meter.kind.as_str(), "summary" | "histogram").then_some("seconds");
    ok(&json!({
        "name": name,
        "description": meter.description,
        "baseUnit": base_unit,
        "measurements": measurements,
        "availableTags": available,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_decode_with_their_escapes() {
        let l = labels(r#"kind="failed",name="a\"b""#);
        assert_eq!(l["kind"], "failed");
        assert_eq!(l["name"], "a\"b");
        assert!(labels("").is_empty());
    }

    #[test]
    fn spring_names_drop_micrometers_suffixes() {
        assert_eq!(
            spring_name("resilience4j_circuitbreaker_calls_seconds", "summary"),
            "resilience4j.circuitbreaker.calls"
        );
        assert_eq!(
            spring_name("resilience4j_retry_calls_total", "counter"),
            "resilience4j.retry.calls"
        );
        assert_eq!(
            spring_name("resilience4j_circuitbreaker_state", "gauge"),
            "resilience4j.circuitbreaker.state"
        );
    }
}
