//! `resil suggest`: a commented resilience.toml derived from capacity:
//! Little's law for the
//! bulkhead, a breaker window that decides within the detection time at the
//! given rate (and holds twice its minimum number of calls, widened at low
//! rates, so that the breaker can open at any rate, and still when the rate
//! drops), a timeout between the normal p99 and the deadline, retry
//! attempts that fit the deadline (no retry when only one attempt fits), and
//! the deadline itself, with the worst case that fits in it.
//! Every number says how it was derived, and what it writes passes `resil
//! check --strict`.

use std::fmt::Write as _;
use std::time::Duration;

use resil_config::duration;

/// What the author knows about the dependency.
#[derive(Debug, Clone)]
pub(crate) struct Capacity {
    pub(crate) name: String,
    /// Calls per second.
    pub(crate) rate: f64,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    pub(crate) deadline: Option<Duration>,
    pub(crate) pool: Option<u32>,
    pub(crate) detect: Duration,
}

/// Headroom over Little's law for jitter and an instance leaving the fleet.
const HEADROOM: f64 = 1.5;
/// Fewer calls than this make a failure rate noise.
const MIN_SAMPLE: u32 = 10;
/// More calls than this add history, not confidence.
const MAX_SAMPLE: u32 = 100;
/// The timeout over the normal p99, so that a healthy slow call is not cut.
const TIMEOUT_OVER_P99: &str = "1.5";
/// At most this many attempts, whatever the deadline allows.
const MAX_ATTEMPTS: u32 = 3;
/// The breaker's window holds this many times its minimum number of calls
/// at the stated rate, so that it still opens when the rate drops.
const WINDOW_OVER_MINIMUM: f64 = 2.0;

/// `200/s`, `200`, `12000/min`, `1/h`: calls per second.
pub(crate) fn parse_rate(text: &str) -> Result<f64, String> {
    let (n, per) = match text.split_once('/') {
        Some((n, per)) => (n.trim(), per.trim()),
        None => (text.trim(), "s"),
    };
    let n: f64 = n
        .parse()
        .map_err(|_| format!("`{text}` is not a rate: expected a number of calls, like `200/s`"))?;
    let seconds = match per {
        "s" | "sec" | "second" => 1.0,
        "m" | "min" | "minute" => 60.0,
        "h" | "hour" => 3600.0,
        _ => {
            return Err(format!(
                "`{text}`: the unit `{per}` is not one of s, min, h"
            ));
        }
    };
    let rate = n / seconds;
    if rate.is_finite() && rate > 0.0 {
        Ok(rate)
    } else {
        Err(format!("`{text}`: a rate must be above 0"))
    }
}

/// A duration argument, in resilience.toml's forms (`100ms`, `1s`).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    match duration::parse(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(format!("`{text}`: must be above 0")),
        Err(e) => Err(format!("`{text}`: {e}")),
    }
}

fn millis(d: Duration) -> String {
    duration::format(d)
}

/// The commented resilience.toml.
///
/// # Errors
///
/// When the numbers contradict each other (a p99 below the p50, a deadline
/// below the p50).
pub(crate) fn suggest(c: &Capacity) -> Result<String, String> {
    if c.p99 < c.p50 {
        return Err(format!(
            "--latency-p99 {} is below --latency-p50 {}",
            millis(c.p99),
            millis(c.p50)
        ));
    }
    if let Some(d) = c.deadline
        && d < c.p50
    {
        return Err(format!(
            "--deadline {} is below --latency-p50 {}: most calls could not finish in time",
            millis(d),
            millis(c.p50)
        ));
    }
    let name = &c.name;
    let mut out = String::new();
    let rate = c.rate;
    let _ = writeln!(
        out,
        "# resilience.toml for `{name}`, derived by `resil suggest` from {rate} calls/s, p50 {}, p99 {}{}{}.",
        millis(c.p50),
        millis(c.p99),
        c.deadline
            .map(|d| format!(", deadline {}", millis(d)))
            .unwrap_or_default(),
        c.pool.map(|p| format!(", pool {p}")).unwrap_or_default(),
    );
    let _ = writeln!(out, "# Starting points to load-test, not final numbers.\n");

    // Bulkhead: Little's law, with headroom, capped by the pool.
    let in_flight = rate * c.p50.as_secs_f64();
    let with_headroom = (in_flight * HEADROOM).ceil().max(1.0) as u32;
    let (calls, cap_note) = match c.pool {
        Some(pool) if pool < with_headroom => {
            (pool, format!("; capped at the downstream pool of {pool}"))
        }
        _ => (with_headroom, String::new()),
    };
    let _ = writeln!(out, "[bulkhead.instances.{name}]");
    let _ = writeln!(
        out,
        "# Little's law: {rate}/s x {} (p50) = {in_flight:.1} calls in flight; x{HEADROOM} for jitter and an instance leaving = {with_headroom}{cap_note}.",
        millis(c.p50)
    );
    if (rate * c.p99.as_secs_f64()).ceil() as u32 > calls {
        let _ = writeln!(
            out,
            "# At the p99 ({}) {:.0} would be in flight: a slow spell is refused at once, not queued.",
            millis(c.p99),
            rate * c.p99.as_secs_f64()
        );
    }
    let _ = writeln!(out, "max-concurrent-calls = {calls}");
    if let Some(pool) = c.pool {
        let _ = writeln!(
            out,
            "# The downstream's connection pool: `resil check` warns if `max-concurrent-calls` ever exceeds it."
        );
        let _ = writeln!(out, "pool-size = {pool}");
    }
    let _ = writeln!(
        out,
        "# Fail fast when full: a queue only moves the wait into the caller."
    );
    let _ = writeln!(out, "max-wait-duration = 0\n");

    // Time limiter: between the normal p99 and the deadline.
    // 1.5 x the p99, exactly (no float rounding).
    let mut timeout = c.p99 * 3 / 2;
    let timeout_note = match c.deadline {
        Some(d) if timeout > d => {
            timeout = d;
            format!(
                "{TIMEOUT_OVER_P99} x the p99 would pass the deadline: the deadline, {}; the p99 is close to it, so expect healthy calls to time out",
                millis(d)
            )
        }
        Some(d) => format!(
            "{TIMEOUT_OVER_P99} x the p99 ({}), under the deadline ({})",
            millis(c.p99),
            millis(d)
        ),
        None => format!(
            "{TIMEOUT_OVER_P99} x the p99 ({}); no deadline given, so nothing bounds it from above",
            millis(c.p99)
        ),
    };
    let _ = writeln!(out, "[timelimiter.instances.{name}]");
    let _ = writeln!(
        out,
        "# Above the normal p99, so that a healthy call is not cut: {timeout_note}."
    );
    let _ = writeln!(out, "timeout-duration = \"{}\"", millis(timeout));
    let _ = writeln!(out, "cancel-running-future = true\n");

    // Circuit breaker: a decision within the detection time at this rate,
    // on a window that holds the minimum twice over (so that it still opens
    // when the rate drops), widened where the detection time holds too few.
    let detect = c.detect.as_secs_f64();
    let expected = rate * detect;
    let minimum = ((expected / WINDOW_OVER_MINIMUM).round() as u32).clamp(MIN_SAMPLE, MAX_SAMPLE);
    let needed = (WINDOW_OVER_MINIMUM * f64::from(minimum) / rate).ceil();
    let window_secs = (c.detect.as_secs().max(1) as f64).max(needed) as u64;
    let holds = rate * window_secs as f64;
    let decides_in = f64::from(minimum) / rate;
    let _ = writeln!(out, "[circuitbreaker.instances.{name}]");
    if window_secs as f64 > detect {
        let _ = writeln!(
            out,
            "# A time window of {window_secs}s, wider than the detection time ({detect}s), which holds {expected:.1} calls at {rate}/s: {WINDOW_OVER_MINIMUM} x {minimum} calls / {rate}/s = {needed:.0}s, so that the breaker can open at all, and still when the rate drops."
        );
    } else {
        let _ = writeln!(
            out,
            "# A time window of the detection time ({window_secs}s): it holds {holds:.0} calls at {rate}/s ({WINDOW_OVER_MINIMUM} x the minimum or more, so that it still opens when the rate drops), and no older history."
        );
    }
    let _ = writeln!(out, "sliding-window-type = \"TIME_BASED\"");
    let _ = writeln!(out, "sliding-window-size = {window_secs}");
    let note = if decides_in > detect {
        format!(
            "at {rate}/s, {minimum} calls take {decides_in:.0}s, longer than the detection time: a lower rate cannot be judged faster without judging noise"
        )
    } else {
        format!("reached in {decides_in:.1}s at {rate}/s")
    };
    let _ = writeln!(
        out,
        "# Half the calls the window holds, between {MIN_SAMPLE} (fewer make the rate noise) and {MAX_SAMPLE}: {minimum}, {note}."
    );
    let _ = writeln!(out, "minimum-number-of-calls = {minimum}");
    let _ = writeln!(out, "failure-rate-threshold = 50");
    let _ = writeln!(
        out,
        "# A call slower than the normal p99 is slow; 60 % of them open the breaker."
    );
    let _ = writeln!(out, "slow-call-duration-threshold = \"{}\"", millis(c.p99));
    let _ = writeln!(out, "slow-call-rate-threshold = 60");
    let _ = writeln!(
        out,
        "# Probes after the window's span: the dependency has had as long as the detection took."
    );
    let _ = writeln!(out, "wait-duration-in-open-state = \"{window_secs}s\"");
    let _ = writeln!(out, "permitted-number-of-calls-in-half-open-state = 3");
    let _ = writeln!(
        out,
        "# The probes must answer within the timeout, or the breaker stays HALF_OPEN."
    );
    let _ = writeln!(
        out,
        "max-wait-duration-in-half-open-state = \"{}\"\n",
        millis(timeout * 3)
    );

    // Retry: attempts that fit the deadline.
    let wait = c.p50;
    let (attempts, retry_note) = match c.deadline {
        Some(d) => {
            let per_attempt = (timeout + wait).as_secs_f64();
            let fit = ((d + wait).as_secs_f64() / per_attempt).floor() as u32;
            let n = fit.clamp(1, MAX_ATTEMPTS);
            (
                n,
                format!(
                    "{n} attempt(s) of at most {} plus {} between fit the deadline of {} (at most {MAX_ATTEMPTS})",
                    millis(timeout),
                    millis(wait),
                    millis(d)
                ),
            )
        }
        None => (
            2,
            "no deadline given: one retry; give --deadline to size it".to_owned(),
        ),
    };
    if attempts < 2 {
        // a retry of one attempt cannot retry: none is written
        let _ = writeln!(
            out,
            "# No retry: {retry_note}; a retry of one attempt could not retry, so none is written (shorten the timeout or lengthen the deadline to make room for a second attempt)."
        );
        deadline_section(&mut out, c, timeout, 1, wait);
        return Ok(out);
    }
    let _ = writeln!(out, "[retry.instances.{name}]");
    let _ = writeln!(out, "# {retry_note}.");
    let _ = writeln!(out, "max-attempts = {attempts}");
    let _ = writeln!(
        out,
        "# The p50 between attempts: a transient failure has passed by then."
    );
    let _ = writeln!(out, "wait-duration = \"{}\"", millis(wait));
    let _ = writeln!(
        out,
        "# Never retry a refusal: the breaker, the bulkhead and the timeout said no for a reason."
    );
    let _ = writeln!(
        out,
        "ignore-errors = [\"CallNotPermitted\", \"BulkheadFull\", \"Timeout\"]"
    );
    deadline_section(&mut out, c, timeout, attempts, wait);
    Ok(out)
}

/// `[deadline.instances.<name>]` of `--deadline`, with the worst case of
/// what was written above (`attempts` of at most `timeout`, `wait` between
/// them, no bulkhead wait) that fits in it; nothing without `--deadline`.
fn deadline_section(
    out: &mut String,
    c: &Capacity,
    timeout: Duration,
    attempts: u32,
    wait: Duration,
) {
    let Some(d) = c.deadline else {
        return;
    };
    let worst = timeout * attempts + wait * (attempts - 1);
    let arithmetic = if attempts > 1 {
        format!(
            "{attempts} attempts x {} (the timeout; the bulkhead does not wait) + {} waits x {} = {}",
            millis(timeout),
            attempts - 1,
            millis(wait),
            millis(worst)
        )
    } else {
        format!(
            "1 attempt x {} (the timeout) = {}",
            millis(timeout),
            millis(worst)
        )
    };
    let _ = writeln!(out, "\n[deadline.instances.{}]", c.name);
    let _ = writeln!(
        out,
        "# The whole call's budget (--deadline), outermost: `#[resil::deadline(name = \"{}\")]`. Its worst case, {arithmetic}, fits in it, so no call is cut short before its attempts run out; a caller's shorter deadline still wins.",
        c.name
    );
    let _ = writeln!(out, "timeout = \"{}\"", millis(d));
}

#[cfg(test)]
mod tests {
    use super::*;
    use resil_config::Resilience;
    use resil_core::clock::ManualClock;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn capacity() -> Capacity {
        Capacity {
            name: "inventory-query".to_owned(),
            rate: 200.0,
            p50: ms(100),
            p99: ms(400),
            deadline: Some(ms(1000)),
            pool: Some(30),
            detect: Duration::from_secs(10),
        }
    }

    fn value<'a>(toml: &'a str, key: &str) -> &'a str {
        toml.lines()
            .find_map(|l| l.strip_prefix(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no `{key}` in\n{toml}"))
    }

    #[test]
    fn the_example_inventory_query() {
        let toml = suggest(&capacity()).unwrap();
        // 200/s x 100 ms = 20 in flight, x1.5 = 30, the pool allows 30.
        assert_eq!(value(&toml, "max-concurrent-calls"), "30");
        assert_eq!(value(&toml, "pool-size"), "30");
        // 1.5 x 400 ms = 600 ms, under the 1 s deadline.
        assert_eq!(value(&toml, "timeout-duration"), "\"600ms\"");
        // 2000 calls in 10 s: the minimum is capped at 100.
        assert_eq!(value(&toml, "minimum-number-of-calls"), "100");
        // (1000 + 100) / (600 + 100) = 1.57: one attempt fits, so no
        // retry, and the comment says why.
        assert!(!toml.contains("[retry."), "{toml}");
        assert!(toml.contains("# No retry: 1 attempt(s) of at most 600ms plus 100ms between fit the deadline of 1s"), "{toml}");
        // the deadline, with the worst case that fits in it
        assert!(
            toml.contains("\n[deadline.instances.inventory-query]\n"),
            "{toml}"
        );
        assert!(
            toml.contains("Its worst case, 1 attempt x 600ms (the timeout) = 600ms, fits in it"),
            "{toml}"
        );
        assert_eq!(value(&toml, "timeout"), "\"1s\"");
    }

    #[test]
    fn with_room_for_retries_the_deadline_shows_their_arithmetic() {
        let mut c = capacity();
        c.deadline = Some(ms(2500));
        let toml = suggest(&c).unwrap();
        // (2500 + 100) / (600 + 100) = 3.7: three attempts
        assert_eq!(value(&toml, "max-attempts"), "3");
        assert!(
            toml.contains("Its worst case, 3 attempts x 600ms (the timeout; the bulkhead does not wait) + 2 waits x 100ms = 2s, fits in it"),
            "{toml}"
        );
        assert_eq!(value(&toml, "timeout"), "\"2500ms\"");
        // without --deadline, none is written
        c.deadline = None;
        assert!(!suggest(&c).unwrap().contains("[deadline."));
    }

    /// Failures at `actual` calls/s on the suggested breaker, on a manual
    /// clock: whether it opens, and after how long.
    fn opens(toml: &str, name: &str, actual: f64) -> Option<Duration> {
        let clock = ManualClock::new();
        let loaded = Resilience::builder()
            .file_contents("resilience.toml", toml)
            .env_vars(Vec::<(String, String)>::new())
            .offline(true)
            .clock(clock.clone())
            .load()
            .unwrap_or_else(|e| panic!("{e}\n{toml}"));
        let cb = loaded.registries().circuit_breakers().circuit_breaker(name);
        let every = Duration::from_secs_f64(1.0 / actual);
        let mut spent = Duration::ZERO;
        for _ in 0..1000 {
            clock.advance(every);
            spent += every;
            if !cb.try_acquire_permission() {
                return Some(spent);
            }
            cb.on_error(ms(1));
        }
        None
    }

    #[test]
    fn at_any_rate_it_passes_strict_and_its_breaker_opens() {
        let mut rates = vec![0.1, 0.25, 0.8, 1.0, 1.5, 2.3, 7.0, 12.0, 12.5, 40.0];
        rates.extend([200.0, 3_333.0, 100_000.0, 1_000_000.0]);
        for rate in rates {
            for deadline in [None, Some(ms(1000)), Some(ms(5000))] {
                let c = Capacity {
                    rate,
                    deadline,
                    ..capacity()
                };
                let toml = suggest(&c).unwrap();
                let strict = Resilience::builder()
                    .file_contents("resilience.toml", toml.as_str())
                    .env_vars(Vec::<(String, String)>::new())
                    .offline(true)
                    .strict(true)
                    .load();
                assert!(
                    strict.is_ok(),
                    "{rate}/s: {}\n{toml}",
                    strict.err().unwrap()
                );
                let window: u64 = value(&toml, "sliding-window-size").parse().unwrap();
                let minimum: f64 = value(&toml, "minimum-number-of-calls").parse().unwrap();
                for actual in [rate, rate * 0.8] {
                    let opened = opens(&toml, &c.name, actual)
                        .unwrap_or_else(|| panic!("at {actual}/s the breaker never opens\n{toml}"));
                    // within the window, and at the rate as soon as the
                    // minimum is reached
                    assert!(
                        opened <= Duration::from_secs(window),
                        "{actual}/s: {opened:?}"
                    );
                    if actual == rate {
                        let expected = Duration::from_secs_f64((minimum + 1.0) / rate);
                        assert!(
                            opened <= expected + ms(1),
                            "{rate}/s: {opened:?} > {expected:?}"
                        );
                    }
                }
                if let Some(d) = deadline {
                    // the deadline it writes, and the worst case of what it
                    // writes fits in it (strict would refuse it otherwise)
                    let loaded = strict.unwrap();
                    let w = &loaded.report().worst_cases()[0];
                    assert_eq!(w.deadline(), Some(d), "{w}");
                    assert!(w.total().unwrap() <= d && !w.exceeds_deadline(), "{w}");
                }
            }
        }
    }

    #[test]
    fn the_pool_caps_the_bulkhead_and_a_slow_rate_is_said_to_decide_slowly() {
        let mut c = capacity();
        c.pool = Some(12);
        assert_eq!(value(&suggest(&c).unwrap(), "max-concurrent-calls"), "12");
        c.rate = 0.1;
        let toml = suggest(&c).unwrap();
        assert_eq!(value(&toml, "minimum-number-of-calls"), "10");
        assert!(toml.contains("10 calls take 100s"), "{toml}");
    }

    #[test]
    fn the_timeout_stays_under_the_deadline_and_attempts_fit_it() {
        let mut c = capacity();
        c.deadline = Some(ms(500));
        let toml = suggest(&c).unwrap();
        assert_eq!(value(&toml, "timeout-duration"), "\"500ms\"");
        c.deadline = Some(ms(5000));
        // (5000 + 100) / (600 + 100) = 7.3, capped at 3.
        assert_eq!(value(&suggest(&c).unwrap(), "max-attempts"), "3");
    }

    #[test]
    fn contradictions_and_bad_rates_are_named() {
        let mut c = capacity();
        c.p99 = ms(50);
        assert!(suggest(&c).unwrap_err().contains("--latency-p99 50ms"));
        assert_eq!(parse_rate("12000/min"), Ok(200.0));
        assert!(parse_rate("fast").unwrap_err().contains("`fast`"));
        assert!(parse_rate("3/week").unwrap_err().contains("`week`"));
        assert!(parse_rate("0/s").is_err());
    }
}
