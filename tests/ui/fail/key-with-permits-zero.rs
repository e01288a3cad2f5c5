#[derive(Debug)]
pub enum ApiError {
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for ApiError {
    fn from(r: resil::Rejection) -> Self {
        ApiError::Rejected(r)
    }
}

#[resil::rate_limiter(name = "pay", key = tenant, permits = 0)]
fn pay(tenant: &str) -> Result<usize, ApiError> {
    Ok(tenant.len())
}

fn main() {}
