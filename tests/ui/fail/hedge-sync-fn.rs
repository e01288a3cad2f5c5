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

#[resil::hedge(name = "inventory-read")]
fn query(sku: u64) -> Result<u64, DbError> {
    Ok(sku)
}

fn main() {}
