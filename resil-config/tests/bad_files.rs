//! The corpus of bad files: each file in `tests/bad/` holds one mistake and
//! says in its first lines what the error must name:
//!
//! ```text
//! # key: circuitbreaker.instances.inventory-query.failure-rate-threshold
//! # value: 150
//! # expect: must be in (0, 100]
//! ```
//!
//! (`# key:` empty and `# line: L:C` for a mistake of the whole file.)

use std::path::{Path, PathBuf};

use resil_config::{ConfigProblem, InitError, Resilience};

struct Expected {
    key: String,
    value: Option<String>,
    expect: String,
    line_col: Option<(usize, usize)>,
}

fn header(text: &str) -> Expected {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("# {name}:")))
            .map(|v| v.trim().to_owned())
    };
    Expected {
        key: field("key").expect("a `# key:` line"),
        value: field("value"),
        expect: field("expect").expect("an `# expect:` line"),
        line_col: field("line").map(|lc| {
            let (l, c) = lc.split_once(':').expect("line:column");
            (l.parse().unwrap(), c.parse().unwrap())
        }),
    }
}

fn load(path: &Path) -> Result<Resilience, InitError> {
    Resilience::builder()
        .file(path)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
}

fn corpus() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("tests/bad")
        .expect("run from the crate directory")
        .map(|e| Path::new("tests/bad").join(e.unwrap().file_name()))
        .collect();
    files.sort();
    files
}

#[test]
fn the_corpus_has_forty_mistakes_or_more() {
    assert!(corpus().len() >= 40, "{}", corpus().len());
}

#[test]
fn every_bad_file_is_refused_naming_file_key_and_value() {
    let mut failures = Vec::new();
    for path in corpus() {
        let text = std::fs::read_to_string(&path).unwrap();
        let want = header(&text);
        let problems: Vec<ConfigProblem> = match load(&path) {
            Ok(_) => {
                failures.push(format!("{}: accepted", path.display()));
                continue;
            }
            Err(e) => {
                // the whole error prints every problem, with the file's name
                let shown = e.to_string();
                assert!(shown.contains(&path.display().to_string()), "{shown}");
                e.problems().to_vec()
            }
        };
        let one = problems.len() == 1;
        let p = &problems[0];
        let ok = one
            && p.source() == path.display().to_string()
            && p.key() == want.key
            && (want.key.is_empty() || p.value() == want.value.as_deref())
            && p.message().contains(&want.expect)
            && (want.line_col.is_none() || p.line_col() == want.line_col)
            && p.to_string().contains(&want.expect);
        if !ok {
            failures.push(format!(
                "{}: expected one problem at `{}` = {:?} containing {:?} (line {:?}), got:\n    {}",
                path.display(),
                want.key,
                want.value,
                want.expect,
                want.line_col,
                problems
                    .iter()
                    .map(|p| format!(
                        "{p} [key {:?}, value {:?}, at {:?}]",
                        p.key(),
                        p.value(),
                        p.line_col()
                    ))
                    .collect::<Vec<_>>()
                    .join("\n    ")
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn a_missing_named_file_is_an_error() {
    let err = load(Path::new("tests/no-such-file.toml")).unwrap_err();
    let p = &err.problems()[0];
    assert_eq!(p.source(), "tests/no-such-file.toml");
    assert!(p.message().starts_with("cannot read the file"), "{p}");

    let err = Resilience::builder()
        .env_vars([("RESIL_CONFIG", "tests/elsewhere.yml")])
        .declarations([])
        .load()
        .unwrap_err();
    assert_eq!(err.problems()[0].source(), "tests/elsewhere.yml");
}

#[test]
fn a_directory_or_binary_file_is_an_error() {
    let err = load(Path::new("tests/bad")).unwrap_err();
    assert!(
        err.problems()[0].message().contains("cannot read the file"),
        "{err}"
    );

    let path =
        std::env::temp_dir().join(format!("resil-config-binary-{}.toml", std::process::id()));
    std::fs::write(&path, [0x66, 0x6f, 0xff, 0xfe]).unwrap();
    let err = load(&path).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert!(err.problems()[0].message().contains("not UTF-8"), "{err}");
}

#[test]
fn no_default_file_means_defaults() {
    // the crate directory has no resilience.toml
    let loaded = Resilience::builder()
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
        .unwrap();
    assert_eq!(loaded.report().file(), None);
    assert!(loaded.report().instances().is_empty());
}

#[test]
fn many_mistakes_are_reported_at_once_in_file_order_of_keys() {
    let toml = r#"
[circuitbreaker.instances.a]
failure-rate-threshold = 150
sliding-window-size = 0
slidng = 1
[bulkhead.instances.b]
max-wait-duration = "forever"
[retry.instances.c]
base-config = "nope"
"#;
    let err = Resilience::builder()
        .file_contents("resilience.toml", toml)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
        .unwrap_err();
    let keys: Vec<&str> = err.problems().iter().map(ConfigProblem::key).collect();
    assert_eq!(
        keys,
        [
            "bulkhead.instances.b.max-wait-duration",
            "circuitbreaker.instances.a.failure-rate-threshold",
            "circuitbreaker.instances.a.sliding-window-size",
            "circuitbreaker.instances.a.slidng",
            "retry.instances.c.base-config",
        ],
        "{err}"
    );
    let shown = err.to_string();
    assert!(
        shown.starts_with("invalid resil configuration (5 problems):\n  resilience.toml: "),
        "{shown}"
    );
}
