//! `key = expr` on every attribute, over arguments, fields and methods.

use std::fmt;
use std::sync::Arc;

#[derive(Debug)]
pub enum ApiError {
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for ApiError {
    fn from(r: resil::Rejection) -> Self {
        ApiError::Rejected(r)
    }
}

/// A key type of the user's own.
pub struct Region(&'static str);

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

pub struct Shard {
    id: u32,
}

impl Shard {
    #[resil::circuit_breaker(name = "shard", key = self.id)]
    #[resil::retry(name = "shard", key = self.id)]
    pub fn read(&self, at: u64) -> Result<u64, ApiError> {
        Ok(at + u64::from(self.id))
    }

    #[resil::bulkhead(name = "shard-async", key = self.id)]
    pub async fn read_async(self: Arc<Self>, at: u64) -> Result<u64, ApiError> {
        Ok(at)
    }
}

#[resil::rate_limiter(name = "region", key = region, permits = 2)]
#[resil::bulkhead(name = "region", key = region.0.len())]
fn in_region(region: &Region, n: u32) -> Result<u32, ApiError> {
    Ok(n)
}

// an owned key moved into the body afterwards
#[resil::retry(name = "tenant", key = tenant)]
#[resil::time_limiter(name = "tenant", key = tenant)]
#[resil::bulkhead(name = "tenant", key = tenant)]
async fn for_tenant(tenant: String) -> Result<String, ApiError> {
    Ok(tenant)
}

#[resil::thread_pool_bulkhead(name = "export", key = tenant)]
fn export(tenant: String) -> Result<usize, ApiError> {
    Ok(tenant.len())
}

fn main() {
    let shard = Shard { id: 3 };
    let _ = shard.read(1);
    let _ = in_region(&Region("eu"), 1);
    let _ = export("acme".to_owned());
    let _ = for_tenant("acme".to_owned());
    let _ = Arc::new(shard).read_async(2);
}
