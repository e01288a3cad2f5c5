async fn charge(
    tenant: String,
    region: &Region,
    cents: u64,
) -> Result<Receipt, PayError> {
    const _: () = {
        ::resil::__private::inventory::submit! {
            ::resil::__private::Declaration { aspect : ::resil::__private::Aspect::Retry,
            name : "pay", module : ::core::module_path!(), function : "charge", file :
            ::core::file!(), line : ::core::line!(), fallback :
            ::core::option::Option::None, error_type : "PayError", error_kinds : {
            #[allow(unused_imports)] use ::resil::__private::NoKinds as _;
            ::resil::__private::KindsOf:: < PayError > ::KINDS }, detachable : false, }
        }
    };
    const _: () = {
        ::resil::__private::inventory::submit! {
            ::resil::__private::Declaration { aspect :
            ::resil::__private::Aspect::CircuitBreaker, name : "pay", module :
            ::core::module_path!(), function : "charge", file : ::core::file!(), line :
            ::core::line!(), fallback : ::core::option::Option::None, error_type :
            "PayError", error_kinds : { #[allow(unused_imports)] use
            ::resil::__private::NoKinds as _; ::resil::__private::KindsOf:: < PayError >
            ::KINDS }, detachable : false, }
        }
    };
    static __RESIL_RETRY: ::resil::__private::KeyedCallSite<::resil::__private::Retry> = ::resil::__private::KeyedCallSite::new(
        "pay",
    );
    static __RESIL_CIRCUIT_BREAKER: ::resil::__private::KeyedCallSite<
        ::resil::__private::CircuitBreaker,
    > = ::resil::__private::KeyedCallSite::new("pay");
    let __resil_kinds = {
        #[allow(unused_imports)]
        use ::resil::__private::{KindsOfAny as _, KindsOfClassify as _};
        (&&::resil::__private::Kinds::<PayError>::new()).kind_fn()
    };
    let __resil_retry_classifier = ::resil::__private::retry_classifier(
        ::resil::__private::RetryClassifier::<Receipt, PayError>::new(),
        __resil_kinds,
    );
    let __resil_circuit_breaker_classifier = ::resil::__private::circuit_breaker_classifier(
        ::resil::__private::CircuitBreakerClassifier::<Receipt, PayError>::new(),
        __resil_kinds,
    );
    let __resil_retry_keyed = ::resil::__private::keyed(
        &__RESIL_RETRY,
        &(region.code()),
    );
    let __resil_retry_instance: &::resil::__private::Retry = &*__resil_retry_keyed;
    let __resil_circuit_breaker_keyed = ::resil::__private::keyed(
        &__RESIL_CIRCUIT_BREAKER,
        &(tenant),
    );
    let __resil_circuit_breaker_instance: &::resil::__private::CircuitBreaker = &*__resil_circuit_breaker_keyed;
    let __resil_outcome = {
        ::resil::__private::retry_scope_async(
                "pay",
                ::resil::__private::Stack::new()
                    .retry(__resil_retry_instance.part(&__resil_retry_classifier))
                    .circuit_breaker(
                        __resil_circuit_breaker_instance
                            .part(&__resil_circuit_breaker_classifier),
                    )
                    .fault(::resil::__private::fault(&["pay"]))
                    .call_async(
                        ::resil::__private::Lift(|| {
                            #[allow(unused_variables)]
                            let tenant = ::resil::__private::again(&tenant);
                            #[allow(unused_variables)]
                            let cents = ::resil::__private::again(&cents);
                            async move {
                                ::resil::__private::body_async(async || -> Result<
                                        Receipt,
                                        PayError,
                                    > { gateway::charge(&tenant, region, cents).await })
                                    .await
                            }
                        }),
                    ),
            )
            .await
    };
    ::core::result::Result::map_err(__resil_outcome, ::resil::__private::into_error)
}
