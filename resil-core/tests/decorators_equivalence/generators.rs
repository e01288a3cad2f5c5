//! The scenarios' generators.

use super::*;

// Weighted towards what reaches deep: a retry that retries, breakers that
// let calls in, few fallbacks that answer for good.

fn answers() -> impl Strategy<Value = Answer> {
    prop_oneof![
        1 => Just(Answer::Recover),
        2 => Just(Answer::Rethrow),
        1 => Just(Answer::Replace),
    ]
}

fn fallback() -> impl Strategy<Value = FallbackSpec> {
    prop_oneof![
        3 => Just(FallbackSpec::None),
        1 => answers().prop_map(FallbackSpec::Sync),
        1 => answers().prop_map(FallbackSpec::Async),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        1 => Just(Step::Ok),
        2 => Just(Step::Err),
        1 => Just(Step::SlowOk),
        1 => Just(Step::Hangs),
    ]
}

pub(super) fn scenario() -> impl Strategy<Value = Scenario> {
    let retry = proptest::option::weighted(
        0.8,
        (
            prop_oneof![1 => Just(1u32), 2 => Just(2), 3 => Just(3)],
            prop_oneof![Just(0u64), Just(10), Just(35)],
        ),
    )
    .prop_map(|r| r.map(|(n, w)| (n, ms(w))));
    let breaker = proptest::option::of(prop_oneof![
        3 => Just(BreakerSpec::Closed),
        1 => Just(BreakerSpec::Open),
        1 => Just(BreakerSpec::ForcedOpen),
        2 => Just(BreakerSpec::HalfOpen),
        3 => Just(BreakerSpec::Trips),
    ]);
    let limiter = proptest::option::of(prop_oneof![
        3 => Just(LimiterSpec::Plenty),
        2 => Just(LimiterSpec::ExhaustedWaits),
        1 => Just(LimiterSpec::ExhaustedRefuses),
    ]);
    let time_limiter = proptest::option::of(prop_oneof![
        1 => Just(0u64),
        1 => Just(20),
        2 => Just(25),
        2 => Just(50),
    ])
    .prop_map(|t| t.map(ms));
    let bulkhead = proptest::option::of(prop_oneof![
        3 => Just(BulkheadSpec::Free),
        2 => Just(BulkheadSpec::FullWaitGetsIt),
        1 => Just(BulkheadSpec::FullWaitTiesTimeout),
        1 => Just(BulkheadSpec::FullWaitTimesOut),
        1 => Just(BulkheadSpec::FullNoWait),
    ]);
    let fallbacks = [fallback(), fallback(), fallback(), fallback(), fallback()];
    let script = [step(), step(), step()];
    (
        retry,
        breaker,
        limiter,
        time_limiter,
        bulkhead,
        fallbacks,
        script,
    )
        .prop_map(
            |(retry, breaker, limiter, time_limiter, bulkhead, fallbacks, script)| Scenario {
                retry,
                breaker,
                limiter,
                time_limiter,
                bulkhead,
                fallbacks,
                script,
                cancel_at: None,
            },
        )
}

/// A virtual time half a millisecond off every timer of the scenarios (all
/// of whole milliseconds), so no timer ties with the drop.
pub(super) fn cancel_time() -> impl Strategy<Value = Duration> {
    prop_oneof![
        1 => Just(0u64),
        3 => 0u64..60,
        2 => 60u64..300,
    ]
    .prop_map(|n| ms(n) + Duration::from_micros(500))
}

pub(super) fn config() -> ProptestConfig {
    // PROPTEST_CASES=10000 for a deeper look (a few seconds per thousand).
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}
