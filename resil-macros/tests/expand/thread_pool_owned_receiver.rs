async fn export(self: Arc<Self>, id: u64) -> io::Result<Report> {
    const _: () = {
        ::resil::__private::inventory::submit! {
            ::resil::__private::Declaration { aspect :
            ::resil::__private::Aspect::ThreadPoolBulkhead, name : "report-export",
            module : ::core::module_path!(), function : "export", file : ::core::file!(),
            line : ::core::line!(), fallback :
            ::core::option::Option::Some("Self::later"), error_type :
            "<io::Result<Report>as::resil::__private::IsResult>::Err", error_kinds : {
            #[allow(unused_imports)] use ::resil::__private::NoKinds as _;
            ::resil::__private::KindsOf:: < < io::Result < Report > as
            ::resil::__private::IsResult > ::Err > ::KINDS }, detachable : false, }
        }
    };
    static __RESIL_THREAD_POOL_BULKHEAD: ::resil::__private::CallSite<
        ::resil::__private::ThreadPoolBulkhead,
    > = ::resil::__private::CallSite::new("report-export");
    #[diagnostic::on_unimplemented(
        message = "`Self::later` is not a fallback of `export`",
        label = "expected `async fn(Arc<Self>, u64) -> io::Result<Report>` or `async fn(Arc<Self>, u64, resil::Error<_>) -> io::Result<Report>`",
        note = "a fallback of `#[thread_pool_bulkhead]` takes the parameters of `export` (the receiver included), optionally followed by the error, and returns `io::Result<Report>`; it is async, like `export`"
    )]
    trait __ResilThreadPoolBulkheadFallback<Args, E, R, M> {
        type Output;
        fn call(self, args: Args, error: ::resil::__private::Error<E>) -> Self::Output;
    }
    impl<
        F,
        Fut,
        A0,
        A1,
        E,
        R,
    > __ResilThreadPoolBulkheadFallback<(A0, A1), E, R, ::resil::__private::WithError>
    for F
    where
        F: ::core::ops::FnOnce(A0, A1, ::resil::__private::Error<E>) -> Fut,
        Fut: ::core::future::Future<Output = R>,
    {
        type Output = Fut;
        #[inline]
        fn call(self, (a0, a1): (A0, A1), error: ::resil::__private::Error<E>) -> Fut {
            self(a0, a1, error)
        }
    }
    impl<
        F,
        Fut,
        A0,
        A1,
        E,
        R,
    > __ResilThreadPoolBulkheadFallback<(A0, A1), E, R, ::resil::__private::WithoutError>
    for F
    where
        F: ::core::ops::FnOnce(A0, A1) -> Fut,
        Fut: ::core::future::Future<Output = R>,
    {
        type Output = Fut;
        #[inline]
        fn call(self, (a0, a1): (A0, A1), _: ::resil::__private::Error<E>) -> Fut {
            self(a0, a1)
        }
    }
    #[allow(unreachable_code)]
    if false {
        ::resil::__private::pool_arg(&self);
        ::resil::__private::pool_arg(&id);
        ::resil::__private::pool_output::<io::Result<Report>>();
    }
    let __resil_kinds = {
        #[allow(unused_imports)]
        use ::resil::__private::{KindsOfAny as _, KindsOfClassify as _};
        (&&::resil::__private::Kinds::<
            <io::Result<Report> as ::resil::__private::IsResult>::Err,
        >::new())
            .kind_fn()
    };
    let __resil_outcome = {
        ::resil::__private::Stack::new()
            .bulkhead(__RESIL_THREAD_POOL_BULKHEAD.get().part())
            .call_async(
                ::resil::__private::ChainJobs(|| {
                    let __resil_self = ::resil::__private::again_for_pool(&self);
                    #[allow(unused_variables)]
                    let id = ::resil::__private::again_for_pool(&id);
                    let __resil_fault = ::resil::__private::pool_fault(
                        &["report-export"],
                    );
                    move || {
                        ::resil::__private::Stack::new()
                            .fault(__resil_fault.part())
                            .call(
                                ::resil::__private::Lift(
                                    ::resil::__private::once(|| -> io::Result<Report> {
                                        __resil_self.render(id)
                                    }),
                                ),
                            )
                    }
                }),
            )
            .await
    };
    match __resil_outcome {
        ::core::result::Result::Ok(__resil_value) => {
            ::core::result::Result::Ok(__resil_value)
        }
        ::core::result::Result::Err(__resil_error) => {
            ::resil::__private::count_fallback(
                    "report-export",
                    ::resil::__private::Aspect::ThreadPoolBulkhead,
                    &__resil_error,
                    __resil_kinds,
                )
                .ran(
                    __ResilThreadPoolBulkheadFallback::<
                        (Arc<Self>, u64),
                        <io::Result<Report> as ::resil::__private::IsResult>::Err,
                        io::Result<Report>,
                        _,
                    >::call(Self::later, (self, id), __resil_error)
                        .await,
                )
        }
    }
}
