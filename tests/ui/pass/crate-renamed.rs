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

extern crate resil as my_resil;

#[my_resil::circuit_breaker(name = "pass-renamed", crate = "my_resil")]
fn query(sku: u64) -> Result<u64, DbError> {
    Ok(sku)
}

#[derive(Debug, my_resil::Classify)]
#[classify(crate = "my_resil")]
pub enum Kinds {
    One,
}

fn main() {
    assert_eq!(query(1), Ok(1));
}
