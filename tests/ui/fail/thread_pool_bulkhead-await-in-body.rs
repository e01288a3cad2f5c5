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

#[resil::thread_pool_bulkhead(name = "report-export")]
async fn export(id: u64) -> Result<u64, DbError> {
    let rows = fetch(id).await?;
    Ok(rows)
}

async fn fetch(id: u64) -> Result<u64, DbError> {
    Ok(id)
}

fn main() {}
