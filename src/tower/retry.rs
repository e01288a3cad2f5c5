//! The retry layer.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use resil_core::Error;
use resil_core::clock::Sleep;
use resil_core::retry::{Retry, RetryCall, RetryClassifier};
use tower_layer::Layer;
use tower_service::Service;

use super::{ErrorMode, Lifted, Unclassified, Wrap};

/// A [`tower::Layer`](tower_layer::Layer) that calls a service again with a
/// clone of the request while [`Retry`] says so: up to `max-attempts`
/// attempts, waiting the retry's interval on its clock in between. Before
/// each attempt after the first the service is made ready again.
///
/// By default every `Err` is retried (with the retry's `retry-errors` /
/// `ignore-errors` applied to rejections) and every response returned;
/// [`retry_on`](Self::retry_on) and [`retry_on_response`](Self::retry_on_response)
/// change that. The request must be `Clone` (it is sent again for each
/// attempt; a request that is not is a compile error that names the missing
/// `Clone`), and so must the service.
///
/// # Examples
///
/// ```
/// use resil::retry::{Retry, RetryConfig};
/// use resil::tower::RetryLayer;
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use tower::{ServiceBuilder, ServiceExt, service_fn};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), resil::ConfigError> {
/// static CALLS: AtomicU32 = AtomicU32::new(0);
/// let retry = Retry::new("quote", RetryConfig::builder().max_attempts(3).build()?);
/// let svc = ServiceBuilder::new()
///     .layer(RetryLayer::new(retry).retry_on_response(|status: &u16| *status == 503))
///     .service(service_fn(|_: ()| async {
///         let n = CALLS.fetch_add(1, Ordering::SeqCst);
///         Ok::<u16, std::io::Error>(if n < 2 { 503 } else { 200 })
///     }));
/// assert_eq!(svc.oneshot(()).await.unwrap(), 200);
/// assert_eq!(CALLS.load(Ordering::SeqCst), 3);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RetryLayer<P = Unclassified, M = Wrap> {
    retry: Retry,
    policy: P,
    mode: M,
}

impl RetryLayer {
    /// A layer over `retry` (from a registry or built by hand) with the
    /// default classification.
    pub fn new(retry: Retry) -> Self {
        RetryLayer {
            retry,
            policy: Unclassified,
            mode: Wrap,
        }
    }
}

impl<M> RetryLayer<Unclassified, M> {
    pub(super) fn with_mode(retry: Retry, mode: M) -> Self {
        RetryLayer {
            retry,
            policy: Unclassified,
            mode,
        }
    }

    /// Retries only the errors `predicate` accepts (and the rejections that
    /// `retry-errors` names); the others end the call at once
    /// (Resilience4j's `retryOnException`).
    pub fn retry_on<Res, E>(
        self,
        predicate: fn(&E) -> bool,
    ) -> RetryLayer<RetryClassifier<Res, E>, M> {
        self.classified().retry_on(predicate)
    }

    /// Retries the responses `predicate` accepts, such as an HTTP 503
    /// (Resilience4j's `retryOnResult`). Once the attempts are used up the
    /// last response is returned, or `Error::MaxRetriesExceeded` with
    /// `fail-after-max-attempts`.
    pub fn retry_on_response<Res, E>(
        self,
        predicate: fn(&Res) -> bool,
    ) -> RetryLayer<RetryClassifier<Res, E>, M> {
        self.classified().retry_on_response(predicate)
    }

    fn classified<Res, E>(self) -> RetryLayer<RetryClassifier<Res, E>, M> {
        RetryLayer {
            retry: self.retry,
            policy: RetryClassifier::new(),
            mode: self.mode,
        }
    }
}

impl<Res, E, M> RetryLayer<RetryClassifier<Res, E>, M> {
    /// Sets the error predicate, as on a layer not yet classified.
    pub fn retry_on(mut self, predicate: fn(&E) -> bool) -> Self {
        self.policy = self.policy.retry_on(predicate);
        self
    }

    /// Sets the response predicate, as on a layer not yet classified.
    pub fn retry_on_response(mut self, predicate: fn(&Res) -> bool) -> Self {
        self.policy = self.policy.retry_on_result(predicate);
        self
    }
}

impl<P, M> RetryLayer<P, M> {
    /// The retry.
    pub fn retry(&self) -> &Retry {
        &self.retry
    }
}

impl<S, P: Clone, M> Layer<S> for RetryLayer<P, M> {
    type Service = RetryService<S, P, M>;

    fn layer(&self, inner: S) -> Self::Service {
        RetryService {
            inner,
            retry: self.retry.clone(),
            policy: self.policy.clone(),
            mode: PhantomData,
        }
    }
}

impl<P, M> fmt::Debug for RetryLayer<P, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryLayer")
            .field("retry", &self.retry.name())
            .finish_non_exhaustive()
    }
}

/// The classifier of one retried call, for the response type `Res` and
/// the caller's error type `E`.
pub trait RetryClassifierFor<Res, E> {
    /// The classifier this call is counted with.
    fn classifier(&self) -> RetryClassifier<Res, E>;
}

impl<Res, E> RetryClassifierFor<Res, E> for Unclassified {
    #[inline(always)]
    fn classifier(&self) -> RetryClassifier<Res, E> {
        RetryClassifier::new()
    }
}

impl<Res, E> RetryClassifierFor<Res, E> for RetryClassifier<Res, E> {
    #[inline(always)]
    fn classifier(&self) -> RetryClassifier<Res, E> {
        *self
    }
}

/// The service of a [`RetryLayer`].
#[derive(Clone)]
pub struct RetryService<S, P = Unclassified, M = Wrap> {
    inner: S,
    retry: Retry,
    policy: P,
    mode: PhantomData<fn() -> M>,
}

impl<S, P, M> RetryService<S, P, M> {
    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The retry.
    pub fn retry(&self) -> &Retry {
        &self.retry
    }
}

impl<S, P, M> fmt::Debug for RetryService<S, P, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryService")
            .field("retry", &self.retry.name())
            .finish_non_exhaustive()
    }
}

impl<S, P, M, Req> Service<Req> for RetryService<S, P, M>
where
    Req: Clone,
    S: Service<Req> + Clone,
    M: ErrorMode<S::Error>,
    P: RetryClassifierFor<S::Response, M::Error>,
{
    type Response = S::Response;
    type Error = Error<M::Error>;
    type Future = RetryFuture<S, Req, M>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(M::lift)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        // The service made ready makes the first attempt, and goes with the
        // future for the next ones; a clone takes its place here.
        let clone = self.inner.clone();
        let mut service = std::mem::replace(&mut self.inner, clone);
        let again = request.clone();
        let first = Lifted::new(service.call(request));
        RetryFuture {
            call: self.retry.start_async_call_owned(),
            classifier: self.policy.classifier(),
            service,
            request: again,
            stage: Stage::Attempt { future: first },
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of a [`RetryService`]: each attempt, the wait
    /// after a failed one, and the service made ready again, counted by the
    /// retry's own call state (its metrics and events are those of
    /// [`Retry::call_async`]).
    ///
    /// Dropping it drops the attempt or the wait in progress and counts
    /// nothing, as cancelling `Retry::call_async` does.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct RetryFuture<S, Req, M>
    where
        S: Service<Req>,
        M: ErrorMode<S::Error>,
    {
        call: RetryCall,
        classifier: RetryClassifier<S::Response, M::Error>,
        service: S,
        request: Req,
        #[pin]
        stage: Stage<Lifted<S::Future, M>>,
    }
}

pin_project_lite::pin_project! {
    #[project = StageProj]
    enum Stage<F> {
        Attempt {
            #[pin]
            future: F,
        },
        Waiting {
            sleep: Sleep,
        },
        Readying,
    }
}

impl<S, Req, M> Future for RetryFuture<S, Req, M>
where
    Req: Clone,
    S: Service<Req>,
    M: ErrorMode<S::Error>,
{
    type Output = Result<S::Response, Error<M::Error>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            let outcome = match this.stage.as_mut().project() {
                StageProj::Attempt { future } => ready!(this.call.poll_attempt(future, cx)),
                StageProj::Waiting { sleep } => {
                    ready!(Pin::new(sleep).poll(cx));
                    this.stage.set(Stage::Readying);
                    continue;
                }
                StageProj::Readying => match ready!(this.service.poll_ready(cx)) {
                    Ok(()) => {
                        let future = Lifted::new(this.service.call(this.request.clone()));
                        this.stage.set(Stage::Attempt { future });
                        continue;
                    }
                    // A service that cannot get ready fails the attempt.
                    Err(error) => Err(M::lift(error)),
                },
            };
            match this.call.settle(this.classifier, outcome) {
                Ok(result) => return Poll::Ready(result),
                Err(wait) if wait.is_zero() => this.stage.set(Stage::Readying),
                Err(wait) => this.stage.set(Stage::Waiting {
                    sleep: this.call.sleep(wait),
                }),
            }
        }
    }
}

impl<S, Req, M> fmt::Debug for RetryFuture<S, Req, M>
where
    S: Service<Req>,
    M: ErrorMode<S::Error>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.stage {
            Stage::Attempt { .. } => "attempt",
            Stage::Waiting { .. } => "waiting",
            Stage::Readying => "readying",
        };
        f.debug_struct("RetryFuture")
            .field("call", &self.call)
            .field("stage", &stage)
            .finish_non_exhaustive()
    }
}
