//! `resil`: checks and explains a resilience.toml (or an `application.yml`)
//! without starting the service, with the same code as `resil::init()`.
//!
//! ```text
//! resil check [FILE]     # exit 1 on any problem, warnings printed, exit 0 otherwise
//! resil explain [FILE]   # each instance's effective settings, and where each came from,
//!                        # and the worst case of each retrying name (or one with
//!                        # a deadline), term by term, against its deadline
//! ```
//!
//! Both list the faults the file enables (`[fault.instances.*]`), one line
//! each: a file that injects failures is one to look at twice.
//!
//! ```text
//! resil suggest --rate 200/s --latency-p50 100ms --latency-p99 400ms [--deadline 1s] [--pool 30]
//!                        # a commented resilience.toml derived from capacity
//! resil replay --calls calls.jsonl --config candidate.toml [--against current.toml]
//!                        # the candidate's instances run over a recording (`[resil] record`)
//! ```
//!
//! `FILE` defaults to what `init()` reads: `$RESIL_CONFIG`, else
//! `./resilience.toml`. The `RESIL_*` overrides of the environment apply, as
//! they do at start-up.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use std::time::Duration;

use clap::{Parser, Subcommand};
use resil_config::{InitError, Resilience};

mod replay;
mod suggest;

/// Checks and explains resil's configuration offline.
#[derive(Debug, Parser)]
#[command(name = "resil", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validates the file exactly as `resil::init()` does: every problem with
    /// its file, key path and value; exit status 1 on any, 0 otherwise
    /// (warnings are printed).
    Check {
        /// The file (`.yml`/`.yaml`: YAML, else TOML); default:
        /// `$RESIL_CONFIG`, else `./resilience.toml`.
        file: Option<PathBuf>,
        /// Treat warnings as problems (exit status 1), as `strict` does.
        #[arg(long)]
        strict: bool,
    },
    /// Prints each instance's effective settings and where each value came
    /// from: the instance's table, a base configuration, `configs.default`, an
    /// environment variable, or the library default; then the worst case of
    /// each retrying name (or one with a deadline), term by term, against the
    /// deadline.
    Explain {
        /// The file, as for `check`.
        file: Option<PathBuf>,
    },
    /// Prints a commented resilience.toml for one dependency, derived from
    /// its capacity: the bulkhead from Little's law, the breaker's window
    /// from the rate and the detection time, the timeout between the p99 and
    /// the deadline, the retry's attempts from the deadline (none when only
    /// one fits). Its output passes `resil check --strict`.
    Suggest {
        /// Calls per second the service makes to it: `200/s`, `12000/min`.
        #[arg(long, value_parser = suggest::parse_rate)]
        rate: f64,
        /// Its normal median latency: `100ms`.
        #[arg(long = "latency-p50", value_parser = suggest::parse_duration)]
        p50: Duration,
        /// Its normal 99th-percentile latency: `400ms`.
        #[arg(long = "latency-p99", value_parser = suggest::parse_duration)]
        p99: Duration,
        /// The caller's end-to-end budget for this call: `1s`.
        #[arg(long, value_parser = suggest::parse_duration)]
        deadline: Option<Duration>,
        /// The downstream's connection (or thread) pool for this service.
        #[arg(long)]
        pool: Option<u32>,
        /// How soon a failing dependency must be noticed.
        #[arg(long, value_parser = suggest::parse_duration, default_value = "10s")]
        detect: Duration,
        /// The instance name.
        #[arg(long, default_value = "my-dependency")]
        name: String,
    },
    /// Runs a candidate configuration's circuit breakers, rate limiters,
    /// bulkheads, retries and retry budgets over a recording (`[resil]
    /// record`) on a virtual clock, holds its time limiters' timeouts
    /// against the recorded durations, and prints per instance the calls,
    /// the refusals (a time limiter's timeouts), each OPEN with its time and
    /// the retries, beside the recording's (or `--against`'s replay). The
    /// same input gives the same output; a bad line stops it with exit
    /// status 1.
    Replay {
        /// The recording: one JSON line per call outcome.
        #[arg(long)]
        calls: PathBuf,
        /// The candidate configuration.
        #[arg(long)]
        config: PathBuf,
        /// A configuration to compare with instead of the recording (the
        /// one in force, say), replayed the same way.
        #[arg(long)]
        against: Option<PathBuf>,
    },
}

fn load(file: Option<PathBuf>, strict: bool) -> Result<Resilience, InitError> {
    let builder = Resilience::builder().offline(true).strict(strict);
    match file {
        Some(file) => builder.file(file),
        None => builder,
    }
    .load()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check { file, strict } => check(file, strict),
        Command::Explain { file } => explain(file),
        Command::Suggest {
            rate,
            p50,
            p99,
            deadline,
            pool,
            detect,
            name,
        } => {
            let capacity = suggest::Capacity {
                name,
                rate,
                p50,
                p99,
                deadline,
                pool,
                detect,
            };
            match suggest::suggest(&capacity) {
                Ok(toml) => print_out(&toml),
                Err(e) => {
                    eprintln!("resil suggest: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Replay {
            calls,
            config,
            against,
        } => match replay::run(&calls, &config, against.as_deref()) {
            Ok(report) => print_out(&report),
            Err(e) => {
                eprintln!("resil replay: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

fn check(file: Option<PathBuf>, strict: bool) -> ExitCode {
    match load(file, strict) {
        Ok(resilience) => {
            let report = resilience.report();
            for w in report.warnings() {
                eprintln!("warning: {w}");
            }
            let mut out = format!(
                "ok: {} ({} instances, {} warnings)\n",
                report.file().unwrap_or("no file: the library defaults"),
                report.instances().len(),
                report.warnings().len()
            );
            faults(&mut out, report);
            print_out(&out)
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn explain(file: Option<PathBuf>) -> ExitCode {
    let resilience = match load(file, false) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let report = resilience.report();
    for w in report.warnings() {
        eprintln!("warning: {w}");
    }
    let mut out = String::new();
    for instance in report.instances() {
        let chain = match instance.chain() {
            [] => "the library defaults".to_owned(),
            chain => chain.join(" <- "),
        };
        let _ = writeln!(out, "{} `{}` ({chain})", instance.aspect(), instance.name());
        let width = instance
            .settings()
            .iter()
            .map(|(k, v)| k.len() + v.len() + 3)
            .max()
            .unwrap_or(0);
        for (key, value) in instance.settings() {
            let from = instance.source(key).unwrap_or("library default");
            let item = format!("{key} = {value}");
            let _ = writeln!(out, "    {item:<width$}  # {from}");
        }
    }
    if !report.worst_cases().is_empty() {
        let _ = writeln!(out, "worst case of each call site, against its deadline:");
        for worst in report.worst_cases() {
            let _ = writeln!(out, "    {worst}");
        }
    }
    faults(&mut out, report);
    print_out(&out)
}

/// The faults the file enables, one line each: a file that injects
/// failures is one to look at twice before it ships.
fn faults(out: &mut String, report: &resil_config::Report) {
    let faults = report.enabled_faults();
    if faults.is_empty() {
        return;
    }
    let _ = writeln!(out, "fault injection enabled:");
    for (name, config) in faults {
        let _ = writeln!(out, "    `{name}`: {config}");
    }
}

/// Writes `text` to stdout; a reader that went away (`| head`) is not an
/// error, any other failure is one, never a panic.
fn print_out(text: &str) -> ExitCode {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("resil: cannot write the output: {e}");
            ExitCode::FAILURE
        }
    }
}
