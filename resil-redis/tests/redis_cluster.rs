//! The fleet on a real Redis Cluster: six `redis-server` processes (three
//! masters, three replicas) started once for the binary and used by one
//! test in turn: the limit shared by three processes as on one server, the
//! fleet's half-open episode, and a master killed mid-run (its replica
//! promoted) under three processes. Skipped with a message where
//! `redis-server` or `redis-cli` is missing and `CI` is unset.
//!
//! Every instance uses its default key, `resil:{<name>}:<kind>`, whose
//! hash tag puts it in one slot.
#![allow(clippy::disallowed_methods)] // the Unix time and real waits: Redis's clock is real

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
use resil_core::cluster::{
    CircuitBreakerCluster, ClusterBackend, ClusterFailureMode, RateLimiterCluster, default_key,
};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig, RateLimiterEvent};
use resil_redis::{RedisBackend, RedisOptions};
use resil_testkit::{NODE_TIMEOUT, RedisCluster, RedisServer};

mod support;

use support::{ChildResult, sleep_until, unix_micros};

const CHILD: &str = "RESIL_REDIS_CLUSTER_CHILD";
const LIMIT: u32 = 20;
const PERIOD_MS: u64 = 100;
const PERIOD_US: u64 = PERIOD_MS * 1000;
const LEASE: u32 = 4;
const PROCESSES: u32 = 3;
/// The `cluster-timeout` of every instance.
const TIMEOUT: Duration = Duration::from_millis(50);
/// Scheduling slack on a loaded machine, on top of the timeout.
const SLACK: Duration = Duration::from_millis(200);
/// The bound on the time a process spends in the failure mode when the
/// master of its key is killed, as README documents it:
/// `2 × cluster-node-timeout + 2 s` (failure detection and agreement, the
/// replica's election, the client's new slot map, resil's health check).
const FAILOVER_BOUND: Duration = Duration::from_secs(2 * NODE_TIMEOUT.as_secs() + 2);

/// A backend of its own: a connection of its own, as another process has.
fn backend(url: &str) -> Arc<dyn ClusterBackend> {
    Arc::new(RedisBackend::with_options(url, RedisOptions::default()).expect("a valid url"))
}

/// A limiter named `name` on its default key.
fn limiter(url: &str, name: &str, mode: ClusterFailureMode) -> RateLimiter {
    let config = RateLimiterConfig::builder()
        .limit_for_period(LIMIT)
        .limit_refresh_period(Duration::from_millis(PERIOD_MS))
        .timeout_duration(Duration::ZERO)
        .cluster(Some(
            RateLimiterCluster::new(backend(url))
                .lease(LEASE)
                .timeout(TIMEOUT)
                .failure_mode(mode),
        ))
        .build()
        .expect("a valid config");
    RateLimiter::new(name.to_owned(), config)
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is set for a child"))
}

/// The child role: one process of the fleet, calling its limiter from
/// `RESIL_CLUSTER_START` to `RESIL_CLUSTER_END` (Unix µs), once its
/// connection is up. Prints what it admitted, its longest call and each
/// change of its backend's health (`up@time`) from the start on. Does
/// nothing unless the parent set the child variable.
#[test]
fn child_process() {
    let Ok(url) = std::env::var(CHILD) else {
        return;
    };
    let start: u64 = env("RESIL_CLUSTER_START").parse().unwrap();
    let end: u64 = env("RESIL_CLUSTER_END").parse().unwrap();
    let mode: ClusterFailureMode = env("RESIL_CLUSTER_MODE").parse().unwrap();
    let limiter = limiter(&url, &env("RESIL_CLUSTER_NAME"), mode);
    // the connection's first call finds the nodes and loads the script,
    // which may take longer than the cluster timeout: before the start
    limiter.try_acquire_permission(1);
    while !limiter.cluster_metrics().unwrap().backend_up() && unix_micros() < start {
        std::thread::sleep(Duration::from_millis(10));
    }
    let changes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&changes);
    limiter.event_publisher().on_event(move |e| {
        if let RateLimiterEvent::ClusterBackendChanged { up } = e.kind() {
            seen.lock().unwrap().push(format!("{up}@{}", unix_micros()));
        }
    });
    let before = limiter.cluster_metrics().unwrap();
    sleep_until(start);
    let (mut admitted, mut longest) = (Vec::new(), Duration::ZERO);
    while unix_micros() < end {
        let t = Instant::now();
        let ok = limiter.try_acquire_permission(1);
        longest = longest.max(t.elapsed());
        if ok {
            admitted.push(unix_micros().to_string());
        } else {
            std::thread::sleep(Duration::from_micros(300));
        }
    }
    let m = limiter.cluster_metrics().unwrap();
    println!(
        "RESULT leased={} spent={} fallback={} up={} longest_us={} changes={} admitted={}",
        m.leased_permits() - before.leased_permits(),
        m.spent_permits() - before.spent_permits(),
        m.fallback_calls() - before.fallback_calls(),
        u8::from(m.backend_up()),
        longest.as_micros(),
        changes.lock().unwrap().join(","),
        admitted.join(",")
    );
}

/// Runs `PROCESSES` children on `url` for limiter `name` from `start` to
/// `end`, calls `meanwhile`, and returns their results.
fn fleet(
    url: &str,
    name: &str,
    mode: ClusterFailureMode,
    (start, end): (u64, u64),
    meanwhile: impl FnOnce(),
) -> Vec<ChildResult> {
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "child_process",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD, url)
                .env("RESIL_CLUSTER_START", start.to_string())
                .env("RESIL_CLUSTER_END", end.to_string())
                .env("RESIL_CLUSTER_NAME", name)
                .env("RESIL_CLUSTER_MODE", mode.as_str())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap()
        })
        .collect();
    meanwhile();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "a child failed: {}", out.status);
            ChildResult::of(out.stdout)
        })
        .collect()
}

/// Admitted calls per cycle, numbered from `start`, across `results`.
fn per_cycle(results: &[ChildResult], start: u64) -> std::collections::BTreeMap<u64, u32> {
    let mut cycles = std::collections::BTreeMap::new();
    for r in results {
        for t in r.times("admitted") {
            *cycles
                .entry(t.saturating_sub(start) / PERIOD_US)
                .or_default() += 1;
        }
    }
    cycles
}

/// The `EVALSHA` calls each node has run so far.
fn scripts_run(cluster: &RedisCluster) -> Vec<u64> {
    cluster
        .nodes()
        .iter()
        .map(|n| {
            n.command_calls()
                .map(|c| c.get("evalsha").copied().unwrap_or(0))
                .unwrap_or(0)
        })
        .collect()
}

#[test]
fn on_a_real_cluster() {
    let Some(mut cluster) = RedisCluster::start_or_skip("on_a_real_cluster") else {
        return;
    };
    processes_share_one_limit(&cluster);
    the_half_open_episode_is_the_fleet_s(&cluster);
    a_master_killed_mid_run(&mut cluster);
}

/// Three processes share one limit as on one server, and every script on
/// the limiter's key runs on the one master that holds its slot.
fn processes_share_one_limit(cluster: &RedisCluster) {
    const CYCLES: u64 = 8;
    let name = "shared";
    let master = cluster
        .master_of(&default_key("ratelimiter", name))
        .unwrap();
    let before = scripts_run(cluster);
    let start = (unix_micros() / PERIOD_US + 10) * PERIOD_US;
    let end = start + CYCLES * PERIOD_US;
    let results = fleet(
        &cluster.url(),
        name,
        ClusterFailureMode::Deny,
        (start, end),
        || {},
    );
    let after = scripts_run(cluster);
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        if i == master {
            assert!(
                a > b,
                "the slot's master {i} ran the scripts: {before:?} {after:?}"
            );
        } else {
            assert_eq!(
                a, b,
                "node {i} holds no slot of the key: {before:?} {after:?}"
            );
        }
    }
    let (mut leased, mut admitted) = (0, 0);
    for r in &results {
        assert_eq!(r.count("fallback"), 0, "the cluster was up: {}", r.line);
        assert_eq!(r.count("spent"), r.times("admitted").len() as u64);
        assert!(r.count("spent") <= r.count("leased"), "{}", r.line);
        assert!(
            Duration::from_micros(r.count("longest_us")) < TIMEOUT + SLACK,
            "{}",
            r.line
        );
        leased += r.count("leased");
        admitted += r.count("spent");
    }
    let cycles = per_cycle(&results, start);
    let bound = LIMIT + LEASE * (PROCESSES - 1);
    for (cycle, n) in &cycles {
        assert!(
            *n <= bound,
            "cycle {cycle}: {n} admitted, bound {bound}: {cycles:?}"
        );
    }
    assert!(
        leased <= u64::from(LIMIT) * (CYCLES + 1),
        "{leased} leased in {CYCLES} cycles"
    );
    assert!(
        admitted >= u64::from(LIMIT) * CYCLES / 2,
        "only {admitted} admitted in {CYCLES} cycles: {cycles:?}"
    );
}

/// Breakers with their own connections (processes) share one half-open
/// budget on the cluster.
fn the_half_open_episode_is_the_fleet_s(cluster: &RedisCluster) {
    let breaker = || {
        let config = CircuitBreakerConfig::builder()
            .permitted_number_of_calls_in_half_open_state(3)
            .sliding_window_size(4)
            .minimum_number_of_calls(4)
            .cluster(Some(
                CircuitBreakerCluster::new(backend(&cluster.url()))
                    .timeout(Duration::from_millis(500)),
            ))
            .build()
            .unwrap();
        let cb = CircuitBreaker::new("payments", config);
        cb.transition_to_open_state().unwrap();
        cb.transition_to_half_open_state().unwrap();
        cb
    };
    let probes =
        |cb: &CircuitBreaker, n: u32| (0..n).filter(|_| cb.try_acquire_permission()).count();
    let (a, b, c) = (breaker(), breaker(), breaker());
    assert_eq!(probes(&a, 2), 2);
    assert_eq!(probes(&b, 3), 1, "the fleet had one probe left");
    assert_eq!(probes(&c, 3), 0, "the fleet's budget is spent");
    assert_eq!(c.state(), State::HalfOpen);
    // the outcomes are counted together: three successes close every breaker
    for cb in [&a, &a, &b] {
        cb.on_success(Duration::from_millis(1));
    }
    // the process whose report decides closes at once, the others at their
    // next call
    let until = Instant::now() + Duration::from_secs(5);
    for cb in [&a, &b, &c] {
        while cb.state() != State::Closed {
            assert!(
                Instant::now() < until,
                "every breaker follows the fleet's verdict"
            );
            let _ = probes(cb, 1);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let key = default_key("circuitbreaker", "payments");
    assert_eq!(
        a.config().cluster().unwrap().backend().last_error(&key),
        None
    );
}

/// The master holding the limiter's key is killed mid-run; its replica is
/// promoted. Each process goes to the failure mode (`local`) within the
/// cluster timeout, shows its backend down and up again within the
/// documented bound, never waits past the timeout, and the fleet is back
/// on the shared limit after the failover.
fn a_master_killed_mid_run(cluster: &mut RedisCluster) {
    let name = "failover";
    let key = default_key("ratelimiter", name);
    let old = cluster.master_of(&key).unwrap();
    let start = (unix_micros() / PERIOD_US + 10) * PERIOD_US;
    let kill_at = start + 10 * PERIOD_US;
    let end = kill_at + (FAILOVER_BOUND + Duration::from_secs(2)).as_micros() as u64;
    let mut promoted_at = 0;
    let results = fleet(
        &cluster.url(),
        name,
        ClusterFailureMode::Local,
        (start, end),
        || {
            sleep_until(kill_at);
            cluster.kill(old);
            let new = cluster.wait_for_master_other_than(&key, old).unwrap();
            promoted_at = unix_micros();
            assert_ne!(new, old);
        },
    );
    let promoted = Duration::from_micros(promoted_at - kill_at);
    eprintln!("a_master_killed_mid_run: the replica was promoted {promoted:?} after the kill");
    let shared = LIMIT + LEASE * (PROCESSES - 1);
    let mut back_at = 0;
    for r in &results {
        let longest = Duration::from_micros(r.count("longest_us"));
        assert!(
            longest < TIMEOUT + SLACK,
            "a call waited {longest:?}: {}",
            r.line
        );
        assert!(r.count("spent") <= r.count("leased"), "{}", r.line);
        assert!(
            r.count("fallback") > 0,
            "the failure mode was used: {}",
            r.line
        );
        assert_eq!(r.count("up"), 1, "the backend is up at the end: {}", r.line);
        // the health went down after the kill and up again, in that order
        let changes: Vec<(bool, u64)> = r
            .text("changes")
            .split(',')
            .filter(|c| !c.is_empty())
            .map(|c| {
                let (up, at) = c.split_once('@').unwrap();
                (up.parse().unwrap(), at.parse().unwrap())
            })
            .collect();
        let (Some(&(false, down)), Some(&(true, up))) = (changes.first(), changes.last()) else {
            panic!("the backend went down and up: {}", r.line);
        };
        assert!(down >= kill_at, "down before the kill: {}", r.line);
        let outage = Duration::from_micros(up - down);
        assert!(
            outage <= FAILOVER_BOUND,
            "{outage:?} in the failure mode, bound {FAILOVER_BOUND:?}: {}",
            r.line
        );
        eprintln!("a_master_killed_mid_run: a process was {outage:?} in the failure mode");
        back_at = back_at.max(up);
    }
    let cycles = per_cycle(&results, start);
    let count = |c: u64| cycles.get(&c).copied().unwrap_or(0);
    let (kill, back) = ((kill_at - start) / PERIOD_US, (back_at - start) / PERIOD_US);
    for c in 0..kill {
        assert!(count(c) <= shared, "cycle {c}, before the kill: {cycles:?}");
    }
    // in the failure mode each process admits its own limit per cycle (its
    // cycles are its own, so one Redis cycle may hold two of them); the
    // cycle of the kill and that of the return also hold what the fleet
    // admitted through Redis before the kill, or after the return
    let failing_over = 2 * PROCESSES * LIMIT;
    for c in kill..=back {
        let bound = if c == kill || c == back {
            shared + failing_over
        } else {
            failing_over
        };
        assert!(
            count(c) <= bound,
            "cycle {c}, failing over (bound {bound}): {cycles:?}"
        );
    }
    for c in back + 1..(end - start) / PERIOD_US {
        assert!(
            count(c) <= shared,
            "cycle {c}, after the failover: {cycles:?}"
        );
    }
    let after: u32 = (back + 1..(end - start) / PERIOD_US).map(count).sum();
    assert!(
        after >= LIMIT,
        "{after} admitted after the failover: {cycles:?}"
    );
}

/// A `redis+cluster://` URL that names a server without cluster support:
/// the failure mode, and a message that says so and what to write.
#[test]
fn a_server_that_is_not_a_cluster_is_named() {
    let Some(redis) = RedisServer::start_or_skip("a_server_that_is_not_a_cluster_is_named") else {
        return;
    };
    redis
        .command(&["CONFIG", "SET", "requirepass", "secret"])
        .unwrap();
    let url = format!("redis+cluster://default:secret@127.0.0.1:{}", redis.port());
    let l = limiter(&url, "single", ClusterFailureMode::Deny);
    for _ in 0..5 {
        let t = Instant::now();
        assert!(
            !l.try_acquire_permission(1),
            "deny while the backend is down"
        );
        assert!(t.elapsed() < TIMEOUT + SLACK, "waited {:?}", t.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
    let backend = Arc::clone(l.config().cluster().unwrap().backend());
    let key = default_key("ratelimiter", "single");
    let until = Instant::now() + Duration::from_secs(5);
    let error = loop {
        match backend.last_error(&key) {
            Some(e) if e.contains("without cluster support") => break e,
            _ if Instant::now() > until => panic!("{:?}", backend.last_error(&key)),
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let node = format!("127.0.0.1:{}", redis.port());
    assert!(
        error.contains(&format!("write `redis://{node}/0`")),
        "{error}"
    );
    assert!(!error.contains("secret"), "{error}");
    let m = l.cluster_metrics().unwrap();
    assert!(!m.backend_up() && m.fallback_calls() >= 5);
}
