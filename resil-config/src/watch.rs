//! Reloading when the file changes (feature `watch`; see [`watch`](crate::watch())).

use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};

use crate::sync::lock;
use std::thread::JoinHandle;
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher as _};
use resil_core::clock::{Clock as _, SharedClock, TimerHandle};

use crate::change::ReloadReport;
use crate::error::InitError;
use crate::init::Resilience;

/// How long the file must be quiet before a reload runs.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(200);

/// A quiet period is extended at most this many times by new events (in
/// the directory), so that a file written without pause is still reloaded.
const MAX_EXTENSIONS: u32 = 50;

type ReloadFn = Box<dyn Fn() -> Result<ReloadReport, InitError> + Send>;

/// The `[resil] reload-stagger` in force (it may change with a reload).
type StaggerFn = Box<dyn Fn() -> Duration + Send>;

/// What the watcher reloads, and how long a change may wait.
struct Source {
    reload: ReloadFn,
    stagger: StaggerFn,
    /// The clock a staggered change waits on (the registries').
    clock: SharedClock,
}

enum Message {
    Event(notify::Result<notify::Event>),
    /// The time of the waiting change of this number has come.
    Due(u64),
    Stop,
}

/// A function told when a change starts waiting in a [`Watcher`] (`true`)
/// and when none waits any more (`false`: applied, dropped, or the watch
/// started), submitted with [`inventory::submit!`]: resil's `metrics`
/// feature shows it as `resil_config_reload_pending`.
///
/// # Examples
///
/// ```
/// use resil_config::PendingHook;
///
/// fn log(waiting: bool) {
///     eprintln!("a configuration change waits: {waiting}");
/// }
///
/// resil_config::inventory::submit! {
///     PendingHook(log)
/// }
/// # fn main() {}
/// ```
#[derive(Debug, Clone, Copy)]
pub struct PendingHook(pub fn(bool));

inventory::collect!(PendingHook);

/// Watches the file [`init`](crate::init) read and reloads the global
/// registries when it changes (feature `watch`).
///
/// The directory is watched, not the file, so that what editors and
/// deployment tools do works: writing in place, writing a temporary file and
/// renaming it over the old one, deleting and creating it again, swapping a
/// symbolic link the file goes through (Kubernetes' ConfigMap volumes).
/// When the file is a symbolic link (or goes through some), the directory of
/// each link on the way and of the file it resolves to are watched too, so
/// that an edit of the target in place, in another directory, applies; the
/// directories are found again after each change (a swapped link points
/// elsewhere), and the start-up log line names them.
/// Events are debounced: once the directory has been quiet for
/// [`DEFAULT_DEBOUNCE`] (see [`Watcher::set_debounce`]), the file is read,
/// and a reload runs only if its contents differ from the last ones seen
/// (or it is gone), so that a save in several writes is one reload and a
/// change to another file of the directory is none. Each reload is the same as
/// [`reload`](crate::reload()): all or nothing, a refused file leaves the
/// settings in force, a deleted file is a refused reload; each outcome is a
/// `tracing` event of target `resil::reload` and, with resil's `metrics`
/// feature, counts in `resil_config_reloads_total{outcome}`.
///
/// With `[resil] reload-stagger = "30s"`, a change waits a random delay in
/// `[0, 30s)`, drawn for this process, before it applies, so that a fleet
/// reading one file (a ConfigMap) does not change at the same second: the
/// first processes to apply it are a canary for the others. While it waits,
/// [`Watcher::pending`] says so, a [`PendingHook`] is told (resil's
/// `resil_config_reload_pending` is 1), and a log line names the delay. A
/// newer change replaces the waiting one and keeps its time (so that
/// frequent edits cannot put a change off for ever); a file that goes back
/// to the contents in force drops it. The delay is counted on the clock the
/// registries were built with. [`reload`](crate::reload()) and the
/// actuator's refresh apply at once, whatever waits here (the waiting
/// change then applies with no changes left to report).
///
/// Dropping the [`Watcher`] stops it: the watch ends and its thread is joined.
///
/// # Errors
///
/// [`InitError::NotInitialized`] when `init` did not build the global
/// registries; [`InitError::Watch`] when `init` read no file (the defaults,
/// or contents given to the builder), when the file does not exist, or when
/// the operating system refuses to watch its directory.
///
/// # Examples
///
/// ```no_run
/// resil_config::init()?;
/// let watcher = resil_config::watch()?; // keep it for as long as edits should apply
/// # drop(watcher);
/// # Ok::<(), resil_config::InitError>(())
/// ```
///
/// Without `init` there is nothing to watch:
///
/// ```
/// assert!(matches!(resil_config::watch(), Err(resil_config::InitError::NotInitialized)));
/// ```
pub fn watch() -> Result<Watcher, InitError> {
    let (_, reloader) = crate::global::reloader().ok_or(InitError::NotInitialized)?;
    Watcher::start(
        reloader.file(),
        Source {
            reload: Box::new(crate::reload::reload),
            stagger: Box::new(|| reloader.current().reload_stagger()),
            clock: reloader.clock(),
        },
    )
}

impl Resilience {
    /// Watches the file these registries were loaded from and reloads them
    /// when it changes, as [`watch`](crate::watch()) does for the global ones.
    ///
    /// # Errors
    ///
    /// [`InitError::Watch`] when the builder read no file, when it does not
    /// exist, or when it cannot be watched.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use resil_config::Resilience;
    ///
    /// let loaded = Arc::new(
    ///     Resilience::builder()
    ///         .file_contents("resilience.toml", "")
    ///         .env_vars(Vec::<(String, String)>::new())
    ///         .load()?,
    /// );
    /// assert!(loaded.watch().is_err()); // contents, not a file
    /// # Ok::<(), resil_config::InitError>(())
    /// ```
    pub fn watch(self: &Arc<Self>) -> Result<Watcher, InitError> {
        let this = Arc::clone(self);
        // weak: the watcher's thread holds the registries once
        let that = Arc::downgrade(self);
        Watcher::start(
            self.reloader.file(),
            Source {
                reload: Box::new(move || this.reload()),
                stagger: Box::new(move || {
                    that.upgrade()
                        .map(|r| r.reloader.current().reload_stagger())
                        .unwrap_or_default()
                }),
                clock: self.reloader.clock(),
            },
        )
    }
}

/// A running watch; dropping it stops it.
pub struct Watcher {
    file: PathBuf,
    /// Shared with the thread, which watches the directories a link
    /// resolves to anew after a change.
    notify: Arc<Mutex<Option<Watching>>>,
    stop: Sender<Message>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    debounce_ms: AtomicU64,
    applied: AtomicU64,
    rejected: AtomicU64,
    last: Mutex<Option<Result<ReloadReport, InitError>>>,
    /// The delay drawn for the change that waits, if one does.
    pending: Mutex<Option<Duration>>,
}

impl Shared {
    /// Tells the hooks, then [`Watcher::pending`]: who sees the one sees
    /// the other.
    fn set_pending(&self, delay: Option<Duration>) {
        for hook in inventory::iter::<PendingHook> {
            (hook.0)(delay.is_some());
        }
        *lock(&self.pending) = delay;
    }
}

impl Watcher {
    fn start(file: Option<PathBuf>, source: Source) -> Result<Watcher, InitError> {
        let file = file.ok_or_else(|| {
            InitError::Watch(
                "no file was read (the library defaults, or contents given to the builder): name one with `RESIL_CONFIG` or `ResilienceBuilder::file`".to_owned(),
            )
        })?;
        let absolute = std::path::absolute(&file)
            .map_err(|e| InitError::Watch(format!("{}: {e}", file.display())))?;
        if !absolute.is_file() {
            return Err(InitError::Watch(format!(
                "{}: the file does not exist (or is not a regular file)",
                file.display()
            )));
        }
        let Some(dir) = absolute.parent() else {
            return Err(InitError::Watch(format!(
                "{}: not a file in a directory",
                file.display()
            )));
        };
        let (tx, rx) = mpsc::channel();
        let events = tx.clone();
        let notify = notify::recommended_watcher(move |e| {
            let _ = events.send(Message::Event(e));
        })
        .map_err(|e| InitError::Watch(format!("{}: {e}", file.display())))?;
        let mut watching = Watching {
            notify,
            dirs: Vec::new(),
        };
        watching
            .watch(dir)
            .map_err(|e| InitError::Watch(format!("{}: {e}", dir.display())))?;
        // the directories the file resolves through: best effort (one that
        // cannot be watched leaves the file's own directory watched)
        watching.follow(&absolute);
        let dirs = watching.shown();
        let notify = Arc::new(Mutex::new(Some(watching)));
        let shared = Arc::new(Shared {
            debounce_ms: AtomicU64::new(millis(DEFAULT_DEBOUNCE)),
            ..Shared::default()
        });
        let s = shared.clone();
        let n = notify.clone();
        let timers = tx.clone();
        // what the registries were loaded from, near enough: the first
        // reload runs when the contents differ from it
        let seen = contents(&absolute);
        shared.set_pending(None);
        let thread = std::thread::Builder::new()
            .name("resil-watch".to_owned())
            .spawn(move || {
                let mut watch = Watch {
                    path: &absolute,
                    seen,
                    source: &source,
                    shared: &s,
                    timers,
                    pending: None,
                    changes: 0,
                };
                watch.run(&rx, &n);
            })
            .map_err(|e| InitError::Watch(format!("the watcher thread could not start: {e}")))?;
        tracing::info!(target: "resil::reload", file = %file.display(), dirs = %dirs, "resil: watching {} for changes (directories {dirs})", file.display());
        Ok(Watcher {
            file,
            notify,
            stop: tx,
            thread: Some(thread),
            shared,
        })
    }

    /// The file watched, as `init` or the builder named it.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// How long the file must be quiet before a reload runs.
    pub fn debounce(&self) -> Duration {
        Duration::from_millis(self.shared.debounce_ms.load(Ordering::Relaxed))
    }

    /// Sets how long the file must be quiet before a reload runs (from the
    /// next change on; at least 1 ms).
    pub fn set_debounce(&self, debounce: Duration) {
        self.shared
            .debounce_ms
            .store(millis(debounce).max(1), Ordering::Relaxed);
    }

    /// The reloads this watcher ran that applied.
    pub fn applied(&self) -> u64 {
        self.shared.applied.load(Ordering::Acquire)
    }

    /// The reloads this watcher ran that were refused (the settings in force kept).
    pub fn rejected(&self) -> u64 {
        self.shared.rejected.load(Ordering::Acquire)
    }

    /// The outcome of the last reload this watcher ran, if any.
    pub fn last(&self) -> Option<Result<ReloadReport, InitError>> {
        lock(&self.shared.last).clone()
    }

    /// The delay drawn for the change that waits to apply (with `[resil]
    /// reload-stagger`), counted from when the watcher saw it; `None` when
    /// no change waits.
    pub fn pending(&self) -> Option<Duration> {
        *lock(&self.shared.pending)
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // no new events, then the thread ends at the stop (a reload under
        // way finishes first)
        drop(lock(&self.notify).take());
        let _ = self.stop.send(Message::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl fmt::Debug for Watcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watcher")
            .field("file", &self.file)
            .field("debounce", &self.debounce())
            .field("applied", &self.applied())
            .field("rejected", &self.rejected())
            .field("pending", &self.pending())
            .finish_non_exhaustive()
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Whether an event may have changed what the file reads: any change in
/// the directory (the file itself, or a link it goes through).
fn touches(event: &notify::Result<notify::Event>) -> bool {
    match event {
        Ok(e) => !matches!(e.kind, EventKind::Access(_)),
        Err(e) => {
            tracing::warn!(target: "resil::reload", "resil: the file watcher reported an error: {e}");
            false
        }
    }
}

/// The most of the file compared (a reload refuses a larger one anyway).
const MAX_COMPARED: u64 = (1 << 20) + 1;

/// The file's contents now, `None` when it cannot be read.
fn contents(path: &Path) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_COMPARED).read_to_end(&mut bytes))
        .ok()?;
    Some(bytes)
}

/// The operating system's watch and the directories it holds: the file's
/// own, then those its links resolve through.
struct Watching {
    notify: notify::RecommendedWatcher,
    dirs: Vec<PathBuf>,
}

impl Watching {
    fn watch(&mut self, dir: &Path) -> notify::Result<()> {
        if self.dirs.iter().any(|d| d == dir) {
            return Ok(());
        }
        self.notify.watch(dir, RecursiveMode::NonRecursive)?;
        self.dirs.push(dir.to_owned());
        Ok(())
    }

    /// Watches the directories `file` resolves through now, and stops
    /// watching those it no longer does (the file's own stays).
    fn follow(&mut self, file: &Path) {
        let wanted = resolved_dirs(file);
        let stale: Vec<PathBuf> = self
            .dirs
            .iter()
            .skip(1)
            .filter(|d| !wanted.contains(d))
            .cloned()
            .collect();
        for dir in stale {
            // gone with the old link's target, or not: either way not ours
            let _ = self.notify.unwatch(&dir);
            self.dirs.retain(|d| *d != dir);
        }
        for dir in wanted {
            if let Err(e) = self.watch(&dir) {
                tracing::warn!(target: "resil::reload", "resil: cannot watch {}, which the configuration file resolves through: {e}", dir.display());
            }
        }
    }

    fn shown(&self) -> String {
        let dirs: Vec<String> = self.dirs.iter().map(|d| d.display().to_string()).collect();
        dirs.join(", ")
    }
}

/// The directories of each symbolic link `file` goes through and of the
/// file it resolves to, as real paths (a directory reached through a link
/// is named by its target, so that one directory is watched once).
fn resolved_dirs(file: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut add = |dir: Option<&Path>| {
        if let Some(real) = dir.and_then(|d| std::fs::canonicalize(d).ok())
            && !dirs.contains(&real)
        {
            dirs.push(real);
        }
    };
    let mut path = file.to_owned();
    // links of links, as the kernel follows them (at most 40)
    for _ in 0..40 {
        add(path.parent());
        let Ok(target) = std::fs::read_link(&path) else {
            break;
        };
        path = match path.parent() {
            Some(parent) if target.is_relative() => parent.join(target),
            _ => target,
        };
    }
    let real = std::fs::canonicalize(file).ok();
    add(real.as_deref().and_then(Path::parent));
    dirs
}

/// A change that waits for its time.
struct Pending {
    number: u64,
    /// Dropped with the change: the timer is cancelled.
    _timer: TimerHandle,
}

/// The watcher's thread and what it keeps.
struct Watch<'a> {
    path: &'a Path,
    /// The contents last reloaded (or loaded at the start).
    seen: Option<Vec<u8>>,
    source: &'a Source,
    shared: &'a Shared,
    /// Given to the timers of waiting changes.
    timers: Sender<Message>,
    pending: Option<Pending>,
    /// Changes that waited so far, to number them.
    changes: u64,
}

impl Watch<'_> {
    /// Waits for a change in the directories, lets it go quiet, watches
    /// where the file's links now lead, and reloads if the file reads
    /// differently, at once or after the change's delay; until told to stop.
    fn run(&mut self, rx: &Receiver<Message>, notify: &Mutex<Option<Watching>>) {
        loop {
            let mut due = false;
            match rx.recv() {
                Ok(Message::Event(e)) if touches(&e) => {}
                Ok(Message::Event(_)) => continue,
                Ok(Message::Due(n)) => {
                    if self.is_due(n) {
                        self.drop_pending();
                        self.apply(contents(self.path));
                    }
                    continue;
                }
                Ok(Message::Stop) | Err(_) => return,
            }
            let mut extensions = 0;
            loop {
                let quiet = Duration::from_millis(self.shared.debounce_ms.load(Ordering::Relaxed));
                match rx.recv_timeout(quiet) {
                    Ok(Message::Event(_)) => {
                        extensions += 1;
                        if extensions >= MAX_EXTENSIONS {
                            break;
                        }
                    }
                    // the waiting change's time came while the file was
                    // still being written: it applies once it is quiet
                    Ok(Message::Due(n)) => due |= self.is_due(n),
                    Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                    Err(RecvTimeoutError::Timeout) => break,
                }
            }
            if let Some(watching) = lock(notify).as_mut() {
                watching.follow(self.path);
            }
            let now = contents(self.path);
            // the same contents (or still none): nothing to say again
            if now == self.seen {
                if self.pending.is_some() {
                    self.drop_pending();
                    tracing::info!(target: "resil::reload", file = %self.path.display(), "resil: {} is back to the contents in force: the change that waited is dropped", self.path.display());
                }
                continue;
            }
            if due {
                self.drop_pending();
                self.apply(now);
                continue;
            }
            if self.pending.is_some() {
                tracing::info!(target: "resil::reload", file = %self.path.display(), "resil: {} changed again: the newer contents replace the change that waits, at its time", self.path.display());
                continue;
            }
            let stagger = (self.source.stagger)();
            if stagger.is_zero() {
                self.apply(now);
                continue;
            }
            self.wait(stagger);
        }
    }

    fn is_due(&self, n: u64) -> bool {
        self.pending.as_ref().is_some_and(|p| p.number == n)
    }

    /// Draws the change's delay in `[0, stagger)` and sets its timer.
    fn wait(&mut self, stagger: Duration) {
        let nanos = u64::try_from(stagger.as_nanos()).unwrap_or(u64::MAX);
        let mut delay = Duration::from_nanos(fastrand::u64(..nanos.max(1)));
        if stagger >= Duration::from_secs(1) {
            // whole milliseconds, for people (still below the stagger)
            delay = Duration::from_millis(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX));
        }
        self.changes += 1;
        let number = self.changes;
        let timers = self.timers.clone();
        let timer = self.source.clock.schedule(
            delay,
            Box::new(move || {
                let _ = timers.send(Message::Due(number));
            }),
        );
        tracing::info!(
            target: "resil::reload",
            file = %self.path.display(),
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            "resil: {} changed: the change applies in {} (a delay drawn for this process from [0, reload-stagger = {}))",
            self.path.display(),
            crate::duration::format(delay),
            crate::duration::format(stagger)
        );
        self.pending = Some(Pending {
            number,
            _timer: timer,
        });
        self.shared.set_pending(Some(delay));
    }

    fn drop_pending(&mut self) {
        if self.pending.take().is_some() {
            self.shared.set_pending(None);
        }
    }

    /// Reloads if the file reads `now`, differently from what was last seen.
    fn apply(&mut self, now: Option<Vec<u8>>) {
        if now == self.seen {
            return;
        }
        self.seen = now;
        let outcome = (self.source.reload)();
        let counter = match &outcome {
            Ok(_) => &self.shared.applied,
            Err(_) => &self.shared.rejected,
        };
        *lock(&self.shared.last) = Some(outcome);
        counter.fetch_add(1, Ordering::AcqRel);
    }
}
