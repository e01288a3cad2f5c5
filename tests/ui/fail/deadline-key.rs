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

#[resil::deadline(name = "checkout", key = cart)]
async fn checkout(cart: u64) -> Result<u64, DbError> {
    Ok(cart)
}

fn main() {}
