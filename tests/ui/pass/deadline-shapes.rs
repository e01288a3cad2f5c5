//! `#[deadline]` in its two forms, sync and async, alone and outside the
//! other attributes in any source order, on methods and with a fallback.

use std::sync::Arc;

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

#[resil::deadline(name = "checkout")]
async fn named(cart: u64) -> Result<u64, DbError> {
    Ok(cart)
}

#[resil::deadline(timeout = "800ms")]
fn fixed_sync(cart: u64) -> Result<u64, DbError> {
    Ok(cart)
}

#[resil::deadline(timeout = "250")]
async fn whole_milliseconds(cart: u64) -> Result<u64, DbError> {
    Ok(cart)
}

// the source order does not matter: the deadline is outermost
#[resil::retry(name = "checkout")]
#[resil::circuit_breaker(name = "checkout")]
#[resil::deadline(name = "checkout", fallback = degraded)]
#[resil::time_limiter(name = "checkout")]
async fn stacked(cart: String) -> Result<u64, DbError> {
    Ok(cart.len() as u64)
}

async fn degraded(_cart: String, _e: resil::Error<DbError>) -> Result<u64, DbError> {
    Ok(0)
}

struct Shop;

impl Shop {
    #[resil::deadline(timeout = "1m 30s")]
    #[resil::bulkhead(name = "shop")]
    fn by_ref(&self, cart: &str) -> Result<usize, DbError> {
        Ok(cart.len())
    }

    #[resil::deadline(name = "shop")]
    #[resil::hedge(name = "shop")]
    async fn shared(self: Arc<Self>, cart: u64) -> Result<u64, DbError> {
        Ok(cart)
    }
}

fn main() {
    let _ = (named, fixed_sync, whole_milliseconds, stacked, Shop::by_ref, Shop::shared);
}
