//! What went wrong: [`ConfigProblem`] for one mistake, [`InitError`] for a failed start.

use std::fmt;

/// One mistake (or, in a [`Report`](crate::Report), one warning) in the
/// configuration: where it is, the full key path, the value as written and
/// what is wrong with it.
///
/// A URL's password in the value or the message is shown as `***`
/// ([`resil_core::redact::userinfo`]): problems are printed, logged and
/// served.
///
/// Its `Display` is one line:
/// ``resilience.toml: circuitbreaker.instances.inventory-query.failure-rate-threshold = 150: must be in (0, 100]``.
/// The source is the file's name, or `env NAME` for a value that came from an
/// environment variable.
///
/// # Examples
///
/// ```
/// use resil_config::Resilience;
///
/// let err = Resilience::builder()
///     .file_contents("resilience.toml", "[bulkhead]\ninstances.a.max-concurrent-calls = -1\n")
///     .env_vars(Vec::<(String, String)>::new())
///     .load()
///     .unwrap_err();
/// let p = &err.problems()[0];
/// assert_eq!(p.source(), "resilience.toml");
/// assert_eq!(p.key(), "bulkhead.instances.a.max-concurrent-calls");
/// assert_eq!(p.value(), Some("-1"));
/// assert_eq!(
///     p.to_string(),
///     "resilience.toml: bulkhead.instances.a.max-concurrent-calls = -1: expected a whole number from 0 to 4294967295"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConfigProblem {
    pub(crate) source: String,
    pub(crate) line_col: Option<(usize, usize)>,
    pub(crate) key: String,
    pub(crate) value: Option<String>,
    pub(crate) message: String,
}

impl ConfigProblem {
    pub(crate) fn new(
        source: impl Into<String>,
        key: impl Into<String>,
        value: Option<String>,
        message: impl Into<String>,
    ) -> Self {
        // A URL's password (a `cluster-url`'s, say) never reaches a
        // message: problems are printed, logged and served.
        ConfigProblem {
            source: source.into(),
            line_col: None,
            key: key.into(),
            value: value.map(redacted),
            message: redacted(message.into()),
        }
    }

    /// The file's name as given, or `env NAME` for an environment variable.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Line and column (from 1) when known: syntax errors.
    pub fn line_col(&self) -> Option<(usize, usize)> {
        self.line_col
    }

    /// The full key path, e.g. `circuitbreaker.instances.inventory-query.failure-rate-threshold`;
    /// empty when the problem is the whole file.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The offending value as written (strings quoted), when there is one.
    pub fn value(&self) -> Option<&str> {
        self.value.as_deref()
    }

    /// What is wrong, e.g. `must be in (0, 100]`.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// `text` without the userinfo of its URLs ([`resil_core::redact::userinfo`]).
pub(crate) fn redacted(text: String) -> String {
    match resil_core::redact::userinfo(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(shown) => shown,
    }
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)?;
        if let Some((line, col)) = self.line_col {
            write!(f, ":{line}:{col}")?;
        }
        f.write_str(": ")?;
        if !self.key.is_empty() {
            f.write_str(&self.key)?;
            if let Some(v) = &self.value {
                write!(f, " = {v}")?;
            }
            f.write_str(": ")?;
        }
        f.write_str(&self.message)
    }
}

/// Why [`init`](crate::init) (or [`ResilienceBuilder::load`](crate::ResilienceBuilder::load)) failed.
///
/// `Display` lists every problem, one per line.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum InitError {
    /// The configuration has mistakes; all of them are listed (in strict mode,
    /// the warnings too).
    #[error("{}", Listed(.0))]
    Invalid(Vec<ConfigProblem>),
    /// `init` was already called in this process.
    #[error(
        "resil::init() was already called; the registries it built stay in place (call it once, at the start of main)"
    )]
    AlreadyInitialized,
    /// A protected call ran before `init`, so the global registries already
    /// run on the library defaults.
    #[error(
        "resil::init() was called after protected calls had already started on the library defaults (first: {first}); call resil::init() at the start of main, before any protected call"
    )]
    AfterFirstCall {
        /// The instance whose call created the default registries, e.g. ``circuitbreaker `inventory-query` ``.
        first: String,
    },
    /// [`reload`](crate::reload()) or `watch` on the global registries, which
    /// [`init`](crate::init) did not build: there is no configuration to read again.
    #[error(
        "resil::reload() reads again what resil::init() read, and init() did not build the global registries (call it at the start of main)"
    )]
    NotInitialized,
    /// The configuration file cannot be watched: there is none, it does not
    /// exist, or the operating system refused to watch it.
    #[error("cannot watch the configuration: {0}")]
    Watch(String),
}

impl InitError {
    /// The configuration problems, if that is why it failed (empty otherwise).
    pub fn problems(&self) -> &[ConfigProblem] {
        match self {
            InitError::Invalid(p) => p,
            _ => &[],
        }
    }
}

struct Listed<'a>(&'a [ConfigProblem]);

impl fmt::Display for Listed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        write!(
            f,
            "invalid resil configuration ({n} problem{}):",
            if n == 1 { "" } else { "s" }
        )?;
        for p in self.0 {
            write!(f, "\n  {p}")?;
        }
        Ok(())
    }
}

/// Collects problems and warnings, each once.
#[derive(Debug, Default)]
pub(crate) struct Diagnostics {
    pub(crate) errors: Vec<ConfigProblem>,
    pub(crate) warnings: Vec<ConfigProblem>,
}

impl Diagnostics {
    pub(crate) fn error(&mut self, p: ConfigProblem) {
        if !self.errors.contains(&p) {
            self.errors.push(p);
        }
    }

    pub(crate) fn warn(&mut self, p: ConfigProblem) {
        if !self.warnings.contains(&p) {
            self.warnings.push(p);
        }
    }
}
