//! The hedge's layer of a chain: the primary attempt in place, hedged
//! attempts boxed beside it, and the delay's timer, in one state machine.

use std::fmt;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use super::{Hedge, Inner};
use crate::chain::{Ctx, HasAttempt, Layered, Node};
use crate::clock::{Clock, Nanos, Sleep};
use crate::error::Error;

/// The hedge's part in a chain: the hedge, by reference or through its
/// `Arc`.
///
/// Made by [`Hedge::part`] and [`Hedge::shared_part`].
#[derive(Clone)]
pub struct HedgePart<R> {
    inner: R,
}

impl Hedge {
    /// This hedge's part in a [`Stack`](crate::chain::Stack).
    #[inline(always)]
    pub fn part(&self) -> HedgePart<&Inner> {
        HedgePart { inner: &self.inner }
    }

    /// Like [`Hedge::part`], holding a clone of the hedge's `Arc` (for a
    /// chain that must not borrow it).
    #[inline(always)]
    pub fn shared_part(&self) -> HedgePart<Arc<Inner>> {
        HedgePart {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<R: Deref<Target = Inner>> fmt::Debug for HedgePart<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgePart")
            .field("hedge", &self.inner.name)
            .finish()
    }
}

/// The hedge's layer around `N`. Async only: it implements no
/// [`SyncNode`](crate::chain::SyncNode), since a blocking call has nothing
/// to run beside it.
pub type HedgeNode<R, N> = Layered<HedgePart<R>, N>;

crate::chain::layer_part!("HedgeNode", impl<R> for HedgePart<R>);

pin_project_lite::pin_project! {
    /// A call through the hedge's layer: the primary attempt in place, and
    /// once it has not answered at its first poll (or failed), the race of
    /// the hedged attempts beside it and the timer of the next. A primary
    /// that answers at once builds no race. `primary_started` is when the
    /// primary started, when latencies are measured.
    pub struct HedgeAttempt<A> {
        #[pin]
        primary: Primary<A>,
        // Boxed: built only for a primary that did not answer at once,
        // which waits on a timer already; a call that answers at once
        // moves one word for it.
        race: Option<Box<Race<A>>>,
        primary_started: Option<Nanos>,
    }
}

pin_project_lite::pin_project! {
    #[project = PrimaryProj]
    enum Primary<A> {
        Running {
            #[pin]
            inner: A,
        },
        Ended,
    }
}

/// A hedged attempt: boxed, since it lives beside the primary.
struct Hedged<A> {
    index: u32,
    started: Option<Nanos>,
    attempt: Pin<Box<A>>,
}

/// The hedge's bookkeeping of one call whose primary did not answer at
/// once.
struct Race<A> {
    /// Attempts the call may make, the primary included.
    allowed: u32,
    /// Attempts started.
    started: u32,
    /// Whether latencies are measured (a percentile delay).
    measure: bool,
    /// The timer of the next hedged attempt and its delay.
    timer: Option<(Sleep, Duration)>,
    /// The hedged attempts still running (allocated at the first).
    hedges: Vec<Hedged<A>>,
}

impl<A> Race<A> {
    /// The race of a call whose primary is running or just failed.
    #[cold]
    fn new(inner: &Inner) -> Self {
        let config = inner.config.load();
        Race {
            allowed: 1 + config.max_hedged_attempts,
            started: 1,
            measure: config.delay_percentile.is_some(),
            timer: None,
            hedges: Vec::new(),
        }
    }

    /// Starts the next attempt through `next` (after `delay`, or at once
    /// after a failure), when one is left and the hedge's budget pays for
    /// it; the delay of the one after restarts from now. `false` when no
    /// attempt started: the call has made all the attempts it will.
    #[cold]
    #[inline(never)]
    fn launch<N>(
        &mut self,
        inner: &Inner,
        next: &mut N,
        ctx: &mut Ctx,
        delay: Option<Duration>,
    ) -> bool
    where
        N: Node + HasAttempt<Attempt = A>,
    {
        if self.started == self.allowed {
            return false;
        }
        let index = self.started;
        self.timer = None;
        if let Some(budget) = &inner.config.load().budget
            && !budget.try_withdraw()
        {
            // No more attempts for this call: the budget said no.
            self.allowed = self.started;
            inner.budget_exhausted(index);
            return false;
        }
        self.started += 1;
        inner.hedged(index, delay);
        ctx.user_code_ran();
        let started = self.measure.then(|| ctx.stamp.now(&inner.clock));
        if self.hedges.capacity() == 0 {
            self.hedges.reserve_exact((self.allowed - 1) as usize);
        }
        let attempt = Box::pin(next.start(ctx));
        self.hedges.push(Hedged {
            index,
            started,
            attempt,
        });
        true
    }
}

/// How a race ended: the winner's index and start, or the last failure.
enum Finish<T, E> {
    Won(u32, Option<Nanos>, T),
    Lost(Error<E>),
}

impl<R, N: HasAttempt> HasAttempt for HedgeNode<R, N> {
    type Attempt = HedgeAttempt<N::Attempt>;
}

impl<R, N, T, E> Node for HedgeNode<R, N>
where
    R: Deref<Target = Inner>,
    N: Node<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn start(&mut self, ctx: &mut Ctx) -> Self::Attempt {
        let primary_started = match &self.part {
            None => None,
            Some(part) => {
                let config = part.inner.config.load();
                if let Some(budget) = &config.budget {
                    budget.deposit();
                }
                if config.delay_percentile.is_some() {
                    Some(ctx.stamp.now(&part.inner.clock))
                } else {
                    None
                }
            }
        };
        HedgeAttempt {
            primary: Primary::Running {
                inner: self.next.start(ctx),
            },
            race: None,
            primary_started,
        }
    }

    #[inline(always)]
    fn poll(
        &mut self,
        attempt: Pin<&mut Self::Attempt>,
        cx: &mut Context<'_>,
        ctx: &mut Ctx,
    ) -> Poll<Self::Output> {
        let this = attempt.project();
        let mut primary = this.primary;
        let Some(part) = self.part.as_ref() else {
            return match primary.project() {
                PrimaryProj::Running { inner } => self.next.poll(inner, cx, ctx),
                PrimaryProj::Ended => panic!("a hedge's attempt polled after completion"),
            };
        };
        let inner: &Inner = &part.inner;
        let slot = this.race;
        // The first poll: a primary that answers at once builds no race.
        let mut primary_polled = false;
        if slot.is_none() {
            let PrimaryProj::Running { inner: attempt } = primary.as_mut().project() else {
                panic!("a hedge's attempt polled after completion")
            };
            primary_polled = true;
            if let Poll::Ready(out) = self.next.poll(attempt, cx, ctx) {
                match out {
                    // Won at once: the finished attempt stays where it is,
                    // for the chain's future to drop.
                    Ok(value) => {
                        if let Some(started) = *this.primary_started {
                            let now = ctx.stamp.now(&inner.clock);
                            inner.record_latency(now, now.saturating_duration_since(started));
                        }
                        inner.primary_won();
                        return Poll::Ready(Ok(value));
                    }
                    Err(e) => {
                        // The attempt is dropped before anything else starts.
                        primary.set(Primary::Ended);
                        let race = slot.insert(Box::new(Race::new(inner)));
                        if !race.launch(inner, &mut self.next, ctx, None) {
                            *slot = None;
                            inner.all_failed(1, e.rejection_kind());
                            return Poll::Ready(Err(e));
                        }
                    }
                }
            } else {
                *slot = Some(Box::new(Race::new(inner)));
            }
        }
        let finish = 'race: loop {
            if !std::mem::take(&mut primary_polled)
                && let PrimaryProj::Running { inner: attempt } = primary.as_mut().project()
                && let Poll::Ready(out) = self.next.poll(attempt, cx, ctx)
            {
                // The attempt is dropped before anything else starts.
                primary.set(Primary::Ended);
                match out {
                    Ok(value) => break Finish::Won(0, *this.primary_started, value),
                    Err(e) => {
                        let race = slot.as_mut().expect("a racing call has its race");
                        if !race.launch(inner, &mut self.next, ctx, None) && race.hedges.is_empty()
                        {
                            break Finish::Lost(e);
                        }
                    }
                }
            }
            let race = slot.as_mut().expect("a racing call has its race");
            let mut i = 0;
            while i < race.hedges.len() {
                let Poll::Ready(out) = self.next.poll(race.hedges[i].attempt.as_mut(), cx, ctx)
                else {
                    i += 1;
                    continue;
                };
                let Hedged { index, started, .. } = race.hedges.swap_remove(i);
                let primary_running = matches!(*primary, Primary::Running { .. });
                match out {
                    Ok(value) => break 'race Finish::Won(index, started, value),
                    Err(e) => {
                        if !race.launch(inner, &mut self.next, ctx, None)
                            && race.hedges.is_empty()
                            && !primary_running
                        {
                            break 'race Finish::Lost(e);
                        }
                    }
                }
            }
            if race.started == race.allowed {
                return Poll::Pending;
            }
            let (sleep, delay) = race.timer.get_or_insert_with(|| {
                let delay = inner.delay(|| ctx.stamp.now(&inner.clock));
                (inner.clock.sleep_async(delay), delay)
            });
            if Pin::new(sleep).poll(cx).is_pending() {
                return Poll::Pending;
            }
            let delay = *delay;
            // Denied by the budget, the call goes on with what is running.
            race.launch(inner, &mut self.next, ctx, Some(delay));
        };
        // The losers are dropped (cancelled) before the outcome is counted.
        let attempts = slot.take().map_or(1, |race| race.started);
        if let Primary::Running { .. } = *primary {
            primary.set(Primary::Ended);
        }
        Poll::Ready(match finish {
            Finish::Won(winner, started, value) => {
                if let Some(started) = started {
                    let now = ctx.stamp.now(&inner.clock);
                    inner.record_latency(now, now.saturating_duration_since(started));
                }
                if attempts == 1 {
                    inner.primary_won();
                } else {
                    inner.won(winner, attempts);
                }
                Ok(value)
            }
            Finish::Lost(e) => {
                inner.all_failed(attempts, e.rejection_kind());
                Err(e)
            }
        })
    }
}

impl<A> fmt::Debug for HedgeAttempt<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("HedgeAttempt");
        d.field(
            "primary_running",
            &matches!(self.primary, Primary::Running { .. }),
        );
        if let Some(race) = &self.race {
            d.field("started", &race.started)
                .field("hedges_running", &race.hedges.len());
        }
        d.finish_non_exhaustive()
    }
}
