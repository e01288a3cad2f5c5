//! The instance lists: `/actuator/circuitbreakers` with each breaker's
//! details, and the names of the other kinds.

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
                let keys: Map<String, Value> = table
                    .entries()
                    .iter()
                    .map(|(key, p)| (key.clone(), json::circuit_breaker_details(p)))
                    .collect();
                m.insert("keys".to_owned(), Value::Object(keys));
            }
            (cb.name().to_owned(), details)
        })
        .collect();
    ok(&json!({ "circuitBreakers": all }))
}

/// The names of `P`'s instances, sorted.
fn names_of<P: Shown>(registries: &Registries) -> Vec<String> {
    P::registry(registries)
        .all()
        .iter()
        .map(|p| p.instance_name().to_owned())
        .collect()
}

/// `/actuator/retries`, `/actuator/ratelimiters`, ...: the names of `P`'s instances.
pub(super) async fn names<P: Shown>(State(s): St) -> Response {
    ok(&json!({ P::LIST_KEY: names_of::<P>(s.registries()) }))
}

/// Resilience4j lists both kinds of bulkhead under `bulkheads`.
pub(super) async fn bulkheads(State(s): St) -> Response {
    let registries = s.registries();
    let mut all = names_of::<Bulkhead>(registries);
    all.extend(names_of::<ThreadPoolBulkhead>(registries));
    all.sort();
    ok(&json!({ "bulkheads": all }))
}
