//! Reading one value of resilience.toml as its key's type ([`Ty`]): what
//! every table (the patterns', `[retrybudget]`'s, `[fault]`'s) reads its
//! values with.

use resil_core::bulkhead::LimitAlgorithm;
use resil_core::circuit_breaker::{SlidingWindowType, State};
use resil_core::cluster::ClusterFailureMode;

use crate::duration;
use crate::keys::Ty;
use crate::value::{Kind, Node, Val, boolean, count, number, relaxed};

/// Types one value; the error is the message for the problem.
pub(crate) fn typed(ty: Ty, node: &Node) -> Result<Val, String> {
    if let Kind::Nil = node.kind {
        return Err("has no value".to_owned());
    }
    match ty {
        Ty::Percent | Ty::Float => number(node).map(Val::Float),
        Ty::Count => count(node).map(Val::Count),
        Ty::Duration => match &node.kind {
            Kind::Int(ms) => duration::from_millis(*ms)
                .map(Val::Duration)
                .map_err(|e| e.to_string()),
            Kind::Str(s) => duration::parse(s)
                .map(Val::Duration)
                .map_err(|e| e.to_string()),
            _ => Err(duration::EXPECTED.to_owned()),
        },
        Ty::Bool | Ty::NoEffect => {
            let b = boolean(node)?;
            Ok(if ty == Ty::Bool {
                Val::Bool(b)
            } else {
                Val::Nothing
            })
        }
        Ty::WindowType => match &node.kind {
            Kind::Str(s) => match relaxed(s).as_str() {
                "countbased" => Ok(Val::WindowType(SlidingWindowType::CountBased)),
                "timebased" => Ok(Val::WindowType(SlidingWindowType::TimeBased)),
                _ => Err("expected \"COUNT_BASED\" or \"TIME_BASED\"".to_owned()),
            },
            _ => Err("expected \"COUNT_BASED\" or \"TIME_BASED\"".to_owned()),
        },
        Ty::Kinds => kinds(node).map(Val::Kinds),
        Ty::BaseConfig => match &node.kind {
            Kind::Str(s) if s.is_empty() => Ok(Val::Name(None)),
            Kind::Str(s) => Ok(Val::Name(Some(s.clone()))),
            _ => Err("expected the name of a table under `configs`".to_owned()),
        },
        Ty::Code(advice) => Err(format!(
            "names Java code, which resil cannot load; {advice}"
        )),
        Ty::Propagators => strings(node).map(Val::Names),
        Ty::ClusterUrl => match &node.kind {
            Kind::Str(s) => crate::cluster::check_url(s).map(|()| Val::Text(s.clone())),
            _ => Err("expected a Redis URL such as \"redis://127.0.0.1:6379/0\"".to_owned()),
        },
        Ty::Text => match &node.kind {
            Kind::Str(s) if !s.trim().is_empty() => Ok(Val::Text(s.clone())),
            _ => Err("expected a non-empty string".to_owned()),
        },
        Ty::FailureMode => match &node.kind {
            Kind::Str(s) => s
                .trim()
                .to_ascii_lowercase()
                .parse::<ClusterFailureMode>()
                .map(Val::FailureMode)
                .map_err(|_| "expected \"local\", \"allow\" or \"deny\"".to_owned()),
            _ => Err("expected \"local\", \"allow\" or \"deny\"".to_owned()),
        },
        Ty::InitialState => initial_state(node).map(Val::InitialState),
        Ty::LimitAlgorithm => match &node.kind {
            Kind::Str(s) => s
                .parse::<LimitAlgorithm>()
                .map(Val::LimitAlgorithm)
                .map_err(|_| LIMIT_ALGORITHMS.to_owned()),
            _ => Err(LIMIT_ALGORITHMS.to_owned()),
        },
    }
}

/// What `limit-algorithm` accepts.
const LIMIT_ALGORITHMS: &str = "expected \"fixed\", \"aimd\", \"gradient2\" or \"vegas\"";

/// The states a circuit breaker may start in, as resilience.toml spells them.
const INITIAL_STATES: &str = "\"CLOSED\", \"DISABLED\", \"METRICS_ONLY\" or \"FORCED_OPEN\"";

/// `initial-state`: Resilience4j 2.3's `initialState`, whose accepted
/// values are the states a breaker can be put in by hand and stay in.
fn initial_state(node: &Node) -> Result<State, String> {
    let Kind::Str(s) = &node.kind else {
        return Err(format!("expected {INITIAL_STATES}"));
    };
    match relaxed(s).as_str() {
        "closed" => Ok(State::Closed),
        "disabled" => Ok(State::Disabled),
        "metricsonly" => Ok(State::MetricsOnly),
        "forcedopen" => Ok(State::ForcedOpen),
        "open" | "halfopen" => Err(format!(
            "a circuit breaker cannot start in {}: OPEN and HALF_OPEN are reached from the calls it records; expected {INITIAL_STATES}",
            s.trim().to_ascii_uppercase()
        )),
        _ => Err(format!("expected {INITIAL_STATES}")),
    }
}

/// A list of strings: an array, or one comma-separated string (as Spring
/// reads lists from properties and environment variables).
fn strings(node: &Node) -> Result<Vec<String>, String> {
    match &node.kind {
        Kind::Str(s) => Ok(s
            .split(',')
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
            .collect()),
        Kind::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match &item.kind {
                Kind::Str(s) => Ok(s.trim().to_owned()),
                _ => Err(format!("item {} is not a string", i + 1)),
            })
            .collect(),
        _ => Err("expected a list of names".to_owned()),
    }
}

/// Error kind names. A Java class name (`com.example.InventoryException`,
/// `Outer$Inner`) stands for its simple name, which is what
/// `#[derive(Classify)]` would call the variant.
pub(crate) fn kinds(node: &Node) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for name in strings(node)? {
        let simple = name.rsplit('.').next().unwrap_or(&name);
        let simple = simple.rsplit('$').next().unwrap_or(simple);
        if simple.is_empty() || simple.chars().any(char::is_whitespace) {
            return Err(format!(
                "`{name}` is not an error kind name (a variant name like `ConnectionRefused`)"
            ));
        }
        if !out.iter().any(|k| k == simple) {
            out.push(simple.to_owned());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Origin;

    fn node(kind: Kind) -> Node {
        Node {
            kind,
            origin: Origin::File,
        }
    }

    #[test]
    fn kinds_take_simple_names_of_java_classes() {
        let n = node(Kind::Array(vec![
            node(Kind::Str(
                "com.example.order.InventoryConnectionException".into(),
            )),
            node(Kind::Str("Outer$Inner".into())),
            node(Kind::Str("Timeout".into())),
        ]));
        assert_eq!(
            kinds(&n).unwrap(),
            ["InventoryConnectionException", "Inner", "Timeout"]
        );
        let n = node(Kind::Str("A, B,,C".into()));
        assert_eq!(kinds(&n).unwrap(), ["A", "B", "C"]);
        assert!(kinds(&node(Kind::Str("com.example.".into()))).is_err());
    }
}
