//! The six states, the legal transitions between them, and the packed state word.

use std::fmt;

/// The state of a circuit breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Calls flow and are recorded; the breaker opens when a rate crosses its threshold.
    Closed,
    /// Calls are refused until the wait in OPEN is over.
    Open,
    /// A limited number of probe calls decide between CLOSED and OPEN.
    HalfOpen,
    /// Calls are refused until a manual transition; nothing is recorded.
    ForcedOpen,
    /// Calls flow; nothing is recorded, the breaker never opens.
    Disabled,
    /// Calls flow and are recorded; the breaker never opens, but rate
    /// crossings are still published.
    MetricsOnly,
}

impl State {
    /// Every state, in Resilience4j's declaration order.
    pub const ALL: [State; 6] = [
        State::Closed,
        State::Open,
        State::HalfOpen,
        State::ForcedOpen,
        State::Disabled,
        State::MetricsOnly,
    ];

    /// Resilience4j's name: `CLOSED`, `OPEN`, `HALF_OPEN`, `FORCED_OPEN`, `DISABLED`, `METRICS_ONLY`.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Closed => "CLOSED",
            State::Open => "OPEN",
            State::HalfOpen => "HALF_OPEN",
            State::ForcedOpen => "FORCED_OPEN",
            State::Disabled => "DISABLED",
            State::MetricsOnly => "METRICS_ONLY",
        }
    }

    /// The `state` tag of the `resilience4j.circuitbreaker.state` meter:
    /// `closed`, `open`, `half_open`, `forced_open`, `disabled`, `metrics_only`.
    pub fn metric_tag(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
            State::ForcedOpen => "forced_open",
            State::Disabled => "disabled",
            State::MetricsOnly => "metrics_only",
        }
    }

    /// Resilience4j's `State.getOrder()`: CLOSED 0, OPEN 1, HALF_OPEN 2,
    /// DISABLED 3, FORCED_OPEN 4, METRICS_ONLY 5.
    pub fn order(self) -> u8 {
        match self {
            State::Closed => 0,
            State::Open => 1,
            State::HalfOpen => 2,
            State::Disabled => 3,
            State::ForcedOpen => 4,
            State::MetricsOnly => 5,
        }
    }

    /// Whether calls are admitted without a probe budget (CLOSED, DISABLED, METRICS_ONLY).
    pub fn admits_all(self) -> bool {
        matches!(self, State::Closed | State::Disabled | State::MetricsOnly)
    }

    /// Whether events other than transitions and resets are published in this
    /// state (not in DISABLED and FORCED_OPEN, as in Resilience4j).
    pub(crate) fn allows_publish(self) -> bool {
        !matches!(self, State::Disabled | State::ForcedOpen)
    }

    /// Resilience4j's transition table: everything is legal except
    /// CLOSED → HALF_OPEN and METRICS_ONLY → OPEN / HALF_OPEN.
    pub fn can_transition_to(self, to: State) -> bool {
        !matches!(
            (self, to),
            (State::Closed, State::HalfOpen)
                | (State::MetricsOnly, State::Open)
                | (State::MetricsOnly, State::HalfOpen)
        )
    }

    fn code(self) -> u64 {
        match self {
            State::Closed => 0,
            State::Open => 1,
            State::HalfOpen => 2,
            State::ForcedOpen => 3,
            State::Disabled => 4,
            State::MetricsOnly => 5,
        }
    }

    fn from_code(code: u64) -> State {
        match code {
            0 => State::Closed,
            1 => State::Open,
            2 => State::HalfOpen,
            3 => State::ForcedOpen,
            4 => State::Disabled,
            _ => State::MetricsOnly,
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which metrics object a state records into. OPEN keeps the one of the state
/// it came from, so a late call and the not-permitted counter continue there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// A closed-style window (CLOSED, METRICS_ONLY).
    Closed = 0,
    /// The count window of `permitted_number_of_calls_in_half_open_state`.
    HalfOpen = 1,
    /// Records nothing (FORCED_OPEN, DISABLED).
    Empty = 2,
}

impl Slot {
    fn from_code(code: u64) -> Slot {
        match code {
            0 => Slot::Closed,
            1 => Slot::HalfOpen,
            _ => Slot::Empty,
        }
    }
}

/// The breaker's state in one `AtomicU64`, so that reading it is one load and
/// each state object's one-shot gate is a compare-and-swap on its generation:
///
/// ```text
/// bits  0..3   state
/// bits  3..5   metrics slot
/// bits  8..32  HALF_OPEN probe permits left (24 bits)
/// bits 32..64  generation: +1 on every transition, even to the same state
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Word(pub(crate) u64);

pub(crate) const MAX_PERMITS: u32 = (1 << 24) - 1;

impl Word {
    pub(crate) fn new(state: State, slot: Slot, permits: u32, generation: u32) -> Word {
        debug_assert!(permits <= MAX_PERMITS);
        Word(
            state.code()
                | (slot as u64) << 3
                | u64::from(permits & MAX_PERMITS) << 8
                | u64::from(generation) << 32,
        )
    }

    #[inline]
    pub(crate) fn state(self) -> State {
        State::from_code(self.0 & 0b111)
    }

    /// CLOSED, DISABLED or METRICS_ONLY, without decoding the state.
    #[inline]
    pub(crate) fn admits_all(self) -> bool {
        // bit n set for the state whose code is n: 0 CLOSED, 4 DISABLED, 5 METRICS_ONLY
        (0b11_0001u64 >> (self.0 & 0b111)) & 1 == 1
    }

    /// CLOSED or METRICS_ONLY: the states that record into the closed-style
    /// window and admit every call.
    #[inline]
    pub(crate) fn records_closed(self) -> bool {
        // bit n set for the state whose code is n: 0 CLOSED, 5 METRICS_ONLY
        (0b10_0001u64 >> (self.0 & 0b111)) & 1 == 1
    }

    #[inline]
    pub(crate) fn slot(self) -> Slot {
        Slot::from_code((self.0 >> 3) & 0b11)
    }

    #[inline]
    pub(crate) fn permits(self) -> u32 {
        ((self.0 >> 8) as u32) & MAX_PERMITS
    }

    #[inline]
    pub(crate) fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }

    pub(crate) fn with_permits(self, permits: u32) -> Word {
        Word::new(self.state(), self.slot(), permits, self.generation())
    }
}

impl fmt::Debug for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Word")
            .field("state", &self.state())
            .field("slot", &self.slot())
            .field("permits", &self.permits())
            .field("generation", &self.generation())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_round_trips() {
        for s in State::ALL {
            let w = Word::new(s, Slot::HalfOpen, MAX_PERMITS, u32::MAX);
            assert_eq!(w.state(), s);
            assert_eq!(w.slot(), Slot::HalfOpen);
            assert_eq!(w.permits(), MAX_PERMITS);
            assert_eq!(w.generation(), u32::MAX);
            assert_eq!(w.with_permits(3).permits(), 3);
            assert_eq!(w.admits_all(), s.admits_all());
            assert_eq!(
                w.records_closed(),
                matches!(s, State::Closed | State::MetricsOnly)
            );
        }
    }

    #[test]
    fn transition_table_matches_resilience4j() {
        let forbidden: Vec<_> = State::ALL
            .iter()
            .flat_map(|a| State::ALL.iter().map(move |b| (*a, *b)))
            .filter(|(a, b)| !a.can_transition_to(*b))
            .collect();
        assert_eq!(
            forbidden,
            [
                (State::Closed, State::HalfOpen),
                (State::MetricsOnly, State::Open),
                (State::MetricsOnly, State::HalfOpen)
            ]
        );
    }
}
