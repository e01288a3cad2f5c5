//! A throwaway `redis-server` per test: on a free loopback port, without
//! persistence, killed by pid when dropped, and restartable on the same port
//! so that a test can take Redis away and bring it back.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A `redis-server` process that this test owns.
///
/// ```no_run
/// let Some(mut redis) = resil_testkit::RedisServer::start_or_skip("my_test") else {
///     return; // no redis-server here, and not in CI: skipped with a message
/// };
/// let url = redis.url(); // redis://127.0.0.1:<port>/0
/// redis.kill();          // Redis is gone ...
/// redis.restart();       // ... and back, empty, on the same port
/// # let _ = url;
/// ```
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    /// Arguments after the common ones (a cluster node's, say).
    args: Vec<String>,
}

/// The program started, `redis-server` unless `RESIL_REDIS_SERVER` names another.
pub(crate) fn program() -> String {
    std::env::var("RESIL_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned())
}

/// Whether `program --version` runs and succeeds here.
pub(crate) fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether `test` is skipped because one of `programs` cannot be run here:
/// true after printing why when `CI` is not set.
///
/// # Panics
///
/// When `CI` is set and a program is missing: CI must run the Redis tests.
pub(crate) fn skipped(test: &str, programs: &[String]) -> bool {
    let Some(missing) = programs.iter().find(|p| !runs(p)) else {
        return false;
    };
    if std::env::var_os("CI").is_some() {
        panic!(
            "{test}: `{missing}` is not on PATH but CI is set: the Redis tests must run in CI (install Debian's redis-server)"
        );
    }
    eprintln!(
        "skipped {test}: `{missing}` is not on PATH (install redis-server to run the Redis tests; with CI set they fail instead)"
    );
    true
}

impl RedisServer {
    /// Starts a server, or returns `None` after printing why the test
    /// `test` is skipped when no `redis-server` is on `PATH` and `CI` is
    /// not set.
    ///
    /// # Panics
    ///
    /// When `CI` is set and `redis-server` is missing (CI must run these
    /// tests), or when the server does not start.
    pub fn start_or_skip(test: &str) -> Option<RedisServer> {
        if skipped(test, &[program()]) {
            return None;
        }
        Some(RedisServer::start().unwrap_or_else(|e| panic!("{test}: {e}")))
    }

    /// Starts a server on a free loopback port and waits until it answers `PING`.
    ///
    /// # Errors
    ///
    /// When `redis-server` cannot be run or does not answer within 5 s.
    pub fn start() -> io::Result<RedisServer> {
        RedisServer::start_with(Vec::new(), |_| true)
    }

    /// Starts a server with `args` after the common ones, on a free port
    /// that `fits`, in a directory of its own.
    pub(crate) fn start_with(
        args: Vec<String>,
        fits: impl Fn(u16) -> bool,
    ) -> io::Result<RedisServer> {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "redis-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let mut last = None;
        // the port is free when asked, but another process may take it
        // before the server binds it: try a few
        for _ in 0..20 {
            let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            if !fits(port) {
                continue;
            }
            let mut server = RedisServer {
                child: None,
                port,
                dir: dir.clone(),
                args: args.clone(),
            };
            match server.spawn() {
                Ok(()) => return Ok(server),
                Err(e) => last = Some(e),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(last.unwrap_or_else(|| io::Error::other("redis-server did not start: no free port")))
    }

    fn spawn(&mut self) -> io::Result<()> {
        let child = Command::new(program())
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--save", ""])
            .args(["--appendonly", "no"])
            .args(["--daemonize", "no"])
            .args(["--loglevel", "warning"])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot run `{}`: {e}", program())))?;
        self.child = Some(child);
        for _ in 0..500 {
            if self.ping() {
                return Ok(());
            }
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(io::Error::other(format!(
                    "redis-server on port {} exited: {status}",
                    self.port
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill();
        Err(io::Error::other(format!(
            "redis-server on port {} did not answer PING within 5s",
            self.port
        )))
    }

    /// Whether the server answers `PING` now.
    pub fn ping(&self) -> bool {
        let Ok(mut s) = TcpStream::connect_timeout(
            &([127, 0, 0, 1], self.port).into(),
            Duration::from_millis(200),
        ) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        let mut buf = [0u8; 7];
        s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }

    /// Sends one command (RESP, on a connection of its own) and returns the
    /// reply's text: a simple string, an integer or a bulk string as it is,
    /// an error as `Err`. Arrays are not read (no test needs them).
    ///
    /// # Errors
    ///
    /// When the server cannot be reached in 2 s, or answers an error.
    pub fn command(&self, args: &[&str]) -> io::Result<String> {
        let mut s = TcpStream::connect_timeout(
            &([127, 0, 0, 1], self.port).into(),
            Duration::from_secs(2),
        )?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        let mut request = format!("*{}\r\n", args.len());
        for a in args {
            request.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(request.as_bytes())?;
        let mut reader = io::BufReader::new(s);
        let mut line = String::new();
        io::BufRead::read_line(&mut reader, &mut line)?;
        let line = line.trim_end();
        let (kind, rest) = line.split_at(line.len().min(1));
        match kind {
            "+" | ":" => Ok(rest.to_owned()),
            "-" => Err(io::Error::other(rest.to_owned())),
            "$" => {
                let Ok(len) = rest.parse::<i64>() else {
                    return Err(io::Error::other(format!("a bad bulk length: {line}")));
                };
                if len < 0 {
                    return Ok(String::new());
                }
                let mut body = vec![0u8; len as usize + 2];
                reader.read_exact(&mut body)?;
                body.truncate(len as usize);
                String::from_utf8(body).map_err(io::Error::other)
            }
            _ => Err(io::Error::other(format!("an unexpected reply: {line}"))),
        }
    }

    /// The calls of each command since the server started (`INFO
    /// commandstats`), by lower-case name: what a test counts round trips with.
    ///
    /// # Errors
    ///
    /// As [`RedisServer::command`].
    pub fn command_calls(&self) -> io::Result<std::collections::BTreeMap<String, u64>> {
        let info = self.command(&["INFO", "commandstats"])?;
        Ok(info
            .lines()
            .filter_map(|l| {
                let (name, stats) = l.strip_prefix("cmdstat_")?.split_once(':')?;
                let calls = stats.split(',').find_map(|f| f.strip_prefix("calls="))?;
                Some((name.to_owned(), calls.parse().ok()?))
            })
            .collect())
    }

    /// `redis://127.0.0.1:<port>/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// The server's port (the same after a restart).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the server (`SIGKILL`, by pid) and reaps it; its data is gone.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port, empty.
    ///
    /// # Panics
    ///
    /// When it does not start (the port was taken meanwhile, say).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn()
            .unwrap_or_else(|e| panic!("restarting redis-server: {e}"));
    }

    /// Stops the server without killing it (`SIGSTOP`): it accepts
    /// connections and answers nothing, as a server stuck in a slow command.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused server go on (`SIGCONT`).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        if let Some(pid) = self.pid() {
            let _ = Command::new("kill")
                .args([signal, &pid.to_string()])
                .status();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.resume();
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
