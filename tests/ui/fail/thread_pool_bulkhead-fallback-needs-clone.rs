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

pub struct Report(u64);

#[resil::thread_pool_bulkhead(name = "report-export", fallback = degraded)]
fn export(report: Report) -> Result<u64, DbError> {
    Ok(report.0)
}

fn degraded(_report: Report) -> Result<u64, DbError> {
    Ok(0)
}

fn main() {}
