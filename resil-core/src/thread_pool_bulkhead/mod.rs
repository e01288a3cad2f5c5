//! The thread-pool bulkhead: run blocking calls on a bounded pool of
//! dedicated threads, and refuse work beyond its threads and queue.
//!
//! A blocking call (a JDBC-style driver, a file system walk, a CPU-heavy
//! report) must not run on an async runtime's threads, and handing it to
//! `tokio::task::spawn_blocking` moves the problem instead of bounding it:
//! that pool queues without limit and grows to 512 threads by default, so one
//! slow dependency can still pile up every caller's work. A thread-pool
//! bulkhead gives each dependency its own small pool (threads named
//! `bulkhead-<name>-<n>`, n from 1) with a bounded queue, and refuses what
//! does not fit with [`BulkheadFull`] at once, which callers can shed,
//! fall back on, or count in a circuit breaker.
//!
//! Admission is Resilience4j 2.2's, which is Java's `ThreadPoolExecutor`:
//!
//! 1. fewer than `core_thread_pool_size` threads: start a new one for the task;
//! 2. else queue it, if the queue has room or an idle thread will take it;
//! 3. else, if fewer than `max_thread_pool_size` threads: start one for it;
//! 4. else refuse it.
//!
//! It is decided under one lock when the task is submitted and does not
//! depend on thread timing: with every thread busy, exactly
//! `max_thread_pool_size + queue_capacity` tasks are admitted. A
//! `queue_capacity` of 0 is a hand-off (Java's `SynchronousQueue`): a task is
//! admitted only if a thread can take it now. Threads above the core size
//! exit after idling for `keep_alive_duration`, measured on the bulkhead's
//! [`Clock`] (with a [`ManualClock`](crate::clock::ManualClock) they exit when the
//! clock is advanced past it); core threads stay until shutdown. Threads
//! start on demand, none before the first task.
//!
//! What Rust changes:
//!
//! - [`submit`](ThreadPoolBulkhead::submit) returns a [`Submission`], a
//!   future that resolves with the task's value (or `BulkheadFull`), which a
//!   sync caller can also [`wait`](Submission::wait) for.
//!   [`try_submit`](ThreadPoolBulkhead::try_submit) reports the refusal
//!   synchronously, as Resilience4j throws it.
//! - Dropping a submission does not cancel its task (a thread cannot be
//!   interrupted; Resilience4j cannot either): the task runs, its value is
//!   dropped.
//! - A task that panics does not kill its thread: the panic is caught on the
//!   worker and resumed in the caller when it awaits (or waits for) the result.
//! - [`ContextPropagator`]s carry context (a `tracing` span, a thread-local
//!   request id) from the submitting thread onto the worker.
//! - [`shutdown`](ThreadPoolBulkhead::shutdown) stops admitting, lets queued
//!   and running tasks finish and waits for the threads, at most 5 seconds
//!   (Resilience4j's `close()`); dropping the last handle starts the same
//!   shutdown without waiting for it.
//!
//! Every submission allocates once (the task and its result slot share one
//! allocation), plus a few boxes per context propagator; starting a thread
//! costs what starting a thread costs.
//!
//! # Examples
//!
//! ```
//! use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
//! use resil_core::Error;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = ThreadPoolBulkheadConfig::builder()
//!     .core_thread_pool_size(2)
//!     .max_thread_pool_size(4)
//!     .queue_capacity(10)
//!     .build()?;
//! let bulkhead = ThreadPoolBulkhead::new("report-export", config);
//!
//! // Async callers await the task's value...
//! let name = bulkhead.submit(|| std::thread::current().name().map(String::from)).await?;
//! assert_eq!(name.as_deref(), Some("bulkhead-report-export-1"));
//!
//! // ...sync callers block on it, with the caller's error kept typed.
//! let rows: Result<u32, Error<std::io::Error>> = bulkhead.call(|| Ok(42));
//! assert_eq!(rows?, 42);
//!
//! assert!(bulkhead.shutdown());
//! assert!(matches!(bulkhead.call(|| Ok::<_, std::io::Error>(1)), Err(Error::BulkheadFull(_))));
//! # Ok(())
//! # }
//! ```

mod config;
mod context;
mod event;
mod future;
mod layer;
mod metrics;
mod pool;
mod task;

use std::fmt;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

pub use self::config::{
    MAX_QUEUE_CAPACITY, MAX_THREAD_POOL_SIZE, ThreadPoolBulkheadConfig,
    ThreadPoolBulkheadConfigBuilder,
};
pub use self::context::{CapturedContext, ContextPropagator};
pub use self::event::{ThreadPoolBulkheadEvent, ThreadPoolBulkheadEventType};
pub use self::future::Submission;
pub use self::layer::{
    ChainJobs, Jobs, Tasks, ThreadPoolBulkheadAttempt, ThreadPoolBulkheadNode,
    ThreadPoolBulkheadPart,
};
pub use self::metrics::ThreadPoolBulkheadMetrics;
pub use crate::bulkhead::BulkheadFull;

use self::pool::{Admission, Idle, Pool, Step};
use self::task::Job;
use crate::chain::{Lift, Stack, once};
use crate::clock::{Clock, SharedClock, SystemClock, TimerHandle};
use crate::error::{ConfigError, Error, Problems};
use crate::event::EventPublisher;
use crate::fault::FaultPart;
use crate::{Name, Tags};

/// How long [`ThreadPoolBulkhead::shutdown`] waits for queued and running
/// tasks (Resilience4j's `close()` waits 5 seconds).
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// A thread-pool bulkhead. Cheap to clone: clones share one pool.
///
/// The pool shuts down when [`shutdown`](ThreadPoolBulkhead::shutdown) is
/// called or when the last clone is dropped. See the
/// [module documentation](self) for the admission rules.
#[derive(Clone)]
pub struct ThreadPoolBulkhead {
    owner: Arc<Owner>,
}

/// The handles' share of the pool: dropping the last one starts the shutdown.
/// Worker threads hold the [`Shared`] part only, so they never keep a pool
/// that nobody can submit to alive.
struct Owner(Arc<Shared>);

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.begin_shutdown();
    }
}

struct Shared {
    name: Name,
    /// The name for the fault's place of the pool's own calls, whose jobs
    /// own what they use: leaked once per distinct name.
    fault_name: &'static str,
    config: Live<ThreadPoolBulkheadConfig>,
    clock: SharedClock,
    tags: Tags,
    events: EventPublisher<ThreadPoolBulkheadEvent>,
    pool: Mutex<Pool<Job>>,
    /// Idle workers wait here for jobs, shutdown and retirement.
    work: Condvar,
    /// Signalled when the last worker thread ends.
    terminated: Condvar,
}

impl ThreadPoolBulkhead {
    /// A bulkhead with Resilience4j's defaults on the system clock.
    pub fn of_defaults(name: impl Into<Name>) -> Self {
        Self::new(name, ThreadPoolBulkheadConfig::default())
    }

    /// A bulkhead on the system clock.
    pub fn new(name: impl Into<Name>, config: ThreadPoolBulkheadConfig) -> Self {
        Self::with_clock(name, config, SystemClock::new())
    }

    /// A bulkhead whose keep-alive and events follow `clock` (a
    /// [`ManualClock`](crate::clock::ManualClock) in tests: idle threads above the core size exit when it
    /// is advanced past the keep-alive).
    pub fn with_clock(
        name: impl Into<Name>,
        config: ThreadPoolBulkheadConfig,
        clock: impl Clock,
    ) -> Self {
        Self::with_parts(name.into(), config, clock.into_shared(), Tags::default())
    }

    /// Checks that `name` can name a pool: its worker threads are named
    /// after it (`bulkhead-<name>-<n>`), and no thread name holds a NUL byte.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] for `name` when it contains a NUL byte.
    pub fn check_name(name: &str) -> Result<(), ConfigError> {
        let mut p = Problems::default();
        p.check(
            is_thread_name(name),
            "name",
            name.escape_debug(),
            "must not contain a NUL byte (it names the pool's threads)",
        );
        p.finish(())
    }

    /// Like [`with_clock`](ThreadPoolBulkhead::with_clock), with the name
    /// checked first: the threads are named after it, so it must be a valid
    /// thread name.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] for `name` when it contains a NUL byte. The
    /// infallible constructors accept such a name, and then every task is
    /// refused with [`BulkheadFull`], since no thread can start.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::SystemClock;
    /// use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
    ///
    /// let config = ThreadPoolBulkheadConfig::default();
    /// assert!(ThreadPoolBulkhead::try_with_clock("pdf-render", config.clone(), SystemClock::new()).is_ok());
    /// let err = ThreadPoolBulkhead::try_with_clock("pdf\0render", config, SystemClock::new()).unwrap_err();
    /// assert_eq!(err.problems()[0].field(), "name");
    /// ```
    pub fn try_with_clock(
        name: impl Into<Name>,
        config: ThreadPoolBulkheadConfig,
        clock: impl Clock,
    ) -> Result<Self, ConfigError> {
        let name = name.into();
        Self::check_name(&name)?;
        Ok(Self::with_parts(
            name,
            config,
            clock.into_shared(),
            Tags::default(),
        ))
    }

    /// [`try_with_clock`](ThreadPoolBulkhead::try_with_clock) on the system clock.
    ///
    /// # Errors
    ///
    /// As [`try_with_clock`](ThreadPoolBulkhead::try_with_clock).
    pub fn try_new(
        name: impl Into<Name>,
        config: ThreadPoolBulkheadConfig,
    ) -> Result<Self, ConfigError> {
        Self::try_with_clock(name, config, SystemClock::new())
    }

    pub(crate) fn with_parts(
        name: Name,
        config: ThreadPoolBulkheadConfig,
        clock: SharedClock,
        tags: Tags,
    ) -> Self {
        let pool = Pool::new(
            config.core_thread_pool_size as usize,
            config.max_thread_pool_size as usize,
            config.queue_capacity as usize,
        );
        ThreadPoolBulkhead {
            owner: Arc::new(Owner(Arc::new(Shared {
                events: EventPublisher::new(name.clone(), clock.clone()),
                fault_name: crate::fault::static_name(&name),
                name,
                config: Live::new(config),
                clock,
                tags,
                pool: Mutex::new(pool),
                work: Condvar::new(),
                terminated: Condvar::new(),
            }))),
        }
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.owner.0
    }

    /// The bulkhead's name.
    pub fn name(&self) -> &str {
        &self.shared().name
    }

    /// The bulkhead's name, shared.
    pub(crate) fn name_shared(&self) -> Name {
        self.shared().name.clone()
    }

    /// The bulkhead's configuration.
    pub fn config(&self) -> &ThreadPoolBulkheadConfig {
        self.shared().config.load()
    }

    /// Applies `config` in place. The pool is resized as Java's
    /// `ThreadPoolExecutor` is: no queued task is dropped (a smaller
    /// `queue_capacity` refuses new tasks until the queue is below it), a
    /// larger core size starts threads for queued tasks at once, and
    /// threads above a smaller maximum (or idle above a smaller core, after
    /// `keep_alive_duration`) end when they are next idle. Tasks running or
    /// queued keep the context propagators they were submitted with; shadow
    /// mode applies to the next submission.
    ///
    /// # Errors
    ///
    /// [`ChangeRefused`] past [`MAX_VERSIONS`](crate::live::MAX_VERSIONS)
    /// distinct configurations; the pool is unchanged then.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
    ///
    /// let small = ThreadPoolBulkheadConfig::builder()
    ///     .core_thread_pool_size(1)
    ///     .max_thread_pool_size(1)
    ///     .queue_capacity(1)
    ///     .build()?;
    /// let pool = ThreadPoolBulkhead::new("report-export", small);
    /// pool.change_config(
    ///     ThreadPoolBulkheadConfig::builder()
    ///         .core_thread_pool_size(2)
    ///         .max_thread_pool_size(4)
    ///         .queue_capacity(10)
    ///         .build()?,
    /// )?;
    /// assert_eq!(pool.metrics().maximum_thread_pool_size(), 4);
    /// assert_eq!(pool.submit(|| 1 + 1).wait()?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn change_config(&self, config: ThreadPoolBulkheadConfig) -> Result<(), ChangeRefused> {
        let s = self.shared();
        let sizes = (
            config.core_thread_pool_size as usize,
            config.max_thread_pool_size as usize,
            config.queue_capacity as usize,
        );
        let spawn = {
            let mut pool = lock(&s.pool);
            s.config.store(config, same_printed)?;
            pool.resize(sizes.0, sizes.1, sizes.2)
        };
        s.work.notify_all();
        for admission in spawn {
            if let Admission::Spawn { number, job } = admission
                && spawn_worker(s, number, job).is_err()
                && lock(&s.pool).spawn_failed()
            {
                // the job dropped with the failed spawn resolves its
                // submission as refused; nothing else runs
                s.terminated.notify_all();
            }
        }
        Ok(())
    }

    /// Whether [`ThreadPoolBulkhead::change_config`] would accept `config`.
    ///
    /// # Errors
    ///
    /// The [`ChangeRefused`] that `change_config` would return.
    pub fn can_change_config(
        &self,
        config: &ThreadPoolBulkheadConfig,
    ) -> Result<(), ChangeRefused> {
        self.shared().config.fits(|v| same_printed(v, config))
    }

    /// The bulkhead's tags (registry tags overlaid by instance tags).
    pub fn tags(&self) -> &Tags {
        &self.shared().tags
    }

    /// The clock the keep-alive and the events follow.
    pub fn clock(&self) -> &SharedClock {
        &self.shared().clock
    }

    /// Subscriptions and the recent-events buffer.
    pub fn event_publisher(&self) -> &EventPublisher<ThreadPoolBulkheadEvent> {
        &self.shared().events
    }

    /// A consistent snapshot of the pool's threads and queue.
    pub fn metrics(&self) -> ThreadPoolBulkheadMetrics {
        let s = self.shared();
        let pool = lock(&s.pool);
        let config = s.config.load();
        ThreadPoolBulkheadMetrics {
            core_thread_pool_size: config.core_thread_pool_size,
            thread_pool_size: to_u32(pool.workers()),
            maximum_thread_pool_size: config.max_thread_pool_size,
            queue_depth: to_u32(pool.queue_depth()),
            queue_capacity: config.queue_capacity,
            active_thread_count: to_u32(pool.active()),
        }
    }

    /// How long the task that has waited longest in the queue has waited,
    /// on the pool's clock; `None` when nothing is queued. A queue whose
    /// oldest task is older than its callers' time limit runs work nobody
    /// waits for any more.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::clock::ManualClock;
    /// use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    ///
    /// let config = ThreadPoolBulkheadConfig::builder()
    ///     .core_thread_pool_size(1)
    ///     .max_thread_pool_size(1)
    ///     .queue_capacity(5)
    ///     .build()?;
    /// let clock = ManualClock::new();
    /// let pool = ThreadPoolBulkhead::with_clock("report", config, clock.clone());
    /// assert_eq!(pool.oldest_queued_task_age(), None);
    /// let (release, gate) = mpsc::channel::<()>();
    /// let busy = pool.submit(move || gate.recv().is_ok());
    /// let queued = pool.submit(|| true);
    /// clock.advance(Duration::from_millis(250));
    /// assert_eq!(pool.oldest_queued_task_age(), Some(Duration::from_millis(250)));
    /// release.send(()).unwrap();
    /// assert!(busy.wait()? && queued.wait()?);
    /// assert_eq!(pool.oldest_queued_task_age(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn oldest_queued_task_age(&self) -> Option<Duration> {
        let s = self.shared();
        let submitted = lock(&s.pool).oldest().map(Job::submitted)?;
        Some(s.clock.now().saturating_duration_since(submitted))
    }

    /// Submits `f` to run on the pool; the returned [`Submission`] resolves
    /// with its value.
    ///
    /// Admission is decided here, before this returns: a refused task
    /// publishes `CallRejected` and its submission resolves at once with
    /// [`BulkheadFull`]. Dropping the submission does not cancel the task.
    ///
    /// # Examples
    ///
    /// ```
    /// # use resil_core::thread_pool_bulkhead::ThreadPoolBulkhead;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), resil_core::bulkhead::BulkheadFull> {
    /// let bulkhead = ThreadPoolBulkhead::of_defaults("checksum");
    /// let sum = bulkhead.submit(|| (1..=100u32).sum::<u32>()).await?;
    /// assert_eq!(sum, 5050);
    /// # Ok(())
    /// # }
    /// ```
    pub fn submit<T, F>(&self, f: F) -> Submission<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.try_submit(f).unwrap_or_else(Submission::rejected)
    }

    /// Like [`submit`](ThreadPoolBulkhead::submit), with the refusal returned
    /// synchronously (Resilience4j throws `BulkheadFullException` from `submit`).
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] when threads and queue are taken, when the pool is
    /// shut down, or when the operating system refused to start a thread.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
    /// use std::sync::mpsc;
    ///
    /// let config = ThreadPoolBulkheadConfig::builder()
    ///     .core_thread_pool_size(1)
    ///     .max_thread_pool_size(1)
    ///     .queue_capacity(0)
    ///     .build()?;
    /// let bulkhead = ThreadPoolBulkhead::new("pdf-render", config);
    /// let (release, gate) = mpsc::channel::<()>();
    /// let busy = bulkhead.try_submit(move || gate.recv().ok()).unwrap();
    /// let refused = bulkhead.try_submit(|| "too late").unwrap_err();
    /// assert_eq!(refused.capacity(), 1);
    /// release.send(()).unwrap();
    /// assert_eq!(busy.wait()?, Some(()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_submit<T, F>(&self, f: F) -> Result<Submission<T>, BulkheadFull>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let s = self.shared();
        let contexts = s
            .config
            .load()
            .context_propagators
            .iter()
            .map(|p| p.capture())
            .collect();
        let (job, submission) = task::new(f, contexts, s.full(), s.clock.now());
        let admission = {
            let mut pool = lock(&s.pool);
            match pool.admit(job) {
                Admission::Rejected(job) if s.config.load().shadow => {
                    let admission = pool.admit_over(job);
                    drop(pool);
                    if matches!(admission, Admission::Queued) {
                        s.events.publish(|| ThreadPoolBulkheadEvent::ShadowRefusal);
                    }
                    admission
                }
                admission => admission,
            }
        };
        match admission {
            Admission::Queued => {
                s.work.notify_one();
                Ok(submission)
            }
            Admission::Spawn { number, job } => match spawn_worker(s, number, job) {
                Ok(()) => Ok(submission),
                Err(_) => {
                    let last = lock(&s.pool).spawn_failed();
                    if last {
                        s.terminated.notify_all();
                    }
                    Err(s.reject())
                }
            },
            Admission::Rejected(job) => {
                drop(job);
                Err(s.reject())
            }
        }
    }

    /// Runs `f` on the pool and blocks the calling thread until it is done.
    ///
    /// A panic in `f` is resumed here.
    ///
    /// # Errors
    ///
    /// [`Error::BulkheadFull`] when refused, [`Error::Inner`] with `f`'s error.
    pub fn call<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
    {
        // The fault of the pool's name, innermost, on the pool's thread.
        let fault = FaultPart::global(self.shared().fault_name);
        Stack::new()
            .bulkhead(self.part())
            .call(ChainJobs(once(move || {
                move || Stack::new().fault(fault).call(Lift(once(f)))
            })))
    }

    /// Submits `f` now and returns a future of its result.
    ///
    /// Admission is decided by this call, not when the future is first
    /// polled. Dropping the future before the task has started means that
    /// it is not run; a task that is running runs on, and its value is
    /// dropped.
    ///
    /// # Errors
    ///
    /// [`Error::BulkheadFull`] when refused, [`Error::Inner`] with `f`'s error.
    pub fn call_async<T, E, F>(
        &self,
        f: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + Send + 'static + use<T, E, F>
    where
        F: FnOnce() -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
    {
        let fault = FaultPart::global(self.shared().fault_name);
        Stack::new()
            .bulkhead(self.shared_part())
            .call_async(ChainJobs(once(move || {
                move || Stack::new().fault(fault).call(Lift(once(f)))
            })))
    }

    /// Stops admitting and returns at once: later submissions are refused,
    /// queued and running tasks still run, and the threads exit when the
    /// queue is empty. Dropping the last handle does this.
    pub fn begin_shutdown(&self) {
        self.shared().begin_shutdown();
    }

    /// Returns `true` once the pool stopped admitting.
    pub fn is_shutdown(&self) -> bool {
        lock(&self.shared().pool).is_shutdown()
    }

    /// Waits until every worker thread has ended, at most `timeout` (of real
    /// time: this blocks on other threads, which no injected clock moves).
    /// Returns `true` when they have.
    ///
    /// Without a shutdown, core threads never end and this waits the full
    /// `timeout`; so does a call from one of the pool's own tasks, whose
    /// thread cannot end while it waits.
    pub fn await_termination(&self, timeout: Duration) -> bool {
        let s = self.shared();
        let pool = lock(&s.pool);
        let (pool, _) = s
            .terminated
            .wait_timeout_while(pool, timeout, |p| p.alive() > 0)
            .unwrap_or_else(PoisonError::into_inner);
        pool.alive() == 0
    }

    /// Resilience4j's `close()`: stops admitting, lets queued and running tasks
    /// finish and waits for the threads, at most [`DEFAULT_SHUTDOWN_TIMEOUT`]
    /// (5 s). Returns `true` when every thread ended in time.
    ///
    /// When time runs out, the tasks still queued are dropped unrun and their
    /// submissions resolve with [`BulkheadFull`] (Java's `shutdownNow`);
    /// running tasks cannot be interrupted, so they finish in the background
    /// and their threads exit after them.
    pub fn shutdown(&self) -> bool {
        self.shutdown_timeout(DEFAULT_SHUTDOWN_TIMEOUT)
    }

    /// [`shutdown`](ThreadPoolBulkhead::shutdown) with a wait of `timeout`
    /// (real time); zero drops the queued tasks at once.
    pub fn shutdown_timeout(&self, timeout: Duration) -> bool {
        self.begin_shutdown();
        if self.await_termination(timeout) {
            return true;
        }
        let abandoned = lock(&self.shared().pool).drain();
        // Outside the lock: each job resolves its submission as it drops.
        drop(abandoned);
        false
    }
}

impl fmt::Debug for ThreadPoolBulkhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolBulkhead")
            .field("name", &self.shared().name)
            .field("metrics", &self.metrics())
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn full(&self) -> BulkheadFull {
        BulkheadFull::new(self.name.clone(), self.config.load().capacity())
    }

    fn reject(&self) -> BulkheadFull {
        self.events
            .publish(|| ThreadPoolBulkheadEvent::CallRejected);
        self.full()
    }

    fn begin_shutdown(&self) {
        if lock(&self.pool).shut_down() {
            self.work.notify_all();
        }
    }

    /// Schedules the keep-alive of an idle worker above the core size. Never
    /// called under the pool's lock: a clock may run a due timer right away.
    fn schedule_keep_alive(self: &Arc<Self>, ticket: u64) -> TimerHandle {
        let shared = Arc::downgrade(self);
        self.clock.schedule(
            self.config.load().keep_alive_duration,
            Box::new(move || {
                if let Some(s) = shared.upgrade()
                    && lock(&s.pool).retire(ticket)
                {
                    s.work.notify_all();
                }
            }),
        )
    }

    /// Blocks an idle worker until it has a job (`Some`) or must exit (`None`).
    fn wait_for_job(self: &Arc<Self>, me: &mut Idle, timer: &mut TimerHandle) -> Option<Job> {
        let mut pool = lock(&self.pool);
        loop {
            match pool.next_step(me) {
                Step::Run(job) => return Some(job),
                Step::Exit => return None,
                Step::Wait { arm: Some(ticket) } => {
                    drop(pool);
                    *timer = self.schedule_keep_alive(ticket);
                    pool = lock(&self.pool);
                }
                Step::Wait { arm: None } => {
                    pool = self.work.wait(pool).unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }
}

/// The name of worker `number`. A name the OS cannot take (one with a NUL
/// byte) is an error here, where `std` would panic.
fn thread_name(name: &str, number: u64) -> std::io::Result<String> {
    if !is_thread_name(name) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a thread name cannot contain a NUL byte",
        ));
    }
    Ok(format!("bulkhead-{name}-{number}"))
}

fn spawn_worker(shared: &Arc<Shared>, number: u64, first: Job) -> std::io::Result<()> {
    let name = thread_name(&shared.name, number)?;
    let s = Arc::clone(shared);
    thread::Builder::new()
        .name(name)
        .spawn(move || work(s, first))
        .map(drop)
}

/// A worker thread: runs its first job, then whatever the pool gives it.
fn work(shared: Arc<Shared>, first: Job) {
    let mut me = Worker {
        shared: &shared,
        idle: Idle::default(),
        running: true,
    };
    let mut timer = TimerHandle::none();
    let mut job = first;
    loop {
        // A pending keep-alive timer belongs to the idle period that just ended.
        drop(std::mem::replace(&mut timer, TimerHandle::none()));
        let ran = job.run(&shared.events);
        let step = {
            let mut pool = lock(&shared.pool);
            pool.finish_job();
            let step = pool.next_step(&mut me.idle);
            me.running = matches!(step, Step::Run(_));
            step
        };
        if let Step::Wait { arm: Some(ticket) } = step {
            timer = shared.schedule_keep_alive(ticket);
        }
        // Only now, with this thread back in the pool's books, does the
        // caller see its result: metrics read after a result are settled.
        // Handing it back runs the caller's code (a waker; the value's
        // `Drop` when the submission is gone), whose panic has nobody to
        // reach: the hook has reported it, and the worker goes on.
        let _ = panic::catch_unwind(AssertUnwindSafe(|| ran.deliver()));
        job = match step {
            Step::Run(next) => next,
            Step::Exit => return,
            Step::Wait { .. } => match shared.wait_for_job(&mut me.idle, &mut timer) {
                Some(next) => {
                    me.running = true;
                    next
                }
                None => return,
            },
        };
    }
}

/// A worker thread's place in the pool's books, given back when the thread
/// ends, however it ends: a panic outside the task (an event consumer, a
/// clock) must not leave a slot counted that no thread fills.
struct Worker<'a> {
    shared: &'a Shared,
    idle: Idle,
    /// Counted as running a job.
    running: bool,
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        let s = self.shared;
        let mut pool = lock(&s.pool);
        let stranded = pool.worker_gone(&mut self.idle, self.running);
        let last = pool.exited();
        drop(pool);
        s.work.notify_all();
        if last {
            s.terminated.notify_all();
        }
        // Outside the lock: each job resolves its submission as it drops.
        drop(stranded);
    }
}

use crate::live::{ChangeRefused, Live, same_printed};
use crate::sync::std_lock::lock;

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Whether threads can be named after `name`.
fn is_thread_name(name: &str) -> bool {
    !name.contains('\0')
}
