//! The instance lists: `/actuator/circuitbreakers` with each breaker's
//! details, and the names of the other kinds; with each keyed name's keys
//! (`key = expr`), the refusing ones first.

use resil_config::keyed::Keyed;

use super::json::Listed;
#[allow(clippy::wildcard_imports)]
use super::*;

/// `/actuator/circuitbreakers`: each breaker's details, and its keys' own.
pub(super) async fn circuit_breakers(State(s): St) -> Response {
    let registries = s.registries();
    let keyed = registries.keyed::<CircuitBreaker>();
    let all: Map<String, Value> = registries
        .circuit_breakers()
        .all()
        .iter()
        .map(|cb| {
            let mut details = json::circuit_breaker_details(cb);
            // `key = expr`: each live key's own breaker, under the name's
            if let (Some(table), Value::Object(m)) = (keyed.table(cb.name()), &mut details) {
                m.insert("keys".to_owned(), keys(&table, |_, _| {}));
            }
            (cb.name().to_owned(), details)
        })
        .collect();
    ok(&json!({ "circuitBreakers": all }))
}

/// The live keys of a keyed name, the refusing first (an OPEN breaker, a
/// full bulkhead, a rate limiter without permits; then a HALF_OPEN
/// breaker), then by key, at most `max-keys` of them (the table exceeds
/// its bound only by calls in flight): each `{"key": .., ..state}`, with
/// what `add` adds.
pub(super) fn keys<P: Listed>(
    table: &Keyed<P>,
    add: impl Fn(&P, &mut Map<String, Value>),
) -> Value {
    let mut entries: Vec<(u8, String, std::sync::Arc<P>)> = table
        .entries()
        .into_iter()
        .map(|(key, p)| (p.refusal_rank(), key, p))
        .collect();
    entries.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    entries.truncate(table.max_keys());
    let listed: Vec<Value> = entries
        .into_iter()
        .map(|(_, key, p)| {
            let mut m = Map::new();
            m.insert("key".to_owned(), Value::String(key));
            add(&p, &mut m);
            if let Value::Object(state) = p.state() {
                m.extend(state);
            }
            Value::Object(m)
        })
        .collect();
    Value::Array(listed)
}

/// The keyed names of `P`: `{"name":..,"maxKeys":..,"keys":[..]}` each.
fn keyed_of<P: Listed>(registries: &Registries) -> Vec<Value> {
    registries
        .keyed::<P>()
        .tables()
        .iter()
        .map(|t| {
            json!({
                "name": t.name(),
                "maxKeys": t.max_keys(),
                "keys": keys(t, |_, _| {}),
            })
        })
        .collect()
}

/// `{LIST_KEY: names}`, and `keyed` when a name has keys.
fn list(list_key: &str, names: Vec<String>, keyed: Vec<Value>) -> Response {
    let mut m = Map::new();
    m.insert(list_key.to_owned(), json!(names));
    if !keyed.is_empty() {
        m.insert("keyed".to_owned(), Value::Array(keyed));
    }
    ok(&Value::Object(m))
}

/// The names of `P`'s instances, sorted.
fn names_of<P: Listed>(registries: &Registries) -> Vec<String> {
    P::registry(registries)
        .all()
        .iter()
        .map(|p| p.instance_name().to_owned())
        .collect()
}

/// `/actuator/retries`, `/actuator/ratelimiters`, ...: the names of `P`'s
/// instances, and the keys of its keyed names.
pub(super) async fn names<P: Listed>(State(s): St) -> Response {
    let registries = s.registries();
    list(
        P::LIST_KEY,
        names_of::<P>(registries),
        keyed_of::<P>(registries),
    )
}

/// Resilience4j lists both kinds of bulkhead under `bulkheads`.
pub(super) async fn bulkheads(State(s): St) -> Response {
    let registries = s.registries();
    let mut all = names_of::<Bulkhead>(registries);
    all.extend(names_of::<ThreadPoolBulkhead>(registries));
    all.sort();
    let mut keyed = keyed_of::<Bulkhead>(registries);
    keyed.extend(keyed_of::<ThreadPoolBulkhead>(registries));
    list("bulkheads", all, keyed)
}
