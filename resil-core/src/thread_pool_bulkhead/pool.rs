//! The pool's bookkeeping: Java's `ThreadPoolExecutor` admission and worker
//! life cycle as a plain state machine behind one lock, kept apart from the
//! threads so that its rules and invariants are tested without them.
//!
//! Every worker is, whenever the lock is free, in exactly one of three states:
//! running a task (`active`), registered as waiting for one (`waiting`), or
//! gone (not counted in `workers`). So `active + waiting == workers`, always.
//!
//! A task goes to the queue when the queue has room *or* a waiting worker will
//! take it: `queue.len() < capacity + waiting`. A task owed to a waiting
//! worker is a hand-off, not queue depth, which is what makes capacity 0 a
//! hand-off (Java's `SynchronousQueue`) and makes admission independent of how
//! fast woken workers reach the lock: whatever the timing, with every worker
//! busy exactly `max + capacity` tasks are admitted.

use std::collections::VecDeque;

/// What `admit` decided.
#[derive(Debug)]
pub(super) enum Admission<J> {
    /// Start worker number `number` with `job` as its first task (its slot is
    /// already counted; call [`Pool::spawn_failed`] if the thread cannot start).
    Spawn { number: u64, job: J },
    /// The job is queued or owed to a waiting worker: wake one.
    Queued,
    /// Refused: the job comes back.
    Rejected(J),
}

/// What a worker does next.
#[derive(Debug)]
pub(super) enum Step<J> {
    /// Run this job.
    Run(J),
    /// Wait for a job; when `arm` is set, schedule the keep-alive timer for
    /// that ticket (the worker is above the core size).
    Wait { arm: Option<u64> },
    /// Exit the thread (it is no longer counted as a worker).
    Exit,
}

/// A worker's own registration, kept by the worker and passed in under the lock.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Idle {
    waiting: bool,
    /// The keep-alive ticket of the current idle period, 0 when untimed.
    ticket: u64,
}

/// The state behind the pool's lock.
#[derive(Debug)]
pub(super) struct Pool<J> {
    core: usize,
    max: usize,
    capacity: usize,
    queue: VecDeque<J>,
    /// Workers started and neither retired nor exited.
    workers: usize,
    /// Workers registered as waiting for a job.
    waiting: usize,
    /// Workers running a job.
    active: usize,
    /// Threads that have not finished yet (retired or exiting ones included).
    alive: usize,
    next_thread: u64,
    next_ticket: u64,
    /// Tickets of waiting workers whose keep-alive timer is pending.
    armed: Vec<u64>,
    /// Tickets of waiting workers told to exit by their timer.
    retired: Vec<u64>,
    shutdown: bool,
}

impl<J> Pool<J> {
    pub(super) fn new(core: usize, max: usize, capacity: usize) -> Self {
        Pool {
            core,
            max,
            capacity,
            queue: VecDeque::new(),
            workers: 0,
            waiting: 0,
            active: 0,
            alive: 0,
            next_thread: 1,
            next_ticket: 1,
            armed: Vec::new(),
            retired: Vec::new(),
            shutdown: false,
        }
    }

    /// `ThreadPoolExecutor.execute`: a new core thread while fewer than `core`
    /// run; else the queue (or a waiting worker); else a new thread up to
    /// `max`; else refuse.
    pub(super) fn admit(&mut self, job: J) -> Admission<J> {
        if self.shutdown {
            return Admission::Rejected(job);
        }
        if self.workers < self.core {
            return self.reserve(job);
        }
        if self.queue.len() < self.capacity + self.waiting {
            self.queue.push_back(job);
            return Admission::Queued;
        }
        if self.workers < self.max {
            return self.reserve(job);
        }
        Admission::Rejected(job)
    }

    /// Shadow mode's admission of a job `admit` refused: queued beyond the
    /// capacity (no thread beyond the maximum is started). Refused only
    /// after a shutdown.
    pub(super) fn admit_over(&mut self, job: J) -> Admission<J> {
        if self.shutdown {
            return Admission::Rejected(job);
        }
        self.queue.push_back(job);
        Admission::Queued
    }

    /// New sizes, as Java's `setCorePoolSize`, `setMaximumPoolSize` and a new
    /// queue capacity: queued jobs are all kept (a smaller capacity refuses
    /// new ones until the queue is below it); a larger core starts threads
    /// for the queued jobs no waiting worker will take, returned as
    /// [`Admission::Spawn`]s to start; workers above a smaller maximum exit
    /// when next idle, and idle ones above a smaller core start their
    /// keep-alive (wake every waiting worker after this).
    pub(super) fn resize(&mut self, core: usize, max: usize, capacity: usize) -> Vec<Admission<J>> {
        self.core = core;
        self.max = max;
        self.capacity = capacity;
        let mut spawn = Vec::new();
        while !self.shutdown && self.workers < self.core && self.queue.len() > self.waiting {
            let Some(job) = self.queue.pop_front() else {
                break;
            };
            spawn.push(self.reserve(job));
        }
        spawn
    }

    fn reserve(&mut self, job: J) -> Admission<J> {
        self.workers += 1;
        self.active += 1;
        self.alive += 1;
        let number = self.next_thread;
        self.next_thread += 1;
        Admission::Spawn { number, job }
    }

    /// The thread of a reserved worker could not start: free its slot.
    /// Returns `true` when no thread is left.
    pub(super) fn spawn_failed(&mut self) -> bool {
        self.workers -= 1;
        self.active -= 1;
        self.alive -= 1;
        self.alive == 0
    }

    /// A worker finished its job; follow with [`Pool::next_step`] under the same lock.
    pub(super) fn finish_job(&mut self) {
        self.active -= 1;
    }

    /// The next step of a worker that is not running a job.
    pub(super) fn next_step(&mut self, me: &mut Idle) -> Step<J> {
        if me.waiting
            && me.ticket != 0
            && let Some(i) = self.retired.iter().position(|&t| t == me.ticket)
        {
            // Its timer already took it out of `workers` and `waiting`.
            self.retired.swap_remove(i);
            *me = Idle::default();
            return Step::Exit;
        }
        // Above a lowered maximum, a worker exits when idle (Java's
        // `getTask`), unless it is the last one and jobs are queued.
        if self.workers > self.max && (self.workers > 1 || self.queue.is_empty()) {
            self.stop_waiting(me);
            self.workers -= 1;
            return Step::Exit;
        }
        if let Some(job) = self.queue.pop_front() {
            self.stop_waiting(me);
            self.active += 1;
            return Step::Run(job);
        }
        if self.shutdown {
            self.stop_waiting(me);
            self.workers -= 1;
            return Step::Exit;
        }
        if me.waiting {
            // untimed, and above a core lowered since it began to wait
            if me.ticket != 0 || self.workers <= self.core {
                return Step::Wait { arm: None };
            }
        } else {
            me.waiting = true;
            self.waiting += 1;
        }
        // Java decides per poll whether a worker may time out: when more
        // than `core` threads run (core threads never time out).
        if self.workers > self.core {
            let ticket = self.next_ticket;
            self.next_ticket += 1;
            self.armed.push(ticket);
            me.ticket = ticket;
            return Step::Wait { arm: Some(ticket) };
        }
        Step::Wait { arm: None }
    }

    fn stop_waiting(&mut self, me: &mut Idle) {
        if me.waiting {
            self.waiting -= 1;
            if me.ticket != 0
                && let Some(i) = self.armed.iter().position(|&t| t == me.ticket)
            {
                self.armed.swap_remove(i);
            }
        }
        *me = Idle::default();
    }

    /// The keep-alive timer of `ticket` fired: retire that worker if it is
    /// still idle since then, the pool is above its core size, and the jobs
    /// in the queue are still covered by the other waiting workers. Returns
    /// `true` when a worker was retired (wake the workers so it can exit).
    pub(super) fn retire(&mut self, ticket: u64) -> bool {
        if self.shutdown || self.workers <= self.core || self.queue.len() >= self.waiting {
            return false;
        }
        let Some(i) = self.armed.iter().position(|&t| t == ticket) else {
            return false;
        };
        self.armed.swap_remove(i);
        self.retired.push(ticket);
        self.workers -= 1;
        self.waiting -= 1;
        true
    }

    /// A worker thread ends, however it ends (a panic outside its task
    /// included): whatever slot it still holds (`running`: counted active;
    /// or registered as waiting) is given back, so no worker that is gone
    /// stays counted. When no worker is left, the queued jobs are returned:
    /// nobody would run them (drop them outside the lock).
    pub(super) fn worker_gone(&mut self, me: &mut Idle, running: bool) -> VecDeque<J> {
        if running {
            self.active -= 1;
            self.workers -= 1;
        } else if me.waiting {
            if me.ticket != 0
                && let Some(i) = self.retired.iter().position(|&t| t == me.ticket)
            {
                // Its timer already counted it out.
                self.retired.swap_remove(i);
                *me = Idle::default();
            } else {
                self.stop_waiting(me);
                self.workers -= 1;
            }
        }
        if self.workers == 0 {
            std::mem::take(&mut self.queue)
        } else {
            VecDeque::new()
        }
    }

    /// A worker thread is about to end. Returns `true` when it was the last.
    pub(super) fn exited(&mut self) -> bool {
        self.alive -= 1;
        self.alive == 0
    }

    /// Stops admitting. Returns `true` the first time.
    pub(super) fn shut_down(&mut self) -> bool {
        !std::mem::replace(&mut self.shutdown, true)
    }

    /// Takes every job not started yet (after a shutdown that timed out).
    pub(super) fn drain(&mut self) -> VecDeque<J> {
        std::mem::take(&mut self.queue)
    }

    pub(super) fn is_shutdown(&self) -> bool {
        self.shutdown
    }
    pub(super) fn alive(&self) -> usize {
        self.alive
    }
    pub(super) fn workers(&self) -> usize {
        self.workers
    }
    pub(super) fn active(&self) -> usize {
        self.active
    }
    /// Queued jobs not owed to a waiting worker.
    /// The job that has waited longest, if any is queued.
    pub(super) fn oldest(&self) -> Option<&J> {
        self.queue.front()
    }

    pub(super) fn queue_depth(&self) -> usize {
        self.queue.len().saturating_sub(self.waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spawned<J: std::fmt::Debug>(a: Admission<J>) -> (u64, J) {
        match a {
            Admission::Spawn { number, job } => (number, job),
            other => panic!("expected a spawn, got {other:?}"),
        }
    }

    #[test]
    fn core_then_queue_then_max_then_reject() {
        let mut p = Pool::new(2, 4, 3);
        assert_eq!(spawned(p.admit(1)), (1, 1));
        assert_eq!(spawned(p.admit(2)), (2, 2));
        for j in 3..=5 {
            assert!(matches!(p.admit(j), Admission::Queued));
        }
        assert_eq!(spawned(p.admit(6)), (3, 6));
        assert_eq!(spawned(p.admit(7)), (4, 7));
        assert!(matches!(p.admit(8), Admission::Rejected(8)));
        assert_eq!((p.workers(), p.active(), p.queue_depth()), (4, 4, 3));
    }

    #[test]
    fn zero_capacity_hands_off_only_to_waiting_workers() {
        let mut p = Pool::new(1, 1, 0);
        let (_, _) = spawned(p.admit(1));
        assert!(matches!(p.admit(2), Admission::Rejected(2)));
        let mut me = Idle::default();
        p.finish_job();
        assert!(matches!(p.next_step(&mut me), Step::Wait { arm: None }));
        assert!(matches!(p.admit(3), Admission::Queued));
        assert_eq!(p.queue_depth(), 0, "a hand-off is not queue depth");
        assert!(matches!(p.admit(4), Admission::Rejected(4)));
        assert!(matches!(p.next_step(&mut me), Step::Run(3)));
    }

    #[test]
    fn a_worker_above_core_is_retired_by_its_timer_once_idle() {
        let mut p = Pool::new(1, 2, 0);
        spawned(p.admit(1));
        spawned(p.admit(2));
        let (mut a, mut b) = (Idle::default(), Idle::default());
        p.finish_job();
        let Step::Wait { arm: Some(ta) } = p.next_step(&mut a) else {
            panic!("above core: timed")
        };
        p.finish_job();
        let Step::Wait { arm: Some(tb) } = p.next_step(&mut b) else {
            panic!("above core: timed")
        };
        assert!(p.retire(tb));
        assert!(!p.retire(ta), "down to core: the other stays");
        assert_eq!(p.workers(), 1);
        assert!(matches!(p.next_step(&mut b), Step::Exit));
        assert!(matches!(p.next_step(&mut a), Step::Wait { arm: None }));
        assert!(!p.exited());
    }

    #[test]
    fn a_stale_timer_does_nothing() {
        let mut p = Pool::new(1, 2, 0);
        spawned(p.admit(1));
        spawned(p.admit(2));
        let mut a = Idle::default();
        p.finish_job();
        let Step::Wait { arm: Some(t) } = p.next_step(&mut a) else {
            panic!("timed")
        };
        assert!(matches!(p.admit(3), Admission::Queued));
        assert!(!p.retire(t), "a job is owed to it");
        assert!(matches!(p.next_step(&mut a), Step::Run(3)));
        assert!(!p.retire(t), "it is busy again: the ticket is void");
    }

    #[test]
    fn shutdown_refuses_and_lets_workers_drain_then_exit() {
        let mut p = Pool::new(1, 1, 2);
        spawned(p.admit(1));
        assert!(matches!(p.admit(2), Admission::Queued));
        assert!(p.shut_down());
        assert!(!p.shut_down());
        assert!(matches!(p.admit(3), Admission::Rejected(3)));
        let mut me = Idle::default();
        p.finish_job();
        assert!(matches!(p.next_step(&mut me), Step::Run(2)));
        p.finish_job();
        assert!(matches!(p.next_step(&mut me), Step::Exit));
        assert_eq!(p.workers(), 0);
        assert!(p.exited());
    }

    #[test]
    fn a_worker_gone_outside_its_task_gives_its_slot_back() {
        let mut p = Pool::new(1, 2, 0);
        spawned(p.admit(1));
        spawned(p.admit(2));
        let mut a = Idle::default();
        p.finish_job();
        assert!(matches!(p.next_step(&mut a), Step::Wait { arm: Some(_) }));
        // Waiting, then gone: the waiting slot goes back.
        assert!(p.worker_gone(&mut a, false).is_empty());
        assert_eq!((p.workers(), p.active()), (1, 1));
        assert!(!p.exited());
        // No hand-off to a worker that is gone.
        assert!(matches!(p.admit(3), Admission::Spawn { .. }));
    }

    #[test]
    fn the_last_worker_gone_returns_the_jobs_nobody_would_run() {
        let mut p = Pool::new(1, 1, 1);
        spawned(p.admit(1));
        assert!(matches!(p.admit(2), Admission::Queued));
        assert_eq!(Vec::from(p.worker_gone(&mut Idle::default(), true)), [2]);
        assert_eq!((p.workers(), p.active(), p.queue_depth()), (0, 0, 0));
        assert!(p.exited());
        assert_eq!(spawned(p.admit(3)).1, 3, "a later task starts a worker");
    }

    /// One simulated worker of the model below.
    #[derive(Debug)]
    enum W {
        Running(u32),
        Idle(Idle, Option<u64>),
        Gone,
    }

    #[derive(Debug, Clone)]
    enum Op {
        Submit,
        Finish(usize),
        Wake(usize),
        Timer(usize),
        Shutdown,
        Drain,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => Just(Op::Submit),
            3 => (0usize..4).prop_map(Op::Finish),
            2 => (0usize..4).prop_map(Op::Wake),
            2 => (0usize..4).prop_map(Op::Timer),
            1 => Just(Op::Shutdown),
            1 => Just(Op::Drain),
        ]
    }

    proptest! {
        /// Random interleavings of submits, job ends, wake-ups, keep-alive
        /// timers and shutdowns keep the bookkeeping exact, never exceed
        /// `max` threads or `max + capacity` admitted tasks, and every job
        /// ends exactly once: run, rejected or drained.
        #[test]
        fn bookkeeping_invariants(
            (core, extra, capacity) in (1usize..3, 0usize..3, 0usize..3),
            ops in proptest::collection::vec(op(), 1..80),
        ) {
            let max = core + extra;
            let mut p = Pool::new(core, max, capacity);
            let mut workers: Vec<W> = Vec::new();
            let (mut next_job, mut ran, mut rejected, mut drained) = (0u32, Vec::new(), 0u32, 0u32);
            let run_or_wait = |p: &mut Pool<u32>, w: &mut W, me: Idle| {
                let mut me = me;
                *w = match p.next_step(&mut me) {
                    Step::Run(j) => W::Running(j),
                    Step::Wait { arm } => W::Idle(me, arm),
                    Step::Exit => W::Gone,
                };
            };
            for op in ops {
                match op {
                    Op::Submit => {
                        next_job += 1;
                        match p.admit(next_job) {
                            Admission::Spawn { number, job } => {
                                prop_assert_eq!(number as usize, workers.len() + 1);
                                workers.push(W::Running(job));
                            }
                            Admission::Queued => {}
                            Admission::Rejected(_) => rejected += 1,
                        }
                    }
                    Op::Finish(i) => {
                        if let Some(w) = workers.get_mut(i)
                            && let W::Running(j) = *w
                        {
                            ran.push(j);
                            p.finish_job();
                            run_or_wait(&mut p, w, Idle::default());
                        }
                    }
                    Op::Wake(i) => {
                        if let Some(w) = workers.get_mut(i)
                            && let W::Idle(me, _) = *w
                        {
                            run_or_wait(&mut p, w, me);
                        }
                    }
                    Op::Timer(i) => {
                        if let Some(W::Idle(_, Some(t))) = workers.get(i) {
                            p.retire(*t);
                        }
                    }
                    Op::Shutdown => { p.shut_down(); }
                    Op::Drain => {
                        if p.is_shutdown() {
                            drained += p.drain().len() as u32;
                        }
                    }
                }
                let running = workers.iter().filter(|w| matches!(w, W::Running(_))).count();
                prop_assert_eq!(p.active(), running);
                prop_assert_eq!(p.active + p.waiting, p.workers);
                prop_assert!(p.workers <= max);
                prop_assert!(p.queue.len() <= capacity + p.waiting);
                prop_assert!(p.queue_depth() <= capacity);
                prop_assert!(running + p.queue.len() <= max + capacity);
                prop_assert!(p.alive >= p.workers);
                if !p.is_shutdown() {
                    // Core threads never time out.
                    prop_assert!(p.workers >= core.min(workers.len()));
                }
            }
            // Drain: finish everything and wake every idle worker until quiet.
            p.shut_down();
            loop {
                let mut moved = false;
                for w in workers.iter_mut() {
                    match *w {
                        W::Running(j) => {
                            ran.push(j);
                            p.finish_job();
                            run_or_wait(&mut p, w, Idle::default());
                            moved = true;
                        }
                        W::Idle(me, _) => {
                            run_or_wait(&mut p, w, me);
                            moved = true;
                        }
                        W::Gone => {}
                    }
                }
                if !moved { break; }
            }
            prop_assert_eq!(p.workers(), 0);
            prop_assert_eq!(p.queue.len(), 0);
            ran.sort_unstable();
            let unique = ran.len();
            ran.dedup();
            prop_assert_eq!(unique, ran.len(), "a job ran twice");
            prop_assert_eq!(ran.len() as u32 + rejected + drained, next_job);
        }
    }
}
