//! `#[derive(Classify)]`: kind names for the variants of an error enum.

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

use crate::ast::Enum;
use crate::ctxt::Ctxt;
use crate::validate;

pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let cx = Ctxt::new();
    let input = Enum::from_syn(&cx, &input);
    let mut variants = Vec::new();
    for variant in input.variants(&cx) {
        validate::variant_kind(&cx, &variants, &variant);
        variants.push(variant);
    }
    let krate = input
        .attrs
        .krate
        .unwrap_or_else(|| syn::parse_quote!(::resil));
    let ident = input.ident;
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
    let names = variants.iter().map(|v| &v.kind);
    let arms = variants.iter().map(|v| {
        let (ident, kind) = (v.ident, &v.kind);
        quote!(Self::#ident { .. } => #kind,)
    });
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
