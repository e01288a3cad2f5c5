//! The primitives of a scenario, fresh for each run, and their metrics.

use super::*;

/// Fresh instances for one run, configured from the scenario.
pub(super) struct Prims {
    pub(super) retry: Option<Retry>,
    pub(super) cb: Option<CircuitBreaker>,
    pub(super) rl: Option<RateLimiter>,
    pub(super) tl: Option<TimeLimiter>,
    pub(super) bh: Option<Bulkhead>,
}

pub(super) fn build(sc: &Scenario, ctx: &Arc<Ctx>) -> Prims {
    let clock = TokioClock::new();
    let retry = sc.retry.map(|(attempts, wait)| {
        let config = RetryConfig::builder()
            .max_attempts(attempts)
            .wait_duration(wait)
            .build()
            .unwrap();
        let retry = Retry::with_clock("eq", config, clock.clone());
        ctx.subscribe("retry", retry.event_publisher());
        retry
    });
    let cb = sc.breaker.map(|spec| {
        let builder = CircuitBreakerConfig::builder()
            .slow_call_duration_threshold(ms(100))
            .permitted_number_of_calls_in_half_open_state(1)
            .wait_duration_in_open_state(Duration::from_secs(60));
        let builder = match spec {
            BreakerSpec::Trips => builder
                .sliding_window_size(2)
                .minimum_number_of_calls(2)
                .failure_rate_threshold(50.0),
            _ => builder,
        };
        let cb = CircuitBreaker::with_clock("eq", builder.build().unwrap(), clock.clone());
        match spec {
            BreakerSpec::Closed | BreakerSpec::Trips => {}
            BreakerSpec::Open => cb.transition_to_open_state().unwrap(),
            BreakerSpec::ForcedOpen => cb.transition_to_forced_open_state().unwrap(),
            BreakerSpec::HalfOpen => {
                cb.transition_to_open_state().unwrap();
                cb.transition_to_half_open_state().unwrap();
            }
        }
        ctx.subscribe("cb", cb.event_publisher());
        cb
    });
    let rl = sc.limiter.map(|spec| {
        let (limit, period, timeout) = match spec {
            LimiterSpec::Plenty => (100, Duration::from_secs(1), Duration::ZERO),
            LimiterSpec::ExhaustedWaits => (1, ms(40), ms(100)),
            LimiterSpec::ExhaustedRefuses => (1, ms(40), ms(10)),
        };
        let config = RateLimiterConfig::builder()
            .limit_for_period(limit)
            .limit_refresh_period(period)
            .timeout_duration(timeout)
            .build()
            .unwrap();
        let rl = RateLimiter::with_clock("eq", config, clock.clone());
        ctx.subscribe("rl", rl.event_publisher());
        if spec != LimiterSpec::Plenty {
            rl.drain_permissions();
        }
        rl
    });
    let tl = sc.time_limiter.map(|timeout| {
        let config = TimeLimiterConfig::builder()
            .timeout_duration(timeout)
            .build()
            .unwrap();
        let tl = TimeLimiter::with_clock("eq", config, clock.clone());
        ctx.subscribe("tl", tl.event_publisher());
        tl
    });
    let bh = sc.bulkhead.map(|spec| {
        let config = BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .max_wait_duration(spec.max_wait())
            .build()
            .unwrap();
        let bh = Bulkhead::with_clock("eq", config, clock.clone());
        ctx.subscribe("bh", bh.event_publisher());
        bh
    });
    Prims {
        retry,
        cb,
        rl,
        tl,
        bh,
    }
}

/// Every metric the primitives show publicly.
pub(super) fn metrics(p: &Prims) -> String {
    let mut out = Vec::new();
    if let Some(r) = &p.retry {
        let m = r.metrics();
        out.push(format!(
            "retry {:?} total={}",
            m.calls_by_kind(),
            m.number_of_total_calls()
        ));
    }
    if let Some(cb) = &p.cb {
        let m = cb.metrics();
        out.push(format!(
            "cb {:?} rate={} slow_rate={} buffered={} ok={} failed={} slow={} slow_ok={} slow_failed={} not_permitted={}",
            cb.state(),
            m.failure_rate(),
            m.slow_call_rate(),
            m.number_of_buffered_calls(),
            m.number_of_successful_calls(),
            m.number_of_failed_calls(),
            m.number_of_slow_calls(),
            m.number_of_slow_successful_calls(),
            m.number_of_slow_failed_calls(),
            m.number_of_not_permitted_calls(),
        ));
    }
    if let Some(rl) = &p.rl {
        let m = rl.metrics();
        out.push(format!(
            "rl available={} waiting={} nanos_to_wait={:?} cycle={}",
            m.available_permissions(),
            m.number_of_waiting_threads(),
            m.nanos_to_wait(),
            m.cycle()
        ));
    }
    if let Some(tl) = &p.tl {
        let m = tl.metrics();
        out.push(format!(
            "tl ok={} failed={} timeout={} detached={}",
            m.number_of_successful_calls(),
            m.number_of_failed_calls(),
            m.number_of_timeout_calls(),
            m.number_of_detached_futures()
        ));
    }
    if let Some(bh) = &p.bh {
        let m = bh.metrics();
        out.push(format!(
            "bh available={} max={} waiting={}",
            m.available_concurrent_calls(),
            m.max_allowed_concurrent_calls(),
            m.number_of_waiting_calls()
        ));
    }
    out.join(" | ")
}
