#[derive(Debug)]
pub enum ApiError {
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for ApiError {
    fn from(r: resil::Rejection) -> Self {
        ApiError::Rejected(r)
    }
}

/// Should be `fn(u32, &usize)`: the attempt number comes first.
fn release(_value: &usize) {}

#[resil::retry(name = "pay", consume_result = release)]
fn pay(tenant: &str) -> Result<usize, ApiError> {
    Ok(tenant.len())
}

fn main() {}
