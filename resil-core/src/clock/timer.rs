//! resil's own timers: the queue of pending timers (the global timer
//! thread's and each `ManualClock`'s) and the timer thread that runs the
//! timers of clocks with no runtime.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use super::{Clock, Nanos, SystemClock, Task, TimerHandle, TimerRepr};
use crate::sync::std_lock::lock;

/// Pending timers ordered by deadline; cancelled ones are dropped from the map
/// and skipped when their heap entry surfaces.
#[derive(Default)]
pub(super) struct TimerQueue {
    heap: BinaryHeap<Reverse<(Nanos, u64)>>,
    tasks: HashMap<u64, Task>,
    next_id: u64,
}

impl TimerQueue {
    pub(super) fn push(&mut self, deadline: Nanos, task: Task) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.heap.push(Reverse((deadline, id)));
        self.tasks.insert(id, task);
        id
    }

    pub(super) fn cancel(&mut self, id: u64) {
        self.tasks.remove(&id);
        if self.tasks.is_empty() {
            self.heap.clear();
        } else if self.heap.len() > 2 * self.tasks.len() + 16 {
            // Cancelled entries are dropped once they are the majority, so
            // the heap stays within twice the live timers (amortized O(1) a
            // cancel) instead of growing with rate × wait until deadlines pass.
            let tasks = &self.tasks;
            self.heap.retain(|Reverse((_, id))| tasks.contains_key(id));
        }
    }

    #[cfg(test)]
    pub(super) fn heap_len(&self) -> usize {
        self.heap.len()
    }

    /// Pops the earliest live timer whose deadline is at or before `now`.
    pub(super) fn pop_due(&mut self, now: Nanos) -> Option<Task> {
        while let Some(Reverse((deadline, id))) = self.heap.peek().copied() {
            if !self.tasks.contains_key(&id) {
                self.heap.pop();
                continue;
            }
            if deadline > now {
                return None;
            }
            self.heap.pop();
            return self.tasks.remove(&id);
        }
        None
    }

    /// The earliest live deadline.
    pub(super) fn next_deadline(&mut self) -> Option<Nanos> {
        while let Some(Reverse((deadline, id))) = self.heap.peek().copied() {
            if self.tasks.contains_key(&id) {
                return Some(deadline);
            }
            self.heap.pop();
        }
        None
    }
}

/// resil's timer thread (`resil-timer`), started on first use, for timers of
/// clocks that have no runtime to run them.
///
/// The timer thread only keeps time: it hands each due task to a runner
/// thread (`resil-timer-task`), so a task that takes long (a transition whose
/// event consumer is slow) delays no other timer. Runners are started when a
/// task is due and none is idle, up to [`MAX_TIMER_RUNNERS`], and an idle
/// runner above the first leaves after [`RUNNER_KEEP_ALIVE`].
pub(super) struct GlobalTimer {
    clock: SystemClock,
    queue: Mutex<TimerQueue>,
    wake: Condvar,
    runners: Runners,
}

/// The most threads running due timer tasks at once: past it, due tasks wait
/// for a runner to finish (only when that many tasks block at once).
const MAX_TIMER_RUNNERS: usize = 64;
/// How long a runner above the first stays idle before it leaves.
const RUNNER_KEEP_ALIVE: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Runners {
    state: Mutex<RunnerState>,
    ready: Condvar,
}

#[derive(Default)]
struct RunnerState {
    due: std::collections::VecDeque<Task>,
    threads: usize,
    idle: usize,
}

impl Runners {
    /// Queues a due task, starting a runner when none is idle.
    fn run(&'static self, task: Task) {
        let mut state = lock(&self.state);
        state.due.push_back(task);
        if state.idle >= state.due.len() || state.threads >= MAX_TIMER_RUNNERS {
            drop(state);
            self.ready.notify_one();
            return;
        }
        state.threads += 1;
        drop(state);
        let spawned = std::thread::Builder::new()
            .name("resil-timer-task".into())
            .spawn(move || self.work());
        if spawned.is_err() {
            let mut state = lock(&self.state);
            state.threads -= 1;
            if state.threads == 0 {
                // No runner at all: run what is due here rather than never.
                let due: Vec<Task> = state.due.drain(..).collect();
                drop(state);
                for task in due {
                    run_task(task);
                }
            }
        }
    }

    fn work(&self) {
        let mut state = lock(&self.state);
        loop {
            if let Some(task) = state.due.pop_front() {
                drop(state);
                run_task(task);
                state = lock(&self.state);
                continue;
            }
            state.idle += 1;
            let (next, timeout) = self
                .ready
                .wait_timeout(state, RUNNER_KEEP_ALIVE)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            state = next;
            state.idle -= 1;
            if timeout.timed_out() && state.due.is_empty() && state.threads > 1 {
                state.threads -= 1;
                return;
            }
        }
    }
}

/// Runs a timer task; a panicking task takes no thread down with it.
fn run_task(task: Task) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task));
}

pub(super) fn global_timer() -> &'static GlobalTimer {
    static TIMER: OnceLock<&'static GlobalTimer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let timer: &'static GlobalTimer = Box::leak(Box::new(GlobalTimer {
            clock: SystemClock::new(),
            queue: Mutex::new(TimerQueue::default()),
            wake: Condvar::new(),
            runners: Runners::default(),
        }));
        std::thread::Builder::new()
            .name("resil-timer".into())
            .spawn(move || timer.run())
            .expect("resil: cannot spawn the timer thread");
        timer
    })
}

impl GlobalTimer {
    pub(super) fn schedule(&self, delay: Duration, task: Task) -> TimerHandle {
        let deadline = self.clock.now().saturating_add(delay);
        let id = lock(&self.queue).push(deadline, task);
        self.wake.notify_one();
        TimerHandle(TimerRepr::Global(id))
    }

    pub(super) fn cancel(&self, id: u64) {
        lock(&self.queue).cancel(id);
    }

    fn run(&'static self) {
        let mut queue = lock(&self.queue);
        loop {
            let now = self.clock.now();
            if let Some(task) = queue.pop_due(now) {
                drop(queue);
                self.runners.run(task);
                queue = lock(&self.queue);
                continue;
            }
            queue = match queue.next_deadline() {
                Some(deadline) => {
                    let wait = deadline.saturating_duration_since(now);
                    self.wake
                        .wait_timeout(queue, wait)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0
                }
                None => self
                    .wake
                    .wait(queue)
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            };
        }
    }
}
