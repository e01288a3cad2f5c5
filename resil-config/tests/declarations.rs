//! The link-time registry: a test binary that declares protected functions
//! by hand, as the attribute macros' expansions do, and start-up checking the
//! configuration against them.

use resil_config::{Aspect, Declaration, InitError, Resilience, declarations};
use resil_core::Classify;

#[derive(Debug)]
#[allow(dead_code)]
enum InventoryError {
    ConnectionRefused,
    OutOfStock,
}

impl Classify for InventoryError {
    const KINDS: &'static [&'static str] = &["ConnectionRefused", "OutOfStock"];
    fn kind(&self) -> &'static str {
        match self {
            InventoryError::ConnectionRefused => "ConnectionRefused",
            InventoryError::OutOfStock => "OutOfStock",
        }
    }
}

/// An error type without kinds.
#[derive(Debug)]
struct PaymentError;

/// What one attribute's expansion submits, from inside the function body.
macro_rules! declare {
    ($aspect:ident, $name:literal, $function:literal, $error:ty, $fallback:expr) => {
        const _: () = {
            resil_config::inventory::submit! {
                resil_config::Declaration {
                    aspect: resil_config::Aspect::$aspect,
                    name: $name,
                    module: module_path!(),
                    function: $function,
                    file: file!(),
                    line: line!(),
                    fallback: $fallback,
                    error_type: stringify!($error),
                    error_kinds: {
                        #[allow(unused_imports)]
                        use resil_config::declared::NoKinds as _;
                        resil_config::declared::KindsOf::<$error>::KINDS
                    },
                    detachable: false,
                }
            }
        };
    };
}

mod inventory {
    use super::InventoryError;

    pub(crate) struct Inventory;

    impl Inventory {
        #[allow(dead_code)]
        pub(crate) fn query(&self) -> Result<u32, InventoryError> {
            declare!(Retry, "inventory-query", "query", InventoryError, None);
            declare!(
                CircuitBreaker,
                "inventory-query",
                "query",
                InventoryError,
                Some("Self::unknown_inventory")
            );
            declare!(Bulkhead, "inventory-query", "query", InventoryError, None);
            Ok(1)
        }
    }

    /// Never called, generic: declared all the same.
    #[allow(dead_code)]
    pub(crate) fn reserve<T>(_: T) -> Result<(), InventoryError> {
        declare!(
            CircuitBreaker,
            "inventory-command",
            "reserve",
            InventoryError,
            None
        );
        Ok(())
    }
}

#[allow(dead_code)]
fn charge() -> Result<(), PaymentError> {
    declare!(CircuitBreaker, "payment", "charge", PaymentError, None);
    declare!(TimeLimiter, "payment", "charge", PaymentError, None);
    Ok(())
}

fn load(toml: &str, strict: bool) -> Result<Resilience, InitError> {
    Resilience::builder()
        .file_contents("resilience.toml", toml)
        .env_vars(Vec::<(String, String)>::new())
        .strict(strict)
        .load()
}

/// `load`, with the declared retry told which errors to retry, so that it
/// does not retry the refusals of the layers inside it (a warning of its own).
fn load_quiet(toml: &str, strict: bool) -> Result<Resilience, InitError> {
    load(
        &format!(
            "{toml}\n[retry.instances.inventory-query]\nretry-errors = [\"ConnectionRefused\"]\n"
        ),
        strict,
    )
}

#[test]
fn every_declaration_is_found_sorted() {
    let found: Vec<(Aspect, &str, &str)> = declarations()
        .iter()
        .map(|d| (d.aspect(), d.name(), d.function()))
        .collect();
    assert_eq!(
        found,
        [
            (Aspect::CircuitBreaker, "inventory-command", "reserve"),
            (Aspect::CircuitBreaker, "inventory-query", "query"),
            (Aspect::CircuitBreaker, "payment", "charge"),
            (Aspect::Retry, "inventory-query", "query"),
            (Aspect::Bulkhead, "inventory-query", "query"),
            (Aspect::TimeLimiter, "payment", "charge"),
        ]
    );
    let cb = declarations()[1];
    assert_eq!(cb.module(), "declarations::inventory");
    assert_eq!(cb.path(), "declarations::inventory::query");
    assert_eq!(cb.file(), "resil-config/tests/declarations.rs");
    assert_eq!(cb.fallback(), Some("Self::unknown_inventory"));
    assert_eq!(cb.error_type(), "InventoryError");
    assert_eq!(cb.error_kinds(), ["ConnectionRefused", "OutOfStock"]);
    assert!(cb.line() > 0);
    assert!(cb.to_string().starts_with("circuitbreaker `inventory-query` at declarations::inventory::query (resil-config/tests/declarations.rs:"));
    let payment = declarations()[2];
    assert!(
        payment.error_kinds().is_empty(),
        "PaymentError has no kinds"
    );
}

#[test]
fn declared_names_get_instances_and_configured_ones_are_checked() {
    let loaded = load(
        r#"
[circuitbreaker.configs.default]
sliding-window-size = 40

[circuitbreaker.instances.inventory-query]
record-errors = ["ConnectionRefused", "CallNotPermitted"]
ignore-errors = ["OutOfStock"]

[circuitbreaker.instances.inventory-qurey]
sliding-window-size = 10
"#,
        false,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let report = loaded.report();
    // declared without configuration: runs on configs.default
    let payment = report.instance(Aspect::CircuitBreaker, "payment").unwrap();
    assert!(!payment.configured());
    assert_eq!(payment.setting("sliding-window-size"), Some("40"));
    assert_eq!(
        loaded
            .registries()
            .circuit_breakers()
            .find("payment")
            .unwrap()
            .config()
            .sliding_window_size(),
        40
    );
    // the declared retry retries the refusals of the breaker and the
    // bulkhead of its name (no `retry-errors`): the anti-pattern
    // 'retry every exception'
    let (retried, warnings): (Vec<_>, Vec<_>) = report
        .warnings()
        .iter()
        .partition(|w| w.key() == "retry.instances.inventory-query");
    assert_eq!(retried.len(), 1, "{:?}", report.warnings());
    assert!(
        retried[0]
            .message()
            .contains("retries every error, the refusals of the circuit breaker and bulkhead `inventory-query` inside it included (CallNotPermitted, BulkheadFull)"),
        "{}",
        retried[0]
    );
    // configured without declaration: a likely typo
    assert_eq!(warnings.len(), 1, "{:?}", report.warnings());
    let w = warnings[0];
    assert_eq!(w.key(), "circuitbreaker.instances.inventory-qurey");
    assert!(w.message().contains("no protected function in this binary declares circuitbreaker `inventory-qurey`; did you mean `inventory-query`?"), "{w}");
    // every declared and configured instance exists, eagerly
    let names: Vec<String> = loaded
        .registries()
        .circuit_breakers()
        .all()
        .iter()
        .map(|cb| cb.name().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "inventory-command",
            "inventory-query",
            "inventory-qurey",
            "payment"
        ]
    );
    assert!(
        loaded
            .registries()
            .retries()
            .find("inventory-query")
            .is_some()
    );
    assert!(
        loaded
            .registries()
            .bulkheads()
            .find("inventory-query")
            .is_some()
    );

    // strict: the warning is an error
    let err = load(
        "[circuitbreaker.instances.inventory-qurey]\nsliding-window-size = 10\n",
        true,
    )
    .unwrap_err();
    let keys: Vec<&str> = err.problems().iter().map(|p| p.key()).collect();
    assert_eq!(
        keys,
        [
            "circuitbreaker.instances.inventory-qurey",
            "retry.instances.inventory-query"
        ],
        "{err}"
    );
    // with the refusals left out of the retry, only the typo remains
    let err = load(
        "[circuitbreaker.instances.inventory-qurey]\nsliding-window-size = 10\n[retry.instances.inventory-query]\nignore-errors = [\"CallNotPermitted\", \"BulkheadFull\"]\n",
        true,
    )
    .unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
}

#[test]
fn a_setting_the_attributes_cannot_honour_is_a_warning() {
    let file = "[timelimiter.instances.payment]\ntimeout-duration = \"2s\"\ncancel-running-future = false\n";
    let loaded = load_quiet(file, false).unwrap_or_else(|e| panic!("{e}"));
    let warnings = loaded.report().warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert_eq!(
        w.key(),
        "timelimiter.instances.payment.cancel-running-future"
    );
    assert_eq!(w.value(), Some("false"));
    assert!(
        w.message().contains(
            "has no effect on timelimiter `payment` as `declarations::charge` at resil-config/tests/declarations.rs:"
        ),
        "{w}"
    );
    assert!(w.message().contains("call_async_detached"), "{w}");
    // the instance is built as configured all the same
    let limiter = loaded.registries().time_limiters().find("payment").unwrap();
    assert!(!limiter.config().cancel_running_future());

    // inherited from configs.default, the key path is where the value is
    let inherited = load_quiet(
        "[timelimiter.configs.default]\ncancel-running-future = false\n",
        false,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let keys: Vec<&str> = inherited
        .report()
        .warnings()
        .iter()
        .map(|w| w.key())
        .collect();
    assert_eq!(keys, ["timelimiter.configs.default.cancel-running-future"]);

    // strict: an error; the default (true): nothing to say
    let err = load_quiet(file, true).unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    let fine = load_quiet(
        "[timelimiter.instances.payment]\ncancel-running-future = true\n",
        true,
    );
    assert!(fine.is_ok());
}

#[test]
fn an_error_kind_the_declared_type_does_not_have_is_an_error() {
    let err = load(
        r#"
[circuitbreaker.instances.inventory-query]
record-exceptions = ["com.example.ConectionRefused"]

[circuitbreaker.instances.payment]
ignore-errors = ["Declined", "Timeout"]
"#,
        false,
    )
    .unwrap_err();
    let shown: Vec<String> = err.problems().iter().map(ToString::to_string).collect();
    assert_eq!(shown.len(), 2, "{shown:#?}");
    assert!(shown[0].starts_with(
        "resilience.toml: circuitbreaker.instances.inventory-query.record-exceptions = [\"com.example.ConectionRefused\"]: `ConectionRefused` is not an error kind of `InventoryError` (the error type of circuitbreaker `inventory-query` at resil-config/tests/declarations.rs:"
    ), "{}", shown[0]);
    assert!(
        shown[0].ends_with("did you mean `ConnectionRefused`?"),
        "{}",
        shown[0]
    );
    assert!(shown[1].contains("ignore-errors = [\"Declined\", \"Timeout\"]: `Declined` is not an error kind: `PaymentError`"), "{}", shown[1]);
    assert!(
        shown[1].contains("derive `resil::Classify`"),
        "{}",
        shown[1]
    );
}

#[test]
fn kinds_in_configs_default_are_checked_against_the_names_that_use_it() {
    let err = load(
        "[circuitbreaker.configs.default]\nrecord-errors = [\"OutOfStock\"]\n",
        false,
    )
    .unwrap_err();
    // inventory-query and inventory-command have the kind; payment has none
    assert_eq!(err.problems().len(), 1, "{err}");
    assert!(
        err.problems()[0].message().contains("`PaymentError`"),
        "{err}"
    );
}

#[test]
fn the_report_prints_every_call_site_with_its_effective_config() {
    let loaded = load(
        "[circuitbreaker.instances.inventory-query]\nfailure-rate-threshold = 25\n",
        false,
    )
    .unwrap();
    let shown = loaded.report().to_string();
    assert!(shown.starts_with("resil: configuration from resilience.toml; 6 protected function declarations linked into this binary, 6 instances\n"), "{shown}");
    assert!(shown.contains("\ncircuitbreaker `inventory-query` (instances.inventory-query)\n    failure-rate-threshold = 25, slow-call-rate-threshold = 100,"), "{shown}");
    // settings wrap
    assert!(
        shown
            .lines()
            .filter(|l| l.contains(" = "))
            .all(|l| l.chars().count() <= 100),
        "{shown}"
    );
    assert!(
        shown.contains(
            "    used by declarations::inventory::query at resil-config/tests/declarations.rs:"
        ),
        "{shown}"
    );
    assert!(
        shown.contains(", fallback Self::unknown_inventory\n"),
        "{shown}"
    );
    assert!(
        shown.contains("circuitbreaker `payment` (library defaults)"),
        "{shown}"
    );
    assert!(shown.contains("bulkhead `inventory-query` (library defaults)\n    max-concurrent-calls = 25, max-wait-duration = 0ms, fair-call-handling-enabled = true,\n    limit-algorithm = fixed, shadow = false, event-consumer-buffer-size = 100\n"), "{shown}");
}

#[test]
fn explicit_declarations_replace_the_linked_ones() {
    static ONE: [Declaration; 1] = [Declaration {
        aspect: Aspect::TimeLimiter,
        name: "slow",
        module: "m",
        function: "f",
        file: "f.rs",
        line: 1,
        fallback: None,
        error_type: "E",
        error_kinds: &[],
        detachable: false,
    }];
    let loaded = Resilience::builder()
        .file_contents("resilience.toml", "")
        .env_vars(Vec::<(String, String)>::new())
        .declarations(ONE.iter())
        .load()
        .unwrap();
    assert_eq!(loaded.report().declarations().len(), 1);
    assert!(loaded.registries().time_limiters().find("slow").is_some());
    assert!(
        loaded
            .registries()
            .circuit_breakers()
            .find("payment")
            .is_none()
    );
}
