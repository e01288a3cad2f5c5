//! No input makes loading panic: random text, random trees built from the
//! schema's own words, mutations of the example inventory configuration
//! (TOML and YAML), and random environment variables. Every outcome is a configuration or an
//! error that lists at least one problem, and both print.

use proptest::prelude::*;
use resil_config::{InitError, Resilience};

fn load(name: &str, text: &str, vars: Vec<(String, String)>) {
    let result = Resilience::builder()
        .file_contents(name, text)
        .env_vars(vars)
        .declarations([])
        .load();
    match result {
        Ok(loaded) => {
            let _ = loaded.report().to_string();
        }
        Err(InitError::Invalid(problems)) => {
            assert!(!problems.is_empty());
            for p in &problems {
                let _ = p.to_string();
            }
        }
        Err(other) => panic!("load() never touches the global registries: {other}"),
    }
}

const INVENTORY_TOML: &str = include_str!("data/inventory.toml");
const INVENTORY_YAML: &str = include_str!("data/application.yml");

const MODULES: &[&str] = &[
    "circuitbreaker",
    "retry",
    "bulkhead",
    "thread-pool-bulkhead",
    "ratelimiter",
    "timelimiter",
    "circuitBreaker",
    "retyr",
];
const SECTIONS: &[&str] = &[
    "configs",
    "instances",
    "backends",
    "limiters",
    "tags",
    "circuit-breaker-aspect-order",
    "instance",
];
const NAMES: &[&str] = &[
    "default",
    "a",
    "b",
    "inventory-query",
    "InventoryCommand",
    "q2",
    "",
];
const KEYS: &[&str] = &[
    "base-config",
    "failure-rate-threshold",
    "slow-call-rate-threshold",
    "slow-call-duration-threshold",
    "wait-duration-in-open-state",
    "max-wait-duration-in-half-open-state",
    "sliding-window-type",
    "sliding-window-size",
    "minimum-number-of-calls",
    "permitted-number-of-calls-in-half-open-state",
    "automatic-transition-from-open-to-half-open-enabled",
    "record-errors",
    "record-exceptions",
    "ignore-errors",
    "retry-exceptions",
    "enable-exponential-backoff",
    "exponential-backoff-multiplier",
    "exponential-max-wait-duration-in-open-state",
    "exponential-max-wait-duration",
    "enable-randomized-wait",
    "randomized-wait-factor",
    "event-consumer-buffer-size",
    "max-attempts",
    "wait-duration",
    "fail-after-max-attempts",
    "max-concurrent-calls",
    "max-wait-duration",
    "fair-call-handling-enabled",
    "max-thread-pool-size",
    "core-thread-pool-size",
    "queue-capacity",
    "keep-alive-duration",
    "context-propagators",
    "limit-for-period",
    "limit-refresh-period",
    "timeout-duration",
    "cancel-running-future",
    "record-failure-predicate",
    "writable-stack-trace-enabled",
    "slidingWindowSize",
    "colour",
];
const WORDS: &[&str] = &[
    "500ms",
    "10s",
    "1m 30s",
    "PT0.5S",
    "P1DT2H",
    "PT",
    "0",
    "-1",
    "1.5s",
    "5 parsecs",
    "COUNT_BASED",
    "time-based",
    "true",
    "FALSE",
    "a",
    "b",
    "default",
    "com.example.X",
    "Outer$Inner",
    "",
    "µs",
    "99999999999999999999999999",
    "NaN",
    "1e400",
    "A, B,,C",
];

/// A TOML value: numbers at the edges, the words above, lists, inline tables.
fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        (-3i64..200).prop_map(|i| i.to_string()),
        prop_oneof![
            Just("nan".to_owned()),
            Just("inf".to_owned()),
            Just("-0.0".to_owned()),
            Just("1e300".to_owned()),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| format!("{f:?}")),
        ],
        any::<bool>().prop_map(|b| b.to_string()),
        proptest::sample::select(WORDS).prop_map(toml_string),
        ".{0,12}".prop_map(|s| toml_string(&s)),
    ];
    leaf.prop_recursive(3, 12, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4)
                .prop_map(|v| format!("[{}]", v.join(", "))),
            proptest::collection::vec((proptest::sample::select(KEYS), inner), 0..3).prop_map(
                |kv| {
                    let items: Vec<String> =
                        kv.iter().map(|(k, v)| format!("{k:?} = {v}")).collect();
                    format!("{{ {} }}", items.join(", "))
                }
            ),
        ]
    })
}

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A file of `[module.section.name]` tables with keys from the schema.
fn document() -> impl Strategy<Value = String> {
    let table = (
        proptest::sample::select(MODULES),
        proptest::sample::select(SECTIONS),
        proptest::sample::select(NAMES),
        proptest::collection::vec((proptest::sample::select(KEYS), value()), 0..6),
    );
    proptest::collection::vec(table, 0..8).prop_map(|tables| {
        let mut out = String::new();
        for (i, (module, section, name, keys)) in tables.iter().enumerate() {
            // duplicate table headers are TOML errors; keep most files valid TOML
            out.push_str(&format!(
                "[{module}.{section}.{:?}]\n",
                format!("{name}{i}")
            ));
            if i % 3 == 0 {
                out.push_str(&format!("base-config = {:?}\n", format!("{name}{}", i / 2)));
            }
            let mut seen = std::collections::HashSet::new();
            for (k, v) in keys {
                if seen.insert(*k) {
                    out.push_str(&format!("{k} = {v}\n"));
                }
            }
        }
        out
    })
}

#[derive(Debug, Clone)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, String),
    DuplicateLine(usize),
    SwapLines(usize, usize),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        (any::<usize>(), 1usize..20).prop_map(|(a, n)| Edit::Delete(a, n)),
        (any::<usize>(), "[\\[\\]{}=\".,:\\- a-z0-9\n#]{1,6}")
            .prop_map(|(a, s)| Edit::Insert(a, s)),
        any::<usize>().prop_map(Edit::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
    ];
    proptest::collection::vec(edit, 1..5)
}

fn mutate(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for e in edits {
        match e {
            Edit::Delete(at, n) => {
                if !chars.is_empty() {
                    let at = at % chars.len();
                    let end = (at + n).min(chars.len());
                    chars.drain(at..end);
                }
            }
            Edit::Insert(at, s) => {
                let at = at % (chars.len() + 1);
                chars.splice(at..at, s.chars());
            }
            Edit::DuplicateLine(i) | Edit::SwapLines(i, _) => {
                let s: String = chars.iter().collect();
                let mut lines: Vec<&str> = s.lines().collect();
                if lines.is_empty() {
                    continue;
                }
                let a = i % lines.len();
                match e {
                    Edit::SwapLines(_, j) => {
                        let b = j % lines.len();
                        lines.swap(a, b);
                    }
                    _ => lines.insert(a, lines[a]),
                }
                chars = lines.join("\n").chars().collect();
            }
        }
    }
    chars.into_iter().collect()
}

/// An environment variable under the prefix, from the schema's words.
fn var() -> impl Strategy<Value = (String, String)> {
    let segment = prop_oneof![
        proptest::sample::select(MODULES).prop_map(|s| s.to_uppercase().replace('-', "_")),
        proptest::sample::select(SECTIONS).prop_map(|s| s.to_uppercase()),
        proptest::sample::select(NAMES).prop_map(|s| s.to_owned()),
        proptest::sample::select(KEYS).prop_map(|s| s.to_uppercase().replace('-', "_")),
        "[A-Za-z0-9_\\-]{0,6}",
    ];
    (
        proptest::collection::vec(segment, 0..6),
        prop_oneof![
            proptest::sample::select(WORDS).prop_map(str::to_owned),
            ".{0,8}"
        ],
    )
        .prop_map(|(segments, value)| (format!("RESIL_{}", segments.join("__")), value))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_text_as_toml(text in "\\PC{0,200}") {
        load("resilience.toml", &text, Vec::new());
    }

    #[test]
    fn random_text_as_yaml(text in "\\PC{0,200}") {
        load("application.yml", &text, Vec::new());
    }

    #[test]
    fn random_trees_of_schema_words(text in document()) {
        load("resilience.toml", &text, Vec::new());
    }

    #[test]
    fn mutations_of_the_inventory_toml(edits in edits()) {
        load("resilience.toml", &mutate(INVENTORY_TOML, &edits), Vec::new());
    }

    #[test]
    fn mutations_of_the_inventory_yaml(edits in edits()) {
        load("application.yml", &mutate(INVENTORY_YAML, &edits), Vec::new());
    }

    #[test]
    fn random_environment_over_the_inventory_config(vars in proptest::collection::vec(var(), 0..6)) {
        load("resilience.toml", INVENTORY_TOML, vars);
    }
}

#[test]
fn deep_toml_arrays() {
    let deep_toml = format!("a = {}{}", "[".repeat(100_000), "]".repeat(100_000));
    load("resilience.toml", &deep_toml, Vec::new());
}

#[test]
fn deep_toml_inline_tables() {
    let deep_inline = format!("a = {}1{}", "{ b = ".repeat(50_000), " }".repeat(50_000));
    load("resilience.toml", &deep_inline, Vec::new());
}

#[test]
fn deep_yaml_flow() {
    let deep_yaml = format!("a: {}{}", "[".repeat(100_000), "]".repeat(100_000));
    load("application.yml", &deep_yaml, Vec::new());
}

#[test]
fn deep_yaml_blocks() {
    let mut block = String::new();
    for depth in 0..1000 {
        block.push_str(&" ".repeat(depth));
        block.push_str("k:\n");
    }
    let err = Resilience::builder()
        .file_contents("application.yml", block)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
        .unwrap_err();
    assert!(
        err.to_string().contains("nests deeper than 64 levels"),
        "{err}"
    );
}

#[test]
fn deep_yaml_compact_sequences_and_alias_bombs() {
    let compact = format!("a: {}1", "- ".repeat(200_000));
    load("application.yml", &compact, Vec::new());
    let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 0..12 {
        let prev = if i == 0 {
            "a".to_owned()
        } else {
            format!("l{}", i - 1)
        };
        bomb.push_str(&format!("l{i}: &l{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
    }
    let err = Resilience::builder()
        .file_contents("application.yml", bomb)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("expands to more than"), "{err}");
}

#[test]
fn deep_toml_dotted_keys() {
    let header = format!("[{}]\n", vec!["k"; 100_000].join("."));
    load("resilience.toml", &header, Vec::new());
    let dotted = format!("{} = 1", vec!["k"; 100_000].join("."));
    load("resilience.toml", &dotted, Vec::new());
}
