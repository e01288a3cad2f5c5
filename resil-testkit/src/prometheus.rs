//! A throwaway `prometheus` server per test, scraping one target every
//! second on a free loopback port, with its storage in a temporary
//! directory, killed by pid when dropped; and `promtool` runs.
//!
//! Both programs come with Debian's `prometheus` package. Outside CI a test
//! without them is skipped with a message; with `CI` set it fails instead.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The server started, `prometheus` unless `RESIL_PROMETHEUS` names another.
fn server_program() -> String {
    std::env::var("RESIL_PROMETHEUS").unwrap_or_else(|_| "prometheus".to_owned())
}

/// The rule checker run, `promtool` unless `RESIL_PROMTOOL` names another.
fn promtool_program() -> String {
    std::env::var("RESIL_PROMTOOL").unwrap_or_else(|_| "promtool".to_owned())
}

fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `Some(())` when `program` runs here; otherwise `None` after printing why
/// `test` is skipped, or a panic when `CI` is set.
fn present_or_skip(test: &str, program: &str) -> Option<()> {
    if runs(program) {
        return Some(());
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{test}: `{program}` is not on PATH but CI is set: the Prometheus tests must run in CI (install Debian's prometheus package)"
        );
    }
    eprintln!(
        "skipped {test}: `{program}` is not on PATH (install Debian's prometheus package to run the Prometheus tests; with CI set they fail instead)"
    );
    None
}

/// Runs `promtool` with `args` in `dir`, or returns `None` after printing
/// why `test` is skipped when there is no `promtool` and `CI` is not set.
///
/// ```no_run
/// let Some(out) = resil_testkit::promtool_or_skip("my_test", ".", &["check", "rules", "rules.yml"]) else {
///     return; // no promtool here, and not in CI: skipped with a message
/// };
/// assert!(out.status.success());
/// ```
///
/// # Panics
///
/// When `CI` is set and `promtool` is missing, or when it cannot be run.
pub fn promtool_or_skip(test: &str, dir: impl AsRef<Path>, args: &[&str]) -> Option<Output> {
    let program = promtool_program();
    present_or_skip(test, &program)?;
    Some(
        Command::new(&program)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{test}: cannot run `{program}`: {e}")),
    )
}

/// Runs `promtool` with `args`, `input` on its standard input (`promtool
/// check metrics` reads the exposition there).
///
/// # Errors
///
/// When `promtool` cannot be run.
pub fn promtool_with_input(args: &[&str], input: &str) -> io::Result<Output> {
    let mut child = Command::new(promtool_program())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes())?;
    }
    child.wait_with_output()
}

/// A `prometheus` process that this test owns, scraping one target.
///
/// ```no_run
/// # let target: std::net::SocketAddr = "127.0.0.1:8080".parse().unwrap();
/// let Some(prometheus) =
///     resil_testkit::PrometheusServer::start_or_skip("my_test", target, "/actuator/prometheus", &[])
/// else {
///     return; // no prometheus here, and not in CI: skipped with a message
/// };
/// let json = prometheus.query("up").unwrap(); // the API's JSON answer
/// # let _ = json;
/// ```
#[derive(Debug)]
pub struct PrometheusServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

impl PrometheusServer {
    /// Starts a server scraping `http://{target}{path}` every second (rule
    /// files evaluated every second too), or returns `None` after printing
    /// why `test` is skipped when there is no `prometheus` and `CI` is not set.
    ///
    /// # Panics
    ///
    /// When `CI` is set and `prometheus` is missing, or when the server
    /// does not start.
    pub fn start_or_skip(
        test: &str,
        target: SocketAddr,
        path: &str,
        rule_files: &[&Path],
    ) -> Option<PrometheusServer> {
        present_or_skip(test, &server_program())?;
        Some(
            PrometheusServer::start(target, path, rule_files)
                .unwrap_or_else(|e| panic!("{test}: {e}")),
        )
    }

    /// Starts a server on a free loopback port and waits until it is ready.
    ///
    /// # Errors
    ///
    /// When `prometheus` cannot be run, exits, or is not ready within 20 s.
    pub fn start(
        target: SocketAddr,
        path: &str,
        rule_files: &[&Path],
    ) -> io::Result<PrometheusServer> {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "prometheus-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(dir.join("data"))?;
        let mut config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: resil\n    metrics_path: {path:?}\n    \
             static_configs:\n      - targets: [\"{target}\"]\n"
        );
        if !rule_files.is_empty() {
            config.push_str("rule_files:\n");
            for file in rule_files {
                config.push_str(&format!("  - {:?}\n", file.display().to_string()));
            }
        }
        std::fs::write(dir.join("prometheus.yml"), config)?;
        let mut last = None;
        // the port is free when asked, but another process may take it
        // before the server binds it: try a few
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            let mut server = PrometheusServer {
                child: None,
                port,
                dir: dir.clone(),
            };
            match server.spawn() {
                Ok(()) => return Ok(server),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("prometheus did not start")))
    }

    fn spawn(&mut self) -> io::Result<()> {
        // its log in a file: a pipe nobody reads could fill and stall it
        let log = std::fs::File::create(self.dir.join("prometheus.log"))?;
        let child = Command::new(server_program())
            .arg(format!(
                "--config.file={}",
                self.dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                self.dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{}", self.port))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| {
                io::Error::new(e.kind(), format!("cannot run `{}`: {e}", server_program()))
            })?;
        self.child = Some(child);
        // 400 tries 50 ms apart: 20 s at most
        for _ in 0..400 {
            if self.get("/-/ready").is_ok_and(|(status, _)| status == 200) {
                return Ok(());
            }
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                let log =
                    std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default();
                self.child = None;
                return Err(io::Error::other(format!(
                    "prometheus on port {} exited: {status}\n{log}",
                    self.port
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill();
        Err(io::Error::other(format!(
            "prometheus on port {} was not ready within 20s",
            self.port
        )))
    }

    /// The server's address, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `GET /api/v1/query?query=...` (an instant query, now): the API's JSON.
    ///
    /// # Errors
    ///
    /// When the server cannot be reached, or answers other than 200 (a
    /// query it cannot parse: the error's JSON is in the message).
    pub fn query(&self, promql: &str) -> io::Result<String> {
        self.api(&format!("/api/v1/query?query={}", encode(promql)))
    }

    /// `GET` of an API path (with its query string already encoded): the
    /// JSON body of a 200 answer.
    ///
    /// # Errors
    ///
    /// As [`PrometheusServer::query`].
    pub fn api(&self, path_and_query: &str) -> io::Result<String> {
        let (status, body) = self.get(path_and_query)?;
        if status == 200 {
            Ok(body)
        } else {
            Err(io::Error::other(format!(
                "GET {path_and_query}: {status} {body}"
            )))
        }
    }

    /// One `GET` on a connection of its own: the status and the body.
    fn get(&self, path_and_query: &str) -> io::Result<(u16, String)> {
        let mut s = TcpStream::connect_timeout(
            &([127, 0, 0, 1], self.port).into(),
            Duration::from_secs(2),
        )?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            s,
            "GET {path_and_query} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            self.port
        )?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw)?;
        let raw = String::from_utf8(raw).map_err(io::Error::other)?;
        let Some((head, body)) = raw.split_once("\r\n\r\n") else {
            return Err(io::Error::other(format!("an incomplete answer: {raw}")));
        };
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io::Error::other(format!("no status line: {head}")))?;
        let chunked = head.lines().any(|l| {
            let l = l.to_ascii_lowercase();
            l.starts_with("transfer-encoding:") && l.contains("chunked")
        });
        let body = if chunked {
            dechunk(body)?
        } else {
            body.to_owned()
        };
        Ok((status, body))
    }

    /// Stops the server (by its pid) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrometheusServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A chunked body's data.
fn dechunk(mut rest: &str) -> io::Result<String> {
    let bad = || io::Error::other("a malformed chunked body");
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").ok_or_else(bad)?;
        let size = usize::from_str_radix(size.trim(), 16).map_err(|_| bad())?;
        if size == 0 {
            return Ok(body);
        }
        body.push_str(after.get(..size).ok_or_else(bad)?);
        rest = after.get(size + 2..).ok_or_else(bad)?;
    }
}

/// Percent-encodes a query-string value.
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 3);
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
