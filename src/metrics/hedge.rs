//! The hedge's meters: its call and attempt counters, from its snapshot.

use resil_core::event::Event;
use resil_core::hedge::{Hedge, HedgeEvent};

use super::*;

pub(crate) type Meters = ();

pub(crate) fn meters(_: &Hedge) -> Meters {}

pub(crate) fn record(_: &Meters, _: &Event<HedgeEvent>) {}

pub(crate) fn refresh(hedge: &Hedge) {
    let m = hedge.metrics();
    let (name, tags) = (hedge.name(), hedge.tags());
    for (winner, value) in [
        ("primary", m.number_of_primary_wins()),
        ("hedge", m.number_of_hedge_wins()),
        ("none", m.number_of_failed_calls()),
    ] {
        absolute(HEDGE_CALLS, name, Some(("winner", winner)), tags, value);
    }
    absolute(
        HEDGE_ATTEMPTS,
        name,
        None,
        tags,
        m.number_of_hedged_attempts(),
    );
}
