//! `resil::reload()` and `resil::reload_dry_run()` on the global registries,
//! as a service uses them: `RESIL_CONFIG` names a file in a temporary
//! directory and a `RESIL_*` variable overrides one key, both set before
//! `init` (on a child run of this binary, so that no `unsafe` `set_var` is
//! needed); the file is edited and reloaded. One test: the registries are
//! per process.

use std::path::PathBuf;
use std::sync::Arc;

use resil::Rejection;
use resil::bulkhead::Bulkhead;
use resil_config::KeyedCallSite;

const CHILD: &str = "RELOAD_TEST_CHILD";
const OVERRIDE: &str = "RESIL_BULKHEAD__INSTANCES__INVENTORY_QUERY__MAX_WAIT_DURATION";

const FILE: &str = r#"
[bulkhead.instances.inventory-query]
max-concurrent-calls = 5

[bulkhead.instances.tenant-pool]
max-concurrent-calls = 2

[bulkhead.instances.unused]
max-concurrent-calls = 3

[retry.instances.inventory-query]
max-attempts = 2
wait-duration = "10ms"
"#;

#[derive(Debug, PartialEq)]
enum QueryError {
    Refused(String),
}

impl From<Rejection> for QueryError {
    fn from(r: Rejection) -> Self {
        QueryError::Refused(r.to_string())
    }
}

#[resil::bulkhead(name = "inventory-query")]
fn query() -> Result<u32, QueryError> {
    Ok(7)
}

fn tenant_pool(tenant: &str) -> Arc<Bulkhead> {
    static SITE: KeyedCallSite<Bulkhead> = KeyedCallSite::new("tenant-pool");
    SITE.get(tenant)
}

fn dir() -> PathBuf {
    std::env::temp_dir().join(format!("resil-reload-global-{}", std::process::id()))
}

#[test]
fn the_global_registries_reload_from_the_file_init_read() {
    if std::env::var_os(CHILD).is_none() {
        let dir = dir();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("resilience.toml");
        std::fs::write(&file, FILE).unwrap();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "the_global_registries_reload_from_the_file_init_read",
            ])
            .args(["--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env("RESIL_CONFIG", &file)
            .env(OVERRIDE, "10ms")
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(out.status.success(), "{shown}");
        assert!(shown.contains("1 passed"), "{shown}");
        return;
    }
    let file = PathBuf::from(std::env::var_os("RESIL_CONFIG").unwrap());

    // before init there is nothing to reload
    let before = resil::reload().unwrap_err();
    assert!(
        matches!(before, resil::config::InitError::NotInitialized),
        "{before}"
    );

    let report = resil::init().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.file(), Some(file.display().to_string().as_str()));
    assert_eq!(query(), Ok(7));
    let bulkhead = resil::registries()
        .bulkheads()
        .find("inventory-query")
        .unwrap();
    assert_eq!(bulkhead.config().max_concurrent_calls(), 5);
    assert_eq!(bulkhead.config().max_wait_duration().as_millis(), 10);
    let acme = tenant_pool("acme");
    assert_eq!(acme.config().max_concurrent_calls(), 2);

    // the file unchanged: no changes, the override still applies
    assert_eq!(resil::reload().unwrap().to_string(), "no changes");

    // edited: the call site of the attribute, the keyed instances and the
    // registry's handles see it, with the same instances
    let edited = FILE
        .replace("max-concurrent-calls = 5", "max-concurrent-calls = 0")
        .replace(
            "max-concurrent-calls = 2",
            "max-concurrent-calls = 4\nkey-label = true",
        )
        .replace("max-attempts = 2", "max-attempts = 3");
    std::fs::write(&file, &edited).unwrap();
    let dry = resil::reload_dry_run().unwrap();
    let expected = [
        "retry inventory-query: max-attempts 2 -> 3",
        "bulkhead inventory-query: max-concurrent-calls 5 -> 0",
        "bulkhead tenant-pool: max-concurrent-calls 2 -> 4",
        "bulkhead tenant-pool: key-label false -> true",
    ];
    assert_eq!(dry.to_string().lines().collect::<Vec<_>>(), expected);
    assert_eq!(query(), Ok(7), "a dry run applies nothing");
    assert_eq!(acme.config().max_concurrent_calls(), 2);

    let applied = resil::reload().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(applied.to_string().lines().collect::<Vec<_>>(), expected);
    assert!(matches!(query(), Err(QueryError::Refused(_))));
    assert!(Arc::ptr_eq(
        &bulkhead,
        &resil::registries()
            .bulkheads()
            .find("inventory-query")
            .unwrap()
    ));
    assert_eq!(
        bulkhead.config().max_wait_duration().as_millis(),
        10,
        "the environment's override is read again"
    );
    assert_eq!(acme.config().max_concurrent_calls(), 4, "a live key");
    let globex = tenant_pool("globex");
    assert_eq!(globex.config().max_concurrent_calls(), 4, "a new key");
    assert_eq!(globex.tags().get("key").map(String::as_str), Some("globex"));
    assert_eq!(acme.tags().get("key"), None, "a live key keeps its tags");
    let now = resil_config::global::current_report().unwrap();
    assert_eq!(
        now.instance(resil::config::Aspect::Bulkhead, "inventory-query")
            .unwrap()
            .setting("max-concurrent-calls"),
        Some("0")
    );
    // the init report stays what init read
    assert_eq!(
        resil_config::global::report()
            .unwrap()
            .instance(resil::config::Aspect::Bulkhead, "inventory-query")
            .unwrap()
            .setting("max-concurrent-calls"),
        Some("5")
    );

    // a refused file changes nothing, and says so as init would
    std::fs::write(
        &file,
        edited.replace("max-attempts = 3", "max-attempts = -1"),
    )
    .unwrap();
    let err = resil::reload().unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    let p = &err.problems()[0];
    assert_eq!(p.source(), file.display().to_string());
    assert_eq!(p.key(), "retry.instances.inventory-query.max-attempts");
    assert_eq!(p.value(), Some("-1"));
    assert!(matches!(query(), Err(QueryError::Refused(_))));

    // a deleted file is a refused reload
    std::fs::remove_file(&file).unwrap();
    let err = resil::reload().unwrap_err();
    assert!(
        err.problems()[0]
            .message()
            .starts_with("cannot read the file"),
        "{err}"
    );
    assert!(matches!(query(), Err(QueryError::Refused(_))));

    // back, with an instance removed: it returns to the defaults
    std::fs::write(
        &file,
        FILE.replace(
            "[bulkhead.instances.unused]\nmax-concurrent-calls = 3\n",
            "",
        ),
    )
    .unwrap();
    let back = resil::reload().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        back.to_string().lines().collect::<Vec<_>>(),
        [
            "retry inventory-query: max-attempts 3 -> 2",
            "bulkhead inventory-query: max-concurrent-calls 0 -> 5",
            "bulkhead tenant-pool: max-concurrent-calls 4 -> 2",
            "bulkhead tenant-pool: key-label true -> false",
            "bulkhead unused: back to the defaults",
            "bulkhead unused: max-concurrent-calls 3 -> 25",
        ]
    );
    assert_eq!(query(), Ok(7));

    // the actuator on the global registries reloads them too (and `unused`
    // is configured again)
    std::fs::write(
        &file,
        FILE.replace("max-concurrent-calls = 5", "max-concurrent-calls = 1"),
    )
    .unwrap();
    let router = resil::actuator::Actuator::builder()
        .state_changes("s3cret")
        .build()
        .router();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (status, body) = runtime.block_on(async {
        use tower::ServiceExt as _;
        let request = axum::http::Request::post("/actuator/refresh")
            .header("authorization", "Bearer s3cret")
            .body(axum::body::Body::empty())
            .unwrap();
        let response = router.oneshot(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    });
    assert_eq!(status, axum::http::StatusCode::OK, "{body}");
    assert_eq!(
        body,
        r#"{"changed":["bulkhead.instances.inventory-query.max-concurrent-calls","bulkhead.instances.unused.max-concurrent-calls"]}"#
    );
    assert_eq!(bulkhead.config().max_concurrent_calls(), 1);
}
