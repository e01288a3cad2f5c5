#[derive(Debug, PartialEq)]
pub enum DbError {
    Unavailable,
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for DbError {
    fn from(r: resil::Rejection) -> Self {
        DbError::Rejected(r)
    }
}

#[resil::retry(name = "upload", fallback = later)]
async fn upload(size: u64) -> Result<u64, DbError> {
    Ok(size)
}

async fn later(_error: resil::Error<DbError>, size: u64) -> Result<u64, DbError> {
    Ok(size)
}

fn main() {}
