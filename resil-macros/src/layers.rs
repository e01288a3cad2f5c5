//! The chain's call: the layers as the engine's `Stack`, around the body.
//!
//! One engine call runs the layers from the outermost down to the first one
//! with a fallback; that layer and those inside it (another engine call,
//! then the fallback) are the call of the layers outside. A time limiter
//! that may leave its future running takes what is inside it as a function
//! of its own, whose future can move into a task.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::attr::{Aspect, AspectArgs};
use crate::expand::Chain;

impl Chain<'_> {
    /// The expression of the layers from `i` inward, of type
    /// `Result<T, resil::Error<E>>`.
    pub(crate) fn layers_from(&self, i: usize, recv: &TokenStream) -> TokenStream {
        let n = self.layers.len();
        if i == n {
            // Nothing left but the body (inside a detachable time limiter),
            // and the fault around it.
            return self.faulted_body(recv);
        }
        // The segment ends above the next layer with a fallback, or below a
        // time limiter that may leave its future running.
        let end = (i + 1..=n)
            .find(|&j| self.detaches_below(j - 1) || (j < n && self.layers[j].fallback.is_some()))
            .unwrap_or(n);
        let detaching = self.detaches_below(end - 1);
        let segment = &self.layers[i..end];
        let p = &self.p;
        let is_async = self.func.is_async();
        let retry = segment.iter().any(|l| l.aspect.calls_again());
        let attempt_recv = self.receiver_ident(retry);
        let copies = if retry {
            self.attempt_copies()
        } else {
            TokenStream::new()
        };

        // The call of this segment's innermost layer.
        let (prelude, call) = if detaching {
            self.detached_call(end, &copies, retry)
        } else if end < n {
            (
                TokenStream::new(),
                self.recovering_call(end, &attempt_recv, &copies, retry),
            )
        } else if segment
            .last()
            .is_some_and(|l| l.aspect == Aspect::ThreadPoolBulkhead)
        {
            (
                TokenStream::new(),
                self.pool_jobs(&attempt_recv, &copies, retry),
            )
        } else {
            (
                TokenStream::new(),
                self.body_call(&attempt_recv, &copies, retry),
            )
        };
        let parts = segment.iter().map(|l| self.part(l, detaching));
        // The fault, innermost: around the body, in the segment that holds
        // it (a thread pool's body has it in its job, on the pool's thread).
        let innermost = end == n
            && !detaching
            && segment
                .last()
                .is_none_or(|l| l.aspect != Aspect::ThreadPoolBulkhead);
        let fault = if innermost {
            self.fault_part()
        } else {
            TokenStream::new()
        };
        let stack = quote!(#p::Stack::new() #(#parts)* #fault);
        let run = if is_async {
            quote!(#stack.call_async(#call).await)
        } else {
            quote!(#stack.call(#call))
        };
        let run = match segment.first() {
            Some(l) if l.aspect == Aspect::Retry => {
                // In a retry scope, so that a retrying call inside another
                // one is seen (`resil_retry_nested_total`).
                let name = self.name(l);
                if is_async {
                    quote!(#p::retry_scope_async(#name, #stack.call_async(#call)).await)
                } else {
                    quote!(#p::retry_scope(#name, || #stack.call(#call)))
                }
            }
            _ => run,
        };
        quote!({ #prelude #run })
    }

    /// Whether the layer at `i` is a time limiter that may leave its future
    /// running: what is inside it is then a function of its own.
    fn detaches_below(&self, i: usize) -> bool {
        self.layers[i].aspect == Aspect::TimeLimiter && self.detachable(i)
    }

    /// `.retry(part)`, `.circuit_breaker(part)`, ...: a layer's part.
    fn part(&self, args: &AspectArgs, detaching: bool) -> TokenStream {
        let p = &self.p;
        let inst = self.instance(args);
        match args.aspect {
            Aspect::Deadline => quote!(.deadline(#inst.part())),
            Aspect::Retry => quote!(.retry(#inst.part(&__resil_retry_classifier))),
            Aspect::Hedge => quote!(.hedge(#inst.part())),
            Aspect::CircuitBreaker => {
                quote!(.circuit_breaker(#inst.part(&__resil_circuit_breaker_classifier)))
            }
            Aspect::RateLimiter => {
                let permits = match &args.permits {
                    Some(n) => quote!(#n),
                    None => quote!(1),
                };
                quote!(.rate_limiter(#inst.part(#permits)))
            }
            Aspect::TimeLimiter if detaching => quote! {
                .time_limiter({
                    #[allow(unused_imports)]
                    use #p::{DetachAny as _, DetachSendStatic as _};
                    (&&#p::Detach::new(&__resil_time_limited_call)).part(#inst)
                })
            },
            Aspect::TimeLimiter => quote!(.time_limiter(#inst.part())),
            // The error kinds, for an adaptive limit's `limit-drop-errors`.
            Aspect::Bulkhead => quote!(.bulkhead(#inst.part().kinds(__resil_kinds))),
            Aspect::ThreadPoolBulkhead => quote!(.bulkhead(#inst.part())),
        }
    }

    /// The body as the innermost call: called for each attempt (with the
    /// attempt's copies of the arguments) under a retry, once otherwise.
    fn body_call(&self, recv: &TokenStream, copies: &TokenStream, retry: bool) -> TokenStream {
        let p = &self.p;
        let is_async = self.func.is_async();
        let body = self.body_closure(recv, is_async);
        match (is_async, retry) {
            (true, true) => quote! {
                #p::Lift(|| {
                    #copies
                    async move { #p::body_async(#body).await }
                })
            },
            (true, false) => quote!(#p::Lift(#p::once(|| #p::body_async(#body)))),
            (false, true) => quote! {
                #p::Lift(|| {
                    #copies
                    (#body)()
                })
            },
            (false, false) => quote!(#p::Lift(#p::once(#body))),
        }
    }

    /// The tasks of a thread pool: each one owns what the body uses (the
    /// attempt's copies under a retry, the pool's own copies when a
    /// fallback still needs the arguments).
    fn pool_jobs(&self, recv: &TokenStream, copies: &TokenStream, retry: bool) -> TokenStream {
        let p = &self.p;
        let pool_copies = if self.pool_clones {
            self.pool_copies(recv)
        } else {
            TokenStream::new()
        };
        let body = self.body_closure(&self.receiver_ident(true), false);
        // The fault, innermost, runs on the pool's thread around the body;
        // its part is found on the caller's (a test scope's faults are).
        let names = self.fault_names();
        let job = quote! {
            let __resil_fault = #p::pool_fault(&[#(#names),*]);
            move || #p::Stack::new().fault(__resil_fault.part()).call(#p::Lift(#p::once(#body)))
        };
        if retry || self.pool_clones {
            quote! {
                #p::ChainJobs(|| {
                    #copies
                    #pool_copies
                    #job
                })
            }
        } else {
            quote!(#p::ChainJobs(#p::once(move || { #job })))
        }
    }

    /// The layer at `j`, which has a fallback, and those inside it, as the
    /// call of the layers outside: the fallback takes that layer's error.
    fn recovering_call(
        &self,
        j: usize,
        recv: &TokenStream,
        copies: &TokenStream,
        retry: bool,
    ) -> TokenStream {
        let p = &self.p;
        let args = &self.layers[j];
        let inner = self.layers_from(j, recv);
        let fallback = self.fallback_call(args, recv);
        let recovered = quote! {
            match #inner {
                ::core::result::Result::Err(__resil_error) => {
                    ::core::result::Result::map_err(#fallback, #p::Error::Inner)
                }
                __resil_done => __resil_done,
            }
        };
        match (self.func.is_async(), retry) {
            (true, true) => quote!(#p::Call(|| { #copies async move { #recovered } })),
            (true, false) => quote!(#p::Call(#p::once(async || { #recovered }))),
            (false, true) => quote!(#p::Call(|| { #copies #recovered })),
            (false, false) => quote!(#p::Call(#p::once(|| #recovered))),
        }
    }

    /// What is inside a detachable time limiter (from `j`), as a function
    /// of the owned arguments, so that its future owns what it uses and its
    /// `Send` is known where the time limiter's part is chosen.
    fn detached_call(
        &self,
        j: usize,
        copies: &TokenStream,
        retry: bool,
    ) -> (TokenStream, TokenStream) {
        let p = &self.p;
        let next = self.layers_from(j, &self.receiver_ident(false));
        let kinds = self.kinds(j);
        let (ok, err) = (&self.ok, &self.err);
        let params = self.func.params.iter().map(|a| {
            let (ident, ty) = (&a.ident, &a.ty);
            let m = a.mutable.then(|| quote!(mut));
            quote!(#m #ident: #ty)
        });
        let args: Vec<_> = self.func.params.iter().map(|a| &a.ident).collect();
        let f = format_ident!("__resil_time_limited");
        self.nested.borrow_mut().push(quote! {
            #[allow(clippy::too_many_arguments)]
            async fn #f(#(#params),*)
                -> ::core::result::Result<#ok, #p::Error<#err>>
            {
                #kinds
                #next
            }
        });
        let call = if retry {
            quote!(|| { #copies #f(#(#args),*) })
        } else {
            quote!(#p::once(|| #f(#(#args),*)))
        };
        (
            quote!(let __resil_time_limited_call = #call;),
            quote!(#p::Call(__resil_time_limited_call)),
        )
    }

    /// `.fault(part)`: the faults of the function's names (each once,
    /// innermost first) apply to its calls.
    fn fault_part(&self) -> TokenStream {
        let fault = self.fault_expr();
        quote!(.fault(#fault))
    }

    /// The fault's part of the function's names.
    fn fault_expr(&self) -> TokenStream {
        let p = &self.p;
        let names = self.fault_names();
        quote!(#p::fault(&[#(#names),*]))
    }

    /// The function's names, each once, innermost first.
    fn fault_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        // a deadline of a fixed `timeout` has no name of the configuration
        for l in self.layers.iter().rev() {
            let Some(name) = l.name.as_ref().map(syn::LitStr::value) else {
                continue;
            };
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// The innermost expression when nothing but the body is left (inside a
    /// detachable time limiter that has no layer inside it): the body, and
    /// the fault around it.
    fn faulted_body(&self, recv: &TokenStream) -> TokenStream {
        let p = &self.p;
        let body = self.body_closure(recv, self.func.is_async());
        let fault = self.fault_part();
        if self.func.is_async() {
            quote! {
                #p::Stack::new() #fault
                    .call_async(#p::Lift(#p::once(|| #p::body_async(#body))))
                    .await
            }
        } else {
            quote!(#p::Stack::new() #fault .call(#p::Lift(#p::once(#body))))
        }
    }
}
