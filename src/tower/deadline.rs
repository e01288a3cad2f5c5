//! The deadline's layer: each request runs under a deadline, the layer's
//! timeout or, with [`DeadlineLayer::grpc_timeout_header`], an incoming
//! `grpc-timeout` header's when that is shorter.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderName, HeaderValue, Request};
use resil_core::Error;
use resil_core::chain::{ChainFuture, Stack};
use resil_core::clock::Clock;
use resil_core::deadline::{self, Deadline, DeadlineNode};
use tower_layer::Layer;
use tower_service::Service;

use super::{Once, ServiceCall};

/// The header of gRPC's deadlines: a value of at most 8 digits and a unit
/// (`H`, `M`, `S`, `m`, `u`, `n`).
pub const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");

/// Runs each request under a deadline (see [`resil::deadline`](mod@crate::deadline)):
/// every pattern beneath it spends from it, a request with no time left is
/// refused with [`Error::DeadlineExceeded`] (504 through axum), and a
/// response still pending when the deadline passes is dropped.
///
/// On a server, [`grpc_timeout_header`](DeadlineLayer::grpc_timeout_header)
/// takes the smaller of the layer's timeout and the caller's `grpc-timeout`
/// header; a malformed header is ignored (the layer's timeout applies) and
/// counted ([`DeadlineLayer::malformed_grpc_timeouts`]). On a client,
/// [`set_grpc_timeout_header`](DeadlineLayer::set_grpc_timeout_header)
/// writes the time left on each outgoing request.
///
/// # Examples
///
/// ```
/// use resil::tower::DeadlineLayer;
/// use std::time::Duration;
/// use tower::{ServiceBuilder, ServiceExt, service_fn};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let svc = ServiceBuilder::new()
///     .layer(DeadlineLayer::new(Duration::from_millis(800)).grpc_timeout_header())
///     .service(service_fn(|_: http::Request<()>| async {
///         Ok::<_, std::io::Error>(resil::deadline::remaining())
///     }));
/// let request = http::Request::builder()
///     .header("grpc-timeout", "200m")
///     .body(())
///     .unwrap();
/// let left = svc.oneshot(request).await.unwrap();
/// assert!(left.unwrap() <= Duration::from_millis(200));
/// # }
/// ```
#[derive(Clone)]
pub struct DeadlineLayer {
    deadline: Deadline,
    timeout: Option<Duration>,
    read_header: bool,
    write_header: bool,
    malformed: Arc<AtomicU64>,
}

impl DeadlineLayer {
    /// A deadline of `timeout` for each request (zero refuses every one).
    pub fn new(timeout: Duration) -> Self {
        Self::of(Deadline::of_defaults("tower")).timeout(timeout)
    }

    /// [`DeadlineLayer::new`] on `clock` (a `TokioClock` under paused time
    /// in tests).
    pub fn with_clock(timeout: Duration, clock: impl Clock) -> Self {
        let deadline = Deadline::with_clock("tower", Default::default(), clock);
        Self::of(deadline).timeout(timeout)
    }

    /// The deadline of the instance `deadline` (its configured timeout, its
    /// name on the refusals it notices).
    pub fn of(deadline: Deadline) -> Self {
        DeadlineLayer {
            deadline,
            timeout: None,
            read_header: false,
            write_header: false,
            malformed: Arc::default(),
        }
    }

    fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Takes the smaller of the layer's timeout and the request's
    /// `grpc-timeout` header (a server's deadline from its caller).
    pub fn grpc_timeout_header(mut self) -> Self {
        self.read_header = true;
        self
    }

    /// Writes the time left (the layer's deadline, or the enclosing one if
    /// earlier) as the request's `grpc-timeout` header (a client's deadline
    /// passed on to the server).
    pub fn set_grpc_timeout_header(mut self) -> Self {
        self.write_header = true;
        self
    }

    /// How many `grpc-timeout` headers this layer (and its clones) found
    /// malformed and ignored.
    pub fn malformed_grpc_timeouts(&self) -> u64 {
        self.malformed.load(Ordering::Relaxed)
    }

    /// This request's timeout: the layer's, or the header's when shorter.
    fn timeout_for<B>(&self, request: &Request<B>) -> Duration {
        let own = self
            .timeout
            .unwrap_or_else(|| self.deadline.config().timeout());
        if !self.read_header {
            return own;
        }
        let Some(value) = request.headers().get(GRPC_TIMEOUT) else {
            return own;
        };
        match value.to_str().ok().and_then(deadline::parse_grpc_timeout) {
            Some(theirs) => own.min(theirs),
            None => {
                self.malformed.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(
                    target: "resil::deadline",
                    value = ?value,
                    "malformed grpc-timeout header ignored"
                );
                own
            }
        }
    }
}

impl fmt::Debug for DeadlineLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlineLayer")
            .field("deadline", &self.deadline.name())
            .field("timeout", &self.timeout)
            .field("read_header", &self.read_header)
            .field("write_header", &self.write_header)
            .finish()
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = DeadlineService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        DeadlineService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of a [`DeadlineLayer`].
#[derive(Clone, Debug)]
pub struct DeadlineService<S> {
    inner: S,
    layer: DeadlineLayer,
}

/// The response future of a [`DeadlineService`]: the engine's future of
/// the call under its deadline.
pub type DeadlineFuture<S, Req> =
    ChainFuture<DeadlineNode<Arc<resil_core::deadline::Inner>, ServiceCall<S, Req, Once>>>;

impl<S, B> Service<Request<B>> for DeadlineService<S>
where
    S: Service<Request<B>> + Clone,
{
    type Response = S::Response;
    type Error = Error<S::Error>;
    type Future = DeadlineFuture<S, Request<B>>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Error::Inner)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let timeout = self.layer.timeout_for(&request);
        if self.layer.write_header {
            let left = deadline::remaining().map_or(timeout, |left| left.min(timeout));
            let value = deadline::format_grpc_timeout(left);
            if let Ok(value) = HeaderValue::from_str(&value) {
                request.headers_mut().insert(GRPC_TIMEOUT, value);
            }
        }
        // The service made ready goes with the call; a clone takes its place.
        let clone = self.inner.clone();
        let service = std::mem::replace(&mut self.inner, clone);
        let part = self.layer.deadline.shared_part().with_timeout(timeout);
        ChainFuture::new(Stack::new().deadline(part).around(ServiceCall {
            service,
            request: Some(request),
            ready: true,
            requests: std::marker::PhantomData,
        }))
    }
}
