//! The Redis backend of resil's fleet: fleet-wide rate limits and half-open
//! probe budgets ([`resil_core::cluster`]) on one Redis server.
//!
//! Each operation is one atomic Lua script (`EVALSHA`, falling back to
//! `EVAL` after a restart emptied the script cache), reading time from
//! Redis's own clock (`TIME`), so the processes of a fleet need no
//! synchronized clocks and no read-modify-write races between them. The
//! client is the `redis` crate's reconnecting `ConnectionManager`, driven by
//! a small runtime on a thread of its own, so the backend works the same
//! from async and blocking callers and never blocks them.
//!
//! ```no_run
//! use resil_core::cluster::RateLimiterCluster;
//! use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
//! use resil_redis::RedisBackend;
//! use std::time::Duration;
//!
//! let backend = RedisBackend::connect("redis://127.0.0.1:6379/0")?;
//! let config = RateLimiterConfig::builder()
//!     .limit_for_period(100)
//!     .limit_refresh_period(Duration::from_secs(1))
//!     .timeout_duration(Duration::ZERO)
//!     .cluster(Some(RateLimiterCluster::new(backend).lease(10))) // key resil:ratelimiter:partner-api
//!     .build()?;
//! let limiter = RateLimiter::new("partner-api", config);
//! let _admitted = limiter.try_acquire_permission(1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Keys
//!
//! A rate limiter's key is a hash (`cycle`, `permits`) that expires two
//! cycles after its last use (longer while reservations are outstanding); a
//! breaker's key is a sorted set of probe tokens scored by their lease's
//! expiry (`+inf` once a probe has reported), expiring twice the probe
//! expiry after the last probe was taken. Each operation touches one key,
//! so the scripts also run on Redis Cluster (put a hash tag in the key).
//!
//! Minimum supported Rust version: 1.88.
#![doc(test(attr(deny(warnings))))]

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Script};
use resil_core::cluster::{
    BackendError, ClusterBackend, PermitGrant, PermitRequest, ProbeRequest, Reply, Watcher,
};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// The permits script. `KEYS[1]`: the limiter's hash. `ARGV`: limit,
/// period (µs), need, lease, timeout (µs). Returns `{status, granted, wait
/// (µs), cycle left (µs), cycle}` with status 1 leased, 2 reserved, 0
/// refused. Resilience4j's `AtomicRateLimiter`, with cycles on Redis's clock.
const PERMITS: &str = r#"
local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local need = tonumber(ARGV[3])
local lease = tonumber(ARGV[4])
local timeout = tonumber(ARGV[5])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local cycle = math.floor(now / period)
local state = redis.call('HMGET', KEYS[1], 'cycle', 'permits')
local last = tonumber(state[1])
local permits = tonumber(state[2])
if last == nil or permits == nil then
  permits = limit
elseif last < cycle then
  permits = math.min(permits + (cycle - last) * limit, limit)
end
local left = (cycle + 1) * period - now
local status, granted, wait = 0, 0, 0
if need <= permits and permits > 0 then
  granted = math.min(math.max(lease, need), permits)
  permits = permits - granted
  status = 1
elseif need > 0 then
  local full = math.floor((need - (permits + limit) + limit - 1) / limit)
  if full < 0 then full = 0 end
  wait = full * period + left
  if wait <= timeout then
    permits = permits - need
    granted = need
    status = 2
  end
else
  status = 1
end
redis.call('HSET', KEYS[1], 'cycle', cycle, 'permits', permits)
local debt = 0
if permits < 0 then debt = math.ceil(-permits / limit) end
redis.call('PEXPIRE', KEYS[1], math.ceil((debt + 2) * period / 1000))
return {status, granted, wait, left, cycle}
"#;

/// The probe script. `KEYS[1]`: the breaker's sorted set. `ARGV`: budget,
/// expiry (ms), token. Expired leases go back to the budget; reported
/// probes (score `+inf`) stay spent until the episode ends.
const PROBE: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[2]))
  return 1
end
return 0
"#;

/// How often a backend that is down checks the server.
const HEALTH_INTERVAL: Duration = Duration::from_millis(100);

/// A [`ClusterBackend`] on one Redis server. Cheap to clone: clones share
/// one connection, one runtime thread and one state.
#[derive(Clone)]
pub struct RedisBackend {
    shared: Arc<Shared>,
}

struct Shared {
    /// The URL without its password, for messages.
    url: String,
    handle: Handle,
    manager: ConnectionManager,
    permits: Script,
    probe: Script,
    up: AtomicBool,
    checking: AtomicBool,
    round_trips: AtomicU64,
    health_timeout: Duration,
    watchers: Mutex<Vec<Watcher>>,
    /// Dropped with the last clone: stops the runtime thread.
    _stop: oneshot::Sender<()>,
}

/// Options of a [`RedisBackend`].
#[derive(Debug, Clone)]
pub struct RedisOptions {
    health_timeout: Duration,
    response_timeout: Duration,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            health_timeout: resil_core::cluster::DEFAULT_CLUSTER_TIMEOUT,
            response_timeout: Duration::from_secs(1),
        }
    }
}

impl RedisOptions {
    /// How long a health check waits for `PING` before the server counts
    /// as still down (default 50 ms, the default cluster timeout): a slow
    /// server is not taken back before it answers in time.
    pub fn health_timeout(mut self, timeout: Duration) -> Self {
        self.health_timeout = timeout;
        self
    }

    /// How long the client waits for any answer before it drops the
    /// connection and reconnects (default 1 s). Callers never wait this
    /// long: they stop at their own cluster timeout.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }
}

/// Why a [`RedisBackend`] could not be created.
#[derive(Debug)]
pub struct ConnectError {
    message: String,
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConnectError {}

/// Checks a cluster URL: `redis://` or `rediss://` (`unix://` and
/// `redis+unix://` for a socket), parsed by the client.
///
/// # Errors
///
/// A message saying what is wrong with the URL.
///
/// ```
/// assert!(resil_redis::check_url("redis://127.0.0.1:6379/0").is_ok());
/// assert!(resil_redis::check_url("http://127.0.0.1:6379").is_err());
/// ```
pub fn check_url(url: &str) -> Result<(), String> {
    let scheme = url.split_once("://").map(|(s, _)| s);
    if !matches!(scheme, Some("redis" | "rediss" | "unix" | "redis+unix")) {
        return Err(
            "must be a Redis URL: `redis://host:port/db` (or `rediss://`, `unix://`, `redis+unix://`)"
                .to_owned(),
        );
    }
    if scheme == Some("rediss") {
        return Err(
            "`rediss://` needs TLS, which resil's Redis client is built without; use `redis://` on a trusted network or a TLS tunnel"
                .to_owned(),
        );
    }
    Client::open(url)
        .map(drop)
        .map_err(|e| format!("is not a valid Redis URL: {e}"))
}

impl RedisBackend {
    /// A backend on the server at `url` (`redis://host:port/db`), with the
    /// default options. Connects lazily: the server need not be up yet.
    ///
    /// # Errors
    ///
    /// A [`ConnectError`] for a URL the client cannot parse, or when the
    /// runtime thread cannot start.
    pub fn connect(url: &str) -> Result<Arc<dyn ClusterBackend>, ConnectError> {
        Ok(Arc::new(Self::with_options(url, RedisOptions::default())?))
    }

    /// A backend on the server at `url` with `options`.
    ///
    /// # Errors
    ///
    /// As [`RedisBackend::connect`].
    pub fn with_options(url: &str, options: RedisOptions) -> Result<Self, ConnectError> {
        check_url(url).map_err(|m| ConnectError {
            message: format!("cluster url `{}` {m}", redact(url)),
        })?;
        let client = Client::open(url).map_err(|e| ConnectError {
            message: format!("cluster url `{}`: {e}", redact(url)),
        })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ConnectError {
                message: format!("cannot start the Redis client's runtime: {e}"),
            })?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("resil-redis".to_owned())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(|e| ConnectError {
                message: format!("cannot start the Redis client's thread: {e}"),
            })?;
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(options.response_timeout))
            .set_connection_timeout(Some(options.response_timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(Duration::from_millis(200));
        let manager = {
            let _enter = handle.enter();
            ConnectionManager::new_lazy_with_config(client, config).map_err(|e| ConnectError {
                message: format!("cluster url `{}`: {e}", redact(url)),
            })?
        };
        Ok(RedisBackend {
            shared: Arc::new(Shared {
                url: redact(url),
                handle,
                manager,
                permits: Script::new(PERMITS),
                probe: Script::new(PROBE),
                up: AtomicBool::new(true),
                checking: AtomicBool::new(false),
                round_trips: AtomicU64::new(0),
                health_timeout: options.health_timeout,
                watchers: Mutex::new(Vec::new()),
                _stop: stop,
            }),
        })
    }

    /// The server's URL, without its password.
    pub fn url(&self) -> &str {
        &self.shared.url
    }
}

/// `url` with the password replaced by `***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            format!("{scheme}://{user}:***@{host}")
        }
        None => url.to_owned(),
    }
}

impl Shared {
    /// Records the outcome of a round trip.
    fn mark(self: &Arc<Self>, up: bool, why: Option<&str>) {
        if self.up.swap(up, Ordering::AcqRel) == up {
            return;
        }
        if up {
            tracing::info!(target: "resil::cluster", url = %self.url, "cluster backend up");
        } else {
            tracing::warn!(target: "resil::cluster", url = %self.url, reason = why.unwrap_or("late"), "cluster backend down");
            self.check_health();
        }
        let watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        for w in watchers.iter() {
            w(up);
        }
    }

    /// Pings the server until it answers within the health timeout.
    fn check_health(self: &Arc<Self>) {
        if self.checking.swap(true, Ordering::AcqRel) {
            return;
        }
        // Weak: a backend dropped while its server is down stops checking.
        let weak = Arc::downgrade(self);
        self.handle.spawn(async move {
            loop {
                tokio::time::sleep(HEALTH_INTERVAL).await;
                let Some(shared) = weak.upgrade() else { return };
                let mut con = shared.manager.clone();
                let ping = tokio::time::timeout(shared.health_timeout, async {
                    redis::cmd("PING").query_async::<String>(&mut con).await
                })
                .await;
                if let Ok(Ok(_)) = ping {
                    shared.checking.store(false, Ordering::Release);
                    shared.mark(true, None);
                    return;
                }
            }
        });
    }

    fn spawn<T, F>(self: &Arc<Self>, reply: Reply<T>, op: F)
    where
        T: Send + 'static,
        F: std::future::Future<Output = Result<T, redis::RedisError>> + Send + 'static,
    {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        let shared = Arc::clone(self);
        self.handle.spawn(async move {
            match op.await {
                Ok(v) => {
                    shared.mark(true, None);
                    reply(Ok(v));
                }
                Err(e) => {
                    let message = e.to_string();
                    shared.mark(false, Some(&message));
                    reply(Err(BackendError::new(message)));
                }
            }
        });
    }

    fn fire(self: &Arc<Self>, cmd: redis::Cmd) {
        let mut con = self.manager.clone();
        self.spawn(Box::new(|_: Result<(), BackendError>| {}), async move {
            cmd.query_async::<redis::Value>(&mut con).await.map(drop)
        });
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl ClusterBackend for RedisBackend {
    fn take_permits(&self, request: PermitRequest, reply: Reply<PermitGrant>) {
        let shared = Arc::clone(&self.shared);
        let mut con = self.shared.manager.clone();
        self.shared.spawn(reply, async move {
            let v: Vec<i64> = shared
                .permits
                .key(&*request.key)
                .arg(request.limit)
                .arg(micros(request.period).max(1))
                .arg(request.need)
                .arg(request.lease)
                .arg(micros(request.timeout))
                .invoke_async(&mut con)
                .await?;
            let [status, granted, wait, left, cycle] = v[..] else {
                return Err(redis::RedisError::from((
                    redis::ErrorKind::Parse,
                    "the permits script answered an unexpected shape",
                )));
            };
            let us = |n: i64| Duration::from_micros(n.max(0) as u64);
            Ok(match status {
                1 => PermitGrant::Leased {
                    cycle: cycle.max(0) as u64,
                    permits: granted.clamp(0, i64::from(u32::MAX)) as u32,
                    cycle_left: us(left),
                },
                2 => PermitGrant::Reserved { wait: us(wait) },
                _ => PermitGrant::Refused { wait: us(wait) },
            })
        });
    }

    fn take_probe(&self, request: ProbeRequest, reply: Reply<bool>) {
        let shared = Arc::clone(&self.shared);
        let mut con = self.shared.manager.clone();
        self.shared.spawn(reply, async move {
            let taken: i64 = shared
                .probe
                .key(&*request.key)
                .arg(request.budget)
                .arg(request.expiry.as_millis().max(1) as u64)
                .arg(request.token)
                .invoke_async(&mut con)
                .await?;
            Ok(taken == 1)
        });
    }

    fn finish_probe(&self, key: Arc<str>, token: u64, recorded: bool) {
        let mut cmd;
        if recorded {
            // only a lease that is still there: one that expired was given
            // back to the budget already
            cmd = redis::cmd("ZADD");
            cmd.arg(&*key).arg("XX").arg("+inf").arg(token);
        } else {
            cmd = redis::cmd("ZREM");
            cmd.arg(&*key).arg(token);
        }
        self.shared.fire(cmd);
    }

    fn end_probes(&self, key: Arc<str>) {
        let mut cmd = redis::cmd("DEL");
        cmd.arg(&*key);
        self.shared.fire(cmd);
    }

    fn is_up(&self) -> bool {
        self.shared.up.load(Ordering::Acquire)
    }

    fn report_late(&self) {
        self.shared
            .mark(false, Some("no answer within the cluster timeout"));
    }

    fn watch(&self, watcher: Watcher) {
        self.shared
            .watchers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(watcher);
    }

    fn round_trips(&self) -> u64 {
        self.shared.round_trips.load(Ordering::Relaxed)
    }

    fn location(&self) -> String {
        self.shared.url.clone()
    }
}

impl fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBackend")
            .field("url", &self.shared.url)
            .field("up", &self.is_up())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact("redis://:secret@h:1/0"), "redis://:***@h:1/0");
        assert_eq!(redact("redis://u:secret@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact("redis://h:1/0"), "redis://h:1/0");
        let err = RedisBackend::with_options("http://u:secret@h", RedisOptions::default())
            .unwrap_err()
            .to_string();
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn only_redis_urls_are_accepted() {
        assert!(check_url("redis://127.0.0.1:6379/0").is_ok());
        assert!(check_url("redis://127.0.0.1").is_ok());
        assert!(check_url("rediss://127.0.0.1").is_err());
        assert!(check_url("127.0.0.1:6379").is_err());
        assert!(check_url("redis://127.0.0.1:notaport").is_err());
    }
}
