//! Cross-checks between the attributes and the function they protect, and
//! the kinds of a `derive(Classify)` enum: one small function per rule, each
//! reporting into the [`Ctxt`].

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;

use crate::ast::{Func, Passing, Variant, tokens_text};
use crate::attr::{Aspect, AspectArgs};
use crate::ctxt::Ctxt;

/// Checks every rule; the errors end up in `cx`.
pub(crate) fn chain(cx: &Ctxt, func: &Func) {
    let layers = &func.layers;
    for args in layers {
        name(cx, args);
    }
    one_bulkhead(cx, layers);
    not_const(cx, func);
    returns_result(cx, func);
    let has = |a: Aspect| layers.iter().find(|l| l.aspect == a);
    if let Some(tl) = has(Aspect::TimeLimiter) {
        time_limiter_is_async(cx, func, tl);
    }
    if has(Aspect::ThreadPoolBulkhead).is_some() {
        pool_arguments_are_owned(cx, func);
        pool_body_does_not_await(cx, func);
    }
    if let Some(hedge) = has(Aspect::Hedge) {
        hedge_is_async(cx, func, hedge);
    }
    if let Some(again) = layers.iter().find(|l| l.aspect.calls_again()) {
        async_retry_has_no_unique_borrows(cx, func, again.aspect);
    }
}

/// `name` is given, and is a valid instance name: non-empty, ASCII letters,
/// digits, `-` and `_` only (what resilience.toml keys and environment
/// overrides can carry).
fn name(cx: &Ctxt, args: &AspectArgs) {
    let owner = args.aspect.attr_name();
    if args.aspect == Aspect::Deadline {
        match (&args.name, &args.timeout) {
            (Some(_), Some((lit, _))) => {
                cx.error_spanned_by(
                    lit,
                    "`#[deadline]` takes `name` (its timeout set in resilience.toml) or `timeout` (fixed here), not both",
                );
                return;
            }
            (None, Some(_)) => return,
            (None, None) if !args.name_attempted => {
                cx.syn_error(args.error(
                    "missing `name` or `timeout` in `#[deadline]`; expected `#[deadline(name = \"checkout\")]` or `#[deadline(timeout = \"800ms\")]`",
                ));
                return;
            }
            _ => {}
        }
    }
    let Some(lit) = &args.name else {
        if args.name_attempted {
            return;
        }
        cx.syn_error(args.error(format!(
            "missing `name` in `#[{owner}]`; expected `#[{owner}(name = \"inventory-query\")]`"
        )));
        return;
    };
    let value = lit.value();
    if value.is_empty() {
        cx.error_spanned_by(lit, "instance name must not be empty");
    } else if let Some(bad) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        cx.error_spanned_by(
            lit,
            format!(
                "instance name `{value}` may contain only ASCII letters, digits, `-` and `_`; found {bad:?}"
            ),
        );
    }
}

/// A function has one bulkhead: a semaphore one or a thread pool
/// (Resilience4j's single `@Bulkhead(type = ...)`).
fn one_bulkhead(cx: &Ctxt, layers: &[AspectArgs]) {
    let semaphore = layers.iter().any(|l| l.aspect == Aspect::Bulkhead);
    if let Some(pool) = layers
        .iter()
        .find(|l| l.aspect == Aspect::ThreadPoolBulkhead)
        && semaphore
    {
        cx.syn_error(pool.error(
            "`#[bulkhead]` and `#[thread_pool_bulkhead]` take the same place in the chain; use one of them",
        ));
    }
}

/// A `const fn` cannot call the primitives.
fn not_const(cx: &Ctxt, func: &Func) {
    if let Some(c) = &func.item.sig.constness {
        cx.error_spanned_by(c, "resil attributes cannot protect a `const fn`");
    }
    if let Some(v) = &func.item.sig.variadic {
        cx.error_spanned_by(v, "resil attributes cannot protect a variadic function");
    }
}

/// The function returns `Result<T, E>`: rejections and fallbacks need an error channel.
fn returns_result(cx: &Ctxt, func: &Func) {
    if let Err(err) = &func.output {
        cx.syn_error(err.clone());
    }
}

/// A time limiter stops waiting for a future; a sync function cannot be
/// stopped (Resilience4j requires a `CompletionStage` too).
fn time_limiter_is_async(cx: &Ctxt, func: &Func, tl: &AspectArgs) {
    if !func.is_async() {
        cx.syn_error(syn::Error::new(
            func.item.sig.fn_token.span,
            format!(
                "`#[time_limiter]` needs an `async fn`: a sync call cannot be timed out; make `{}` async or remove `#[time_limiter(name = {:?})]`",
                func.item.sig.ident,
                tl.name.as_ref().map(|n| n.value()).unwrap_or_default(),
            ),
        ));
    }
}

/// A hedge runs attempts side by side; a blocking call has nothing to run
/// beside it.
fn hedge_is_async(cx: &Ctxt, func: &Func, hedge: &AspectArgs) {
    if !func.is_async() {
        cx.syn_error(syn::Error::new(
            func.item.sig.fn_token.span,
            format!(
                "`#[hedge]` needs an `async fn`: a blocking call cannot run beside another attempt of itself; make `{}` async or remove `#[hedge(name = {:?})]`",
                func.item.sig.ident,
                hedge.name.as_ref().map(|n| n.value()).unwrap_or_default(),
            ),
        ));
    }
}

/// The thread-pool bulkhead runs the body on one of its threads: borrowed
/// arguments cannot go there (`Send` and `'static` of owned ones are checked
/// by the compiler through `__private::PoolArg`).
fn pool_arguments_are_owned(cx: &Ctxt, func: &Func) {
    if let Some(r) = &func.receiver
        && r.passing != Passing::Owned
    {
        cx.syn_error(syn::Error::new(
            r.span,
            "`#[thread_pool_bulkhead]` runs the body on another thread, which cannot borrow the receiver; take `self: Arc<Self>` (or `self`)",
        ));
    }
    for p in &func.params {
        if p.passing != Passing::Owned {
            cx.syn_error(syn::Error::new(
                p.span,
                format!(
                    "`#[thread_pool_bulkhead]` runs the body on another thread, which cannot borrow `{}`; take an owned `Send + 'static` value",
                    tokens_text(p.ty.to_token_stream())
                ),
            ));
        }
    }
}

/// The pool's threads run plain code: the body of an `async fn` under a
/// thread-pool bulkhead is blocking work that the caller awaits, and cannot
/// itself `.await`.
fn pool_body_does_not_await(cx: &Ctxt, func: &Func) {
    if !func.is_async() {
        return;
    }
    if let Some(span) = find_await(func.item.block.to_token_stream()) {
        cx.syn_error(syn::Error::new(
            span,
            "`#[thread_pool_bulkhead]` runs the body on a pool thread, where it cannot `.await`; keep the blocking work in the body and await outside of it",
        ));
    }
}

/// The first `.await` outside of a nested `async` block or closure.
fn find_await(tokens: TokenStream) -> Option<proc_macro2::Span> {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut skip_next_group = false;
    for (i, tt) in tokens.iter().enumerate() {
        match tt {
            TokenTree::Ident(id) if id == "async" => skip_next_group = true,
            TokenTree::Ident(id)
                if id == "await"
                    && matches!(i.checked_sub(1).map(|j| &tokens[j]), Some(TokenTree::Punct(p)) if p.as_char() == '.') =>
            {
                return Some(id.span());
            }
            TokenTree::Group(g) => {
                if skip_next_group && g.delimiter() == proc_macro2::Delimiter::Brace {
                    skip_next_group = false;
                    continue;
                }
                if let Some(span) = find_await(g.stream()) {
                    return Some(span);
                }
            }
            TokenTree::Punct(p) if p.as_char() == ';' => skip_next_group = false,
            _ => {}
        }
    }
    None
}

/// An async retry or hedge hands each attempt a future of its own; a `&mut`
/// cannot be lent to one attempt's future and then to the next one's.
fn async_retry_has_no_unique_borrows(cx: &Ctxt, func: &Func, aspect: Aspect) {
    let owner = aspect.attr_name();
    if !func.is_async() {
        return;
    }
    if let Some(r) = &func.receiver
        && r.passing == Passing::Unique
    {
        cx.syn_error(syn::Error::new(
            r.span,
            format!("`#[{owner}]` on an `async fn` cannot lend `&mut self` to one attempt after another; take `&self` (with interior mutability){}", if aspect == Aspect::Retry { " or make the function sync" } else { "" }),
        ));
    }
    for p in &func.params {
        if p.passing == Passing::Unique {
            cx.syn_error(syn::Error::new(
                p.span,
                format!(
                    "`#[{owner}]` on an `async fn` cannot lend `{}` to one attempt after another; take a shared reference or an owned `Clone` value",
                    tokens_text(p.ty.to_token_stream())
                ),
            ));
        }
    }
}

/// The kind names of the rejections, which an error kind must not reuse:
/// resilience.toml could not tell them apart. A copy (a proc-macro crate does
/// not depend on the core) that a test holds equal to
/// `resil_core::error::REJECTION_KINDS`.
const REJECTIONS: &[&str] = &[
    "CallNotPermitted",
    "BulkheadFull",
    "RequestNotPermitted",
    "Timeout",
    "MaxRetriesExceeded",
    "DeadlineExceeded",
    "FaultInjected",
];

/// The kind of a `derive(Classify)` variant names it alone: not the kind of
/// an `earlier` variant, not a rejection's, and ASCII letters, digits, `_`
/// and `-` only (what resilience.toml's `record-errors` can carry). One
/// error per variant, for the first rule it breaks.
pub(crate) fn variant_kind(cx: &Ctxt, earlier: &[Variant], variant: &Variant) {
    let text = variant.kind.value();
    if earlier.iter().any(|v| v.kind.value() == text) {
        cx.error_spanned_by(
            variant.ident,
            format!(
                "kind `{text}` is given to two variants; name this one with `#[classify(kind = \"...\")]`"
            ),
        );
    } else if REJECTIONS.contains(&text.as_str()) {
        cx.error_spanned_by(
            variant.ident,
            format!(
                "kind `{text}` is the name of a resil rejection, and resilience.toml could not tell them apart; name this variant's kind with `#[classify(kind = \"Upstream{text}\")]`"
            ),
        );
    } else if !valid_kind(&text) {
        cx.error_spanned_by(
            &variant.kind,
            format!(
                "kind `{text}` may contain only ASCII letters, digits, `_` and `-`, and must not be empty"
            ),
        );
    }
}

fn valid_kind(kind: &str) -> bool {
    !kind.is_empty()
        && kind
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::find_await;
    use quote::quote;

    #[test]
    fn the_rejection_kinds_are_the_cores() {
        assert_eq!(super::REJECTIONS, resil::error::REJECTION_KINDS);
    }

    #[test]
    fn finds_awaits_outside_async_blocks() {
        assert!(
            find_await(quote!({
                let x = f().await;
            }))
            .is_some()
        );
        assert!(
            find_await(quote!({
                if a {
                    g(x.await)
                }
            }))
            .is_some()
        );
        assert!(
            find_await(quote!({
                let f = async move { x.await };
                spawn(f);
            }))
            .is_none()
        );
        assert!(
            find_await(quote!({
                let await_count = 1;
            }))
            .is_none()
        );
    }
}
