//! The vocabulary of reading, which the file and `[cloud]` share: the
//! merged tree's [`Node`]s and where each came from, typed values and the
//! [`Setting`]s that hold them, how keys and paths are written in messages
//! ([`Ctx`]), and the small parsers and helpers both tables use.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use config::{Value, ValueKind};
use resil_core::bulkhead::LimitAlgorithm;
use resil_core::circuit_breaker::{SlidingWindowType, State};
use resil_core::cluster::ClusterFailureMode;

use crate::error::ConfigProblem;

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    File,
    Env(Arc<str>),
}

/// How the environment source marks the origin of its values.
pub(crate) const ENV_ORIGIN: &str = "env ";

/// A parsed value with its origin.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    pub(crate) origin: Origin,
}

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Nil,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Array(Vec<Node>),
    Table(BTreeMap<String, Node>),
}

impl Node {
    pub(crate) fn from_value(v: Value) -> Node {
        let origin = match v.origin() {
            Some(o) if o.starts_with(ENV_ORIGIN) => Origin::Env(Arc::from(&o[ENV_ORIGIN.len()..])),
            _ => Origin::File,
        };
        let kind = match v.kind {
            ValueKind::Nil => Kind::Nil,
            ValueKind::Boolean(b) => Kind::Bool(b),
            ValueKind::I64(i) => Kind::Int(i128::from(i)),
            ValueKind::I128(i) => Kind::Int(i),
            ValueKind::U64(u) => Kind::Int(i128::from(u)),
            ValueKind::U128(u) => match i128::try_from(u) {
                Ok(i) => Kind::Int(i),
                Err(_) => Kind::Str(u.to_string()),
            },
            ValueKind::Float(f) => Kind::Float(f),
            ValueKind::String(s) => Kind::Str(s),
            ValueKind::Array(a) => Kind::Array(a.into_iter().map(Node::from_value).collect()),
            ValueKind::Table(t) => Kind::Table(
                t.into_iter()
                    .map(|(k, v)| (k, Node::from_value(v)))
                    .collect(),
            ),
        };
        // `config` keeps the origin of values, not of the tables it creates
        // while merging: a table whose every value came from one environment
        // source was created by it
        let origin = match &kind {
            Kind::Table(t) => {
                let mut origins = t.values().map(|n| &n.origin);
                match origins.next() {
                    Some(first @ Origin::Env(_))
                        if origins.all(|o| matches!(o, Origin::Env(_))) =>
                    {
                        first.clone()
                    }
                    _ => origin,
                }
            }
            _ => origin,
        };
        Node { kind, origin }
    }

    /// The value as a TOML reader would recognize it, cut at about 80 characters.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        render(self, &mut out, 0);
        if out.chars().count() > 80 {
            let cut: String = out.chars().take(77).collect();
            out = format!("{cut}...");
        }
        out
    }
}

fn render(node: &Node, out: &mut String, depth: usize) {
    if out.len() > 100 || depth > 8 {
        out.push_str("...");
        return;
    }
    match &node.kind {
        Kind::Nil => out.push_str("null"),
        Kind::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Kind::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Kind::Float(f) => {
            // `1.0`, not `1`: as written in TOML
            let _ = write!(out, "{f:?}");
        }
        Kind::Str(s) => {
            let _ = write!(out, "{s:?}");
        }
        Kind::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                render(item, out, depth + 1);
                if out.len() > 100 {
                    break;
                }
            }
            out.push(']');
        }
        Kind::Table(t) => {
            out.push('{');
            for (i, (k, v)) in t.iter().enumerate() {
                out.push_str(if i > 0 { ", " } else { " " });
                let _ = write!(out, "{} = ", segment(k));
                render(v, out, depth + 1);
                if out.len() > 100 {
                    break;
                }
            }
            out.push_str(if t.is_empty() { "}" } else { " }" });
        }
    }
}

/// A key as it appears in a dotted path: bare when TOML allows, else quoted.
pub(crate) fn segment(key: &str) -> String {
    if !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        key.to_owned()
    } else {
        format!("{key:?}")
    }
}

/// Spring's relaxed form of a property name: lowercase, without `-` and `_`.
pub(crate) fn relaxed(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The closest candidate, if one is close enough to be a likely typo.
pub(crate) fn did_you_mean<'a>(
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let input = relaxed(input);
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&input, &relaxed(c)), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// A typed value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Float(f64),
    Count(u32),
    Duration(Duration),
    Bool(bool),
    WindowType(SlidingWindowType),
    Kinds(Vec<String>),
    /// Names of registered things (context propagators).
    Names(Vec<String>),
    /// `base-config`; `None` for the empty string, which Resilience4j reads as unset.
    Name(Option<String>),
    /// A key accepted without effect.
    Nothing,
    /// A string: a cluster URL or key.
    Text(String),
    /// `cluster-failure-mode`.
    FailureMode(ClusterFailureMode),
    /// `initial-state`.
    InitialState(State),
    /// A bulkhead's `limit-algorithm`.
    LimitAlgorithm(LimitAlgorithm),
}

/// One key of one table, typed, with where it was written. Its `Debug`
/// hides a URL's password (a report's `Debug` prints it).
#[derive(Clone)]
pub(crate) struct Setting {
    pub(crate) val: Val,
    /// The file's name or `env NAME`.
    pub(crate) source: String,
    /// The full key path as written.
    pub(crate) path: String,
    /// The value as written.
    pub(crate) raw: String,
}

impl fmt::Debug for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let val = format!("{:?}", self.val);
        f.debug_struct("Setting")
            .field(
                "val",
                &format_args!("{}", resil_core::redact::userinfo(&val)),
            )
            .field("source", &self.source)
            .field("path", &self.path)
            .field("raw", &resil_core::redact::userinfo(&self.raw))
            .finish()
    }
}

impl Setting {
    /// A problem with this setting's value.
    pub(crate) fn problem(&self, message: impl Into<String>) -> ConfigProblem {
        ConfigProblem::new(
            self.source.clone(),
            self.path.clone(),
            Some(self.raw.clone()),
            message,
        )
    }
}

/// Where a `[cloud]` value sits: the file's path (TOML's `cloud.` or the
/// YAML's `spring.cloud.circuitbreaker.resilience4j.`) or the environment's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CloudPrefix {
    Toml,
    Spring,
}

/// How sources and paths are named in messages.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// The file's name as given.
    pub(crate) file: String,
    /// `resilience4j` when the file's tree sits under that key (Spring's `application.yml`).
    pub(crate) prefix: Option<&'static str>,
    /// Where `[cloud]` came from: the TOML table, or an `application.yml`'s
    /// `spring.cloud.circuitbreaker.resilience4j`.
    pub(crate) cloud: CloudPrefix,
    /// Whether files the configuration names for writing are opened to
    /// check them (not offline: `resil check` writes nothing).
    pub(crate) writable: bool,
}

impl Ctx {
    pub(crate) fn source(&self, origin: &Origin) -> String {
        match origin {
            Origin::File => self.file.clone(),
            Origin::Env(var) => format!("{ENV_ORIGIN}{var}"),
        }
    }

    pub(crate) fn path(&self, origin: &Origin, segments: &[&str]) -> String {
        let mut out = String::new();
        if let (Origin::File, Some(p)) = (origin, self.prefix) {
            out.push_str(p);
        }
        for s in segments {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment(s));
        }
        out
    }

    pub(crate) fn problem(
        &self,
        node: &Node,
        segments: &[&str],
        message: impl Into<String>,
    ) -> ConfigProblem {
        ConfigProblem::new(
            self.source(&node.origin),
            self.path(&node.origin, segments),
            Some(node.render()),
            message,
        )
    }
}

pub(crate) fn count(node: &Node) -> Result<u32, String> {
    let expected = || format!("expected a whole number from 0 to {}", u32::MAX);
    let n = match &node.kind {
        Kind::Int(i) => *i,
        Kind::Str(s) => s.trim().parse::<i128>().map_err(|_| expected())?,
        _ => return Err(expected()),
    };
    u32::try_from(n).map_err(|_| expected())
}

pub(crate) fn number(node: &Node) -> Result<f64, String> {
    const EXPECTED: &str = "expected a number";
    match &node.kind {
        // precision loss above 2^53 is irrelevant for thresholds and factors
        Kind::Int(i) => Ok(*i as f64),
        Kind::Float(f) => Ok(*f),
        Kind::Str(s) => s.trim().parse::<f64>().map_err(|_| EXPECTED.to_owned()),
        _ => Err(EXPECTED.to_owned()),
    }
}

pub(crate) fn boolean(node: &Node) -> Result<bool, String> {
    const EXPECTED: &str = "expected true or false";
    match &node.kind {
        Kind::Bool(b) => Ok(*b),
        Kind::Str(s) if s.trim().eq_ignore_ascii_case("true") => Ok(true),
        Kind::Str(s) if s.trim().eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(EXPECTED.to_owned()),
    }
}

pub(crate) fn list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}
