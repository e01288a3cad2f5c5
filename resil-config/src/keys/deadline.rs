//! The deadline's keys (`[deadline.configs.*]`, `[deadline.instances.*]`).

use resil_core::deadline::{DeadlineConfig, DeadlineConfigBuilder};

use super::{BASE_CONFIG, Row, Ty, own, plain};
use crate::duration;
use crate::value::Val;

pub(crate) const DEADLINE_KEYS: &[Row<DeadlineConfigBuilder, DeadlineConfig>] = &[
    plain(
        "timeout",
        Ty::Duration,
        set!(Duration, timeout),
        show!(|c| duration::format(c.timeout())),
    ),
    own(BASE_CONFIG, Ty::BaseConfig),
];
