//! Carrying the submitter's context (a `tracing` span, a request id in a
//! thread-local, ...) onto the worker thread that runs the task.

use std::any::Any;
use std::fmt;

/// Captures context on the submitting thread and re-enters it on the worker
/// (Resilience4j's `ContextPropagator`: `retrieve` on the caller, `copy`
/// before the task and `clear` after it on the worker).
///
/// [`capture`](ContextPropagator::capture) runs on the thread that calls
/// `submit`, before admission is decided. The [`CapturedContext`] it returns
/// travels with the task; on the worker it is entered just before the task
/// runs (and before the `CallPermitted` event is published, as in
/// Resilience4j), and the guard it returns is dropped on the worker right
/// after the task, panicking or not.
///
/// Any closure `Fn() -> R` where `R: FnOnce() -> G` is a propagator: the outer
/// closure captures, the inner one re-enters and returns a guard `G` whose
/// `Drop` leaves the context. resil-core does not depend on `tracing`; with
/// it, the propagator that carries the current span is:
///
/// ```text
/// .context_propagator(|| {
///     let span = tracing::Span::current();   // on the submitting thread
///     move || span.entered()                 // on the worker; the guard exits the span
/// })
/// ```
///
/// # Examples
///
/// A request id kept in a thread-local:
///
/// ```
/// use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
/// use std::cell::RefCell;
///
/// thread_local! {
///     static REQUEST_ID: RefCell<Option<String>> = const { RefCell::new(None) };
/// }
///
/// /// Puts the previous id back when the task is done.
/// struct Restore(Option<String>);
/// impl Drop for Restore {
///     fn drop(&mut self) {
///         REQUEST_ID.with(|id| *id.borrow_mut() = self.0.take());
///     }
/// }
///
/// let config = ThreadPoolBulkheadConfig::builder()
///     .context_propagator(|| {
///         let captured = REQUEST_ID.with(|id| id.borrow().clone());
///         move || Restore(REQUEST_ID.with(|id| id.replace(captured)))
///     })
///     .build()?;
/// let bulkhead = ThreadPoolBulkhead::new("inventory-query", config);
///
/// REQUEST_ID.with(|id| *id.borrow_mut() = Some("req-42".into()));
/// let seen = bulkhead
///     .submit(|| REQUEST_ID.with(|id| id.borrow().clone()))
///     .wait()?;
/// assert_eq!(seen.as_deref(), Some("req-42"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[diagnostic::on_unimplemented(
    note = "a propagator is a closure `|| {{ let ctx = capture(); move || enter(ctx) }}` whose inner closure returns a guard, or a type implementing `ContextPropagator`"
)]
pub trait ContextPropagator: Send + Sync + 'static {
    /// Captures the current thread's context; runs on the submitting thread.
    fn capture(&self) -> CapturedContext;
}

impl<F, R, G> ContextPropagator for F
where
    F: Fn() -> R + Send + Sync + 'static,
    R: FnOnce() -> G + Send + 'static,
    G: 'static,
{
    fn capture(&self) -> CapturedContext {
        CapturedContext::new(self())
    }
}

type Enter = Box<dyn FnOnce() -> ContextGuard + Send>;

/// Context captured on the submitting thread, to be entered on the worker.
///
/// # Examples
///
/// A propagator of your own type, which carries a tenant id when there is one:
///
/// ```
/// use resil_core::thread_pool_bulkhead::{
///     CapturedContext, ContextPropagator, ThreadPoolBulkhead, ThreadPoolBulkheadConfig,
/// };
/// use std::cell::Cell;
///
/// thread_local! {
///     static TENANT: Cell<Option<u32>> = const { Cell::new(None) };
/// }
///
/// struct TenantPropagator;
///
/// /// Clears the tenant when the task is done.
/// struct ClearTenant;
/// impl Drop for ClearTenant {
///     fn drop(&mut self) {
///         TENANT.with(|t| t.set(None));
///     }
/// }
///
/// impl ContextPropagator for TenantPropagator {
///     fn capture(&self) -> CapturedContext {
///         match TENANT.with(Cell::get) {
///             Some(tenant) => CapturedContext::new(move || {
///                 TENANT.with(|t| t.set(Some(tenant)));
///                 ClearTenant
///             }),
///             None => CapturedContext::none(),
///         }
///     }
/// }
///
/// let config = ThreadPoolBulkheadConfig::builder()
///     .context_propagator(TenantPropagator)
///     .build()?;
/// let bulkhead = ThreadPoolBulkhead::new("tenant-report", config);
/// TENANT.with(|t| t.set(Some(7)));
/// assert_eq!(bulkhead.submit(|| TENANT.with(Cell::get)).wait()?, Some(7));
/// TENANT.with(|t| t.set(None));
/// assert_eq!(bulkhead.submit(|| TENANT.with(Cell::get)).wait()?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CapturedContext(Option<Enter>);

impl CapturedContext {
    /// Context that `enter` re-enters on the worker; the value `enter` returns
    /// is kept until the task is done and then dropped, on the worker.
    pub fn new<G: 'static>(enter: impl FnOnce() -> G + Send + 'static) -> Self {
        CapturedContext(Some(Box::new(move || {
            ContextGuard(Some(Box::new(enter())))
        })))
    }

    /// No context: nothing to enter.
    pub fn none() -> Self {
        CapturedContext(None)
    }

    /// Enters the context on the current thread.
    pub(crate) fn enter(self) -> ContextGuard {
        match self.0 {
            Some(enter) => enter(),
            None => ContextGuard(None),
        }
    }
}

impl fmt::Debug for CapturedContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CapturedContext")
            .field(&self.0.is_some())
            .finish()
    }
}

/// Keeps a re-entered context until the task is done; dropping it leaves the context.
pub(crate) struct ContextGuard(#[allow(dead_code)] Option<Box<dyn Any>>);

/// The guards of every propagator, left in reverse order of entry.
pub(crate) struct Entered(Vec<ContextGuard>);

impl Entered {
    /// Enters every context in order. If one panics, those already entered
    /// are left (in reverse order) as the panic unwinds.
    pub(crate) fn enter(contexts: Vec<CapturedContext>) -> Self {
        let mut entered = Entered(Vec::with_capacity(contexts.len()));
        for context in contexts {
            entered.0.push(context.enter());
        }
        entered
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        while let Some(guard) = self.0.pop() {
            drop(guard);
        }
    }
}
