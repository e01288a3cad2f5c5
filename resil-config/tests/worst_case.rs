//! The budget arithmetic of each retrying name: the worst case term by
//! term (waits at their largest), and the warning, an error under strict,
//! at start-up and on reload, for a retry that nothing bounds.

use std::time::Duration;

use resil_config::{Aspect, InitError, Resilience};

fn builder(text: &str) -> resil_config::ResilienceBuilder {
    Resilience::builder()
        .file_contents("resilience.toml", text)
        .env_vars(Vec::<(String, String)>::new())
        .offline(true)
}

const FULL: &str = r#"
[retry.instances.orders]
max-attempts = 4
wait-duration = "100ms"
enable-exponential-backoff = true
exponential-backoff-multiplier = 2
enable-randomized-wait = true
randomized-wait-factor = 0.5
retry-errors = ["ConnectionRefused"]

[timelimiter.instances.orders]
timeout-duration = "1s"

[ratelimiter.instances.orders]
timeout-duration = "250ms"

[bulkhead.instances.orders]
max-wait-duration = 0
"#;

#[test]
fn the_worst_case_is_the_sum_of_its_terms_with_the_waits_at_their_largest() {
    let loaded = builder(FULL)
        .strict(true)
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let worst = loaded.report().worst_cases();
    assert_eq!(worst.len(), 1);
    let w = &worst[0];
    assert_eq!(
        (w.name(), w.attempts(), w.is_bounded()),
        ("orders", 4, true)
    );
    let ms = Duration::from_millis;
    assert_eq!(
        w.per_attempt(),
        [
            (Aspect::TimeLimiter, "timeout-duration", ms(1000)),
            (Aspect::Bulkhead, "max-wait-duration", ms(0)),
            (Aspect::RateLimiter, "timeout-duration", ms(250)),
        ]
    );
    // 100, 200, 400 ms, each 50 % longer at the top of the randomization
    assert_eq!(w.waits(), Some(&[ms(150), ms(300), ms(600)][..]));
    assert_eq!(w.total(), Some(ms(4 * 1250 + 1050)));
    assert_eq!(
        w.to_string(),
        "orders: 4 attempts × (timelimiter timeout-duration 1s + ratelimiter timeout-duration 250ms) + retry waits (150ms + 300ms + 600ms) = 6050ms"
    );
}

#[test]
fn a_retry_that_nothing_bounds_is_a_warning_and_an_error_under_strict() {
    let text = "[retry.instances.lookup]\nretry-errors = [\"ConnectionRefused\"]\n";
    let loaded = builder(text).load().unwrap_or_else(|e| panic!("{e}"));
    let warnings = loaded.report().warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].key(), "retry.instances.lookup");
    assert!(
        warnings[0]
            .message()
            .starts_with("retry `lookup` makes up to 3 attempts with no time limiter `lookup`"),
        "{}",
        warnings[0]
    );
    let w = &loaded.report().worst_cases()[0];
    assert!(!w.is_bounded());
    assert_eq!(w.total(), None);
    assert_eq!(
        w.to_string(),
        "lookup: 3 attempts × (no time limiter: unbounded) + retry waits (500ms + 500ms): no bound"
    );
    let err = builder(text).strict(true).load().unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    assert_eq!(err.problems()[0].key(), "retry.instances.lookup");
    // One attempt needs no bound; nor does a retry with a time limiter.
    for quiet in [
        "[retry.instances.lookup]\nmax-attempts = 1\n",
        "[retry.instances.lookup]\nretry-errors = [\"ConnectionRefused\"]\n[timelimiter.instances.lookup]\n",
    ] {
        let loaded = builder(quiet).strict(true).load();
        assert!(loaded.is_ok(), "{quiet}: {}", loaded.err().unwrap());
    }
}

#[test]
fn a_reload_computes_it_again_and_under_strict_refuses_no_bound() {
    let loaded = builder(FULL)
        .strict(true)
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let faster = FULL.replace("timeout-duration = \"1s\"", "timeout-duration = \"500ms\"");
    loaded
        .reload_from_contents("resilience.toml", faster)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        loaded.current_report().worst_cases()[0].total(),
        Some(Duration::from_millis(4 * 750 + 1050))
    );
    let unbounded = FULL.replace(
        "[timelimiter.instances.orders]\ntimeout-duration = \"1s\"\n",
        "",
    );
    let err = loaded
        .reload_from_contents("resilience.toml", unbounded)
        .unwrap_err();
    let InitError::Invalid(problems) = &err else {
        panic!("{err}");
    };
    assert_eq!(problems.len(), 1, "{err}");
    assert!(problems[0].message().contains("no time limiter"), "{err}");
    assert_eq!(
        loaded.current_report().worst_cases()[0].total(),
        Some(Duration::from_millis(4 * 750 + 1050)),
        "the old state stays in force"
    );
}

#[test]
fn a_worst_case_over_its_deadline_is_a_warning_with_its_terms_and_an_error_under_strict() {
    // 4 × 1.25 s + 1.05 s of waits = 6.05 s, against a deadline of 5 s
    let text = format!("{FULL}\n[deadline.instances.orders]\ntimeout = \"5s\"\n");
    let loaded = builder(&text).load().unwrap_or_else(|e| panic!("{e}"));
    let warnings = loaded.report().warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].key(), "deadline.instances.orders");
    assert!(
        warnings[0].message().starts_with("the worst case of `orders` exceeds its deadline")
            && warnings[0].message().contains(
                "orders: 4 attempts × (timelimiter timeout-duration 1s + ratelimiter timeout-duration 250ms) + retry waits (150ms + 300ms + 600ms) = 6050ms > deadline timeout 5s: over by 1050ms"
            ),
        "{}",
        warnings[0]
    );
    let w = &loaded.report().worst_cases()[0];
    assert_eq!(w.deadline(), Some(Duration::from_secs(5)));
    assert!(w.exceeds_deadline());
    assert_eq!(w.bound(), Some(Duration::from_secs(5)));

    let err = builder(&text).strict(true).load().unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    assert_eq!(err.problems()[0].key(), "deadline.instances.orders");

    // a deadline the worst case fits in: quiet under strict, and said so
    let fits = format!("{FULL}\n[deadline.instances.orders]\ntimeout = \"7s\"\n");
    let loaded = builder(&fits)
        .strict(true)
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let w = &loaded.report().worst_cases()[0];
    assert!(!w.exceeds_deadline());
    assert!(
        w.to_string().ends_with("= 6050ms <= deadline timeout 7s"),
        "{w}"
    );

    // a reload that makes it exceed is refused, the old timeout in force
    let refused = loaded
        .reload_from_contents("resilience.toml", text.clone())
        .unwrap_err();
    assert!(
        refused.to_string().contains("deadline.instances.orders"),
        "{refused}"
    );
    assert_eq!(
        loaded.current_report().worst_cases()[0].deadline(),
        Some(Duration::from_secs(7))
    );
}

#[test]
fn a_retry_bounded_only_by_a_deadline_is_not_unbounded() {
    let text = "[retry.instances.lookup]\nretry-errors = [\"ConnectionRefused\"]\n\
                [deadline.instances.lookup]\ntimeout = \"2s\"\n";
    let loaded = builder(text)
        .strict(true)
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(loaded.report().warnings().is_empty());
    let w = &loaded.report().worst_cases()[0];
    assert!(!w.is_bounded());
    assert_eq!(w.total(), None);
    assert_eq!(w.bound(), Some(Duration::from_secs(2)));
    assert_eq!(
        w.to_string(),
        "lookup: 3 attempts × (no time limiter) + retry waits (500ms + 500ms): bounded by the deadline timeout 2s"
    );
}
