// A retried request is sent again for each attempt: it must be `Clone`.
use resil::retry::Retry;
use resil::tower::RetryLayer;
use tower::{ServiceBuilder, ServiceExt, service_fn};

struct Upload(Vec<u8>);

fn main() {
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(Retry::of_defaults("upload")))
        .service(service_fn(|u: Upload| async move { Ok::<_, std::io::Error>(u.0.len()) }));
    let _ = svc.oneshot(Upload(vec![1]));
}
