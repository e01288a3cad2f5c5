#[derive(Debug)]
pub enum ApiError {
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for ApiError {
    fn from(r: resil::Rejection) -> Self {
        ApiError::Rejected(r)
    }
}

// `permits` is the rate limiter's.
#[resil::retry(name = "export", permits = 2)]
fn export() -> Result<(), ApiError> {
    Ok(())
}

fn main() {}
