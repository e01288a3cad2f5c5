//! Reading a recording line by line: each line parsed and checked, a bad
//! one named by its file and line number.

use std::io::BufRead;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Deserialize;

/// One line of a recording, as written by `resil::record`.
#[derive(Debug, Deserialize)]
struct Raw {
    time: String,
    kind: String,
    name: String,
    outcome: String,
    duration_us: Option<u64>,
    attempts: Option<u32>,
    to: Option<String>,
}

/// The pattern a line belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    CircuitBreaker,
    Retry,
    RateLimiter,
    Bulkhead,
    ThreadPoolBulkhead,
    TimeLimiter,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::CircuitBreaker => "circuitbreaker",
            Kind::Retry => "retry",
            Kind::RateLimiter => "ratelimiter",
            Kind::Bulkhead => "bulkhead",
            Kind::ThreadPoolBulkhead => "thread-pool-bulkhead",
            Kind::TimeLimiter => "timelimiter",
        }
    }
}

/// What a line says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Success,
    Error,
    Ignored,
    Refused,
    Permitted,
    Finished,
    /// A retry's failed attempt, another following.
    Retry,
    Timeout,
    /// A breaker's state changed; `true` when to OPEN.
    Transition {
        to_open: bool,
    },
}

/// One checked line.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub(crate) time: SystemTime,
    pub(crate) kind: Kind,
    pub(crate) name: String,
    pub(crate) outcome: Outcome,
    pub(crate) duration: Duration,
    pub(crate) attempts: u32,
}

/// Reads `reader` line by line, handing each checked line to `each`; a line
/// that is not one of a recording stops the reading with an error that
/// names `file` and the line's number. Blank lines are skipped.
pub(crate) fn read(
    file: &Path,
    reader: impl BufRead,
    mut each: impl FnMut(Line),
) -> Result<u64, String> {
    let mut count = 0;
    for (index, text) in reader.lines().enumerate() {
        let number = index + 1;
        let at = |m: &dyn std::fmt::Display| format!("{}:{number}: {m}", file.display());
        let text = text.map_err(|e| at(&format!("cannot read: {e}")))?;
        if text.trim().is_empty() {
            continue;
        }
        let raw: Raw = serde_json::from_str(&text)
            .map_err(|e| at(&format!("not a line of a recording ({e})")))?;
        let line = check(raw).map_err(|m| at(&m))?;
        count += 1;
        each(line);
    }
    Ok(count)
}

fn check(raw: Raw) -> Result<Line, String> {
    let time = humantime::parse_rfc3339(&raw.time)
        .map_err(|e| format!("`time` {:?} is not an RFC 3339 time ({e})", raw.time))?;
    let kind = match raw.kind.as_str() {
        "circuitbreaker" => Kind::CircuitBreaker,
        "retry" => Kind::Retry,
        "ratelimiter" => Kind::RateLimiter,
        "bulkhead" => Kind::Bulkhead,
        "thread-pool-bulkhead" => Kind::ThreadPoolBulkhead,
        "timelimiter" => Kind::TimeLimiter,
        other => return Err(format!("unknown `kind` {other:?}")),
    };
    let outcome = match raw.outcome.as_str() {
        "success" => Outcome::Success,
        "error" => Outcome::Error,
        "ignored" => Outcome::Ignored,
        "refused" => Outcome::Refused,
        "permitted" => Outcome::Permitted,
        "finished" => Outcome::Finished,
        "retry" => Outcome::Retry,
        "timeout" => Outcome::Timeout,
        "transition" => Outcome::Transition {
            to_open: raw.to.as_deref() == Some("OPEN"),
        },
        other => return Err(format!("unknown `outcome` {other:?}")),
    };
    let fits = match kind {
        Kind::CircuitBreaker => matches!(
            outcome,
            Outcome::Success
                | Outcome::Error
                | Outcome::Ignored
                | Outcome::Refused
                | Outcome::Transition { .. }
        ),
        Kind::Retry => matches!(
            outcome,
            Outcome::Success
                | Outcome::Error
                | Outcome::Ignored
                | Outcome::Refused
                | Outcome::Retry
        ),
        Kind::RateLimiter => matches!(outcome, Outcome::Permitted | Outcome::Refused),
        Kind::Bulkhead | Kind::ThreadPoolBulkhead => matches!(
            outcome,
            Outcome::Permitted | Outcome::Finished | Outcome::Refused
        ),
        Kind::TimeLimiter => matches!(
            outcome,
            Outcome::Success | Outcome::Error | Outcome::Timeout
        ),
    };
    if !fits {
        return Err(format!(
            "`outcome` {:?} is not one of a {}",
            raw.outcome, raw.kind
        ));
    }
    let timed = match kind {
        Kind::CircuitBreaker => matches!(
            outcome,
            Outcome::Success | Outcome::Error | Outcome::Ignored
        ),
        Kind::TimeLimiter => true,
        _ => false,
    };
    if timed && raw.duration_us.is_none() {
        return Err(format!(
            "a {}'s {:?} needs its `duration_us`",
            raw.kind, raw.outcome
        ));
    }
    Ok(Line {
        time,
        kind,
        name: raw.name,
        outcome,
        duration: Duration::from_micros(raw.duration_us.unwrap_or(0)),
        attempts: raw.attempts.unwrap_or(0),
    })
}
