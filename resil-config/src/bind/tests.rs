//! The key tables against binding: every row bound and printed as its
//! kind says, and every plain key changing what the report prints.

use resil_core::bulkhead::LimitAlgorithm;
use resil_core::circuit_breaker::{SlidingWindowType, State as BreakerState};

use super::*;
use crate::file::{BASE_CONFIG, KEY_LABEL, MAX_KEYS};
use crate::keys::Ty;

/// Every row of `P`'s table is read by validation, and is bound and
/// printed: a plain key has a setter and a printer, a key bound by the
/// aspect's code is one of `own` (the keys `P::apply`, `bind` and
/// `inherit` handle by name), a key never bound is Java code or without
/// effect; the error-kind lists are rows of kinds; the description's own
/// order, if any, names each printed key once.
fn rows_are_complete<P: Binder>(own: &[&str]) {
    let rows = P::KEYS;
    for (i, row) in rows.iter().enumerate() {
        let name = row.def.name;
        assert!(
            rows[..i].iter().all(|r| r.def.name != name),
            "{}: `{name}` has two rows",
            P::ASPECT
        );
        assert!(
            file::find_key(P::ASPECT, name)
                .is_some_and(|d| d.name == name && d.alias == row.def.alias && d.ty == row.def.ty),
            "{}: validation does not read the row of `{name}`",
            P::ASPECT
        );
        let inert = matches!(row.def.ty, Ty::Code(_) | Ty::NoEffect);
        match row.bind {
            Bind::Set(_) => assert!(
                row.print.is_some(),
                "{}: the plain key `{name}` has no printer",
                P::ASPECT
            ),
            Bind::Own => assert!(
                own.contains(&name),
                "{}: `{name}` is bound by the aspect's code, which this test does not know of",
                P::ASPECT
            ),
            Bind::Never => assert!(
                inert,
                "{}: `{name}` is never bound, but it is neither Java code nor without effect",
                P::ASPECT
            ),
        }
        assert!(
            !inert || matches!(row.bind, Bind::Never),
            "{}: `{name}` is bound, but it is Java code or without effect",
            P::ASPECT
        );
    }
    for key in own {
        assert!(
            rows.iter()
                .any(|r| r.def.name == *key && matches!(r.bind, Bind::Own)),
            "{}: `{key}` has no row bound by the aspect's code",
            P::ASPECT
        );
    }
    for (key, _) in P::kinds(&P::Config::default()) {
        assert!(
            rows.iter()
                .any(|r| r.def.name == key && r.def.ty == Ty::Kinds),
            "{}: the error-kind list `{key}` has no row of kinds",
            P::ASPECT
        );
    }
    if let Some(order) = P::DESCRIBED {
        for (i, key) in order.iter().enumerate() {
            assert!(
                !order[..i].contains(key),
                "{}: `{key}` is described twice",
                P::ASPECT
            );
            assert!(
                rows.iter().any(|r| r.def.name == *key && r.print.is_some()),
                "{}: `{key}` is described but has no printer",
                P::ASPECT
            );
        }
        for row in rows.iter().filter(|r| r.print.is_some()) {
            assert!(
                order.contains(&row.def.name),
                "{}: `{}` has a printer but is not in the description's order",
                P::ASPECT,
                row.def.name
            );
        }
    }
}

/// Values of type `ty` to try a plain key with (one of them differs from
/// its default and passes the builder's rules alone).
fn candidates(ty: Ty) -> Vec<Val> {
    let ms = |ms| Val::Duration(Duration::from_millis(ms));
    match ty {
        Ty::Count => [1, 2, 3, 5, 7, 10, 100, 1000, 60_000]
            .map(Val::Count)
            .to_vec(),
        Ty::Duration => vec![ms(1), ms(7), ms(250), ms(3_000), ms(7_000), ms(90_000)],
        Ty::Percent => vec![Val::Float(33.0), Val::Float(77.0)],
        Ty::Float => [0.25, 0.75, 2.0, 3.0].map(Val::Float).to_vec(),
        Ty::Bool => vec![Val::Bool(true), Val::Bool(false)],
        Ty::WindowType => vec![
            Val::WindowType(SlidingWindowType::CountBased),
            Val::WindowType(SlidingWindowType::TimeBased),
        ],
        Ty::Kinds => vec![Val::Kinds(vec!["Boom".to_owned()])],
        Ty::InitialState => [
            BreakerState::Disabled,
            BreakerState::ForcedOpen,
            BreakerState::MetricsOnly,
            BreakerState::Closed,
        ]
        .map(Val::InitialState)
        .to_vec(),
        Ty::LimitAlgorithm => LimitAlgorithm::ALL.map(Val::LimitAlgorithm).to_vec(),
        _ => Vec::new(),
    }
}

fn table(key: &'static str, val: Val) -> Table {
    Table {
        name: "a".to_owned(),
        section: "instances",
        path: "x.instances.a".to_owned(),
        source: "resilience.toml".to_owned(),
        settings: BTreeMap::from([(
            key,
            Setting {
                val,
                source: "resilience.toml".to_owned(),
                path: format!("x.instances.a.{key}"),
                raw: "v".to_owned(),
            },
        )]),
    }
}

/// Every plain key of `P`'s table is bound through its row and printed
/// by it: a table that sets it alone to a value other than the default
/// records where it came from and changes what the description prints.
fn plain_rows_bind_and_print<P: Binder>() {
    let default = P::describe(&P::Config::default(), &Notes::new());
    for row in P::KEYS.iter().filter(|r| matches!(r.bind, Bind::Set(_))) {
        let name = row.def.name;
        // A key the default description leaves out (a setting of a
        // mode that is off) must show once set.
        let before = default
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone());
        let changed = candidates(row.def.ty).into_iter().any(|val| {
            let t = table(name, val);
            let Some(bound) = bind::<P>(&[&t], &BTreeMap::new(), &mut Diagnostics::default())
            else {
                return false;
            };
            assert!(
                bound.provenance.contains_key(name),
                "{}: `{name}` has no provenance",
                P::ASPECT
            );
            P::describe(&bound.config, &bound.notes)
                .iter()
                .any(|(k, v)| *k == name && Some(v) != before.as_ref())
        });
        assert!(
            changed,
            "{}: setting `{name}` does not change what the description prints",
            P::ASPECT
        );
    }
}

const EXTRAS: [&str; 3] = [MAX_KEYS, KEY_LABEL, BASE_CONFIG];

#[test]
fn time_limiter_rows() {
    rows_are_complete::<TimeLimiter>(&EXTRAS);
    plain_rows_bind_and_print::<TimeLimiter>();
}

/// The cluster keys: `RateLimiter::apply` and `apply_breaker_cluster`.
const RATE_LIMITER_CLUSTER: [&str; 5] = [
    file::CLUSTER_URL,
    file::CLUSTER_KEY,
    file::CLUSTER_LEASE,
    file::CLUSTER_TIMEOUT,
    file::CLUSTER_FAILURE_MODE,
];

/// The flags kept in [`Extras`] by `bind`.
const HEALTH: [&str; 2] = [
    keys::REGISTER_HEALTH_INDICATOR,
    keys::ALLOW_HEALTH_INDICATOR_TO_FAIL,
];

/// The keys of a wait's interval function besides the wait itself:
/// `State::wait`, `warn_unused`, `check_inert_ranges`.
const INTERVAL: [&str; 4] = [ENABLE_EXPONENTIAL, MULTIPLIER, ENABLE_RANDOMIZED, FACTOR];

#[test]
fn circuit_breaker_rows() {
    let mut own = EXTRAS.to_vec();
    own.push(keys::SHARED);
    own.extend(INTERVAL);
    own.extend([CB_WAIT, CB_MAX]);
    own.extend(HEALTH);
    own.extend([
        file::CLUSTER_URL,
        file::CLUSTER_KEY,
        file::CLUSTER_TIMEOUT,
        file::CLUSTER_PROBE_EXPIRY,
    ]);
    rows_are_complete::<CircuitBreaker>(&own);
    plain_rows_bind_and_print::<CircuitBreaker>();
}

#[test]
fn retry_rows() {
    let mut own = EXTRAS.to_vec();
    own.extend(INTERVAL);
    own.extend([RETRY_WAIT, RETRY_MAX, crate::keys::BUDGET]);
    rows_are_complete::<Retry>(&own);
    plain_rows_bind_and_print::<Retry>();
}

#[test]
fn rate_limiter_rows() {
    let mut own = EXTRAS.to_vec();
    own.extend(RATE_LIMITER_CLUSTER);
    own.extend(HEALTH);
    own.push(keys::SUBSCRIBE_FOR_EVENTS);
    rows_are_complete::<RateLimiter>(&own);
    plain_rows_bind_and_print::<RateLimiter>();
}

#[test]
fn thread_pool_bulkhead_rows() {
    let mut own = EXTRAS.to_vec();
    own.push(file::CONTEXT_PROPAGATORS);
    rows_are_complete::<ThreadPoolBulkhead>(&own);
    plain_rows_bind_and_print::<ThreadPoolBulkhead>();
}

#[test]
fn bulkhead_rows() {
    let mut own = EXTRAS.to_vec();
    own.push(keys::POOL_SIZE);
    rows_are_complete::<Bulkhead>(&own);
    plain_rows_bind_and_print::<Bulkhead>();
}
