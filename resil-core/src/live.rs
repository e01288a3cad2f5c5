//! How a primitive's settings change while calls read them (`change_config`,
//! what a reload applies).
//!
//! Each primitive keeps its settings as versions: a call reads the current
//! one with one atomic load and gets a plain reference; a change publishes a
//! whole new version, so a call sees the old settings or the new ones, never
//! a mix of their fields. Versions are never freed while the instance lives:
//! settings read before a change stay valid, so a call in flight finishes
//! under the settings it started with, and nothing on the call path counts
//! references.
//!
//! The price is a bound: an instance holds at most [`MAX_VERSIONS`]
//! distinct configurations. A change equal to an earlier one (shadow on,
//! then off again) goes back to that version instead of taking a new one, so
//! the bound counts distinct configurations, not reloads; past it a change
//! is refused ([`ChangeRefused`]) and the instance keeps its settings. The
//! table of later versions is allocated on the first change, so an instance
//! that never changes pays for one version only.

use std::fmt;
use std::sync::OnceLock;

use crate::sync::std_lock::lock;
use crate::sync::{AtomicUsize, Ordering};

/// The most distinct versions one instance holds; see the [module documentation](self).
pub const MAX_VERSIONS: usize = 32;

/// Values replaced whole and read with one atomic load; see the [module documentation](self).
pub(crate) struct Live<T> {
    index: AtomicUsize,
    first: T,
    /// Versions 1.., each set once, before `index` names it.
    more: OnceLock<Box<[OnceLock<Box<T>>]>>,
    /// Serializes writers.
    writer: std::sync::Mutex<()>,
}

/// A change an instance refuses, and why; the instance keeps its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRefused {
    setting: Option<&'static str>,
    reason: String,
}

impl ChangeRefused {
    /// The instance already holds [`MAX_VERSIONS`] distinct versions.
    pub(crate) fn full() -> Self {
        ChangeRefused {
            setting: None,
            reason: format!(
                "this instance has had {MAX_VERSIONS} distinct configurations since it was created, the most it keeps; restart to apply another"
            ),
        }
    }

    /// `setting` (the core's name, like `limit_refresh_period`) cannot
    /// change while the instance runs.
    pub(crate) fn fixed(setting: &'static str) -> Self {
        ChangeRefused {
            setting: Some(setting),
            reason: "cannot change while the instance runs; restart to apply".to_owned(),
        }
    }

    /// The setting that cannot change, when one is to blame.
    pub fn setting(&self) -> Option<&'static str> {
        self.setting
    }

    /// Why, without the setting's name.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for ChangeRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.setting {
            Some(setting) => write!(f, "{setting}: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for ChangeRefused {}

impl<T> Live<T> {
    pub(crate) fn new(value: T) -> Self {
        Live {
            index: AtomicUsize::new(0),
            first: value,
            more: OnceLock::new(),
            writer: std::sync::Mutex::new(()),
        }
    }

    /// The current version's index.
    #[inline]
    pub(crate) fn version(&self) -> usize {
        self.index.load(Ordering::Acquire)
    }

    /// The version `v` (from [`Live::version`]).
    #[inline]
    pub(crate) fn get(&self, v: usize) -> &T {
        if v == 0 {
            return &self.first;
        }
        // Every index `version` returns is set before it is published; the
        // fallback is never taken.
        self.more
            .get()
            .and_then(|more| more.get(v - 1))
            .and_then(OnceLock::get)
            .map_or(&self.first, |v| v)
    }

    /// The current version.
    #[inline]
    pub(crate) fn load(&self) -> &T {
        self.get(self.version())
    }

    fn versions(&self) -> impl Iterator<Item = (usize, &T)> {
        let more = self.more.get().into_iter().flat_map(|m| m.iter());
        std::iter::once(&self.first)
            .chain(more.map_while(OnceLock::get).map(|v| &**v))
            .enumerate()
    }

    /// Whether a value can be stored: `same_as` finds it equal to a kept
    /// version, or there is room for another.
    pub(crate) fn fits(&self, same_as: impl Fn(&T) -> bool) -> Result<(), ChangeRefused> {
        let _serial = lock(&self.writer);
        if self.versions().any(|(_, v)| same_as(v)) || self.versions().count() < MAX_VERSIONS {
            Ok(())
        } else {
            Err(ChangeRefused::full())
        }
    }

    /// Makes `value` current, going back to an earlier version that `same`
    /// finds equal instead of keeping another copy. Returns the version now
    /// current and the one it replaced.
    ///
    /// # Errors
    ///
    /// [`ChangeRefused`] when `value` is new and [`MAX_VERSIONS`] are kept;
    /// nothing changes then.
    pub(crate) fn store(
        &self,
        value: T,
        same: impl Fn(&T, &T) -> bool,
    ) -> Result<(&T, &T), ChangeRefused> {
        self.store_prepared(value, same, |_, _| {})
    }

    /// [`Live::store`], calling `prepare(next, current)` on the version
    /// about to become current (new or reused) before readers can see it.
    pub(crate) fn store_prepared(
        &self,
        value: T,
        same: impl Fn(&T, &T) -> bool,
        prepare: impl FnOnce(&T, &T),
    ) -> Result<(&T, &T), ChangeRefused> {
        let _serial = lock(&self.writer);
        let old = self.load();
        let (index, taken) = match self.versions().find(|(_, v)| same(v, &value)) {
            Some((i, _)) => (i, None),
            None => {
                let next = self.versions().count();
                if next >= MAX_VERSIONS {
                    return Err(ChangeRefused::full());
                }
                let more = self
                    .more
                    .get_or_init(|| (1..MAX_VERSIONS).map(|_| OnceLock::new()).collect());
                (next, Some(&more[next - 1]))
            }
        };
        if let Some(slot) = taken {
            // The slot is empty: versions are taken in order under `writer`.
            let _ = slot.set(Box::new(value));
        }
        prepare(self.get(index), old);
        self.index.store(index, Ordering::Release);
        Ok((self.get(index), old))
    }

    /// How many versions are kept.
    #[cfg(all(test, not(resil_loom)))]
    pub(crate) fn kept(&self) -> usize {
        self.versions().count()
    }
}

/// Whether two configurations are one version: they print the same. The
/// interval functions, predicates and propagators in them have no other
/// equality, and a configuration read from a file prints the same each time.
pub(crate) fn same_printed<T: fmt::Debug>(a: &T, b: &T) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

impl<T: fmt::Debug> fmt::Debug for Live<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.load().fmt(f)
    }
}

#[cfg(all(test, not(resil_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_reference_taken_before_a_change_stays_valid() {
        let live = Live::new(String::from("old"));
        let before = live.load();
        let (now, old) = live.store(String::from("new"), |a, b| a == b).unwrap();
        assert_eq!(
            (before.as_str(), old.as_str(), now.as_str()),
            ("old", "old", "new")
        );
        assert_eq!(live.load(), "new");
    }

    #[test]
    fn an_equal_earlier_version_is_reused() {
        let live = Live::new(1u32);
        for _ in 0..100 {
            live.store(2, |a, b| a == b).unwrap();
            live.store(1, |a, b| a == b).unwrap();
        }
        assert_eq!(*live.load(), 1);
        assert_eq!(live.kept(), 2);
    }

    #[test]
    fn past_the_bound_a_change_is_refused_and_nothing_changes() {
        let live = Live::new(0usize);
        for i in 1..MAX_VERSIONS {
            assert!(live.fits(|v| *v == i).is_ok());
            live.store(i, |a, b| a == b).unwrap();
        }
        assert!(live.fits(|v| *v == MAX_VERSIONS).is_err());
        let refused = live.store(MAX_VERSIONS, |a, b| a == b).unwrap_err();
        assert!(
            refused.to_string().contains("restart to apply another"),
            "{refused}"
        );
        assert_eq!(*live.load(), MAX_VERSIONS - 1);
        // an earlier one is still reachable
        assert!(live.fits(|v| *v == 3).is_ok());
        live.store(3, |a, b| a == b).unwrap();
        assert_eq!(*live.load(), 3);
    }

    #[test]
    fn readers_never_see_half_a_version() {
        let live = Arc::new(Live::new((0u64, 0u64)));
        let writer = {
            let live = live.clone();
            std::thread::spawn(move || {
                for round in 0..200u64 {
                    for i in 1..MAX_VERSIONS as u64 {
                        let i = (i + round) % MAX_VERSIONS as u64;
                        live.store((i, i * 3), |a, b| a == b).unwrap();
                    }
                }
            })
        };
        while !writer.is_finished() {
            let &(a, b) = live.load();
            assert_eq!(b, a * 3);
        }
        writer.join().unwrap();
    }
}

/// loom model of the swap: a reader racing a writer sees each version whole
/// and never an older one after a newer.
///
/// Run: `RUSTFLAGS="--cfg resil_loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p resil-core --lib --release loom`
#[cfg(all(test, resil_loom))]
mod loom_model {
    use super::*;
    use loom::sync::Arc;

    #[test]
    fn loom_live_swap_is_read_whole() {
        loom::model(|| {
            let live = Arc::new(Live::new((0u64, 0u64)));
            let writer = {
                let live = live.clone();
                loom::thread::spawn(move || {
                    live.store((1, 3), |a, b| a == b).unwrap();
                    live.store((2, 6), |a, b| a == b).unwrap();
                })
            };
            let &(a, b) = live.load();
            assert_eq!(b, a * 3);
            let &(c, d) = live.load();
            assert_eq!(d, c * 3);
            assert!(c >= a, "an older version after a newer one");
            writer.join().unwrap();
            assert_eq!(*live.load(), (2, 6));
        });
    }
}
