//! A retry budget shared by a fleet, against a real `redis-server`
//! (started per test; skipped with a message where none is installed and
//! `CI` is unset). Each budget below stands for one process: its own
//! connection, its own lease, one key on Redis.
//!
//! The fleet's window is counted on Redis's clock, and the process's
//! round trips run in the background, so the tests wait (boundedly) for
//! their answers on the real clock.
#![allow(clippy::disallowed_methods)] // real waits: Redis's clock is real

use std::sync::Arc;
use std::time::{Duration, Instant};

use resil_core::cluster::{ClusterBackend, ClusterFailureMode, RetryBudgetCluster};
use resil_core::retry::{RetryBudget, RetryBudgetConfig};
use resil_redis::{RedisBackend, RedisOptions};
use resil_testkit::RedisServer;

fn backend(url: &str) -> Arc<dyn ClusterBackend> {
    Arc::new(RedisBackend::with_options(url, RedisOptions::default()).expect("a valid url"))
}

/// A fleet budget of half a retry per first attempt, no reserve, a window
/// of `ttl` (slices of a tenth of it).
fn budget(
    backend: Arc<dyn ClusterBackend>,
    key: &str,
    ttl: Duration,
    lease: u32,
    mode: ClusterFailureMode,
) -> RetryBudget {
    let config = RetryBudgetConfig::builder()
        .ratio(0.5)
        .min_retries_per_second(0)
        .ttl(ttl)
        .cluster(Some(
            RetryBudgetCluster::new(backend)
                .key(key)
                .lease(lease)
                .failure_mode(mode),
        ))
        .build()
        .expect("a valid config");
    RetryBudget::new(key.to_owned(), config)
}

/// Waits up to two seconds for `done`.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(2);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The deposits and retries recorded on Redis: `(first attempts, retries)`.
fn on_redis(redis: &RedisServer, key: &str) -> (u64, u64) {
    let out = redis
        .command(&[
            "EVAL",
            "return table.concat(redis.call('HGETALL', KEYS[1]), ' ')",
            "1",
            key,
        ])
        .expect("HGETALL");
    let words: Vec<&str> = out.split_whitespace().collect();
    let (mut firsts, mut retries) = (0, 0);
    for pair in words.chunks(2) {
        let n: u64 = pair[1].parse().unwrap_or(0);
        match pair[0].as_bytes()[0] {
            b'd' => firsts += n,
            b'w' => retries += n,
            _ => {}
        }
    }
    (firsts, retries)
}

/// Withdraws until the budget says no; the retries it paid for.
fn spend(budget: &RetryBudget) -> u32 {
    let mut n = 0;
    while budget.try_withdraw() {
        n += 1;
        assert!(n < 1000, "a budget that never says no");
    }
    n
}

#[test]
fn two_processes_share_one_balance() {
    let Some(redis) = RedisServer::start_or_skip("two_processes_share_one_balance") else {
        return;
    };
    let key = "resil:{inventory}:retrybudget";
    let ttl = Duration::from_secs(10);
    let a = budget(backend(&redis.url()), key, ttl, 3, ClusterFailureMode::Deny);
    let b = budget(backend(&redis.url()), key, ttl, 3, ClusterFailureMode::Deny);

    // Process a sees eleven first attempts; the first sends itself at once
    // (half a retry: nothing to grant), the rest wait for the next slice.
    for _ in 0..11 {
        a.deposit();
    }
    wait_for("the first round trip", || on_redis(&redis, key).0 == 1);
    assert_eq!(spend(&a), 0, "no lease yet");
    std::thread::sleep(ttl / 10);
    a.deposit(); // the next slice: sends the other eleven, asks for 3
    wait_for("a's lease", || a.balance() >= 3);
    assert_eq!(on_redis(&redis, key).0, 12, "every first attempt counted");

    // Process b saw no traffic: its first retry finds no lease, is denied,
    // and asks; what is left of the fleet's balance (12 × 0.5 − 3 = 3)
    // pays for its lease.
    assert!(!b.try_withdraw());
    wait_for("b's lease", || b.balance() >= 3);
    assert_eq!(spend(&b), 3, "b's lease, from a's calls");
    assert_eq!(spend(&a), 3, "a's lease");
    // The fleet is spent: both are denied, whatever they ask.
    assert!(!a.try_withdraw());
    assert!(!b.try_withdraw());
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(spend(&a) + spend(&b), 0);
    assert_eq!(
        on_redis(&redis, key),
        (12, 6),
        "six retries for twelve calls"
    );
    assert!(a.metrics().denied() >= 2 && b.metrics().denied() >= 2);
}

#[test]
fn first_attempts_cost_a_round_trip_per_slice_not_per_call() {
    let Some(redis) =
        RedisServer::start_or_skip("first_attempts_cost_a_round_trip_per_slice_not_per_call")
    else {
        return;
    };
    let key = "resil:{orders}:retrybudget";
    let b = backend(&redis.url());
    let budget = budget(
        Arc::clone(&b),
        key,
        Duration::from_secs(10),
        5,
        ClusterFailureMode::Deny,
    );
    let started = Instant::now();
    for _ in 0..10_000 {
        budget.deposit();
    }
    let slices = started.elapsed().as_millis() / 1000 + 1;
    wait_for("the answer", || b.round_trips() >= 1);
    assert!(
        u128::from(b.round_trips()) <= slices,
        "{} round trips for 10 000 calls in {slices} slice(s)",
        b.round_trips()
    );
}

/// Redis killed: the budget follows its failure mode once a round trip
/// failed; `local` goes by the process's own window, which counted the
/// same first attempts.
#[test]
fn with_redis_down_the_failure_mode_decides() {
    let Some(mut redis) = RedisServer::start_or_skip("with_redis_down_the_failure_mode_decides")
    else {
        return;
    };
    let ttl = Duration::from_millis(500);
    let url = redis.url();
    let budgets: Vec<(
        ClusterFailureMode,
        String,
        Arc<dyn ClusterBackend>,
        RetryBudget,
    )> = [
        ClusterFailureMode::Local,
        ClusterFailureMode::Allow,
        ClusterFailureMode::Deny,
    ]
    .into_iter()
    .map(|mode| {
        let key = format!("resil:{{{}}}:retrybudget", mode.as_str());
        let backend = backend(&url);
        let budget = budget(Arc::clone(&backend), &key, ttl, 2, mode);
        (mode, key, backend, budget)
    })
    .collect();
    for (_, _, _, b) in &budgets {
        b.deposit();
    }
    redis.kill();
    std::thread::sleep(ttl / 10);
    for (_, key, backend, b) in &budgets {
        // the next slice: ten first attempts, whose round trip fails
        for _ in 0..10 {
            b.deposit();
        }
        wait_for("the failed round trip", || !backend.is_up(key));
    }
    let spent: Vec<u32> = budgets
        .iter()
        .map(|(mode, _, _, b)| match mode {
            ClusterFailureMode::Allow => (0..100).filter(|_| b.try_withdraw()).count() as u32,
            _ => spend(b),
        })
        .collect();
    assert_eq!(
        spent[0], 5,
        "local: the process's own budget, half of its eleven calls"
    );
    assert_eq!(spent[1], 100, "allow: every retry");
    assert_eq!(spent[2], 0, "deny: none");
}
