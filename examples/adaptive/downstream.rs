//! A downstream simulated on a virtual clock, and the callers that load it
//! through a bulkhead: what `cargo run --example adaptive` shows and what
//! the tests in `tests/adaptive_bulkhead.rs` hold the adaptive limits to.
//!
//! Nothing sleeps: the callers' arrivals and the downstream's answers are
//! events in time order, and the bulkhead's `ManualClock` jumps from one to
//! the next, so minutes of traffic take a fraction of a second and the same
//! seed gives the same run, event for event.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::time::Duration;

use resil::bulkhead::{Bulkhead, BulkheadPermit, Sample};
use resil::clock::ManualClock;

/// A downstream with room for `capacity` calls at once. Up to that many in
/// flight, a call takes `base`; past it, the calls contend for what
/// `capacity` of them had to themselves (locks, a pool, the CPU) and each
/// takes `base` times the fourth power of the overload: 1.2 × capacity in
/// flight, twice as long; twice the capacity, sixteen times.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Downstream {
    /// The calls it serves at once without slowing down: the number an
    /// adaptive limit should find.
    pub(crate) capacity: u32,
    /// How long a call takes within the capacity.
    pub(crate) base: Duration,
}

impl Downstream {
    /// How long a call takes that finds `in_flight` calls there, itself included.
    pub(crate) fn latency(&self, in_flight: u32) -> Duration {
        if in_flight <= self.capacity {
            return self.base;
        }
        let overload = f64::from(in_flight) / f64::from(self.capacity);
        self.base.mul_f64(overload.powi(4))
    }
}

/// A call in flight: its permit, given back when the downstream answers.
struct Call<'b> {
    end: Duration,
    seq: u64,
    permit: BulkheadPermit<'b>,
}

impl PartialEq for Call<'_> {
    fn eq(&self, other: &Self) -> bool {
        (self.end, self.seq) == (other.end, other.seq)
    }
}

impl Eq for Call<'_> {}

impl PartialOrd for Call<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Call<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.end, self.seq).cmp(&(other.end, other.seq))
    }
}

/// Callers that arrive at random (a Poisson process from a fixed seed) at
/// `rate` calls a second, each asking `bulkhead` for a permit at once (a
/// refused call is not retried) and calling the downstream with it.
pub(crate) struct Load<'b> {
    bulkhead: &'b Bulkhead,
    clock: ManualClock,
    now: Duration,
    next_arrival: Duration,
    rate: f64,
    rng: u64,
    seq: u64,
    in_flight: BinaryHeap<Reverse<Call<'b>>>,
    /// Calls that got a permit.
    pub(crate) admitted: u64,
    /// Calls the bulkhead refused.
    pub(crate) refused: u64,
}

impl<'b> Load<'b> {
    /// Callers of `bulkhead`, whose clock is `clock` (at zero).
    pub(crate) fn new(bulkhead: &'b Bulkhead, clock: ManualClock, rate: f64, seed: u64) -> Self {
        let mut load = Load {
            bulkhead,
            clock,
            now: Duration::ZERO,
            next_arrival: Duration::ZERO,
            rate,
            rng: seed | 1,
            seq: 0,
            in_flight: BinaryHeap::new(),
            admitted: 0,
            refused: 0,
        };
        load.next_arrival = load.gap();
        load
    }

    /// Runs the callers against `downstream` for `duration`, calling
    /// `observe(now, limit)` every `every` (the bulkhead's limit then).
    pub(crate) fn run(
        &mut self,
        downstream: &Downstream,
        duration: Duration,
        every: Duration,
        mut observe: impl FnMut(Duration, u32),
    ) {
        let end = self.now + duration;
        let mut next_observation = self.now + every;
        loop {
            let answer = self.in_flight.peek().map(|c| c.0.end);
            let next = [Some(self.next_arrival), answer, Some(next_observation)]
                .into_iter()
                .flatten()
                .min()
                .expect("an arrival is always due");
            if next > end {
                self.advance_to(end);
                return;
            }
            self.advance_to(next);
            if answer == Some(next) {
                let Reverse(call) = self.in_flight.pop().expect("the call that answers");
                call.permit.finish_with(Sample::Success);
            } else if next == next_observation {
                observe(next, self.bulkhead.metrics().max_allowed_concurrent_calls());
                next_observation += every;
            } else {
                self.arrive(downstream);
            }
        }
    }

    fn arrive(&mut self, downstream: &Downstream) {
        match self.bulkhead.try_acquire_permission() {
            Ok(permit) => {
                let in_flight = u32::try_from(self.in_flight.len()).unwrap_or(u32::MAX) + 1;
                self.seq += 1;
                self.in_flight.push(Reverse(Call {
                    end: self.now + downstream.latency(in_flight),
                    seq: self.seq,
                    permit,
                }));
                self.admitted += 1;
            }
            Err(_) => self.refused += 1,
        }
        self.next_arrival = self.now + self.gap();
    }

    fn advance_to(&mut self, at: Duration) {
        self.clock.advance(at - self.now);
        self.now = at;
    }

    /// The time to the next arrival: exponential, from xorshift64*.
    fn gap(&mut self) -> Duration {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let bits = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
        // uniform in (0, 1]
        let uniform = (bits as f64 + 1.0) / (1u64 << 53) as f64;
        Duration::from_secs_f64(-uniform.ln() / self.rate)
    }
}
