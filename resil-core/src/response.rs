//! HTTP responses for rejections (feature `axum`): an axum handler or a
//! route behind the `tower` layers answers a rejection with the status a
//! client can act on.
//!
//! | rejection | status |
//! |---|---|
//! | `CallNotPermitted` (breaker open) | 503 Service Unavailable |
//! | `BulkheadFull` | 503 Service Unavailable |
//! | `RequestNotPermitted` | 429 Too Many Requests, with `Retry-After` |
//! | `Timeout` | 504 Gateway Timeout |
//! | `MaxRetriesExceeded` | 502 Bad Gateway |
//! | `DeadlineExceeded` | 504 Gateway Timeout |
//! | `FaultInjected` (a drill's injected failure) | 503 Service Unavailable |
//!
//! `Retry-After` is the limiter's wait for one permit at the refusal, in
//! whole seconds rounded up (RFC 9110 allows no fraction). Retry's
//! `MaxRetriesExceeded` (every attempt's result was rejected) has no status
//! in the specification; 502 says what happened: the upstream kept answering
//! with results that were not acceptable. The body is the rejection's
//! message, as plain text.

use axum_core::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use crate::error::{Error, Rejection};

impl Rejection {
    /// The HTTP status this rejection answers with: 503 for
    /// `CallNotPermitted`, `BulkheadFull` and `FaultInjected`, 429 for
    /// `RequestNotPermitted`, 504 for `Timeout` and `DeadlineExceeded`, 502
    /// for `MaxRetriesExceeded` (feature `axum`).
    pub fn status(&self) -> StatusCode {
        match self {
            Rejection::CallNotPermitted(_)
            | Rejection::BulkheadFull(_)
            | Rejection::FaultInjected(_) => StatusCode::SERVICE_UNAVAILABLE,
            Rejection::RequestNotPermitted(_) => StatusCode::TOO_MANY_REQUESTS,
            Rejection::Timeout(_) | Rejection::DeadlineExceeded(_) => StatusCode::GATEWAY_TIMEOUT,
            Rejection::MaxRetriesExceeded(_) => StatusCode::BAD_GATEWAY,
        }
    }
}

/// 503 for `CallNotPermitted` and `BulkheadFull`, 429 with `Retry-After`
/// for `RequestNotPermitted`, 504 for `Timeout` and `DeadlineExceeded`, 502 for
/// `MaxRetriesExceeded`; the body is the rejection's message.
impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let status = self.status();
        let retry_after = match &self {
            Rejection::RequestNotPermitted(r) => r.retry_after(),
            _ => None,
        };
        let mut response = (
            status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            self.to_string(),
        )
            .into_response();
        if let Some(wait) = retry_after {
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// The caller's own error answers as it does itself; a rejection as
/// [`Rejection`] does. So a handler can return `Result<T, resil::Error<E>>`.
impl<E: IntoResponse> IntoResponse for Error<E> {
    fn into_response(self) -> Response {
        match self.into_result() {
            Ok(rejection) => rejection.into_response(),
            Err(inner) => inner.into_response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::bulkhead::BulkheadFull;
    use crate::deadline::DeadlineExceeded;
    use crate::rate_limiter::RequestNotPermitted;
    use crate::retry::MaxRetriesExceeded;
    use crate::time_limiter::Timeout;

    fn answer(rejection: Rejection) -> (StatusCode, Option<String>) {
        let response = rejection.into_response();
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_owned());
        (response.status(), retry_after)
    }

    #[test]
    fn each_rejection_answers_its_status() {
        let full = BulkheadFull::new("bh".into(), 3).into();
        assert_eq!(answer(full), (StatusCode::SERVICE_UNAVAILABLE, None));
        let late = Timeout::new("tl".into(), Duration::from_secs(1)).into();
        assert_eq!(answer(late), (StatusCode::GATEWAY_TIMEOUT, None));
        let exhausted = MaxRetriesExceeded::new("retry".into(), 3).into();
        assert_eq!(answer(exhausted), (StatusCode::BAD_GATEWAY, None));
        let spent = DeadlineExceeded::new("deadline", "checkout".into()).into();
        assert_eq!(answer(spent), (StatusCode::GATEWAY_TIMEOUT, None));
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        let limited = |wait| {
            answer(
                RequestNotPermitted::new("rl".into())
                    .with_retry_after(wait)
                    .into(),
            )
        };
        let status = StatusCode::TOO_MANY_REQUESTS;
        assert_eq!(limited(Duration::ZERO), (status, Some("0".into())));
        assert_eq!(limited(Duration::from_nanos(1)), (status, Some("1".into())));
        assert_eq!(limited(Duration::from_secs(2)), (status, Some("2".into())));
        assert_eq!(
            limited(Duration::from_millis(2_001)),
            (status, Some("3".into()))
        );
        // Made by hand, with no wait known: no header.
        assert_eq!(
            answer(RequestNotPermitted::new("rl".into()).into()),
            (status, None)
        );
    }

    #[test]
    fn the_callers_error_answers_as_itself() {
        let teapot: Error<StatusCode> = Error::Inner(StatusCode::IM_A_TEAPOT);
        assert_eq!(teapot.into_response().status(), StatusCode::IM_A_TEAPOT);
        let late: Error<StatusCode> = Timeout::new("tl".into(), Duration::from_secs(1)).into();
        assert_eq!(late.into_response().status(), StatusCode::GATEWAY_TIMEOUT);
    }
}
