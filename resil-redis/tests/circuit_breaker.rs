//! Fleet-wide HALF_OPEN probes against a real `redis-server` (started per
//! test; skipped with a message where none is installed and `CI` is unset).
//! Two breakers with their own backend clients stand for two processes; one
//! test runs real processes (the test binary re-invoking itself).
#![allow(clippy::disallowed_methods)] // real waits: Redis's lease expiry is real time

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use resil_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEvent, State,
};
use resil_core::cluster::{CircuitBreakerCluster, ClusterBackend};
use resil_redis::{RedisBackend, RedisOptions};
use resil_testkit::RedisServer;

const CHILD: &str = "RESIL_BREAKER_CHILD";

/// A breaker of its own "process": a backend client of its own.
fn breaker(url: &str, key: &str, permitted: u32, expiry: Duration) -> CircuitBreaker {
    let backend: Arc<dyn ClusterBackend> =
        Arc::new(RedisBackend::with_options(url, RedisOptions::default()).unwrap());
    let config = CircuitBreakerConfig::builder()
        .permitted_number_of_calls_in_half_open_state(permitted)
        .minimum_number_of_calls(permitted)
        .sliding_window_size(permitted.max(10))
        .cluster(Some(
            CircuitBreakerCluster::new(backend)
                .key(key)
                .timeout(Duration::from_millis(200))
                .probe_expiry(expiry),
        ))
        .build()
        .unwrap();
    let cb = CircuitBreaker::new("payments", config);
    cb.transition_to_open_state().unwrap();
    cb.transition_to_half_open_state().unwrap();
    cb
}

fn probes(cb: &CircuitBreaker, n: u32) -> u32 {
    (0..n).filter(|_| cb.try_acquire_permission()).count() as u32
}

fn eventually(what: &str, f: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_fleet_probes_at_most_the_permitted_number() {
    let Some(redis) = RedisServer::start_or_skip("the_fleet_probes_at_most_the_permitted_number")
    else {
        return;
    };
    let key = "resil:circuitbreaker:{budget}";
    let a = breaker(&redis.url(), key, 3, Duration::from_secs(30));
    let b = breaker(&redis.url(), key, 3, Duration::from_secs(30));
    assert_eq!(probes(&a, 2), 2);
    // b has 3 permits of its own, the fleet 1 left
    assert_eq!(probes(&b, 3), 1);
    assert_eq!(probes(&a, 1), 0);
    assert_eq!(b.state(), State::HalfOpen);
    // a refused probe gave its local permit back: b still holds 2 of its own
    assert!(b.metrics().number_of_not_permitted_calls() >= 2);

    // a probe that is not made goes back to the fleet
    a.release_permission();
    eventually("the released probe is free", || probes(&b, 1) == 1);
    assert_eq!(probes(&a, 1), 0);
}

#[test]
fn a_dead_process_does_not_hold_the_fleet_half_open() {
    let Some(redis) =
        RedisServer::start_or_skip("a_dead_process_does_not_hold_the_fleet_half_open")
    else {
        return;
    };
    let key = "resil:circuitbreaker:{dead}";
    let dead = breaker(&redis.url(), key, 2, Duration::from_millis(300));
    assert_eq!(probes(&dead, 2), 2);
    std::mem::forget(dead); // it never reports back
    let b = breaker(&redis.url(), key, 2, Duration::from_millis(300));
    assert_eq!(probes(&b, 1), 0);
    // the dead process's leases expire: the budget is the fleet's again
    eventually("the dead probes expired", || probes(&b, 1) == 1);
}

#[test]
fn the_deciding_process_starts_a_new_episode_for_the_fleet() {
    let Some(redis) =
        RedisServer::start_or_skip("the_deciding_process_starts_a_new_episode_for_the_fleet")
    else {
        return;
    };
    let key = "resil:circuitbreaker:{episode}";
    let a = breaker(&redis.url(), key, 2, Duration::from_secs(30));
    let b = breaker(&redis.url(), key, 2, Duration::from_secs(30));
    assert_eq!(probes(&a, 2), 2);
    assert_eq!(probes(&b, 1), 0);
    // a's probes succeed: a closes and ends the episode
    a.on_success(Duration::from_millis(1));
    a.on_success(Duration::from_millis(1));
    assert_eq!(a.state(), State::Closed);
    // b is still HALF_OPEN (its own state) and may probe the new episode
    eventually("b probes again", || probes(&b, 1) == 1);
    assert_eq!(b.state(), State::HalfOpen);
}

#[test]
fn a_process_that_leaves_half_open_ends_the_episode() {
    let Some(redis) =
        RedisServer::start_or_skip("a_process_that_leaves_half_open_ends_the_episode")
    else {
        return;
    };
    let key = "resil:circuitbreaker:{leave}";
    let a = breaker(&redis.url(), key, 2, Duration::from_secs(30));
    let b = breaker(&redis.url(), key, 2, Duration::from_secs(30));
    assert_eq!(probes(&a, 1), 1);
    assert_eq!(probes(&b, 1), 1);
    // one probe each: neither has the 2 results it needs to decide, and the
    // fleet has no probe left
    a.on_success(Duration::from_millis(1));
    b.on_success(Duration::from_millis(1));
    assert_eq!(probes(&b, 1), 0);
    // a goes back to OPEN (as max-wait-duration-in-half-open-state would
    // send it): the episode ends, and b probes the next one
    a.transition_to_open_state().unwrap();
    eventually("b probes again", || probes(&b, 1) == 1);
}

#[test]
fn with_redis_down_each_process_probes_on_its_own_budget() {
    let Some(mut redis) =
        RedisServer::start_or_skip("with_redis_down_each_process_probes_on_its_own_budget")
    else {
        return;
    };
    let key = "resil:circuitbreaker:{down}";
    let a = breaker(&redis.url(), key, 2, Duration::from_secs(30));
    assert_eq!(a.cluster_backend_up(), Some(true));
    let changes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&changes);
    a.event_publisher().on_event(move |e| {
        if let CircuitBreakerEvent::ClusterBackendChanged { up } = e.kind() {
            seen.lock().unwrap().push(*up);
        }
    });
    redis.kill();
    let started = Instant::now();
    assert_eq!(probes(&a, 3), 2);
    assert!(started.elapsed() < Duration::from_millis(3 * 200 + 300));
    assert_eq!(a.cluster_backend_up(), Some(false));
    redis.restart();
    eventually("the backend is up", || a.cluster_backend_up() == Some(true));
    eventually("both changes are published", || {
        changes.lock().unwrap().len() == 2
    });
    assert_eq!(*changes.lock().unwrap(), [false, true]);
}

/// The child role of `processes_share_one_probe_budget`.
#[test]
fn breaker_child_process() {
    let Ok(url) = std::env::var(CHILD) else {
        return;
    };
    let cb = breaker(
        &url,
        "resil:circuitbreaker:{fleet}",
        4,
        Duration::from_secs(30),
    );
    let start: u64 = std::env::var("RESIL_BREAKER_START")
        .unwrap()
        .parse()
        .unwrap();
    while (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64)
        < start
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    println!("PROBES {}", probes(&cb, 4));
}

#[test]
fn processes_share_one_probe_budget() {
    let Some(redis) = RedisServer::start_or_skip("processes_share_one_probe_budget") else {
        return;
    };
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        + 700;
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(&exe)
                .args(["--exact", "breaker_child_process", "--nocapture"])
                .env(CHILD, redis.url())
                .env("RESIL_BREAKER_START", start.to_string())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut counts = Vec::new();
    for c in children {
        let out = String::from_utf8(c.wait_with_output().unwrap().stdout).unwrap();
        let n: u32 = out
            .split_once("PROBES ")
            .and_then(|(_, r)| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("a child printed no count: {out}"))
            .parse()
            .unwrap();
        counts.push(n);
    }
    // each process may probe 4 on its own; the fleet probes 4 in all
    assert_eq!(counts.iter().sum::<u32>(), 4, "{counts:?}");
}
