#[derive(Debug)]
pub enum ApiError {
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for ApiError {
    fn from(r: resil::Rejection) -> Self {
        ApiError::Rejected(r)
    }
}

/// Should return a `TransitionCheckResult`.
fn on_result(_result: Result<&usize, &resil::Error<ApiError>>) -> bool {
    false
}

#[resil::circuit_breaker(name = "pay", transition_on_result = on_result)]
fn pay(tenant: &str) -> Result<usize, ApiError> {
    Ok(tenant.len())
}

fn main() {}
