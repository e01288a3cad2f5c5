//! The time limiter's keys (`[timelimiter.configs.*]`, `[timelimiter.instances.*]`).

use resil_core::time_limiter::{TimeLimiterConfig, TimeLimiterConfigBuilder};

use super::{
    BASE_CONFIG, EVENT_CONSUMER_BUFFER_SIZE, KEY_LABEL, MAX_KEYS, Row, SHADOW, Ty, own, plain,
};
use crate::duration;
use crate::value::Val;

pub(crate) const TIME_LIMITER_KEYS: &[Row<TimeLimiterConfigBuilder, TimeLimiterConfig>] = &[
    plain(
        "timeout-duration",
        Ty::Duration,
        set!(Duration, timeout_duration),
        show!(|c| duration::format(c.timeout_duration())),
    ),
    plain(
        "cancel-running-future",
        Ty::Bool,
        set!(Bool, cancel_running_future),
        show!(|c| c.cancel_running_future().to_string()),
    ),
    plain(
        SHADOW,
        Ty::Bool,
        set!(Bool, shadow),
        show!(|c| c.shadow().to_string()),
    ),
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
