//! The hedge's keys (`[hedge.configs.*]`, `[hedge.instances.*]`).

use resil_core::hedge::{HedgeConfig, HedgeConfigBuilder};

use super::{
    BASE_CONFIG, BUDGET, EVENT_CONSUMER_BUFFER_SIZE, KEY_LABEL, MAX_KEYS, Row, Ty, own,
    own_printed, plain,
};
use crate::duration;
use crate::value::Val;

pub(crate) const HEDGE_KEYS: &[Row<HedgeConfigBuilder, HedgeConfig>] = &[
    plain(
        "delay",
        Ty::Duration,
        set!(Duration, delay),
        show!(|c| duration::format(c.delay())),
    ),
    plain(
        "delay-percentile",
        Ty::Float,
        set!(Float, delay_percentile),
        |c, _| c.delay_percentile().map(|p| p.to_string()),
    ),
    plain(
        "max-hedged-attempts",
        Ty::Count,
        set!(Count, max_hedged_attempts),
        show!(|c| c.max_hedged_attempts().to_string()),
    ),
    own_printed(BUDGET, Ty::Text, |c, _| {
        c.budget().map(|b| b.name().to_owned())
    }),
    plain(
        EVENT_CONSUMER_BUFFER_SIZE,
        Ty::Count,
        set!(Count, event_consumer_buffer_size),
        show!(|c| c.event_consumer_buffer_size().to_string()),
    ),
    own(MAX_KEYS, Ty::Count),
    own(KEY_LABEL, Ty::Bool),
    own(BASE_CONFIG, Ty::BaseConfig),
];
