//! What the watch tests share: a directory of their own with
//! `resilience.toml` in it, a watch with a short debounce, polling with a
//! deadline, and the setting the tests edit.
#![allow(dead_code)] // each test binary uses a part

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use resil::clock::{Clock as _, ManualClock, SystemClock};
use resil::config::{Resilience, Watcher};

/// A directory of its own (`resil-<name>-<pid>`), with `resilience.toml`
/// holding `text` in it.
pub(crate) fn setup(name: &str, text: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("resil-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("resilience.toml");
    std::fs::write(&file, text).unwrap();
    (dir, file)
}

/// The registries of `file`, on `clock` when given.
pub(crate) fn load(file: &Path, clock: Option<&ManualClock>) -> Arc<Resilience> {
    let mut builder = Resilience::builder()
        .file(file)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([]);
    if let Some(clock) = clock {
        builder = builder.clock(clock.clone());
    }
    Arc::new(builder.load().unwrap_or_else(|e| panic!("{e}")))
}

/// Watches `loaded` with a 50 ms debounce.
pub(crate) fn watch(loaded: &Arc<Resilience>) -> Watcher {
    let watcher = loaded.watch().unwrap_or_else(|e| panic!("{e}"));
    watcher.set_debounce(Duration::from_millis(50));
    watcher
}

/// Polls `done` until it holds, for at most ten seconds.
pub(crate) fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let clock = SystemClock::new();
    let start = clock.now();
    while !done() {
        assert!(
            clock.now().as_duration() - start.as_duration() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The setting the tests edit.
pub(crate) fn calls(loaded: &Resilience) -> u32 {
    loaded
        .registries()
        .bulkheads()
        .bulkhead("inventory-query")
        .config()
        .max_concurrent_calls()
}
