//! The adaptive bulkhead's keys: bound with their defaults, printed by the
//! report, checked at start-up (key path and value), and reloaded: a reload
//! switches algorithm and bounds while permits are in use, and a refused
//! reload keeps the limit the bulkhead had reached.

use std::time::Duration;

use resil_config::{Aspect, Declaration, InitError, Resilience};
use resil_core::bulkhead::{Bulkhead, LimitAlgorithm, Sample};
use resil_core::clock::ManualClock;

fn load(text: &str, clock: &ManualClock) -> Resilience {
    try_load(text, clock, []).unwrap_or_else(|e| panic!("{e}"))
}

fn try_load<const N: usize>(
    text: &str,
    clock: &ManualClock,
    declarations: [&'static Declaration; N],
) -> Result<Resilience, InitError> {
    Resilience::builder()
        .file_contents("resilience.toml", text)
        .env_vars(Vec::<(String, String)>::new())
        .declarations(declarations)
        .clock(clock.clone())
        .load()
}

fn problems(text: &str) -> Vec<String> {
    match try_load(text, &ManualClock::new(), []) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.problems().iter().map(|p| p.to_string()).collect(),
    }
}

fn limit(b: &Bulkhead) -> u32 {
    b.metrics().max_allowed_concurrent_calls()
}

#[test]
fn every_key_is_bound_and_the_report_prints_the_adaptive_ones() {
    let text = r#"
[bulkhead.configs.default]
limit-algorithm = "vegas"
alpha = 2
beta = 5
probe-multiplier = 20

[bulkhead.instances.inventory-query]
limitAlgorithm = "GRADIENT2"
min-concurrent-calls = 4
initial-concurrent-calls = 8
max-concurrent-calls = 40
limit-drop-errors = ["Overloaded", "Timeout"]
rtt-tolerance = 2.0
smoothing = 0.5
long-window = 100
queue-size = 3
min-window-time = "200ms"
max-window-time = "2s"
window-size = 20
min-rtt-threshold = "1ms"
backoff-ratio = 0.75
drop-timeout = "800ms"

[bulkhead.instances.fixed]
max-concurrent-calls = 3
limit-algorithm = "fixed"
"#;
    let loaded = load(text, &ManualClock::new());
    let b = loaded.registries().bulkheads().bulkhead("inventory-query");
    let c = b.config();
    assert_eq!(c.limit_algorithm(), LimitAlgorithm::Gradient2);
    assert_eq!(
        (
            c.min_concurrent_calls(),
            c.initial_concurrent_calls(),
            c.max_concurrent_calls()
        ),
        (4, 8, 40)
    );
    assert_eq!(
        limit(&b),
        8,
        "an adaptive bulkhead starts at its initial limit"
    );
    assert_eq!(&*c.limit_drop_errors()[0], "Overloaded");
    assert_eq!(
        (c.rtt_tolerance(), c.smoothing(), c.long_window()),
        (2.0, 0.5, 100)
    );
    assert_eq!(c.queue_size(), Some(3));
    assert_eq!(
        (c.alpha(), c.beta(), c.probe_multiplier()),
        (Some(2), Some(5), 20)
    );
    assert_eq!(c.threshold(), None);
    assert_eq!(
        (c.min_window_time(), c.max_window_time(), c.window_size()),
        (Duration::from_millis(200), Duration::from_secs(2), 20)
    );
    assert_eq!(c.min_rtt_threshold(), Duration::from_millis(1));
    assert_eq!(
        (c.backoff_ratio(), c.drop_timeout()),
        (0.75, Duration::from_millis(800))
    );

    let report = loaded.report();
    let setting = |name, key| {
        report
            .instance(Aspect::Bulkhead, name)
            .unwrap()
            .setting(key)
            .map(str::to_owned)
    };
    assert_eq!(
        setting("inventory-query", "limit-algorithm").as_deref(),
        Some("gradient2")
    );
    assert_eq!(
        setting("inventory-query", "threshold").as_deref(),
        Some("log10(limit)")
    );
    assert_eq!(
        setting("inventory-query", "limit-drop-errors").as_deref(),
        Some("[\"Overloaded\", \"Timeout\"]")
    );
    // a fixed bulkhead's report names its algorithm, not the settings it ignores
    assert_eq!(
        setting("fixed", "limit-algorithm").as_deref(),
        Some("fixed")
    );
    assert_eq!(setting("fixed", "backoff-ratio"), None);
    let fixed = loaded.registries().bulkheads().bulkhead("fixed");
    assert_eq!(limit(&fixed), 3);
}

#[test]
fn mistakes_are_start_up_errors_with_the_key_path_and_the_value() {
    assert_eq!(
        problems(
            "[bulkhead.instances.a]\nlimit-algorithm = \"aimd\"\nmax-concurrent-calls = 10\nmin-concurrent-calls = 20\ninitial-concurrent-calls = 30\n"
        ),
        [
            "resilience.toml: bulkhead.instances.a.initial-concurrent-calls = 30: must be between min-concurrent-calls and max-concurrent-calls (max-concurrent-calls is 10 at bulkhead.instances.a.max-concurrent-calls) (min-concurrent-calls is 20 at bulkhead.instances.a.min-concurrent-calls)",
            "resilience.toml: bulkhead.instances.a.min-concurrent-calls = 20: must be at most max-concurrent-calls, the ceiling of the limit (max-concurrent-calls is 10 at bulkhead.instances.a.max-concurrent-calls)",
        ]
    );
    assert_eq!(
        problems("[bulkhead.instances.a]\nlimit-algorithm = \"tcp\"\n"),
        [
            "resilience.toml: bulkhead.instances.a.limit-algorithm = \"tcp\": expected \"fixed\", \"aimd\", \"gradient2\" or \"vegas\""
        ]
    );
    assert_eq!(
        problems(
            "[bulkhead.instances.a]\nlimit-algorithm = \"gradient2\"\nsmoothing = 0\nrtt-tolerance = 0.9\n"
        ),
        [
            "resilience.toml: bulkhead.instances.a.rtt-tolerance = 0.9: must be at least 1 (how many times the long-term latency is still no queue)",
            "resilience.toml: bulkhead.instances.a.smoothing = 0: must be above 0 and at most 1",
        ]
    );
    assert_eq!(
        problems("[bulkhead.instances.a]\nlimit-algorithm = \"aimd\"\nmax-concurrent-calls = 0\n"),
        [
            "resilience.toml: bulkhead.instances.a.min-concurrent-calls = 1: must be at most max-concurrent-calls, the ceiling of the limit (max-concurrent-calls is 0 at bulkhead.instances.a.max-concurrent-calls) (this key is not set, so the library default applies)"
        ]
    );
}

static QUERY: Declaration = Declaration {
    aspect: Aspect::Bulkhead,
    name: "inventory-query",
    module: "inventory",
    function: "query",
    file: "src/inventory.rs",
    line: 12,
    fallback: None,
    error_type: "InventoryError",
    error_kinds: &["ConnectionRefused", "Overloaded"],
    detachable: false,
};

#[test]
fn drop_errors_must_be_kinds_of_the_declared_error_type() {
    let text = "[bulkhead.instances.inventory-query]\nlimit-algorithm = \"aimd\"\nlimit-drop-errors = [\"Overloaded\", \"Overload\", \"Timeout\"]\n";
    let err = try_load(text, &ManualClock::new(), [&QUERY]).unwrap_err();
    let problems: Vec<String> = err.problems().iter().map(|p| p.to_string()).collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with(
            "resilience.toml: bulkhead.instances.inventory-query.limit-drop-errors = "
        ) && problems[0].contains("`Overload` is not an error kind of `InventoryError`")
            && problems[0].contains("did you mean `Overloaded`?"),
        "{problems:?}"
    );
}

/// Calls that each take 60 ms and end with `sample`, as many at once as
/// the limit allows, for a second of the manual clock.
fn a_second_of(b: &Bulkhead, clock: &ManualClock, sample: Sample) {
    for _ in 0..17 {
        let permits: Vec<_> = (0..limit(b))
            .map(|_| b.try_acquire_permission().unwrap())
            .collect();
        clock.advance(Duration::from_millis(60));
        for p in permits {
            p.finish_with(sample);
        }
    }
}

const AIMD: &str = r#"
[bulkhead.instances.a]
limit-algorithm = "aimd"
initial-concurrent-calls = 20
max-concurrent-calls = 40
min-window-time = "100ms"
max-window-time = "100ms"
"#;

#[test]
fn a_refused_reload_keeps_the_limit_reached() {
    let clock = ManualClock::new();
    let loaded = load(AIMD, &clock);
    let b = loaded.registries().bulkheads().bulkhead("a");
    a_second_of(&b, &clock, Sample::Dropped);
    let reached = limit(&b);
    assert!(reached < 20, "{reached}");
    let bad = AIMD.replace(
        "max-concurrent-calls = 40",
        "max-concurrent-calls = 40\nmin-concurrent-calls = 50",
    );
    let err = loaded
        .reload_from_contents("resilience.toml", bad)
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "bulkhead.instances.a.min-concurrent-calls = 50: must be at most max-concurrent-calls"
        ),
        "{err}"
    );
    assert_eq!(limit(&b), reached);
    assert_eq!(b.config().min_concurrent_calls(), 1);
    // and it keeps adapting
    a_second_of(&b, &clock, Sample::Dropped);
    assert!(limit(&b) < reached);
}

#[test]
fn a_reload_switches_algorithm_and_bounds_keeping_the_permits_in_use() {
    let clock = ManualClock::new();
    let loaded = load(
        "[bulkhead.instances.a]\nmax-concurrent-calls = 10\n",
        &clock,
    );
    let b = loaded.registries().bulkheads().bulkhead("a");
    let held: Vec<_> = (0..6)
        .map(|_| b.try_acquire_permission().unwrap())
        .collect();

    let report = loaded
        .reload_from_contents("resilience.toml", AIMD)
        .unwrap();
    let lines: Vec<String> = report.to_string().lines().map(str::to_owned).collect();
    assert!(
        lines.contains(&"bulkhead a: limit-algorithm fixed -> aimd".to_owned()),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"bulkhead a: max-concurrent-calls 10 -> 40".to_owned()),
        "{lines:?}"
    );
    assert_eq!(limit(&b), 20);
    assert_eq!(b.metrics().available_concurrent_calls(), 14);

    // another algorithm and a lower ceiling: from the limit reached, within the bounds
    let report = loaded
        .reload_from_contents(
            "resilience.toml",
            AIMD.replace("\"aimd\"", "\"gradient2\"")
                .replace(
                    "initial-concurrent-calls = 20",
                    "initial-concurrent-calls = 4",
                )
                .replace("max-concurrent-calls = 40", "max-concurrent-calls = 4"),
        )
        .unwrap();
    assert!(
        report
            .to_string()
            .contains("bulkhead a: limit-algorithm aimd -> gradient2"),
        "{report}"
    );
    assert_eq!(limit(&b), 4);
    assert_eq!(
        b.metrics().available_concurrent_calls(),
        0,
        "six calls in flight"
    );
    drop(held);
    assert_eq!(b.metrics().available_concurrent_calls(), 4);

    // back to a fixed limit
    loaded
        .reload_from_contents(
            "resilience.toml",
            "[bulkhead.instances.a]\nmax-concurrent-calls = 10\n",
        )
        .unwrap();
    assert_eq!(
        (limit(&b), b.metrics().available_concurrent_calls()),
        (10, 10)
    );
}

#[test]
fn the_environment_sets_the_algorithm_and_its_settings() {
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", "[bulkhead.instances.inventory-query]\n")
        .env_vars([
            (
                "RESIL_BULKHEAD__INSTANCES__INVENTORY_QUERY__LIMIT_ALGORITHM",
                "aimd",
            ),
            (
                "RESIL_BULKHEAD__INSTANCES__INVENTORY_QUERY__BACKOFF_RATIO",
                "0.8",
            ),
            (
                "RESIL_BULKHEAD__INSTANCES__INVENTORY_QUERY__DROP_TIMEOUT",
                "2s",
            ),
        ])
        .declarations([])
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let c = loaded
        .registries()
        .bulkheads()
        .bulkhead("inventory-query")
        .config();
    assert_eq!(c.limit_algorithm(), LimitAlgorithm::Aimd);
    assert_eq!(
        (c.backoff_ratio(), c.drop_timeout()),
        (0.8, Duration::from_secs(2))
    );
}
