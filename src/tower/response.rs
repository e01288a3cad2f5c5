//! Rejections as axum responses, for a route behind the layers.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll, ready};

use axum::response::{IntoResponse, Response};
use resil_core::Error;
use tower_layer::Layer;
use tower_service::Service;

/// A layer that answers a service's `resil::Error` as an HTTP response (503
/// for `CallNotPermitted` and `BulkheadFull`, 429 with `Retry-After` for
/// `RequestNotPermitted`, 504 for `Timeout`; the caller's own error as it
/// answers itself), so that the service does not fail: what axum's
/// `Router::layer` and `route_layer` take.
///
/// Put it outside the resil layers (feature `actuator`).
///
/// # Examples
///
/// ```
/// use axum::{Router, body::Body, http::Request, routing::get};
/// use resil::tower::{IntoResponseLayer, named};
/// use tower::{ServiceBuilder, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let app: Router = Router::new().route("/stock", get(|| async { "12" })).route_layer(
///     ServiceBuilder::new()
///         .layer(IntoResponseLayer)
///         .layer(named("stock").circuit_breaker().bulkhead().build()),
/// );
/// let response = app.oneshot(Request::get("/stock").body(Body::empty()).unwrap()).await.unwrap();
/// assert_eq!(response.status(), 200);
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct IntoResponseLayer;

impl<S> Layer<S> for IntoResponseLayer {
    type Service = IntoResponseService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        IntoResponseService {
            inner,
            not_ready: Mutex::new(None),
        }
    }
}

/// The service of an [`IntoResponseLayer`].
pub struct IntoResponseService<S> {
    inner: S,
    /// The answer to the next call, when the inner service failed to get
    /// ready (it is not called then). In a `Mutex` only so that the service
    /// is `Sync` (axum's `Router` wants it), as a body is not; it is reached
    /// through `&mut self`, so it is never locked.
    not_ready: Mutex<Option<Response>>,
}

impl<S: Clone> Clone for IntoResponseService<S> {
    fn clone(&self) -> Self {
        IntoResponseService {
            inner: self.inner.clone(),
            not_ready: Mutex::new(None),
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for IntoResponseService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntoResponseService")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<S, Req, Res, E> Service<Req> for IntoResponseService<S>
where
    S: Service<Req, Response = Res, Error = Error<E>>,
    Res: IntoResponse,
    E: IntoResponse,
{
    type Response = Response;
    type Error = Infallible;
    type Future = IntoResponseFuture<S::Future>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // A service that cannot get ready answers its next call with the
        // error's response instead of being called.
        let not_ready = self
            .not_ready
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if not_ready.is_none()
            && let Err(error) = ready!(self.inner.poll_ready(cx))
        {
            *not_ready = Some(error.into_response());
        }
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        IntoResponseFuture {
            stage: match self
                .not_ready
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
            {
                Some(response) => Stage::NotReady {
                    response: Some(response),
                },
                None => Stage::Called {
                    future: self.inner.call(request),
                },
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of an [`IntoResponseService`].
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct IntoResponseFuture<F> {
        #[pin]
        stage: Stage<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = StageProj]
    enum Stage<F> {
        Called {
            #[pin]
            future: F,
        },
        NotReady {
            response: Option<Response>,
        },
    }
}

impl<F, Res, E> Future for IntoResponseFuture<F>
where
    F: Future<Output = Result<Res, Error<E>>>,
    Res: IntoResponse,
    E: IntoResponse,
{
    type Output = Result<Response, Infallible>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(Ok(match self.project().stage.project() {
            StageProj::Called { future } => match ready!(future.poll(cx)) {
                Ok(response) => response.into_response(),
                Err(error) => error.into_response(),
            },
            StageProj::NotReady { response } => response
                .take()
                .expect("`IntoResponseFuture` polled after completion"),
        }))
    }
}

impl<F> fmt::Debug for IntoResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntoResponseFuture").finish_non_exhaustive()
    }
}
