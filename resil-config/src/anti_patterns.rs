//! The anti-patterns a configuration shows on its own, as start-up
//! warnings at the key or instance they are about (errors in strict mode):
//!
//! * a retry that retries every error, the refusals of the layers inside it
//!   included;
//! * a thread-pool queue that cannot drain within its time limit;
//! * one circuit breaker name declared by several functions (one breaker for
//!   unrelated downstreams), unless its table says `shared = true`;
//! * a bulkhead that admits more concurrent calls than its connection pool
//!   (`pool-size`) holds.
//!
//! Instances of one name are taken as one function's stack, as the
//! attributes build it. The file's top-level keys that resil does not read
//! (an `application.yml`'s `management:` block) are warned of where the file
//! is parsed.

use std::collections::BTreeSet;

use resil_core::registry::Registry;

use crate::aspect::Aspect;
use crate::declared::Declaration;
use crate::error::{ConfigProblem, Diagnostics};
use crate::file::Document;
use crate::inherit;
use crate::keys;
use crate::report::InstanceReport;
use crate::value::{self, Ctx, Setting};

/// The registries as built, before they become [`Registries`](crate::Registries).
pub(crate) struct Built<'a> {
    pub(crate) circuit_breakers: &'a Registry<resil_core::circuit_breaker::CircuitBreaker>,
    pub(crate) retries: &'a Registry<resil_core::retry::Retry>,
    pub(crate) bulkheads: &'a Registry<resil_core::bulkhead::Bulkhead>,
    pub(crate) thread_pool_bulkheads:
        &'a Registry<resil_core::thread_pool_bulkhead::ThreadPoolBulkhead>,
    pub(crate) rate_limiters: &'a Registry<resil_core::rate_limiter::RateLimiter>,
    pub(crate) time_limiters: &'a Registry<resil_core::time_limiter::TimeLimiter>,
}

/// Warns of every anti-pattern of the [module documentation](self) in `d`.
pub(crate) fn check(
    built: &Built<'_>,
    instances: &[InstanceReport],
    doc: &Document,
    ctx: &Ctx,
    d: &mut Diagnostics,
) {
    let at = |aspect: Aspect, name: &str, message: String| {
        instance_problem(doc, ctx, aspect, name, message)
    };
    retried_refusals(built, &at, d);
    undrained_queues(built, &at, d);
    for i in instances {
        match i.aspect {
            Aspect::CircuitBreaker => shared_breaker(i, &at, d),
            Aspect::Bulkhead => bulkhead_over_pool(built, i, doc, &at, d),
            _ => {}
        }
    }
}

/// A problem at the table of instance `name` of `aspect`, or at its path
/// when no table configures it.
fn instance_problem(
    doc: &Document,
    ctx: &Ctx,
    aspect: Aspect,
    name: &str,
    message: String,
) -> ConfigProblem {
    match doc.module(aspect).instances.get(name) {
        Some(table) => table.problem(message),
        None => ConfigProblem::new(
            ctx.file.clone(),
            ctx.path(&value::Origin::File, &[aspect.as_str(), "instances", name]),
            None,
            message,
        ),
    }
}

type At<'a> = dyn Fn(Aspect, &str, String) -> ConfigProblem + 'a;

/// Retry every error, the refusals of the layers inside it included.
fn retried_refusals(built: &Built<'_>, at: &At<'_>, d: &mut Diagnostics) {
    for retry in built.retries.all() {
        let config = retry.config();
        if config.max_attempts() < 2 || !config.retry_errors().is_empty() {
            continue;
        }
        let name = retry.name();
        let inside = [
            (
                built.circuit_breakers.find(name).is_some(),
                "CallNotPermitted",
                "circuit breaker",
            ),
            (
                built.bulkheads.find(name).is_some()
                    || built.thread_pool_bulkheads.find(name).is_some(),
                "BulkheadFull",
                "bulkhead",
            ),
            (
                built.rate_limiters.find(name).is_some(),
                "RequestNotPermitted",
                "rate limiter",
            ),
        ];
        let retried: Vec<(&str, &str)> = inside
            .iter()
            .filter(|(present, kind, _)| {
                *present && !config.ignore_errors().iter().any(|k| &**k == *kind)
            })
            .map(|(_, kind, layer)| (*kind, *layer))
            .collect();
        if retried.is_empty() {
            continue;
        }
        let kinds: Vec<&str> = retried.iter().map(|(k, _)| *k).collect();
        let layers: Vec<&str> = retried.iter().map(|(_, l)| *l).collect();
        d.warn(at(
            Aspect::Retry,
            name,
            format!(
                "retries every error, the refusals of the {} `{name}` inside it included ({}): retrying a refusal adds load exactly when the downstream needs less (the anti-pattern 'retry every exception'); name the errors worth retrying in `retry-errors`, or list the refusals in `ignore-errors`",
                match layers.split_last() {
                    Some((last, [])) => (*last).to_owned(),
                    Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
                    None => String::new(),
                },
                kinds.join(", "),
            ),
        ));
    }
}

/// A thread-pool queue that cannot drain within the time limit.
fn undrained_queues(built: &Built<'_>, at: &At<'_>, d: &mut Diagnostics) {
    for pool in built.thread_pool_bulkheads.all() {
        let name = pool.name();
        let Some(limiter) = built.time_limiters.find(name) else {
            continue;
        };
        let (queue, threads) = (
            pool.config().queue_capacity(),
            pool.config().max_thread_pool_size(),
        );
        let timeout = limiter.config().timeout_duration();
        if queue <= threads || timeout.is_zero() {
            continue;
        }
        let rounds = queue.div_ceil(threads);
        d.warn(at(
            Aspect::ThreadPoolBulkhead,
            name,
            format!(
                "a full queue of {queue} tasks on {threads} threads drains in {rounds} rounds; when the tasks take as long as time limiter `{name}` allows ({}), the last ones start after their callers gave up, and run anyway (a thread cannot be stopped): keep `queue-capacity` at most `max-thread-pool-size`, or the timeout well above the tasks' latency times {rounds}",
                resil_core::clock::format_duration(timeout),
            ),
        ));
    }
}

/// One breaker name declared by several functions: one window for unrelated
/// downstreams, so that one failing downstream opens the breaker for all of
/// them (and a healthy one dilutes another's failures), unless the name's
/// table says `shared = true`.
fn shared_breaker(i: &InstanceReport, at: &At<'_>, d: &mut Diagnostics) {
    if i.effective.extras.shared == Some(true) {
        return;
    }
    // one declaration per attribute: distinct sites are distinct functions
    let sites: BTreeSet<(&str, u32, String)> = i
        .declared_at
        .iter()
        .map(|x: &&'static Declaration| (x.file, x.line, x.path()))
        .collect();
    if sites.len() < 2 {
        return;
    }
    let named: Vec<String> = sites
        .iter()
        .map(|(file, line, path)| format!("`{path}` at {file}:{line}"))
        .collect();
    let name = &i.name;
    d.warn(at(
        Aspect::CircuitBreaker,
        name,
        format!(
            "circuit breaker `{name}` is declared by {} different functions, {}: they share one window, so one failing downstream opens the breaker for all of them and a healthy one hides another's failures; give each downstream its own name, or say `shared = true` on `circuitbreaker.instances.{}` if they call the same downstream",
            sites.len(),
            and_list(&named),
            value::segment(name),
        ),
    ));
}

/// A bulkhead that admits more concurrent calls than the connection pool
/// its calls use holds: the calls past the pool wait for a connection
/// inside the bulkhead, holding their permits, and time out there instead
/// of being refused at once.
fn bulkhead_over_pool(
    built: &Built<'_>,
    i: &InstanceReport,
    doc: &Document,
    at: &At<'_>,
    d: &mut Diagnostics,
) {
    let Some(pool) = i.effective.extras.pool_size else {
        return;
    };
    let Some(bulkhead) = built.bulkheads.find(&i.name) else {
        return;
    };
    let calls = bulkhead.config().max_concurrent_calls();
    if calls <= pool {
        return;
    }
    let name = &i.name;
    let message = format!(
        "bulkhead `{name}` admits {calls} concurrent calls (`max-concurrent-calls`) but its connection pool holds {pool} (`pool-size`): the {} calls past the pool wait for a connection inside the bulkhead, holding their permits, and time out there instead of being refused at once; keep `max-concurrent-calls` at most {pool}",
        calls - pool
    );
    d.warn(
        match setting_of(doc, Aspect::Bulkhead, name, keys::POOL_SIZE) {
            Some(setting) => setting.problem(message),
            None => at(Aspect::Bulkhead, name, message),
        },
    );
}

/// The setting of `key` that instance `name` of `aspect` gets: its table's,
/// or the nearest base's (`configs.default` for a name no table configures).
fn setting_of<'a>(doc: &'a Document, aspect: Aspect, name: &str, key: &str) -> Option<&'a Setting> {
    let module = doc.module(aspect);
    let table = module
        .instances
        .get(name)
        .or_else(|| module.configs.get(inherit::DEFAULT))?;
    // the chain was checked when the instance was bound
    let chain = inherit::chain(aspect, module, table, &mut Diagnostics::default())?;
    chain.iter().rev().find_map(|t| t.get(key))
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}
