//! `resil replay`: a candidate configuration run over a recording.
//!
//! The recording is read line by line (it may be larger than memory); each
//! instance it names gets the candidate's instance of that kind and name,
//! on a manual clock of its own moved to each line's time (see [`sim`]).
//! The output is sorted by kind and name, and holds no wall-clock time:
//! the same input gives the same bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufReader;
use std::path::Path;
use std::time::{Duration, SystemTime};

mod input;
mod sim;

use self::input::{Kind, Line, Outcome};
use self::sim::{Config, Sim, Stats};

/// One instance of the recording: what it recorded, and the runs.
struct Instance {
    recorded: Stats,
    candidate: Sim,
    against: Option<Sim>,
}

/// Replays `calls` with the configuration `config`, compared with the
/// recording or with `against`'s replay; the report, or the error that
/// stopped it (a file that cannot be read, a bad configuration, a line that
/// is not one of a recording, named by its number).
pub(crate) fn run(calls: &Path, config: &Path, against: Option<&Path>) -> Result<String, String> {
    let candidate = Config::read(config)?;
    let against = against.map(Config::read).transpose()?;
    let file =
        std::fs::File::open(calls).map_err(|e| format!("cannot read {}: {e}", calls.display()))?;
    let mut origin: Option<SystemTime> = None;
    let mut last = Duration::ZERO;
    let mut instances: BTreeMap<(Kind, String), Instance> = BTreeMap::new();
    let mut failed: Option<String> = None;
    let lines = input::read(calls, BufReader::new(file), |line: Line| {
        if failed.is_some() {
            return;
        }
        let origin = *origin.get_or_insert(line.time);
        let at = line.time.duration_since(origin).unwrap_or(Duration::ZERO);
        last = last.max(at);
        let key = (line.kind, line.name.clone());
        if !instances.contains_key(&key) {
            let made = Sim::new(&candidate, line.kind, &line.name).and_then(|c| {
                let a = against
                    .as_ref()
                    .map(|a| Sim::new(a, line.kind, &line.name))
                    .transpose()?;
                Ok(Instance {
                    recorded: Stats::default(),
                    candidate: c,
                    against: a,
                })
            });
            match made {
                Ok(i) => {
                    instances.insert(key.clone(), i);
                }
                Err(e) => {
                    failed = Some(e);
                    return;
                }
            }
        }
        let Some(instance) = instances.get_mut(&key) else {
            return;
        };
        record(&mut instance.recorded, at, &line);
        instance.candidate.feed(at, &line);
        if let Some(a) = &mut instance.against {
            a.feed(at, &line);
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "replay of {}: {lines} lines over {}",
        calls.display(),
        offset(last)
    );
    let baseline = match &against {
        Some(a) => a.file.clone(),
        None => "recording".to_owned(),
    };
    let _ = writeln!(
        out,
        "candidate: {}; compared with: {baseline}",
        candidate.file
    );
    for ((kind, name), instance) in instances {
        let run = instance.candidate.finish();
        let base = match instance.against {
            Some(a) => a.finish(),
            None => instance.recorded,
        };
        let _ = writeln!(out, "\n{} `{name}`", kind.as_str());
        let _ = writeln!(out, "    calls: {}", run.calls);
        let _ = writeln!(out, "    inferred: {}", run.inferred);
        // a time limiter refuses nothing: it times calls out
        let (what, now, before) = match kind {
            Kind::TimeLimiter => ("timeouts", run.timeouts, base.timeouts),
            _ => ("refusals", run.refusals, base.refusals),
        };
        let _ = writeln!(
            out,
            "    {what}: {now} ({baseline}: {before}, difference: {})",
            difference(now, before)
        );
        match kind {
            Kind::CircuitBreaker => {
                let _ = writeln!(
                    out,
                    "    OPEN: {} ({baseline}: {}, difference: {})",
                    times(&run.opens),
                    times(&base.opens),
                    difference(run.opens.len() as u64, base.opens.len() as u64)
                );
            }
            Kind::Retry => {
                let _ = writeln!(
                    out,
                    "    retries: {} ({baseline}: {}, difference: {})",
                    run.retries,
                    base.retries,
                    difference(run.retries, base.retries)
                );
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Counts `line` in what the recording says happened.
fn record(s: &mut Stats, at: Duration, line: &Line) {
    match (line.kind, line.outcome) {
        (Kind::CircuitBreaker, Outcome::Transition { to_open }) => {
            if to_open {
                s.opens.push(at);
            }
        }
        (Kind::Retry, Outcome::Retry) => s.retries += 1,
        (Kind::Bulkhead | Kind::ThreadPoolBulkhead, Outcome::Finished) => {}
        (Kind::TimeLimiter, outcome) => {
            s.calls += 1;
            s.timeouts += u64::from(outcome == Outcome::Timeout);
        }
        (_, outcome) => {
            s.calls += 1;
            s.refusals += u64::from(outcome == Outcome::Refused);
        }
    }
}

/// `+62.500s`: a time from the recording's first line.
fn offset(d: Duration) -> String {
    format!("+{}.{:03}s", d.as_secs(), d.subsec_millis())
}

/// `2 at +10.000s, +70.000s`, or `0`.
fn times(opens: &[Duration]) -> String {
    if opens.is_empty() {
        return "0".to_owned();
    }
    let at: Vec<String> = opens.iter().map(|d| offset(*d)).collect();
    format!("{} at {}", opens.len(), at.join(", "))
}

/// `+3`, `-2`, `0`.
fn difference(now: u64, before: u64) -> String {
    match now.cmp(&before) {
        std::cmp::Ordering::Greater => format!("+{}", now - before),
        std::cmp::Ordering::Less => format!("-{}", before - now),
        std::cmp::Ordering::Equal => "0".to_owned(),
    }
}
