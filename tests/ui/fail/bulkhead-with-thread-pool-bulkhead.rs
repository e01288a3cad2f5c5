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

#[resil::bulkhead(name = "inventory-query")]
#[resil::thread_pool_bulkhead(name = "inventory-query")]
fn query(sku: u64) -> Result<u64, DbError> {
    Ok(sku)
}

fn main() {}
