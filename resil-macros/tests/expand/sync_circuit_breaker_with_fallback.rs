fn query(sku: &str, mode: Mode) -> Result<View, DbError> {
    const _: () = {
        ::resil::__private::inventory::submit! {
            ::resil::__private::Declaration { aspect :
            ::resil::__private::Aspect::CircuitBreaker, name : "inventory-query", module
            : ::core::module_path!(), function : "query", file : ::core::file!(), line :
            ::core::line!(), fallback : ::core::option::Option::Some("degraded"),
            error_type : "DbError", error_kinds : { #[allow(unused_imports)] use
            ::resil::__private::NoKinds as _; ::resil::__private::KindsOf:: < DbError >
            ::KINDS }, detachable : false, }
        }
    };
    static __RESIL_CIRCUIT_BREAKER: ::resil::__private::CallSite<
        ::resil::__private::CircuitBreaker,
    > = ::resil::__private::CallSite::new("inventory-query");
    #[diagnostic::on_unimplemented(
        message = "`degraded` is not a fallback of `query`",
        label = "expected `fn(&str, Mode) -> Result<View, DbError>` or `fn(&str, Mode, resil::Error<DbError>) -> Result<View, DbError>`",
        note = "a fallback of `#[circuit_breaker]` takes the parameters of `query` (the receiver included), optionally followed by the error, and returns `Result<View, DbError>`; it is sync, like `query`"
    )]
    trait __ResilCircuitBreakerFallback<Args, E, R, M> {
        type Output;
        fn call(self, args: Args, error: ::resil::__private::Error<E>) -> Self::Output;
    }
    impl<
        F,
        A0,
        A1,
        E,
        R,
    > __ResilCircuitBreakerFallback<(A0, A1), E, R, ::resil::__private::WithError> for F
    where
        F: ::core::ops::FnOnce(A0, A1, ::resil::__private::Error<E>) -> R,
    {
        type Output = R;
        #[inline]
        fn call(self, (a0, a1): (A0, A1), error: ::resil::__private::Error<E>) -> R {
            self(a0, a1, error)
        }
    }
    impl<
        F,
        A0,
        A1,
        E,
        R,
    > __ResilCircuitBreakerFallback<(A0, A1), E, R, ::resil::__private::WithoutError>
    for F
    where
        F: ::core::ops::FnOnce(A0, A1) -> R,
    {
        type Output = R;
        #[inline]
        fn call(self, (a0, a1): (A0, A1), _: ::resil::__private::Error<E>) -> R {
            self(a0, a1)
        }
    }
    let __resil_kinds = {
        #[allow(unused_imports)]
        use ::resil::__private::{KindsOfAny as _, KindsOfClassify as _};
        (&&::resil::__private::Kinds::<DbError>::new()).kind_fn()
    };
    let __resil_circuit_breaker_classifier = ::resil::__private::circuit_breaker_classifier(
        ::resil::__private::CircuitBreakerClassifier::<View, DbError>::new(),
        __resil_kinds,
    );
    let __resil_outcome = {
        ::resil::__private::Stack::new()
            .circuit_breaker(
                __RESIL_CIRCUIT_BREAKER.get().part(&__resil_circuit_breaker_classifier),
            )
            .fault(::resil::__private::fault(&["inventory-query"]))
            .call(
                ::resil::__private::Lift(
                    ::resil::__private::once(|| -> Result<View, DbError> {
                        db::get(sku, mode)
                    }),
                ),
            )
    };
    match __resil_outcome {
        ::core::result::Result::Ok(__resil_value) => {
            ::core::result::Result::Ok(__resil_value)
        }
        ::core::result::Result::Err(__resil_error) => {
            ::resil::__private::count_fallback(
                    "inventory-query",
                    ::resil::__private::Aspect::CircuitBreaker,
                    &__resil_error,
                    __resil_kinds,
                )
                .ran(
                    __ResilCircuitBreakerFallback::<
                        (&str, Mode),
                        DbError,
                        Result<View, DbError>,
                        _,
                    >::call(degraded, (sku, mode), __resil_error),
                )
        }
    }
}
