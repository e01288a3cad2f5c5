//! Fleet-wide HALF_OPEN against a real `redis-server` (started per test;
//! skipped with a message where none is installed and `CI` is unset).
//! Breakers with their own backend clients stand for processes in one
//! binary; the fleet tests run real processes (the test binary re-invoking
//! itself, driven line by line over its stdin and stdout), one of them
//! killed while it holds a probe.
#![allow(clippy::disallowed_methods)] // real waits: Redis's lease expiry is real time

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use resil_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEvent, State,
};
use resil_core::cluster::{CircuitBreakerCluster, ClusterBackend};
use resil_redis::{RedisBackend, RedisOptions};
use resil_testkit::RedisServer;

/// A breaker of its own "process": a backend client of its own, a count
/// window of 4, `permitted` probes, which are also the calls that decide.
fn breaker(url: &str, key: &str, permitted: u32, expiry: Duration) -> CircuitBreaker {
    let backend: Arc<dyn ClusterBackend> =
        Arc::new(RedisBackend::with_options(url, RedisOptions::default()).unwrap());
    let config = CircuitBreakerConfig::builder()
        .permitted_number_of_calls_in_half_open_state(permitted)
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .failure_rate_threshold(50.0)
        .cluster(Some(
            CircuitBreakerCluster::new(backend)
                .key(key)
                .timeout(Duration::from_millis(500))
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
    let until = Instant::now() + Duration::from_secs(10);
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

/// Three breakers (three processes), two probes for the fleet: a and b
/// take one each, c none, and a's outcome is a failure when `a_fails`.
/// Neither a nor b has the 2 outcomes a half-open window needs: the fleet
/// counts them together, the process whose report completes the count
/// follows the verdict at once, and the others at their next call.
fn two_probes_decide_for_three(name: &str, a_fails: bool, verdict: State) {
    let Some(redis) = RedisServer::start_or_skip(name) else {
        return;
    };
    let key = format!("resil:circuitbreaker:{{{name}}}");
    let [a, b, c] = [0; 3].map(|_| breaker(&redis.url(), &key, 2, Duration::from_secs(30)));
    assert_eq!(probes(&a, 1), 1);
    assert_eq!(probes(&b, 1), 1);
    assert_eq!(probes(&c, 1), 0);
    if a_fails {
        a.on_error(Duration::from_millis(1));
    } else {
        a.on_success(Duration::from_millis(1));
    }
    assert_eq!(a.state(), State::HalfOpen);
    b.on_success(Duration::from_millis(1));
    eventually("a or b follows the fleet's verdict", || {
        a.state() == verdict || b.state() == verdict
    });
    for cb in [&a, &b, &c] {
        // the call goes through a CLOSED breaker, not an OPEN one
        assert_eq!(cb.try_acquire_permission(), verdict == State::Closed);
        assert_eq!(cb.state(), verdict);
    }
}

#[test]
fn probes_spread_over_processes_decide_for_every_one() {
    two_probes_decide_for_three(
        "probes_spread_over_processes_decide_for_every_one",
        false,
        State::Closed,
    );
}

/// One failure in two: 50%, the threshold.
#[test]
fn failed_probes_open_every_process() {
    two_probes_decide_for_three("failed_probes_open_every_process", true, State::Open);
}

#[test]
fn a_process_that_leaves_half_open_gives_its_probes_back() {
    let Some(redis) =
        RedisServer::start_or_skip("a_process_that_leaves_half_open_gives_its_probes_back")
    else {
        return;
    };
    let key = "resil:circuitbreaker:{leave}";
    let a = breaker(&redis.url(), key, 2, Duration::from_secs(30));
    let b = breaker(&redis.url(), key, 2, Duration::from_secs(30));
    assert_eq!(probes(&a, 1), 1);
    assert_eq!(probes(&b, 1), 1);
    assert_eq!(probes(&b, 1), 0);
    // a goes back to OPEN on its own (by hand, as its
    // max-wait-duration-in-half-open-state would): its probe is free again,
    // and the episode goes on with b
    a.transition_to_open_state().unwrap();
    eventually("b takes a's probe", || probes(&b, 1) == 1);
    b.on_success(Duration::from_millis(1));
    b.on_success(Duration::from_millis(1));
    eventually("b closes", || b.state() == State::Closed);
    assert_eq!(a.state(), State::Open);
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
    assert_eq!(probes(&a, 3), 2);
    assert_eq!(a.cluster_backend_up(), Some(false));
    // its own window decides on its own probes
    a.on_success(Duration::from_millis(1));
    a.on_success(Duration::from_millis(1));
    assert_eq!(a.state(), State::Closed);
    redis.restart();
    eventually("the backend is up", || a.cluster_backend_up() == Some(true));
    eventually("both changes are published", || {
        changes.lock().unwrap().len() == 2
    });
    assert_eq!(*changes.lock().unwrap(), [false, true]);
}

#[test]
fn a_key_of_another_type_is_named_and_stays_down() {
    let Some(redis) = RedisServer::start_or_skip("a_key_of_another_type_is_named_and_stays_down")
    else {
        return;
    };
    let key = "resil:circuitbreaker:{wrongtype}";
    redis.command(&["SET", key, "not a hash"]).unwrap();
    let backend: Arc<dyn ClusterBackend> =
        Arc::new(RedisBackend::with_options(&redis.url(), RedisOptions::default()).unwrap());
    let config = CircuitBreakerConfig::builder()
        .permitted_number_of_calls_in_half_open_state(2)
        .cluster(Some(
            CircuitBreakerCluster::new(Arc::clone(&backend)).key(key),
        ))
        .build()
        .unwrap();
    let cb = CircuitBreaker::new("wrongtype", config);
    let changes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&changes);
    cb.event_publisher().on_event(move |e| {
        if let CircuitBreakerEvent::ClusterBackendChanged { up } = e.kind() {
            seen.lock().unwrap().push(*up);
        }
    });
    cb.transition_to_open_state().unwrap();
    cb.transition_to_half_open_state().unwrap();
    // the first probe fails on the key: the process's own budget decides
    assert!(cb.try_acquire_permission());
    assert_eq!(cb.cluster_backend_up(), Some(false));
    let error = backend.last_error(key).expect("why it is down");
    assert!(
        error.contains(key) && error.contains("string") && error.contains("cluster-key"),
        "{error}"
    );
    // the health checks run the script, not a PING: down it stays
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(cb.cluster_backend_up(), Some(false));
    assert_eq!(*changes.lock().unwrap(), [false]);
    // until the key is fixed
    redis.command(&["DEL", key]).unwrap();
    eventually("the key is up again", || {
        cb.cluster_backend_up() == Some(true)
    });
    assert_eq!(*changes.lock().unwrap(), [false, true]);
    assert_eq!(backend.last_error(key), None);
}

/// The child role of the fleet tests: one process with one breaker, its
/// key and probe expiry from the environment, driven by lines on stdin
/// (`take`, `success`, `failure`, `until <STATE>`, `state`) and answering
/// each with one `FLEET ...` line. Does nothing unless the parent set
/// `RESIL_FLEET_CHILD`.
#[test]
fn fleet_child_process() {
    let Ok(url) = std::env::var("RESIL_FLEET_CHILD") else {
        return;
    };
    let key = std::env::var("RESIL_FLEET_KEY").unwrap();
    let expiry: u64 = std::env::var("RESIL_FLEET_EXPIRY_MS")
        .unwrap()
        .parse()
        .unwrap();
    let cb = breaker(&url, &key, 2, Duration::from_millis(expiry));
    let mut out = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let answer = match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["take"] => format!("TOOK {}", cb.try_acquire_permission()),
            ["success"] => {
                cb.on_success(Duration::from_millis(1));
                "DONE".to_owned()
            }
            ["failure"] => {
                cb.on_error(Duration::from_millis(1));
                "DONE".to_owned()
            }
            ["state"] => format!("STATE {:?}", cb.state()),
            // calls a healthy downstream until the breaker is in `state`
            // (or 10 s passed), counting the calls it let through, and
            // among them the half-open probes
            ["until", state] => {
                let until = Instant::now() + Duration::from_secs(10);
                let (mut admitted, mut probes, mut refused) = (0, 0, 0);
                while format!("{:?}", cb.state()) != state && Instant::now() < until {
                    if cb.try_acquire_permission() {
                        admitted += 1;
                        probes += u32::from(cb.state() == State::HalfOpen);
                        cb.on_success(Duration::from_millis(1));
                    } else {
                        refused += 1;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                format!(
                    "STATE {:?} admitted={admitted} probes={probes} refused={refused}",
                    cb.state()
                )
            }
            _ => return,
        };
        writeln!(out, "FLEET {answer}").unwrap();
        out.flush().unwrap();
    }
}

/// One process of the fleet, spoken to over its stdin and stdout.
struct Process {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Process {
    fn start(redis: &RedisServer, key: &str, expiry: Duration) -> Process {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "fleet_child_process", "--nocapture"])
            .env("RESIL_FLEET_CHILD", redis.url())
            .env("RESIL_FLEET_KEY", key)
            .env("RESIL_FLEET_EXPIRY_MS", expiry.as_millis().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        Process {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
        }
    }

    /// Sends `command` and returns the answer (after `FLEET `).
    fn ask(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "the process ended before answering `{command}`");
            if let Some(answer) = line.trim_end().strip_prefix("FLEET ") {
                return answer.to_owned();
            }
        }
    }

    /// Kills the process (`SIGKILL`, by its pid) and reaps it.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Three processes, two probes for the fleet (`permitted = 2`, a count
/// window of 4): the probes went to two different processes, one each, and
/// the third got none. Each process's own half-open window holds one result
/// of the two it needs; the fleet's holds both, and its verdict moves all
/// three, the third too, to `state` at their next call, without another
/// probe.
fn three_processes_follow_one_verdict(name: &str, outcome: &str, state: &str) {
    let Some(redis) = RedisServer::start_or_skip(name) else {
        return;
    };
    let key = format!("resil:circuitbreaker:{{{name}}}");
    let mut fleet: Vec<Process> = (0..3)
        .map(|_| Process::start(&redis, &key, Duration::from_secs(30)))
        .collect();
    assert_eq!(fleet[0].ask("take"), "TOOK true");
    assert_eq!(fleet[1].ask("take"), "TOOK true");
    assert_eq!(fleet[2].ask("take"), "TOOK false");
    assert_eq!(fleet[0].ask(outcome), "DONE");
    assert_eq!(fleet[1].ask(outcome), "DONE");
    let answers: Vec<String> = fleet
        .iter_mut()
        .map(|p| p.ask(&format!("until {state}")))
        .collect();
    for answer in &answers {
        assert!(
            answer.starts_with(&format!("STATE {state} ")),
            "{answers:?}"
        );
        assert!(answer.contains(" probes=0 "), "{answers:?}");
    }
}

/// The downstream healed: both probes succeed, and the fleet closes.
#[test]
fn three_processes_recover_together() {
    three_processes_follow_one_verdict("three_processes_recover_together", "success", "Closed");
}

/// Both probes fail: every process goes back to OPEN.
#[test]
fn three_processes_open_together() {
    three_processes_follow_one_verdict("three_processes_open_together", "failure", "Open");
}

/// A process killed while it holds a probe: its lease expires (the probe
/// expiry, 500 ms here), the probe goes to another process, and the fleet
/// decides without it.
#[test]
fn a_process_killed_holding_a_probe_does_not_stall_the_fleet() {
    let Some(redis) =
        RedisServer::start_or_skip("a_process_killed_holding_a_probe_does_not_stall_the_fleet")
    else {
        return;
    };
    let key = "resil:circuitbreaker:{killed}";
    let expiry = Duration::from_millis(500);
    let mut doomed = Process::start(&redis, key, expiry);
    let mut b = Process::start(&redis, key, expiry);
    let mut c = Process::start(&redis, key, expiry);
    assert_eq!(doomed.ask("take"), "TOOK true");
    assert_eq!(b.ask("take"), "TOOK true");
    doomed.kill(); // mid-call: its probe is never reported
    assert_eq!(b.ask("success"), "DONE");
    assert_eq!(c.ask("take"), "TOOK false");
    // c gets the dead process's probe once its lease expires, and its
    // outcome is the second the fleet needs: one probe, not the two its
    // own window would want
    let answer = c.ask("until Closed");
    assert!(answer.starts_with("STATE Closed"), "{answer}");
    assert!(answer.contains(" probes=1 "), "{answer}");
    assert!(!answer.ends_with(" refused=0"), "{answer}");
    // b follows at its next call, without a probe of its own
    let answer = b.ask("until Closed");
    assert!(answer.starts_with("STATE Closed"), "{answer}");
    assert!(answer.contains(" probes=0 "), "{answer}");
}
