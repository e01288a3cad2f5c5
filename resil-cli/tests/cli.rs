//! The `resil` command as a process: exit statuses and output on good and bad
//! files, the same problems `init()` reports.

use std::path::PathBuf;
use std::process::{Command, Output};

fn resil(args: &[&str], dir: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_resil"))
        .args(args)
        .current_dir(dir)
        .env_remove("RESIL_CONFIG")
        .output()
        .expect("the resil binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh directory with `resilience.toml` holding `toml`.
fn dir_with(name: &str, toml: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("resil-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("resilience.toml"), toml).unwrap();
    dir
}

const GOOD: &str = r#"
[circuitbreaker.configs.default]
sliding-window-size = 20

[circuitbreaker.configs.base]
failure-rate-threshold = 40

[circuitbreaker.instances.orders]
base-config = "base"
wait-duration-in-open-state = "10s"

[retry.instances.orders]
max-attempts = 2
retry-errors = ["ConnectionRefused"]

[timelimiter.instances.orders]
timeout-duration = "2s"
"#;

#[test]
fn check_accepts_a_good_file_with_exit_status_0() {
    let dir = dir_with("good", GOOD);
    let out = resil(&["check"], &dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "ok: resilience.toml (3 instances, 0 warnings)\n"
    );
    // No protected function is linked into the command: that is no warning.
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn check_lists_every_problem_with_file_key_and_value_and_exits_1() {
    let dir = dir_with(
        "bad",
        "[circuitbreaker.instances.orders]\nfailure-rate-threshold = 150\nsliding-window-sise = 3\n",
    );
    let out = resil(&["check", "resilience.toml"], &dir);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("2 problems"), "{err}");
    assert!(
        err.contains("resilience.toml: circuitbreaker.instances.orders.failure-rate-threshold = 150: must be in (0, 100]"),
        "{err}"
    );
    assert!(err.contains("did you mean `sliding-window-size`?"), "{err}");
    assert_eq!(text(&out.stdout), "");
}

#[test]
fn check_reports_exactly_what_init_reports() {
    let toml = "[retry.instances.orders]\nmax-attempts = 0\nwait-duration = \"soon\"\n";
    let dir = dir_with("same", toml);
    let out = resil(&["check"], &dir);
    let from_init = resil_config::Resilience::builder()
        .file_contents("resilience.toml", toml)
        .env_vars(Vec::<(String, String)>::new())
        .load()
        .unwrap_err()
        .to_string();
    assert_eq!(text(&out.stderr).trim_end(), from_init.trim_end());
}

#[test]
fn check_names_a_missing_file_and_strict_fails_on_warnings() {
    let dir = dir_with("missing", GOOD);
    let out = resil(&["check", "nowhere.toml"], &dir);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("nowhere.toml"),
        "{}",
        text(&out.stderr)
    );

    // A Spring-only setting is a warning: printed, exit 0; 1 with --strict.
    let dir = dir_with(
        "warn",
        "[circuitbreaker]\ncircuit-breaker-aspect-order = 1\n",
    );
    let out = resil(&["check"], &dir);
    assert!(out.status.success());
    assert!(
        text(&out.stderr).starts_with("warning: "),
        "{}",
        text(&out.stderr)
    );
    let out = resil(&["check", "--strict"], &dir);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn check_warns_of_what_the_file_holds_and_resil_does_not_read() {
    let dir = dir_with("ignored", "");
    std::fs::write(
        dir.join("application.yml"),
        "resilience4j:\n  bulkhead:\n    instances:\n      db:\n        max-concurrent-calls: 20\n        pool-size: 10\nmanagement:\n  endpoints:\n    web:\n      exposure:\n        include: health,circuitbreakers\n",
    )
    .unwrap();
    let out = resil(&["check", "application.yml"], &dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let warnings = text(&out.stderr);
    let lines: Vec<&str> = warnings.lines().collect();
    assert_eq!(lines.len(), 2, "{warnings}");
    assert!(
        lines[0].starts_with("warning: application.yml: management: is not read by resil: the actuator's routes are chosen in code"),
        "{warnings}"
    );
    assert!(
        lines[1].starts_with(
            "warning: application.yml: resilience4j.bulkhead.instances.db.pool-size = 10: bulkhead `db` admits 20 concurrent calls (`max-concurrent-calls`) but its connection pool holds 10 (`pool-size`)"
        ),
        "{warnings}"
    );
    assert_eq!(
        text(&out.stdout),
        "ok: application.yml (1 instances, 2 warnings)\n"
    );
}

#[test]
fn explain_says_where_each_value_came_from() {
    let dir = dir_with("explain", GOOD);
    let out = resil(&["explain"], &dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let line = |key: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{key} =")))
            .unwrap_or_else(|| panic!("no `{key}` in:\n{stdout}"))
            .to_owned()
    };
    assert!(
        stdout.starts_with(
            "circuitbreaker `orders` (instances.orders <- configs.base <- configs.default)"
        ),
        "{stdout}"
    );
    assert!(line("wait-duration-in-open-state").ends_with(
        "# `circuitbreaker.instances.orders.wait-duration-in-open-state` in resilience.toml"
    ));
    assert!(
        line("failure-rate-threshold")
            .ends_with("# `circuitbreaker.configs.base.failure-rate-threshold` in resilience.toml")
    );
    assert!(
        line("sliding-window-size")
            .ends_with("# `circuitbreaker.configs.default.sliding-window-size` in resilience.toml")
    );
    assert!(line("slow-call-rate-threshold").ends_with("# library default"));
    // the worst case of the retrying name, term by term
    assert!(
        stdout.ends_with(
            "worst case of each call site, against its deadline:\n    orders: 2 attempts × (timelimiter timeout-duration 2s) + retry waits (500ms) = 4500ms\n"
        ),
        "{stdout}"
    );
}

#[test]
fn an_environment_override_is_named_as_the_source() {
    let dir = dir_with("env", GOOD);
    let out = Command::new(env!("CARGO_BIN_EXE_resil"))
        .arg("explain")
        .current_dir(&dir)
        .env_remove("RESIL_CONFIG")
        .env("RESIL_RETRY__INSTANCES__ORDERS__MAX_ATTEMPTS", "5")
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    let max = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("max-attempts ="))
        .unwrap();
    assert!(max.contains("max-attempts = 5"), "{max}");
    assert!(
        max.ends_with("# environment variable RESIL_RETRY__INSTANCES__ORDERS__MAX_ATTEMPTS"),
        "{max}"
    );
}

#[test]
fn a_wrong_argument_is_named() {
    let dir = dir_with("args", GOOD);
    let out = resil(&["chek"], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unrecognized subcommand 'chek'"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn suggest_writes_a_file_that_check_accepts() {
    let dir = dir_with("suggest", "");
    let out = resil(
        &[
            "suggest",
            "--rate",
            "200/s",
            "--latency-p50",
            "100ms",
            "--latency-p99",
            "400ms",
            "--deadline",
            "2s",
            "--pool",
            "30",
            "--name",
            "inventory-query",
        ],
        &dir,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let toml = text(&out.stdout);
    assert!(toml.contains("max-concurrent-calls = 30"), "{toml}");
    assert!(toml.contains("timeout-duration = \"600ms\""), "{toml}");
    // Every number says how it was derived.
    for key in [
        "max-concurrent-calls",
        "timeout-duration",
        "minimum-number-of-calls",
        "max-attempts",
        "timeout",
    ] {
        let lines: Vec<&str> = toml.lines().collect();
        let at = lines.iter().position(|l| l.starts_with(key)).unwrap();
        assert!(
            lines[..at].iter().rev().take(3).any(|l| l.starts_with('#')),
            "{key} has no comment"
        );
    }
    std::fs::write(dir.join("resilience.toml"), &toml).unwrap();
    let check = resil(&["check", "--strict"], &dir);
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert_eq!(
        text(&check.stdout),
        "ok: resilience.toml (5 instances, 0 warnings)\n"
    );
    // the deadline it derived, and explain weighs the worst case against it
    assert!(
        toml.contains("\n[deadline.instances.inventory-query]\n"),
        "{toml}"
    );
    assert!(toml.contains("\ntimeout = \"2s\"\n"), "{toml}");
    let explain = resil(&["explain"], &dir);
    assert!(
        text(&explain.stdout).contains(
            "inventory-query: 3 attempts × (timelimiter timeout-duration 600ms) + retry waits (100ms + 100ms) = 2s <= deadline timeout 2s"
        ),
        "{}",
        text(&explain.stdout)
    );
}

#[test]
fn suggest_names_a_bad_argument() {
    let dir = dir_with("suggest-bad", "");
    let out = resil(
        &[
            "suggest",
            "--rate",
            "fast",
            "--latency-p50",
            "100ms",
            "--latency-p99",
            "400ms",
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("--rate") && err.contains("`fast` is not a rate"),
        "{err}"
    );

    let out = resil(
        &[
            "suggest",
            "--rate",
            "10/s",
            "--latency-p50",
            "500ms",
            "--latency-p99",
            "100ms",
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("--latency-p99 100ms is below --latency-p50 500ms"));
}

#[test]
fn no_command_prints_the_password_of_a_cluster_url() {
    let good = "[ratelimiter.instances.partner]\nlimit-for-period = 10\nlimit-refresh-period = \"1s\"\ncluster-url = \"redis://admin:s3cr3t@127.0.0.1:1/0\"\n";
    let bad = "[ratelimiter.instances.partner]\ncluster-url = \"redis://admin:s3cr3t@127.0.0.1:notaport/0\"\n\n[circuitbreaker.instances.partner]\ncluster-url = \"http://admin:s3cr3t@127.0.0.1/0\"\n";
    let syntax = "[ratelimiter.instances.partner]\ncluster-url = \"redis://admin:s3cr3t@127.0.0.1:1/0\" oops\n";
    // (file, command, succeeds, prints the url)
    for (name, toml, command, ok, shown) in [
        ("redact-explain", good, "explain", true, true),
        ("redact-check-good", good, "check", true, false),
        ("redact-check-bad", bad, "check", false, true),
        ("redact-explain-bad", bad, "explain", false, true),
        ("redact-check-syntax", syntax, "check", false, false),
    ] {
        let dir = dir_with(name, toml);
        let out = resil(&[command], &dir);
        let printed = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.success(), ok, "{name}: {printed}");
        assert!(!printed.contains("s3cr3t"), "{name}: {printed}");
        assert_eq!(printed.contains("admin:***@"), shown, "{name}: {printed}");
    }
}

#[test]
fn check_and_explain_list_the_enabled_faults() {
    let dir = dir_with(
        "faults",
        "[fault.instances.orders]\nenabled = true\ndelay = \"200ms\"\ndelay-percent = 10\nabort-percent = 5\n\
         [fault.instances.quiet]\nabort-percent = 100\n",
    );
    let out = resil(&["check"], &dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "ok: resilience.toml (0 instances, 0 warnings)\n\
         fault injection enabled:\n    `orders`: delay 200ms for 10% of calls, abort 5% of calls\n"
    );
    let out = resil(&["explain"], &dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.ends_with(
            "fault injection enabled:\n    `orders`: delay 200ms for 10% of calls, abort 5% of calls\n"
        ),
        "{stdout}"
    );
    assert!(
        !stdout.contains("quiet"),
        "a disabled fault is not listed: {stdout}"
    );

    let bad = dir_with(
        "bad-fault",
        "[fault.instances.orders]\nabort-percent = 101\n",
    );
    let out = resil(&["check"], &bad);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("fault.instances.orders.abort-percent"),
        "{stderr}"
    );
    assert!(stderr.contains("101"), "{stderr}");
}
