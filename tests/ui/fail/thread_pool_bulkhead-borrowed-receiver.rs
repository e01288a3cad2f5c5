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

struct Reports;

impl Reports {
    #[resil::thread_pool_bulkhead(name = "report-export")]
    fn export(&self, id: u64) -> Result<u64, DbError> {
        Ok(id)
    }
}

fn main() {}
