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

trait Inventory {
    #[resil::circuit_breaker(name = "inventory-query")]
    fn query(&self, sku: u64) -> Result<u64, DbError>;
}

fn main() {}
