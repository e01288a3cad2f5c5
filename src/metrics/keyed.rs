//! The series of keyed instances with a `key` tag (`key-label = true`),
//! kept by resil so that an evicted key's series go with it.
//!
//! The `metrics` facade can create a series but never remove one, so a
//! recorder keeps every `key` value it was ever given: 100,000 tenants
//! through a name of `max-keys = 100` left 100,000 key values (3 million
//! series) in one scrape. Instead, each such instance gets its own small
//! recorder ([`Series`]), installed as the thread's local recorder while
//! the instance's meters are made, recorded and refreshed, so that the
//! meters' code is the same for every instance; the sink drops it when the
//! key is evicted. An exposition shows them through [`merge`], which puts
//! each series into its family of the recorder's text (or a family of its
//! own): `/actuator/prometheus` does it, and
//! [`with_keyed_series`](super::with_keyed_series) does it for any other
//! exporter's text. At any time the series of a name hold at most its live
//! keys: `max-keys`, plus the keys past it that had a call in flight.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ::metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};

use crate::observe::lock;

thread_local! {
    /// Whether this thread records into a keyed instance's [`Series`] now.
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with `series` as the thread's recorder.
pub(crate) fn with<T>(series: &Series, f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            ACTIVE.with(|a| a.set(self.0));
        }
    }
    let _reset = Reset(ACTIVE.with(|a| a.replace(true)));
    ::metrics::with_local_recorder(series, f)
}

/// Whether the thread records into a keyed instance's [`Series`] now (the
/// descriptions are the process recorder's business, not its).
pub(crate) fn active() -> bool {
    ACTIVE.with(Cell::get)
}

/// A histogram kept as a summary without quantiles: its count and sum, as
/// Micrometer renders a timer without percentiles.
#[derive(Debug, Default)]
struct Summary {
    count: AtomicU64,
    /// The sum's `f64` bits.
    sum: AtomicU64,
}

impl HistogramFn for Summary {
    fn record(&self, value: f64) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let _ = self
            .sum
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + value).to_bits())
            });
    }
}

#[derive(Debug, Clone)]
enum Value {
    Counter(Arc<AtomicU64>),
    /// The gauge's `f64` bits.
    Gauge(Arc<AtomicU64>),
    Summary(Arc<Summary>),
}

/// The series of one keyed instance: a recorder of its own.
#[derive(Debug, Default)]
pub(crate) struct Series {
    values: Mutex<HashMap<Key, Value>>,
}

impl Series {
    fn value(&self, key: &Key, make: impl FnOnce() -> Value) -> Value {
        lock(&self.values)
            .entry(key.clone())
            .or_insert_with(make)
            .clone()
    }
}

impl Recorder for Series {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        match self.value(key, || Value::Counter(Arc::default())) {
            Value::Counter(c) => Counter::from_arc(c),
            _ => Counter::noop(),
        }
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        match self.value(key, || Value::Gauge(Arc::default())) {
            Value::Gauge(g) => Gauge::from_arc(g),
            _ => Gauge::noop(),
        }
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        match self.value(key, || Value::Summary(Arc::default())) {
            Value::Summary(s) => Histogram::from_arc(s),
            _ => Histogram::noop(),
        }
    }
}

/// The [`Series`] of the keyed instances one sink follows, by the address
/// of their instance.
#[derive(Debug, Default)]
pub(crate) struct KeyedSeries {
    by_instance: Mutex<HashMap<usize, Arc<Series>>>,
}

impl KeyedSeries {
    /// The new, empty series of the instance at `address`.
    pub(crate) fn add(&self, address: usize) -> Arc<Series> {
        let series = Arc::new(Series::default());
        lock(&self.by_instance).insert(address, series.clone());
        series
    }

    /// Drops the series of the instance at `address` (its key was evicted).
    pub(crate) fn remove(&self, address: usize) {
        lock(&self.by_instance).remove(&address);
    }

    /// The series of the instance at `address`, if it has its own.
    pub(crate) fn get(&self, address: usize) -> Option<Arc<Series>> {
        lock(&self.by_instance).get(&address).cloned()
    }

    /// Writes every series into `families`: its type and its sample lines,
    /// by family name.
    pub(crate) fn collect(&self, families: &mut Families) {
        let all: Vec<Arc<Series>> = lock(&self.by_instance).values().cloned().collect();
        for series in all {
            let values: Vec<(Key, Value)> = lock(&series.values)
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for (key, value) in values {
                let name = key.name();
                let labels = labels(&key);
                let (kind, lines) = match value {
                    Value::Counter(c) => (
                        "counter",
                        vec![format!("{name}{labels} {}", c.load(Ordering::Relaxed))],
                    ),
                    Value::Gauge(g) => (
                        "gauge",
                        vec![format!(
                            "{name}{labels} {}",
                            f64::from_bits(g.load(Ordering::Relaxed))
                        )],
                    ),
                    Value::Summary(s) => (
                        "summary",
                        vec![
                            format!(
                                "{name}_sum{labels} {}",
                                f64::from_bits(s.sum.load(Ordering::Relaxed))
                            ),
                            format!("{name}_count{labels} {}", s.count.load(Ordering::Relaxed)),
                        ],
                    ),
                };
                let family = families
                    .entry(name.to_owned())
                    .or_insert_with(|| (kind, Vec::new()));
                family.1.extend(lines);
            }
        }
    }
}

/// Sample lines by family name, with the family's type.
pub(crate) type Families = BTreeMap<String, (&'static str, Vec<String>)>;

/// `{a="1",b="2"}` as the Prometheus text format writes labels (none: empty).
fn labels(key: &Key) -> String {
    let mut out = String::new();
    for (i, label) in key.labels().enumerate() {
        out.push(if i == 0 { '{' } else { ',' });
        let _ = write!(out, "{}=\"", label_name(label.key()));
        for c in label.value().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    if !out.is_empty() {
        out.push('}');
    }
    out
}

/// A label name as Prometheus accepts it: `[a-zA-Z_][a-zA-Z0-9_]*`.
fn label_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// `exposition` (Prometheus text) with the sample lines of `families` put
/// into their families: after the family's samples when the text has the
/// family, else in a family of their own after the text. A family's lines
/// stay together, as the format requires.
pub(crate) fn merge(exposition: &str, mut families: Families) -> String {
    if families.is_empty() {
        return exposition.to_owned();
    }
    for (_, lines) in families.values_mut() {
        lines.sort();
    }
    // the text's families, in order: their name and their lines
    let mut blocks: Vec<(String, Vec<&str>)> = Vec::new();
    for line in exposition.lines() {
        if line.is_empty() {
            continue;
        }
        let family = line
            .strip_prefix("# HELP ")
            .or_else(|| line.strip_prefix("# TYPE "))
            .and_then(|rest| rest.split_whitespace().next());
        match (family, blocks.last_mut()) {
            (Some(name), Some((current, lines))) if current == name => lines.push(line),
            (Some(name), _) => blocks.push((name.to_owned(), vec![line])),
            (None, Some((_, lines))) => lines.push(line),
            (None, None) => blocks.push((String::new(), vec![line])),
        }
    }
    let mut out = String::with_capacity(exposition.len() + 64 * families.len());
    for (name, lines) in &blocks {
        for line in lines {
            out.push_str(line);
            out.push('\n');
        }
        if let Some((_, ours)) = families.remove(name) {
            for line in ours {
                out.push_str(&line);
                out.push('\n');
            }
        }
        out.push('\n');
    }
    for (name, (kind, lines)) in families {
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for line in lines {
            out.push_str(&line);
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_go_into_their_family_or_one_of_their_own() {
        let text = "# HELP a_total A.\n# TYPE a_total counter\na_total{name=\"x\"} 1\n\n# TYPE b gauge\nb 2\n\n";
        let mut families = Families::new();
        families.insert(
            "a_total".to_owned(),
            (
                "counter",
                vec!["a_total{key=\"k\",name=\"x\"} 5".to_owned()],
            ),
        );
        families.insert(
            "c_seconds".to_owned(),
            (
                "summary",
                vec![
                    "c_seconds_sum{key=\"k\"} 0.5".to_owned(),
                    "c_seconds_count{key=\"k\"} 2".to_owned(),
                ],
            ),
        );
        assert_eq!(
            merge(text, families),
            "# HELP a_total A.\n# TYPE a_total counter\na_total{name=\"x\"} 1\na_total{key=\"k\",name=\"x\"} 5\n\n# TYPE b gauge\nb 2\n\n# TYPE c_seconds summary\nc_seconds_count{key=\"k\"} 2\nc_seconds_sum{key=\"k\"} 0.5\n\n"
        );
    }

    #[test]
    fn label_values_are_escaped_and_names_made_valid() {
        let key = Key::from_parts(
            "m",
            vec![
                ::metrics::Label::new("key", "a\"b\\c\nd"),
                ::metrics::Label::new("9-x", "v"),
            ],
        );
        assert_eq!(labels(&key), "{key=\"a\\\"b\\\\c\\nd\",_9_x=\"v\"}");
    }

    #[test]
    fn a_summary_counts_and_sums() {
        let s = Series::default();
        let key = Key::from_name("h");
        let h = s.register_histogram(&key, &Metadata::new("t", ::metrics::Level::INFO, None));
        h.record(0.25);
        h.record(0.5);
        let mut families = Families::new();
        let all = KeyedSeries::default();
        lock(&all.by_instance).insert(1, Arc::new(s));
        all.collect(&mut families);
        assert_eq!(
            families["h"],
            (
                "summary",
                vec!["h_sum 0.75".to_owned(), "h_count 2".to_owned()]
            )
        );
    }
}
