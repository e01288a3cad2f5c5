//! The health of each key: set by the outcomes of its own operations, and
//! brought back by running its operation again, harmlessly, while it is
//! down (not by a `PING`: a server that answers one may still refuse the
//! scripts on a key).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::Shared;

/// How often the keys that are down are checked.
const HEALTH_INTERVAL: Duration = Duration::from_millis(100);

/// How to run a key's operation without taking anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// A limiter's key: the permits script for no permit.
    Permits { limit: u32, period_us: u64 },
    /// A breaker's key: the episode script's `peek`.
    Episode,
    /// A retry budget's key: the budget script, counting and taking nothing.
    Budget { slice_us: u64 },
}

type Watch = Arc<dyn Fn(bool) + Send + Sync + 'static>;

/// One key's state.
struct Key {
    up: bool,
    error: Option<String>,
    check: Option<Check>,
    watchers: Vec<Watch>,
}

impl Default for Key {
    fn default() -> Self {
        Key {
            up: true,
            error: None,
            check: None,
            watchers: Vec::new(),
        }
    }
}

/// Every key used through the backend, and whether a check loop runs.
#[derive(Default)]
pub(crate) struct Keys {
    keys: HashMap<Arc<str>, Key>,
    checking: bool,
}

impl Shared {
    fn keys(&self) -> std::sync::MutexGuard<'_, Keys> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes how `key`'s operation runs, for its health checks.
    pub(crate) fn remember(&self, key: &Arc<str>, check: Check) {
        let mut keys = self.keys();
        match keys.keys.get_mut(&**key) {
            Some(k) => k.check = Some(check),
            None => {
                keys.keys.insert(
                    Arc::clone(key),
                    Key {
                        check: Some(check),
                        ..Key::default()
                    },
                );
            }
        }
    }

    pub(crate) fn is_up(&self, key: &str) -> bool {
        self.keys().keys.get(key).is_none_or(|k| k.up)
    }

    pub(crate) fn last_error(&self, key: &str) -> Option<String> {
        self.keys().keys.get(key).and_then(|k| k.error.clone())
    }

    pub(crate) fn watch(&self, key: &str, watcher: crate::Watcher) {
        let mut keys = self.keys();
        let watcher: Watch = Arc::from(watcher);
        match keys.keys.get_mut(key) {
            Some(k) => k.watchers.push(watcher),
            None => {
                keys.keys.insert(
                    key.into(),
                    Key {
                        watchers: vec![watcher],
                        ..Key::default()
                    },
                );
            }
        }
    }

    /// Records the outcome of an operation on `key`: up without an error.
    /// A change is logged and told to the key's watchers; a key that goes
    /// down is checked until it is up again.
    pub(crate) fn mark(self: &Arc<Self>, key: &str, error: Option<String>) {
        let up = error.is_none();
        let watchers = {
            let mut keys = self.keys();
            let k = keys.keys.entry(key.into()).or_default();
            let changed = k.up != up;
            k.up = up;
            k.error.clone_from(&error);
            if !changed {
                return;
            }
            k.watchers.clone()
        };
        if up {
            tracing::info!(target: "resil::cluster", url = %self.url, key, "cluster backend up");
        } else {
            let reason = error.as_deref().unwrap_or("down");
            tracing::warn!(target: "resil::cluster", url = %self.url, key, reason, "cluster backend down: {reason}");
            self.check_health();
        }
        for w in watchers {
            w(up);
        }
    }

    /// Runs the operation of every key that is down, harmlessly, until each
    /// succeeds within the health timeout.
    fn check_health(self: &Arc<Self>) {
        {
            let mut keys = self.keys();
            if keys.checking {
                return;
            }
            keys.checking = true;
        }
        // Weak: a backend dropped while its server is down stops checking.
        let weak = Arc::downgrade(self);
        self.handle.spawn(async move {
            loop {
                tokio::time::sleep(HEALTH_INTERVAL).await;
                let Some(shared) = weak.upgrade() else { return };
                let down: Vec<(Arc<str>, Check)> = {
                    let mut keys = shared.keys();
                    let down: Vec<_> = keys
                        .keys
                        .iter()
                        .filter(|(_, k)| !k.up)
                        .filter_map(|(key, k)| Some((Arc::clone(key), k.check?)))
                        .collect();
                    if down.is_empty() {
                        keys.checking = false;
                        return;
                    }
                    down
                };
                for (key, check) in down {
                    let outcome =
                        tokio::time::timeout(shared.health_timeout, shared.probe(&key, check))
                            .await;
                    match outcome {
                        Ok(Ok(())) => shared.mark(&key, None),
                        Ok(Err(e)) => {
                            let message = shared.describe(&key, &e).await;
                            shared.mark(&key, Some(message));
                        }
                        Err(_) => {}
                    }
                }
            }
        });
    }

    /// `key`'s operation, taking nothing.
    async fn probe(&self, key: &str, check: Check) -> Result<(), redis::RedisError> {
        let mut con = self.con.clone();
        match check {
            Check::Permits { limit, period_us } => self
                .permits
                .key(key)
                .arg(limit)
                .arg(period_us)
                .arg(0)
                .arg(0)
                .arg(0)
                .invoke_async::<redis::Value>(&mut con)
                .await
                .map(drop),
            Check::Episode => self
                .episode
                .key(key)
                .arg("peek")
                .invoke_async::<redis::Value>(&mut con)
                .await
                .map(drop),
            Check::Budget { slice_us } => self
                .budget
                .key(key)
                .arg(slice_us)
                .arg(0)
                .arg(0)
                .arg(0)
                .arg(0)
                .invoke_async::<redis::Value>(&mut con)
                .await
                .map(drop),
        }
    }
}
