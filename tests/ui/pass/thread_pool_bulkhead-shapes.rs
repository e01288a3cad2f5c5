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

use std::sync::Arc;

pub struct Reports {
    prefix: String,
}

impl Reports {
    #[resil::thread_pool_bulkhead(name = "pass-pool", fallback = Self::unavailable)]
    async fn export(self: Arc<Self>, id: u64) -> Result<String, DbError> {
        Ok(format!("{}-{id}", self.prefix))
    }

    async fn unavailable(self: Arc<Self>, id: u64) -> Result<String, DbError> {
        Ok(format!("{}-{id}-later", self.prefix))
    }
}

#[resil::thread_pool_bulkhead(name = "pass-pool-sync")]
fn checksum(data: Vec<u8>) -> Result<u32, DbError> {
    Ok(data.iter().map(|b| u32::from(*b)).sum())
}

fn main() {
    assert_eq!(checksum(vec![1, 2]), Ok(3));
    let _future = Arc::new(Reports { prefix: "r".into() }).export(1);
}
