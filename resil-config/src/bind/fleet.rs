//! The keys of a table that name something outside it: a fleet's backend
//! (`cluster-url` and its keys, on rate limiters and breakers) and a retry
//! budget (`budget`, on retries and hedges).

use resil_core::circuit_breaker::CircuitBreaker;
use resil_core::cluster::{CircuitBreakerCluster, RateLimiterCluster};
use resil_core::rate_limiter::RateLimiter;
use resil_core::retry::RetryBudget;

use super::{Binder, State};
use crate::file::{self, Table};
use crate::keys;
use crate::value::{Setting, Val};

/// The cluster keys of a breaker's tables, inherited key by key; the
/// backend is made for the table the chain ends at.
pub(super) fn apply_breaker_cluster<'a>(
    s: &mut State<'a, CircuitBreaker>,
    t: &'a Table,
    last: bool,
) {
    let url = s.inherited(t, file::CLUSTER_URL);
    let key = s.inherited(t, file::CLUSTER_KEY);
    let timeout = s.inherited(t, file::CLUSTER_TIMEOUT);
    let expiry = s.inherited(t, file::CLUSTER_PROBE_EXPIRY);
    if !last {
        return;
    }
    let others = [
        (file::CLUSTER_KEY, key),
        (file::CLUSTER_TIMEOUT, timeout),
        (file::CLUSTER_PROBE_EXPIRY, expiry),
    ];
    let Some(backend) = cluster_backend(s, url, &others) else {
        return;
    };
    let mut c = CircuitBreakerCluster::new(backend);
    if let Some(Val::Text(k)) = key.map(|x| &x.val) {
        c = c.key(k.as_str());
    }
    if let Some(Val::Duration(d)) = timeout.map(|x| &x.val) {
        c = c.timeout(*d);
    }
    if let Some(Val::Duration(d)) = expiry.map(|x| &x.val) {
        c = c.probe_expiry(*d);
    }
    s.map(|b| b.cluster(Some(c)));
}

/// The rate limiter's cluster keys: its fleet-wide limit.
pub(super) fn apply_limiter_cluster<'a>(s: &mut State<'a, RateLimiter>, t: &'a Table, last: bool) {
    // The cluster keys are inherited key by key like the others; the
    // backend is made once, for the table the chain ends at.
    let url = s.inherited(t, file::CLUSTER_URL);
    let key = s.inherited(t, file::CLUSTER_KEY);
    let lease = s.inherited(t, file::CLUSTER_LEASE);
    let timeout = s.inherited(t, file::CLUSTER_TIMEOUT);
    let mode = s.inherited(t, file::CLUSTER_FAILURE_MODE);
    if !last {
        return;
    }
    let others = [
        (file::CLUSTER_KEY, key),
        (file::CLUSTER_LEASE, lease),
        (file::CLUSTER_TIMEOUT, timeout),
        (file::CLUSTER_FAILURE_MODE, mode),
    ];
    let Some(backend) = cluster_backend(s, url, &others) else {
        return;
    };
    let mut c = RateLimiterCluster::new(backend);
    if let Some(Val::Text(k)) = key.map(|x| &x.val) {
        c = c.key(k.as_str());
    }
    if let Some(Val::Count(n)) = lease.map(|x| &x.val) {
        c = c.lease(*n);
    }
    if let Some(Val::Duration(d)) = timeout.map(|x| &x.val) {
        c = c.timeout(*d);
    }
    if let Some(Val::FailureMode(m)) = mode.map(|x| &x.val) {
        c = c.failure_mode(*m);
    }
    s.map(|b| b.cluster(Some(c)));
}

/// The backend `url` names, with the other cluster keys recorded where
/// their values came from; `None` without a `cluster-url` (the other keys
/// then have no effect, and a warning says so) or when the backend cannot
/// be made (a problem at the URL).
pub(super) fn cluster_backend<'a, P: Binder>(
    s: &mut State<'a, P>,
    url: Option<&'a Setting>,
    others: &[(&'static str, Option<&'a Setting>)],
) -> Option<std::sync::Arc<dyn resil_core::cluster::ClusterBackend>> {
    let Some(url) = url else {
        for setting in others.iter().filter_map(|(_, x)| *x) {
            s.warn(
                setting,
                format!("has no effect without `{}`", file::CLUSTER_URL),
            );
        }
        return None;
    };
    s.provenance.insert(file::CLUSTER_URL, url);
    for (key, setting) in others {
        if let Some(setting) = setting {
            s.provenance.insert(key, setting);
        }
    }
    let Val::Text(text) = &url.val else {
        return None;
    };
    match crate::cluster::backend(text) {
        Ok(b) => Some(b),
        Err(message) => {
            s.problems.push(url.problem(message));
            None
        }
    }
}

/// `budget = "<name>"`: the budget of `[retrybudget.instances.<name>]`,
/// given to the builder with `set` (a retry's or a hedge's).
pub(super) fn apply_budget<'a, P: Binder>(
    s: &mut State<'a, P>,
    setting: &'a Setting,
    set: fn(P::Builder, RetryBudget) -> P::Builder,
) {
    let Val::Text(name) = &setting.val else {
        return;
    };
    s.provenance.insert(keys::BUDGET, setting);
    match s.budgets.get(name.as_str()) {
        Some(Some(b)) => {
            let b = b.clone();
            s.map(|builder| set(builder, b));
        }
        // its table broke a rule, reported where it was read
        Some(None) => {}
        None => {
            let names = s.budgets.keys().map(String::as_str);
            let hint = match crate::value::did_you_mean(name, names) {
                Some(m) => format!("; did you mean `{m}`?"),
                None if s.budgets.is_empty() => format!(
                    "; configure it as `[{}.{}.{}]`",
                    crate::budget::TABLE,
                    crate::budget::INSTANCES,
                    crate::value::segment(name)
                ),
                None => format!(
                    "; configured: {}",
                    crate::value::list(&s.budgets.keys().map(String::as_str).collect::<Vec<_>>())
                ),
            };
            s.problems
                .push(setting.problem(format!("names no retry budget `{name}`{hint}")));
        }
    }
}
