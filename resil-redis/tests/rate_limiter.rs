//! Fleet-wide rate limits against a real `redis-server` (started per test;
//! skipped with a message where none is installed and `CI` is unset).
//!
//! Cycles are counted on Redis's clock, which on this host is the Unix
//! time, so the tests read the Unix time to line calls up with cycles.
#![allow(clippy::disallowed_methods)] // the Unix time and real waits: Redis's clock is real

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use resil_core::cluster::{ClusterBackend, ClusterFailureMode, RateLimiterCluster};
use resil_core::event::Event;
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig, RateLimiterEvent};
use resil_redis::{RedisBackend, RedisOptions};
use resil_testkit::RedisServer;

mod support;

use support::{ChildResult, sleep_until, unix_micros};

const CHILD: &str = "RESIL_CLUSTER_CHILD";

fn backend(url: &str) -> Arc<dyn ClusterBackend> {
    Arc::new(RedisBackend::with_options(url, RedisOptions::default()).expect("a valid url"))
}

fn limiter(
    backend: Arc<dyn ClusterBackend>,
    key: &str,
    limit: u32,
    period: Duration,
    lease: u32,
    mode: ClusterFailureMode,
    timeout: Duration,
) -> RateLimiter {
    let config = RateLimiterConfig::builder()
        .limit_for_period(limit)
        .limit_refresh_period(period)
        .timeout_duration(timeout)
        .cluster(Some(
            RateLimiterCluster::new(backend)
                .key(key)
                .lease(lease)
                .timeout(Duration::from_millis(50))
                .failure_mode(mode),
        ))
        .build()
        .expect("a valid config");
    RateLimiter::new(key.to_owned(), config)
}

const LIMIT: u32 = 20;
const PERIOD_MS: u64 = 100;
const LEASE: u32 = 4;
const PROCESSES: usize = 3;
const CYCLES: u64 = 8;

/// The child role of `processes_share_one_limit`: one process of the fleet.
/// Does nothing unless the parent set `RESIL_CLUSTER_CHILD`.
#[test]
fn child_process() {
    let Ok(url) = std::env::var(CHILD) else {
        return;
    };
    let start: u64 = std::env::var("RESIL_CLUSTER_START")
        .unwrap()
        .parse()
        .unwrap();
    let key = std::env::var("RESIL_CLUSTER_KEY").unwrap();
    let limiter = limiter(
        backend(&url),
        &key,
        LIMIT,
        Duration::from_millis(PERIOD_MS),
        LEASE,
        ClusterFailureMode::Deny,
        Duration::ZERO,
    );
    let end = start + CYCLES * PERIOD_MS * 1000;
    sleep_until(start);
    let mut admitted = Vec::new();
    while unix_micros() < end {
        if limiter.try_acquire_permission(1) {
            admitted.push(unix_micros());
        } else {
            std::thread::sleep(Duration::from_micros(300));
        }
    }
    let m = limiter.cluster_metrics().unwrap();
    let times: Vec<String> = admitted.iter().map(u64::to_string).collect();
    println!(
        "RESULT leased={} spent={} fallback={} admitted={}",
        m.leased_permits(),
        m.spent_permits(),
        m.fallback_calls(),
        times.join(",")
    );
}

#[test]
fn processes_share_one_limit() {
    let Some(redis) = RedisServer::start_or_skip("processes_share_one_limit") else {
        return;
    };
    let period = PERIOD_MS * 1000;
    // start on a cycle boundary, late enough for every child to be up
    let start = (unix_micros() / period + 8) * period;
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
                .env(CHILD, redis.url())
                .env("RESIL_CLUSTER_START", start.to_string())
                .env("RESIL_CLUSTER_KEY", "resil:ratelimiter:{shared}")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::inherit())
                .spawn()
                .unwrap()
        })
        .collect();
    let results: Vec<ChildResult> = children
        .into_iter()
        .map(|c| ChildResult::of(c.wait_with_output().unwrap().stdout))
        .collect();
    let mut per_cycle = std::collections::BTreeMap::<u64, u32>::new();
    let (mut total_leased, mut total_admitted) = (0u64, 0u64);
    for r in &results {
        let (leased, spent) = (r.count("leased"), r.count("spent"));
        let admitted = r.times("admitted");
        assert_eq!(
            r.count("fallback"),
            0,
            "Redis was up the whole time: {}",
            r.line
        );
        // every admitted call spent one leased permit, and no process spent
        // a permit it did not lease
        assert_eq!(spent, admitted.len() as u64);
        assert!(spent <= leased, "spent {spent} of {leased} leased");
        total_leased += leased;
        total_admitted += spent;
        for t in admitted {
            *per_cycle.entry(t / period).or_default() += 1;
        }
    }
    let bound = LIMIT + LEASE * (PROCESSES as u32 - 1);
    for (cycle, n) in &per_cycle {
        assert!(
            *n <= bound,
            "cycle {cycle}: {n} admitted across the fleet, bound {bound}: {per_cycle:?}"
        );
    }
    // Redis handed out at most the limit per cycle it saw (one more cycle
    // for a lease taken just before the start)
    assert!(
        total_leased <= u64::from(LIMIT) * (CYCLES + 1),
        "{total_leased} leased in {CYCLES} cycles"
    );
    // and the fleet used the shared limit, not a fraction of it
    assert!(
        total_admitted >= u64::from(LIMIT) * CYCLES / 2,
        "only {total_admitted} admitted in {CYCLES} cycles: {per_cycle:?}"
    );
}

#[test]
fn a_call_reserves_a_later_cycle_within_the_timeout() {
    let Some(redis) =
        RedisServer::start_or_skip("a_call_reserves_a_later_cycle_within_the_timeout")
    else {
        return;
    };
    let period = Duration::from_millis(200);
    let l = limiter(
        backend(&redis.url()),
        "resil:ratelimiter:reserve",
        5,
        period,
        5,
        ClusterFailureMode::Deny,
        Duration::from_millis(450),
    );
    // just after a boundary, so that the whole test runs in one cycle
    let p = period.as_micros() as u64;
    sleep_until((unix_micros() / p + 1) * p + 2_000);
    assert_eq!(l.reserve_permission(5), Ok(Duration::ZERO));
    let wait = l.reserve_permission(1).expect("reserved in the next cycle");
    assert!(
        wait > Duration::ZERO && wait <= period,
        "waits {wait:?} for the next cycle"
    );
    // 5 + 1 more: the next cycle has 4 left, so the one after that
    let wait = l.reserve_permission(5).expect("reserved two cycles ahead");
    assert!(wait > period && wait <= 2 * period, "waits {wait:?}");
    // beyond the timeout: refused, nothing reserved
    assert!(l.reserve_permission(10).is_err());
    let m = l.cluster_metrics().unwrap();
    assert_eq!((m.leased_permits(), m.spent_permits()), (5, 5));
    assert_eq!(m.fallback_calls(), 0);
}

/// Events of `limiter`, recorded.
fn record(limiter: &RateLimiter) -> Arc<Mutex<Vec<RateLimiterEvent>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    limiter
        .event_publisher()
        .on_event(move |e: &Event<RateLimiterEvent>| {
            if let RateLimiterEvent::ClusterBackendChanged { .. } = e.kind() {
                s.lock().unwrap().push(e.kind().clone());
            }
        });
    seen
}

/// Calls for `span`, returning (admitted, refused, longest call).
fn hammer(l: &RateLimiter, span: Duration) -> (u32, u32, Duration) {
    let until = Instant::now() + span;
    let (mut ok, mut no, mut longest) = (0, 0, Duration::ZERO);
    while Instant::now() < until {
        let t = Instant::now();
        if l.try_acquire_permission(1) {
            ok += 1;
        } else {
            no += 1;
        }
        longest = longest.max(t.elapsed());
        std::thread::sleep(Duration::from_micros(500));
    }
    (ok, no, longest)
}

fn wait_for(what: &str, f: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Redis killed and restarted mid-run: calls follow `mode` while it is
/// down, never wait on it longer than the cluster timeout (plus scheduling
/// slack), and go back to Redis when it is back.
fn outage(mode: ClusterFailureMode) {
    let name = format!("outage_{mode}");
    let Some(mut redis) = RedisServer::start_or_skip(&name) else {
        return;
    };
    let period = Duration::from_millis(100);
    let l = limiter(
        backend(&redis.url()),
        &format!("resil:ratelimiter:{name}"),
        10,
        period,
        2,
        mode,
        Duration::ZERO,
    );
    let events = record(&l);
    // up: the shared limit, about 10 per cycle
    let (ok, _, _) = hammer(&l, Duration::from_millis(300));
    assert!((10..=40).contains(&ok), "{ok} admitted in 3 cycles");
    let before = l.cluster_metrics().unwrap();
    assert!(before.backend_up() && before.fallback_calls() == 0);

    // at the start of a cycle: the last answer said the one before was
    // spent, and until its end calls are refused without asking
    let p = period.as_micros() as u64;
    sleep_until((unix_micros() / p + 1) * p + 1_000);
    redis.kill();
    let (ok, no, longest) = hammer(&l, Duration::from_millis(500));
    assert!(
        longest < Duration::from_millis(50 + 200),
        "a call waited {longest:?} on a dead Redis"
    );
    let down = l.cluster_metrics().unwrap();
    assert!(!down.backend_up());
    assert!(down.fallback_calls() > 0);
    // leased permits are spent at most once, across the outage too
    assert!(down.spent_permits() <= down.leased_permits());
    match mode {
        // the process's own limiter: 10 per cycle (the first call or two
        // may still find leased permits)
        ClusterFailureMode::Local => {
            assert!(
                (5..=10 * 6 + 2).contains(&ok),
                "{ok} admitted, {no} refused"
            )
        }
        ClusterFailureMode::Allow => assert!(no == 0 && ok > 60, "{ok} admitted, {no} refused"),
        ClusterFailureMode::Deny => assert!(ok <= 2, "{ok} admitted while down"),
    }
    assert_eq!(
        *events.lock().unwrap(),
        [RateLimiterEvent::ClusterBackendChanged { up: false }]
    );

    redis.restart();
    wait_for("the backend is up again", || {
        l.cluster_metrics().unwrap().backend_up()
    });
    let back = l.cluster_metrics().unwrap();
    let (ok, _, _) = hammer(&l, Duration::from_millis(300));
    let after = l.cluster_metrics().unwrap();
    assert!(
        after.round_trips() > back.round_trips(),
        "Redis is asked again"
    );
    assert!(
        after.fallback_calls() - back.fallback_calls() <= 1,
        "the failure mode is left once Redis is back"
    );
    assert!(
        (10..=40).contains(&ok),
        "{ok} admitted in 3 cycles after the restart"
    );
    assert!(after.spent_permits() <= after.leased_permits());
    assert_eq!(
        *events.lock().unwrap(),
        [
            RateLimiterEvent::ClusterBackendChanged { up: false },
            RateLimiterEvent::ClusterBackendChanged { up: true }
        ]
    );
}

#[test]
fn outage_local_uses_the_process_limiter() {
    outage(ClusterFailureMode::Local);
}

#[test]
fn outage_allow_admits() {
    outage(ClusterFailureMode::Allow);
}

#[test]
fn outage_deny_refuses() {
    outage(ClusterFailureMode::Deny);
}

#[test]
fn a_slow_redis_costs_at_most_the_cluster_timeout() {
    let Some(redis) = RedisServer::start_or_skip("a_slow_redis_costs_at_most_the_cluster_timeout")
    else {
        return;
    };
    let l = limiter(
        backend(&redis.url()),
        "resil:ratelimiter:slow",
        10,
        Duration::from_millis(100),
        1,
        ClusterFailureMode::Local,
        Duration::ZERO,
    );
    assert!(l.try_acquire_permission(1));
    redis.pause();
    let (_, _, longest) = hammer(&l, Duration::from_millis(300));
    assert!(
        longest < Duration::from_millis(50 + 200),
        "a call waited {longest:?} on a stopped Redis"
    );
    let m = l.cluster_metrics().unwrap();
    assert!(!m.backend_up() && m.fallback_calls() > 0);
    redis.resume();
    wait_for("the backend is up again", || {
        l.cluster_metrics().unwrap().backend_up()
    });
}

#[test]
fn the_common_call_makes_no_round_trip() {
    let Some(redis) = RedisServer::start_or_skip("the_common_call_makes_no_round_trip") else {
        return;
    };
    let l = limiter(
        backend(&redis.url()),
        "resil:ratelimiter:lease",
        1000,
        Duration::from_secs(10),
        100,
        ClusterFailureMode::Deny,
        Duration::ZERO,
    );
    for _ in 0..500 {
        assert!(l.try_acquire_permission(1));
    }
    let m = l.cluster_metrics().unwrap();
    // one round trip per lease of 100 (plus one taken ahead at half a lease)
    assert!(
        m.round_trips() <= 6,
        "{} round trips for 500 calls",
        m.round_trips()
    );
    assert_eq!(m.spent_permits(), 500);
}

const OUTAGE_CHILD: &str = "RESIL_OUTAGE_CHILD";
/// The phases of `processes_through_an_outage`, in cycles from the start:
/// up, Redis killed, Redis back (the first cycles after the restart are
/// left out: the backend comes back within a few health checks).
const KILL_AT: u64 = 4;
const RESTART_AT: u64 = 8;
const RECOVERED_AT: u64 = 11;
const END_AT: u64 = 14;

/// The child role of `processes_through_an_outage_*`.
#[test]
fn outage_child_process() {
    let Ok(url) = std::env::var(OUTAGE_CHILD) else {
        return;
    };
    let start: u64 = std::env::var("RESIL_CLUSTER_START")
        .unwrap()
        .parse()
        .unwrap();
    let key = std::env::var("RESIL_CLUSTER_KEY").unwrap();
    let mode: ClusterFailureMode = std::env::var("RESIL_CLUSTER_MODE")
        .unwrap()
        .parse()
        .unwrap();
    let limiter = limiter(
        backend(&url),
        &key,
        LIMIT,
        Duration::from_millis(PERIOD_MS),
        LEASE,
        mode,
        Duration::ZERO,
    );
    sleep_until(start);
    let mut admitted = Vec::new();
    let end = start + END_AT * PERIOD_MS * 1000;
    while unix_micros() < end {
        if limiter.try_acquire_permission(1) {
            admitted.push(unix_micros());
        }
        std::thread::sleep(Duration::from_micros(300));
    }
    let m = limiter.cluster_metrics().unwrap();
    let times: Vec<String> = admitted.iter().map(u64::to_string).collect();
    println!(
        "RESULT leased={} spent={} fallback={} admitted={}",
        m.leased_permits(),
        m.spent_permits(),
        m.fallback_calls(),
        times.join(",")
    );
}

/// Two processes share a limit, Redis is killed mid-run and restarted:
/// while it is up the fleet keeps the shared bound, while it is down each
/// process follows `mode`, and no process spends a permit it did not lease.
fn processes_through_an_outage(mode: ClusterFailureMode) {
    let name = format!("processes_through_an_outage_{mode}");
    let Some(mut redis) = RedisServer::start_or_skip(&name) else {
        return;
    };
    const N: u32 = 2;
    let period = PERIOD_MS * 1000;
    let start = (unix_micros() / period + 8) * period;
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..N)
        .map(|_| {
            Command::new(&exe)
                .args(["--exact", "outage_child_process", "--nocapture"])
                .env(OUTAGE_CHILD, redis.url())
                .env("RESIL_CLUSTER_START", start.to_string())
                .env("RESIL_CLUSTER_KEY", format!("resil:ratelimiter:{{{name}}}"))
                .env("RESIL_CLUSTER_MODE", mode.as_str())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    sleep_until(start + KILL_AT * period);
    redis.kill();
    sleep_until(start + RESTART_AT * period);
    redis.restart();
    let mut per_cycle = std::collections::BTreeMap::<u64, u32>::new();
    for child in children {
        let r = ChildResult::of(child.wait_with_output().unwrap().stdout);
        let (leased, spent) = (r.count("leased"), r.count("spent"));
        assert!(spent <= leased, "spent {spent} of {leased} leased");
        let reached = r.count("fallback") > 0;
        assert!(reached, "the outage reached the failure mode: {}", r.line);
        for t in r.times("admitted") {
            *per_cycle.entry((t - start) / period).or_default() += 1;
        }
    }
    let count = |c: u64| per_cycle.get(&c).copied().unwrap_or(0);
    let shared = LIMIT + LEASE * (N - 1);
    for c in (0..KILL_AT).chain(RECOVERED_AT..END_AT) {
        assert!(count(c) <= shared, "cycle {c} with Redis up: {per_cycle:?}");
    }
    // the first cycle of the outage may still spend leased permits
    for c in KILL_AT + 1..RESTART_AT {
        let n = count(c);
        match mode {
            // each process's own limiter: cycles counted from its creation,
            // so one Redis cycle may see two of its cycles
            ClusterFailureMode::Local => {
                assert!(n > 0 && n <= 2 * N * LIMIT, "cycle {c}: {n}: {per_cycle:?}")
            }
            ClusterFailureMode::Allow => {
                assert!(
                    n > shared,
                    "cycle {c}: only {n} with `allow`: {per_cycle:?}"
                )
            }
            ClusterFailureMode::Deny => assert_eq!(n, 0, "cycle {c}: {per_cycle:?}"),
        }
    }
    // and the fleet is back on the shared limit, using it
    let after: u32 = (RECOVERED_AT..END_AT).map(count).sum();
    assert!(
        after >= LIMIT,
        "{after} admitted after the restart: {per_cycle:?}"
    );
}

#[test]
fn processes_through_an_outage_local() {
    processes_through_an_outage(ClusterFailureMode::Local);
}

#[test]
fn processes_through_an_outage_allow() {
    processes_through_an_outage(ClusterFailureMode::Allow);
}

#[test]
fn processes_through_an_outage_deny() {
    processes_through_an_outage(ClusterFailureMode::Deny);
}

/// The commands clients sent to Redis since it started: every kind but
/// `INFO` (which the test sends to count them) and those the scripts run
/// inside (`INFO commandstats` counts them too).
fn commands(redis: &RedisServer) -> u64 {
    const IN_SCRIPTS: [&str; 9] = [
        "time", "hmget", "hget", "hset", "hdel", "hgetall", "hincrby", "pexpire", "del",
    ];
    redis
        .command_calls()
        .unwrap()
        .iter()
        .filter(|(name, _)| name.as_str() != "info" && !IN_SCRIPTS.contains(&name.as_str()))
        .map(|(_, calls)| calls)
        .sum()
}

#[test]
fn refusals_in_a_spent_cycle_cost_no_round_trip() {
    let Some(redis) = RedisServer::start_or_skip("refusals_in_a_spent_cycle_cost_no_round_trip")
    else {
        return;
    };
    let period = Duration::from_secs(2);
    let l = limiter(
        backend(&redis.url()),
        "resil:ratelimiter:{spent}",
        5,
        period,
        5,
        ClusterFailureMode::Deny,
        Duration::ZERO,
    );
    // just after a boundary, so that the whole test runs in one cycle
    let p = period.as_micros() as u64;
    sleep_until((unix_micros() / p + 1) * p + 2_000);
    let before = commands(&redis);
    assert!(l.try_acquire_permission(5));
    let refused = (0..1000).filter(|_| !l.try_acquire_permission(1)).count();
    assert_eq!(refused, 1000);
    let m = l.cluster_metrics().unwrap();
    // one lease of 5, which said the cycle is spent: every refusal after it
    // is decided here
    assert_eq!(m.round_trips(), 1, "{m:?}");
    assert_eq!(m.local_refusals(), 1000, "{m:?}");
    // the script's first run loads it (EVALSHA, SCRIPT LOAD, EVALSHA)
    let ran = commands(&redis) - before;
    assert!(ran <= 3, "{ran} commands for 1001 calls");
    // and the refusal says when a permit comes: at the cycle's end
    let err = l.reserve_permission(1).unwrap_err();
    assert!(err.retry_after() <= Some(period), "{err:?}");
}

/// The child role of `three_processes_spend_a_fifth_of_a_command_per_permit`.
#[test]
fn lease_child_process() {
    let Ok(url) = std::env::var("RESIL_LEASE_CHILD") else {
        return;
    };
    let start: u64 = std::env::var("RESIL_CLUSTER_START")
        .unwrap()
        .parse()
        .unwrap();
    let limiter = limiter(
        backend(&url),
        "resil:ratelimiter:{lease}",
        LEASE_LIMIT,
        Duration::from_millis(PERIOD_MS),
        5,
        ClusterFailureMode::Deny,
        Duration::ZERO,
    );
    sleep_until(start);
    let end = start + LEASE_CYCLES * PERIOD_MS * 1000;
    while unix_micros() < end {
        if !limiter.try_acquire_permission(1) {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    let m = limiter.cluster_metrics().unwrap();
    println!(
        "RESULT spent={} round_trips={} local_refusals={} fallback={}",
        m.spent_permits(),
        m.round_trips(),
        m.local_refusals(),
        m.fallback_calls()
    );
}

const LEASE_LIMIT: u32 = 200;
const LEASE_CYCLES: u64 = 10;

/// Three processes on one limit of 200 per 100 ms with `cluster-lease = 5`,
/// each calling as fast as it can for 10 cycles: a lease serves 5 permits,
/// each process asks once more per cycle to learn that it is spent, and
/// then refuses by itself until the next, so the fleet's Redis runs about
/// a fifth of a command per permit.
#[test]
fn three_processes_spend_a_fifth_of_a_command_per_permit() {
    let Some(redis) =
        RedisServer::start_or_skip("three_processes_spend_a_fifth_of_a_command_per_permit")
    else {
        return;
    };
    let period = PERIOD_MS * 1000;
    let start = (unix_micros() / period + 8) * period;
    let exe = std::env::current_exe().unwrap();
    let before = commands(&redis);
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(&exe)
                .args(["--exact", "lease_child_process", "--nocapture"])
                .env("RESIL_LEASE_CHILD", redis.url())
                .env("RESIL_CLUSTER_START", start.to_string())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let (mut spent, mut refused) = (0u64, 0u64);
    for child in children {
        let r = ChildResult::of(child.wait_with_output().unwrap().stdout);
        assert_eq!(r.count("fallback"), 0, "{}", r.line);
        spent += r.count("spent");
        refused += r.count("local_refusals");
    }
    let ran = commands(&redis) - before;
    let per_permit = ran as f64 / spent as f64;
    println!(
        "{ran} commands for {spent} permits ({per_permit:.3} per permit), {refused} refusals decided locally"
    );
    // the fleet used its limit
    assert!(
        spent >= u64::from(LEASE_LIMIT) * LEASE_CYCLES / 2,
        "only {spent} permits in {LEASE_CYCLES} cycles"
    );
    assert!(refused > 0, "the processes called faster than the limit");
    assert!(
        per_permit <= 0.25,
        "{ran} commands for {spent} permits: {per_permit:.3} per permit"
    );
}

/// A stalled Redis (`SIGSTOP`) and an async caller on a current-thread
/// runtime: the caller awaits the answer, so the runtime's other task runs
/// meanwhile; here that task lets Redis go on, and the answer comes in
/// time. A caller that blocked the thread would hold that task back until
/// its cluster timeout ended, and fall back to `deny`.
#[test]
fn an_async_caller_never_blocks_its_runtime_on_a_stalled_redis() {
    let Some(redis) =
        RedisServer::start_or_skip("an_async_caller_never_blocks_its_runtime_on_a_stalled_redis")
    else {
        return;
    };
    let config = RateLimiterConfig::builder()
        .limit_for_period(1000)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .cluster(Some(
            RateLimiterCluster::new(backend(&redis.url()))
                .key("resil:ratelimiter:{stalled}")
                .lease(1)
                .timeout(Duration::from_secs(2))
                .failure_mode(ClusterFailureMode::Deny),
        ))
        .build()
        .unwrap();
    let limiter = RateLimiter::new("stalled", config);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let redis = Arc::new(redis);
    runtime.block_on(async {
        assert!(limiter.acquire_permission(1).await.is_ok());
        redis.pause();
        let waker = Arc::clone(&redis);
        let other = tokio::spawn(async move {
            // runs only while the caller below awaits
            waker.resume();
        });
        let started = Instant::now();
        let admitted = limiter.acquire_permission(1).await;
        let waited = started.elapsed();
        other.await.unwrap();
        let m = limiter.cluster_metrics().unwrap();
        assert!(admitted.is_ok(), "refused after {waited:?}: {m:?}");
        assert_eq!(m.fallback_calls(), 0, "{m:?}");
        assert!(m.backend_up());

        // The same through a chain (the attributes', `Decorators`', tower's):
        // the rate limiter's layer awaits the backend's answer too.
        redis.pause();
        let waker = Arc::clone(&redis);
        let other = tokio::spawn(async move {
            waker.resume();
        });
        let called = limiter
            .call_async(|| async { Ok::<_, std::io::Error>(7) })
            .await;
        other.await.unwrap();
        let m = limiter.cluster_metrics().unwrap();
        assert_eq!(called.unwrap(), 7, "{m:?}");
        assert_eq!(m.fallback_calls(), 0, "{m:?}");
    });
}

#[test]
fn a_key_of_another_type_is_named_and_the_limiter_stays_down() {
    let Some(redis) =
        RedisServer::start_or_skip("a_key_of_another_type_is_named_and_the_limiter_stays_down")
    else {
        return;
    };
    let key = "resil:ratelimiter:{wrongtype}";
    redis.command(&["SET", key, "42"]).unwrap();
    let backend = backend(&redis.url());
    let l = limiter(
        Arc::clone(&backend),
        key,
        10,
        Duration::from_millis(100),
        2,
        ClusterFailureMode::Deny,
        Duration::ZERO,
    );
    let events = record(&l);
    assert!(!l.try_acquire_permission(1));
    assert!(!l.cluster_metrics().unwrap().backend_up());
    let error = backend.last_error(key).expect("why it is down");
    assert!(
        error.contains(key) && error.contains("string") && error.contains("cluster-key"),
        "{error}"
    );
    // the health checks run the limiter's script, which keeps failing: no
    // flapping up and down while calls go on
    let (ok, _, _) = hammer(&l, Duration::from_millis(500));
    assert_eq!(ok, 0);
    assert_eq!(
        *events.lock().unwrap(),
        [RateLimiterEvent::ClusterBackendChanged { up: false }]
    );
    redis.command(&["DEL", key]).unwrap();
    wait_for("the key is up again", || {
        l.cluster_metrics().unwrap().backend_up()
    });
    assert!(l.try_acquire_permission(1));
    assert_eq!(backend.last_error(key), None);
}
