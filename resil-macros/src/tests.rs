//! Expansion snapshots: `expand::aspect` on `quote!` input, printed with
//! prettyplease and compared with the files in `tests/expand/`
//! (`UPDATE_EXPECT=1 cargo test -p resil-macros` rewrites them).

use proc_macro2::TokenStream;
use quote::quote;

use crate::expand;
use crate::parse::Aspect;

fn pretty(tokens: TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("expansion is not a file: {e}\n{tokens}"),
    }
}

fn expand(aspect: Aspect, args: TokenStream, item: TokenStream) -> String {
    pretty(expand::aspect(aspect, args, item))
}

#[test]
fn sync_circuit_breaker_with_fallback() {
    let out = expand(
        Aspect::CircuitBreaker,
        quote!(name = "inventory-query", fallback = degraded),
        quote! {
            fn query(sku: &str, mode: Mode) -> Result<View, DbError> {
                db::get(sku, mode)
            }
        },
    );
    expect_test::expect_file!["../tests/expand/sync_circuit_breaker_with_fallback.rs"].assert_eq(&out);
}
