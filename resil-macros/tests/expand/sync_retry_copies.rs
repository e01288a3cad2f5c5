fn upload(&mut self, body: Vec<u8>, __resil_arg2: (u32, u32)) -> Result<(), Error> {
    const _: () = {
        ::my_resil::__private::inventory::submit! {
            ::my_resil::__private::Declaration { aspect :
            ::my_resil::__private::Aspect::Retry, name : "upload", module :
            ::core::module_path!(), function : "upload", file : ::core::file!(), line :
            ::core::line!(), fallback : ::core::option::Option::None, error_type :
            "Error", error_kinds : { #[allow(unused_imports)] use
            ::my_resil::__private::NoKinds as _; ::my_resil::__private::KindsOf:: < Error
            > ::KINDS }, detachable : false, }
        }
    };
    static __RESIL_RETRY: ::my_resil::__private::CallSite<
        ::my_resil::__private::Retry,
    > = ::my_resil::__private::CallSite::new("upload");
    let __resil_kinds = {
        #[allow(unused_imports)]
        use ::my_resil::__private::{KindsOfAny as _, KindsOfClassify as _};
        (&&::my_resil::__private::Kinds::<Error>::new()).kind_fn()
    };
    let __resil_retry_classifier = ::my_resil::__private::retry_classifier(
        ::my_resil::__private::RetryClassifier::<(), Error>::new(),
        __resil_kinds,
    );
    let __resil_outcome = {
        ::my_resil::__private::retry_scope(
            "upload",
            || {
                ::my_resil::__private::Stack::new()
                    .retry(__RESIL_RETRY.get().part(&__resil_retry_classifier))
                    .fault(::my_resil::__private::fault(&["upload"]))
                    .call(
                        ::my_resil::__private::Lift(|| {
                            #[allow(unused_variables)]
                            let mut body = ::my_resil::__private::again(&body);
                            #[allow(unused_variables)]
                            let __resil_arg2 = ::my_resil::__private::again(
                                &__resil_arg2,
                            );
                            (|| -> Result<(), Error> {
                                let (x, y) = __resil_arg2;
                                {
                                    body.push(0);
                                    self.send(body, x, y)
                                }
                            })()
                        }),
                    )
            },
        )
    };
    ::core::result::Result::map_err(__resil_outcome, ::my_resil::__private::into_error)
}
