//! `#[hedge]` on the shapes an async function takes: owned `Clone`
//! arguments, borrows shared by the attempts, methods, an owned receiver,
//! a key, a fallback, and the hedge among every other layer.

use std::sync::Arc;

#[derive(Debug, Clone, PartialEq)]
pub enum DbError {
    Unavailable,
    Rejected(String),
}

impl From<resil::Rejection> for DbError {
    fn from(r: resil::Rejection) -> Self {
        DbError::Rejected(r.to_string())
    }
}

#[derive(Clone)]
pub struct Query {
    pub sku: String,
}

#[resil::hedge(name = "pass-hedge")]
async fn read(query: Query, mut attempts: u32, (a, b): (u8, u8)) -> Result<usize, DbError> {
    attempts += 1;
    Ok(query.sku.len() + attempts as usize + usize::from(a + b))
}

#[resil::hedge(name = "pass-hedge-borrowed", key = region)]
async fn read_borrowed(region: &str, skus: &[String]) -> Result<usize, DbError> {
    Ok(region.len() + skus.len())
}

async fn stale(_query: Query, _error: resil::Error<DbError>) -> Result<usize, DbError> {
    Ok(0)
}

// every layer: the hedge inside the retry, outside the others
#[resil::time_limiter(name = "pass-hedge-all")]
#[resil::bulkhead(name = "pass-hedge-all")]
#[resil::hedge(name = "pass-hedge-all", fallback = stale)]
#[resil::rate_limiter(name = "pass-hedge-all")]
#[resil::circuit_breaker(name = "pass-hedge-all")]
#[resil::retry(name = "pass-hedge-all")]
async fn read_everything(query: Query) -> Result<usize, DbError> {
    Ok(query.sku.len())
}

pub struct Catalog {
    pub prefix: String,
}

impl Catalog {
    #[resil::hedge(name = "pass-hedge-ref")]
    async fn price(&self, sku: &str, count: u32) -> Result<usize, DbError> {
        Ok(self.prefix.len() + sku.len() + count as usize)
    }

    #[resil::hedge(name = "pass-hedge-arc")]
    async fn shared(self: Arc<Self>, sku: String) -> Result<usize, DbError> {
        Ok(self.prefix.len() + sku.len())
    }
}

fn assert_send<T: Send>(_: &T) {}

fn main() {
    let query = Query { sku: "SKU-1".to_owned() };
    let future = read(query.clone(), 0, (1, 2));
    assert_send(&future);
    drop(future);
    let skus = vec!["SKU-1".to_owned()];
    drop(read_borrowed("eu", &skus));
    drop(read_everything(query));
    let catalog = Arc::new(Catalog { prefix: "p".to_owned() });
    drop(catalog.price("SKU-2", 3));
    drop(catalog.clone().shared("SKU-3".to_owned()));
}
