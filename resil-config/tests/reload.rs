//! Reloading registries built with `Resilience::builder()`: the report's
//! lines, all or nothing (every file `load` refuses, a reload refuses with
//! the same problems and changes nothing), the settings only a restart
//! applies, dry runs, the shadow and initial-state keys, and the instances'
//! identity.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use resil_config::{ChangeKind, InitError, Resilience};
use resil_core::circuit_breaker::State;

fn load(text: &str) -> Resilience {
    Resilience::builder()
        .file_contents("resilience.toml", text)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn lines(report: &resil_config::ReloadReport) -> Vec<String> {
    report.to_string().lines().map(str::to_owned).collect()
}

/// A directory of its own under the system's temporary one.
fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("resil-config-reload-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const BREAKER: &str = r#"
[circuitbreaker.instances.inventory-query]
failure-rate-threshold = 50
sliding-window-size = 20
minimum-number-of-calls = 10

[bulkhead.instances.inventory-query]
max-concurrent-calls = 5
"#;

#[test]
fn each_changed_setting_is_one_exact_line() {
    let loaded = load(BREAKER);
    let edited = BREAKER
        .replace("failure-rate-threshold = 50", "failure-rate-threshold = 30")
        .replace(
            "max-concurrent-calls = 5",
            "max-concurrent-calls = 7\nmax-wait-duration = \"20ms\"",
        );
    let report = loaded
        .reload_from_contents("resilience.toml", edited)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        lines(&report),
        [
            "circuitbreaker inventory-query: failure-rate-threshold 50 -> 30",
            "bulkhead inventory-query: max-concurrent-calls 5 -> 7",
            "bulkhead inventory-query: max-wait-duration 0ms -> 20ms",
        ]
    );
    let c = &report.changes()[0];
    assert_eq!(c.kind(), ChangeKind::Setting);
    assert_eq!(c.aspect(), "circuitbreaker");
    assert_eq!(c.instance(), "inventory-query");
    assert_eq!(c.key(), "failure-rate-threshold");
    assert_eq!((c.old(), c.new()), ("50", "30"));
    assert_eq!(
        c.path(),
        "circuitbreaker.instances.inventory-query.failure-rate-threshold"
    );
    assert!(!report.is_dry_run());
    let registries = loaded.registries();
    let cb = registries
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    assert_eq!(cb.config().failure_rate_threshold(), 30.0);
    assert_eq!(cb.config().sliding_window_size(), 20);
    let bulkhead = registries.bulkheads().bulkhead("inventory-query");
    assert_eq!(bulkhead.config().max_concurrent_calls(), 7);
    assert_eq!(
        bulkhead.config().max_wait_duration(),
        Duration::from_millis(20)
    );
}

#[test]
fn the_same_file_is_no_changes() {
    let loaded = load(BREAKER);
    let report = loaded.reload().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.to_string(), "no changes");
    assert!(report.is_empty());
    // a reordered, respelled file that means the same is no change either
    let same = "[bulkhead.instances.inventory-query]\nmaxConcurrentCalls = 5\n\n[circuitbreaker.instances.inventory-query]\nminimum-number-of-calls = 10\nsliding-window-size = 20\nfailure-rate-threshold = 50.0\n";
    let report = loaded
        .reload_from_contents("resilience.toml", same)
        .unwrap();
    assert_eq!(report.to_string(), "no changes");
}

#[test]
fn an_instance_removed_from_the_file_goes_back_to_the_defaults() {
    let loaded = load(BREAKER);
    let bulkhead = loaded.registries().bulkheads().bulkhead("inventory-query");
    let only_breaker = BREAKER.split("[bulkhead").next().unwrap().to_owned();
    let report = loaded
        .reload_from_contents("resilience.toml", only_breaker.clone())
        .unwrap();
    assert_eq!(
        lines(&report),
        [
            "bulkhead inventory-query: back to the defaults",
            "bulkhead inventory-query: max-concurrent-calls 5 -> 25",
        ]
    );
    assert_eq!(report.changes()[0].kind(), ChangeKind::BackToDefaults);
    assert_eq!(report.changes()[0].key(), "");
    assert_eq!(
        report.changed_keys(),
        [
            "bulkhead.instances.inventory-query",
            "bulkhead.instances.inventory-query.max-concurrent-calls"
        ]
    );
    assert_eq!(bulkhead.config().max_concurrent_calls(), 25);

    // what a new instance of that name would get now: the new configs.default
    let loaded = load(BREAKER);
    let bulkhead = loaded.registries().bulkheads().bulkhead("inventory-query");
    let with_default =
        format!("{only_breaker}\n[bulkhead.configs.default]\nmax-concurrent-calls = 3\n");
    let report = loaded
        .reload_from_contents("resilience.toml", with_default)
        .unwrap();
    assert_eq!(
        lines(&report),
        [
            "bulkhead inventory-query: back to the defaults",
            "bulkhead inventory-query: max-concurrent-calls 5 -> 3",
        ]
    );
    assert_eq!(bulkhead.config().max_concurrent_calls(), 3);
    // and the registry's default is the new one for names created later
    let later = loaded.registries().bulkheads().bulkhead("created-later");
    assert_eq!(later.config().max_concurrent_calls(), 3);
}

#[test]
fn a_new_instance_in_the_file_is_created() {
    let loaded = load(BREAKER);
    assert!(loaded.registries().bulkheads().find("reports").is_none());
    let report = loaded
        .reload_from_contents(
            "resilience.toml",
            format!("{BREAKER}\n[bulkhead.instances.reports]\nmax-concurrent-calls = 2\n"),
        )
        .unwrap();
    assert_eq!(lines(&report), ["bulkhead reports: new instance"]);
    assert_eq!(report.changes()[0].kind(), ChangeKind::Added);
    let created = loaded.registries().bulkheads().find("reports").unwrap();
    assert_eq!(created.config().max_concurrent_calls(), 2);
    let now = loaded.current_report();
    assert!(
        now.instance(resil_config::Aspect::Bulkhead, "reports")
            .is_some()
    );
}

#[test]
fn an_instance_created_at_run_time_is_left_alone_until_the_file_names_it() {
    let loaded = load(BREAKER);
    let adhoc = loaded.registries().bulkheads().bulkhead("adhoc");
    let report = loaded
        .reload_from_contents(
            "resilience.toml",
            BREAKER.replace("max-concurrent-calls = 5", "max-concurrent-calls = 6"),
        )
        .unwrap();
    assert_eq!(
        lines(&report),
        ["bulkhead inventory-query: max-concurrent-calls 5 -> 6"]
    );
    assert_eq!(adhoc.config().max_concurrent_calls(), 25);
    // configured now: compared with what it ran on, changed in place
    let report = loaded
        .reload_from_contents(
            "resilience.toml",
            format!("{BREAKER}\n[bulkhead.instances.adhoc]\nmax-concurrent-calls = 4\n"),
        )
        .unwrap();
    assert_eq!(
        lines(&report),
        [
            "bulkhead adhoc: max-concurrent-calls 25 -> 4",
            "bulkhead inventory-query: max-concurrent-calls 6 -> 5",
        ]
    );
    assert_eq!(adhoc.config().max_concurrent_calls(), 4);
    assert!(Arc::ptr_eq(
        &adhoc,
        &loaded.registries().bulkheads().bulkhead("adhoc")
    ));
}

#[test]
fn the_instance_keeps_its_identity_and_its_clones_see_the_change() {
    let loaded = load(BREAKER);
    let registries = loaded.registries();
    let before = registries.bulkheads().bulkhead("inventory-query");
    let clone = (*before).clone();
    let permit = before.try_acquire_permission().unwrap();
    loaded
        .reload_from_contents(
            "resilience.toml",
            BREAKER.replace("max-concurrent-calls = 5", "max-concurrent-calls = 2"),
        )
        .unwrap();
    let after = registries.bulkheads().bulkhead("inventory-query");
    assert!(Arc::ptr_eq(&before, &after));
    assert_eq!(clone.config().max_concurrent_calls(), 2);
    // the permit in use is kept: one more fits, not two
    let second = clone.try_acquire_permission().unwrap();
    assert!(clone.try_acquire_permission().is_err());
    drop((permit, second));
    assert_eq!(after.metrics().available_concurrent_calls(), 2);
}

#[test]
fn a_breaker_keeps_its_state_and_window_across_a_reload() {
    let loaded = load(BREAKER);
    let cb = loaded
        .registries()
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    for _ in 0..3 {
        let _ = cb.call(|| Err::<(), _>(std::io::Error::other("down")));
    }
    assert_eq!(cb.metrics().number_of_failed_calls(), 3);
    loaded
        .reload_from_contents(
            "resilience.toml",
            BREAKER.replace("failure-rate-threshold = 50", "failure-rate-threshold = 30"),
        )
        .unwrap();
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(
        cb.metrics().number_of_failed_calls(),
        3,
        "the window is kept"
    );
    assert_eq!(cb.config().failure_rate_threshold(), 30.0);
}

#[test]
fn a_limited_forced_open_ends_in_half_open_across_a_reload() {
    let clock = resil_core::clock::ManualClock::new();
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", BREAKER)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .clock(clock.clone())
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let cb = loaded
        .registries()
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    cb.transition_to_forced_open_state_for(Duration::from_secs(2))
        .unwrap();
    loaded
        .reload_from_contents(
            "resilience.toml",
            BREAKER.replace("failure-rate-threshold = 50", "failure-rate-threshold = 30"),
        )
        .unwrap();
    assert_eq!(cb.state(), State::ForcedOpen, "the reload keeps the state");
    clock.advance(Duration::from_secs(2));
    assert_eq!(
        cb.state(),
        State::HalfOpen,
        "the limit still ends, in HALF_OPEN: the probes decide"
    );
    assert_eq!(cb.config().failure_rate_threshold(), 30.0);
}

/// The files `load` refuses, from the corpus of bad files.
fn corpus() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("tests/bad")
        .expect("run from the crate directory")
        .map(|e| Path::new("tests/bad").join(e.unwrap().file_name()))
        .collect();
    files.sort();
    files
}

fn from_file(path: &Path) -> Result<Resilience, InitError> {
    Resilience::builder()
        .file(path)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
}

#[test]
fn every_file_that_load_refuses_a_reload_refuses_with_the_same_problems() {
    let dir = temp_dir("corpus");
    let path = dir.join("resilience.toml");
    std::fs::write(&path, BREAKER).unwrap();
    let loaded = from_file(&path).unwrap();
    let cb = loaded
        .registries()
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    let bulkhead = loaded.registries().bulkheads().bulkhead("inventory-query");
    let mut refused = 0;
    for bad in corpus() {
        std::fs::copy(&bad, &path).unwrap();
        let expected = match from_file(&path) {
            Ok(_) => panic!("{}: load accepts it", bad.display()),
            Err(e) => e,
        };
        let got = loaded
            .reload()
            .map(|r| r.to_string())
            .expect_err(&bad.display().to_string());
        assert_eq!(got.to_string(), expected.to_string(), "{}", bad.display());
        assert_eq!(got.problems(), expected.problems(), "{}", bad.display());
        let dry = loaded.reload_dry_run().unwrap_err();
        assert_eq!(dry.to_string(), expected.to_string());
        assert_eq!(
            cb.config().failure_rate_threshold(),
            50.0,
            "{}",
            bad.display()
        );
        assert_eq!(
            bulkhead.config().max_concurrent_calls(),
            5,
            "{}",
            bad.display()
        );
        refused += 1;
    }
    assert!(refused >= 40, "{refused}");
    // and the good file again: nothing had changed
    std::fs::write(&path, BREAKER).unwrap();
    assert_eq!(loaded.reload().unwrap().to_string(), "no changes");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_deleted_file_is_a_refused_reload() {
    let dir = temp_dir("deleted");
    let path = dir.join("resilience.toml");
    std::fs::write(&path, BREAKER).unwrap();
    let loaded = from_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let err = loaded.reload().unwrap_err();
    let expected = from_file(&path).unwrap_err();
    assert_eq!(err.to_string(), expected.to_string());
    assert_eq!(err.problems()[0].source(), path.display().to_string());
    assert!(
        err.problems()[0]
            .message()
            .starts_with("cannot read the file"),
        "{err}"
    );
    let bulkhead = loaded.registries().bulkheads().bulkhead("inventory-query");
    assert_eq!(bulkhead.config().max_concurrent_calls(), 5);
    // back in place, edited: it applies
    std::fs::write(
        &path,
        BREAKER.replace("max-concurrent-calls = 5", "max-concurrent-calls = 6"),
    )
    .unwrap();
    let report = loaded.reload().unwrap();
    assert_eq!(
        lines(&report),
        ["bulkhead inventory-query: max-concurrent-calls 5 -> 6"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_default_file_that_was_read_must_stay() {
    // read through `RESIL_CONFIG` of the builder's variables
    let dir = temp_dir("env-config");
    let path = dir.join("resilience.toml");
    std::fs::write(&path, BREAKER).unwrap();
    let vars = [("RESIL_CONFIG".to_owned(), path.display().to_string())];
    let loaded = Resilience::builder()
        .env_vars(vars)
        .declarations([])
        .load()
        .unwrap();
    std::fs::write(
        &path,
        BREAKER.replace("max-concurrent-calls = 5", "max-concurrent-calls = 9"),
    )
    .unwrap();
    assert_eq!(
        lines(&loaded.reload().unwrap()),
        ["bulkhead inventory-query: max-concurrent-calls 5 -> 9"]
    );
    std::fs::remove_file(&path).unwrap();
    assert!(loaded.reload().is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_refused_reload_changes_nothing_anywhere() {
    let loaded = load(BREAKER);
    let bulkhead = loaded.registries().bulkheads().bulkhead("inventory-query");
    // one good change and one bad value elsewhere: neither applies
    let edited = format!(
        "{}\n[retry.instances.inventory-query]\nmax-attempts = 0\n",
        BREAKER.replace("max-concurrent-calls = 5", "max-concurrent-calls = 8")
    );
    let err = loaded
        .reload_from_contents("resilience.toml", edited)
        .unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    assert_eq!(
        err.problems()[0].key(),
        "retry.instances.inventory-query.max-attempts"
    );
    assert_eq!(bulkhead.config().max_concurrent_calls(), 5);
    assert!(
        loaded
            .registries()
            .retries()
            .find("inventory-query")
            .is_none()
    );
    // the refused contents were not kept: the next reload reads the old ones
    assert_eq!(loaded.reload().unwrap().to_string(), "no changes");
}

#[test]
fn a_dry_run_reports_the_same_and_applies_nothing() {
    let loaded = load(BREAKER);
    let bulkhead = loaded.registries().bulkheads().bulkhead("inventory-query");
    let edited = BREAKER.replace("max-concurrent-calls = 5", "max-concurrent-calls = 11");
    let dry = loaded
        .reload_from_contents_dry_run("resilience.toml", edited.clone())
        .unwrap();
    assert!(dry.is_dry_run());
    assert_eq!(
        lines(&dry),
        ["bulkhead inventory-query: max-concurrent-calls 5 -> 11"]
    );
    assert_eq!(bulkhead.config().max_concurrent_calls(), 5);
    assert_eq!(
        loaded
            .current_report()
            .instance(resil_config::Aspect::Bulkhead, "inventory-query")
            .unwrap()
            .setting("max-concurrent-calls"),
        Some("5")
    );
    // nor kept the contents
    assert_eq!(loaded.reload_dry_run().unwrap().to_string(), "no changes");
    let applied = loaded
        .reload_from_contents("resilience.toml", edited)
        .unwrap();
    assert_eq!(applied.to_string(), dry.to_string());
    assert_eq!(bulkhead.config().max_concurrent_calls(), 11);
}

#[test]
fn registry_tags_and_cloud_settings_need_a_restart() {
    const TAGGED: &str = "[bulkhead.tags]\nenv = \"test\"\n\n[bulkhead.instances.a]\nmax-concurrent-calls = 5\n\n[cloud]\nexecutor-max-threads = 8\n";
    let loaded = load(TAGGED);
    let bulkhead = loaded.registries().bulkheads().bulkhead("a");
    let edited = TAGGED
        .replace("\"test\"", "\"prod\"")
        .replace("= 8", "= 16")
        .replace("= 5", "= 6");
    let err = loaded
        .reload_from_contents("resilience.toml", edited)
        .unwrap_err();
    let shown: Vec<String> = err.problems().iter().map(|p| p.to_string()).collect();
    assert_eq!(
        shown,
        [
            "resilience.toml: bulkhead.tags.env = \"prod\": cannot change while the service runs; restart to apply",
            "resilience.toml: cloud.executor-max-threads = 16: cannot change while the service runs; restart to apply",
        ]
    );
    assert_eq!(
        bulkhead.config().max_concurrent_calls(),
        5,
        "all or nothing"
    );
    // a tag removed, a tag added
    let err = loaded
        .reload_from_contents(
            "resilience.toml",
            TAGGED.replace("env = \"test\"", "team = \"x\""),
        )
        .unwrap_err();
    let shown: Vec<String> = err.problems().iter().map(|p| p.to_string()).collect();
    assert_eq!(
        shown,
        [
            "resilience.toml: bulkhead.tags.env: was \"test\" and is removed: cannot change while the service runs; restart to apply",
            "resilience.toml: bulkhead.tags.team = \"x\": cannot change while the service runs; restart to apply",
        ]
    );
    // the same values, written another way, are no change
    let same = TAGGED.replace("executor-max-threads = 8", "executorMaxThreads = 8");
    assert_eq!(
        loaded
            .reload_from_contents("resilience.toml", same)
            .unwrap()
            .to_string(),
        "no changes"
    );
}

#[cfg(feature = "redis")]
#[test]
fn cluster_settings_need_a_restart() {
    const FLEET: &str = "[ratelimiter.instances.partner]\nlimit-for-period = 10\nlimit-refresh-period = \"1s\"\ntimeout-duration = \"0ms\"\ncluster-url = \"redis://127.0.0.1:6399/0\"\ncluster-lease = 2\n";
    let loaded = load(FLEET);
    let err = loaded
        .reload_from_contents(
            "resilience.toml",
            FLEET.replace("cluster-lease = 2", "cluster-lease = 3"),
        )
        .unwrap_err();
    let shown: Vec<String> = err.problems().iter().map(|p| p.to_string()).collect();
    assert_eq!(
        shown,
        [
            "resilience.toml: ratelimiter.instances.partner.cluster-lease = 3: cannot change while the service runs; restart to apply"
        ]
    );
    // the same fleet settings, a new timeout: applies
    let report = loaded
        .reload_from_contents("resilience.toml", FLEET.replace("\"0ms\"", "\"5ms\""))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        lines(&report),
        ["ratelimiter partner: timeout-duration 0ms -> 5ms"]
    );
    // a limit shared by a fleet is the fleet's
    let err = loaded
        .reload_from_contents(
            "resilience.toml",
            FLEET
                .replace("\"0ms\"", "\"5ms\"")
                .replace("limit-for-period = 10", "limit-for-period = 20"),
        )
        .unwrap_err();
    assert_eq!(
        err.problems()[0].to_string(),
        "resilience.toml: ratelimiter.instances.partner.limit-for-period = 20: cannot change while the service runs; restart to apply"
    );
    let err = loaded
        .reload_from_contents(
            "resilience.toml",
            "[ratelimiter.instances.partner]\nlimit-for-period = 10\nlimit-refresh-period = \"1s\"\n",
        )
        .unwrap_err();
    assert!(
        err.problems()
            .iter()
            .any(|p| p.key() == "ratelimiter.instances.partner.cluster-url"
                && p.message()
                    .ends_with("cannot change while the service runs; restart to apply")),
        "{err}"
    );
}

const SHADOWED: &str = r#"
[ratelimiter.instances.a]
shadow = true
[bulkhead.instances.a]
shadow = true
[thread-pool-bulkhead.instances.a]
shadow = true
[timelimiter.instances.a]
shadow = true
[retry.configs.default]
shadow = true
[retry.instances.a]
max-attempts = 2
[circuitbreaker.instances.a]
initial-state = "METRICS_ONLY"
"#;

#[test]
fn shadow_and_initial_state_are_bound() {
    let loaded = load(SHADOWED);
    let r = loaded.registries();
    assert!(r.rate_limiters().rate_limiter("a").config().shadow());
    assert!(r.bulkheads().bulkhead("a").config().shadow());
    assert!(
        r.thread_pool_bulkheads()
            .thread_pool_bulkhead("a")
            .config()
            .shadow()
    );
    assert!(r.time_limiters().time_limiter("a").config().shadow());
    assert!(
        r.retries().retry("a").config().shadow(),
        "inherited from configs.default"
    );
    let cb = r.circuit_breakers().circuit_breaker("a");
    assert_eq!(cb.config().initial_state(), State::MetricsOnly);
    assert_eq!(cb.state(), State::MetricsOnly);
    let report = loaded.report();
    let setting = |aspect, key| {
        report
            .instance(aspect, "a")
            .unwrap()
            .setting(key)
            .unwrap()
            .to_owned()
    };
    use resil_config::Aspect;
    assert_eq!(setting(Aspect::Bulkhead, "shadow"), "true");
    assert_eq!(
        setting(Aspect::CircuitBreaker, "initial-state"),
        "METRICS_ONLY"
    );
    // spelled as Spring spells it, from the environment
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", "[bulkhead.instances.a]\n[circuitbreaker.instances.a]\ninitialState = \"forced_open\"\n")
        .env_vars([("RESIL_BULKHEAD__INSTANCES__A__SHADOW", "true")])
        .declarations([])
        .load()
        .unwrap();
    assert!(
        loaded
            .registries()
            .bulkheads()
            .bulkhead("a")
            .config()
            .shadow()
    );
    let cb = loaded.registries().circuit_breakers().circuit_breaker("a");
    assert_eq!(cb.config().initial_state(), State::ForcedOpen);
}

#[test]
fn shadow_and_initial_state_are_checked() {
    let problems = |text: &str| match Resilience::builder()
        .file_contents("resilience.toml", text)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
    {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e
            .problems()
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>(),
    };
    assert_eq!(
        problems("[circuitbreaker.instances.a]\ninitial-state = \"HALF_OPEN\"\n"),
        [
            "resilience.toml: circuitbreaker.instances.a.initial-state = \"HALF_OPEN\": a circuit breaker cannot start in HALF_OPEN: OPEN and HALF_OPEN are reached from the calls it records; expected \"CLOSED\", \"DISABLED\", \"METRICS_ONLY\" or \"FORCED_OPEN\""
        ]
    );
    assert_eq!(
        problems("[circuitbreaker.instances.a]\ninitial-state = 1\n"),
        [
            "resilience.toml: circuitbreaker.instances.a.initial-state = 1: expected \"CLOSED\", \"DISABLED\", \"METRICS_ONLY\" or \"FORCED_OPEN\""
        ]
    );
    assert_eq!(
        problems("[timelimiter.configs.default]\nshadow = \"yes\"\n"),
        ["resilience.toml: timelimiter.configs.default.shadow = \"yes\": expected true or false"]
    );
    // a key the breaker does not have
    let p = problems("[circuitbreaker.instances.a]\nshadow = true\n");
    assert!(p[0].contains("unknown circuit_breaker setting"), "{p:?}");
}

#[test]
fn a_reload_switches_shadow_on_and_off() {
    let loaded = load("[bulkhead.instances.a]\nmax-concurrent-calls = 1\n");
    let bulkhead = loaded.registries().bulkheads().bulkhead("a");
    let report = loaded
        .reload_from_contents(
            "resilience.toml",
            "[bulkhead.instances.a]\nmax-concurrent-calls = 1\nshadow = true\n",
        )
        .unwrap();
    assert_eq!(lines(&report), ["bulkhead a: shadow false -> true"]);
    assert!(bulkhead.config().shadow());
    let report = loaded
        .reload_from_contents(
            "resilience.toml",
            "[bulkhead.instances.a]\nmax-concurrent-calls = 1\n",
        )
        .unwrap();
    assert_eq!(lines(&report), ["bulkhead a: shadow true -> false"]);
    assert!(!bulkhead.config().shadow());
}

#[test]
fn keyed_bounds_and_health_keys_are_part_of_the_difference() {
    let loaded = load("[circuitbreaker.instances.pay]\nmax-keys = 3\n");
    let report = loaded
        .reload_from_contents(
            "resilience.toml",
            "[circuitbreaker.instances.pay]\nmax-keys = 5\nregister-health-indicator = true\n",
        )
        .unwrap();
    assert_eq!(
        lines(&report),
        [
            "circuitbreaker pay: max-keys 3 -> 5",
            "circuitbreaker pay: register-health-indicator false -> true",
        ]
    );
    let now = loaded.current_report();
    let pay = now
        .instance(resil_config::Aspect::CircuitBreaker, "pay")
        .unwrap();
    assert_eq!(pay.extras().max_keys, Some(5));
}

#[test]
fn strict_reloads_refuse_warnings_as_strict_loads_do() {
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", "")
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .strict(true)
        .load()
        .unwrap();
    // a Spring-only key: a warning, an error in strict mode
    let err = loaded
        .reload_from_contents(
            "resilience.toml",
            "[circuitbreaker]\ncircuit-breaker-aspect-order = 1\n",
        )
        .unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    let not_strict = load("");
    let report = not_strict
        .reload_from_contents(
            "resilience.toml",
            "[circuitbreaker]\ncircuit-breaker-aspect-order = 1\n",
        )
        .unwrap();
    assert_eq!(report.warnings().len(), 1);
}

#[test]
fn what_a_running_instance_cannot_take_needs_a_restart() {
    // a rate limiter counts its cycles in its refresh period since it started
    const LIMITER: &str =
        "[ratelimiter.instances.search]\nlimit-for-period = 10\nlimit-refresh-period = \"1s\"\n";
    let loaded = load(LIMITER);
    let limiter = loaded.registries().rate_limiters().rate_limiter("search");
    let edited = LIMITER
        .replace("\"1s\"", "\"2s\"")
        .replace("limit-for-period = 10", "limit-for-period = 20");
    let err = loaded
        .reload_from_contents("resilience.toml", edited)
        .unwrap_err();
    let shown: Vec<String> = err.problems().iter().map(|p| p.to_string()).collect();
    assert_eq!(
        shown,
        [
            "resilience.toml: ratelimiter.instances.search.limit-refresh-period = \"2s\": cannot change while the service runs; restart to apply"
        ]
    );
    assert_eq!(limiter.config().limit_for_period(), 10, "all or nothing");
    // the limit alone applies, from the next cycle
    let report = loaded
        .reload_from_contents(
            "resilience.toml",
            LIMITER.replace("limit-for-period = 10", "limit-for-period = 20"),
        )
        .unwrap();
    assert_eq!(
        lines(&report),
        ["ratelimiter search: limit-for-period 10 -> 20"]
    );
    assert_eq!(limiter.config().limit_for_period(), 20);
}
