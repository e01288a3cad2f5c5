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
async fn query(buffer: &mut Vec<u8>) -> Result<usize, DbError> {
    buffer.push(1);
    Ok(buffer.len())
}

fn main() {}
