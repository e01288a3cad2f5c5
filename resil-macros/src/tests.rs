//! Expansion snapshots: `expand::aspect` on `quote!` input, printed with
//! prettyplease and compared with the files in `tests/expand/`
//! (`UPDATE_EXPECT=1 cargo test -p resil-macros` rewrites them).

use proc_macro2::TokenStream;
use quote::quote;

use crate::attr::Aspect;
use crate::expand;

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
    expect_test::expect_file!["../tests/expand/sync_circuit_breaker_with_fallback.rs"]
        .assert_eq(&out);
}

#[test]
fn async_method_with_every_async_aspect_in_source_order_reversed() {
    let out = expand(
        Aspect::Bulkhead,
        quote!(name = "inventory-query"),
        quote! {
            #[resil::time_limiter(name = "inventory-query")]
            #[resil::circuit_breaker(name = "inventory-query", fallback = Self::unknown, record = is_transient)]
            #[rate_limiter(name = "inventory-query")]
            #[resil::retry(name = "inventory-query", retry_on = is_transient)]
            /// Looks the stock up.
            pub async fn query(&self, sku: String, mode: Mode) -> Result<View, InventoryError> {
                self.db.get(&sku, mode).await
            }
        },
    );
    expect_test::expect_file!["../tests/expand/async_method_full_chain.rs"].assert_eq(&out);
}

#[test]
fn thread_pool_with_owned_receiver_and_fallback() {
    let out = expand(
        Aspect::ThreadPoolBulkhead,
        quote!(name = "report-export", fallback = Self::later),
        quote! {
            async fn export(self: Arc<Self>, id: u64) -> io::Result<Report> {
                self.render(id)
            }
        },
    );
    expect_test::expect_file!["../tests/expand/thread_pool_owned_receiver.rs"].assert_eq(&out);
}

#[test]
fn sync_retry_copies_owned_arguments_per_attempt() {
    let out = expand(
        Aspect::Retry,
        quote!(name = "upload", crate = "::my_resil"),
        quote! {
            fn upload(&mut self, mut body: Vec<u8>, (x, y): (u32, u32)) -> Result<(), Error> {
                body.push(0);
                self.send(body, x, y)
            }
        },
    );
    expect_test::expect_file!["../tests/expand/sync_retry_copies.rs"].assert_eq(&out);
}

#[test]
fn mistakes_leave_the_item_intact() {
    let out = expand::aspect(
        Aspect::CircuitBreaker,
        quote!(name = "inventory query", fallbak = degraded),
        quote! {
            #[resil::bulkhead(nmae = "x")]
            #[inline]
            fn query(sku: u64) -> Result<u64, DbError> {
                Ok(sku)
            }
        },
    );
    let text = out.to_string();
    // The item, less its resil attributes, then one error per mistake.
    assert!(
        text.starts_with(
            "# [inline] fn query (sku : u64) -> Result < u64 , DbError > { Ok (sku) }"
        ),
        "{text}"
    );
    assert_eq!(text.matches("compile_error").count(), 3, "{text}");
    assert!(
        text.contains("unknown `circuit_breaker` argument `fallbak`; did you mean `fallback`?")
    );
    assert!(text.contains("unknown `bulkhead` argument `nmae`; did you mean `name`?"));
    assert!(text.contains("instance name `inventory query` may contain only"));
}

#[test]
fn keyed_circuit_breaker_under_a_retry() {
    let out = expand(
        Aspect::CircuitBreaker,
        quote!(name = "pay", key = tenant),
        quote! {
            #[resil::retry(name = "pay", key = region.code())]
            async fn charge(tenant: String, region: &Region, cents: u64) -> Result<Receipt, PayError> {
                gateway::charge(&tenant, region, cents).await
            }
        },
    );
    expect_test::expect_file!["../tests/expand/keyed_circuit_breaker_under_a_retry.rs"]
        .assert_eq(&out);
}

#[test]
fn classify_names_each_variant() {
    let out = pretty(crate::classify::derive(quote! {
        #[classify(crate = "::my_resil")]
        enum DbError<T: Clone> {
            #[classify(kind = "ConnectionRefused")]
            Refused(T),
            NotFound { sku: u64 },
            Closed,
        }
    }));
    expect_test::expect_file!["../tests/expand/classify.rs"].assert_eq(&out);
}

#[test]
fn classify_mistakes_come_in_source_order_with_an_impl() {
    let out = crate::classify::derive(quote! {
        enum DbError {
            Timeout,
            #[classify(knd = "a")]
            Refused,
            #[classify(kind = "Refused")]
            Closed,
        }
    });
    let text = out.to_string();
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle}: {text}"))
    };
    // each variant's mistakes, in source order
    assert!(at("kind `Timeout` is the name of a resil rejection") < at("`knd`"));
    assert!(at("`knd`") < at("kind `Refused` is given to two variants"));
    assert_eq!(text.matches("compile_error").count(), 3, "{text}");
    // and an impl naming no kinds, so that uses of the type add no errors
    assert!(
        text.contains("const KINDS : & 'static [& 'static str] = & [] ;"),
        "{text}"
    );
}
