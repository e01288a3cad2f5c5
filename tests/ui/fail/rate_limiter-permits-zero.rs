#[derive(Debug)]
pub enum ApiError {
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for ApiError {
    fn from(r: resil::Rejection) -> Self {
        ApiError::Rejected(r)
    }
}

#[resil::rate_limiter(name = "export", permits = 0)]
fn export() -> Result<(), ApiError> {
    Ok(())
}

fn main() {}
