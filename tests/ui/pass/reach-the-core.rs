//! The arguments that reach the rest of the core, on sync and async functions,
//! free and in an impl.
use std::time::Duration;

use resil::Error;
use resil::circuit_breaker::TransitionCheckResult;

#[derive(Debug)]
pub enum ApiError {
    Throttled(u64),
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for ApiError {
    fn from(r: resil::Rejection) -> Self {
        ApiError::Rejected(r)
    }
}

fn retry_after(e: &ApiError) -> Option<Duration> {
    match e {
        ApiError::Throttled(secs) => Some(Duration::from_secs(*secs)),
        ApiError::Rejected(_) => None,
    }
}

fn release(_attempt: u32, _lease: &u32) {}

fn is_pending(n: &u32) -> bool {
    *n == 0
}

fn on_result(_: Result<&u32, &Error<ApiError>>) -> TransitionCheckResult {
    TransitionCheckResult::NoTransition
}

pub struct Client;

impl Client {
    fn retry_after(e: &ApiError) -> Option<Duration> {
        retry_after(e)
    }

    #[resil::retry(name = "client", retry_after = Self::retry_after)]
    #[resil::circuit_breaker(name = "client", transition_on_result = on_result)]
    #[resil::rate_limiter(name = "client", permits = 2)]
    pub async fn get(&self, n: u32) -> Result<u32, ApiError> {
        Ok(n)
    }
}

#[resil::retry(
    name = "lease",
    retry_after = retry_after,
    retry_on_result = is_pending,
    consume_result = release
)]
#[resil::rate_limiter(name = "lease", permits = 1)]
fn lease(n: u32) -> Result<u32, ApiError> {
    Ok(n)
}

fn main() {
    let _ = lease(1);
    let _ = Client.get(1);
}
