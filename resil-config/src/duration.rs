//! Durations as resilience.toml writes them.
//!
//! Every duration key accepts the forms Spring Boot binds for Resilience4j,
//! so a value copied from an `application.yml` means the same here:
//!
//! | written | means |
//! | --- | --- |
//! | `500` (a whole number, or a string of digits) | 500 milliseconds, Spring's default unit |
//! | `"500ms"`, `"10s"`, `"1m 30s"`, `"2h"`, `"1.5s"`, `"250us"` | [humantime] units: `ns`, `us`, `ms`, `s`, `m`, `h`, `d`, ... |
//! | `"PT0.5S"`, `"PT1M30S"`, `"P1DT2H"` | ISO-8601, as Java's `Duration.parse` (case-insensitive) |
//!
//! Negative durations, fractions without a unit (`0.5`) and numbers too large
//! for a [`Duration`] are errors. [`deserialize`] offers the same rules to
//! your own serde structs.
//!
//! [humantime]: https://docs.rs/humantime
//!
//! # Examples
//!
//! ```
//! use resil_config::duration::parse;
//! use std::time::Duration;
//!
//! assert_eq!(parse("500ms")?, Duration::from_millis(500));
//! assert_eq!(parse("1m 30s")?, Duration::from_secs(90));
//! assert_eq!(parse("PT0.5S")?, Duration::from_millis(500));
//! assert_eq!(parse("2500")?, Duration::from_millis(2500));
//! assert!(parse("5 parsecs").is_err());
//! # Ok::<(), resil_config::duration::DurationError>(())
//! ```

use std::fmt;
use std::time::Duration;

/// What a duration must look like, for error messages.
pub(crate) const EXPECTED: &str = "expected a duration like \"500ms\", \"10s\", \"1m 30s\", \"PT0.5S\" or a whole number of milliseconds";

/// A string that is not a duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    reason: String,
}

impl DurationError {
    fn new(reason: impl Into<String>) -> Self {
        DurationError {
            reason: reason.into(),
        }
    }

    /// Why the text is not a duration, e.g. `unknown time unit "parsecs"`.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{EXPECTED} ({})", self.reason)
    }
}

impl std::error::Error for DurationError {}

/// Parses a duration written in any of the forms of the [module documentation](self).
///
/// # Errors
///
/// A [`DurationError`] saying why the text is not a duration.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(DurationError::new("the text is empty"));
    }
    if s.starts_with('-') {
        return Err(DurationError::new("a duration cannot be negative"));
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| DurationError::new("too many milliseconds"));
    }
    if s.starts_with(['P', 'p']) {
        return parse_iso(s);
    }
    if s.parse::<f64>().is_ok() {
        return Err(DurationError::new(
            "a number without a unit is whole milliseconds; add a unit, e.g. \"1.5s\" or \"500us\"",
        ));
    }
    humantime::parse_duration(s).map_err(|e| match e {
        humantime::DurationError::NumberExpected(0) => {
            DurationError::new("it does not start with a number")
        }
        humantime::DurationError::NumberExpected(i)
        | humantime::DurationError::InvalidCharacter(i) => {
            DurationError::new(format!("unexpected text at character {}", i + 1))
        }
        other => DurationError::new(other.to_string()),
    })
}

/// Milliseconds written as an integer (TOML `500`, YAML `500`).
pub(crate) fn from_millis(ms: i128) -> Result<Duration, DurationError> {
    if ms < 0 {
        return Err(DurationError::new("a duration cannot be negative"));
    }
    u64::try_from(ms)
        .map(Duration::from_millis)
        .map_err(|_| DurationError::new("too many milliseconds"))
}

/// Java's `Duration.parse`: `PnDTnHnMn.nS`, each part optional but at least one present.
fn parse_iso(s: &str) -> Result<Duration, DurationError> {
    let bad = |why: &str| DurationError::new(format!("not an ISO-8601 duration: {why}"));
    let upper = s.to_ascii_uppercase();
    let rest = &upper[1..];
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) => {
            if t.is_empty() {
                return Err(bad("nothing after `T`"));
            }
            (d, Some(t))
        }
        None => (rest, None),
    };
    let mut secs: u64 = 0;
    let mut nanos: u32 = 0;
    let mut any = false;
    let overflow = || DurationError::new("too large for a duration");
    if !date.is_empty() {
        let days = date
            .strip_suffix('D')
            .ok_or_else(|| bad("only days (`D`) may come before `T`"))?;
        secs = digits(days)
            .ok_or_else(|| bad("expected a whole number of days"))?
            .checked_mul(86_400)
            .ok_or_else(overflow)?;
        any = true;
    }
    if let Some(mut t) = time {
        for (unit, scale) in [('H', 3600u64), ('M', 60)] {
            if let Some(i) = t.find(unit) {
                let (n, tail) = t.split_at(i);
                // a number before `H`/`M` must be whole and the units in order
                let n = digits(n).ok_or_else(|| bad("hours and minutes must be whole numbers"))?;
                secs = n
                    .checked_mul(scale)
                    .and_then(|v| secs.checked_add(v))
                    .ok_or_else(overflow)?;
                t = &tail[1..];
                any = true;
            }
        }
        if !t.is_empty() {
            let n = t
                .strip_suffix('S')
                .ok_or_else(|| bad("expected `nH`, `nM` and `n.nS` after `T`, in that order"))?;
            let (whole, frac) = match n.split_once(['.', ',']) {
                Some((w, f)) => (w, f),
                None => (n, ""),
            };
            let whole = digits(whole).ok_or_else(|| bad("expected seconds like `0.5S`"))?;
            if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("at most 9 digits of fractional seconds"));
            }
            secs = secs.checked_add(whole).ok_or_else(overflow)?;
            if !frac.is_empty() {
                let padded = format!("{frac:0<9}");
                nanos = padded.parse().map_err(|_| bad("bad fraction"))?;
            }
            any = true;
        }
    }
    if !any {
        return Err(bad("no days, hours, minutes or seconds"));
    }
    Ok(Duration::new(secs, nanos))
}

fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Formats a duration the way this module parses it back (`500ms`,
/// `90500ms`, `1m 30s`, `0ms`): resil-core's one printer,
/// [`format_duration`](resil_core::clock::format_duration).
///
/// # Examples
///
/// ```
/// use resil_config::duration;
/// use std::time::Duration;
///
/// assert_eq!(duration::format(Duration::from_millis(90_500)), "90500ms");
/// assert_eq!(duration::parse("90500ms"), Ok(Duration::from_millis(90_500)));
/// ```
pub fn format(d: Duration) -> String {
    resil_core::clock::format_duration(d)
}

/// Deserializes a [`Duration`] from any of the forms this module accepts.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// #[derive(serde::Deserialize)]
/// struct Settings {
///     #[serde(deserialize_with = "resil_config::duration::deserialize")]
///     poll: Duration,
/// }
///
/// let from_yaml = config::Config::builder()
///     .add_source(config::File::from_str("poll: PT1.5S", config::FileFormat::Yaml))
///     .build()?
///     .try_deserialize::<Settings>()?;
/// assert_eq!(from_yaml.poll, Duration::from_millis(1500));
/// # Ok::<(), config::ConfigError>(())
/// ```
///
/// # Errors
///
/// The deserializer's error when the value is neither a whole number of
/// milliseconds nor a duration string.
pub fn deserialize<'de, D>(deserializer: D) -> Result<Duration, D::Error>
where
    D: serde::Deserializer<'de>,
{
    deserializer.deserialize_any(Visitor)
}

struct Visitor;

impl serde::de::Visitor<'_> for Visitor {
    type Value = Duration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(EXPECTED.trim_start_matches("expected "))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Duration, E> {
        Ok(Duration::from_millis(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Duration, E> {
        from_millis(i128::from(v)).map_err(E::custom)
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Duration, E> {
        parse(v).map_err(E::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn spring_forms() {
        assert_eq!(parse("500ms").unwrap(), ms(500));
        assert_eq!(parse("10s").unwrap(), ms(10_000));
        assert_eq!(parse("1m 30s").unwrap(), ms(90_000));
        assert_eq!(parse("1m30s").unwrap(), ms(90_000));
        assert_eq!(parse("1.5s").unwrap(), ms(1500));
        assert_eq!(parse("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse(" 0 ").unwrap(), Duration::ZERO);
        assert_eq!(parse("0ms").unwrap(), Duration::ZERO);
        assert_eq!(parse("800").unwrap(), ms(800));
    }

    #[test]
    fn iso_8601() {
        assert_eq!(parse("PT0.5S").unwrap(), ms(500));
        assert_eq!(parse("pt10s").unwrap(), ms(10_000));
        assert_eq!(parse("PT1M30S").unwrap(), ms(90_000));
        assert_eq!(parse("PT1H").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse("P1D").unwrap(), Duration::from_secs(86_400));
        assert_eq!(
            parse("P1DT2H3M4.000000005S").unwrap(),
            Duration::new(93_784, 5)
        );
        assert_eq!(parse("PT0,25S").unwrap(), ms(250));
        for bad in [
            "P",
            "PT",
            "PT1",
            "PT1X",
            "PTS",
            "PT1S2M",
            "P1H",
            "PT1.5M",
            "PT0.1234567891S",
            "P-1D",
            "PT-1S",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refusals_say_why() {
        let e = parse("5 parsecs").unwrap_err();
        assert!(e.to_string().contains("parsecs"), "{e}");
        assert!(e.to_string().starts_with("expected a duration"), "{e}");
        assert!(parse("-5s").unwrap_err().reason().contains("negative"));
        assert!(parse("0.5").unwrap_err().reason().contains("unit"));
        assert!(parse("").is_err());
        assert!(parse("99999999999999999999999").is_err());
        assert!(parse("P99999999999999999D").is_err());
        assert!(from_millis(-1).is_err());
        assert_eq!(from_millis(1500).unwrap(), ms(1500));
    }

    #[test]
    fn formats_round_trip() {
        for d in [
            ms(0),
            ms(500),
            ms(10_000),
            ms(90_000),
            ms(1500),
            Duration::from_nanos(1500),
        ] {
            assert_eq!(parse(&format(d)).unwrap(), d, "{}", format(d));
        }
        assert_eq!(format(ms(90_000)), "1m 30s");
    }
}
