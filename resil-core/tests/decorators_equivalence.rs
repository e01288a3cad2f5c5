//! A differential test of `Decorators::call_async`, one chain of the
//! engine (`resil_core::chain`), against a reference made of single-layer
//! chains nested by hand, on fresh and identically configured instances,
//! under tokio's paused time.
//!
//! The reference is
//!
//! ```text
//! Retry( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead( call ) ) ) ) )
//! ```
//!
//! with each layer its own `ChainFuture` (a `Stack` of that layer alone,
//! around a `Call` that makes the next layer's future), each layer's
//! fallback applied after that layer (the layer's future is gone by then),
//! and each layer created when the layer outside it is first polled.
//!
//! Each scenario runs twice, once per chain, each in a fresh paused runtime,
//! and compares the result, the calls of the caller's closure and of each
//! fallback, the virtual time, the metrics of every primitive and one log of
//! everything that happened (every primitive's events, the inner futures'
//! starts, ends and drops, the fallbacks), each entry stamped with its
//! virtual time. The cancellation half runs each chain until a fixed virtual
//! time, drops it there and compares what is left, and that every permit
//! came back.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use resil_core::Error;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
use resil_core::chain::{Call, ChainFuture, Lift, Stack};
use resil_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerClassifier, CircuitBreakerConfig, State,
};
use resil_core::clock::{Clock, TokioClock};
use resil_core::decorators::{Decorators, Layer};
use resil_core::event::EventKind;
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil_core::retry::{Retry, RetryClassifier, RetryConfig};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};

#[path = "decorators_equivalence/generators.rs"]
mod generators;
#[path = "decorators_equivalence/primitives.rs"]
mod primitives;
#[path = "decorators_equivalence/reference.rs"]
mod reference;

use self::generators::{cancel_time, config, scenario};
use self::primitives::{Prims, build, metrics};
use self::reference::Reference;

type E = &'static str;
type R = Result<u32, Error<E>>;

// ------------------------------------------------------------ scenarios

/// How the breaker starts.
#[derive(Debug, Clone, Copy, PartialEq)]
enum BreakerSpec {
    /// Closed, a large window: never trips here.
    Closed,
    /// Open (for 60 s): every attempt is refused.
    Open,
    /// Forced open.
    ForcedOpen,
    /// Half-open, one probe allowed.
    HalfOpen,
    /// Closed with a window of 2 calls at 50 %: trips on a failure out of two.
    Trips,
}

/// How the rate limiter starts.
#[derive(Debug, Clone, Copy, PartialEq)]
enum LimiterSpec {
    /// 100 permits a second.
    Plenty,
    /// Drained, 1 permit every 40 ms, waits up to 100 ms.
    ExhaustedWaits,
    /// Drained, 1 permit every 40 ms, waits up to 10 ms (so refuses, after the wait).
    ExhaustedRefuses,
}

/// How the bulkhead (one call at a time) starts.
#[derive(Debug, Clone, Copy, PartialEq)]
enum BulkheadSpec {
    /// Its permit free, no wait.
    Free,
    /// Held until 20 ms, waits up to 30 ms: the first attempt gets it.
    FullWaitGetsIt,
    /// Held until 25 ms, waits up to 30 ms: the permit comes as a 25 ms time
    /// limiter (started with it) runs out; the permit wins.
    FullWaitTiesTimeout,
    /// Held until 100 ms, waits up to 30 ms.
    FullWaitTimesOut,
    /// Held until 100 ms, no wait.
    FullNoWait,
}

impl BulkheadSpec {
    fn max_wait(self) -> Duration {
        match self {
            BulkheadSpec::Free | BulkheadSpec::FullNoWait => Duration::ZERO,
            BulkheadSpec::FullWaitGetsIt
            | BulkheadSpec::FullWaitTiesTimeout
            | BulkheadSpec::FullWaitTimesOut => ms(30),
        }
    }

    /// How long an outside caller holds the only permit.
    fn held_for(self) -> Option<Duration> {
        match self {
            BulkheadSpec::Free => None,
            BulkheadSpec::FullWaitGetsIt => Some(ms(20)),
            BulkheadSpec::FullWaitTiesTimeout => Some(ms(25)),
            BulkheadSpec::FullWaitTimesOut | BulkheadSpec::FullNoWait => Some(ms(100)),
        }
    }
}

/// What a fallback answers.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Answer {
    /// `Ok(1000 + the layer's index)`.
    Recover,
    /// The error it was given.
    Rethrow,
    /// `Error::Inner("<layer> fallback")`.
    Replace,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum FallbackSpec {
    None,
    Sync(Answer),
    /// Sleeps 3 ms (of paused time), then answers.
    Async(Answer),
}

/// What the caller's future does in one attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    /// `Ok(attempt)` at once.
    Ok,
    /// `Err("boom")` at once.
    Err,
    /// `Ok(attempt)` after 20 ms (within every time limit but 0; as a 20 ms
    /// one runs out, and then the future wins).
    SlowOk,
    /// `Ok(attempt)` after 200 ms (past every time limit, and slow for the breaker).
    Hangs,
}

#[derive(Debug, Clone)]
struct Scenario {
    /// Max attempts and the wait between them.
    retry: Option<(u32, Duration)>,
    breaker: Option<BreakerSpec>,
    limiter: Option<LimiterSpec>,
    /// The time limiter's timeout.
    time_limiter: Option<Duration>,
    bulkhead: Option<BulkheadSpec>,
    /// Per layer, in `LAYERS`.
    fallbacks: [FallbackSpec; 5],
    /// The caller's future per attempt (the attempt's index modulo 3).
    script: [Step; 3],
    /// Drop the chain's future at this virtual time, if it is still running.
    cancel_at: Option<Duration>,
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The layers these chains have, in `Layer::ORDER` (no hedge, no thread
/// pool).
const LAYERS: [Layer; 5] = [
    Layer::Retry,
    Layer::CircuitBreaker,
    Layer::RateLimiter,
    Layer::TimeLimiter,
    Layer::Bulkhead,
];

/// Where `layer` is in [`LAYERS`]: the index of its fallback and its count.
fn slot(layer: Layer) -> usize {
    LAYERS
        .iter()
        .position(|l| *l == layer)
        .unwrap_or_else(|| unreachable!("no {layer:?} in these chains"))
}

fn layer_name(layer: Layer) -> &'static str {
    match layer {
        Layer::Retry => "retry",
        Layer::CircuitBreaker => "cb",
        Layer::RateLimiter => "rl",
        Layer::TimeLimiter => "tl",
        Layer::Bulkhead => "bh",
        other => unreachable!("no {other:?} in these chains"),
    }
}

fn replacement(layer: Layer) -> E {
    match layer {
        Layer::Retry => "retry fallback",
        Layer::CircuitBreaker => "cb fallback",
        Layer::RateLimiter => "rl fallback",
        Layer::TimeLimiter => "tl fallback",
        Layer::Bulkhead => "bh fallback",
        other => unreachable!("no {other:?} in these chains"),
    }
}

// ------------------------------------------------------------ a run's record

/// What one run shares with its closures, fallbacks and event consumers.
struct Ctx {
    clock: TokioClock,
    log: Mutex<Vec<String>>,
    inner_calls: AtomicU32,
    fallback_calls: [AtomicU32; 5],
}

impl Ctx {
    fn new() -> Self {
        Ctx {
            clock: TokioClock::new(),
            log: Mutex::new(Vec::new()),
            inner_calls: AtomicU32::new(0),
            fallback_calls: Default::default(),
        }
    }

    fn now(&self) -> Duration {
        self.clock.now().as_duration()
    }

    fn log(&self, what: impl std::fmt::Display) {
        let t = self.now().as_micros();
        self.log.lock().unwrap().push(format!("{t:>8}us {what}"));
    }

    fn subscribe<K: EventKind + std::fmt::Debug>(
        self: &Arc<Self>,
        who: &'static str,
        publisher: &resil_core::event::EventPublisher<K>,
    ) {
        let ctx = Arc::clone(self);
        publisher.on_event(move |e| {
            ctx.log(format_args!(
                "{who} event {:?} stamped {:?}",
                e.kind(),
                e.created_at()
            ))
        });
    }
}

/// Logs a drop of an inner future that had not finished.
struct Track<'c> {
    ctx: &'c Ctx,
    n: u32,
    done: bool,
}

impl Drop for Track<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.ctx.log(format_args!("inner#{} dropped", self.n));
        }
    }
}

/// The caller's closure: one future per attempt, per the script.
fn attempt<'c>(
    ctx: &'c Ctx,
    script: [Step; 3],
) -> impl Future<Output = Result<u32, E>> + Send + 'c {
    let n = ctx.inner_calls.fetch_add(1, Ordering::SeqCst) + 1;
    let step = script[(n as usize - 1) % 3];
    ctx.log(format_args!("inner#{n} called: {step:?}"));
    let mut track = Track {
        ctx,
        n,
        done: false,
    };
    async move {
        let track = &mut track;
        let result = match step {
            Step::Ok => Ok(n),
            Step::Err => Err("boom"),
            Step::SlowOk => {
                tokio::time::sleep(ms(20)).await;
                Ok(n)
            }
            Step::Hangs => {
                tokio::time::sleep(ms(200)).await;
                Ok(n)
            }
        };
        track.done = true;
        track.ctx.log(format_args!("inner#{n} returns {result:?}"));
        result
    }
}

fn answer(layer: Layer, a: Answer, e: Error<E>) -> R {
    match a {
        Answer::Recover => Ok(1000 + layer as u32),
        Answer::Rethrow => Err(e),
        Answer::Replace => Err(Error::Inner(replacement(layer))),
    }
}

fn sync_fallback(ctx: &Ctx, layer: Layer, a: Answer, e: Error<E>) -> R {
    ctx.fallback_calls[slot(layer)].fetch_add(1, Ordering::SeqCst);
    ctx.log(format_args!(
        "{} sync fallback called with {e:?}",
        layer_name(layer)
    ));
    answer(layer, a, e)
}

/// An async fallback: counted when called, pending once (a 3 ms sleep) before it answers.
fn async_fallback(
    ctx: &Ctx,
    layer: Layer,
    a: Answer,
    e: Error<E>,
) -> impl Future<Output = R> + Send + '_ {
    ctx.fallback_calls[slot(layer)].fetch_add(1, Ordering::SeqCst);
    ctx.log(format_args!(
        "{} async fallback called with {e:?}",
        layer_name(layer)
    ));
    async move {
        tokio::time::sleep(ms(3)).await;
        let r = answer(layer, a, e);
        ctx.log(format_args!(
            "{} async fallback answers {r:?}",
            layer_name(layer)
        ));
        r
    }
}

// ------------------------------------------------------------ the real chain

async fn via_decorators(sc: &Scenario, p: &Prims, ctx: &Ctx) -> R {
    let script = sc.script;
    let mut d = Decorators::new();
    if let Some(r) = &p.retry {
        d = d.with_retry(r);
    }
    if let Some(cb) = &p.cb {
        d = d.with_circuit_breaker(cb);
    }
    if let Some(rl) = &p.rl {
        d = d.with_rate_limiter(rl);
    }
    if let Some(bh) = &p.bh {
        d = d.with_bulkhead(bh);
    }
    for layer in LAYERS {
        if let FallbackSpec::Sync(a) = sc.fallbacks[slot(layer)] {
            d = d.with_fallback(layer, move |e| sync_fallback(ctx, layer, a, e));
        }
    }
    let asyncs: Vec<(Layer, Answer)> = LAYERS
        .iter()
        .filter_map(|&layer| match sc.fallbacks[slot(layer)] {
            FallbackSpec::Async(a) => Some((layer, a)),
            _ => None,
        })
        .collect();
    let mut d = match (&p.tl, asyncs.first()) {
        (Some(tl), _) => d.with_time_limiter(tl),
        (None, Some(&(layer, a))) => {
            d.with_async_fallback(layer, move |e| async_fallback(ctx, layer, a, e))
        }
        // A chain that may run synchronously, called async.
        (None, None) => return d.call_async(|| attempt(ctx, script)).await,
    };
    for &(layer, a) in &asyncs {
        d = d.with_async_fallback(layer, move |e| async_fallback(ctx, layer, a, e));
    }
    d.call_async(|| attempt(ctx, script)).await
}

// ------------------------------------------------------------ running both

#[derive(Debug, Clone, Copy, PartialEq)]
enum Chain {
    Reference,
    Decorators,
}

/// Everything a run shows.
#[derive(Debug, PartialEq)]
struct Outcome {
    /// `None` when cancelled.
    result: Option<String>,
    /// Virtual time when the call ended or was dropped.
    elapsed: Duration,
    inner_calls: u32,
    fallback_calls: [u32; 5],
    /// The metrics when the call ended or was dropped.
    metrics_at_end: String,
    /// The metrics once every outside holder and timer is done.
    metrics_after: String,
    log: Vec<String>,
    /// Broken invariants after the drop (permits not back).
    leaks: Vec<String>,
}

fn run(sc: &Scenario, chain: Chain) -> Outcome {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let ctx = Arc::new(Ctx::new());
        let p = build(sc, &ctx);
        // An outside caller holding the bulkhead's permit for a while.
        let held = match (&p.bh, sc.bulkhead.and_then(BulkheadSpec::held_for)) {
            (Some(bh), Some(d)) => Some((bh.try_acquire_permission().unwrap(), d)),
            _ => None,
        };
        let holder = async {
            if let Some((permit, d)) = held {
                tokio::time::sleep(d).await;
                ctx.log("holder releases the bulkhead");
                drop(permit);
            }
        };
        let call = async {
            let call = async {
                match chain {
                    Chain::Reference => {
                        let reference = Reference {
                            sc,
                            p: &p,
                            ctx: &ctx,
                            breaker: CircuitBreakerClassifier::new(),
                            retry: RetryClassifier::new(),
                        };
                        reference.call(|| attempt(&ctx, sc.script)).await
                    }
                    Chain::Decorators => via_decorators(sc, &p, &ctx).await,
                }
            };
            let result = match sc.cancel_at {
                None => Some(call.await),
                Some(at) => tokio::time::timeout(at, call).await.ok(),
            };
            match &result {
                Some(r) => ctx.log(format_args!("call returns {r:?}")),
                None => ctx.log("call dropped"),
            }
            (result, ctx.now(), metrics(&p))
        };
        // The holder is polled first, always (`tokio::join!` takes turns): a
        // permit it gives back at some instant is free before the chain is
        // polled at that instant, whatever number of polls the chain takes.
        let (mut holder, mut call) = (pin!(holder), pin!(call));
        let mut holder_done = false;
        let (result, elapsed, metrics_at_end) = std::future::poll_fn(|cx| {
            if !holder_done {
                holder_done = holder.as_mut().poll(cx).is_ready();
            }
            call.as_mut().poll(cx)
        })
        .await;
        if !holder_done {
            holder.await;
        }
        // Let every timer left (rate limiter cycles, holders) run out.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let metrics_after = metrics(&p);
        let mut leaks = Vec::new();
        if let Some(bh) = &p.bh {
            let m = bh.metrics();
            if m.available_concurrent_calls() != m.max_allowed_concurrent_calls()
                || m.number_of_waiting_calls() != 0
            {
                leaks.push(format!("bulkhead: {m:?}"));
            }
        }
        if let Some(rl) = &p.rl
            && rl.metrics().number_of_waiting_threads() != 0
        {
            leaks.push("rate limiter: waiting".into());
        }
        if let Some(tl) = &p.tl
            && tl.detached_futures() != 0
        {
            leaks.push("time limiter: detached".into());
        }
        if let Some(cb) = &p.cb {
            // A half-open breaker whose probe was dropped must let another in.
            if matches!(cb.state(), State::HalfOpen | State::Closed) {
                if cb.try_acquire_permission() {
                    cb.release_permission();
                } else {
                    leaks.push(format!("breaker {:?}: no permission", cb.state()));
                }
            }
        }
        let log = std::mem::take(&mut *ctx.log.lock().unwrap());
        Outcome {
            result: result.map(|r| format!("{r:?}")),
            elapsed,
            inner_calls: ctx.inner_calls.load(Ordering::SeqCst),
            fallback_calls: std::array::from_fn(|i| ctx.fallback_calls[i].load(Ordering::SeqCst)),
            metrics_at_end,
            metrics_after,
            log,
            leaks,
        }
    })
}

/// Runs both chains and compares everything, naming the scenario on a difference.
fn compare(sc: &Scenario) -> Result<(), TestCaseError> {
    let want = run(sc, Chain::Reference);
    let got = run(sc, Chain::Decorators);
    let show = |o: &Outcome| o.log.join("\n    ");
    prop_assert_eq!(
        &got.result,
        &want.result,
        "result differs (left: Decorators::call_async, right: the reference)\nscenario: {:#?}\nreference log:\n    {}\ndecorators log:\n    {}",
        sc,
        show(&want),
        show(&got)
    );
    prop_assert_eq!(
        got.inner_calls,
        want.inner_calls,
        "inner calls differ (left: Decorators::call_async, right: the reference)\nscenario: {:#?}",
        sc
    );
    prop_assert_eq!(
        got.fallback_calls,
        want.fallback_calls,
        "fallback calls (in LAYERS) differ (left: Decorators::call_async, right: the reference)\nscenario: {:#?}",
        sc
    );
    prop_assert_eq!(
        got.elapsed,
        want.elapsed,
        "virtual time differs (left: Decorators::call_async, right: the reference)\nscenario: {:#?}\nreference log:\n    {}\ndecorators log:\n    {}",
        sc,
        show(&want),
        show(&got)
    );
    prop_assert_eq!(
        &got.metrics_at_end,
        &want.metrics_at_end,
        "metrics at the end differ (left: Decorators::call_async, right: the reference)\nscenario: {:#?}",
        sc
    );
    prop_assert_eq!(
        &got.metrics_after,
        &want.metrics_after,
        "metrics after the timers differ (left: Decorators::call_async, right: the reference)\nscenario: {:#?}",
        sc
    );
    prop_assert_eq!(
        &got.log,
        &want.log,
        "event logs differ (left: Decorators::call_async, right: the reference)\nscenario: {:#?}\nreference log:\n    {}\ndecorators log:\n    {}",
        sc,
        show(&want),
        show(&got)
    );
    prop_assert!(
        want.leaks.is_empty(),
        "the reference leaked {:?}\nscenario: {:#?}",
        want.leaks,
        sc
    );
    prop_assert!(
        got.leaks.is_empty(),
        "Decorators::call_async leaked {:?}\nscenario: {:#?}\nlog:\n    {}",
        got.leaks,
        sc,
        show(&got)
    );
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn call_async_matches_the_reference_chain(sc in scenario()) {
        compare(&sc)?;
    }

    #[test]
    fn call_async_dropped_midway_matches_the_reference_chain(
        sc in scenario(),
        at in cancel_time(),
    ) {
        compare(&Scenario { cancel_at: Some(at), ..sc })?;
    }
}

/// A few scenarios worth keeping whatever the generator draws.
#[test]
fn chosen_scenarios_match_the_reference_chain() {
    let all_async = [FallbackSpec::Async(Answer::Rethrow); 5];
    let every_layer = Scenario {
        retry: Some((3, ms(10))),
        breaker: Some(BreakerSpec::Trips),
        limiter: Some(LimiterSpec::ExhaustedWaits),
        time_limiter: Some(ms(25)),
        bulkhead: Some(BulkheadSpec::FullWaitGetsIt),
        fallbacks: [FallbackSpec::None; 5],
        script: [Step::Hangs, Step::Err, Step::SlowOk],
        cancel_at: None,
    };
    let mut scenarios = vec![
        every_layer.clone(),
        Scenario {
            fallbacks: all_async,
            ..every_layer.clone()
        },
        Scenario {
            fallbacks: [
                FallbackSpec::Sync(Answer::Replace),
                FallbackSpec::Async(Answer::Replace),
                FallbackSpec::Sync(Answer::Rethrow),
                FallbackSpec::Async(Answer::Recover),
                FallbackSpec::Sync(Answer::Replace),
            ],
            bulkhead: Some(BulkheadSpec::FullNoWait),
            ..every_layer.clone()
        },
        Scenario {
            breaker: Some(BreakerSpec::HalfOpen),
            ..every_layer.clone()
        },
        Scenario {
            retry: None,
            breaker: None,
            limiter: None,
            time_limiter: None,
            bulkhead: None,
            fallbacks: [FallbackSpec::None; 5],
            script: [Step::SlowOk; 3],
            cancel_at: None,
        },
        // Ties: the bulkhead's permit, then the caller's future, come as the
        // time limiter runs out.
        Scenario {
            retry: Some((2, ms(0))),
            limiter: None,
            bulkhead: Some(BulkheadSpec::FullWaitTiesTimeout),
            script: [Step::Ok; 3],
            ..every_layer.clone()
        },
        Scenario {
            retry: Some((2, ms(0))),
            limiter: None,
            time_limiter: Some(ms(20)),
            bulkhead: None,
            script: [Step::SlowOk; 3],
            ..every_layer.clone()
        },
    ];
    // Each of them dropped at a few points too.
    let dropped: Vec<Scenario> = scenarios
        .iter()
        .flat_map(|sc| {
            [0, 5, 21, 33, 47, 80, 130].map(|n| Scenario {
                cancel_at: Some(ms(n) + Duration::from_micros(500)),
                ..sc.clone()
            })
        })
        .collect();
    scenarios.extend(dropped);
    for sc in &scenarios {
        if let Err(e) = compare(sc) {
            panic!("{e}");
        }
    }
}

/// `call_async` does nothing before it is polled: no permit taken, no event,
/// no call (the reference's `async fn`s are as lazy).
#[test]
fn an_unpolled_call_async_does_nothing() {
    let sc = Scenario {
        retry: Some((3, ms(10))),
        breaker: Some(BreakerSpec::HalfOpen),
        limiter: Some(LimiterSpec::ExhaustedWaits),
        time_limiter: Some(ms(25)),
        bulkhead: Some(BulkheadSpec::Free),
        fallbacks: [FallbackSpec::Async(Answer::Recover); 5],
        script: [Step::Ok; 3],
        cancel_at: None,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let ctx = Arc::new(Ctx::new());
        let p = build(&sc, &ctx);
        let before = (metrics(&p), ctx.log.lock().unwrap().clone());
        let (retry, cb, rl, tl, bh) = (
            p.retry.as_ref().unwrap(),
            p.cb.as_ref().unwrap(),
            p.rl.as_ref().unwrap(),
            p.tl.as_ref().unwrap(),
            p.bh.as_ref().unwrap(),
        );
        let mut d = Decorators::new()
            .with_retry(retry)
            .with_circuit_breaker(cb)
            .with_rate_limiter(rl)
            .with_bulkhead(bh)
            .with_time_limiter(tl);
        for layer in LAYERS {
            let ctx = &ctx;
            d = d.with_async_fallback(layer, move |e| {
                async_fallback(ctx, layer, Answer::Recover, e)
            });
        }
        let script = sc.script;
        drop(d.call_async(|| attempt(&ctx, script)));
        assert_eq!(metrics(&p), before.0);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(*ctx.log.lock().unwrap(), before.1, "nothing happened");
        assert_eq!(ctx.inner_calls.load(Ordering::SeqCst), 0);
        assert!(
            cb.try_acquire_permission(),
            "the half-open probe is still free"
        );
    });
}
