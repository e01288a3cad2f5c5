//! The cluster keys of `ratelimiter` and `circuitbreaker` tables: inherited
//! like every key, checked strictly, and refused with a clear message in a
//! build without the `redis` feature. No server is needed: the backend
//! connects lazily.

use resil_config::{ConfigProblem, InitError, Resilience};

fn load(text: &str) -> Result<Resilience, InitError> {
    Resilience::builder()
        .file_contents("resilience.toml", text)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
}

fn problems(text: &str) -> Vec<ConfigProblem> {
    match load(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.problems().to_vec(),
    }
}

/// The one problem at `key`, with its value.
fn problem_at(text: &str, key: &str) -> ConfigProblem {
    let all = problems(text);
    let at: Vec<_> = all.iter().filter(|p| p.key() == key).collect();
    assert_eq!(at.len(), 1, "one problem at {key}: {all:#?}");
    assert_eq!(at[0].source(), "resilience.toml");
    at[0].clone()
}

#[cfg(not(feature = "redis"))]
#[test]
fn a_cluster_url_needs_the_redis_feature() {
    let p = problem_at(
        "[ratelimiter.instances.partner]\ncluster-url = \"redis://127.0.0.1:6379/0\"\n",
        "ratelimiter.instances.partner.cluster-url",
    );
    assert!(p.message().contains("`redis` feature"), "{p}");
    assert_eq!(p.value(), Some("\"redis://127.0.0.1:6379/0\""));
    let p = problem_at(
        "[circuitbreaker.instances.partner]\ncluster-url = \"redis://127.0.0.1:6379/0\"\n",
        "circuitbreaker.instances.partner.cluster-url",
    );
    assert!(p.message().contains("`redis` feature"), "{p}");
}

#[test]
fn a_bad_failure_mode_or_timeout_is_named_with_its_value() {
    let p = problem_at(
        "[ratelimiter.instances.partner]\ncluster-failure-mode = \"open\"\n",
        "ratelimiter.instances.partner.cluster-failure-mode",
    );
    assert!(
        p.message().contains("\"local\", \"allow\" or \"deny\""),
        "{p}"
    );
    assert_eq!(p.value(), Some("\"open\""));
    let p = problem_at(
        "[ratelimiter.instances.partner]\ncluster-timeout = \"fast\"\n",
        "ratelimiter.instances.partner.cluster-timeout",
    );
    assert_eq!(p.value(), Some("\"fast\""));
    let p = problem_at(
        "[ratelimiter.instances.partner]\ncluster-key = \"\"\n",
        "ratelimiter.instances.partner.cluster-key",
    );
    assert!(p.message().contains("non-empty"), "{p}");
}

#[test]
fn a_url_that_is_not_redis_is_refused() {
    let p = problem_at(
        "[ratelimiter.instances.partner]\ncluster-url = \"http://127.0.0.1:6379\"\n",
        "ratelimiter.instances.partner.cluster-url",
    );
    assert_eq!(p.value(), Some("\"http://127.0.0.1:6379\""));
}

#[test]
fn a_fleet_budgets_mistakes_are_named_with_their_values() {
    let p = problem_at(
        "[retrybudget.instances.inventory]\ncluster-failure-mode = \"open\"\n",
        "retrybudget.instances.inventory.cluster-failure-mode",
    );
    assert!(
        p.message().contains("\"local\", \"allow\" or \"deny\""),
        "{p}"
    );
    assert_eq!(p.value(), Some("\"open\""));
    let p = problem_at(
        "[retrybudget.instances.inventory]\ncluster-key = \"\"\n",
        "retrybudget.instances.inventory.cluster-key",
    );
    assert!(p.message().contains("non-empty"), "{p}");
    let p = problem_at(
        "[retrybudget.instances.inventory]\ncluster-url = \"http://127.0.0.1:6379\"\n",
        "retrybudget.instances.inventory.cluster-url",
    );
    assert_eq!(p.value(), Some("\"http://127.0.0.1:6379\""));
    let p = problem_at(
        "[retrybudget.instances.inventory]\ncluster-lease = \"many\"\n",
        "retrybudget.instances.inventory.cluster-lease",
    );
    assert_eq!(p.value(), Some("\"many\""));
}

#[test]
fn a_fleet_budgets_keys_without_a_url_are_a_warning() {
    let r = load("[retrybudget.instances.inventory]\ncluster-lease = 3\n[retry.instances.q]\nbudget = \"inventory\"\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let warnings: Vec<String> = r
        .report()
        .warnings()
        .iter()
        .map(|w| w.to_string())
        .collect();
    assert!(
        warnings.iter().any(
            |w| w.contains("retrybudget.instances.inventory.cluster-lease")
                && w.contains("has no effect without `cluster-url`")
        ),
        "{warnings:?}"
    );
    let retry = r.registries().retries().retry("q");
    assert!(
        retry
            .config()
            .budget()
            .unwrap()
            .config()
            .cluster()
            .is_none()
    );
}

#[cfg(not(feature = "redis"))]
#[test]
fn a_fleet_budget_needs_the_redis_feature() {
    let p = problem_at(
        "[retrybudget.instances.inventory]\ncluster-url = \"redis://127.0.0.1:6379/0\"\n",
        "retrybudget.instances.inventory.cluster-url",
    );
    assert!(p.message().contains("`redis` feature"), "{p}");
}

#[cfg(feature = "redis")]
mod with_redis {
    use super::*;
    use resil_core::cluster::ClusterFailureMode;

    const BASE: &str = r#"
[ratelimiter.configs.fleet]
limit-for-period = 100
limit-refresh-period = "1s"
cluster-url = "redis://127.0.0.1:6399/0"
cluster-lease = 10
cluster-failure-mode = "deny"

[ratelimiter.instances.partner]
base-config = "fleet"
cluster-timeout = "20ms"
"#;

    #[test]
    fn cluster_keys_inherit_through_base_config() {
        let r = load(BASE).unwrap_or_else(|e| panic!("{e}"));
        let limiter = r.registries().rate_limiters().rate_limiter("partner");
        let config = limiter.config();
        let c = config.cluster().expect("a cluster limiter");
        assert_eq!(c.lease_size(), 10);
        assert_eq!(c.mode(), ClusterFailureMode::Deny);
        assert_eq!(c.timeout_duration(), std::time::Duration::from_millis(20));
        assert_eq!(c.key_name(), None); // resil:{partner}:ratelimiter
        let report = r
            .report()
            .instance(resil_config::Aspect::RateLimiter, "partner");
        let report = report.expect("reported");
        assert_eq!(
            report.setting("cluster-url"),
            Some("redis://127.0.0.1:6399/0")
        );
        assert_eq!(report.setting("cluster-lease"), Some("10"));
        assert_eq!(report.setting("cluster-failure-mode"), Some("deny"));
    }

    #[test]
    fn a_lease_of_zero_or_above_the_limit_is_refused() {
        let p = problem_at(
            &BASE.replace("cluster-lease = 10", "cluster-lease = 0"),
            "ratelimiter.configs.fleet.cluster-lease",
        );
        assert_eq!(p.value(), Some("0"));
        let p = problem_at(
            &BASE.replace("cluster-lease = 10", "cluster-lease = 101"),
            "ratelimiter.configs.fleet.cluster-lease",
        );
        assert_eq!(p.value(), Some("101"));
        assert!(p.message().contains("limit-for-period"), "{p}");
    }

    #[test]
    fn the_environment_can_switch_the_fleet_on() {
        let r = Resilience::builder()
            .file_contents("resilience.toml", "[ratelimiter.instances.partner]\nlimit-for-period = 10\nlimit-refresh-period = \"1s\"\n")
            .env_vars([
                (
                    "RESIL_RATELIMITER__INSTANCES__PARTNER__CLUSTER_URL",
                    "redis://127.0.0.1:6399/0",
                ),
                ("RESIL_RATELIMITER__INSTANCES__PARTNER__CLUSTER_LEASE", "5"),
            ])
            .declarations([])
            .load()
            .unwrap_or_else(|e| panic!("{e}"));
        let limiter = r.registries().rate_limiters().rate_limiter("partner");
        let config = limiter.config();
        assert_eq!(config.cluster().map(|c| c.lease_size()), Some(5));
    }

    #[test]
    fn a_cluster_url_names_the_cluster_s_nodes() {
        let r = load(
            "[ratelimiter.instances.partner]\nlimit-for-period = 10\nlimit-refresh-period = \"1s\"\ncluster-url = \"redis+cluster://u:secret@10.0.0.1:7000,10.0.0.2:7000\"\n\n[circuitbreaker.instances.partner]\ncluster-url = \"redis+cluster://10.0.0.1:7000\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let report = r
            .report()
            .instance(resil_config::Aspect::RateLimiter, "partner")
            .expect("reported");
        assert_eq!(
            report.setting("cluster-url"),
            Some("redis+cluster://u:***@10.0.0.1:7000,10.0.0.2:7000")
        );
        assert_eq!(
            report.setting("cluster-key"),
            Some("resil:{<name>}:ratelimiter")
        );
        let cb = r.registries().circuit_breakers().circuit_breaker("partner");
        assert!(cb.config().cluster().is_some());
    }

    #[test]
    fn a_bad_cluster_url_is_named_with_its_value_and_no_password() {
        for (url, says) in [
            ("redis+cluster://", "names no node"),
            ("redis+cluster://u:secret@,", "names no node"),
            (
                "redis+cluster://h1:7000,redis://h2:7000",
                "mixes a single server's URL (`redis://h2:7000`)",
            ),
            (
                "redis://u:secret@h1:7000,h2:7000/0",
                "`redis+cluster://h1:7000,h2:7000`",
            ),
            ("redis+cluster://h1:7000/2", "one database (0)"),
            ("redis+cluster://h1:port", "node `h1:port`"),
        ] {
            for aspect in ["ratelimiter", "circuitbreaker"] {
                let p = problem_at(
                    &format!("[{aspect}.instances.partner]\ncluster-url = \"{url}\"\n"),
                    &format!("{aspect}.instances.partner.cluster-url"),
                );
                assert!(p.message().contains(says), "{url}: {p}");
                let shown = p.to_string();
                assert!(!shown.contains("secret"), "{shown}");
                let value = p.value().expect("the value is shown");
                assert!(!value.contains("secret"), "{value}");
                assert_eq!(value, format!("{:?}", resil_core::redact::userinfo(url)));
            }
        }
    }

    #[test]
    fn one_key_on_a_cluster_and_on_a_single_server_is_refused() {
        let limiter = |name: &str, key: Option<&str>, url: &str| {
            let key = key
                .map(|k| format!("cluster-key = \"{k}\"\n"))
                .unwrap_or_default();
            format!(
                "[ratelimiter.instances.{name}]\nlimit-refresh-period = \"1s\"\n{key}cluster-url = \"{url}\"\n\n"
            )
        };
        let text = limiter(
            "a",
            Some("fleet:{partner}"),
            "redis://u:secret@10.0.0.9:6379/0",
        ) + &limiter(
            "b",
            Some("fleet:{partner}"),
            "redis+cluster://u:secret@10.0.0.1:7000,10.0.0.2:7000",
        );
        let p = problem_at(&text, "ratelimiter.instances.b.cluster-url");
        assert_eq!(
            p.message(),
            "puts the key `fleet:{partner}` of ratelimiter `b` on a Redis Cluster, but ratelimiter `a` keeps that key on a single server (`ratelimiter.instances.a.cluster-url`): instances that share a key must name one Redis; give them the same `cluster-url`, or each its own `cluster-key`"
        );
        assert_eq!(
            p.value(),
            Some("\"redis+cluster://u:***@10.0.0.1:7000,10.0.0.2:7000\"")
        );
        assert!(!p.to_string().contains("secret"), "{p}");
        // across kinds, and through a shared config: a limiter named after
        // the breaker `partner`'s default key
        let text = "[circuitbreaker.configs.fleet]\ncluster-url = \"redis+cluster://10.0.0.1:7000\"\n\n[circuitbreaker.instances.partner]\nbase-config = \"fleet\"\n\n".to_owned()
            + &limiter(
                "partner",
                Some("resil:{partner}:circuitbreaker"),
                "redis://10.0.0.9:6379",
            );
        let p = problem_at(&text, "ratelimiter.instances.partner.cluster-url");
        assert!(
            p.message().contains(
                "but circuitbreaker `partner` keeps that key on a Redis Cluster (`circuitbreaker.configs.fleet.cluster-url`)"
            ),
            "{p}"
        );
        // one kind of URL per key: accepted
        let text = limiter("a", Some("k"), "redis+cluster://10.0.0.1:7000")
            + &limiter("b", Some("k"), "redis+cluster://10.0.0.2:7000")
            + &limiter("c", None, "redis://10.0.0.9:6379");
        load(&text).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn the_breaker_takes_a_cluster_url() {
        let r = load(
            "[circuitbreaker.instances.partner]\ncluster-url = \"redis://127.0.0.1:6399/0\"\ncluster-probe-expiry = \"2s\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let cb = r.registries().circuit_breakers().circuit_breaker("partner");
        let c = cb.config().cluster().expect("a cluster breaker");
        assert_eq!(c.probe_expiry_duration(), std::time::Duration::from_secs(2));
    }

    #[test]
    fn a_fleet_budget_is_bound_and_a_reload_keeps_it() {
        const FLEET: &str = r#"
[retrybudget.instances.inventory]
ratio = 0.1
cluster-url = "redis://127.0.0.1:6399/0"
cluster-lease = 3
cluster-failure-mode = "deny"

[retry.instances.inventory-query]
budget = "inventory"
"#;
        let r = load(FLEET).unwrap_or_else(|e| panic!("{e}"));
        let retry = r.registries().retries().retry("inventory-query");
        let budget = retry.config().budget().unwrap().clone();
        let c = budget.config().cluster().expect("a fleet budget");
        assert_eq!(c.lease_size(), 3);
        assert_eq!(c.mode(), ClusterFailureMode::Deny);
        assert_eq!(c.key_name(), None); // resil:{inventory}:retrybudget

        // the same file: the same budget, its lease and balance kept
        r.reload_from_contents("resilience.toml", FLEET)
            .unwrap_or_else(|e| panic!("{e}"));
        let after = r.registries().retries().retry("inventory-query");
        assert_eq!(after.config().budget(), Some(&budget));
        // another lease needs a restart: refused, the budget kept
        let e = r
            .reload_from_contents(
                "resilience.toml",
                FLEET.replace("cluster-lease = 3", "cluster-lease = 4"),
            )
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("retrybudget.instances.inventory.cluster-lease"),
            "{e}"
        );
        let kept = r.registries().retries().retry("inventory-query");
        assert_eq!(kept.config().budget(), Some(&budget));
        let p = problem_at(
            &FLEET.replace("cluster-lease = 3", "cluster-lease = 0"),
            "retrybudget.instances.inventory.cluster-lease",
        );
        assert_eq!(p.value(), Some("0"));
        assert!(p.message().contains("from 1 to 1000"), "{p}");
    }
}

#[test]
fn cluster_keys_without_a_url_warn() {
    let r = load("[ratelimiter.instances.partner]\ncluster-lease = 5\n").unwrap();
    let warnings = r.report().warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.key() == "ratelimiter.instances.partner.cluster-lease"
                && w.message().contains("without `cluster-url`")),
        "{warnings:#?}"
    );
}
