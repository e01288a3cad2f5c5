//! Parsing: the arguments of each resil attribute, and the annotated function.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, ExprPath, Lit, LitStr, Path, Token};

use crate::ctxt::{Attr, Ctxt};
use crate::symbol::{self, Symbol};

/// One resil attribute.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Aspect {
    Retry,
    CircuitBreaker,
    RateLimiter,
    TimeLimiter,
    Bulkhead,
    ThreadPoolBulkhead,
}

/// The order of the aspects, outermost first: Resilience4j's default
/// `Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(fn)))))`. The
/// thread-pool bulkhead takes the bulkhead's place (Resilience4j's
/// `@Bulkhead(type = THREADPOOL)`); a function has one or the other.
pub(crate) const ORDER: [Aspect; 6] = [
    Aspect::Retry,
    Aspect::CircuitBreaker,
    Aspect::RateLimiter,
    Aspect::TimeLimiter,
    Aspect::Bulkhead,
    Aspect::ThreadPoolBulkhead,
];

impl Aspect {
    /// The attribute's name, as users write it.
    pub(crate) fn attr_name(self) -> &'static str {
        match self {
            Aspect::Retry => "retry",
            Aspect::CircuitBreaker => "circuit_breaker",
            Aspect::RateLimiter => "rate_limiter",
            Aspect::TimeLimiter => "time_limiter",
            Aspect::Bulkhead => "bulkhead",
            Aspect::ThreadPoolBulkhead => "thread_pool_bulkhead",
        }
    }

    pub(crate) fn from_attr_name(name: &str) -> Option<Aspect> {
        ORDER.into_iter().find(|a| a.attr_name() == name)
    }

    /// The arguments this attribute accepts.
    pub(crate) fn keys(self) -> &'static [Symbol] {
        use crate::symbol::*;
        match self {
            Aspect::CircuitBreaker => &[
                NAME,
                KEY,
                FALLBACK,
                RECORD,
                IGNORE,
                RECORD_RESULT,
                TRANSITION_ON_RESULT,
                CRATE,
            ],
            Aspect::Retry => &[
                NAME,
                KEY,
                FALLBACK,
                RETRY_ON,
                RETRY_ON_RESULT,
                RETRY_AFTER,
                CONSUME_RESULT,
                CRATE,
            ],
            Aspect::RateLimiter => &[NAME, KEY, FALLBACK, PERMITS, CRATE],
            _ => &[NAME, KEY, FALLBACK, CRATE],
        }
    }

    /// Position in [`ORDER`], outermost first.
    pub(crate) fn rank(self) -> usize {
        ORDER.iter().position(|a| *a == self).unwrap_or(ORDER.len())
    }
}

/// The parsed arguments of one attribute.
pub(crate) struct AspectArgs {
    pub(crate) aspect: Aspect,
    /// The attribute, for errors about the attribute as a whole.
    pub(crate) span: Span,
    pub(crate) name: Option<LitStr>,
    pub(crate) fallback: Option<ExprPath>,
    pub(crate) record: Option<ExprPath>,
    pub(crate) ignore: Option<ExprPath>,
    pub(crate) record_result: Option<ExprPath>,
    pub(crate) retry_on: Option<ExprPath>,
    pub(crate) retry_on_result: Option<ExprPath>,
    pub(crate) retry_after: Option<ExprPath>,
    pub(crate) consume_result: Option<ExprPath>,
    pub(crate) transition_on_result: Option<ExprPath>,
    /// `permits = N` of `#[rate_limiter]`, at least 1.
    pub(crate) permits: Option<syn::LitInt>,
    /// `key = expr`: the expression whose `Display` picks the keyed instance.
    pub(crate) key: Option<Expr>,
    pub(crate) krate: Option<Path>,
    /// `name` was written (maybe wrongly) or an unknown key was reported as
    /// a misspelling of it: a missing `name` is then the same mistake,
    /// reported once.
    pub(crate) name_attempted: bool,
    /// The whole sibling attribute, for errors about it.
    pub(crate) tokens: Option<TokenStream>,
}

/// Parses the arguments of `#[aspect(...)]`, pushing every mistake into `cx`.
pub(crate) fn aspect_args(cx: &Ctxt, aspect: Aspect, span: Span, args: TokenStream) -> AspectArgs {
    let owner = aspect.attr_name();
    let mut name = Attr::none(cx, owner, symbol::NAME);
    let mut fallback = Attr::none(cx, owner, symbol::FALLBACK);
    let mut record = Attr::none(cx, owner, symbol::RECORD);
    let mut ignore = Attr::none(cx, owner, symbol::IGNORE);
    let mut record_result = Attr::none(cx, owner, symbol::RECORD_RESULT);
    let mut retry_on = Attr::none(cx, owner, symbol::RETRY_ON);
    let mut retry_on_result = Attr::none(cx, owner, symbol::RETRY_ON_RESULT);
    let mut retry_after = Attr::none(cx, owner, symbol::RETRY_AFTER);
    let mut consume_result = Attr::none(cx, owner, symbol::CONSUME_RESULT);
    let mut transition_on_result = Attr::none(cx, owner, symbol::TRANSITION_ON_RESULT);
    let mut permits = Attr::none(cx, owner, symbol::PERMITS);
    let mut key_expr = Attr::none(cx, owner, symbol::KEY);
    let mut krate = Attr::none(cx, owner, symbol::CRATE);
    let mut name_attempted = false;

    let parser = syn::meta::parser(|meta| {
        let key = &meta.path;
        let accepted = aspect.keys().iter().any(|k| key == *k);
        if !accepted {
            if unknown_key(cx, aspect, &meta) == Some("name") {
                name_attempted = true;
            }
            return skip_value(&meta);
        }
        if key == symbol::NAME {
            // name = "inventory-query"
            name_attempted = true;
            let (tokens, value) = string_value(&meta, "name = \"inventory-query\"")?;
            match value {
                Some(lit) => name.set(&meta.path, lit),
                None => cx.error_spanned_by(
                    tokens,
                    format!(
                        "`name` takes a string literal, like `#[{owner}(name = \"inventory-query\")]`"
                    ),
                ),
            }
        } else if key == symbol::CRATE {
            // crate = "::resil"
            let (tokens, value) = string_value(&meta, "crate = \"::resil\"")?;
            match value.map(|lit| lit.parse::<Path>().map_err(|_| lit)) {
                Some(Ok(path)) => krate.set(&meta.path, path),
                Some(Err(lit)) => cx.error_spanned_by(
                    lit,
                    "`crate` takes the path of the resil crate as a string, like `crate = \"::resil\"`",
                ),
                None => cx.error_spanned_by(
                    tokens,
                    "`crate` takes the path of the resil crate as a string, like `crate = \"::resil\"`",
                ),
            }
        } else if key == symbol::PERMITS {
            // permits = 2
            if !meta.input.peek(Token![=]) {
                return Err(meta.error("expected `permits = 2`"));
            }
            let expr: Expr = meta.value()?.parse()?;
            match &expr {
                Expr::Lit(ExprLit {
                    lit: Lit::Int(n), ..
                }) if n.base10_parse::<u32>().is_ok_and(|n| n >= 1) => {
                    permits.set(&meta.path, n.clone());
                }
                other => cx.error_spanned_by(
                    other,
                    "`permits` takes a whole number from 1 to 4294967295 (the permits one call takes), like `permits = 2`",
                ),
            }
        } else if key == symbol::KEY {
            // key = tenant, key = req.host(), key = self.shard
            if !meta.input.peek(Token![=]) {
                return Err(meta.error(format!(
                    "expected `key = tenant`: an expression over the arguments of the function, like `#[{owner}(name = \"pay\", key = tenant)]`"
                )));
            }
            let expr: Expr = meta.value()?.parse()?;
            match &expr {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => cx.error_spanned_by(
                    s,
                    format!(
                        "`key` takes an expression over the arguments, like `key = tenant`; a string literal is one key for every call{}",
                        if syn::parse_str::<syn::Ident>(&s.value()).is_ok() {
                            format!(" (write `key = {}` to key by that argument)", s.value())
                        } else {
                            String::new()
                        }
                    ),
                ),
                _ => key_expr.set(&meta.path, expr),
            }
        } else {
            // fallback = Self::degraded, record = is_transient, ...
            let sym = *aspect.keys().iter().find(|k| key == **k).unwrap();
            let path = path_value(cx, &meta, sym, owner)?;
            let slots = [
                (symbol::FALLBACK, &mut fallback),
                (symbol::RECORD, &mut record),
                (symbol::IGNORE, &mut ignore),
                (symbol::RECORD_RESULT, &mut record_result),
                (symbol::RETRY_ON, &mut retry_on),
                (symbol::RETRY_ON_RESULT, &mut retry_on_result),
                (symbol::RETRY_AFTER, &mut retry_after),
                (symbol::CONSUME_RESULT, &mut consume_result),
                (symbol::TRANSITION_ON_RESULT, &mut transition_on_result),
            ];
            let slot = slots
                .into_iter()
                .find_map(|(s, slot)| (s == sym).then_some(slot))
                .expect("every path-valued key has a slot");
            if let Some(path) = path {
                slot.set(&meta.path, path);
            }
        }
        Ok(())
    });
    if let Err(err) = parser.parse2(args) {
        cx.syn_error(err);
    }

    AspectArgs {
        aspect,
        span,
        name: name.get(),
        fallback: fallback.get(),
        record: record.get(),
        ignore: ignore.get(),
        record_result: record_result.get(),
        retry_on: retry_on.get(),
        retry_on_result: retry_on_result.get(),
        retry_after: retry_after.get(),
        consume_result: consume_result.get(),
        transition_on_result: transition_on_result.get(),
        permits: permits.get(),
        key: key_expr.get(),
        krate: krate.get(),
        name_attempted,
        tokens: None,
    }
}

/// Parses the arguments of a sibling attribute (`#[retry(...)]` below the
/// one being expanded).
pub(crate) fn sibling_args(cx: &Ctxt, aspect: Aspect, attr: &Attribute) -> AspectArgs {
    let tokens = match &attr.meta {
        syn::Meta::Path(_) => TokenStream::new(),
        syn::Meta::List(list) => list.tokens.clone(),
        syn::Meta::NameValue(nv) => {
            cx.error_spanned_by(
                nv,
                format!("expected `#[{}(name = \"...\")]`", aspect.attr_name()),
            );
            TokenStream::new()
        }
    };
    let mut args = aspect_args(cx, aspect, attr.span(), tokens);
    args.tokens = Some(attr.to_token_stream());
    args
}

impl AspectArgs {
    /// An error about the attribute as a whole.
    pub(crate) fn error(&self, msg: impl std::fmt::Display) -> syn::Error {
        match &self.tokens {
            Some(tokens) => syn::Error::new_spanned(tokens, msg),
            None => syn::Error::new(self.span, msg),
        }
    }
}

/// Reports an unknown key; returns the key it suggests instead, if any.
fn unknown_key(cx: &Ctxt, aspect: Aspect, meta: &ParseNestedMeta) -> Option<&'static str> {
    let owner = aspect.attr_name();
    let key = meta.path.to_token_stream().to_string().replace(' ', "");
    // A key of another attribute: say where it belongs.
    if let Some(other) = symbol::ALL.iter().find(|k| meta.path == **k) {
        let home: Vec<&str> = ORDER
            .iter()
            .filter(|a| a.keys().contains(other))
            .map(|a| a.attr_name())
            .collect();
        cx.error_spanned_by(
            &meta.path,
            format!(
                "`{key}` is an argument of `#[{}]`, not of `#[{owner}]`; expected {}",
                home.join("]` and `#["),
                expected_list(aspect)
            ),
        );
        return None;
    }
    let suggestion = did_you_mean(&key, aspect.keys());
    let msg = match suggestion {
        Some(s) => format!("unknown `{owner}` argument `{key}`; did you mean `{s}`?"),
        None => format!(
            "unknown `{owner}` argument `{key}`; expected {}",
            expected_list(aspect)
        ),
    };
    cx.error_spanned_by(&meta.path, msg);
    suggestion
}

fn expected_list(aspect: Aspect) -> String {
    let keys: Vec<String> = aspect.keys().iter().map(|k| format!("`{k}`")).collect();
    match keys.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The closest accepted key: the same letters in another case or spelling
/// (`fallbackMethod`, `recordResult`, `Name`), or at most two edits away.
pub(crate) fn did_you_mean(key: &str, keys: &[Symbol]) -> Option<&'static str> {
    let norm = |s: &str| s.to_ascii_lowercase().replace('_', "");
    let k = norm(key);
    if let Some(s) = keys.iter().find(|s| norm(s.0) == k) {
        return Some(s.0);
    }
    // Java's `fallbackMethod`: the key starts with an accepted one.
    if let Some(s) = keys
        .iter()
        .filter(|s| s.0.len() >= 4 && k.starts_with(&norm(s.0)))
        .max_by_key(|s| s.0.len())
    {
        return Some(s.0);
    }
    keys.iter()
        .map(|s| (levenshtein(&k, &norm(s.0)), s.0))
        .filter(|(d, s)| *d <= 2 && *d < s.len() / 2 + 1)
        .min_by_key(|(d, _)| *d)
        .map(|(_, s)| s)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// Skips the value of an unknown key, so that the next keys are still checked.
fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _group: proc_macro2::Group = meta.input.parse()?;
    }
    Ok(())
}

/// `key = "..."`: the tokens of the value, and the literal when it is a string.
fn string_value(
    meta: &ParseNestedMeta,
    example: &str,
) -> syn::Result<(TokenStream, Option<LitStr>)> {
    if !meta.input.peek(Token![=]) {
        return Err(meta.error(format!("expected `{example}`")));
    }
    let expr: Expr = meta.value()?.parse()?;
    let lit = match &expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.clone()),
        _ => None,
    };
    Ok((expr.into_token_stream(), lit))
}

/// `key = some::path`; a string or a closure is reported with the expected form.
fn path_value(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    key: Symbol,
    owner: &str,
) -> syn::Result<Option<ExprPath>> {
    use symbol::*;
    let examples = [
        (FALLBACK, "fallback = Self::degraded"),
        (RECORD, "record = is_transient"),
        (IGNORE, "ignore = is_not_found"),
        (RECORD_RESULT, "record_result = is_empty"),
        (RETRY_ON, "retry_on = is_transient"),
        (RETRY_ON_RESULT, "retry_on_result = is_pending"),
        (RETRY_AFTER, "retry_after = Self::retry_after"),
        (CONSUME_RESULT, "consume_result = release"),
        (
            TRANSITION_ON_RESULT,
            "transition_on_result = open_on_maintenance",
        ),
    ];
    let example = examples
        .iter()
        .find_map(|(s, e)| (*s == key).then_some(*e))
        .unwrap_or("key = path");
    if !meta.input.peek(Token![=]) {
        return Err(meta.error(format!("expected `{example}`")));
    }
    let expr: Expr = meta.value()?.parse()?;
    match expr {
        Expr::Path(path) => Ok(Some(path)),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => {
            cx.error_spanned_by(
                &s,
                format!(
                    "`{key}` takes a path to a function, not a string: `{key} = {}`",
                    s.value()
                ),
            );
            Ok(None)
        }
        other => {
            cx.error_spanned_by(
                &other,
                format!(
                    "`{key}` of `#[{owner}]` takes a path to a function, like `{example}`; define the function and name it here"
                ),
            );
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbol::*;

    #[test]
    fn suggests_the_close_key() {
        let keys = Aspect::CircuitBreaker.keys();
        assert_eq!(did_you_mean("fallbak", keys), Some("fallback"));
        assert_eq!(did_you_mean("fallbackMethod", keys), Some("fallback"));
        assert_eq!(did_you_mean("recordResult", keys), Some("record_result"));
        assert_eq!(did_you_mean("nmae", keys), Some("name"));
        assert_eq!(did_you_mean("timeout", keys), None);
        assert_eq!(did_you_mean("x", &[NAME]), None);
    }
}

/// How a parameter (or the receiver) is passed.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Passing {
    /// `&T`, `&self`: copied into every attempt and every fallback.
    Shared,
    /// `&mut T`, `&mut self`: reborrowed.
    Unique,
    /// Anything else (`String`, `impl Trait`, `self: Arc<Self>`): owned.
    Owned,
}

/// The receiver of a method.
pub(crate) struct Receiver {
    pub(crate) passing: Passing,
    /// `&Self`, `&mut Self`, `Self`, `Arc<Self>`.
    pub(crate) ty: syn::Type,
    pub(crate) span: Span,
}

/// A typed parameter.
pub(crate) struct Param {
    /// The binding the expansion uses: the user's identifier, or
    /// `__resil_argN` for a pattern (`(a, b): (u32, u32)`).
    pub(crate) ident: syn::Ident,
    /// The user's pattern when it is not a plain identifier.
    pub(crate) pattern: Option<syn::Pat>,
    /// `mut x`.
    pub(crate) mutable: bool,
    pub(crate) ty: syn::Type,
    pub(crate) passing: Passing,
    /// `impl Trait` somewhere in its type: it cannot be named in the expansion.
    pub(crate) has_impl_trait: bool,
    pub(crate) span: Span,
}

/// The declared return type.
pub(crate) struct Output {
    pub(crate) ty: syn::Type,
    /// `T` and `E` when written as `Result<T, E>`.
    pub(crate) ok: Option<syn::Type>,
    pub(crate) err: Option<syn::Type>,
}

/// The annotated function.
pub(crate) struct Func {
    pub(crate) item: syn::ImplItemFn,
    pub(crate) receiver: Option<Receiver>,
    pub(crate) params: Vec<Param>,
    /// `None` when there is no `-> ...` or it is not a `Result`; see [`Func::output_error`].
    pub(crate) output: Option<Output>,
    /// Why the return type is not accepted, spanned on it.
    pub(crate) output_error: Option<syn::Error>,
}

/// Parses the annotated item as a function or method (`ImplItemFn` accepts
/// both free functions and methods).
pub(crate) fn item(tokens: TokenStream) -> Result<syn::ImplItemFn, syn::Error> {
    match syn::parse2::<syn::ImplItemFn>(tokens.clone()) {
        Ok(f) => Ok(f),
        Err(err) => {
            if let Ok(f) = syn::parse2::<syn::TraitItemFn>(tokens.clone())
                && f.default.is_none()
            {
                return Err(syn::Error::new_spanned(
                    &f.sig,
                    "resil attributes need the function's body; put them on the implementation, not on the trait's declaration",
                ));
            }
            match syn::parse2::<syn::Item>(tokens) {
                Ok(item) if !matches!(item, syn::Item::Fn(_) | syn::Item::Verbatim(_)) => {
                    Err(syn::Error::new(
                        item_span(&item),
                        "resil attributes apply to functions and methods",
                    ))
                }
                _ => Err(err),
            }
        }
    }
}

fn item_span(item: &syn::Item) -> Span {
    use syn::Item::*;
    match item {
        Struct(i) => i.ident.span(),
        Enum(i) => i.ident.span(),
        Impl(i) => i.impl_token.span,
        Trait(i) => i.ident.span(),
        Mod(i) => i.ident.span(),
        Const(i) => i.ident.span(),
        Static(i) => i.ident.span(),
        Type(i) => i.ident.span(),
        Union(i) => i.ident.span(),
        other => other.span(),
    }
}

impl Func {
    pub(crate) fn new(item: syn::ImplItemFn) -> Func {
        let mut receiver = None;
        let mut params = Vec::new();
        for (index, input) in item.sig.inputs.iter().enumerate() {
            match input {
                syn::FnArg::Receiver(r) => {
                    let (passing, ty) = match &r.kind {
                        syn::ReceiverKind::Reference(_, lifetime, Some(_)) => {
                            (Passing::Unique, syn::parse_quote!(&#lifetime mut Self))
                        }
                        syn::ReceiverKind::Reference(_, lifetime, None) => {
                            (Passing::Shared, syn::parse_quote!(&#lifetime Self))
                        }
                        syn::ReceiverKind::Typed(_, ty) => match &**ty {
                            syn::Type::Reference(t) if t.mutability.is_some() => {
                                (Passing::Unique, (**ty).clone())
                            }
                            syn::Type::Reference(_) => (Passing::Shared, (**ty).clone()),
                            _ => (Passing::Owned, (**ty).clone()),
                        },
                        _ => (Passing::Owned, syn::parse_quote!(Self)),
                    };
                    receiver = Some(Receiver {
                        passing,
                        ty,
                        span: r.self_token.span,
                    });
                }
                syn::FnArg::Typed(pt) => {
                    let passing = match &*pt.ty {
                        syn::Type::Reference(t) if t.mutability.is_some() => Passing::Unique,
                        syn::Type::Reference(_) => Passing::Shared,
                        _ => Passing::Owned,
                    };
                    let (ident, pattern, mutable) = match &*pt.pat {
                        syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                            (pi.ident.clone(), None, pi.mutability.is_some())
                        }
                        other => (
                            syn::Ident::new(&format!("__resil_arg{index}"), Span::call_site()),
                            Some(other.clone()),
                            false,
                        ),
                    };
                    params.push(Param {
                        ident,
                        pattern,
                        mutable,
                        ty: (*pt.ty).clone(),
                        passing,
                        has_impl_trait: has_impl_trait(&pt.ty),
                        span: pt.span(),
                    });
                }
            }
        }
        let (output, output_error) = match output(&item.sig) {
            Ok(o) => (Some(o), None),
            Err(e) => (None, Some(e)),
        };
        Func {
            item,
            receiver,
            params,
            output,
            output_error,
        }
    }

    pub(crate) fn is_async(&self) -> bool {
        self.item.sig.asyncness.is_some()
    }
}

/// `impl Trait` anywhere in a type.
pub(crate) fn has_impl_trait(ty: &syn::Type) -> bool {
    mentions(ty.to_token_stream(), &|i| i == "impl")
}

/// Whether an identifier that `pred` accepts appears anywhere in `tokens`.
pub(crate) fn mentions(tokens: TokenStream, pred: &dyn Fn(&proc_macro2::Ident) -> bool) -> bool {
    tokens.into_iter().any(|tt| match tt {
        proc_macro2::TokenTree::Ident(i) => pred(&i),
        proc_macro2::TokenTree::Group(g) => mentions(g.stream(), pred),
        _ => false,
    })
}

/// The return type, when it is a `Result`: `Result<T, E>` (any path ending
/// in `Result`), or an alias with the error fixed (`io::Result<T>`,
/// `anyhow::Result<T>`) whose last segment ends in `Result`.
fn output(sig: &syn::Signature) -> Result<Output, syn::Error> {
    let syn::ReturnType::Type(_, ty) = &sig.output else {
        return Err(syn::Error::new(
            sig.ident.span(),
            format!(
                "resil attributes need a function that returns `Result<T, E>`; `{}` returns `()`",
                sig.ident
            ),
        ));
    };
    if has_impl_trait(ty) {
        return Err(syn::Error::new_spanned(
            ty,
            "resil attributes need a return type they can name; `impl Trait` in the return type is not supported",
        ));
    }
    let not_result = || {
        syn::Error::new_spanned(
            ty,
            format!(
                "resil attributes need a function that returns `Result<T, E>`; found `{}`",
                ty.to_token_stream()
                    .to_string()
                    .replace(" < ", "<")
                    .replace(" >", ">")
                    .replace(" ,", ",")
            ),
        )
    };
    let syn::Type::Path(tp) = &**ty else {
        return Err(not_result());
    };
    let Some(last) = tp.path.segments.last() else {
        return Err(not_result());
    };
    if tp.qself.is_some() || !last.ident.to_string().ends_with("Result") {
        return Err(not_result());
    }
    let mut ok = None;
    let mut err = None;
    if last.ident == "Result"
        && let syn::PathArguments::AngleBracketed(args) = &last.arguments
    {
        let types: Vec<&syn::Type> = args
            .args
            .iter()
            .filter_map(|a| match a {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect();
        if let [t, e] = types[..] {
            ok = Some(t.clone());
            err = Some(e.clone());
        }
    }
    Ok(Output {
        ty: (**ty).clone(),
        ok,
        err,
    })
}

/// Tokens as a person writes them: `Result<Item, DbError>`, `&Self`, `Self::degraded`.
pub(crate) fn tokens_text(tokens: TokenStream) -> String {
    let mut out = String::new();
    write_tokens(&mut out, tokens);
    out
}

fn write_tokens(out: &mut String, tokens: TokenStream) {
    let mut prev_word = false;
    for tt in tokens {
        match tt {
            proc_macro2::TokenTree::Ident(i) => {
                if prev_word {
                    out.push(' ');
                }
                out.push_str(&i.to_string());
                prev_word = true;
            }
            proc_macro2::TokenTree::Literal(l) => {
                if prev_word {
                    out.push(' ');
                }
                out.push_str(&l.to_string());
                prev_word = true;
            }
            proc_macro2::TokenTree::Punct(p) => {
                let c = p.as_char();
                match c {
                    ',' => out.push_str(", "),
                    '=' if p.spacing() == proc_macro2::Spacing::Alone => out.push_str(" = "),
                    '+' => out.push_str(" + "),
                    '>' if out.ends_with('-') => {
                        out.pop();
                        out.push_str(" -> ");
                    }
                    _ => out.push(c),
                }
                // `'a Self`: a lifetime is a word.
                prev_word = false;
                if c == '\'' {
                    prev_word = false;
                }
            }
            proc_macro2::TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                    proc_macro2::Delimiter::Bracket => ("[", "]"),
                    proc_macro2::Delimiter::Brace => ("{ ", " }"),
                    proc_macro2::Delimiter::None => ("", ""),
                };
                if prev_word && g.delimiter() == proc_macro2::Delimiter::Brace {
                    out.push(' ');
                }
                out.push_str(open);
                write_tokens(out, g.stream());
                out.push_str(close);
                prev_word = true;
            }
        }
    }
}
