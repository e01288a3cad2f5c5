#[derive(Debug)]
pub enum DbError {
    Unavailable,
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for DbError {
    fn from(r: resil::Rejection) -> Self {
        DbError::Rejected(r)
    }
}

#[resil::circuit_breaker(name = "inventory-query", fallback = degraded)]
fn query(sku: String) -> Result<u64, DbError> {
    let owned: String = sku;
    Ok(owned.len() as u64)
}

fn degraded(_sku: String) -> Result<u64, DbError> {
    Ok(0)
}

fn main() {}
