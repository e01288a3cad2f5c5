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
fn export(id: std::rc::Rc<String>) -> Result<usize, DbError> {
    Ok(id.len())
}

fn main() {}
