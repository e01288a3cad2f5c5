//! What the Spring Cloud facade tests share: registries loaded offline
//! from a file's text, a factory on them, and a breaker's window and timeout.
#![allow(dead_code)] // each test binary uses a part

use std::sync::Arc;
use std::time::Duration;

use resil::cloud::CircuitBreakerFactory;
use resil_config::{Registries, Resilience};

pub(crate) fn load(
    name: &str,
    text: &str,
    env: &[(&str, &str)],
) -> Result<Registries, resil::config::InitError> {
    let vars: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Resilience::builder()
        .file_contents(name, text)
        .env_vars(vars)
        .offline(true)
        .load()
        .map(|r| r.into_parts().0)
}

pub(crate) fn registries(toml: &str) -> Arc<Registries> {
    Arc::new(load("resilience.toml", toml, &[]).expect("a valid file"))
}

pub(crate) fn factory(toml: &str) -> CircuitBreakerFactory {
    CircuitBreakerFactory::builder()
        .registries(registries(toml))
        .build()
}

pub(crate) fn window(b: &resil::cloud::CloudCircuitBreaker) -> u32 {
    b.circuit_breaker().config().sliding_window_size()
}

pub(crate) fn timeout(b: &resil::cloud::CloudCircuitBreaker) -> Duration {
    b.time_limiter().unwrap().config().timeout_duration()
}
