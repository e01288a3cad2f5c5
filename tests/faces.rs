//! The order of the layers, tested once against every face: the same calls
//! through the attributes, `Decorators`, `resil::tower::named` and the
//! Spring Cloud facade publish the same events, in the same order, since
//! they all run on one engine.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use resil::clock::{Clock, TokioClock};
use resil::config::{Registries, Resilience};
use resil::event::{Event, EventKind};
use resil::{Decorators, Error, Rejection};
use tower::{ServiceExt, service_fn};

/// Two of each kind of instance: one set per face, each with the same
/// settings, so that each face's events can be compared with the others'.
const CONFIG: &str = r#"
[circuitbreaker.configs.default]
sliding-window-size = 10
minimum-number-of-calls = 6
wait-duration-in-open-state = "2s"
permitted-number-of-calls-in-half-open-state = 2

[retry.configs.default]
max-attempts = 3
wait-duration = "100ms"

[ratelimiter.configs.default]
limit-for-period = 1000
limit-refresh-period = "1s"

[timelimiter.configs.default]
timeout-duration = "1s"

[bulkhead.configs.default]
max-concurrent-calls = 1
max-wait-duration = "0ms"
"#;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Ok,
    Fail,
    Slow,
}

#[derive(Debug, Clone, PartialEq)]
enum Failure {
    Down,
    Rejected(String),
}

impl From<Rejection> for Failure {
    fn from(r: Rejection) -> Self {
        Failure::Rejected(r.to_string())
    }
}

async fn downstream(mode: Mode) -> Result<u32, Failure> {
    match mode {
        Mode::Ok => Ok(7),
        Mode::Fail => Err(Failure::Down),
        Mode::Slow => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(7)
        }
    }
}

#[resil::retry(name = "faces-attributes")]
#[resil::circuit_breaker(name = "faces-attributes")]
#[resil::rate_limiter(name = "faces-attributes")]
#[resil::time_limiter(name = "faces-attributes")]
#[resil::bulkhead(name = "faces-attributes")]
async fn through_attributes(mode: Mode) -> Result<u32, Failure> {
    downstream(mode).await
}

#[resil::retry(name = "faces-deadline-attributes")]
#[resil::circuit_breaker(name = "faces-deadline-attributes")]
#[resil::rate_limiter(name = "faces-deadline-attributes")]
#[resil::time_limiter(name = "faces-deadline-attributes")]
#[resil::bulkhead(name = "faces-deadline-attributes")]
async fn deadline_through_attributes(mode: Mode) -> Result<u32, Failure> {
    downstream(mode).await
}

#[resil::circuit_breaker(name = "faces-cloud-attributes")]
#[resil::time_limiter(name = "faces-cloud-attributes")]
#[resil::bulkhead(name = "faces-cloud-attributes")]
async fn three_through_attributes(mode: Mode) -> Result<u32, Failure> {
    downstream(mode).await
}

/// Every event of the instances named `name`, as `layer: kind`, in the
/// order they were published (the consumers run as each one is).
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn record<K: EventKind>(
        &self,
        layer: &'static str,
    ) -> impl Fn(&Event<K>) + Send + Sync + 'static {
        let log = self.0.clone();
        move |event| {
            let kind = format!("{:?}", event.kind());
            // The kind, without the timings that vary with the face's own
            // reading of the clock.
            let kind = kind.split([' ', '{', '(']).next().unwrap_or("").to_owned();
            log.lock().unwrap().push(format!("{layer}: {kind}"));
        }
    }

    fn watch(&self, r: &Registries, name: &str) {
        let cb = r.circuit_breakers().circuit_breaker(name);
        cb.event_publisher().on_event(self.record("circuitbreaker"));
        let retry = r.retries().retry(name);
        retry.event_publisher().on_event(self.record("retry"));
        let rl = r.rate_limiters().rate_limiter(name);
        rl.event_publisher().on_event(self.record("ratelimiter"));
        let tl = r.time_limiters().time_limiter(name);
        tl.event_publisher().on_event(self.record("timelimiter"));
        let bh = r.bulkheads().bulkhead(name);
        bh.event_publisher().on_event(self.record("bulkhead"));
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// The calls each face makes (`None`: a pause of 3 s outside the chain,
/// long enough for an open breaker to let probes through): a success, a
/// failure retried, a timeout retried, the breaker opening and refusing,
/// its probes, and its closing.
const SCRIPT: [Option<Mode>; 9] = [
    Some(Mode::Ok),
    Some(Mode::Fail),
    Some(Mode::Slow),
    Some(Mode::Ok),
    None,
    Some(Mode::Ok),
    Some(Mode::Ok),
    Some(Mode::Fail),
    Some(Mode::Ok),
];

/// The calls each face makes under a deadline of 1.5 s: a success, a
/// failure retried, and a slow call whose first attempt times out (1 s)
/// and whose second is cut short by the deadline (0.4 s left).
const DEADLINE_SCRIPT: [Mode; 3] = [Mode::Ok, Mode::Fail, Mode::Slow];

/// The deadline of [`DEADLINE_SCRIPT`]'s calls.
const DEADLINE: Duration = Duration::from_millis(1500);

/// Runs `call` for each call of the script, pausing where it says.
async fn script<F: std::future::Future>(mut call: impl FnMut(Mode) -> F) {
    for step in SCRIPT {
        match step {
            Some(mode) => drop(call(mode).await),
            None => tokio::time::sleep(Duration::from_secs(3)).await,
        }
    }
}

#[tokio::test(start_paused = true)]
async fn every_face_publishes_the_same_events_in_the_same_order() {
    Resilience::builder()
        .file_contents("faces.toml", CONFIG)
        .env_vars(Vec::<(String, String)>::new())
        .clock(TokioClock::new())
        .init()
        .unwrap();
    let r = resil::registries();
    let clock = TokioClock::new();

    // The five layers: attributes, Decorators, tower::named.
    let attributes = Log::default();
    attributes.watch(r, "faces-attributes");
    script(through_attributes).await;
    let decorators = Log::default();
    decorators.watch(r, "faces-decorators");
    {
        let name = "faces-decorators";
        let retry = r.retries().retry(name);
        let cb = r.circuit_breakers().circuit_breaker(name);
        let rl = r.rate_limiters().rate_limiter(name);
        let tl = r.time_limiters().time_limiter(name);
        let bh = r.bulkheads().bulkhead(name);
        // Written inside out: the order is the engine's.
        let chain = Decorators::new()
            .with_bulkhead(&bh)
            .with_time_limiter(&tl)
            .with_rate_limiter(&rl)
            .with_circuit_breaker(&cb)
            .with_retry(&retry);
        script(|mode| chain.call_async(move || downstream(mode))).await;
    }
    let tower = Log::default();
    tower.watch(r, "faces-tower");
    {
        let layer = resil::tower::named("faces-tower")
            .bulkhead()
            .time_limiter()
            .rate_limiter()
            .circuit_breaker()
            .retry()
            .build();
        let svc = tower::ServiceBuilder::new()
            .layer(layer)
            .service(service_fn(downstream));
        script(|mode| {
            let call: tower::util::Oneshot<_, Mode> = svc.clone().oneshot(mode);
            async move {
                let _: Result<u32, Error<Failure>> = call.await;
            }
        })
        .await;
    }
    let seen = attributes.take();
    for expected in [
        "timelimiter: Timeout",
        "retry: Retry",
        "circuitbreaker: CallNotPermitted",
        "circuitbreaker: StateTransition",
        "ratelimiter: SuccessfulAcquire",
        "bulkhead: CallFinished",
    ] {
        assert!(
            seen.iter().any(|e| e == expected),
            "no {expected}: {seen:#?}"
        );
    }
    assert_eq!(decorators.take(), seen, "Decorators");
    assert_eq!(tower.take(), seen, "tower::named");

    // The cloud facade's layers (breaker, time limiter, bulkhead): as the
    // attributes with the same three.
    let three = Log::default();
    three.watch(r, "faces-cloud-attributes");
    script(three_through_attributes).await;
    let cloud = Log::default();
    cloud.watch(r, "faces-cloud");
    {
        let breaker = resil::cloud::factory().create("faces-cloud");
        script(|mode| breaker.run_async(move || downstream(mode), |_error| 0)).await;
    }
    let seen = three.take();
    assert!(seen.iter().any(|e| e == "timelimiter: Timeout"));
    assert_eq!(cloud.take(), seen, "cloud");
    assert!(clock.now() > resil::clock::Nanos::ZERO);

    every_face_spends_the_same_deadline(r, clock).await;
}

/// The five layers under a deadline: the attributes inside a
/// `deadline::scope`, `Decorators::with_deadline` and tower's
/// `DeadlineLayer` over `named` publish the same events, the deadline's
/// cut included.
async fn every_face_spends_the_same_deadline(r: &Registries, clock: TokioClock) {
    use resil::deadline::{self, Deadline, DeadlineConfig};
    let config = DeadlineConfig::builder().timeout(DEADLINE).build().unwrap();
    let attributes = Log::default();
    attributes.watch(r, "faces-deadline-attributes");
    let mut outcomes = Vec::new();
    for mode in DEADLINE_SCRIPT {
        let call = deadline::scope_on(clock.clone(), DEADLINE, deadline_through_attributes(mode));
        outcomes.push(call.await.map_err(|e| format!("{e:?}")));
    }
    let decorators = Log::default();
    decorators.watch(r, "faces-deadline-decorators");
    {
        let name = "faces-deadline-decorators";
        let retry = r.retries().retry(name);
        let cb = r.circuit_breakers().circuit_breaker(name);
        let rl = r.rate_limiters().rate_limiter(name);
        let tl = r.time_limiters().time_limiter(name);
        let bh = r.bulkheads().bulkhead(name);
        let checkout = Deadline::with_clock(name, config, clock.clone());
        let chain = Decorators::new()
            .with_bulkhead(&bh)
            .with_time_limiter(&tl)
            .with_rate_limiter(&rl)
            .with_circuit_breaker(&cb)
            .with_retry(&retry)
            .with_deadline(&checkout);
        for mode in DEADLINE_SCRIPT {
            let out = chain.call_async(move || downstream(mode)).await;
            drop(out);
        }
    }
    let tower = Log::default();
    tower.watch(r, "faces-deadline-tower");
    {
        let svc = tower::ServiceBuilder::new()
            .layer(resil::tower::DeadlineLayer::with_clock(
                DEADLINE,
                clock.clone(),
            ))
            .layer(
                resil::tower::named("faces-deadline-tower")
                    .bulkhead()
                    .time_limiter()
                    .rate_limiter()
                    .circuit_breaker()
                    .retry()
                    .build(),
            )
            .service(service_fn(|request: http::Request<Mode>| {
                downstream(*request.body())
            }));
        for mode in DEADLINE_SCRIPT {
            let request = http::Request::new(mode);
            let _ = svc.clone().oneshot(request).await;
        }
    }
    let seen = attributes.take();
    let slow = &outcomes[2];
    assert!(
        slow.as_ref()
            .is_err_and(|e| e.contains("deadline left no time: noticed by timelimiter")),
        "{outcomes:?}"
    );
    for expected in [
        "timelimiter: Timeout",
        "timelimiter: Error",
        "retry: Retry",
        "circuitbreaker: IgnoredError",
    ] {
        assert!(
            seen.iter().any(|e| e == expected),
            "no {expected}: {seen:#?}"
        );
    }
    assert_eq!(decorators.take(), seen, "Decorators");
    assert_eq!(tower.take(), seen, "tower");
}
