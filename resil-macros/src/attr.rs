//! The attributes' arguments, parsed into plain data (serde's and
//! thiserror's `attr.rs`): each resil attribute's keys, and the
//! `#[classify(...)]` attributes of `derive(Classify)`. Every mistake goes
//! into the [`Ctxt`], spanned on the user's tokens.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Attribute, Expr, ExprLit, ExprPath, Lit, LitStr, Path, Token};

use crate::ctxt::{Attr, Ctxt};
use crate::symbol::{self, Symbol};

/// One resil attribute.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Aspect {
    Deadline,
    Retry,
    Hedge,
    CircuitBreaker,
    RateLimiter,
    TimeLimiter,
    Bulkhead,
    ThreadPoolBulkhead,
}

/// The order of the aspects, outermost first: Resilience4j's default
/// `Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(fn)))))`, with the
/// hedge (which Resilience4j lacks) between the retry and the breaker, and
/// the request's deadline around them all. The
/// thread-pool bulkhead takes the bulkhead's place (Resilience4j's
/// `@Bulkhead(type = THREADPOOL)`); a function has one or the other.
pub(crate) const ORDER: [Aspect; 8] = [
    Aspect::Deadline,
    Aspect::Retry,
    Aspect::Hedge,
    Aspect::CircuitBreaker,
    Aspect::RateLimiter,
    Aspect::TimeLimiter,
    Aspect::Bulkhead,
    Aspect::ThreadPoolBulkhead,
];

impl Aspect {
    /// The attribute's name, as users write it.
    pub(crate) fn symbol(self) -> Symbol {
        match self {
            Aspect::Deadline => symbol::DEADLINE,
            Aspect::Retry => symbol::RETRY,
            Aspect::Hedge => symbol::HEDGE,
            Aspect::CircuitBreaker => symbol::CIRCUIT_BREAKER,
            Aspect::RateLimiter => symbol::RATE_LIMITER,
            Aspect::TimeLimiter => symbol::TIME_LIMITER,
            Aspect::Bulkhead => symbol::BULKHEAD,
            Aspect::ThreadPoolBulkhead => symbol::THREAD_POOL_BULKHEAD,
        }
    }

    /// The attribute's name, for messages and generated identifiers.
    pub(crate) fn attr_name(self) -> &'static str {
        self.symbol().0
    }

    /// The variant of the runtime's `Aspect` and the primitive's type name.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Aspect::Deadline => "Deadline",
            Aspect::Retry => "Retry",
            Aspect::Hedge => "Hedge",
            Aspect::CircuitBreaker => "CircuitBreaker",
            Aspect::RateLimiter => "RateLimiter",
            Aspect::TimeLimiter => "TimeLimiter",
            Aspect::Bulkhead => "Bulkhead",
            Aspect::ThreadPoolBulkhead => "ThreadPoolBulkhead",
        }
    }

    /// Which resil attribute `path` names: `retry`, `resil::retry`,
    /// `::resil::retry`, or `<crate>::retry` with a `crate = "..."` override.
    pub(crate) fn of_attribute(path: &Path, krate: Option<&Path>) -> Option<Aspect> {
        let last = path.segments.last()?;
        let aspect = ORDER.into_iter().find(|a| last.ident == a.symbol())?;
        let prefix: Vec<&syn::Ident> = path
            .segments
            .iter()
            .take(path.segments.len() - 1)
            .map(|s| &s.ident)
            .collect();
        let ok = match prefix.as_slice() {
            [] => path.leading_colon.is_none(),
            [root] if *root == symbol::RESIL => true,
            _ => krate.is_some_and(|k| k.segments.iter().map(|s| &s.ident).eq(prefix)),
        };
        ok.then_some(aspect)
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
            // one deadline per call site: no `key`
            Aspect::Deadline => &[NAME, TIMEOUT, FALLBACK, CRATE],
            _ => &[NAME, KEY, FALLBACK, CRATE],
        }
    }

    /// Whether the layer calls the body more than once (the retry one
    /// attempt after another, the hedge side by side): each attempt then
    /// needs its own copy of the owned arguments.
    pub(crate) fn calls_again(self) -> bool {
        matches!(self, Aspect::Retry | Aspect::Hedge)
    }

    /// Position in [`ORDER`], outermost first.
    pub(crate) fn rank(self) -> usize {
        ORDER.iter().position(|a| *a == self).unwrap_or(ORDER.len())
    }
}

/// The parsed arguments of one attribute.
pub(crate) struct AspectArgs {
    pub(crate) aspect: Aspect,
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
    /// `timeout = "800ms"` of `#[deadline]`: the literal and its nanoseconds
    /// (more than zero).
    pub(crate) timeout: Option<(LitStr, u64)>,
    pub(crate) krate: Option<Path>,
    /// `name` was written (maybe wrongly) or an unknown key was reported as
    /// a misspelling of it: a missing `name` is then the same mistake,
    /// reported once.
    pub(crate) name_attempted: bool,
    /// The whole attribute when it is a sibling, for errors about it; `None`
    /// for the attribute being expanded, whose tokens the macro does not get.
    pub(crate) attr: Option<Attribute>,
}

impl AspectArgs {
    /// Parses the arguments of `#[aspect(args)]` (all the macro gets of the
    /// attribute being expanded), pushing every mistake into `cx`.
    pub(crate) fn from_args(cx: &Ctxt, aspect: Aspect, args: TokenStream) -> Self {
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
        let mut timeout = Attr::none(cx, owner, symbol::TIMEOUT);
        let mut name_attempted = false;

        let parser = syn::meta::parser(|meta| {
            let key = &meta.path;
            let accepted = aspect.keys().iter().any(|k| key == *k);
            if !accepted {
                if unknown_key(cx, aspect, &meta) == Some(symbol::NAME) {
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
            } else if key == symbol::TIMEOUT {
                // timeout = "800ms"
                name_attempted = true;
                let (tokens, value) = string_value(&meta, "timeout = \"800ms\"")?;
                match value {
                    Some(lit) => match timeout_nanos(&lit.value()) {
                        Ok(nanos) => timeout.set(&meta.path, (lit, nanos)),
                        Err(why) => cx.error_spanned_by(&lit, why),
                    },
                    None => cx.error_spanned_by(
                        tokens,
                        "`timeout` takes a duration as a string literal, like `#[deadline(timeout = \"800ms\")]`",
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
            timeout: timeout.get(),
            krate: krate.get(),
            name_attempted,
            attr: None,
        }
    }

    /// Parses the arguments of a sibling attribute (`#[retry(...)]` below the
    /// one being expanded).
    pub(crate) fn from_attribute(cx: &Ctxt, aspect: Aspect, attr: &Attribute) -> Self {
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
        let mut args = Self::from_args(cx, aspect, tokens);
        args.attr = Some(attr.clone());
        args
    }

    /// An error about the attribute as a whole.
    pub(crate) fn error(&self, msg: impl std::fmt::Display) -> syn::Error {
        match &self.attr {
            Some(attr) => syn::Error::new_spanned(attr, msg),
            None => syn::Error::new(Span::call_site(), msg),
        }
    }
}

/// Every resil attribute of one function, in [`ORDER`]: `first`, the one
/// being expanded, and the siblings it takes out of `attrs`. A second
/// attribute of the same aspect is reported and dropped.
pub(crate) fn layers(cx: &Ctxt, first: AspectArgs, attrs: &mut Vec<Attribute>) -> Vec<AspectArgs> {
    let krate = first.krate.clone();
    let mut layers = vec![first];
    let mut kept = Vec::new();
    for attr in std::mem::take(attrs) {
        match Aspect::of_attribute(attr.path(), krate.as_ref()) {
            Some(sibling) => {
                let args = AspectArgs::from_attribute(cx, sibling, &attr);
                if layers.iter().any(|l| l.aspect == sibling) {
                    cx.error_spanned_by(
                        &attr,
                        format!(
                            "`#[{}]` is given twice; each attribute applies once per function",
                            sibling.attr_name()
                        ),
                    );
                } else {
                    layers.push(args);
                }
            }
            None => kept.push(attr),
        }
    }
    *attrs = kept;
    layers.sort_by_key(|l| l.aspect.rank());
    layers
}

/// Reports an unknown key; returns the key it suggests instead, if any.
fn unknown_key(cx: &Ctxt, aspect: Aspect, meta: &ParseNestedMeta) -> Option<Symbol> {
    let owner = aspect.attr_name();
    let key = meta.path.to_token_stream().to_string().replace(' ', "");
    if aspect == Aspect::Deadline && meta.path == symbol::KEY {
        cx.error_spanned_by(
            &meta.path,
            format!(
                "a request has one deadline: `#[deadline]` takes no `key`; expected {}",
                expected_list(aspect)
            ),
        );
        return None;
    }
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
fn did_you_mean(key: &str, keys: &[Symbol]) -> Option<Symbol> {
    let norm = |s: &str| s.to_ascii_lowercase().replace('_', "");
    let k = norm(key);
    if let Some(s) = keys.iter().find(|s| norm(s.0) == k) {
        return Some(*s);
    }
    // Java's `fallbackMethod`: the key starts with an accepted one.
    if let Some(s) = keys
        .iter()
        .filter(|s| s.0.len() >= 4 && k.starts_with(&norm(s.0)))
        .max_by_key(|s| s.0.len())
    {
        return Some(*s);
    }
    keys.iter()
        .map(|s| (levenshtein(&k, &norm(s.0)), *s))
        .filter(|(d, s)| *d <= 2 && *d < s.0.len() / 2 + 1)
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
/// The nanoseconds of a `timeout` literal: a duration as resilience.toml
/// writes one (`"800ms"`, `"1m 30s"`; a whole number is milliseconds), more
/// than zero.
pub(crate) fn timeout_nanos(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let parsed = if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) {
        trimmed
            .parse::<u64>()
            .ok()
            .map(std::time::Duration::from_millis)
    } else {
        humantime::parse_duration(trimmed).ok()
    };
    let Some(d) = parsed else {
        return Err(format!(
            "`timeout = {text:?}` is not a duration; expected one like \"800ms\", \"2s\" or \"1m 30s\""
        ));
    };
    match u64::try_from(d.as_nanos()) {
        Ok(0) => Err(format!(
            "`timeout = {text:?}` is zero: no call could run; give the time a request may take, like \"800ms\""
        )),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`timeout = {text:?}` is too long")),
    }
}

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

/// `#[classify(...)]` on the enum of a `#[derive(Classify)]`.
pub(crate) struct ClassifyEnum {
    /// `crate = "::resil"`.
    pub(crate) krate: Option<Path>,
}

impl ClassifyEnum {
    pub(crate) fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut krate = Attr::none(cx, "classify", symbol::CRATE);
        for attr in attrs.iter().filter(|a| a.path() == symbol::CLASSIFY) {
            let result = attr.parse_nested_meta(|meta| {
                if meta.path == symbol::CRATE {
                    // #[classify(crate = "::resil")]
                    let lit: LitStr = meta.value()?.parse()?;
                    match lit.parse::<Path>() {
                        Ok(p) => krate.set(&meta.path, p),
                        Err(_) => cx.error_spanned_by(
                            &lit,
                            "`crate` takes a path as a string, like `crate = \"::resil\"`",
                        ),
                    }
                    Ok(())
                } else {
                    let key = meta.path.to_token_stream().to_string().replace(' ', "");
                    Err(meta.error(format!(
                        "unknown `classify` argument `{key}` on the enum; expected `crate`"
                    )))
                }
            });
            if let Err(e) = result {
                cx.syn_error(e);
            }
        }
        ClassifyEnum { krate: krate.get() }
    }
}

/// `#[classify(...)]` on a variant of a `#[derive(Classify)]` enum.
pub(crate) struct ClassifyVariant {
    /// `kind = "ConnectionRefused"`.
    pub(crate) kind: Option<LitStr>,
}

impl ClassifyVariant {
    pub(crate) fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut kind = Attr::none(cx, "classify", symbol::KIND);
        for attr in attrs.iter().filter(|a| a.path() == symbol::CLASSIFY) {
            let parser = syn::meta::parser(|meta| {
                if meta.path == symbol::KIND {
                    // #[classify(kind = "ConnectionRefused")]
                    let lit: LitStr = meta.value()?.parse()?;
                    kind.set(&meta.path, lit);
                    Ok(())
                } else {
                    let key = meta.path.to_token_stream().to_string().replace(' ', "");
                    Err(meta.error(format!(
                        "unknown `classify` argument `{key}` on a variant; expected `kind`"
                    )))
                }
            });
            let tokens = match &attr.meta {
                syn::Meta::List(l) => l.tokens.clone(),
                other => {
                    cx.error_spanned_by(other, "expected `#[classify(kind = \"...\")]`");
                    continue;
                }
            };
            if let Err(e) = parser.parse2(tokens) {
                cx.syn_error(e);
            }
        }
        ClassifyVariant { kind: kind.get() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbol::*;

    #[test]
    fn suggests_the_close_key() {
        let suggest = |key: &str, keys: &[Symbol]| did_you_mean(key, keys).map(|s| s.0);
        let keys = Aspect::CircuitBreaker.keys();
        assert_eq!(suggest("fallbak", keys), Some("fallback"));
        assert_eq!(suggest("fallbackMethod", keys), Some("fallback"));
        assert_eq!(suggest("recordResult", keys), Some("record_result"));
        assert_eq!(suggest("nmae", keys), Some("name"));
        assert_eq!(suggest("timeout", keys), None);
        assert_eq!(suggest("x", &[NAME]), None);
    }

    #[test]
    fn recognises_resil_attributes() {
        let p = |s: &str| syn::parse_str::<Path>(s).unwrap();
        let of = |s: &str, krate: Option<&Path>| Aspect::of_attribute(&p(s), krate);
        assert_eq!(of("retry", None), Some(Aspect::Retry));
        assert_eq!(of("resil::retry", None), Some(Aspect::Retry));
        assert_eq!(of("::resil::bulkhead", None), Some(Aspect::Bulkhead));
        assert_eq!(of("other::retry", None), None);
        assert_eq!(
            of("my::res::retry", Some(&p("my::res"))),
            Some(Aspect::Retry)
        );
        assert_eq!(of("tokio::test", None), None);
    }

    /// The attributes' order is the engine's `Layer::ORDER` (the one place
    /// that states it).
    #[test]
    fn the_attributes_order_is_the_engines() {
        let engine: Vec<String> = resil::chain::Layer::ORDER
            .iter()
            .map(|l| format!("{l:?}"))
            .collect();
        let attributes: Vec<&str> = ORDER.iter().map(|a| a.variant()).collect();
        assert_eq!(attributes, engine);
    }
}
