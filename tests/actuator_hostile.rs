//! The actuator against hostile clients, through the real router (and, for
//! the streams, a real server on a loopback port with clients on addresses
//! of their own): anonymous requests cannot flush an operator's change out
//! of the audit log, anonymous streams cannot lock the operator out, and a
//! refresh does not stall the runtime while it reads and checks a file.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use resil::actuator::Actuator;
use resil::config::Resilience;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};
use tower::ServiceExt as _;

const TOKEN: &str = "operator-token";

const CONFIG: &str = "[circuitbreaker.instances.inventory-query]\nsliding-window-size = 20\n\n[bulkhead.instances.inventory-query]\nmax-concurrent-calls = 5\n";

fn loaded() -> Arc<Resilience> {
    Arc::new(
        Resilience::builder()
            .file_contents("resilience.toml", CONFIG)
            .env_vars(Vec::<(String, String)>::new())
            .declarations([])
            .load()
            .unwrap_or_else(|e| panic!("{e}")),
    )
}

async fn send(
    router: &Router,
    method: Method,
    uri: &str,
    token: Option<&str>,
    body: &str,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = router
        .clone()
        .oneshot(request.body(Body::from(body.to_owned())).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    (status, body)
}

#[tokio::test]
async fn anonymous_requests_cannot_flush_the_audit_log() {
    let loaded = loaded();
    let router = Actuator::builder()
        .resilience(loaded.clone())
        .state_changes(TOKEN)
        .build()
        .router();
    let uri = "/actuator/circuitbreakers/inventory-query";
    let (status, _) = send(
        &router,
        Method::POST,
        uri,
        Some(TOKEN),
        r#"{"updateState":"FORCE_OPEN"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // a flood of refused requests, with no token and with wrong ones
    for i in 0..1000 {
        let token = (i % 2 == 0).then_some("guess");
        let (status, _) = send(
            &router,
            Method::POST,
            uri,
            token,
            r#"{"updateState":"CLOSE"}"#,
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let (status, log) = send(
        &router,
        Method::GET,
        "/actuator/resilienceaudit",
        Some(TOKEN),
        "",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // the operator's change is still there, alone in the log of changes
    let entries = log["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{} changes kept", entries.len());
    assert_eq!(entries[0]["identity"], "operator");
    assert_eq!(entries[0]["request"], json!({"updateState": "FORCE_OPEN"}));
    // the refused ones are counted, and the last few kept apart
    assert_eq!(log["rejected"]["count"], 1000);
    let rejected = log["rejected"]["entries"].as_array().unwrap();
    assert_eq!(rejected.len(), 20);
    assert!(rejected.iter().all(|e| e["status"] == 401));
    assert_eq!(rejected.last().unwrap()["identity"], "no-token");
    let breaker = loaded
        .registries()
        .circuit_breakers()
        .circuit_breaker("inventory-query");
    assert_eq!(breaker.state().as_str(), "FORCED_OPEN");
}

/// An HTTP client on a loopback address of its own (`127.0.0.<n>`), so
/// that the server sees another peer.
async fn connect_from(n: u8, server: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from(([127, 0, 0, n], 0))).unwrap();
    socket.connect(server).await.unwrap()
}

/// Opens an event stream from `127.0.0.<n>` and returns its status and the
/// connection, which keeps the stream open while it lives.
async fn open_stream(n: u8, server: SocketAddr, token: Option<&str>) -> (u16, TcpStream) {
    let mut stream = connect_from(n, server).await;
    let auth = token.map_or_else(String::new, |t| format!("Authorization: Bearer {t}\r\n"));
    stream
        .write_all(
            format!("GET /actuator/streamcircuitbreakerevents HTTP/1.1\r\nHost: x\r\n{auth}\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    // the status line and headers: an SSE answer sends them at once
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).await.unwrap();
        assert!(n > 0, "the server closed before answering");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head[9..12].parse().unwrap();
    (status, stream)
}

#[tokio::test]
async fn anonymous_streams_cannot_lock_the_operator_out() {
    let router = Actuator::builder()
        .resilience(loaded())
        .state_changes(TOKEN)
        .build()
        .router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap()
    });
    // sixteen anonymous clients, each from an address of its own: they get
    // the 12 slots that are not the operator's
    let mut open = Vec::new();
    let mut refused = 0;
    for n in 2..18 {
        let (status, stream) = open_stream(n, server, None).await;
        match status {
            200 => open.push(stream),
            503 => refused += 1,
            other => panic!("stream {n}: {other}"),
        }
    }
    assert_eq!((open.len(), refused), (12, 4));
    // the operator still gets a stream
    let (status, _operator) = open_stream(100, server, Some(TOKEN)).await;
    assert_eq!(status, 200);
    // a wrong token is anonymous
    let (status, _) = open_stream(101, server, Some("guess")).await;
    assert_eq!(status, 503);
    drop(open);

    // one address holds at most 4 streams without the token
    let mut mine = Vec::new();
    for _ in 0..4 {
        let (status, stream) = open_stream(50, server, None).await;
        // the dropped connections above free their slots as the server
        // notices; a 503 here is that, not the bound
        if status == 200 {
            mine.push(stream);
        }
    }
    while mine.len() < 4 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let (status, stream) = open_stream(50, server, None).await;
        if status == 200 {
            mine.push(stream);
        }
    }
    let (status, _) = open_stream(50, server, None).await;
    assert_eq!(status, 429);
    let (status, _) = open_stream(51, server, None).await;
    assert_eq!(status, 200);
    serving.abort();
}

/// A refresh whose reload waits for another task of the same
/// current-thread runtime: it can finish only if the reload runs off the
/// runtime's thread. (Run on it, it would block the thread until its own
/// wait gave up, and the other task would never have run.)
#[test]
fn a_refresh_runs_off_the_runtime() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let loaded = loaded();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = std::sync::Mutex::new(rx);
    let target = loaded.clone();
    let router = Actuator::builder()
        .resilience(loaded.clone())
        .state_changes(TOKEN)
        .reload_with(move |dry_run| {
            let signalled = rx
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(5))
                .is_ok();
            if !signalled {
                return Err(resil::config::InitError::NotInitialized);
            }
            if dry_run {
                target.reload_dry_run()
            } else {
                target.reload()
            }
        })
        .build()
        .router();
    runtime.block_on(async {
        let other = tokio::spawn(async move {
            tx.send(()).unwrap();
        });
        let (status, body) =
            send(&router, Method::POST, "/actuator/refresh", Some(TOKEN), "").await;
        assert_eq!((status, body), (StatusCode::OK, json!({ "changed": [] })));
        other.await.unwrap();
    });
}

#[tokio::test]
async fn a_refresh_keeps_the_file_size_limit() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("resil-hostile-{}-size", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("resilience.toml");
    std::fs::write(&file, CONFIG).unwrap();
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
    // just under 1 MiB of comments and an edit: read, checked, applied
    let padding = "# padding\n".repeat(100_000);
    std::fs::write(&file, format!("{padding}{}", CONFIG.replace("= 5", "= 6"))).unwrap();
    let (status, body) = send(&router, Method::POST, "/actuator/refresh", Some(TOKEN), "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({ "changed": ["bulkhead.instances.inventory-query.max-concurrent-calls"] })
    );
    // past it: refused, nothing changes
    std::fs::write(&file, format!("{padding}{padding}{CONFIG}")).unwrap();
    let (status, body) = send(&router, Method::POST, "/actuator/refresh", Some(TOKEN), "").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.to_string().contains("1048576 bytes"), "{body}");
    let calls = loaded
        .registries()
        .bulkheads()
        .bulkhead("inventory-query")
        .config()
        .max_concurrent_calls();
    assert_eq!(calls, 6);
    let _ = std::fs::remove_dir_all(&dir);
}
