/// Looks the stock up.
pub async fn query(&self, sku: String, mode: Mode) -> Result<View, InventoryError> {
    const _: () = {
        ::resil::__private::inventory::submit! {
            ::resil::__private::Declaration { aspect : ::resil::__private::Aspect::Retry,
            name : "inventory-query", module : ::core::module_path!(), function :
            "query", file : ::core::file!(), line : ::core::line!(), fallback :
            ::core::option::Option::None, error_type : "InventoryError", error_kinds : {
            #[allow(unused_imports)] use ::resil::__private::NoKinds as _;
            ::resil::__private::KindsOf:: < InventoryError > ::KINDS }, detachable :
            false, }
        }
    };
    const _: () = {
        ::resil::__private::inventory::submit! {
            ::resil::__private::Declaration { aspect :
            ::resil::__private::Aspect::CircuitBreaker, name : "inventory-query", module
            : ::core::module_path!(), function : "query", file : ::core::file!(), line :
            ::core::line!(), fallback : ::core::option::Option::Some("Self::unknown"),
            error_type : "InventoryError", error_kinds : { #[allow(unused_imports)] use
            ::resil::__private::NoKinds as _; ::resil::__private::KindsOf:: <
            InventoryError > ::KINDS }, detachable : false, }
        }
    };
    const _: () = {
        ::resil::__private::inventory::submit! {
            ::resil::__private::Declaration { aspect :
            ::resil::__private::Aspect::RateLimiter, name : "inventory-query", module :
            ::core::module_path!(), function : "query", file : ::core::file!(), line :
            ::core::line!(), fallback : ::core::option::Option::None, error_type :
            "InventoryError", error_kinds : { #[allow(unused_imports)] use
            ::resil::__private::NoKinds as _; ::resil::__private::KindsOf:: <
            InventoryError > ::KINDS }, detachable : false, }
        }
    };
    const _: () = {
        ::resil::__private::inventory::submit! {
            ::resil::__private::Declaration { aspect :
            ::resil::__private::Aspect::TimeLimiter, name : "inventory-query", module :
            ::core::module_path!(), function : "query", file : ::core::file!(), line :
            ::core::line!(), fallback : ::core::option::Option::None, error_type :
            "InventoryError", error_kinds : { #[allow(unused_imports)] use
            ::resil::__private::NoKinds as _; ::resil::__private::KindsOf:: <
            InventoryError > ::KINDS }, detachable : false, }
        }
    };
    const _: () = {
        ::resil::__private::inventory::submit! {
            ::resil::__private::Declaration { aspect :
            ::resil::__private::Aspect::Bulkhead, name : "inventory-query", module :
            ::core::module_path!(), function : "query", file : ::core::file!(), line :
            ::core::line!(), fallback : ::core::option::Option::None, error_type :
            "InventoryError", error_kinds : { #[allow(unused_imports)] use
            ::resil::__private::NoKinds as _; ::resil::__private::KindsOf:: <
            InventoryError > ::KINDS }, detachable : false, }
        }
    };
    static __RESIL_RETRY: ::resil::__private::CallSite<::resil::__private::Retry> = ::resil::__private::CallSite::new(
        "inventory-query",
    );
    static __RESIL_CIRCUIT_BREAKER: ::resil::__private::CallSite<
        ::resil::__private::CircuitBreaker,
    > = ::resil::__private::CallSite::new("inventory-query");
    static __RESIL_RATE_LIMITER: ::resil::__private::CallSite<
        ::resil::__private::RateLimiter,
    > = ::resil::__private::CallSite::new("inventory-query");
    static __RESIL_TIME_LIMITER: ::resil::__private::CallSite<
        ::resil::__private::TimeLimiter,
    > = ::resil::__private::CallSite::new("inventory-query");
    static __RESIL_BULKHEAD: ::resil::__private::CallSite<
        ::resil::__private::Bulkhead,
    > = ::resil::__private::CallSite::new("inventory-query");
    #[diagnostic::on_unimplemented(
        message = "`Self::unknown` is not a fallback of `query`",
        label = "expected `async fn(&Self, String, Mode) -> Result<View, InventoryError>` or `async fn(&Self, String, Mode, resil::Error<InventoryError>) -> Result<View, InventoryError>`",
        note = "a fallback of `#[circuit_breaker]` takes the parameters of `query` (the receiver included), optionally followed by the error, and returns `Result<View, InventoryError>`; it is async, like `query`"
    )]
    trait __ResilCircuitBreakerFallback<Args, E, R, M> {
        type Output;
        fn call(self, args: Args, error: ::resil::__private::Error<E>) -> Self::Output;
    }
    impl<
        F,
        Fut,
        A0,
        A1,
        A2,
        E,
        R,
    > __ResilCircuitBreakerFallback<(A0, A1, A2), E, R, ::resil::__private::WithError>
    for F
    where
        F: ::core::ops::FnOnce(A0, A1, A2, ::resil::__private::Error<E>) -> Fut,
        Fut: ::core::future::Future<Output = R>,
    {
        type Output = Fut;
        #[inline]
        fn call(
            self,
            (a0, a1, a2): (A0, A1, A2),
            error: ::resil::__private::Error<E>,
        ) -> Fut {
            self(a0, a1, a2, error)
        }
    }
    impl<
        F,
        Fut,
        A0,
        A1,
        A2,
        E,
        R,
    > __ResilCircuitBreakerFallback<(A0, A1, A2), E, R, ::resil::__private::WithoutError>
    for F
    where
        F: ::core::ops::FnOnce(A0, A1, A2) -> Fut,
        Fut: ::core::future::Future<Output = R>,
    {
        type Output = Fut;
        #[inline]
        fn call(
            self,
            (a0, a1, a2): (A0, A1, A2),
            _: ::resil::__private::Error<E>,
        ) -> Fut {
            self(a0, a1, a2)
        }
    }
    let __resil_kinds = {
        #[allow(unused_imports)]
        use ::resil::__private::{KindsOfAny as _, KindsOfClassify as _};
        (&&::resil::__private::Kinds::<InventoryError>::new()).kind_fn()
    };
    let __resil_retry_classifier = ::resil::__private::retry_classifier(
        ::resil::__private::RetryClassifier::<View, InventoryError>::new()
            .retry_on(is_transient),
        __resil_kinds,
    );
    let __resil_circuit_breaker_classifier = ::resil::__private::circuit_breaker_classifier(
        ::resil::__private::CircuitBreakerClassifier::<View, InventoryError>::new()
            .record(is_transient),
        __resil_kinds,
    );
    let __resil_outcome = {
        ::resil::__private::retry_scope_async(
                "inventory-query",
                ::resil::__private::Stack::new()
                    .retry(__RESIL_RETRY.get().part(&__resil_retry_classifier))
                    .call_async(
                        ::resil::__private::Call(|| {
                            #[allow(unused_variables)]
                            let sku = ::resil::__private::again(&sku);
                            #[allow(unused_variables)]
                            let mode = ::resil::__private::again(&mode);
                            async move {
                                match {
                                    ::resil::__private::Stack::new()
                                        .circuit_breaker(
                                            __RESIL_CIRCUIT_BREAKER
                                                .get()
                                                .part(&__resil_circuit_breaker_classifier),
                                        )
                                        .rate_limiter(__RESIL_RATE_LIMITER.get().part(1))
                                        .time_limiter(__RESIL_TIME_LIMITER.get().part())
                                        .bulkhead(
                                            __RESIL_BULKHEAD.get().part().kinds(__resil_kinds),
                                        )
                                        .fault(::resil::__private::fault(&["inventory-query"]))
                                        .call_async(
                                            ::resil::__private::Lift(
                                                ::resil::__private::once(|| ::resil::__private::body_async(async || -> Result<
                                                    View,
                                                    InventoryError,
                                                > { self.db.get(&sku, mode).await })),
                                            ),
                                        )
                                        .await
                                } {
                                    ::core::result::Result::Err(__resil_error) => {
                                        ::core::result::Result::map_err(
                                            ::resil::__private::count_fallback(
                                                    "inventory-query",
                                                    ::resil::__private::Aspect::CircuitBreaker,
                                                    &__resil_error,
                                                    __resil_kinds,
                                                )
                                                .ran(
                                                    __ResilCircuitBreakerFallback::<
                                                        (&Self, String, Mode),
                                                        InventoryError,
                                                        Result<View, InventoryError>,
                                                        _,
                                                    >::call(Self::unknown, (self, sku, mode), __resil_error)
                                                        .await,
                                                ),
                                            ::resil::__private::Error::Inner,
                                        )
                                    }
                                    __resil_done => __resil_done,
                                }
                            }
                        }),
                    ),
            )
            .await
    };
    ::core::result::Result::map_err(__resil_outcome, ::resil::__private::into_error)
}
