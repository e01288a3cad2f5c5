#[derive(Debug)]
pub enum ApiError {
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for ApiError {
    fn from(r: resil::Rejection) -> Self {
        ApiError::Rejected(r)
    }
}

#[resil::bulkhead(name = "pay", key = "tenant")]
fn pay(tenant: &str) -> Result<usize, ApiError> {
    Ok(tenant.len())
}

fn main() {}
