//! A value outside its range is an error even where the key has no effect:
//! a file that starts today must not fail the day someone sets the wait or
//! the flag that makes the key count.

use resil_config::{InitError, Resilience};

fn problems(text: &str) -> Vec<String> {
    match Resilience::builder()
        .file_contents("resilience.toml", text)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
    {
        Ok(_) => Vec::new(),
        Err(InitError::Invalid(all)) => all
            .iter()
            .filter(|p| !p.to_string().contains("has no effect"))
            .map(|p| p.to_string())
            .collect(),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn an_ineffective_randomization_factor_out_of_range_is_an_error() {
    let found = problems(
        "[retry.instances.inventory-query]\nmax-attempts = 3\nrandomized-wait-factor = 1.5\n",
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("retry.instances.inventory-query.randomized-wait-factor"),
        "{found:#?}"
    );
    assert!(found[0].contains("1.5"), "{found:#?}");
    assert!(found[0].contains("[0, 1)"), "{found:#?}");
}

#[test]
fn an_ineffective_multiplier_of_zero_is_an_error() {
    let found = problems(
        "[retry.instances.inventory-query]\nwait-duration = \"100ms\"\nexponential-backoff-multiplier = 0\n",
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("exponential-backoff-multiplier"),
        "{found:#?}"
    );
    assert!(found[0].contains("above 0"), "{found:#?}");
}

#[test]
fn a_base_config_out_of_range_is_reported_once() {
    let found = problems(
        "[retry.configs.default]\nrandomized-wait-factor = 2.0\n\n[retry.instances.a]\n\n[retry.instances.b]\n",
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("retry.configs.default.randomized-wait-factor"),
        "{found:#?}"
    );
}

#[test]
fn the_breakers_ineffective_keys_are_held_to_their_rules() {
    let found = problems(
        "[circuitbreaker.instances.inventory-query]\nexponential-backoff-multiplier = -1\nrandomized-wait-factor = 1\n",
    );
    assert_eq!(found.len(), 2, "{found:#?}");
}

#[test]
fn in_range_ineffective_keys_are_only_warned() {
    let found = problems(
        "[retry.instances.inventory-query]\nmax-attempts = 3\nrandomized-wait-factor = 0.5\nexponential-backoff-multiplier = 2\n",
    );
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn an_event_buffer_past_its_bound_is_an_error_for_every_module() {
    for module in [
        "circuitbreaker",
        "retry",
        "bulkhead",
        "thread-pool-bulkhead",
        "ratelimiter",
        "timelimiter",
    ] {
        let found = problems(&format!(
            "[{module}.instances.inventory-query]\nevent-consumer-buffer-size = 100001\n"
        ));
        assert_eq!(found.len(), 1, "{module}: {found:#?}");
        assert!(
            found[0].contains(&format!(
                "{module}.instances.inventory-query.event-consumer-buffer-size"
            )),
            "{found:#?}"
        );
        assert!(found[0].contains("at most 100000"), "{found:#?}");
        assert!(
            problems(&format!(
                "[{module}.instances.inventory-query]\nevent-consumer-buffer-size = 100000\n"
            ))
            .is_empty(),
            "{module}: the bound itself is allowed"
        );
    }
}

#[test]
fn a_thread_pool_bulkhead_name_no_thread_can_take_is_an_error() {
    let found =
        problems("[thread-pool-bulkhead.instances.\"report\\u0000export\"]\nqueue-capacity = 1\n");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].contains("NUL byte"), "{found:#?}");
}
