//! Error collection (serde's `Ctxt`): every mistake is pushed, and one build
//! reports them all.

use std::cell::RefCell;
use std::fmt::Display;

use quote::ToTokens;

use crate::symbol::Symbol;

/// Collects errors while parsing and validating. [`Ctxt::check`] must be
/// called before it is dropped.
pub(crate) struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// An error spanned on the tokens of `obj`.
    pub(crate) fn error_spanned_by<A: ToTokens, T: Display>(&self, obj: A, msg: T) {
        self.syn_error(syn::Error::new_spanned(obj.into_token_stream(), msg));
    }

    /// An error already built.
    pub(crate) fn syn_error(&self, err: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("Ctxt used after check")
            .push(err);
    }

    /// Consumes the collected errors, folded into one.
    pub(crate) fn check(self) -> syn::Result<()> {
        let mut errors = self
            .errors
            .borrow_mut()
            .take()
            .expect("Ctxt checked twice")
            .into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for rest in errors {
            combined.combine(rest);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("forgot to check for errors");
        }
    }
}

/// A value given at most once: the second occurrence is an error spanned on it.
pub(crate) struct Attr<'c, T> {
    cx: &'c Ctxt,
    /// The attribute the key belongs to, for the message (`circuit_breaker`).
    owner: &'static str,
    name: Symbol,
    value: Option<T>,
}

impl<'c, T> Attr<'c, T> {
    pub(crate) fn none(cx: &'c Ctxt, owner: &'static str, name: Symbol) -> Self {
        Attr {
            cx,
            owner,
            name,
            value: None,
        }
    }

    /// Sets the value; `obj` is what a duplicate is reported on.
    pub(crate) fn set<A: ToTokens>(&mut self, obj: A, value: T) {
        if self.value.is_some() {
            let msg = format!(
                "duplicate `{}` argument in `#[{}]`; give it once",
                self.name, self.owner
            );
            self.cx.error_spanned_by(obj, msg);
        } else {
            self.value = Some(value);
        }
    }

    pub(crate) fn get(self) -> Option<T> {
        self.value
    }
}
