//! The board of faults: one slot per name, and the count of those in
//! force that a call site loads first.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use super::{Decision, FaultConfig, FaultInjected, MAX_INJECTED_FOR};
use crate::Name;
use crate::clock::{Clock, Nanos, SharedClock};

/// The faults of a process, by name (see the [module documentation](super)).
///
/// Cheap to clone: clones share the board.
#[derive(Clone)]
pub struct Faults {
    board: Arc<Board>,
}

struct Board {
    /// How many slots have a fault in force (or one injected whose time is
    /// up and that no one looked at since): zero is the one load of a call.
    in_force: AtomicUsize,
    slots: RwLock<BTreeMap<Name, Arc<Slot>>>,
    /// The first draw of each new slot, mixed with its name.
    seed: u64,
}

struct Slot {
    name: Name,
    state: Mutex<State>,
    /// Whether this slot counts in the board's `in_force`.
    counted: std::sync::atomic::AtomicBool,
    rng: AtomicU64,
    delays: AtomicU64,
    aborts: AtomicU64,
}

struct State {
    clock: SharedClock,
    configured: Option<FaultConfig>,
    /// Injected at run time, until this time of `clock`.
    injected: Option<(FaultConfig, Nanos)>,
}

/// Where the fault in force comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultSource {
    /// resilience.toml's `[fault.instances.<name>]`, enabled.
    Configured,
    /// Injected at run time ([`Faults::inject`]), for a while.
    Injected,
}

impl FaultSource {
    /// `"configured"` or `"injected"`.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultSource::Configured => "configured",
            FaultSource::Injected => "injected",
        }
    }
}

/// One fault in force, as [`Faults::list`] shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultView {
    /// The name of the call sites it applies to.
    pub name: String,
    /// What it does.
    pub config: FaultConfig,
    /// Where it comes from.
    pub source: FaultSource,
    /// How long an injected fault stays in force; `None` for a configured one.
    pub remaining: Option<Duration>,
    /// Calls delayed since the process started.
    pub delayed: u64,
    /// Calls aborted since the process started.
    pub aborted: u64,
}

impl Default for Faults {
    fn default() -> Self {
        Faults::new()
    }
}

impl Faults {
    /// An empty board, drawing from a random seed.
    pub fn new() -> Self {
        Faults::seeded(fastrand::u64(..))
    }

    /// An empty board whose draws follow from `seed`: the same calls on a
    /// board of the same seed are delayed and aborted alike (for tests).
    pub fn seeded(seed: u64) -> Self {
        Faults {
            board: Arc::new(Board {
                in_force: AtomicUsize::new(0),
                slots: RwLock::new(BTreeMap::new()),
                seed,
            }),
        }
    }

    /// The board every face consults.
    #[inline]
    pub fn global() -> &'static Faults {
        static GLOBAL: OnceLock<Faults> = OnceLock::new();
        GLOBAL.get_or_init(Faults::new)
    }

    /// Whether any fault may be in force: the one load a call pays.
    #[inline(always)]
    pub(crate) fn any_in_force(&self) -> bool {
        self.board.in_force.load(Ordering::Acquire) != 0
    }

    fn slot(&self, name: &str) -> Arc<Slot> {
        if let Some(slot) = read(&self.board.slots).get(name) {
            return Arc::clone(slot);
        }
        let mut slots = write(&self.board.slots);
        let seed = self.board.seed ^ fnv(name);
        Arc::clone(slots.entry(Name::from(name)).or_insert_with(|| {
            Arc::new(Slot {
                name: Name::from(name),
                state: Mutex::new(State {
                    clock: SharedClock::default(),
                    configured: None,
                    injected: None,
                }),
                counted: std::sync::atomic::AtomicBool::new(false),
                rng: AtomicU64::new(seed),
                delays: AtomicU64::new(0),
                aborts: AtomicU64::new(0),
            })
        }))
    }

    /// Sets the configured fault of `name` (`None`: none, or disabled),
    /// drawing its delays on `clock`. A fault injected at run time stays in
    /// force over it until its time is up.
    pub fn configure(&self, name: &str, config: Option<FaultConfig>, clock: SharedClock) {
        let slot = self.slot(name);
        let mut state = lock(&slot.state);
        state.configured = config;
        state.clock = clock;
        self.recount(&slot, &mut state);
    }

    /// Sets every configured fault at once: those of `configs`, and none for
    /// every other name (what a reload of resilience.toml does).
    pub fn configure_all(&self, configs: &BTreeMap<String, FaultConfig>, clock: &SharedClock) {
        let known: Vec<Name> = read(&self.board.slots).keys().cloned().collect();
        for name in known {
            if !configs.contains_key(&*name) {
                self.configure(&name, None, clock.clone());
            }
        }
        for (name, config) in configs {
            self.configure(name, Some(*config), clock.clone());
        }
    }

    /// Injects `config` for the calls of `name` for the next `duration` of
    /// `clock` (at most 24 h), over the configured fault; after that the
    /// configured state is back. Its delays wait on `clock` too.
    ///
    /// # Errors
    ///
    /// When `duration` is zero or over 24 h, a message naming the limit.
    pub fn inject(
        &self,
        name: &str,
        config: FaultConfig,
        duration: Duration,
        clock: &SharedClock,
    ) -> Result<(), String> {
        if duration.is_zero() || duration > MAX_INJECTED_FOR {
            return Err(format!(
                "must be more than zero and at most 24h, not {}",
                crate::clock::format_duration(duration)
            ));
        }
        let slot = self.slot(name);
        let mut state = lock(&slot.state);
        state.clock = clock.clone();
        let until = state.clock.now().saturating_add(duration);
        state.injected = Some((config, until));
        self.recount(&slot, &mut state);
        Ok(())
    }

    /// Ends the fault injected for `name`, giving the configured state
    /// back; `false` when none was in force.
    pub fn stop(&self, name: &str) -> bool {
        let Some(slot) = read(&self.board.slots).get(name).cloned() else {
            return false;
        };
        let mut state = lock(&slot.state);
        self.expire(&mut state);
        let was = state.injected.take().is_some();
        self.recount(&slot, &mut state);
        was
    }

    /// The faults in force, by name.
    pub fn list(&self) -> Vec<FaultView> {
        let slots: Vec<Arc<Slot>> = read(&self.board.slots).values().cloned().collect();
        slots
            .iter()
            .filter_map(|slot| {
                let mut state = lock(&slot.state);
                self.expire(&mut state);
                self.recount(slot, &mut state);
                let (config, source, remaining) = match (state.injected, state.configured) {
                    (Some((config, until)), _) => {
                        let now = state.clock.now();
                        let left = until.as_duration().saturating_sub(now.as_duration());
                        (config, FaultSource::Injected, Some(left))
                    }
                    (None, Some(config)) => (config, FaultSource::Configured, None),
                    (None, None) => return None,
                };
                Some(FaultView {
                    name: slot.name.to_string(),
                    config,
                    source,
                    remaining,
                    delayed: slot.delays.load(Ordering::Relaxed),
                    aborted: slot.aborts.load(Ordering::Relaxed),
                })
            })
            .collect()
    }

    /// How many calls of `name` were delayed and aborted, since the process
    /// started: `(delayed, aborted)`.
    pub fn injected_total(&self, name: &str) -> (u64, u64) {
        read(&self.board.slots).get(name).map_or((0, 0), |s| {
            (
                s.delays.load(Ordering::Relaxed),
                s.aborts.load(Ordering::Relaxed),
            )
        })
    }

    /// Every name that ever had a fault, with its delayed and aborted calls
    /// (for meters).
    pub fn injected_totals(&self) -> Vec<(String, u64, u64)> {
        read(&self.board.slots)
            .values()
            .map(|s| {
                (
                    s.name.to_string(),
                    s.delays.load(Ordering::Relaxed),
                    s.aborts.load(Ordering::Relaxed),
                )
            })
            .collect()
    }

    /// The fault of the first of `names` that has one in force: what it
    /// does to this call (out of line: a call pays it only while a fault
    /// is in force).
    #[inline(never)]
    pub(crate) fn decide<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> Option<Decision> {
        for name in names {
            let Some(slot) = read(&self.board.slots).get(name).cloned() else {
                continue;
            };
            let (config, clock) = {
                let mut state = lock(&slot.state);
                self.expire(&mut state);
                self.recount(&slot, &mut state);
                match state.injected.map(|(c, _)| c).or(state.configured) {
                    Some(config) => (config, state.clock.clone()),
                    None => continue,
                }
            };
            let mut rng = fastrand::Rng::with_seed(
                slot.rng.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed),
            );
            if rng.f64() * 100.0 < config.abort_percent {
                slot.aborts.fetch_add(1, Ordering::Relaxed);
                return Some(Decision::Abort(FaultInjected::new(slot.name.clone())));
            }
            if rng.f64() * 100.0 < config.delay_percent && !config.delay.is_zero() {
                slot.delays.fetch_add(1, Ordering::Relaxed);
                return Some(Decision::Delay(config.delay, clock));
            }
            return None;
        }
        None
    }

    /// Drops an injected fault whose time is up.
    fn expire(&self, state: &mut State) {
        if let Some((_, until)) = state.injected
            && state.clock.now() >= until
        {
            state.injected = None;
        }
    }

    /// Keeps the board's count of slots in force true to `slot`'s state.
    fn recount(&self, slot: &Slot, state: &mut State) {
        let in_force = state.injected.is_some() || state.configured.is_some();
        if slot.counted.swap(in_force, Ordering::AcqRel) != in_force {
            if in_force {
                self.board.in_force.fetch_add(1, Ordering::AcqRel);
            } else {
                self.board.in_force.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Faults")
            .field("in_force", &self.board.in_force.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// `name` for as long as the process runs, leaked once per distinct name:
/// a call site that is built at run time (a named `tower` layer) hands its
/// fault part a plain reference, and pays no reference count per call.
pub fn static_name(name: &str) -> &'static str {
    static NAMES: Mutex<std::collections::BTreeSet<&'static str>> =
        Mutex::new(std::collections::BTreeSet::new());
    let mut names = lock(&NAMES);
    if let Some(known) = names.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// FNV-1a of a name: a slot's own stream of draws on a seeded board.
fn fnv(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn read<T>(m: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(m: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}
