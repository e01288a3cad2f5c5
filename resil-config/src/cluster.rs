//! The fleet's backends, one per URL and process, behind the `redis` feature.

use std::sync::Arc;

use resil_core::cluster::ClusterBackend;

/// Checks a `cluster-url` value.
#[cfg(feature = "redis")]
pub(crate) fn check_url(url: &str) -> Result<(), String> {
    resil_redis::check_url(url)
}

/// Checks a `cluster-url` value: without the `redis` feature, none is usable.
#[cfg(not(feature = "redis"))]
pub(crate) fn check_url(_: &str) -> Result<(), String> {
    Err(NO_FEATURE.to_owned())
}

#[cfg(not(feature = "redis"))]
const NO_FEATURE: &str = "needs resil's `redis` feature, which this build does not have: the Redis client is not compiled in (`resil = { features = [\"redis\"] }`)";

/// The backend for `url`, shared by every instance of this process that names it.
#[cfg(feature = "redis")]
pub(crate) fn backend(url: &str) -> Result<Arc<dyn ClusterBackend>, String> {
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    static BACKENDS: Mutex<BTreeMap<String, Arc<dyn ClusterBackend>>> = Mutex::new(BTreeMap::new());
    let mut backends = crate::sync::lock(&BACKENDS);
    if let Some(b) = backends.get(url) {
        return Ok(Arc::clone(b));
    }
    let b = resil_redis::RedisBackend::connect(url).map_err(|e| e.to_string())?;
    backends.insert(url.to_owned(), Arc::clone(&b));
    Ok(b)
}

/// No backend without the `redis` feature (the URL was refused when read).
#[cfg(not(feature = "redis"))]
pub(crate) fn backend(_: &str) -> Result<Arc<dyn ClusterBackend>, String> {
    Err(NO_FEATURE.to_owned())
}
