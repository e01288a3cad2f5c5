//! `resil replay` as a process: a recording written here line by line, two
//! candidate configurations that disagree about opening, the same bytes on
//! every run, the calls the recording refused counted as inferred, and a
//! corrupt line or a bad configuration stopping it with exit status 1.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn resil(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_resil"))
        .args(args)
        .current_dir(dir)
        .env_remove("RESIL_CONFIG")
        .output()
        .expect("the resil binary runs")
}

/// `resil replay --calls calls --config config [--against against]` in `dir`.
fn replay(dir: &Path, calls: &str, config: &str, against: Option<&str>) -> Output {
    let mut args = vec!["replay", "--calls", calls, "--config", config];
    args.extend(against.map(|a| ["--against", a]).into_iter().flatten());
    resil(&args, dir)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `2026-12-05T00:00:00.000000Z` plus `ms`.
fn time(ms: u64) -> String {
    let (s, ms) = (ms / 1000, ms % 1000);
    format!("2026-12-05T00:00:{s:02}.{ms:03}000Z")
}

fn line(out: &mut String, ms: u64, kind: &str, outcome: &str, extra: &str) {
    let _ = writeln!(
        out,
        r#"{{"time":"{}","kind":"{kind}","name":"orders","outcome":"{outcome}"{extra}}}"#,
        time(ms)
    );
}

/// 30 calls 100 ms apart, as `resil::record` writes them: the breaker saw
/// ten successes, six failures, opened at the sixth, refused ten calls and
/// let four succeed; a rate limiter refused every third call; a bulkhead
/// held each call 50 ms; a retry saw two calls fail once, the second for
/// good; a time limiter saw calls of 200 ms, 900 ms and 50 ms, and timed
/// one out after 1 s.
fn recording() -> String {
    let mut out = String::new();
    for i in 0..30u64 {
        let ms = i * 100;
        let took = r#","duration_us":10000"#;
        match i {
            0..10 | 26.. => line(&mut out, ms, "circuitbreaker", "success", took),
            10..16 => line(&mut out, ms, "circuitbreaker", "error", took),
            _ => line(&mut out, ms, "circuitbreaker", "refused", ""),
        }
        if i == 15 {
            line(
                &mut out,
                ms,
                "circuitbreaker",
                "transition",
                r#","from":"CLOSED","to":"OPEN""#,
            );
        }
        let limited = if i % 3 == 0 { "refused" } else { "permitted" };
        line(&mut out, ms, "ratelimiter", limited, "");
        line(&mut out, ms, "bulkhead", "permitted", "");
        line(&mut out, ms + 50, "bulkhead", "finished", "");
        let (outcome, us) = match i {
            5 => ("success", 200_000),
            12 => ("success", 900_000),
            20 => ("error", 50_000),
            25 => ("timeout", 1_000_000),
            _ => continue,
        };
        line(
            &mut out,
            ms,
            "timelimiter",
            outcome,
            &format!(r#","duration_us":{us}"#),
        );
    }
    let wait = r#","attempts":1,"wait_us":100000"#;
    line(&mut out, 3000, "retry", "retry", wait);
    line(&mut out, 3100, "retry", "success", r#","attempts":1"#);
    line(&mut out, 3200, "retry", "retry", wait);
    line(&mut out, 3300, "retry", "error", r#","attempts":2"#);
    out
}

/// Opens when half of the last 10 calls failed, for 500 ms.
const OPENS: &str = r#"
[circuitbreaker.instances.orders]
sliding-window-size = 10
minimum-number-of-calls = 10
failure-rate-threshold = 50
wait-duration-in-open-state = "500ms"
permitted-number-of-calls-in-half-open-state = 2

[ratelimiter.instances.orders]
limit-for-period = 5
limit-refresh-period = "1s"
timeout-duration = 0

[bulkhead.instances.orders]
max-concurrent-calls = 1

[retry.instances.orders]
max-attempts = 3
wait-duration = "100ms"

[timelimiter.instances.orders]
timeout-duration = "500ms"
"#;

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("resil-replay-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("calls.jsonl"), recording()).unwrap();
    std::fs::write(dir.join("opens.toml"), OPENS).unwrap();
    // judged over 30 calls: 11 failures of 30 never reach half
    let stays = OPENS
        .replace("sliding-window-size = 10", "sliding-window-size = 30")
        .replace(
            "minimum-number-of-calls = 10",
            "minimum-number-of-calls = 30",
        );
    std::fs::write(dir.join("stays.toml"), stays).unwrap();
    dir
}

const OPENS_REPORT: &str = "\
replay of calls.jsonl: 129 lines over +3.300s
candidate: opens.toml; compared with: recording

circuitbreaker `orders`
    calls: 30
    inferred: 2
    refusals: 10 (recording: 10, difference: 0)
    OPEN: 2 at +1.400s, +2.100s (recording: 1 at +1.500s, difference: +1)

retry `orders`
    calls: 2
    inferred: 1
    refusals: 0 (recording: 0, difference: 0)
    retries: 3 (recording: 2, difference: +1)

ratelimiter `orders`
    calls: 30
    inferred: 0
    refusals: 15 (recording: 10, difference: +5)

bulkhead `orders`
    calls: 30
    inferred: 0
    refusals: 0 (recording: 0, difference: 0)

timelimiter `orders`
    calls: 4
    inferred: 0
    timeouts: 2 (recording: 1, difference: +1)
";

#[test]
fn a_candidate_that_opens_earlier_and_twice_is_shown_beside_the_recording() {
    let dir = dir("opens");
    let out = replay(&dir, "calls.jsonl", "opens.toml", None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // the breaker opens at the 15th call (5 of the last 10 failed), lets two
    // probes through after 500 ms, the two calls the recording refused there
    // take the nearest outcomes (a failure before, a success after), and it
    // opens again: those two are the inferred ones. The retry's third
    // attempt, which the recording never made, is inferred too.
    assert_eq!(text(&out.stdout), OPENS_REPORT);
}

#[test]
fn the_same_input_gives_the_same_bytes() {
    let dir = dir("twice");
    let run = || replay(&dir, "calls.jsonl", "opens.toml", Some("stays.toml"));
    let (first, second) = (run(), run());
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert_eq!(first.stdout, second.stdout);
    assert!(!first.stdout.is_empty());
}

#[test]
fn a_candidate_that_never_opens_infers_every_refused_call() {
    let dir = dir("stays");
    let out = replay(&dir, "calls.jsonl", "stays.toml", None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "circuitbreaker `orders`
    calls: 30
    inferred: 10
    refusals: 0 (recording: 10, difference: -10)
    OPEN: 0 (recording: 1 at +1.500s, difference: -1)
"
        ),
        "{stdout}"
    );

    // and the two candidates side by side
    let out = replay(&dir, "calls.jsonl", "stays.toml", Some("opens.toml"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("candidate: stays.toml; compared with: opens.toml\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("    OPEN: 0 (opens.toml: 2 at +1.400s, +2.100s, difference: -2)\n"),
        "{stdout}"
    );
}

#[test]
fn a_time_limiter_is_replayed_against_the_candidates_timeout() {
    let dir = dir("timeouts");
    std::fs::write(
        dir.join("long.toml"),
        "[timelimiter.instances.orders]\ntimeout-duration = \"2s\"\n",
    )
    .unwrap();
    let out = replay(&dir, "calls.jsonl", "long.toml", Some("opens.toml"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    // 2 s lets the 900 ms call finish; the call the recording gave up on
    // after 1 s may have run on past 2 s: a timeout still, inferred.
    assert!(
        report.ends_with(
            "timelimiter `orders`
    calls: 4
    inferred: 1
    timeouts: 1 (opens.toml: 2, difference: -1)
"
        ),
        "{report}"
    );

    // a time limiter's line needs its duration
    let lines = recording().replace(
        r#""outcome":"timeout","duration_us":1000000"#,
        r#""outcome":"timeout""#,
    );
    std::fs::write(dir.join("no-duration.jsonl"), lines).unwrap();
    let out = replay(&dir, "no-duration.jsonl", "long.toml", None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).ends_with(": a timelimiter's \"timeout\" needs its `duration_us`\n"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_corrupt_or_truncated_line_is_named_and_stops_the_replay() {
    let dir = dir("corrupt");
    let whole = recording();
    // cut in the middle of the third line, as a crash mid-write leaves it
    let cut: usize = whole.lines().take(2).map(|l| l.len() + 1).sum::<usize>() + 40;
    std::fs::write(dir.join("truncated.jsonl"), &whole[..cut]).unwrap();
    let out = replay(&dir, "truncated.jsonl", "opens.toml", None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("resil replay: truncated.jsonl:3: not a line of a recording ("),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    let mut lines: Vec<&str> = whole.lines().collect();
    lines[4] = r#"{"time":"yesterday","kind":"retry","name":"orders","outcome":"error"}"#;
    std::fs::write(dir.join("bad-time.jsonl"), lines.join("\n")).unwrap();
    let out = replay(&dir, "bad-time.jsonl", "opens.toml", None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with(
            "resil replay: bad-time.jsonl:5: `time` \"yesterday\" is not an RFC 3339 time"
        ),
        "{}",
        text(&out.stderr)
    );

    lines[4] = r#"{"time":"2026-12-05T00:00:00Z","kind":"ratelimiter","name":"orders","outcome":"finished"}"#;
    std::fs::write(dir.join("bad-outcome.jsonl"), lines.join("\n")).unwrap();
    let out = replay(&dir, "bad-outcome.jsonl", "opens.toml", None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "resil replay: bad-outcome.jsonl:5: `outcome` \"finished\" is not one of a ratelimiter\n"
    );
}

#[test]
fn a_missing_or_invalid_configuration_is_a_clear_error() {
    let dir = dir("config");
    let out = replay(&dir, "calls.jsonl", "missing.toml", None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("resil replay: cannot read missing.toml: "),
        "{}",
        text(&out.stderr)
    );

    std::fs::write(
        dir.join("bad.toml"),
        "[circuitbreaker.instances.orders]\nfailure-rate-threshold = 300\n",
    )
    .unwrap();
    let out = replay(&dir, "calls.jsonl", "opens.toml", Some("bad.toml"));
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "bad.toml: circuitbreaker.instances.orders.failure-rate-threshold = 300: must be in (0, 100]"
        ),
        "{stderr}"
    );

    let out = replay(&dir, "missing.jsonl", "opens.toml", None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("resil replay: cannot read missing.jsonl: "),
        "{}",
        text(&out.stderr)
    );
}

/// A retry's calls over 2 s: eighteen that succeeded at their first attempt
/// (the recorder writes them with `attempts` 0), then two that failed once
/// and succeeded on their retry.
fn budgeted_recording(with_first_attempt_successes: bool) -> String {
    let mut out = String::new();
    for i in 0..18u64 {
        if with_first_attempt_successes {
            line(&mut out, i * 100, "retry", "success", r#","attempts":0"#);
        }
    }
    let wait = r#","attempts":1,"wait_us":10000"#;
    for ms in [1800, 1900] {
        line(&mut out, ms, "retry", "retry", wait);
        line(&mut out, ms + 10, "retry", "success", r#","attempts":1"#);
    }
    out
}

/// A budget of one retry per ten first attempts, none for free.
const BUDGET: &str = r#"
[retrybudget.instances.orders]
ratio = 0.1
min-retries-per-second = 0
ttl = "10s"

[retry.instances.orders]
max-attempts = 3
wait-duration = "10ms"
budget = "orders"
"#;

#[test]
fn first_attempt_successes_pay_into_the_replayed_budget() {
    let dir = std::env::temp_dir().join(format!("resil-replay-{}-budget", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("budget.toml"), BUDGET).unwrap();
    std::fs::write(dir.join("all.jsonl"), budgeted_recording(true)).unwrap();
    std::fs::write(dir.join("failed.jsonl"), budgeted_recording(false)).unwrap();

    // twenty first attempts deposit two retries: both are made
    let out = replay(&dir, "all.jsonl", "budget.toml", None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.contains(
            "retry `orders`\n    calls: 20\n    inferred: 0\n    refusals: 0 (recording: 0, difference: 0)\n    retries: 2 (recording: 2, difference: 0)\n"
        ),
        "{report}"
    );

    // without them, the two calls that failed deposit too little: both
    // retries are refused
    let out = replay(&dir, "failed.jsonl", "budget.toml", None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.contains(
            "retry `orders`\n    calls: 2\n    inferred: 0\n    refusals: 2 (recording: 0, difference: +2)\n    retries: 0 (recording: 2, difference: -2)\n"
        ),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Six tasks submitted 10 ms apart, each running 100 ms, and a seventh the
/// pool refused, as `resil::record` writes a thread-pool bulkhead's.
fn pool_recording() -> String {
    let mut out = String::new();
    for i in 0..6u64 {
        line(&mut out, i * 10, "thread-pool-bulkhead", "permitted", "");
    }
    line(&mut out, 60, "thread-pool-bulkhead", "refused", "");
    for i in 0..6u64 {
        line(
            &mut out,
            i * 10 + 100,
            "thread-pool-bulkhead",
            "finished",
            "",
        );
    }
    out
}

#[test]
fn a_thread_pool_is_replayed_with_its_threads_and_queue() {
    let dir = dir("pool");
    std::fs::write(dir.join("pool.jsonl"), pool_recording()).unwrap();
    // two threads and two places in the queue: four tasks at a time
    std::fs::write(
        dir.join("small.toml"),
        "[thread-pool-bulkhead.instances.orders]\n\
         core-thread-pool-size = 1\nmax-thread-pool-size = 2\nqueue-capacity = 2\n",
    )
    .unwrap();
    // eight at a time: the task the recording refused runs too
    std::fs::write(
        dir.join("large.toml"),
        "[thread-pool-bulkhead.instances.orders]\n\
         core-thread-pool-size = 4\nmax-thread-pool-size = 4\nqueue-capacity = 4\n",
    )
    .unwrap();
    let small = replay(&dir, "pool.jsonl", "small.toml", None);
    assert!(small.status.success(), "{}", text(&small.stderr));
    assert_eq!(
        text(&small.stdout),
        "\
replay of pool.jsonl: 13 lines over +0.150s
candidate: small.toml; compared with: recording

thread-pool-bulkhead `orders`
    calls: 7
    inferred: 0
    refusals: 3 (recording: 1, difference: +2)
"
    );
    let large = replay(&dir, "pool.jsonl", "large.toml", Some("small.toml"));
    assert!(large.status.success(), "{}", text(&large.stderr));
    assert_eq!(
        text(&large.stdout),
        "\
replay of pool.jsonl: 13 lines over +0.150s
candidate: large.toml; compared with: small.toml

thread-pool-bulkhead `orders`
    calls: 7
    inferred: 1
    refusals: 0 (small.toml: 3, difference: -3)
"
    );
}
