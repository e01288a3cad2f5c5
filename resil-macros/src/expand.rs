//! Expansion: the first resil attribute to expand takes its siblings and
//! rewrites the function body into the whole chain, in [`ORDER`](crate::attr::ORDER).

use proc_macro2::{TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Path};

use crate::ast::{self, Func, Output, Param, Passing, tokens_text};
use crate::attr::{Aspect, AspectArgs};
use crate::ctxt::Ctxt;
use crate::validate;

/// Expands `#[aspect(args)]` on `item`, with every sibling resil attribute.
///
/// On any mistake the item comes back without its resil attributes and
/// otherwise unchanged, followed by the errors: the user sees each mistake
/// once and no cascade of errors from a half-expanded body.
pub(crate) fn aspect(aspect: Aspect, args: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let first = AspectArgs::from_args(&cx, aspect, args);
    let item = match ast::item(item.clone()) {
        Ok(item) => item,
        Err(err) => {
            cx.syn_error(err);
            let errors = cx.check().unwrap_err().to_compile_error();
            return quote!(#item #errors);
        }
    };
    let func = Func::from_syn(&cx, first, item);
    validate::chain(&cx, &func);
    match cx.check() {
        Ok(()) => Chain::new(&func).expand(),
        Err(err) => {
            let item = &func.item;
            let errors = err.to_compile_error();
            quote!(#item #errors)
        }
    }
}

/// The generated code of one function.
pub(crate) struct Chain<'a> {
    pub(crate) func: &'a Func,
    pub(crate) layers: &'a [AspectArgs],
    pub(crate) output: &'a Output,
    /// `::resil::__private`
    pub(crate) p: TokenStream,
    pub(crate) ret: TokenStream,
    pub(crate) ok: TokenStream,
    pub(crate) err: TokenStream,
    /// The receiver is owned and the body needs a copy of its own (a retry
    /// attempt, or a thread pool while a fallback keeps the original): the
    /// body's `self` becomes `__resil_self`.
    pub(crate) rename_self: bool,
    /// Some fallback below the retry needs the arguments after the body ran.
    pub(crate) pool_clones: bool,
    /// Non-identifier patterns are bound to `__resil_argN` in the signature.
    pub(crate) bind_patterns: bool,
    /// Items the layers need beside the statics (a detachable time
    /// limiter's inner function).
    pub(crate) nested: std::cell::RefCell<Vec<TokenStream>>,
}

impl<'a> Chain<'a> {
    fn new(func: &'a Func) -> Self {
        let layers = &func.layers[..];
        let krate: Path = layers
            .iter()
            .find_map(|l| l.krate.clone())
            .unwrap_or_else(|| syn::parse_quote!(::resil));
        let output = func.output.as_ref().expect("validated");
        let ret = output.ty.to_token_stream();
        let p = quote!(#krate::__private);
        let ok = match &output.ok {
            Some(t) => t.to_token_stream(),
            None => quote!(<#ret as #p::IsResult>::Ok),
        };
        let err = match &output.err {
            Some(e) => e.to_token_stream(),
            None => quote!(<#ret as #p::IsResult>::Err),
        };
        let has = |a: Aspect| layers.iter().any(|l| l.aspect == a);
        let inner_fallback = layers
            .iter()
            .any(|l| l.aspect != Aspect::Retry && l.fallback.is_some());
        let pool_clones = has(Aspect::ThreadPoolBulkhead) && inner_fallback;
        let owned_receiver = func
            .receiver
            .as_ref()
            .is_some_and(|r| r.passing == Passing::Owned);
        let again = layers.iter().any(|l| l.aspect.calls_again());
        let rename_self = owned_receiver && (again || pool_clones);
        let bind_patterns = again || layers.iter().any(|l| l.fallback.is_some());
        Chain {
            func,
            layers,
            output,
            p,
            ret,
            ok,
            err,
            rename_self,
            pool_clones,
            bind_patterns,
            nested: std::cell::RefCell::new(Vec::new()),
        }
    }

    fn has(&self, aspect: Aspect) -> bool {
        self.layers.iter().any(|l| l.aspect == aspect)
    }

    /// The time limiter at `i` can give its future away (to a task, when it
    /// is `Send + 'static` and `cancel-running-future = false`): the
    /// function is async, no fallback at or outside the time limiter needs
    /// the arguments after it, and what lies inside the time limiter can be
    /// a function of its own, whose future's auto traits the types decide:
    /// no receiver, no generics, no `Self`, owned arguments without
    /// patterns, lifetimes or `impl Trait`.
    pub(crate) fn detachable(&self, i: usize) -> bool {
        let f = self.func;
        let owned = |p: &Param| {
            p.passing == Passing::Owned
                && p.pattern.is_none()
                && !p.has_impl_trait
                && !p.ty.to_token_stream().to_string().contains('\'')
        };
        f.is_async()
            && self.layers[..=i].iter().all(|l| l.fallback.is_none())
            // a keyed layer inside uses its instance from the caller's scope
            && self.layers[i + 1..].iter().all(|l| l.key.is_none())
            && f.receiver.is_none()
            && f.item.sig.generics.params.is_empty()
            && f.params.iter().all(owned)
            && !ast::mentions(f.item.block.to_token_stream(), &|id| id == "Self")
    }

    /// Where the time limiter is, if it can detach (see [`Chain::detachable`]).
    fn detachable_time_limiter(&self) -> bool {
        self.layers
            .iter()
            .position(|l| l.aspect == Aspect::TimeLimiter)
            .is_some_and(|i| self.detachable(i))
    }

    fn expand(&self) -> TokenStream {
        let mut item = self.func.item.clone();
        let retry = self.layers.iter().any(|l| l.aspect.calls_again());
        // The signature: patterns bound to names the expansion can pass on,
        // and `mut` moved to each attempt's own copy.
        for (input, param) in item
            .sig
            .inputs
            .iter_mut()
            .filter_map(|i| match i {
                syn::FnArg::Typed(pt) => Some(pt),
                syn::FnArg::Receiver(_) => None,
            })
            .zip(&self.func.params)
        {
            if param.pattern.is_some() && self.bind_patterns {
                let ident = &param.ident;
                *input.pat = syn::parse_quote!(#ident);
            } else if retry
                && param.passing == Passing::Owned
                && let syn::Pat::Ident(pi) = &mut *input.pat
            {
                pi.mutability = None;
            }
        }
        if retry
            && let Some(syn::FnArg::Receiver(r)) = item.sig.inputs.first_mut()
            && !matches!(r.kind, syn::ReceiverKind::Reference(..))
        {
            r.mutability = None;
        }

        let declarations = self.layers.iter().map(|l| self.declaration(l));
        let statics = self.layers.iter().map(|l| self.call_site(l));
        let fallback_traits = self
            .layers
            .iter()
            .filter(|l| l.fallback.is_some())
            .map(|l| self.fallback_trait(l));
        let kinds = self.kinds(0);
        let classifiers = self.layers.iter().filter_map(|l| self.classifier(l));
        let arg_checks = self.argument_checks();
        let keys = self.keys();
        let chain = self.layers_from(0, &self.receiver_ident(false));
        let finish = self.finish();
        let nested = self.nested.take();

        let stmts = quote! {
            #(#declarations)*
            #(#statics)*
            #(#nested)*
            #(#fallback_traits)*
            #arg_checks
            #kinds
            #(#classifiers)*
            #keys
            let __resil_outcome = #chain;
            #finish
        };
        item.block = syn::parse_quote!({ #stmts });
        item.into_token_stream()
    }

    fn static_ident(aspect: Aspect) -> Ident {
        format_ident!("__RESIL_{}", aspect.attr_name().to_uppercase())
    }

    /// The instance's name: `name`, or for a deadline of a fixed
    /// `timeout` the function's.
    pub(crate) fn name(&self, args: &AspectArgs) -> syn::LitStr {
        match &args.name {
            Some(name) => name.clone(),
            None => {
                let ident = &self.func.item.sig.ident;
                syn::LitStr::new(&ident.to_string(), ident.span())
            }
        }
    }

    /// The declaration submitted to the link-time registry, as a nested item
    /// (the only place that works for free functions, inherent, trait and
    /// generic methods alike).
    fn declaration(&self, args: &AspectArgs) -> TokenStream {
        if args.name.is_none() {
            // a deadline of a fixed `timeout`: no instance of the registries
            return TokenStream::new();
        }
        let p = &self.p;
        let kind = format_ident!("{}", args.aspect.variant());
        let name = self.name(args);
        let function = self.func.item.sig.ident.to_string();
        let fallback = match &args.fallback {
            Some(f) => {
                let text = tokens_text(f.to_token_stream());
                quote!(::core::option::Option::Some(#text))
            }
            None => quote!(::core::option::Option::None),
        };
        let error_type = tokens_text(self.err.clone());
        // `KindsOf::<E>::KINDS` is `E`'s kinds when it implements `Classify`,
        // else `NoKinds`' empty list.
        let kinds = if self.error_is_nameable_in_items() {
            let err = &self.err;
            quote! {{
                #[allow(unused_imports)]
                use #p::NoKinds as _;
                #p::KindsOf::<#err>::KINDS
            }}
        } else {
            quote!(&[])
        };
        let detachable = args.aspect == Aspect::TimeLimiter && self.detachable_time_limiter();
        quote! {
            const _: () = {
                #p::inventory::submit! {
                    #p::Declaration {
                        aspect: #p::Aspect::#kind,
                        name: #name,
                        module: ::core::module_path!(),
                        function: #function,
                        file: ::core::file!(),
                        line: ::core::line!(),
                        fallback: #fallback,
                        error_type: #error_type,
                        error_kinds: #kinds,
                        detachable: #detachable,
                    }
                }
            };
        }
    }

    /// Whether the error type can be named by an item nested in the body: it
    /// mentions no `Self` and no generic parameter of the function, and does
    /// not look like one of the impl's (a capital letter and digits, `E`, `E2`).
    fn error_is_nameable_in_items(&self) -> bool {
        let generics: Vec<String> = self
            .func
            .item
            .sig
            .generics
            .params
            .iter()
            .filter_map(|g| match g {
                syn::GenericParam::Type(t) => Some(t.ident.to_string()),
                syn::GenericParam::Const(c) => Some(c.ident.to_string()),
                syn::GenericParam::Lifetime(_) => None,
            })
            .collect();
        let tokens = match &self.output.err {
            Some(e) => e.to_token_stream(),
            None => self.ret.clone(),
        };
        !ast::mentions(tokens, &|i| {
            let s = i.to_string();
            let mut chars = s.chars();
            let generic_like = chars.next().is_some_and(|c| c.is_ascii_uppercase())
                && chars.all(|c| c.is_ascii_digit());
            s == "Self" || generics.contains(&s) || generic_like
        })
    }

    /// `static __RESIL_RETRY: CallSite<Retry> = CallSite::new("...");`
    fn call_site(&self, args: &AspectArgs) -> TokenStream {
        let p = &self.p;
        let ident = Self::static_ident(args.aspect);
        let ty = format_ident!("{}", args.aspect.variant());
        let name = self.name(args);
        if let Some((_, nanos)) = &args.timeout {
            return quote! {
                static #ident: #p::FixedDeadline = #p::FixedDeadline::new(
                    #name,
                    #nanos,
                );
            };
        }
        if args.key.is_some() {
            quote! {
                static #ident: #p::KeyedCallSite<#p::#ty> = #p::KeyedCallSite::new(#name);
            }
        } else {
            quote! {
                static #ident: #p::CallSite<#p::#ty> = #p::CallSite::new(#name);
            }
        }
    }

    /// The instance a layer calls: the call site's, or for a keyed layer the
    /// one its key picked before the chain ran ([`Chain::keys`]).
    pub(crate) fn instance(&self, args: &AspectArgs) -> TokenStream {
        if args.key.is_some() {
            let instance = format_ident!("__resil_{}_instance", args.aspect.attr_name());
            quote!(#instance)
        } else {
            let site = Self::static_ident(args.aspect);
            quote!(#site.get())
        }
    }

    /// The keyed layers' instances, picked once per call from the
    /// arguments before the chain runs: `key` is evaluated by reference, so
    /// it moves nothing, and its `Display` is checked on the user's tokens.
    fn keys(&self) -> TokenStream {
        let p = &self.p;
        let lets = self.layers.iter().filter_map(|l| {
            let key = l.key.as_ref()?;
            let site = Self::static_ident(l.aspect);
            let ty = format_ident!("{}", l.aspect.variant());
            let keyed = format_ident!("__resil_{}_keyed", l.aspect.attr_name());
            let instance = format_ident!("__resil_{}_instance", l.aspect.attr_name());
            let span = key.span();
            let pick = quote_spanned!(span=> #p::keyed(&#site, &(#key)));
            Some(quote! {
                let #keyed = #pick;
                let #instance: &#p::#ty = &*#keyed;
            })
        });
        quote!(#(#lets)*)
    }

    /// `__resil_kinds`: the error type's `Classify::kind`, if it has one
    /// (chosen by autoref on the user's type), for the classifiers, an
    /// adaptive bulkhead's `limit-drop-errors` and the fallbacks' meters;
    /// once per function (or per nested function, for the layers from `j`),
    /// where any of them needs it.
    pub(crate) fn kinds(&self, j: usize) -> TokenStream {
        let needed = self.layers[j..].iter().any(|l| {
            l.fallback.is_some()
                || matches!(
                    l.aspect,
                    Aspect::CircuitBreaker | Aspect::Retry | Aspect::Bulkhead
                )
        });
        if !needed {
            return TokenStream::new();
        }
        let (p, err) = (&self.p, &self.err);
        quote! {
            let __resil_kinds = {
                #[allow(unused_imports)]
                use #p::{KindsOfAny as _, KindsOfClassify as _};
                (&&#p::Kinds::<#err>::new()).kind_fn()
            };
        }
    }

    fn classifier(&self, args: &AspectArgs) -> Option<TokenStream> {
        let p = &self.p;
        let (ok, err) = (&self.ok, &self.err);
        let kind_fn = quote!(__resil_kinds);
        let pred = |method: &str, path: &Option<syn::ExprPath>| {
            path.as_ref().map(|path| {
                let m = Ident::new(method, path.span());
                quote_spanned!(path.span()=> .#m(#path))
            })
        };
        match args.aspect {
            Aspect::CircuitBreaker => {
                let record = pred("record", &args.record);
                let ignore = pred("ignore", &args.ignore);
                let record_result = pred("record_result", &args.record_result);
                let transition = pred("transition_on_result", &args.transition_on_result);
                Some(quote! {
                    let __resil_circuit_breaker_classifier = #p::circuit_breaker_classifier(
                        #p::CircuitBreakerClassifier::<#ok, #err>::new()
                            #record #ignore #record_result #transition,
                        #kind_fn,
                    );
                })
            }
            Aspect::Retry => {
                let retry_on = pred("retry_on", &args.retry_on);
                let retry_on_result = pred("retry_on_result", &args.retry_on_result);
                // `consume_result`: `fn(u32, &T)`, called with the
                // value the core hands over; the closure captures nothing.
                let consume = args.consume_result.as_ref().map(|path| {
                    quote_spanned! {path.span()=>
                        .consume_result_before_retry(|__resil_attempt, __resil_value: #ok| {
                            #p::consume_result::<#ok>(#path)(__resil_attempt, &__resil_value)
                        })
                    }
                });
                // `retry_after`: the error's own wait, else the interval's.
                // `__private::retry_after` names the expected signature at the
                // user's path; the closure captures nothing, so it is a `fn`.
                let retry_after = args.retry_after.as_ref().map(|path| {
                    quote_spanned! {path.span()=>
                        .interval(|_, __resil_outcome: ::core::result::Result<&#ok, &#p::Error<#err>>| {
                            match __resil_outcome {
                                ::core::result::Result::Err(#p::Error::Inner(__resil_error)) => {
                                    #p::retry_after::<#err>(#path)(__resil_error)
                                }
                                _ => ::core::option::Option::None,
                            }
                        })
                    }
                });
                Some(quote! {
                    let __resil_retry_classifier = #p::retry_classifier(
                        #p::RetryClassifier::<#ok, #err>::new()
                            #retry_on #retry_on_result #consume #retry_after,
                        #kind_fn,
                    );
                })
            }
            _ => None,
        }
    }

    /// Compile-time checks of the arguments that no call exercises on its
    /// own, in a block that never runs: `Send + 'static` for a thread pool.
    fn argument_checks(&self) -> TokenStream {
        if !self.has(Aspect::ThreadPoolBulkhead) {
            return TokenStream::new();
        }
        let p = &self.p;
        let mut checks = Vec::new();
        if let Some(r) = &self.func.receiver {
            checks.push(quote_spanned!(r.span=> #p::pool_arg(&self);));
        }
        for param in &self.func.params {
            let ident = &param.ident;
            checks.push(quote_spanned!(param.span=> #p::pool_arg(&#ident);));
        }
        let output = &self.output.ty;
        let ret = &self.ret;
        checks.push(quote_spanned!(output.span()=> #p::pool_output::<#ret>();));
        quote! {
            #[allow(unreachable_code)]
            if false {
                #(#checks)*
            }
        }
    }

    /// The name of the receiver in the current scope.
    pub(crate) fn receiver_ident(&self, in_attempt: bool) -> TokenStream {
        if self.rename_self && in_attempt {
            quote!(__resil_self)
        } else {
            quote!(self)
        }
    }

    /// `|| -> Ret { body }`: a closure, so that the body's `return` and `?`
    /// keep their meaning, annotated with the declared type, so that type
    /// errors point at the signature.
    pub(crate) fn body_closure(&self, recv: &TokenStream, is_async: bool) -> TokenStream {
        let ret = &self.ret;
        let mut block = self.func.item.block.to_token_stream();
        if self.rename_self && recv.to_string() == "__resil_self" {
            block = rename_self(block);
        }
        let patterns = self
            .func
            .params
            .iter()
            .filter(|_| self.bind_patterns)
            .filter_map(|p| {
                let pat = p.pattern.as_ref()?;
                let ident = &p.ident;
                Some(quote!(let #pat = #ident;))
            })
            .collect::<Vec<_>>();
        let block = if patterns.is_empty() {
            block
        } else {
            quote!({ #(#patterns)* #block })
        };
        let asyncness = is_async.then(|| quote!(async));
        quote!(#asyncness || -> #ret #block)
    }

    /// Each attempt's own copy of every owned argument (`Clone`, checked
    /// through `__private::RetryArg` on the argument, or `HedgeArg` in a
    /// chain that hedges without retrying, so that the error names the
    /// attribute), and a reborrow of every `&mut` one.
    pub(crate) fn attempt_copies(&self) -> TokenStream {
        let p = &self.p;
        let again = if self.has(Aspect::Retry) {
            quote!(again)
        } else {
            quote!(again_hedged)
        };
        let mut copies = Vec::new();
        if let Some(r) = &self.func.receiver
            && r.passing == Passing::Owned
        {
            copies.push(quote_spanned!(r.span=> let __resil_self = #p::#again(&self);));
        }
        for param in &self.func.params {
            let ident = &param.ident;
            match param.passing {
                Passing::Owned => {
                    let m = param.mutable.then(|| quote!(mut));
                    copies.push(quote_spanned! {param.span=>
                        #[allow(unused_variables)]
                        let #m #ident = #p::#again(&#ident);
                    });
                }
                Passing::Unique => copies.push(quote! {
                    #[allow(unused_variables)]
                    let #ident = &mut *#ident;
                }),
                Passing::Shared => {}
            }
        }
        quote!(#(#copies)*)
    }

    /// The thread pool's own copy of every owned argument, when a fallback
    /// still needs the originals.
    pub(crate) fn pool_copies(&self, recv: &TokenStream) -> TokenStream {
        let p = &self.p;
        let mut copies = Vec::new();
        if let Some(r) = &self.func.receiver
            && r.passing == Passing::Owned
        {
            copies.push(quote_spanned!(r.span=> let __resil_self = #p::again_for_pool(&#recv);));
        }
        for param in &self.func.params {
            let ident = &param.ident;
            copies.push(quote_spanned! {param.span=>
                #[allow(unused_variables)]
                let #ident = #p::again_for_pool(&#ident);
            });
        }
        quote!(#(#copies)*)
    }
}

/// Replaces the body's `self` (not `self::` paths, not inside nested items)
/// with `__resil_self`, the copy this attempt or thread owns.
fn rename_self(tokens: TokenStream) -> TokenStream {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(tokens.len());
    let mut in_item = false;
    for (i, tt) in tokens.iter().enumerate() {
        match tt {
            TokenTree::Ident(id) if id == "fn" || id == "impl" || id == "trait" || id == "mod" => {
                in_item = true;
                out.push(tt.clone());
            }
            TokenTree::Ident(id) if id == "self" => {
                let path_root =
                    matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                if path_root || in_item {
                    out.push(tt.clone());
                } else {
                    out.push(TokenTree::Ident(Ident::new("__resil_self", id.span())));
                }
            }
            TokenTree::Group(g) => {
                if in_item {
                    // The item's own parameters and body keep their `self`.
                    in_item = g.delimiter() != proc_macro2::Delimiter::Brace;
                    out.push(tt.clone());
                } else {
                    let mut group = proc_macro2::Group::new(g.delimiter(), rename_self(g.stream()));
                    group.set_span(g.span());
                    out.push(TokenTree::Group(group));
                }
            }
            TokenTree::Punct(p) if p.as_char() == ';' => {
                in_item = false;
                out.push(tt.clone());
            }
            _ => out.push(tt.clone()),
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_the_receiver_but_not_paths_or_nested_items() {
        let out = rename_self(quote!({
            self.x + self::f() + g(|| self.y);
            fn h(&self) {
                self.z
            }
        }));
        assert_eq!(
            out.to_string(),
            quote!({
                __resil_self.x + self::f() + g(|| __resil_self.y);
                fn h(&self) {
                    self.z
                }
            })
            .to_string()
        );
    }
}
