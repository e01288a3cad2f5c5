//! Fallbacks: the local trait that checks a fallback's signature on the
//! user's path, the fallback's call, and what the outermost layer's error
//! becomes.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use crate::ast::tokens_text;
use crate::attr::{Aspect, AspectArgs};
use crate::expand::Chain;

impl Chain<'_> {
    pub(crate) fn fallback_trait_ident(aspect: Aspect) -> Ident {
        format_ident!("__Resil{}Fallback", aspect.variant())
    }

    /// A trait local to this function whose implementations are exactly the
    /// two accepted fallback shapes, so that a mismatch is one error, on the
    /// user's fallback path, in words that state the expected signature.
    pub(crate) fn fallback_trait(&self, args: &AspectArgs) -> TokenStream {
        let p = &self.p;
        let path = args.fallback.as_ref().unwrap();
        let tr = Self::fallback_trait_ident(args.aspect);
        let n = self.func.params.len() + usize::from(self.func.receiver.is_some());
        let a: Vec<Ident> = (0..n).map(|i| format_ident!("A{}", i)).collect();
        let v: Vec<Ident> = (0..n).map(|i| format_ident!("a{}", i)).collect();
        let is_async = self.func.is_async();

        let mut shown: Vec<String> = Vec::new();
        if let Some(r) = &self.func.receiver {
            shown.push(tokens_text(r.ty.to_token_stream()));
        }
        for param in &self.func.params {
            shown.push(tokens_text(param.ty.to_token_stream()));
        }
        let ret = tokens_text(self.ret.clone());
        let err = match &self.output.err {
            Some(e) => tokens_text(e.to_token_stream()),
            None => "_".to_owned(),
        };
        let fn_kw = if is_async { "async fn" } else { "fn" };
        let plain = format!("{fn_kw}({}) -> {ret}", shown.join(", "));
        let mut with_error = shown.clone();
        with_error.push(format!("resil::Error<{err}>"));
        let with_error = format!("{fn_kw}({}) -> {ret}", with_error.join(", "));
        let owner = args.aspect.attr_name();
        let func_name = self.func.item.sig.ident.to_string();
        let message = escape_braces(&format!(
            "`{}` is not a fallback of `{func_name}`",
            tokens_text(path.to_token_stream())
        ));
        let label = escape_braces(&format!("expected `{plain}` or `{with_error}`"));
        let note = escape_braces(&format!(
            "a fallback of `#[{owner}]` takes the parameters of `{func_name}` (the receiver included), optionally followed by the error, and returns `{ret}`{}",
            if is_async { "; it is async, like `{func_name}`" } else { "; it is sync, like `{func_name}`" }
        )
        .replace("{func_name}", &func_name));

        let (bound_err, bound_plain, output, output_ty) = if is_async {
            (
                quote!(F: ::core::ops::FnOnce(#(#a,)* #p::Error<E>) -> Fut, Fut: ::core::future::Future<Output = R>),
                quote!(F: ::core::ops::FnOnce(#(#a),*) -> Fut, Fut: ::core::future::Future<Output = R>),
                quote!(Fut),
                quote!(
                    type Output = Fut;
                ),
            )
        } else {
            (
                quote!(F: ::core::ops::FnOnce(#(#a,)* #p::Error<E>) -> R),
                quote!(F: ::core::ops::FnOnce(#(#a),*) -> R),
                quote!(R),
                quote!(
                    type Output = R;
                ),
            )
        };
        let fut = is_async.then(|| quote!(Fut,));
        quote! {
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            trait #tr<Args, E, R, M> {
                type Output;
                fn call(self, args: Args, error: #p::Error<E>) -> Self::Output;
            }
            impl<F, #fut #(#a,)* E, R> #tr<(#(#a,)*), E, R, #p::WithError> for F
            where
                #bound_err
            {
                #output_ty
                #[inline]
                fn call(self, (#(#v,)*): (#(#a,)*), error: #p::Error<E>) -> #output {
                    self(#(#v,)* error)
                }
            }
            impl<F, #fut #(#a,)* E, R> #tr<(#(#a,)*), E, R, #p::WithoutError> for F
            where
                #bound_plain
            {
                #output_ty
                #[inline]
                fn call(self, (#(#v,)*): (#(#a,)*), _: #p::Error<E>) -> #output {
                    self(#(#v),*)
                }
            }
        }
    }

    /// `Trait::<(Args), E, Ret, _>::call(path, (args), __resil_error)`,
    /// spanned on the user's path (awaited for an async function).
    pub(crate) fn fallback_call(&self, args: &AspectArgs, recv: &TokenStream) -> TokenStream {
        let path = args.fallback.as_ref().unwrap();
        let span = path.span();
        let tr = Self::fallback_trait_ident(args.aspect);
        let (ret, err) = (&self.ret, &self.err);
        let mut types = Vec::new();
        let mut values = Vec::new();
        if let Some(r) = &self.func.receiver {
            types.push(r.ty.to_token_stream());
            let recv = respan(recv.clone(), span);
            values.push(recv);
        }
        for param in &self.func.params {
            types.push(if param.has_impl_trait {
                quote!(_)
            } else {
                param.ty.to_token_stream()
            });
            values.push(respan(param.ident.to_token_stream(), span));
        }
        let call = quote_spanned! {span=>
            #tr::<(#(#types,)*), #err, #ret, _>::call(#path, (#(#values,)*), __resil_error)
        };
        let call = if self.func.is_async() {
            quote!(#call.await)
        } else {
            call
        };
        // counted as `resil_fallback_calls_total{name, layer, cause, outcome}`
        let p = &self.p;
        let name = self.name(args);
        let aspect = format_ident!("{}", args.aspect.variant());
        quote! {
            #p::count_fallback(#name, #p::Aspect::#aspect, &__resil_error, __resil_kinds)
                .ran(#call)
        }
    }

    /// After the outermost layer: its fallback, or rejections folded into `E`.
    pub(crate) fn finish(&self) -> TokenStream {
        let p = &self.p;
        let outer = &self.layers[0];
        if outer.fallback.is_none() {
            let output = self.output;
            let span = match &output.err {
                Some(e) => e.span(),
                None => output.ty.span(),
            };
            return quote_spanned!(span=> ::core::result::Result::map_err(__resil_outcome, #p::into_error));
        }
        let on_error = self.fallback_call(outer, &self.receiver_ident(false));
        quote! {
            match __resil_outcome {
                ::core::result::Result::Ok(__resil_value) => ::core::result::Result::Ok(__resil_value),
                ::core::result::Result::Err(__resil_error) => #on_error,
            }
        }
    }
}

/// The same tokens, every one spanned at `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            tt.set_span(span);
            tt
        })
        .collect()
}

/// `{` and `}` are placeholders in `on_unimplemented` strings.
fn escape_braces(s: &str) -> String {
    s.replace('{', "{{").replace('}', "}}")
}
