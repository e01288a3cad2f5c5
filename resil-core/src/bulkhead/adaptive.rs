//! The limiter of an adaptive bulkhead: the samples of finished calls
//! folded into windows, the algorithm that turns each window into a limit,
//! and the move of the semaphore to that limit.
//!
//! Everything here runs under the limiter's lock, held for a few
//! instructions per call (the window's sums) and for the algorithm's
//! arithmetic once per window. The same lock serializes every change of
//! the limit, the algorithm's and `change_config`'s, so the semaphore's
//! permits follow the limit: a smaller limit takes free permits at once,
//! under the lock, and retires the permits of calls in flight as they come
//! back (the semaphore's count goes negative meanwhile); a larger one adds
//! permits just after the lock is released, because adding wakes waiters
//! and a waker may run a call that finishes here. Deferring only increases
//! never admits more calls than the limit: the permits not yet added are
//! all additions. No permit in use is lost either way.

use super::algorithm::{Algorithm, Window, WindowSettings};
use super::config::MAX_CONCURRENT_CALLS;
use super::core::{Inner, started_at};
use super::limit::{LimitSettings, Sample};
use super::{BulkheadConfig, BulkheadEvent};
use crate::classify;
use crate::clock::{Clock, Nanos};
use crate::sync::{Ordering, short_lock};

/// An adaptive limit's state (a fixed one keeps its settings only).
#[derive(Debug)]
pub(crate) struct Limiter {
    settings: LimitSettings,
    algorithm: Algorithm,
    window: Window,
    windows: WindowSettings,
    /// The ceiling, `max_concurrent_calls`.
    max: u32,
    /// The limit the semaphore holds now.
    limit: u32,
    /// Seeds Vegas's probe jitter, so that a bulkhead replays exactly.
    seed: u64,
}

/// Where a bulkhead of `config` starts.
fn initial_limit(config: &BulkheadConfig) -> u32 {
    let max = config.max_concurrent_calls.min(MAX_CONCURRENT_CALLS);
    if config.limit.algorithm.is_adaptive() {
        config
            .initial_concurrent_calls()
            .min(max)
            .max(config.limit.min)
    } else {
        max
    }
}

impl Limiter {
    pub(super) fn new(config: &BulkheadConfig, name: &str) -> Self {
        let limit = initial_limit(config);
        let seed = seed_of(name);
        Limiter {
            algorithm: Algorithm::new(&config.limit, limit, seed),
            settings: config.limit.clone(),
            window: Window::new(),
            windows: WindowSettings::of(&config.limit),
            max: config.max_concurrent_calls.min(MAX_CONCURRENT_CALLS),
            limit,
            seed,
        }
    }

    /// The limit the semaphore holds.
    pub(super) fn limit(&self) -> u32 {
        self.limit
    }

    /// Folds one finished call into the window: the new limit when the
    /// call closes a window and the algorithm moves the limit.
    #[inline]
    fn sample(&mut self, end: u64, rtt: u64, inflight: u32, sample: Sample) -> Option<u32> {
        if !self.settings.algorithm.is_adaptive() {
            return None;
        }
        let dropped = match sample {
            Sample::Success => false,
            Sample::Dropped => true,
            Sample::Error { kind } if classify::listed(&self.settings.drop_errors, kind) => true,
            Sample::Error { .. } | Sample::Ignored => return None,
        };
        let window = self
            .window
            .add(end, rtt, inflight, dropped, &self.windows)?;
        let next = self
            .algorithm
            .update(self.limit, window, self.settings.min, self.max);
        (next != self.limit).then_some(next)
    }

    /// Takes `config`'s settings and returns the limit to hold: a fixed
    /// bulkhead's `max_concurrent_calls`; when adaptation is switched on,
    /// `initial_concurrent_calls`; when it stays on, the limit reached so
    /// far, within the new bounds, the same algorithm with the same
    /// parameters keeping what it learned and any other starting from there.
    fn reconfigure(&mut self, config: &BulkheadConfig) -> u32 {
        let new = &config.limit;
        let max = config.max_concurrent_calls.min(MAX_CONCURRENT_CALLS);
        let limit = if !new.algorithm.is_adaptive() {
            self.algorithm = Algorithm::Fixed;
            max
        } else if !self.settings.algorithm.is_adaptive() {
            let limit = initial_limit(config);
            self.algorithm = Algorithm::new(new, limit, self.seed);
            limit
        } else {
            let limit = self.limit.min(max).max(new.min);
            if self.settings.same_algorithm(new) {
                if limit != self.limit {
                    self.algorithm.rebase(limit);
                }
            } else {
                self.algorithm = Algorithm::new(new, limit, self.seed);
            }
            limit
        };
        self.settings = new.clone();
        self.windows = WindowSettings::of(new);
        self.max = max;
        limit
    }
}

#[cfg(all(test, resil_loom))]
impl Limiter {
    /// Closes a window at every call that ends later than the last one
    /// (a loom model's few calls then move the limit): settings that
    /// `build()` refuses, set only by tests.
    pub(super) fn sample_every_call(&mut self) {
        self.settings.window_size = 1;
        self.settings.min_rtt_threshold = std::time::Duration::ZERO;
        self.settings.min_window_time = std::time::Duration::ZERO;
        self.settings.max_window_time = std::time::Duration::ZERO;
        self.windows = WindowSettings::of(&self.settings);
    }
}

/// FNV-1a of the name: a fixed seed per instance.
fn seed_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Inner {
    /// Gives back the permit of a call timed from `start` (as the permit
    /// keeps it) that ended at `end` (now when `None`), publishing
    /// `CallFinished` first when `publish` asks for it, and folds the call
    /// into the adaptive limit with `sample`.
    #[inline(never)]
    pub(super) fn finish_timed(
        &self,
        start: u64,
        end: Option<Nanos>,
        sample: Sample,
        publish: bool,
    ) {
        let end = end.unwrap_or_else(|| self.clock.now());
        if publish && self.events.is_active() {
            self.events.publish_at(end, BulkheadEvent::CallFinished);
        }
        let available = self.sem.release_counted();
        // The calls in flight as this one ended, itself included.
        let limit = i64::from(self.max_calls.load(Ordering::Relaxed));
        let inflight = u32::try_from((limit - available).max(1)).unwrap_or(u32::MAX);
        let end = end.as_u64();
        let changed = {
            let mut limiter = short_lock(&self.limiter);
            limiter
                .sample(end, end.saturating_sub(started_at(start)), inflight, sample)
                .map(|next| self.move_limit(&mut limiter, next))
        };
        if let Some((from, to)) = changed {
            self.limit_moved(from, to);
        }
    }

    /// Applies `config` to the limit (see [`Limiter::reconfigure`]);
    /// returns the limit before and after, for [`Inner::limit_moved`].
    pub(super) fn reconfigure(&self, config: &BulkheadConfig) -> (u32, u32) {
        let mut limiter = short_lock(&self.limiter);
        let next = limiter.reconfigure(config);
        self.adaptive
            .store(config.limit.algorithm.is_adaptive(), Ordering::Relaxed);
        self.move_limit(&mut limiter, next)
    }

    /// Under the limiter's lock: moves the published limit to `next` and
    /// takes a smaller limit's permits; returns the limit before and after.
    fn move_limit(&self, limiter: &mut Limiter, next: u32) -> (u32, u32) {
        let prev = limiter.limit;
        if next < prev {
            self.sem.forget_permits(prev - next);
        }
        self.max_calls.store(next, Ordering::Relaxed);
        limiter.limit = next;
        (prev, next)
    }

    /// Once the limiter's lock is released: adds a larger limit's permits
    /// (waking waiters) and publishes `LimitChanged` (a consumer may read
    /// the bulkhead).
    pub(super) fn limit_moved(&self, from: u32, to: u32) {
        if to > from {
            self.sem.add_permits(to - from);
        }
        if from != to && self.events.is_active() {
            self.publish(BulkheadEvent::LimitChanged { from, to });
        }
    }
}

#[cfg(all(test, not(resil_loom)))]
mod tests {
    use std::future::Future;
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::pin::pin;
    use std::task::{Context, Waker};
    use std::time::Duration;

    use super::*;
    use crate::bulkhead::{Bulkhead, LimitAlgorithm};
    use crate::clock::ManualClock;

    /// The calls in the open window.
    fn samples(b: &Bulkhead) -> u32 {
        short_lock(&b.inner.limiter).window.count()
    }

    /// An AIMD bulkhead of 10 on `clock`, its empty first window closed
    /// (the next one lasts a second).
    fn aimd_in_second_window(clock: &ManualClock) -> Bulkhead {
        let config = BulkheadConfig::builder()
            .limit_algorithm(LimitAlgorithm::Aimd)
            .max_concurrent_calls(10)
            .build()
            .unwrap();
        let b = Bulkhead::with_clock("b", config, clock.clone());
        b.call(|| {
            clock.advance(Duration::from_millis(1));
            Ok::<_, ()>(())
        })
        .unwrap();
        assert_eq!(samples(&b), 0);
        b
    }

    /// Every way a call ends gives one sample, or none when it was not
    /// made or its caller cancelled it, never two: the permit is given
    /// back once.
    #[test]
    fn each_call_is_one_sample_however_it_ends() {
        let clock = ManualClock::new();
        let b = aimd_in_second_window(&clock);
        let ms = Duration::from_millis;
        let cx = &mut Context::from_waker(Waker::noop());

        let p = b.try_acquire_permission().unwrap();
        clock.advance(ms(1));
        p.finish_with(Sample::Success);
        assert_eq!(samples(&b), 1, "finished");

        let p = b.try_acquire_permission().unwrap();
        clock.advance(ms(1));
        drop(p);
        assert_eq!(samples(&b), 2, "dropped");

        b.try_acquire_permission().unwrap().release();
        assert_eq!(samples(&b), 2, "released unused");

        let r = catch_unwind(AssertUnwindSafe(|| {
            b.call(|| -> Result<(), ()> {
                clock.advance(ms(1));
                panic!("in the call")
            })
        }));
        assert!(r.is_err());
        assert_eq!(samples(&b), 3, "a panic in `call`");

        {
            let mut call = pin!(b.call_async(std::future::pending::<Result<(), ()>>));
            assert!(call.as_mut().poll(cx).is_pending());
            clock.advance(ms(1));
        }
        assert_eq!(samples(&b), 3, "a future its caller dropped mid-way");

        {
            let mut call = pin!(b.call_async(|| async {
                if true {
                    panic!("in the future");
                }
                Ok::<_, ()>(())
            }));
            clock.advance(ms(1));
            let r = catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(cx)));
            assert!(r.is_err());
            assert_eq!(
                samples(&b),
                4,
                "a panic while polling gives the permit back"
            );
        }
        assert_eq!(
            samples(&b),
            4,
            "and dropping the future after gives nothing more"
        );
        assert_eq!(b.metrics().available_concurrent_calls(), 10);
    }

    /// A hedge's losing attempt is cancelled when the other wins: the
    /// winner is a sample, the loser none (its time ran only until the
    /// winner's answer).
    #[test]
    fn a_hedges_loser_is_no_sample() {
        use crate::chain::{Lift, Stack};
        use crate::hedge::{Hedge, HedgeConfig};
        let clock = ManualClock::new();
        let b = aimd_in_second_window(&clock);
        let hedge = Hedge::with_clock(
            "h",
            HedgeConfig::builder()
                .delay(Duration::from_millis(5))
                .build()
                .unwrap(),
            clock.clone(),
        );
        // the primary never answers; the hedged attempt, started once the
        // delay is over (a manual clock's sleep is over at once), answers
        // after 2 ms
        let mut attempts = 0;
        let call = Stack::new()
            .hedge(hedge.part())
            .bulkhead(b.part())
            .call_async(Lift(|| {
                attempts += 1;
                let (primary, clock) = (attempts == 1, clock.clone());
                async move {
                    if primary {
                        std::future::pending::<()>().await;
                    }
                    clock.advance(Duration::from_millis(2));
                    Ok::<_, ()>(7)
                }
            }));
        let cx = &mut Context::from_waker(Waker::noop());
        assert_eq!(pin!(call).poll(cx), std::task::Poll::Ready(Ok(7)));
        assert_eq!(attempts, 2);
        assert_eq!(samples(&b), 1, "the winner's, not the loser's");
        assert_eq!(b.metrics().available_concurrent_calls(), 10);
    }

    /// A waker that runs a call of the same bulkhead when woken, as an
    /// executor that polls inline would.
    struct InlineCall(Bulkhead, std::sync::atomic::AtomicU32);

    impl std::task::Wake for InlineCall {
        fn wake(self: std::sync::Arc<Self>) {
            if let Ok(permit) = self.0.try_acquire_permission() {
                permit.finish_with(Sample::Success);
                self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
    }

    /// A larger limit's permits are added, and its waiters woken, once the
    /// limiter's lock is released: a waker that finishes a timed call
    /// inline takes that lock again.
    #[test]
    fn a_waker_that_finishes_a_call_inline_does_not_deadlock() {
        let fixed = |max| {
            BulkheadConfig::builder()
                .max_concurrent_calls(max)
                .fair_call_handling_enabled(false)
                .build()
                .unwrap()
        };
        let b = Bulkhead::with_clock("b", fixed(1), ManualClock::new());
        let held = b.try_acquire_permission().unwrap();
        let woken = std::sync::Arc::new(InlineCall(b.clone(), Default::default()));
        let waker = Waker::from(woken.clone());
        let mut waiter = b.inner.sem.acquire();
        let cx = &mut Context::from_waker(&waker);
        assert!(std::pin::Pin::new(&mut waiter).poll(cx).is_pending());
        let adaptive = fixed(2)
            .to_builder()
            .limit_algorithm(LimitAlgorithm::Aimd)
            .build()
            .unwrap();
        let (done, finished) = std::sync::mpsc::channel();
        let b2 = b.clone();
        std::thread::spawn(move || {
            b2.change_config(adaptive);
            let _ = done.send(());
        });
        finished
            .recv_timeout(Duration::from_secs(60))
            .expect("the change finished: no deadlock");
        assert_eq!(woken.1.load(std::sync::atomic::Ordering::SeqCst), 1);
        drop(waiter);
        drop(held);
        assert_eq!(b.metrics().available_concurrent_calls(), 2);
    }
}
