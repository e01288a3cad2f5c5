//! The budget arithmetic of each retrying name (and each name with a
//! deadline): how long a call through it can take at worst, term by term,
//! and a warning (an error under `strict`) where nothing bounds it or where
//! the worst case exceeds the name's deadline.
//!
//! Instances of one name are taken as one function's stack, as the
//! attributes build it (see the anti-patterns). For a name with a retry, the
//! worst case is `attempts × (time-limiter timeout + bulkhead
//! max-wait-duration + rate-limiter timeout-duration) + the retry's waits`,
//! each wait at its largest (the growth of an exponential backoff, the top
//! of a randomized one). Without a time limiter an attempt can hang for
//! ever: with no deadline either there is no bound, which is a warning; a
//! deadline of the name (`[deadline.instances.<name>]`) bounds the call
//! instead. A worst case longer than the deadline is a warning too: the
//! deadline cuts calls short before their attempts run out. A wait written in code
//! (`interval_bi_function`, `#[retry(retry_after = ..)]`) cannot be read:
//! the worst case then says so instead of a total.

use std::fmt;
use std::time::Duration;

use resil_core::clock::format_duration;

use resil_core::registry::Registry;

use crate::aspect::Aspect;
use crate::error::{ConfigProblem, Diagnostics};

/// The worst case of one retrying name, with its terms.
///
/// # Examples
///
/// ```
/// use resil_config::Resilience;
///
/// let toml = r#"
/// [retry.instances.inventory-query]
/// max-attempts = 3
/// wait-duration = "100ms"
/// [timelimiter.instances.inventory-query]
/// timeout-duration = "800ms"
/// [bulkhead.instances.inventory-query]
/// max-wait-duration = "50ms"
/// "#;
/// let loaded = Resilience::builder()
///     .file_contents("resilience.toml", toml)
///     .env_vars(Vec::<(String, String)>::new())
///     .offline(true)
///     .load()?;
/// let worst = &loaded.report().worst_cases()[0];
/// assert_eq!(worst.total(), Some(std::time::Duration::from_millis(2750)));
/// assert_eq!(
///     worst.to_string(),
///     "inventory-query: 3 attempts × (timelimiter timeout-duration 800ms + bulkhead max-wait-duration 50ms) + retry waits (100ms + 100ms) = 2750ms"
/// );
/// # Ok::<(), resil_config::InitError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorstCase {
    name: String,
    attempts: u32,
    /// Per attempt: `(aspect, key, duration)`.
    per_attempt: Vec<(Aspect, &'static str, Duration)>,
    /// The waits between attempts, each at its largest; `None` when the
    /// retry's wait is written in code.
    waits: Option<Vec<Duration>>,
    timed: bool,
    /// The `timeout` of the name's deadline, if it has one.
    deadline: Option<Duration>,
}

impl WorstCase {
    /// The instances' name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The retry's `max-attempts`.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// What each attempt may spend, by aspect and key: the time limiter's
    /// timeout, the bulkhead's and the rate limiter's waits.
    pub fn per_attempt(&self) -> &[(Aspect, &'static str, Duration)] {
        &self.per_attempt
    }

    /// The waits between the attempts, each at its largest; `None` when the
    /// wait is written in code.
    pub fn waits(&self) -> Option<&[Duration]> {
        self.waits.as_deref()
    }

    /// Whether a time limiter bounds each attempt.
    pub fn is_bounded(&self) -> bool {
        self.timed
    }

    /// The `timeout` of the name's deadline (`[deadline.instances.<name>]`),
    /// which bounds the whole call, if it has one.
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline
    }

    /// Whether the worst case is longer than the deadline: the deadline
    /// then cuts calls short before their attempts run out.
    pub fn exceeds_deadline(&self) -> bool {
        matches!((self.total(), self.deadline), (Some(t), Some(d)) if t > d)
    }

    /// The longest a call can take: the worst case or the deadline,
    /// whichever is shorter; `None` when neither bounds it.
    pub fn bound(&self) -> Option<Duration> {
        match (self.total(), self.deadline) {
            (Some(t), Some(d)) => Some(t.min(d)),
            (t, d) => t.or(d),
        }
    }

    /// The worst case: `None` without a time limiter (an attempt may hang
    /// for ever) or when the wait is written in code.
    pub fn total(&self) -> Option<Duration> {
        if !self.timed {
            return None;
        }
        let waits: Duration = self.waits.as_ref()?.iter().sum();
        let attempt: Duration = self.per_attempt.iter().map(|(_, _, d)| *d).sum();
        Some(attempt.saturating_mul(self.attempts).saturating_add(waits))
    }
}

impl fmt::Display for WorstCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.attempts == 1 { "" } else { "s" };
        write!(f, "{}: {} attempt{s}", self.name, self.attempts)?;
        let mut terms: Vec<String> = self
            .per_attempt
            .iter()
            .filter(|(aspect, _, d)| *aspect == Aspect::TimeLimiter || !d.is_zero())
            .map(|(aspect, key, d)| format!("{aspect} {key} {}", format_duration(*d)))
            .collect();
        if !self.timed {
            let what = if self.deadline.is_some() {
                "no time limiter"
            } else {
                "no time limiter: unbounded"
            };
            terms.insert(0, what.to_owned());
        }
        if !terms.is_empty() {
            write!(f, " × ({})", terms.join(" + "))?;
        }
        match &self.waits {
            Some(waits) if !waits.is_empty() => {
                let waits: Vec<String> = waits.iter().map(|d| format_duration(*d)).collect();
                write!(f, " + retry waits ({})", waits.join(" + "))?;
            }
            Some(_) => {}
            None => write!(f, " + retry waits written in code")?,
        }
        match (self.total(), self.deadline) {
            (Some(total), Some(d)) if total > d => write!(
                f,
                " = {} > deadline timeout {}: over by {}",
                format_duration(total),
                format_duration(d),
                format_duration(total - d)
            ),
            (Some(total), Some(d)) => write!(
                f,
                " = {} <= deadline timeout {}",
                format_duration(total),
                format_duration(d)
            ),
            (Some(total), None) => write!(f, " = {}", format_duration(total)),
            (None, Some(d)) => write!(
                f,
                ": bounded by the deadline timeout {}",
                format_duration(d)
            ),
            (None, None) => write!(f, ": no bound"),
        }
    }
}

/// The registries the worst cases are read from.
pub(crate) struct Layers<'a> {
    pub(crate) retries: &'a Registry<resil_core::retry::Retry>,
    pub(crate) bulkheads: &'a Registry<resil_core::bulkhead::Bulkhead>,
    pub(crate) rate_limiters: &'a Registry<resil_core::rate_limiter::RateLimiter>,
    pub(crate) time_limiters: &'a Registry<resil_core::time_limiter::TimeLimiter>,
    pub(crate) deadlines: &'a Registry<resil_core::deadline::Deadline>,
}

/// The worst case of each name with a retry or a deadline, sorted by name;
/// a warning in `d` for each that retries with nothing to bound it, and for
/// each whose worst case exceeds its deadline.
pub(crate) fn compute(
    built: &Layers<'_>,
    at: &dyn Fn(Aspect, &str, String) -> ConfigProblem,
    d: &mut Diagnostics,
) -> Vec<WorstCase> {
    let mut names: Vec<String> = built
        .retries
        .all()
        .iter()
        .map(|r| r.name().to_owned())
        .chain(built.deadlines.all().iter().map(|d| d.name().to_owned()))
        .collect();
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for name in &names {
        let name = name.as_str();
        let retry = built.retries.find(name);
        let attempts = retry.as_ref().map_or(1, |r| r.config().max_attempts());
        let deadline = built.deadlines.find(name).map(|d| d.config().timeout());
        let limiter = built.time_limiters.find(name);
        let mut per_attempt = Vec::new();
        if let Some(tl) = &limiter {
            per_attempt.push((
                Aspect::TimeLimiter,
                "timeout-duration",
                tl.config().timeout_duration(),
            ));
        }
        if let Some(b) = built.bulkheads.find(name) {
            per_attempt.push((
                Aspect::Bulkhead,
                "max-wait-duration",
                b.config().max_wait_duration(),
            ));
        }
        if let Some(rl) = built.rate_limiters.find(name) {
            per_attempt.push((
                Aspect::RateLimiter,
                "timeout-duration",
                rl.config().timeout_duration(),
            ));
        }
        let waits: Option<Vec<Duration>> = match &retry {
            Some(r) => {
                let interval = r.config().interval_bi_function();
                (1..attempts).map(|n| interval.largest(n)).collect()
            }
            None => Some(Vec::new()),
        };
        let worst = WorstCase {
            name: name.to_owned(),
            attempts,
            per_attempt,
            waits,
            timed: limiter.is_some(),
            deadline,
        };
        let segment = crate::value::segment(name);
        if attempts > 1 && limiter.is_none() && deadline.is_none() {
            d.warn(at(
                Aspect::Retry,
                name,
                format!(
                    "retry `{name}` makes up to {attempts} attempts with no time limiter `{name}` and no deadline `{name}`: nothing bounds how long a call takes (an attempt that hangs is never retried, and the caller waits on); add `[timelimiter.instances.{segment}]` with a `timeout-duration`, or `[deadline.instances.{segment}]` with a `timeout`"
                ),
            ));
        }
        if worst.exceeds_deadline() {
            d.warn(at(
                Aspect::Deadline,
                name,
                format!(
                    "the worst case of `{name}` exceeds its deadline, which cuts calls short before their attempts run out: {worst}; lower the retry's `max-attempts` or the timeouts and waits, or raise the deadline's `timeout`"
                ),
            ));
        }
        out.push(worst);
    }
    out
}
