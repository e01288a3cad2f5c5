//! One recorded call outcome, and its JSON line.
//!
//! The line is built on the caller's thread without allocating (the name is
//! the instance's shared name, the other texts are static); the writer
//! thread formats it.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use resil_core::Name;

/// One call outcome below one pattern, as the writer receives it.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    /// When the instance published it (its clock's wall time).
    pub(crate) time: SystemTime,
    /// The pattern: `circuitbreaker`, `retry`, `bulkhead`, ...
    pub(crate) kind: &'static str,
    pub(crate) name: Name,
    /// `success`, `error`, `ignored`, `refused`, `permitted`, `finished`,
    /// `retry`, `timeout`, `transition`.
    pub(crate) outcome: &'static str,
    /// How long the call took, where the pattern measures it.
    pub(crate) duration: Option<Duration>,
    /// The error's kind, where known.
    pub(crate) error: Option<&'static str>,
    /// A retry's failed attempts so far.
    pub(crate) attempts: Option<u32>,
    /// A retry's wait before its next attempt.
    pub(crate) wait: Option<Duration>,
    /// A state transition's states.
    pub(crate) from: Option<&'static str>,
    pub(crate) to: Option<&'static str>,
}

impl Line {
    pub(crate) fn new(
        time: SystemTime,
        kind: &'static str,
        name: &Name,
        outcome: &'static str,
    ) -> Self {
        Line {
            time,
            kind,
            name: name.clone(),
            outcome,
            duration: None,
            error: None,
            attempts: None,
            wait: None,
            from: None,
            to: None,
        }
    }

    /// Appends the line's JSON and a newline to `out`.
    pub(crate) fn write_json(&self, out: &mut String) {
        out.push_str("{\"time\":\"");
        let _ = write!(out, "{}", humantime::format_rfc3339_micros(self.time));
        out.push_str("\",\"kind\":");
        string(out, self.kind);
        out.push_str(",\"name\":");
        string(out, &self.name);
        out.push_str(",\"outcome\":");
        string(out, self.outcome);
        if let Some(d) = self.duration {
            let _ = write!(out, ",\"duration_us\":{}", d.as_micros());
        }
        if let Some(e) = self.error {
            out.push_str(",\"error\":");
            string(out, e);
        }
        if let Some(n) = self.attempts {
            let _ = write!(out, ",\"attempts\":{n}");
        }
        if let Some(w) = self.wait {
            let _ = write!(out, ",\"wait_us\":{}", w.as_micros());
        }
        if let Some(s) = self.from {
            out.push_str(",\"from\":");
            string(out, s);
        }
        if let Some(s) = self.to {
            out.push_str(",\"to\":");
            string(out, s);
        }
        out.push_str("}\n");
    }
}

/// `s` as a JSON string.
fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_one_json_object_with_its_fields() {
        let mut line = Line::new(
            SystemTime::UNIX_EPOCH + Duration::from_millis(1500),
            "circuitbreaker",
            &Name::from("in\"ventory\n"),
            "error",
        );
        line.duration = Some(Duration::from_micros(2500));
        line.error = Some("ConnectionRefused");
        let mut out = String::new();
        line.write_json(&mut out);
        assert_eq!(
            out,
            "{\"time\":\"1970-01-01T00:00:01.500000Z\",\"kind\":\"circuitbreaker\",\"name\":\"in\\\"ventory\\n\",\"outcome\":\"error\",\"duration_us\":2500,\"error\":\"ConnectionRefused\"}\n"
        );
    }
}
