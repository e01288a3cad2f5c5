//! A password in a `cluster-url` (`redis://admin:s3cr3t@...`) on every
//! path that prints, logs or serves configuration: start-up errors (a bad
//! URL, a syntax error on its line, YAML), the report and its settings, a
//! refused reload (its error and its log line), the `/actuator/refresh`
//! 400 body, `/actuator/resilience`, and the audit log. Each shows the URL
//! with `***` where the password was, through the one redaction of
//! `resil_core::redact::userinfo`. (`resil check` and `resil explain` are
//! tested with the binary, in resil-cli's tests.)

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use resil::actuator::Actuator;
use resil::config::Resilience;
use tower::ServiceExt as _;

const SECRET: &str = "s3cr3t";
const URL: &str = "redis://admin:s3cr3t@127.0.0.1:1/0";
const SHOWN: &str = "redis://admin:***@127.0.0.1:1/0";
const TOKEN: &str = "operator-token";

fn load(name: &str, text: &str) -> Result<Resilience, resil::config::InitError> {
    Resilience::builder()
        .file_contents(name, text)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
}

fn assert_hidden(what: &str, text: &str) {
    assert!(!text.contains(SECRET), "{what} shows the password:\n{text}");
}

#[test]
fn start_up_errors_never_show_the_password() {
    let cases = [
        // not a Redis URL
        "[ratelimiter.instances.a]\ncluster-url = \"http://admin:s3cr3t@127.0.0.1/0\"\n",
        // a Redis URL the client refuses
        "[ratelimiter.instances.a]\ncluster-url = \"redis://admin:s3cr3t@127.0.0.1:notaport/0\"\n",
        // TLS, which the client is built without
        "[circuitbreaker.instances.a]\ncluster-url = \"rediss://admin:s3cr3t@127.0.0.1/0\"\n",
        // a syntax error on the URL's line
        "[ratelimiter.instances.a]\ncluster-url = \"redis://admin:s3cr3t@127.0.0.1:1/0\" oops\n",
        // a good URL, with another mistake beside it
        "[ratelimiter.instances.a]\ncluster-url = \"redis://admin:s3cr3t@127.0.0.1:1/0\"\ncluster-lease = 0\n",
    ];
    for text in cases {
        let err = load("resilience.toml", text).expect_err(text);
        assert_hidden("the error", &err.to_string());
        assert_hidden("the error's Debug", &format!("{err:?}"));
        for p in err.problems() {
            assert_hidden("a problem's value", p.value().unwrap_or(""));
            assert_hidden("a problem's message", p.message());
        }
    }
    let err = load(
        "resilience.toml",
        "[ratelimiter.instances.a]\ncluster-url = \"http://admin:s3cr3t@127.0.0.1/0\"\n",
    )
    .unwrap_err();
    assert_eq!(
        err.problems()[0].value(),
        Some("\"http://admin:***@127.0.0.1/0\"")
    );
    // the same keys in a Spring application.yml
    let yaml = "resilience4j:\n  ratelimiter:\n    instances:\n      a:\n        cluster-url: \"http://admin:s3cr3t@127.0.0.1/0\"\n        cluster-url: twice\n";
    let err = load("application.yml", yaml).unwrap_err();
    assert_hidden("a YAML error", &err.to_string());
}

#[test]
fn the_report_never_shows_the_password() {
    let loaded = load(
        "resilience.toml",
        &format!(
            "[ratelimiter.instances.partner]\nlimit-for-period = 10\nlimit-refresh-period = \"1s\"\ncluster-url = \"{URL}\"\n\n[circuitbreaker.instances.partner]\ncluster-url = \"{URL}\"\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let report = loaded.report();
    for aspect in [
        resil::config::Aspect::RateLimiter,
        resil::config::Aspect::CircuitBreaker,
    ] {
        let instance = report.instance(aspect, "partner").expect("reported");
        assert_eq!(instance.setting("cluster-url"), Some(SHOWN));
    }
    assert_hidden("the report", &report.to_string());
    assert_hidden("the report's Debug", &format!("{report:?}"));
    let config = loaded
        .registries()
        .rate_limiters()
        .rate_limiter("partner")
        .config();
    assert_hidden("the limiter's configuration", &format!("{config:?}"));
}

/// Every `tracing` event's message and fields, as text.
#[derive(Clone, Default)]
struct Logged(Arc<Mutex<String>>);

impl std::io::Write for Logged {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap()
            .push_str(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Fixture {
    dir: PathBuf,
    file: PathBuf,
    loaded: Arc<Resilience>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn file_text(url: &str) -> String {
    format!(
        "[ratelimiter.instances.partner]\nlimit-for-period = 10\nlimit-refresh-period = \"1s\"\ncluster-url = \"{url}\"\n"
    )
}

fn fixture(name: &str) -> Fixture {
    let dir = std::env::temp_dir().join(format!("resil-redact-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("resilience.toml");
    std::fs::write(&file, file_text(URL)).unwrap();
    let loaded = Arc::new(
        Resilience::builder()
            .file(&file)
            .env_vars(Vec::<(String, String)>::new())
            .declarations([])
            .load()
            .unwrap_or_else(|e| panic!("{e}")),
    );
    Fixture { dir, file, loaded }
}

#[test]
fn a_refused_reload_never_shows_the_password() {
    let f = fixture("reload");
    // a new password is a new cluster url: refused until a restart
    std::fs::write(&f.file, file_text("redis://admin:s3cr3t-2@127.0.0.1:1/0")).unwrap();
    let logged = Logged::default();
    let writer = logged.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let err = tracing::subscriber::with_default(subscriber, || f.loaded.reload()).unwrap_err();
    assert!(
        err.problems()
            .iter()
            .any(|p| p.key() == "ratelimiter.instances.partner.cluster-url"),
        "{err}"
    );
    assert_hidden("the refused reload", &err.to_string());
    let log = logged.0.lock().unwrap().clone();
    assert!(log.contains("reload rejected"), "{log}");
    assert!(log.contains("redis://admin:***@"), "{log}");
    assert_hidden("the reload's log line", &log);
}

async fn send(
    router: &axum::Router,
    method: Method,
    uri: &str,
    body: &str,
) -> (StatusCode, String) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_owned()))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

#[tokio::test]
async fn the_actuator_never_serves_the_password() {
    let f = fixture("actuator");
    let router = Actuator::builder()
        .resilience(f.loaded.clone())
        .state_changes(TOKEN)
        .expose_sources(true)
        .build()
        .router();
    let (status, body) = send(&router, Method::GET, "/actuator/resilience", "").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(SHOWN), "{body}");
    assert_hidden("/actuator/resilience", &body);

    // a refused refresh: a changed url, then a syntax error on its line
    std::fs::write(&f.file, file_text("redis://admin:s3cr3t-2@127.0.0.1:1/0")).unwrap();
    let (status, body) = send(&router, Method::POST, "/actuator/refresh", "").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("redis://admin:***@"), "{body}");
    assert_hidden("the refresh's 400", &body);
    std::fs::write(
        &f.file,
        file_text(URL) + "oops = \"redis://admin:s3cr3t@h\" =\n",
    )
    .unwrap();
    let (status, body) = send(&router, Method::POST, "/actuator/refresh", "").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_hidden("the refresh's 400", &body);

    // a request body that carries one is kept in the audit log without it
    let (status, _) = send(
        &router,
        Method::POST,
        "/actuator/ratelimiters/partner",
        r#"{"limitForPeriod":5,"note":"redis://admin:s3cr3t@elsewhere/0"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = send(&router, Method::GET, "/actuator/resilienceaudit", "").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("redis://admin:***@elsewhere"), "{body}");
    assert_hidden("the audit log", &body);
}
