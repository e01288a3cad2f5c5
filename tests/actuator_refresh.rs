//! `POST /actuator/refresh` through the real router, in process: the bearer
//! token first, the changed key paths, the problems of a refused file, the
//! dry run, the audit log, and registries the actuator cannot reload. The
//! registries are loaded from a real file in a temporary directory, edited
//! between requests.

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use resil::actuator::Actuator;
use resil::config::Resilience;
use serde_json::{Value, json};
use tower::ServiceExt as _;

const TOKEN: &str = "s3cr3t-token";

const FILE: &str = r#"
[circuitbreaker.instances.inventory-query]
sliding-window-size = 20

[bulkhead.instances.inventory-query]
max-concurrent-calls = 5
"#;

struct Fixture {
    dir: PathBuf,
    file: PathBuf,
    loaded: Arc<Resilience>,
    router: Router,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn fixture(name: &str) -> Fixture {
    let dir = std::env::temp_dir().join(format!("resil-refresh-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("resilience.toml");
    std::fs::write(&file, FILE).unwrap();
    let loaded = Arc::new(
        Resilience::builder()
            .file(&file)
            .env_vars(Vec::<(String, String)>::new())
            .declarations([])
            .load()
            .unwrap_or_else(|e| panic!("{e}")),
    );
    let router = Actuator::builder()
        .resilience(loaded.clone())
        .state_changes(TOKEN)
        .build()
        .router();
    Fixture {
        dir,
        file,
        loaded,
        router,
    }
}

impl Fixture {
    fn edit(&self, from: &str, to: &str) {
        assert!(FILE.contains(from));
        std::fs::write(&self.file, FILE.replace(from, to)).unwrap();
    }

    fn calls(&self) -> u32 {
        self.loaded
            .registries()
            .bulkheads()
            .bulkhead("inventory-query")
            .config()
            .max_concurrent_calls()
    }
}

async fn refresh(router: &Router, uri: &str, token: Option<&str>) -> (StatusCode, Value) {
    let mut request = Request::builder().method(Method::POST).uri(uri);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = router
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, serde_json::from_slice(&body).unwrap())
}

#[tokio::test]
async fn without_the_token_nothing_is_reloaded() {
    let f = fixture("token");
    f.edit("max-concurrent-calls = 5", "max-concurrent-calls = 7");
    let (status, body) = refresh(&f.router, "/actuator/refresh", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["status"], 401);
    let (status, _) = refresh(&f.router, "/actuator/refresh", Some("guess")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = refresh(&f.router, "/actuator/refresh?dryRun=yes", None).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "the token before the query"
    );
    assert_eq!(f.calls(), 5);
    // without state changes the route does not exist
    let closed = Actuator::builder()
        .resilience(f.loaded.clone())
        .build()
        .router();
    let response = closed
        .oneshot(
            Request::post("/actuator/refresh")
                .header("authorization", format!("Bearer {TOKEN}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(f.calls(), 5);
}

#[tokio::test]
async fn a_refresh_applies_the_edit_and_lists_the_changed_keys() {
    let f = fixture("apply");
    let (status, body) = refresh(&f.router, "/actuator/refresh", Some(TOKEN)).await;
    assert_eq!((status, body), (StatusCode::OK, json!({ "changed": [] })));

    f.edit(
        "max-concurrent-calls = 5",
        "max-concurrent-calls = 7\nshadow = true",
    );
    let (status, body) = refresh(&f.router, "/actuator/refresh", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({ "changed": [
            "bulkhead.instances.inventory-query.max-concurrent-calls",
            "bulkhead.instances.inventory-query.shadow",
        ]})
    );
    assert_eq!(f.calls(), 7);
    // the actuator shows the settings in force
    let response = f
        .router
        .clone()
        .oneshot(
            Request::get("/actuator/resilience")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let doc: Value = serde_json::from_slice(
        &axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        doc["instances"]["bulkhead"]["inventory-query"]["settings"]["max-concurrent-calls"],
        "7"
    );

    // an instance removed: its table's path
    std::fs::write(
        &f.file,
        "[circuitbreaker.instances.inventory-query]\nsliding-window-size = 20\n",
    )
    .unwrap();
    let (status, body) = refresh(&f.router, "/actuator/refresh", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({ "changed": [
            "bulkhead.instances.inventory-query",
            "bulkhead.instances.inventory-query.max-concurrent-calls",
            "bulkhead.instances.inventory-query.shadow",
        ]})
    );
    assert_eq!(f.calls(), 25);
}

#[tokio::test]
async fn a_refused_file_is_a_400_with_every_problem() {
    let f = fixture("refused");
    std::fs::write(
        &f.file,
        FILE.replace("max-concurrent-calls = 5", "max-concurrent-calls = -1")
            .replace("sliding-window-size = 20", "sliding-window-size = 0"),
    )
    .unwrap();
    let (status, body) = refresh(&f.router, "/actuator/refresh", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let file = f.file.display().to_string();
    assert_eq!(body["status"], 400);
    assert_eq!(body["path"], "/actuator/refresh");
    assert_eq!(
        body["message"],
        "the configuration was refused (2 problems); nothing changed"
    );
    assert_eq!(
        body["problems"],
        json!([
            {
                "source": file,
                "key": "bulkhead.instances.inventory-query.max-concurrent-calls",
                "value": "-1",
                "message": "expected a whole number from 0 to 4294967295",
            },
            {
                "source": file,
                "key": "circuitbreaker.instances.inventory-query.sliding-window-size",
                "value": "0",
                "message": body["problems"][1]["message"],
            },
        ])
    );
    assert_eq!(f.calls(), 5);
    // restart-only settings are problems too
    std::fs::write(
        &f.file,
        format!("{FILE}\n[bulkhead.tags]\nenv = \"prod\"\n"),
    )
    .unwrap();
    let (status, body) = refresh(&f.router, "/actuator/refresh", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["problems"][0]["key"], "bulkhead.tags.env");
    assert_eq!(
        body["problems"][0]["message"],
        "cannot change while the service runs; restart to apply"
    );
}

#[tokio::test]
async fn a_dry_run_applies_nothing() {
    let f = fixture("dry");
    f.edit("max-concurrent-calls = 5", "max-concurrent-calls = 9");
    let (status, body) = refresh(&f.router, "/actuator/refresh?dryRun=true", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({ "changed": ["bulkhead.instances.inventory-query.max-concurrent-calls"] })
    );
    assert_eq!(f.calls(), 5);
    let (status, _) = refresh(&f.router, "/actuator/refresh?dryRun=false", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(f.calls(), 9);
    let (status, body) = refresh(&f.router, "/actuator/refresh?dryRun=maybe", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["message"], "`dryRun` is true or false; got `maybe`");
}

#[tokio::test]
async fn every_refresh_is_audited() {
    let f = fixture("audit");
    f.edit("max-concurrent-calls = 5", "max-concurrent-calls = 6");
    refresh(&f.router, "/actuator/refresh", None).await;
    refresh(&f.router, "/actuator/refresh?dryRun=true", Some(TOKEN)).await;
    refresh(&f.router, "/actuator/refresh", Some(TOKEN)).await;
    let response = f
        .router
        .clone()
        .oneshot(
            Request::get("/actuator/resilienceaudit")
                .header("authorization", format!("Bearer {TOKEN}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let log: Value = serde_json::from_slice(
        &axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap(),
    )
    .unwrap();
    let seen: Vec<(String, String, u64)> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["identity"].as_str().unwrap().to_owned(),
                e["status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("/actuator/refresh".to_owned(), "operator".to_owned(), 200),
            ("/actuator/refresh".to_owned(), "operator".to_owned(), 200),
        ]
    );
    // the refused one is kept apart
    assert_eq!(log["rejected"]["count"], 1);
    assert_eq!(log["rejected"]["entries"][0]["identity"], "no-token");
    assert_eq!(log["rejected"]["entries"][0]["status"], 401);
}

#[tokio::test]
async fn registries_without_a_reload_answer_404_and_a_hook_is_called() {
    let (registries, report) = Resilience::builder()
        .file_contents("resilience.toml", FILE)
        .env_vars(Vec::<(String, String)>::new())
        .load()
        .unwrap()
        .into_parts();
    let registries = Arc::new(registries);
    let router = Actuator::builder()
        .registries(registries.clone())
        .report(report)
        .state_changes(TOKEN)
        .build()
        .router();
    let (status, body) = refresh(&router, "/actuator/refresh", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    // the application's own reload
    let loaded = Arc::new(
        Resilience::builder()
            .file_contents("resilience.toml", FILE)
            .env_vars(Vec::<(String, String)>::new())
            .load()
            .unwrap(),
    );
    let l = loaded.clone();
    let router = Actuator::builder()
        .resilience(loaded.clone())
        .state_changes(TOKEN)
        .reload_with(move |dry_run| {
            let text = FILE.replace("sliding-window-size = 20", "sliding-window-size = 30");
            if dry_run {
                l.reload_from_contents_dry_run("resilience.toml", text)
            } else {
                l.reload_from_contents("resilience.toml", text)
            }
        })
        .build()
        .router();
    let (status, body) = refresh(&router, "/actuator/refresh?dryRun=true", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({ "changed": ["circuitbreaker.instances.inventory-query.sliding-window-size"] })
    );

    // the global registries, which init did not build: 409
    let global = Actuator::builder().state_changes(TOKEN).build().router();
    let (status, body) = refresh(&global, "/actuator/refresh", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
}

#[tokio::test]
async fn shadow_refusals_are_events_of_the_actuator() {
    let loaded = Arc::new(
        Resilience::builder()
            .file_contents(
                "resilience.toml",
                "[bulkhead.instances.shadowed]\nmax-concurrent-calls = 1\nshadow = true\n",
            )
            .env_vars(Vec::<(String, String)>::new())
            .declarations([])
            .load()
            .unwrap(),
    );
    let router = Actuator::builder()
        .resilience(loaded.clone())
        .build()
        .router();
    let bulkhead = loaded.registries().bulkheads().bulkhead("shadowed");
    let held = bulkhead.try_acquire_permission().unwrap();
    bulkhead.call(|| Ok::<_, ()>(())).unwrap();
    drop(held);
    let response = router
        .oneshot(
            Request::get("/actuator/bulkheadevents/shadowed/shadow_refusal")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = serde_json::from_slice(
        &axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap(),
    )
    .unwrap();
    let events = body["bulkheadEvents"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{body}");
    assert_eq!(events[0]["type"], "SHADOW_REFUSAL");
    assert_eq!(events[0]["bulkheadName"], "shadowed");
}
