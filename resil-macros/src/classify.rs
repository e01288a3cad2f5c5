//! `#[derive(Classify)]`: kind names for the variants of an error enum.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, LitStr};

use crate::attr::{ClassifyEnum, ClassifyVariant};
use crate::ctxt::Ctxt;

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
];

pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let cx = Ctxt::new();
    let krate = ClassifyEnum::from_attrs(&cx, &input.attrs).krate;
    let mut kinds: Vec<(syn::Ident, LitStr)> = Vec::new();
    match &input.data {
        Data::Enum(data) => {
            for variant in &data.variants {
                let kind = variant_kind(&cx, variant);
                let text = kind.value();
                if let Some((_, earlier)) = kinds.iter().find(|(_, k)| k.value() == text) {
                    let _ = earlier;
                    cx.error_spanned_by(
                        &variant.ident,
                        format!(
                            "kind `{text}` is given to two variants; name this one with `#[classify(kind = \"...\")]`"
                        ),
                    );
                } else if REJECTIONS.contains(&text.as_str()) {
                    cx.error_spanned_by(
                        &variant.ident,
                        format!(
                            "kind `{text}` is the name of a resil rejection, and resilience.toml could not tell them apart; name this variant's kind with `#[classify(kind = \"Upstream{text}\")]`"
                        ),
                    );
                } else if !valid_kind(&text) {
                    cx.error_spanned_by(
                        &kind,
                        format!("kind `{text}` may contain only ASCII letters, digits, `_` and `-`, and must not be empty"),
                    );
                }
                kinds.push((variant.ident.clone(), kind));
            }
        }
        Data::Struct(s) => cx.syn_error(syn::Error::new(
            s.struct_token.span,
            "`Classify` derives kind names for the variants of an enum; implement `resil::Classify` by hand for a struct",
        )),
        Data::Union(u) => cx.syn_error(syn::Error::new(
            u.union_token.span,
            "`Classify` derives kind names for the variants of an enum",
        )),
    }
    let krate = krate.unwrap_or_else(|| syn::parse_quote!(::resil));
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    if let Err(e) = cx.check() {
        // With the errors, an impl that names no kinds (serde's "dummy"), so
        // that one mistake in the enum is one error, not one more at every
        // use of the type as a `Classify`. It never compiles into a program:
        // the errors stop the build.
        let errors = e.to_compile_error();
        return quote! {
            #errors
            #[automatically_derived]
            impl #impl_generics #krate::__private::Classify for #ident #ty_generics #where_clause {
                const KINDS: &'static [&'static str] = &[];
                fn kind(&self) -> &'static str {
                    ""
                }
            }
        };
    }
    let names = kinds.iter().map(|(_, k)| k);
    let arms = kinds.iter().map(|(v, k)| quote!(Self::#v { .. } => #k,));
    quote! {
        #[automatically_derived]
        impl #impl_generics #krate::__private::Classify for #ident #ty_generics #where_clause {
            const KINDS: &'static [&'static str] = &[#(#names),*];
            fn kind(&self) -> &'static str {
                match *self {
                    #(#arms)*
                }
            }
        }
    }
}

fn valid_kind(kind: &str) -> bool {
    !kind.is_empty()
        && kind
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The kind of a variant: its name, or `#[classify(kind = "...")]`.
fn variant_kind(cx: &Ctxt, variant: &syn::Variant) -> LitStr {
    ClassifyVariant::from_attrs(cx, &variant.attrs)
        .kind
        .unwrap_or_else(|| LitStr::new(&variant.ident.to_string(), variant.ident.span()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_rejection_kinds_are_the_cores() {
        assert_eq!(super::REJECTIONS, resil::error::REJECTION_KINDS);
    }
}
