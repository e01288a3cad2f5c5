use std::time::Duration;

#[derive(Debug)]
pub enum ApiError {
    Throttled,
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for ApiError {
    fn from(r: resil::Rejection) -> Self {
        ApiError::Rejected(r)
    }
}

// `retry_after` answers `Option<Duration>`: `None` when the error says nothing.
fn retry_after(_: &ApiError) -> Duration {
    Duration::from_secs(1)
}

#[resil::retry(name = "quote", retry_after = retry_after)]
fn quote() -> Result<u32, ApiError> {
    Err(ApiError::Throttled)
}

fn main() {}
