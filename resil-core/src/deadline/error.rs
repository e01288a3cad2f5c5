//! The deadline's rejection, and the count of them per pattern and instance.

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::fmt;
use std::sync::Mutex;

use crate::Name;

/// The request's deadline left no time for the call, or ran out while a
/// pattern waited for it: `kind` is the pattern that noticed (`deadline`,
/// `retry`, `timelimiter`, `ratelimiter`, `bulkhead`,
/// `thread-pool-bulkhead`) and `name` its instance.
///
/// It is the caller's budget that ran out, not the downstream that failed:
/// a circuit breaker does not record it as a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadlineExceeded {
    kind: &'static str,
    name: Name,
}

impl DeadlineExceeded {
    /// The deadline noticed by the `kind` instance `name`.
    pub fn new(kind: &'static str, name: Name) -> Self {
        DeadlineExceeded { kind, name }
    }

    /// Made by a pattern that noticed the deadline: counted in
    /// [`exceeded_totals`].
    #[cold]
    pub(crate) fn noticed(kind: &'static str, name: &Name) -> Self {
        count(kind, name);
        DeadlineExceeded::new(kind, name.clone())
    }

    /// The pattern that noticed the deadline (the kind of its instance, as
    /// resilience.toml spells it: `timelimiter`, `ratelimiter`, ...).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The name of the instance that noticed it.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for DeadlineExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the request's deadline left no time: noticed by {} `{}`",
            self.kind, self.name
        )
    }
}

impl StdError for DeadlineExceeded {}

type Totals = BTreeMap<(&'static str, Name), u64>;

static TOTALS: Mutex<Totals> = Mutex::new(BTreeMap::new());

/// Counts a deadline noticed by the `kind` instance `name` (a call that
/// does not run, or a wait cut short): `resil_deadline_exceeded_total`.
#[cold]
pub(crate) fn count(kind: &'static str, name: &Name) {
    let mut totals = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    *totals.entry((kind, name.clone())).or_default() += 1;
}

/// How many times each pattern's instance noticed the request's deadline
/// (refused a call with no time left, cut a wait or a retry short), as
/// `(kind, name, count)`, sorted: the meter
/// `resil_deadline_exceeded_total{kind,name}`.
pub fn exceeded_totals() -> Vec<(&'static str, String, u64)> {
    let totals = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    totals
        .iter()
        .map(|((kind, name), n)| (*kind, name.to_string(), *n))
        .collect()
}
