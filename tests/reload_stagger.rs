//! `[resil] reload-stagger`: `watch()` applies a changed file after a delay
//! drawn per process, counted on the registries' clock (a `ManualClock`
//! here, so no test waits for the delay), shows the waiting change in
//! `Watcher::pending` and `resil_config_reload_pending`, lets a newer change
//! replace a waiting one and a revert drop it, and leaves `reload()` and
//! `POST /actuator/refresh` immediate. The file's events are real:
//! outcomes are polled for with a deadline. The gauge is one per process,
//! so the tests run one at a time.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use resil::actuator::Actuator;
use resil::clock::ManualClock;
use resil::config::Resilience;
use tower::ServiceExt as _;

mod watched;

use watched::{calls, eventually, watch};

const STAGGER: &str = "[resil]\nreload-stagger = \"30s\"\n\n";

fn file_with(calls: u32) -> String {
    format!("{STAGGER}[bulkhead.instances.inventory-query]\nmax-concurrent-calls = {calls}\n")
}

/// One test at a time, with the process's recorder installed.
fn serial() -> (MutexGuard<'static, ()>, &'static PrometheusHandle) {
    static ONE: Mutex<()> = Mutex::new(());
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    let guard = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let handle = HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::set_global_recorder(recorder).expect("the only recorder");
        handle
    });
    (guard, handle)
}

fn gauge(handle: &PrometheusHandle) -> Option<String> {
    handle
        .render()
        .lines()
        .find_map(|l| l.strip_prefix("resil_config_reload_pending "))
        .map(str::to_owned)
}

fn setup(name: &str, text: &str) -> (PathBuf, PathBuf) {
    watched::setup(&format!("stagger-{name}"), text)
}

fn load(file: &Path, clock: &ManualClock) -> Arc<Resilience> {
    watched::load(file, Some(clock))
}

#[test]
fn a_change_waits_its_delay_on_the_registries_clock() {
    let (_serial, handle) = serial();
    let (dir, file) = setup("wait", &file_with(5));
    let clock = ManualClock::new();
    let loaded = load(&file, &clock);
    assert_eq!(loaded.report().reload_stagger(), Duration::from_secs(30));
    let watcher = watch(&loaded);
    assert_eq!(gauge(handle).as_deref(), Some("0"));
    std::fs::write(&file, file_with(7)).unwrap();
    eventually("the change to wait", || watcher.pending().is_some());
    let delay = watcher.pending().unwrap();
    assert!(delay < Duration::from_secs(30), "{delay:?}");
    assert_eq!(gauge(handle).as_deref(), Some("1"));
    assert_eq!(calls(&loaded), 5, "not before its time");
    // just before its time nothing fires (the clock runs due timers as it
    // advances, so there is nothing to wait for)
    if let Some(before) = delay.checked_sub(Duration::from_nanos(1)) {
        clock.advance(before);
        assert_eq!(watcher.pending(), Some(delay));
        assert_eq!((calls(&loaded), watcher.applied()), (5, 0));
        clock.advance(Duration::from_nanos(1));
    } else {
        clock.advance(Duration::ZERO);
    }
    eventually("the change to apply", || calls(&loaded) == 7);
    eventually("its outcome", || watcher.applied() == 1);
    assert_eq!(watcher.pending(), None);
    assert_eq!(gauge(handle).as_deref(), Some("0"));
    assert_eq!(
        watcher.last().unwrap().unwrap().to_string(),
        "bulkhead inventory-query: max-concurrent-calls 5 -> 7"
    );
    drop(watcher);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn delays_are_drawn_per_watch_below_the_stagger() {
    let (_serial, _) = serial();
    let mut delays = Vec::new();
    for i in 0..8 {
        let (dir, file) = setup(&format!("draw-{i}"), &file_with(5));
        let clock = ManualClock::new();
        let loaded = load(&file, &clock);
        let watcher = watch(&loaded);
        std::fs::write(&file, file_with(6)).unwrap();
        eventually("the change to wait", || watcher.pending().is_some());
        delays.push(watcher.pending().unwrap());
        drop(watcher);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    assert!(
        delays.iter().all(|d| *d < Duration::from_secs(30)),
        "{delays:?}"
    );
    delays.dedup();
    assert!(delays.len() > 1, "eight draws, one delay: {delays:?}");
}

#[test]
fn a_newer_change_replaces_the_waiting_one() {
    let (_serial, _) = serial();
    let (dir, file) = setup("newer", &file_with(5));
    let clock = ManualClock::new();
    let loaded = load(&file, &clock);
    let watcher = watch(&loaded);
    std::fs::write(&file, file_with(7)).unwrap();
    eventually("the change to wait", || watcher.pending().is_some());
    let delay = watcher.pending().unwrap();
    std::fs::write(&file, file_with(8)).unwrap();
    clock.advance(delay);
    eventually("the newer change to apply", || calls(&loaded) == 8);
    eventually("its outcome", || watcher.applied() == 1);
    // one reload, from 5 to 8: the waiting change was never applied
    assert_eq!(
        watcher.last().unwrap().unwrap().to_string(),
        "bulkhead inventory-query: max-concurrent-calls 5 -> 8"
    );
    assert_eq!(watcher.pending(), None);
    drop(watcher);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_back_to_the_contents_in_force_drops_the_waiting_change() {
    let (_serial, handle) = serial();
    let (dir, file) = setup("revert", &file_with(5));
    let clock = ManualClock::new();
    let loaded = load(&file, &clock);
    let watcher = watch(&loaded);
    std::fs::write(&file, file_with(7)).unwrap();
    eventually("the change to wait", || watcher.pending().is_some());
    std::fs::write(&file, file_with(5)).unwrap();
    eventually("the change to be dropped", || watcher.pending().is_none());
    assert_eq!(gauge(handle).as_deref(), Some("0"));
    // its timer went with it
    clock.advance(Duration::from_secs(60));
    assert_eq!((calls(&loaded), watcher.applied()), (5, 0));
    drop(watcher);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn reload_stays_immediate() {
    let (_serial, _) = serial();
    let (dir, file) = setup("reload", &file_with(5));
    let clock = ManualClock::new();
    let loaded = load(&file, &clock);
    let watcher = watch(&loaded);
    std::fs::write(&file, file_with(7)).unwrap();
    eventually("the change to wait", || watcher.pending().is_some());
    let report = loaded.reload().unwrap();
    assert_eq!(
        report.to_string(),
        "bulkhead inventory-query: max-concurrent-calls 5 -> 7"
    );
    assert_eq!(calls(&loaded), 7, "at once");
    // the waiting change comes to nothing new at its time
    clock.advance(Duration::from_secs(30));
    eventually("the watcher's reload", || watcher.applied() == 1);
    assert_eq!(watcher.last().unwrap().unwrap().to_string(), "no changes");
    drop(watcher);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_actuators_refresh_stays_immediate() {
    let (_serial, handle) = serial();
    let (dir, file) = setup("refresh", &file_with(5));
    let clock = ManualClock::new();
    let loaded = load(&file, &clock);
    let watcher = watch(&loaded);
    std::fs::write(&file, file_with(7)).unwrap();
    eventually("the change to wait", || watcher.pending().is_some());
    let router = Actuator::builder()
        .resilience(loaded.clone())
        .state_changes("s3cr3t-token")
        .build()
        .router();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (status, body) = runtime.block_on(async {
        let response = router
            .oneshot(
                Request::post("/actuator/refresh")
                    .header("authorization", "Bearer s3cr3t-token")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    });
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body.contains("bulkhead.instances.inventory-query.max-concurrent-calls"),
        "{body}"
    );
    assert_eq!(calls(&loaded), 7, "at once, the delay not waited");
    // the watcher's change still waits, and then has nothing left to do
    assert!(watcher.pending().is_some());
    assert_eq!(gauge(handle).as_deref(), Some("1"));
    clock.advance(Duration::from_secs(30));
    eventually("the watcher's reload", || watcher.applied() == 1);
    assert_eq!(watcher.last().unwrap().unwrap().to_string(), "no changes");
    assert_eq!(watcher.pending(), None);
    assert_eq!(gauge(handle).as_deref(), Some("0"));
    drop(watcher);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_stagger_changes_with_the_file() {
    let (_serial, _) = serial();
    let plain = "[bulkhead.instances.inventory-query]\nmax-concurrent-calls = 5\n";
    let (dir, file) = setup("change", plain);
    let clock = ManualClock::new();
    let loaded = load(&file, &clock);
    assert_eq!(loaded.report().reload_stagger(), Duration::ZERO);
    let watcher = watch(&loaded);
    // no stagger in force: the change that sets one applies at once
    std::fs::write(&file, file_with(6)).unwrap();
    eventually("the change to apply", || calls(&loaded) == 6);
    assert_eq!(watcher.pending(), None);
    // and the next one waits
    std::fs::write(&file, file_with(7)).unwrap();
    eventually("the next change to wait", || watcher.pending().is_some());
    assert_eq!(calls(&loaded), 6);
    drop(watcher);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_stagger_is_named_with_its_value() {
    let (_serial, _) = serial();
    for (written, says) in [
        ("\"-5s\"", "cannot be negative"),
        ("-5", "cannot be negative"),
        ("\"soon\"", "expected a duration"),
        ("\"48h\"", "at most 24h"),
    ] {
        let err = Resilience::builder()
            .file_contents(
                "resilience.toml",
                format!("[resil]\nreload-stagger = {written}\n"),
            )
            .env_vars(Vec::<(String, String)>::new())
            .declarations([])
            .load()
            .unwrap_err();
        let [p] = err.problems() else {
            panic!("one problem: {err}");
        };
        assert_eq!(p.key(), "resil.reload-stagger", "{p}");
        assert_eq!(p.value(), Some(written), "{p}");
        assert!(p.message().contains(says), "{written}: {p}");
    }
    let err = Resilience::builder()
        .file_contents("resilience.toml", "[resil]\nreload-stager = \"30s\"\n")
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
        .unwrap_err();
    assert!(
        err.to_string().contains("did you mean `reload-stagger`?"),
        "{err}"
    );
}

#[test]
fn the_environment_overrides_the_stagger() {
    let (_serial, _) = serial();
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", STAGGER)
        .env_vars([("RESIL_RESIL__RELOAD_STAGGER", "0s")])
        .declarations([])
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.report().reload_stagger(), Duration::ZERO);
    let err = Resilience::builder()
        .file_contents("resilience.toml", "")
        .env_vars([("RESIL_RESIL__RELOAD_STAGGER", "-1s")])
        .declarations([])
        .load()
        .unwrap_err();
    let [p] = err.problems() else {
        panic!("one problem: {err}");
    };
    assert_eq!(p.source(), "env RESIL_RESIL__RELOAD_STAGGER", "{p}");
    assert!(p.message().contains("cannot be negative"), "{p}");
}
