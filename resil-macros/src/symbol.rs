//! The attributes' names and the keys of their arguments, compared as
//! `Symbol`s (serde's `symbol.rs`).

use std::fmt;

use syn::{Ident, Path};

/// An attribute's name or an argument key.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) struct Symbol(pub(crate) &'static str);

pub(crate) const DEADLINE: Symbol = Symbol("deadline");
pub(crate) const RETRY: Symbol = Symbol("retry");
pub(crate) const HEDGE: Symbol = Symbol("hedge");
pub(crate) const CIRCUIT_BREAKER: Symbol = Symbol("circuit_breaker");
pub(crate) const RATE_LIMITER: Symbol = Symbol("rate_limiter");
pub(crate) const TIME_LIMITER: Symbol = Symbol("time_limiter");
pub(crate) const BULKHEAD: Symbol = Symbol("bulkhead");
pub(crate) const THREAD_POOL_BULKHEAD: Symbol = Symbol("thread_pool_bulkhead");
/// The crate a sibling attribute's path may start with (`resil::retry`).
pub(crate) const RESIL: Symbol = Symbol("resil");

pub(crate) const NAME: Symbol = Symbol("name");
pub(crate) const FALLBACK: Symbol = Symbol("fallback");
pub(crate) const CRATE: Symbol = Symbol("crate");
pub(crate) const RECORD: Symbol = Symbol("record");
pub(crate) const IGNORE: Symbol = Symbol("ignore");
pub(crate) const RECORD_RESULT: Symbol = Symbol("record_result");
pub(crate) const RETRY_ON: Symbol = Symbol("retry_on");
pub(crate) const RETRY_ON_RESULT: Symbol = Symbol("retry_on_result");
pub(crate) const RETRY_AFTER: Symbol = Symbol("retry_after");
pub(crate) const CONSUME_RESULT: Symbol = Symbol("consume_result");
pub(crate) const TRANSITION_ON_RESULT: Symbol = Symbol("transition_on_result");
pub(crate) const PERMITS: Symbol = Symbol("permits");
/// `timeout = "800ms"` of `#[deadline]`: a deadline without a table.
pub(crate) const TIMEOUT: Symbol = Symbol("timeout");
/// `key = expr`: one instance per distinct key.
pub(crate) const KEY: Symbol = Symbol("key");
/// `#[classify(kind = "...")]` on a variant of a `#[derive(Classify)]` enum.
pub(crate) const CLASSIFY: Symbol = Symbol("classify");
pub(crate) const KIND: Symbol = Symbol("kind");

/// Every key some resil attribute accepts, for "did you mean" and "belongs to".
pub(crate) const ALL: &[Symbol] = &[
    NAME,
    FALLBACK,
    CRATE,
    RECORD,
    IGNORE,
    RECORD_RESULT,
    RETRY_ON,
    RETRY_ON_RESULT,
    RETRY_AFTER,
    CONSUME_RESULT,
    TRANSITION_ON_RESULT,
    PERMITS,
    KEY,
    TIMEOUT,
];

impl PartialEq<Symbol> for Ident {
    fn eq(&self, word: &Symbol) -> bool {
        self == word.0
    }
}

impl PartialEq<Symbol> for &Ident {
    fn eq(&self, word: &Symbol) -> bool {
        *self == word.0
    }
}

impl PartialEq<Symbol> for Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl PartialEq<Symbol> for &Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}
