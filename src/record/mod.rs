//! Recording: every call outcome below each pattern, one JSON line each,
//! for `resil replay` to run a candidate configuration over.
//!
//! Turn it on in resilience.toml, or from code:
//!
//! ```toml
//! [resil]
//! record = "calls.jsonl"
//! record-max-bytes = 67108864   # the default, 64 MiB
//! ```
//!
//! ```
//! # let dir = std::env::temp_dir().join(format!("resil-record-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("calls.jsonl");
//! let recording = resil::record::to_file(&path)?;
//! let cb = resil::registries().circuit_breakers().circuit_breaker("inventory-query");
//! cb.call(|| Ok::<_, std::io::Error>(()))?;
//! recording.stop(); // writes what is queued and closes the file
//! let text = std::fs::read_to_string(&path)?;
//! assert!(text.contains(r#""kind":"circuitbreaker","name":"inventory-query","outcome":"success""#));
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The lines
//!
//! Each line is one JSON object: `time` (RFC 3339, microseconds, from the
//! instance's clock), `kind` (`circuitbreaker`, `retry`, `bulkhead`,
//! `thread-pool-bulkhead`, `ratelimiter`, `timelimiter`), `name`, `outcome`,
//! and what the outcome has:
//!
//! | kind | outcome | fields |
//! | --- | --- | --- |
//! | `circuitbreaker` | `success`, `error`, `ignored` | `duration_us`, `error` (its kind, when known) |
//! | `circuitbreaker` | `refused` (not permitted) | |
//! | `circuitbreaker` | `transition` | `from`, `to` (`CLOSED`, `OPEN`, `HALF_OPEN`, ...) |
//! | `retry` | `retry` (an attempt failed, another follows) | `attempts` (failed so far), `wait_us`, `error` |
//! | `retry` | `success` (the call's end: `attempts` 0 when its first attempt succeeded), `error` (the call's end after retries), `ignored`, `refused` (the retry budget denied the retry) | `attempts`, `error` |
//! | `ratelimiter` | `permitted`, `refused` | |
//! | `bulkhead`, `thread-pool-bulkhead` | `permitted`, `finished`, `refused` | |
//! | `timelimiter` | `success`, `error`, `timeout` | `error` |
//!
//! A retry publishes no event for a call that succeeds at its first attempt
//! (Resilience4j's retry publishes none); the recorder watches those calls
//! apart ([`Retry::watch_quiet_successes`](resil_core::retry::Retry::watch_quiet_successes)),
//! so every call of a retry has its line and a replayed retry budget sees
//! every first attempt.
//!
//! # Bounds and cost
//!
//! When the file would pass `record-max-bytes`, it is renamed with the
//! suffix `.1` (`calls.jsonl` becomes `calls.jsonl.1`, replacing an older
//! one) and a new file is started: at most twice the bound on disk.
//!
//! The caller never waits for the disk: each line goes through a bounded
//! channel (8192 lines) to one writer thread, and a line that finds the
//! channel full is dropped and counted ([`dropped`], [`Recording::dropped`]).
//! With recording off, each event costs the recorder one atomic load.
//!
//! A [`reload`](crate::reload()) that changes `record` or
//! `record-max-bytes` closes the file and opens the new one; one that
//! removes `record` stops recording.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use resil_config::{RecordSettings, Report};

mod line;
pub(crate) mod sink;
mod writer;

pub use resil_config::DEFAULT_RECORD_MAX_BYTES;

use self::line::Line;
use self::writer::Writer;

/// Whether a recording is on: the one load an event costs when it is off.
pub(crate) static ON: AtomicBool = AtomicBool::new(false);

/// The recording in force.
static ACTIVE: RwLock<Option<Arc<Writer>>> = RwLock::new(None);

/// The `[resil] record` settings last applied from the configuration.
static FROM_CONFIG: Mutex<Option<RecordSettings>> = Mutex::new(None);

/// Lines dropped by every recording because the writer was behind.
pub(crate) static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Why a recording could not start.
#[derive(Debug)]
pub struct RecordError {
    path: PathBuf,
    source: std::io::Error,
}

impl RecordError {
    /// The file that could not be written.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot write the recording to {}: {}",
            self.path.display(),
            self.source
        )
    }
}

impl std::error::Error for RecordError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// A recording started with [`to_file`]: it records until it is stopped
/// or dropped (or another recording replaces it).
#[must_use = "dropping the recording stops it"]
pub struct Recording {
    writer: Arc<Writer>,
}

impl fmt::Debug for Recording {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recording")
            .field("path", &self.writer.path)
            .field("max_bytes", &self.writer.max_bytes)
            .finish_non_exhaustive()
    }
}

impl Recording {
    /// The file recorded to.
    pub fn path(&self) -> &Path {
        &self.writer.path
    }

    /// The lines this recording dropped because its writer was behind.
    pub fn dropped(&self) -> u64 {
        self.writer.dropped.load(Ordering::Relaxed)
    }

    /// Stops recording: the lines sent so far are written, the file is
    /// flushed and closed.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        deactivate(&self.writer);
        self.writer.stop();
    }
}

/// Records every call outcome of every observed instance (the global
/// registries, and those given to [`observe`](crate::observe)) to `path`,
/// appending, with the default bound ([`DEFAULT_RECORD_MAX_BYTES`]). It
/// replaces a recording in force, from the configuration or from code.
///
/// # Errors
///
/// The file cannot be opened for appending (a missing directory, no
/// permission): the error names it.
pub fn to_file(path: impl AsRef<Path>) -> Result<Recording, RecordError> {
    to_file_with_max_bytes(path, DEFAULT_RECORD_MAX_BYTES)
}

/// [`to_file`] with a bound of `max_bytes` (at least 1) before the file is
/// rotated to `<path>.1`.
///
/// # Errors
///
/// As [`to_file`].
pub fn to_file_with_max_bytes(
    path: impl AsRef<Path>,
    max_bytes: u64,
) -> Result<Recording, RecordError> {
    let writer = start(path.as_ref(), max_bytes.max(1))?;
    Ok(Recording { writer })
}

/// The lines dropped so far, by every recording of this process, because
/// the writer thread was behind (the channel was full).
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Stops the recording in force, whichever started it (`[resil] record`
/// or [`to_file`]): what was sent is written and the file closed. A
/// [`reload`](crate::reload()) that changes `[resil] record` starts one
/// again.
pub fn stop() {
    let writer = ACTIVE
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    ON.store(false, Ordering::Release);
    if let Some(w) = writer {
        w.stop();
    }
}

/// The file being recorded to, if a recording is on.
pub fn active() -> Option<PathBuf> {
    read_active().as_ref().map(|w| w.path.clone())
}

fn read_active() -> std::sync::RwLockReadGuard<'static, Option<Arc<Writer>>> {
    ACTIVE.read().unwrap_or_else(PoisonError::into_inner)
}

fn start(path: &Path, max_bytes: u64) -> Result<Arc<Writer>, RecordError> {
    // observe the global registries when they exist (a recording of
    // registries built by hand needs `observe` on them)
    if let Some(global) = resil_config::global::built() {
        crate::observe::observe(global);
    }
    let writer = Arc::new(
        Writer::start(path, max_bytes).map_err(|source| RecordError {
            path: path.to_owned(),
            source,
        })?,
    );
    let old = ACTIVE
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .replace(writer.clone());
    ON.store(true, Ordering::Release);
    if let Some(old) = old {
        old.stop();
    }
    Ok(writer)
}

/// Takes `writer` out of force, if it is the recording in force.
fn deactivate(writer: &Arc<Writer>) {
    let mut active = ACTIVE.write().unwrap_or_else(PoisonError::into_inner);
    if active.as_ref().is_some_and(|a| Arc::ptr_eq(a, writer)) {
        *active = None;
        ON.store(false, Ordering::Release);
    }
}

/// Hands `line` to the recording in force, if any; one load when none.
#[inline]
pub(crate) fn emit(make: impl FnOnce() -> Option<Line>) {
    if !ON.load(Ordering::Relaxed) {
        return;
    }
    if let Some(writer) = read_active().as_ref()
        && let Some(line) = make()
    {
        writer.send(line);
    }
}

/// Applies the `[resil] record` settings of `report`: starts, moves or
/// stops the recording the configuration asked for.
fn apply(report: &Report) {
    let wanted = report.record().cloned();
    let mut applied = crate::sync::lock(&FROM_CONFIG);
    if *applied == wanted {
        return;
    }
    if let Some(old) = applied.take() {
        let active = read_active().clone();
        if let Some(w) = active
            && w.path == old.path()
        {
            deactivate(&w);
            w.stop();
        }
    }
    if let Some(settings) = &wanted {
        match start(settings.path(), settings.max_bytes()) {
            // in force (held by `ACTIVE`) until the configuration changes it
            Ok(_) => {}
            Err(e) => tracing::warn!(target: "resil::record", "resil: {e}; not recording"),
        }
    }
    *applied = wanted;
}

fn on_global(registries: &'static resil_config::Registries) {
    if let Some(report) = resil_config::global::current_report() {
        apply(&report);
    }
    // a recording started before the registries existed, or by the report
    if active().is_some() {
        crate::observe::observe(registries);
    }
}

fn on_reload(outcome: Result<&resil_config::ReloadReport, &resil_config::InitError>) {
    if outcome.is_ok()
        && let Some(report) = resil_config::global::current_report()
    {
        apply(&report);
    }
}

inventory::submit! {
    resil_config::GlobalHook(on_global)
}

inventory::submit! {
    resil_config::ReloadHook(on_reload)
}
