#[derive(Debug)]
pub enum ApiError {
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for ApiError {
    fn from(r: resil::Rejection) -> Self {
        ApiError::Rejected(r)
    }
}

/// A tenant id that does not implement `Display`.
#[derive(Debug)]
pub struct Tenant(u32);

#[resil::circuit_breaker(name = "pay", key = tenant)]
fn pay(tenant: Tenant) -> Result<u32, ApiError> {
    Ok(tenant.0)
}

fn main() {}
