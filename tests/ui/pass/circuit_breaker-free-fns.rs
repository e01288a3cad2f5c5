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

#[resil::circuit_breaker(name = "pass-free-sync")]
fn sync_query(sku: u64) -> Result<u64, DbError> {
    Ok(sku)
}

#[resil::circuit_breaker(name = "pass-free-async")]
async fn async_query(sku: u64) -> Result<u64, DbError> {
    Ok(sku)
}

fn main() {
    assert_eq!(sync_query(1), Ok(1));
    let _future = async_query(1);
}
