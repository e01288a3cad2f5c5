//! What the retry tests share: the events and counts they expect, a retry
//! on a manual clock, calls through the retry alone, and the errors of an
//! inventory service with the classifiers that name them.

use std::future::Future;
use std::time::Duration;

use resil_core::chain::{Call, ChainFuture, Ctx, Lift, Stack, SyncNode};
use resil_core::clock::ManualClock;
use resil_core::retry::{Retry, RetryClassifier, RetryConfig, RetryEvent, RetryMetrics};
use resil_core::{Classify, Error};

use super::{Recorder, ms};

pub fn retry_ev(n: u32, wait: u64, kind: Option<&'static str>) -> RetryEvent {
    RetryEvent::Retry {
        number_of_retry_attempts: n,
        wait_interval: ms(wait),
        error_kind: kind,
    }
}

pub fn error_ev(n: u32, kind: Option<&'static str>) -> RetryEvent {
    RetryEvent::Error {
        number_of_retry_attempts: n,
        error_kind: kind,
    }
}

/// `[successful without, successful with, failed without, failed with, total attempts]`.
pub fn counts(m: RetryMetrics) -> [u64; 5] {
    [
        m.number_of_successful_calls_without_retry_attempt(),
        m.number_of_successful_calls_with_retry_attempt(),
        m.number_of_failed_calls_without_retry_attempt(),
        m.number_of_failed_calls_with_retry_attempt(),
        m.number_of_total_calls(),
    ]
}

/// `f` through the retry alone, classified by `c`.
pub fn call_with<T, E>(
    retry: &Retry,
    c: &RetryClassifier<T, E>,
    f: impl FnMut() -> Result<T, E>,
) -> Result<T, Error<E>> {
    Stack::new()
        .retry(retry.part(c))
        .around(Lift(f))
        .call(&mut Ctx::new())
}

/// `f`, which fails with `resil::Error` (an inner layer's), through the
/// retry alone.
pub fn decorate<T, E>(
    retry: &Retry,
    c: &RetryClassifier<T, E>,
    f: impl FnMut() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    Stack::new()
        .retry(retry.part(c))
        .around(Call(f))
        .call(&mut Ctx::new())
}

/// The futures that `f` returns through the retry alone; the first attempt
/// starts now.
pub fn call_async_with<'a, T, E, F, Fut>(
    retry: &'a Retry,
    c: &'a RetryClassifier<T, E>,
    f: F,
) -> impl Future<Output = Result<T, Error<E>>> + use<'a, T, E, F, Fut>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    ChainFuture::new(Stack::new().retry(retry.part(c)).around(Lift(f)))
}

pub fn manual(config: RetryConfig) -> (Retry, ManualClock, Recorder<RetryEvent>) {
    let clock = ManualClock::new();
    let retry = Retry::with_clock("inventory-query", config, clock.clone());
    let rec = Recorder::attach(retry.event_publisher());
    (retry, clock, rec)
}

#[derive(Debug, Clone, PartialEq)]
pub enum InvError {
    Transient,
    Fatal,
    OutOfStock,
    Throttled { retry_after: Duration },
}

impl Classify for InvError {
    const KINDS: &'static [&'static str] = &["Transient", "Fatal", "OutOfStock", "Throttled"];
    fn kind(&self) -> &'static str {
        match self {
            InvError::Transient => "Transient",
            InvError::Fatal => "Fatal",
            InvError::OutOfStock => "OutOfStock",
            InvError::Throttled { .. } => "Throttled",
        }
    }
}

pub const CLASSIFIED: RetryClassifier<u32, InvError> = RetryClassifier::classified();

pub const ACCEPTED: RetryClassifier<u32, InvError> =
    RetryClassifier::classified().retry_on_result(|status| *status == 202);
