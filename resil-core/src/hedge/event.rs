//! The events of a hedge.

use std::time::Duration;

use crate::event::EventKind;

/// What happened to a hedged call.
///
/// A call whose primary attempt answered before any sibling started
/// publishes nothing (it is counted in the metrics): the events tell the
/// story of the calls that were hedged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HedgeEvent {
    /// A hedged attempt started.
    Hedged {
        /// Its index: 1 for the first hedged attempt (the primary is 0).
        attempt: u32,
        /// The delay that passed before it, or `None` when the attempt
        /// before it failed and it started at once.
        delay: Option<Duration>,
    },
    /// The hedge's retry budget denied a hedged attempt: it was not made,
    /// and the call goes on with the attempts already running.
    BudgetExhausted {
        /// The index the denied attempt would have had.
        attempt: u32,
    },
    /// A hedged call ended with a success.
    Success {
        /// The index of the attempt that won (0: the primary).
        winner: u32,
        /// The attempts that had started.
        attempts: u32,
    },
    /// Every attempt of a hedged call failed; the caller gets the last
    /// error.
    Error {
        /// The attempts that had started.
        attempts: u32,
        /// The rejection's kind name when an inner layer refused the last
        /// attempt (`"BulkheadFull"`, ...); `None` for the caller's own error.
        error_kind: Option<&'static str>,
    },
}

/// The kinds of [`HedgeEvent`], to subscribe to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HedgeEventType {
    /// [`HedgeEvent::Hedged`]
    Hedged,
    /// [`HedgeEvent::BudgetExhausted`]
    BudgetExhausted,
    /// [`HedgeEvent::Success`]
    Success,
    /// [`HedgeEvent::Error`]
    Error,
}

impl HedgeEventType {
    /// The event's name in the event streams: `HEDGED`, `BUDGET_EXHAUSTED`,
    /// `SUCCESS`, `ERROR`.
    pub fn as_str(self) -> &'static str {
        match self {
            HedgeEventType::Hedged => "HEDGED",
            HedgeEventType::BudgetExhausted => "BUDGET_EXHAUSTED",
            HedgeEventType::Success => "SUCCESS",
            HedgeEventType::Error => "ERROR",
        }
    }
}

impl EventKind for HedgeEvent {
    type Type = HedgeEventType;

    fn event_type(&self) -> HedgeEventType {
        match self {
            HedgeEvent::Hedged { .. } => HedgeEventType::Hedged,
            HedgeEvent::BudgetExhausted { .. } => HedgeEventType::BudgetExhausted,
            HedgeEvent::Success { .. } => HedgeEventType::Success,
            HedgeEvent::Error { .. } => HedgeEventType::Error,
        }
    }
}
