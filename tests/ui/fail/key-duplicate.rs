#[derive(Debug)]
pub enum ApiError {
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for ApiError {
    fn from(r: resil::Rejection) -> Self {
        ApiError::Rejected(r)
    }
}

#[resil::circuit_breaker(name = "pay", key = tenant, key = region)]
fn pay(tenant: &str, region: &str) -> Result<usize, ApiError> {
    Ok(tenant.len() + region.len())
}

fn main() {}
