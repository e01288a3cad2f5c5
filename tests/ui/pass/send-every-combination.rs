//! Every combination of the attributes on an async fn with `Send`
//! arguments gives a `Send` future: each one is spawned on tokio (as an
//! axum handler would be), with owned and with borrowed arguments, and with
//! a fallback on its outermost layer.
#![allow(dead_code)]

use std::sync::Arc;

#[derive(Debug)]
enum Failure {
    Down,
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for Failure {
    fn from(r: resil::Rejection) -> Self {
        Failure::Rejected(r)
    }
}

async fn downstream(sku: &str) -> Result<usize, Failure> {
    if sku.is_empty() { Err(Failure::Down) } else { Ok(sku.len()) }
}

fn degraded(_sku: String, _error: resil::Error<Failure>) -> std::future::Ready<Result<usize, Failure>> {
    std::future::ready(Ok(0))
}

fn assert_send<F: std::future::Future + Send>(f: F) -> F {
    f
}

struct Inventory;

#[resil::retry(name = "send")]
async fn owned_re(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
async fn borrowed_re(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::circuit_breaker(name = "send")]
async fn owned_ci(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::circuit_breaker(name = "send")]
async fn borrowed_ci(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::rate_limiter(name = "send")]
async fn owned_ra(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::rate_limiter(name = "send")]
async fn borrowed_ra(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::time_limiter(name = "send")]
async fn owned_ti(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::time_limiter(name = "send")]
async fn borrowed_ti(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::bulkhead(name = "send")]
async fn owned_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::bulkhead(name = "send")]
async fn borrowed_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
async fn owned_re_ci(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
async fn borrowed_re_ci(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::rate_limiter(name = "send")]
async fn owned_re_ra(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::rate_limiter(name = "send")]
async fn borrowed_re_ra(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::time_limiter(name = "send")]
async fn owned_re_ti(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::time_limiter(name = "send")]
async fn borrowed_re_ti(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_re_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_re_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
async fn owned_ci_ra(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
async fn borrowed_ci_ra(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::time_limiter(name = "send")]
async fn owned_ci_ti(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::time_limiter(name = "send")]
async fn borrowed_ci_ti(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_ci_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_ci_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
async fn owned_ra_ti(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
async fn borrowed_ra_ti(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::rate_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_ra_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::rate_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_ra_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_ti_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_ti_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
async fn owned_re_ci_ra(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
async fn borrowed_re_ci_ra(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::time_limiter(name = "send")]
async fn owned_re_ci_ti(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::time_limiter(name = "send")]
async fn borrowed_re_ci_ti(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_re_ci_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_re_ci_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
async fn owned_re_ra_ti(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
async fn borrowed_re_ra_ti(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_re_ra_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_re_ra_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_re_ti_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_re_ti_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
async fn owned_ci_ra_ti(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
async fn borrowed_ci_ra_ti(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_ci_ra_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_ci_ra_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_ci_ti_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_ci_ti_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_ra_ti_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_ra_ti_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
async fn owned_re_ci_ra_ti(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
async fn borrowed_re_ci_ra_ti(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_re_ci_ra_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_re_ci_ra_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_re_ci_ti_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_re_ci_ti_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_re_ra_ti_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_re_ra_ti_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_ci_ra_ti_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_ci_ra_ti_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn owned_re_ci_ra_ti_bu(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn borrowed_re_ci_ra_ti_bu(sku: &str) -> Result<usize, Failure> {
    downstream(sku).await
}

#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::retry(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_re_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::circuit_breaker(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_ci_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::rate_limiter(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_ra_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::time_limiter(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_ti_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_re_ci_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::retry(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_re_ra_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::retry(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_re_ti_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_ci_ra_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::circuit_breaker(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_ci_ti_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_ra_ti_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_re_ci_ra_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_re_ci_ti_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::retry(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_re_ra_ti_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_ci_ra_ti_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::thread_pool_bulkhead(name = "send")]
async fn pool_re_ci_ra_ti_th(sku: String) -> Result<usize, Failure> {
    Ok(sku.len())
}

#[resil::retry(name = "send", fallback = degraded)]
#[resil::circuit_breaker(name = "send")]
#[resil::rate_limiter(name = "send")]
#[resil::time_limiter(name = "send")]
#[resil::bulkhead(name = "send")]
async fn with_fallback(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

#[resil::retry(name = "send")]
#[resil::circuit_breaker(name = "send", fallback = degraded)]
#[resil::time_limiter(name = "send")]
async fn with_inner_fallback(sku: String) -> Result<usize, Failure> {
    downstream(&sku).await
}

impl Inventory {
    #[resil::retry(name = "send")]
    #[resil::circuit_breaker(name = "send")]
    #[resil::rate_limiter(name = "send")]
    #[resil::time_limiter(name = "send")]
    #[resil::bulkhead(name = "send")]
    async fn query(self: Arc<Self>, sku: String) -> Result<usize, Failure> {
        downstream(&sku).await
    }

    #[resil::circuit_breaker(name = "send")]
    #[resil::time_limiter(name = "send")]
    async fn lookup(&self, sku: &str) -> Result<usize, Failure> {
        downstream(sku).await
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    tokio::spawn(owned_re(String::from("SKU-1")));
    let _ = assert_send(borrowed_re("SKU-1"));
    tokio::spawn(owned_ci(String::from("SKU-1")));
    let _ = assert_send(borrowed_ci("SKU-1"));
    tokio::spawn(owned_ra(String::from("SKU-1")));
    let _ = assert_send(borrowed_ra("SKU-1"));
    tokio::spawn(owned_ti(String::from("SKU-1")));
    let _ = assert_send(borrowed_ti("SKU-1"));
    tokio::spawn(owned_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_bu("SKU-1"));
    tokio::spawn(owned_re_ci(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ci("SKU-1"));
    tokio::spawn(owned_re_ra(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ra("SKU-1"));
    tokio::spawn(owned_re_ti(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ti("SKU-1"));
    tokio::spawn(owned_re_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_bu("SKU-1"));
    tokio::spawn(owned_ci_ra(String::from("SKU-1")));
    let _ = assert_send(borrowed_ci_ra("SKU-1"));
    tokio::spawn(owned_ci_ti(String::from("SKU-1")));
    let _ = assert_send(borrowed_ci_ti("SKU-1"));
    tokio::spawn(owned_ci_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_ci_bu("SKU-1"));
    tokio::spawn(owned_ra_ti(String::from("SKU-1")));
    let _ = assert_send(borrowed_ra_ti("SKU-1"));
    tokio::spawn(owned_ra_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_ra_bu("SKU-1"));
    tokio::spawn(owned_ti_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_ti_bu("SKU-1"));
    tokio::spawn(owned_re_ci_ra(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ci_ra("SKU-1"));
    tokio::spawn(owned_re_ci_ti(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ci_ti("SKU-1"));
    tokio::spawn(owned_re_ci_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ci_bu("SKU-1"));
    tokio::spawn(owned_re_ra_ti(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ra_ti("SKU-1"));
    tokio::spawn(owned_re_ra_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ra_bu("SKU-1"));
    tokio::spawn(owned_re_ti_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ti_bu("SKU-1"));
    tokio::spawn(owned_ci_ra_ti(String::from("SKU-1")));
    let _ = assert_send(borrowed_ci_ra_ti("SKU-1"));
    tokio::spawn(owned_ci_ra_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_ci_ra_bu("SKU-1"));
    tokio::spawn(owned_ci_ti_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_ci_ti_bu("SKU-1"));
    tokio::spawn(owned_ra_ti_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_ra_ti_bu("SKU-1"));
    tokio::spawn(owned_re_ci_ra_ti(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ci_ra_ti("SKU-1"));
    tokio::spawn(owned_re_ci_ra_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ci_ra_bu("SKU-1"));
    tokio::spawn(owned_re_ci_ti_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ci_ti_bu("SKU-1"));
    tokio::spawn(owned_re_ra_ti_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ra_ti_bu("SKU-1"));
    tokio::spawn(owned_ci_ra_ti_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_ci_ra_ti_bu("SKU-1"));
    tokio::spawn(owned_re_ci_ra_ti_bu(String::from("SKU-1")));
    let _ = assert_send(borrowed_re_ci_ra_ti_bu("SKU-1"));
    tokio::spawn(pool_th(String::from("SKU-1")));
    tokio::spawn(pool_re_th(String::from("SKU-1")));
    tokio::spawn(pool_ci_th(String::from("SKU-1")));
    tokio::spawn(pool_ra_th(String::from("SKU-1")));
    tokio::spawn(pool_ti_th(String::from("SKU-1")));
    tokio::spawn(pool_re_ci_th(String::from("SKU-1")));
    tokio::spawn(pool_re_ra_th(String::from("SKU-1")));
    tokio::spawn(pool_re_ti_th(String::from("SKU-1")));
    tokio::spawn(pool_ci_ra_th(String::from("SKU-1")));
    tokio::spawn(pool_ci_ti_th(String::from("SKU-1")));
    tokio::spawn(pool_ra_ti_th(String::from("SKU-1")));
    tokio::spawn(pool_re_ci_ra_th(String::from("SKU-1")));
    tokio::spawn(pool_re_ci_ti_th(String::from("SKU-1")));
    tokio::spawn(pool_re_ra_ti_th(String::from("SKU-1")));
    tokio::spawn(pool_ci_ra_ti_th(String::from("SKU-1")));
    tokio::spawn(pool_re_ci_ra_ti_th(String::from("SKU-1")));
    tokio::spawn(with_fallback(String::from("SKU-1")));
    tokio::spawn(with_inner_fallback(String::from("SKU-1")));
    tokio::spawn(Arc::new(Inventory).query(String::from("SKU-1")));
    let inventory = Inventory;
    let _ = assert_send(inventory.lookup("SKU-1"));
}
