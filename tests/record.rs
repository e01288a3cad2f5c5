//! `resil::record`: what a recording writes (on a manual clock, line for
//! line), its rotation at the bound, a path it cannot write, and its cost
//! to the caller (no allocation, on or off).

use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resil::clock::{Clock as _, ManualClock};
use resil::config::{Registries, Resilience};

#[global_allocator]
static ALLOC: resil_testkit::CountingAlloc = resil_testkit::CountingAlloc;

/// One recording at a time: it is process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

const TOML: &str = r#"
[circuitbreaker.instances.inventory-query]
sliding-window-size = 2
minimum-number-of-calls = 2
failure-rate-threshold = 50
wait-duration-in-open-state = "10s"

[ratelimiter.instances.inventory-query]
limit-for-period = 1
limit-refresh-period = "1s"
timeout-duration = 0

[bulkhead.instances.inventory-query]
max-concurrent-calls = 1
max-wait-duration = 0

[retry.instances.inventory-query]
max-attempts = 3
wait-duration = "100ms"

[timelimiter.instances.inventory-query]
timeout-duration = "800ms"
"#;

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("resil-record-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn registries(clock: &ManualClock) -> Registries {
    let (registries, _) = Resilience::builder()
        .file_contents("resilience.toml", TOML)
        .env_vars(Vec::<(String, String)>::new())
        .clock(clock.clone())
        .load()
        .unwrap()
        .into_parts();
    resil::observe(&registries);
    registries
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[derive(Debug)]
struct Down;

/// The output of a future done at its first poll (a time limiter's on a
/// manual clock is: its timer is due at once).
fn at_once<F: Future>(future: F) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(future).poll(&mut cx) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("not done at its first poll"),
    }
}

#[test]
fn a_recording_writes_one_line_per_call_outcome_below_each_pattern() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let clock = ManualClock::new();
    let registries = registries(&clock);
    let cb = registries
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    let limiter = registries.rate_limiters().rate_limiter("inventory-query");
    let bulkhead = registries.bulkheads().bulkhead("inventory-query");
    let retry = registries.retries().retry("inventory-query");
    let tl = registries.time_limiters().time_limiter("inventory-query");
    let path = dir("lines").join("calls.jsonl");
    let recording = resil::record::to_file(&path).unwrap();
    assert_eq!(resil::record::active().as_deref(), Some(path.as_path()));

    clock.advance(Duration::from_secs(1));
    cb.call(|| {
        clock.advance(Duration::from_millis(5));
        Ok::<_, Down>(())
    })
    .unwrap();
    let _ = cb.call(|| {
        clock.advance(Duration::from_millis(7));
        Err::<(), _>(Down)
    });
    let _ = cb.call(|| Ok::<_, Down>(())); // OPEN: refused
    assert!(limiter.try_acquire_permission(1));
    assert!(!limiter.try_acquire_permission(1));
    bulkhead.call(|| Ok::<_, Down>(())).unwrap();
    let _ = retry.call(|| Err::<(), _>(Down)); // three attempts, two waits
    retry.call(|| Ok::<_, Down>(())).unwrap(); // no event: watched apart
    at_once(tl.call_async(|| async { Ok::<_, Down>(()) })).unwrap(); // never pending: 0
    let slow = at_once(tl.call_async(std::future::pending::<Result<(), Down>>));
    assert!(
        slow.is_err(),
        "the manual clock's timer is due at once: 800 ms later"
    );
    recording.stop();

    let t = |ms: u64| {
        humantime::format_rfc3339_micros(std::time::UNIX_EPOCH + Duration::from_millis(ms))
            .to_string()
    };
    let line = |ms, kind: &str, outcome: &str| {
        format!(
            r#"{{"time":"{}","kind":"{kind}","name":"inventory-query","outcome":{outcome}}}"#,
            t(ms)
        )
    };
    assert_eq!(
        lines(&path),
        [
            line(1005, "circuitbreaker", r#""success","duration_us":5000"#),
            line(1012, "circuitbreaker", r#""error","duration_us":7000"#),
            line(
                1012,
                "circuitbreaker",
                r#""transition","from":"CLOSED","to":"OPEN""#
            ),
            line(1012, "circuitbreaker", r#""refused""#),
            line(1012, "ratelimiter", r#""permitted""#),
            line(1012, "ratelimiter", r#""refused""#),
            line(1012, "bulkhead", r#""permitted""#),
            line(1012, "bulkhead", r#""finished""#),
            line(1012, "retry", r#""retry","attempts":1,"wait_us":100000"#),
            line(1112, "retry", r#""retry","attempts":2,"wait_us":100000"#),
            line(1212, "retry", r#""error","attempts":3"#),
            line(1212, "retry", r#""success","attempts":0"#),
            line(1212, "timelimiter", r#""success","duration_us":0"#),
            line(2012, "timelimiter", r#""timeout","duration_us":800000"#),
        ]
    );
    // stopped: nothing more is written
    cb.reset();
    cb.call(|| Ok::<_, Down>(())).unwrap();
    retry.call(|| Ok::<_, Down>(())).unwrap();
    assert_eq!(lines(&path).len(), 14);
    assert_eq!(resil::record::active(), None);
}

#[test]
fn the_file_is_rotated_at_its_bound() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let clock = ManualClock::new();
    let registries = registries(&clock);
    let cb = registries.circuit_breakers().circuit_breaker("rotated");
    let path = dir("rotation").join("calls.jsonl");
    let recording = resil::record::to_file_with_max_bytes(&path, 1000).unwrap();
    for i in 0..30u64 {
        clock.advance(Duration::from_millis(i));
        cb.call(|| Ok::<_, Down>(())).unwrap();
    }
    recording.stop();
    let rotated = PathBuf::from(format!("{}.1", path.display()));
    let (now, before) = (lines(&path), lines(&rotated));
    assert!(!now.is_empty() && !before.is_empty());
    for file in [&path, &rotated] {
        let len = std::fs::metadata(file).unwrap().len();
        assert!(len <= 1000, "{} has {len} bytes", file.display());
    }
    // the newest line is the last call, in the current file; the rotated
    // file holds the lines just before it
    let time = |l: &str| l[9..36].to_owned();
    assert_eq!(
        time(now.last().unwrap()),
        humantime::format_rfc3339_micros(
            std::time::UNIX_EPOCH + Duration::from_millis((0..30).sum())
        )
        .to_string()
    );
    assert!(time(before.last().unwrap()) <= time(&now[0]));
    assert_eq!(resil::record::dropped(), 0);
}

#[test]
fn a_path_that_cannot_be_written_is_a_start_up_error_naming_key_and_value() {
    let missing = dir("unwritable").join("no-such-dir").join("calls.jsonl");
    let toml = format!("[resil]\nrecord = {:?}\n", missing.display().to_string());
    let err = Resilience::builder()
        .file_contents("resilience.toml", toml)
        .env_vars(Vec::<(String, String)>::new())
        .load()
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("resil.record"), "{message}");
    assert!(
        message.contains(&missing.display().to_string()),
        "{message}"
    );
    assert!(message.contains("cannot write the recording"), "{message}");

    let err = resil::record::to_file(&missing).unwrap_err();
    assert_eq!(err.path(), missing);
    assert!(err.to_string().starts_with(&format!(
        "cannot write the recording to {}: ",
        missing.display()
    )));

    // offline (`resil check`) nothing is created, and the key is accepted
    let loaded = Resilience::builder()
        .file_contents(
            "resilience.toml",
            "[resil]\nrecord = \"calls.jsonl\"\nrecord-max-bytes = 100000\n",
        )
        .env_vars(Vec::<(String, String)>::new())
        .offline(true)
        .load()
        .unwrap();
    let record = loaded.report().record().unwrap();
    assert_eq!(record.path(), Path::new("calls.jsonl"));
    assert_eq!(record.max_bytes(), 100_000);

    let err = Resilience::builder()
        .file_contents("resilience.toml", "[resil]\nrecord-max-bytes = 10\n")
        .env_vars(Vec::<(String, String)>::new())
        .offline(true)
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("resil.record-max-bytes"), "{err}");
}

#[test]
fn a_call_allocates_nothing_with_recording_off_or_on() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let clock = ManualClock::new();
    let registries = registries(&clock);
    let cb = registries.circuit_breakers().circuit_breaker("costless");
    let retry = registries.retries().retry("costless");
    let call = || {
        cb.call(|| Ok::<_, Down>(std::hint::black_box(1))).unwrap();
        retry
            .call(|| Ok::<_, Down>(std::hint::black_box(2)))
            .unwrap();
    };
    call();
    let (_, off) = resil_testkit::allocations_during(|| {
        for _ in 0..100 {
            call();
        }
    });
    assert_eq!(off, 0, "allocations with recording off");

    let path = dir("cost").join("calls.jsonl");
    let recording = resil::record::to_file(&path).unwrap();
    call();
    let (_, on) = resil_testkit::allocations_during(|| {
        for _ in 0..100 {
            call();
        }
    });
    recording.stop();
    assert_eq!(
        on, 0,
        "allocations on the caller's thread with recording on"
    );
    assert_eq!(lines(&path).len(), 202, "a line per call of each");
    let _ = clock.now();
}
