//! The Redis backend of resil's fleet: fleet-wide rate limits, half-open
//! episodes and retry budgets ([`resil_core::cluster`]) on one Redis server
//! (`redis://host:port/db`) or on Redis Cluster
//! (`redis+cluster://host:port,host:port`).
//!
//! Each operation is one atomic Lua script (`EVALSHA`, falling back to
//! `EVAL` after a restart emptied the script cache), reading time from
//! Redis's own clock (`TIME`), so the processes of a fleet need no
//! synchronized clocks and no read-modify-write races between them. The
//! client is the `redis` crate's reconnecting `ConnectionManager` (or, for
//! a cluster, its async cluster connection, which routes each script to the
//! master of its key's slot and follows `MOVED`, `ASK` and failovers),
//! driven by a small runtime on a thread of its own, so the backend works
//! the same from async and blocking callers and never blocks them.
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
//!     .cluster(Some(RateLimiterCluster::new(backend).lease(10))) // key resil:{partner-api}:ratelimiter
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
//! breaker's key is a hash holding its half-open episode (the episode, its
//! verdict, the outcomes counted and one field per probe out with its
//! lease's expiry), expiring twice the probe expiry after its last
//! activity; a retry budget's key is a hash of counts per tenth of its
//! `ttl` (`d<slice>` first attempts, `w<slice>` retries granted), expiring
//! 1.2 `ttl` after its last use. Each operation touches one key, so each runs on one node of a
//! Redis Cluster; the default keys (`resil:{<name>}:<kind>`) carry the
//! instance's name as a hash tag, so all of one instance's keys share a
//! slot.
//!
//! # Health
//!
//! A key's health follows its own operations: one that fails (the server
//! is gone, or the key holds a value of another type) or that a caller
//! gave up on marks the key down, with a `resil::cluster` warning that says
//! why (a wrong-type key is named, with the type it holds), and the backend
//! runs the key's operation again in the background, harmlessly (no permit,
//! no probe taken), every 100 ms until it succeeds. A `PING` is no proof:
//! a server that answers it may still refuse the scripts.
//!
//! Minimum supported Rust version: 1.95 (the toolchain the repository pins).
#![doc(test(attr(deny(warnings))))]

mod connection;
mod health;
mod scripts;
mod url;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::Script;
use resil_core::cluster::{
    BackendError, BudgetGrant, BudgetRequest, ClusterBackend, EpisodeVerdict, FleetVerdict,
    PermitGrant, PermitRequest, ProbeGrant, ProbeReport, ProbeRequest, Reply, Watcher,
};
use resil_core::redact;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use self::connection::Con;
use self::health::{Check, Keys};

/// A [`ClusterBackend`] on one Redis server or a Redis Cluster. Cheap to
/// clone: clones share one connection, one runtime thread and one state.
#[derive(Clone)]
pub struct RedisBackend {
    shared: Arc<Shared>,
}

struct Shared {
    /// The URL without its password, for messages.
    url: String,
    handle: Handle,
    con: Con,
    permits: Script,
    episode: Script,
    budget: Script,
    /// The health of each key used, and who watches it.
    keys: Mutex<Keys>,
    round_trips: AtomicU64,
    health_timeout: Duration,
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
    /// How long a key's health check waits for its operation before the
    /// key counts as still down (default 50 ms, the default cluster
    /// timeout): a slow server is not taken back before it answers in time.
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

/// Checks a cluster URL: `redis://host:port/db` for one server (or
/// `unix://`, `redis+unix://` for a socket), `redis+cluster://host:port,host:port`
/// for Redis Cluster. The message never holds the URL's password.
///
/// # Errors
///
/// A message saying what is wrong with the URL.
///
/// ```
/// assert!(resil_redis::check_url("redis://127.0.0.1:6379/0").is_ok());
/// assert!(resil_redis::check_url("redis+cluster://10.0.0.1:7000,10.0.0.2:7000").is_ok());
/// assert!(resil_redis::check_url("http://127.0.0.1:6379").is_err());
/// assert!(resil_redis::check_url("redis+cluster://").is_err());
/// ```
pub fn check_url(url: &str) -> Result<(), String> {
    url::parse(url).map(drop)
}

impl RedisBackend {
    /// A backend on the server at `url` (`redis://host:port/db`), or on the
    /// cluster whose nodes it names (`redis+cluster://host:port,host:port`),
    /// with the default options. Connects lazily: the server need not be up
    /// yet.
    ///
    /// # Errors
    ///
    /// A [`ConnectError`] for a URL the client cannot parse, or when the
    /// runtime thread cannot start.
    pub fn connect(url: &str) -> Result<Arc<dyn ClusterBackend>, ConnectError> {
        Ok(Arc::new(Self::with_options(url, RedisOptions::default())?))
    }

    /// A backend on the server or cluster at `url` with `options`.
    ///
    /// # Errors
    ///
    /// As [`RedisBackend::connect`].
    pub fn with_options(url: &str, options: RedisOptions) -> Result<Self, ConnectError> {
        let shown = redact::userinfo(url).into_owned();
        let failed = |message: String| ConnectError {
            message: redact::userinfo(&message).into_owned(),
        };
        let target = url::parse(url).map_err(|m| failed(format!("cluster url `{shown}` {m}")))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| failed(format!("cannot start the Redis client's runtime: {e}")))?;
        let handle = runtime.handle().clone();
        let con = {
            let _enter = handle.enter();
            Con::new(target, &options).map_err(|e| failed(format!("cluster url `{shown}`: {e}")))?
        };
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("resil-redis".to_owned())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(|e| failed(format!("cannot start the Redis client's thread: {e}")))?;
        Ok(RedisBackend {
            shared: Arc::new(Shared {
                url: shown,
                handle,
                con,
                permits: Script::new(scripts::PERMITS),
                episode: Script::new(scripts::EPISODE),
                budget: Script::new(scripts::BUDGET),
                keys: Mutex::new(Keys::default()),
                round_trips: AtomicU64::new(0),
                health_timeout: options.health_timeout,
                _stop: stop,
            }),
        })
    }

    /// The URL, without its password.
    pub fn url(&self) -> &str {
        &self.shared.url
    }
}

impl Shared {
    /// Runs `op` on `key` on the backend's runtime, answers `reply`, and
    /// records the outcome as the key's health (`check` is how to run the
    /// key's operation harmlessly while it is down).
    fn run<T, F>(self: &Arc<Self>, key: Arc<str>, check: Check, reply: Reply<T>, op: F)
    where
        T: Send + 'static,
        F: std::future::Future<Output = Result<T, redis::RedisError>> + Send + 'static,
    {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        self.remember(&key, check);
        let shared = Arc::clone(self);
        self.handle.spawn(async move {
            match op.await {
                Ok(v) => {
                    shared.mark(&key, None);
                    reply(Ok(v));
                }
                Err(e) => {
                    let message = shared.describe(&key, &e).await;
                    shared.mark(&key, Some(message.clone()));
                    reply(Err(BackendError::new(message)));
                }
            }
        });
    }

    /// What went wrong with an operation on `key`, for people: a key of
    /// another type is named with the type it holds.
    async fn describe(&self, key: &str, e: &redis::RedisError) -> String {
        let text = e.to_string();
        let message = if e.code() == Some("WRONGTYPE") || text.contains("WRONGTYPE") {
            let mut con = self.con.clone();
            let held = tokio::time::timeout(
                self.health_timeout,
                redis::cmd("TYPE").arg(key).query_async::<String>(&mut con),
            )
            .await
            .ok()
            .and_then(Result::ok)
            .map_or_else(
                || "a value of another type".to_owned(),
                |t| format!("a {t}"),
            );
            format!(
                "cluster key `{key}` holds {held}, where resil keeps a hash: delete the key or set another `cluster-key` (Redis said: {text})"
            )
        } else if let Some(why) = self.con.diagnose(e, self.health_timeout).await {
            why
        } else {
            text
        };
        redact::userinfo(&message).into_owned()
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// The episode script's `{status, episode, verdict}`.
fn episode_answer(v: &[i64]) -> Result<(i64, u64, Option<FleetVerdict>), redis::RedisError> {
    let [status, episode, verdict] = v[..] else {
        return Err(redis::RedisError::from((
            redis::ErrorKind::Parse,
            "the episode script answered an unexpected shape",
        )));
    };
    let verdict = match verdict {
        1 => Some(FleetVerdict::Closed),
        2 => Some(FleetVerdict::Open),
        _ => None,
    };
    Ok((status, episode.max(0) as u64, verdict))
}

impl ClusterBackend for RedisBackend {
    fn take_permits(&self, request: PermitRequest, reply: Reply<PermitGrant>) {
        let shared = Arc::clone(&self.shared);
        let mut con = self.shared.con.clone();
        let check = Check::Permits {
            limit: request.limit,
            period_us: micros(request.period).max(1),
        };
        self.shared
            .run(Arc::clone(&request.key), check, reply, async move {
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
                let [status, granted, wait, left, cycle, free] = v[..] else {
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
                        free_in: us(free),
                    },
                    2 => PermitGrant::Reserved {
                        wait: us(wait),
                        free_in: us(free),
                    },
                    _ => PermitGrant::Refused {
                        wait: us(wait),
                        free_in: us(free),
                    },
                })
            });
    }

    fn take_probe(&self, request: ProbeRequest, reply: Reply<ProbeGrant>) {
        let shared = Arc::clone(&self.shared);
        let mut con = self.shared.con.clone();
        self.shared.run(
            Arc::clone(&request.key),
            Check::Episode,
            reply,
            async move {
                let v: Vec<i64> = shared
                    .episode
                    .key(&*request.key)
                    .arg("take")
                    .arg(request.episode.unwrap_or(0))
                    .arg(request.budget)
                    .arg(millis(request.expiry))
                    .arg(request.token)
                    .arg(millis(request.opened_ago))
                    .invoke_async(&mut con)
                    .await?;
                let (status, episode, verdict) = episode_answer(&v)?;
                Ok(match (status, verdict) {
                    (1, _) => ProbeGrant::Taken { episode },
                    (3, Some(verdict)) => ProbeGrant::Decided(EpisodeVerdict { episode, verdict }),
                    _ => ProbeGrant::Refused { episode },
                })
            },
        );
    }

    fn report_probe(&self, report: ProbeReport, reply: Reply<Option<EpisodeVerdict>>) {
        let shared = Arc::clone(&self.shared);
        let mut con = self.shared.con.clone();
        self.shared
            .run(Arc::clone(&report.key), Check::Episode, reply, async move {
                let v: Vec<i64> = shared
                    .episode
                    .key(&*report.key)
                    .arg("report")
                    .arg(report.episode)
                    .arg(report.token)
                    .arg(u32::from(report.failed))
                    .arg(u32::from(report.slow))
                    .arg(report.minimum)
                    .arg(report.failures_to_open)
                    .arg(report.slow_calls_to_open)
                    .arg(millis(report.expiry))
                    .invoke_async(&mut con)
                    .await?;
                let (status, episode, verdict) = episode_answer(&v)?;
                Ok(match (status, verdict) {
                    (3, Some(verdict)) => Some(EpisodeVerdict { episode, verdict }),
                    _ => None,
                })
            });
    }

    fn sync_budget(&self, request: BudgetRequest, reply: Reply<BudgetGrant>) {
        let shared = Arc::clone(&self.shared);
        let mut con = self.shared.con.clone();
        let slice_us = micros(request.slice).max(1);
        self.shared.run(
            Arc::clone(&request.key),
            Check::Budget { slice_us },
            reply,
            async move {
                let v: Vec<i64> = shared
                    .budget
                    .key(&*request.key)
                    .arg(slice_us)
                    .arg(request.per_first)
                    .arg(request.reserve)
                    .arg(request.deposits)
                    .arg(request.want)
                    .invoke_async(&mut con)
                    .await?;
                let [granted, balance] = v[..] else {
                    return Err(redis::RedisError::from((
                        redis::ErrorKind::Parse,
                        "the budget script answered an unexpected shape",
                    )));
                };
                Ok(BudgetGrant {
                    granted: granted.clamp(0, i64::from(request.want)) as u32,
                    balance: balance.max(0) as u64,
                })
            },
        );
    }

    fn release_probe(&self, key: Arc<str>, episode: u64, token: u64) {
        let shared = Arc::clone(&self.shared);
        let mut con = self.shared.con.clone();
        let script_key = Arc::clone(&key);
        self.shared.run(
            key,
            Check::Episode,
            Box::new(|_: Result<(), BackendError>| {}),
            async move {
                shared
                    .episode
                    .key(&*script_key)
                    .arg("release")
                    .arg(episode)
                    .arg(token)
                    .invoke_async::<redis::Value>(&mut con)
                    .await
                    .map(drop)
            },
        );
    }

    fn is_up(&self, key: &str) -> bool {
        self.shared.is_up(key)
    }

    fn last_error(&self, key: &str) -> Option<String> {
        self.shared.last_error(key)
    }

    fn report_late(&self, key: &str) {
        self.shared
            .mark(key, Some("no answer within the cluster timeout".to_owned()));
    }

    fn watch(&self, key: &str, watcher: Watcher) {
        self.shared.watch(key, watcher);
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
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        for url in [
            "http://u:secret@h",
            "redis://u:secret@h:notaport/0",
            "redis://:secret@h:1/0/x/y",
        ] {
            let err = RedisBackend::with_options(url, RedisOptions::default())
                .unwrap_err()
                .to_string();
            assert!(!err.contains("secret"), "{err}");
            let err = check_url(url).unwrap_err();
            assert!(!err.contains("secret"), "{err}");
        }
        let backend =
            RedisBackend::with_options("redis://u:secret@127.0.0.1:1/0", RedisOptions::default())
                .unwrap();
        assert_eq!(backend.url(), "redis://u:***@127.0.0.1:1/0");
        assert_eq!(backend.location(), "redis://u:***@127.0.0.1:1/0");
        assert!(!format!("{backend:?}").contains("secret"));
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
