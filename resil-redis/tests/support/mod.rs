//! What the fleet tests share: the Unix time (Redis's clock on this host)
//! and the results the child processes print.
#![allow(dead_code)] // each test binary uses a part
#![allow(clippy::disallowed_methods)] // the Unix time and real waits: Redis's clock is real

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The Unix time in µs.
pub(crate) fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_micros() as u64
}

/// Waits until `t` (Unix µs).
pub(crate) fn sleep_until(t: u64) {
    let now = unix_micros();
    if t > now {
        std::thread::sleep(Duration::from_micros(t - now));
    }
}

/// A child's `RESULT name=value ...` line, by name (`admitted` is a list of
/// Unix µs, the others counts).
pub(crate) struct ChildResult {
    pub(crate) line: String,
}

impl ChildResult {
    /// The result the child printed on `stdout`.
    pub(crate) fn of(stdout: Vec<u8>) -> ChildResult {
        let out = String::from_utf8(stdout).unwrap();
        let line = out
            .lines()
            .find_map(|l| l.split_once("RESULT ").map(|(_, r)| r.to_owned()))
            .unwrap_or_else(|| panic!("a child printed no result: {out}"));
        ChildResult { line }
    }

    pub(crate) fn text(&self, name: &str) -> &str {
        self.line
            .split(' ')
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {name} in {}", self.line))
    }

    pub(crate) fn count(&self, name: &str) -> u64 {
        self.text(name).parse().unwrap()
    }

    pub(crate) fn times(&self, name: &str) -> Vec<u64> {
        self.text(name)
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect()
    }
}
