//! Start-up: load, override, validate, build the registries, check the declarations.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use config::{FileFormat, Format as _, Map, Source, Value, ValueKind};
use resil_core::Tags;
use resil_core::clock::{Clock, SharedClock};
use resil_core::registry::Registry;

use crate::anti_patterns::{self, Built};
use crate::aspect::Aspect;
use crate::bind::{self, Binder, Bound};
use crate::cloud;
use crate::declared::{self, Declaration};
use crate::env::{self, EnvSource};
use crate::error::{ConfigProblem, Diagnostics, InitError};
use crate::file::{self, DEFAULT_FILE, Document};
use crate::global::{self, Registries};
use crate::inherit;
use crate::reloader::{Inputs, Reloader};
use crate::report::{Effective, InstanceReport, Report};
use crate::value::{self, CloudPrefix, Ctx, Node, Setting, did_you_mean};

/// The default prefix of environment overrides.
pub const DEFAULT_ENV_PREFIX: &str = "RESIL";

/// The largest file resil reads (a resilience configuration is a few kilobytes).
const MAX_FILE_SIZE: usize = 1 << 20;

/// The kinds of the rejections, which every error-kind list may name.
pub use resil_core::error::REJECTION_KINDS;

/// Loads the configuration and builds the global registries: [`Resilience::builder()`]`.init()`.
///
/// Reads `./resilience.toml` (or the file `RESIL_CONFIG` names; a missing
/// named file is an error, a missing `./resilience.toml` means defaults),
/// applies `RESIL_*` environment overrides, validates everything, builds the
/// seven registries with every configured and every declared instance, and
/// checks the configuration against the declarations of protected functions.
/// Call it once, at the start of `main`, before any protected call; inside or
/// outside a tokio runtime.
///
/// # Errors
///
/// [`InitError::Invalid`] with every problem found; [`InitError::AlreadyInitialized`]
/// on a second call; [`InitError::AfterFirstCall`] when a protected call
/// already built the registries on the defaults.
///
/// # Examples
///
/// ```no_run
/// fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let report = resil_config::init()?;
///     println!("{report}");
///     Ok(())
/// }
/// ```
pub fn init() -> Result<Report, InitError> {
    Resilience::builder().init()
}

/// The loaded configuration: the registries and the [`Report`].
///
/// [`ResilienceBuilder::load`] makes one without touching the global
/// registries (for tests and tools); [`ResilienceBuilder::init`] installs its
/// registries as the global ones.
///
/// # Examples
///
/// ```
/// use resil_config::Resilience;
///
/// let toml = r#"
/// [circuitbreaker.configs.default]
/// sliding-window-size = 50
///
/// [circuitbreaker.instances.inventory-query]
/// failure-rate-threshold = 60
/// "#;
/// let loaded = Resilience::builder()
///     .file_contents("resilience.toml", toml)
///     .env_vars([("RESIL_CIRCUITBREAKER__INSTANCES__INVENTORY_QUERY__MINIMUM_NUMBER_OF_CALLS", "10")])
///     .load()?;
/// let cb = loaded.registries().circuit_breakers().circuit_breaker("inventory-query");
/// assert_eq!(cb.config().sliding_window_size(), 50);
/// assert_eq!(cb.config().failure_rate_threshold(), 60.0);
/// assert_eq!(cb.config().minimum_number_of_calls(), 10);
/// # Ok::<(), resil_config::InitError>(())
/// ```
#[derive(Debug)]
pub struct Resilience {
    registries: Registries,
    report: Report,
    /// What [`Resilience::reload`] re-reads, and the report now in force.
    pub(crate) reloader: Reloader,
}

impl Resilience {
    /// A builder: which file, which environment, strict or not, which clock.
    pub fn builder() -> ResilienceBuilder {
        ResilienceBuilder {
            file: None,
            contents: None,
            env_prefix: DEFAULT_ENV_PREFIX.to_owned(),
            env: None,
            strict: false,
            clock: None,
            declarations: None,
            offline: false,
        }
    }

    /// The registries, with every configured and declared instance.
    pub fn registries(&self) -> &Registries {
        &self.registries
    }

    /// What [`ResilienceBuilder::load`] loaded and found; after a
    /// [`reload`](Resilience::reload), [`current_report`](Resilience::current_report)
    /// describes the settings in force.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// The report of the settings in force: the one of
    /// [`load`](ResilienceBuilder::load), or of the last reload that applied.
    ///
    /// # Examples
    ///
    /// ```
    /// use resil_config::{Aspect, Resilience};
    ///
    /// let loaded = Resilience::builder()
    ///     .file_contents("resilience.toml", "[bulkhead.instances.a]\nmax-concurrent-calls = 5\n")
    ///     .env_vars(Vec::<(String, String)>::new())
    ///     .load()?;
    /// loaded.reload_from_contents("resilience.toml", "[bulkhead.instances.a]\nmax-concurrent-calls = 6\n")?;
    /// let now = loaded.current_report();
    /// assert_eq!(now.instance(Aspect::Bulkhead, "a").unwrap().setting("max-concurrent-calls"), Some("6"));
    /// assert_eq!(loaded.report().instance(Aspect::Bulkhead, "a").unwrap().setting("max-concurrent-calls"), Some("5"));
    /// # Ok::<(), resil_config::InitError>(())
    /// ```
    pub fn current_report(&self) -> Arc<Report> {
        self.reloader.current()
    }

    /// The registries and the report of the settings in force (after a
    /// reload, the reload's); nothing reloads them afterwards.
    pub fn into_parts(self) -> (Registries, Report) {
        let current = Arc::unwrap_or_clone(self.reloader.current());
        (self.registries, current)
    }
}

/// Chooses the file, the environment, strictness and the clock; see [`Resilience`].
#[derive(Debug)]
pub struct ResilienceBuilder {
    file: Option<PathBuf>,
    contents: Option<(String, String)>,
    env_prefix: String,
    env: Option<Vec<(String, String)>>,
    strict: bool,
    clock: Option<SharedClock>,
    declarations: Option<Vec<&'static Declaration>>,
    offline: bool,
}

impl ResilienceBuilder {
    /// Reads this file (`.yml`/`.yaml`: YAML, anything else: TOML); a missing
    /// file is an error. Takes precedence over `RESIL_CONFIG`.
    pub fn file(mut self, path: impl Into<PathBuf>) -> Self {
        self.file = Some(path.into());
        self.contents = None;
        self
    }

    /// Uses `text` as the file named `name` (its extension picks the format,
    /// and messages name it), without reading the disk.
    pub fn file_contents(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.contents = Some((name.into(), text.into()));
        self.file = None;
        self
    }

    /// The prefix of environment overrides and of the variable naming the
    /// file (`<PREFIX>_CONFIG`); `RESIL` by default.
    pub fn env_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.env_prefix = prefix.into();
        self
    }

    /// Reads overrides (and `<PREFIX>_CONFIG`) from these variables instead of
    /// the process environment; an empty list turns overrides off.
    pub fn env_vars<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.env = Some(
            vars.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        );
        self
    }

    /// In strict mode, the warnings of the report are errors too: instances
    /// configured but not declared, settings without effect.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// The clock the instances use (a `ManualClock` in tests).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(SharedClock::new(clock));
        self
    }

    /// Checks the file on its own, as `resil check` does: no protected
    /// function is linked in, so an instance that none declares is not a
    /// warning (everything else is checked as `init` checks it).
    pub fn offline(mut self, offline: bool) -> Self {
        self.offline = offline;
        self
    }

    /// Checks against these declarations instead of those linked into the binary.
    pub fn declarations<I>(mut self, declarations: I) -> Self
    where
        I: IntoIterator<Item = &'static Declaration>,
    {
        let mut all: Vec<_> = declarations.into_iter().collect();
        all.sort();
        self.declarations = Some(all);
        self
    }

    /// Loads, validates and builds the registries, and installs them as the
    /// global registries that protected functions use.
    ///
    /// # Errors
    ///
    /// As [`init`](crate::init).
    pub fn init(self) -> Result<Report, InitError> {
        let loaded = self.load()?;
        let report = loaded.report.clone();
        global::install(loaded.registries, report.clone(), loaded.reloader)?;
        tracing::info!(target: "resil", "{}", report.summary());
        for w in &report.warnings {
            tracing::warn!(target: "resil", "{w}");
        }
        Ok(report)
    }

    /// Loads, validates and builds the registries without installing them.
    ///
    /// # Errors
    ///
    /// [`InitError::Invalid`] with every problem found.
    pub fn load(self) -> Result<Resilience, InitError> {
        let declarations = self.declarations.unwrap_or_else(declared::declarations);
        // what a reload re-reads: the same variables (or the process's
        // environment again), the file read now, the same checks
        let mut inputs = Inputs {
            file: self.file.clone(),
            contents: self.contents.clone(),
            env_prefix: self.env_prefix.clone(),
            env: self.env.clone(),
            strict: self.strict,
            clock: self.clock.clone().unwrap_or_default(),
            declarations: declarations.clone(),
            offline: self.offline,
        };
        let mut d = Diagnostics::default();
        let vars = match self.env {
            Some(vars) => vars,
            None => {
                // A variable of ours that is not UTF-8 cannot be read: an
                // error naming it, never a silent start on other settings.
                let ours = format!("{}_", self.env_prefix);
                let mut vars = Vec::new();
                for (key, value) in std::env::vars_os() {
                    match (key.into_string(), value.into_string()) {
                        (Ok(key), Ok(value)) => vars.push((key, value)),
                        (key, value) => {
                            let key = key.unwrap_or_else(|k| k.to_string_lossy().into_owned());
                            if key.starts_with(&ours) {
                                let raw =
                                    value.unwrap_or_else(|v| v.to_string_lossy().into_owned());
                                d.error(ConfigProblem::new(
                                    format!("environment variable {key}"),
                                    "",
                                    Some(raw),
                                    "is not UTF-8 text; resil reads its variables as UTF-8"
                                        .to_owned(),
                                ));
                            }
                        }
                    }
                }
                vars
            }
        };
        let config_var = format!("{}_{}", self.env_prefix, env::CONFIG_VAR);
        let input = match (self.contents, self.file) {
            (Some((name, text)), _) => Some((name, text)),
            (None, Some(path)) => read(&path, true, &mut d),
            (None, None) => {
                let (path, required) = match vars.iter().find(|(k, _)| *k == config_var) {
                    Some((_, path)) => (PathBuf::from(path), true),
                    None => (PathBuf::from(DEFAULT_FILE), false),
                };
                let input = read(&path, required, &mut d);
                // a file that was read is the one reloads read, and must
                // stay: deleting it is a rejected reload, not a return to
                // the defaults
                if input.is_some() {
                    inputs.file = Some(path);
                }
                input
            }
        };
        let file_name = input
            .as_ref()
            .map_or_else(|| DEFAULT_FILE.to_owned(), |(name, _)| name.clone());
        let (tree, prefix, cloud) = match &input {
            Some((name, text)) => parse(name, text, &mut d),
            None => (Map::new(), None, CloudPrefix::Toml),
        };
        let declared: Vec<(Aspect, &str)> =
            declarations.iter().map(|x| (x.aspect, x.name)).collect();
        let overrides = env::map(&self.env_prefix, &vars, &tree, &declared, &mut d);
        let root = layer(tree, overrides.clone(), &file_name, &mut d);
        let ctx = Ctx {
            file: file_name,
            prefix,
            cloud,
        };
        let doc = file::read(&root, &ctx, &mut d);
        let clock = inputs.clock.clone();
        let mut parts = Parts {
            doc: &doc,
            declarations: &declarations,
            offline: self.offline,
            clock,
            d,
            instances: Vec::new(),
            defaults: BTreeMap::new(),
        };
        let circuit_breakers = parts.aspect::<resil_core::circuit_breaker::CircuitBreaker>();
        let retries = parts.aspect::<resil_core::retry::Retry>();
        let bulkheads = parts.aspect::<resil_core::bulkhead::Bulkhead>();
        let thread_pool_bulkheads =
            parts.aspect::<resil_core::thread_pool_bulkhead::ThreadPoolBulkhead>();
        let rate_limiters = parts.aspect::<resil_core::rate_limiter::RateLimiter>();
        let time_limiters = parts.aspect::<resil_core::time_limiter::TimeLimiter>();
        let hedges = parts.aspect::<resil_core::hedge::Hedge>();
        let mut d = parts.d;
        if d.errors.is_empty() {
            anti_patterns::check(
                &Built {
                    circuit_breakers: &circuit_breakers,
                    retries: &retries,
                    bulkheads: &bulkheads,
                    thread_pool_bulkheads: &thread_pool_bulkheads,
                    rate_limiters: &rate_limiters,
                    time_limiters: &time_limiters,
                },
                &parts.instances,
                &doc,
                &ctx,
                &mut d,
            );
        }
        d.errors.sort();
        d.warnings.sort();
        if !d.errors.is_empty() || (self.strict && !d.warnings.is_empty()) {
            let mut all = d.errors;
            if self.strict {
                all.extend(d.warnings);
            }
            return Err(InitError::Invalid(all));
        }
        let registries = Registries::from_parts(
            circuit_breakers,
            retries,
            bulkheads,
            thread_pool_bulkheads,
            rate_limiters,
            time_limiters,
            doc.cloud.clone().unwrap_or_default(),
        )
        .with_hedges(hedges);
        let defaults = parts.defaults;
        let mut instances = parts.instances;
        instances.sort_by(|a, b| (a.aspect, &a.name).cmp(&(b.aspect, &b.name)));
        let report = Report {
            file: input.map(|(name, _)| name),
            env_overrides: overrides.applied().to_vec(),
            declarations,
            instances,
            warnings: d.warnings,
            cloud: doc.cloud.clone(),
            defaults,
            tags: Aspect::ALL
                .into_iter()
                .map(|a| (a, doc.module(a).tag_settings.clone()))
                .collect(),
            cloud_written: doc.cloud_written.clone(),
        };
        let reloader = Reloader::new(inputs, report.clone());
        Ok(Resilience {
            registries,
            report,
            reloader,
        })
    }
}

/// Reads a file; `None` when it is absent and not `required`, or unreadable (reported).
fn read(path: &Path, required: bool, d: &mut Diagnostics) -> Option<(String, String)> {
    use std::io::Read;
    let name = path.display().to_string();
    let problem = |message: String| ConfigProblem::new(name.clone(), "", None, message);
    // The type is checked before opening: opening a FIFO for reading blocks
    // until a writer comes, and a device or `/proc` file reports no size.
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return None,
        Err(e) => {
            d.error(problem(format!("cannot read the file: {e}")));
            return None;
        }
        Ok(m) if !m.is_file() => {
            d.error(problem(format!(
                "cannot read the file: it is not a regular file ({}); resil reads its configuration from a regular file",
                file_kind(&m.file_type())
            )));
            return None;
        }
        Ok(_) => {}
    }
    // Bounded whatever the metadata says: at most one byte past the limit is read.
    let mut bytes = Vec::new();
    let read = std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_SIZE as u64 + 1).read_to_end(&mut bytes));
    if let Err(e) = read {
        d.error(problem(format!("cannot read the file: {e}")));
        return None;
    }
    if bytes.len() > MAX_FILE_SIZE {
        d.error(problem(format!(
            "is more than {MAX_FILE_SIZE} bytes; resil reads at most {MAX_FILE_SIZE} bytes"
        )));
        return None;
    }
    match String::from_utf8(bytes) {
        Ok(text) => Some((name, text)),
        Err(e) => {
            d.error(problem(format!(
                "cannot read the file: it is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            )));
            None
        }
    }
}

/// What a file that is not a regular file is, for the error.
fn file_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Parses the file; the tree is the part under `resilience4j` when there is one.
fn parse(
    name: &str,
    text: &str,
    d: &mut Diagnostics,
) -> (Map<String, Value>, Option<&'static str>, CloudPrefix) {
    let problem = |message: String| ConfigProblem::new(name.to_owned(), "", None, message);
    if text.len() > MAX_FILE_SIZE {
        d.error(problem(format!(
            "is {} bytes; resil reads at most {MAX_FILE_SIZE} bytes",
            text.len()
        )));
        return (Map::new(), None, CloudPrefix::Toml);
    }
    let yaml = Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("yml") || e.eq_ignore_ascii_case("yaml"));
    let parsed = if yaml {
        if let Some(why) = yaml_too_big(text) {
            d.error(problem(format!("refused: the YAML {why}")));
            return (Map::new(), None, CloudPrefix::Toml);
        }
        FileFormat::Yaml.parse(None, text)
    } else {
        // toml first, for the line and column of a syntax error
        if let Err(e) = toml::de::DeTable::parse(text) {
            let mut p = problem(format!("invalid TOML: {}", e.message().trim_end()));
            p.line_col = e.span().map(|s| line_col(text, s.start));
            d.error(p);
            return (Map::new(), None, CloudPrefix::Toml);
        }
        FileFormat::Toml.parse(None, text)
    };
    let tree = match parsed {
        Ok(tree) => tree,
        Err(e) => {
            let kind = if yaml { "YAML" } else { "TOML" };
            let message = e.to_string();
            let mut p = problem(format!("invalid {kind}: {message}"));
            p.line_col = yaml_line_col(&message);
            d.error(p);
            return (Map::new(), None, CloudPrefix::Toml);
        }
    };
    let (mut modules, prefix) = match tree.get("resilience4j") {
        Some(Value {
            kind: ValueKind::Table(t),
            ..
        }) => (t.clone(), Some("resilience4j")),
        Some(other) => {
            d.error(ConfigProblem::new(
                name.to_owned(),
                "resilience4j",
                Some(Node::from_value(other.clone()).render()),
                "expected the table of Resilience4j's modules",
            ));
            (Map::new(), None)
        }
        None => (tree.clone(), None),
    };
    if prefix.is_some() {
        ignored_top_level_keys(name, &tree, yaml, d);
    }
    if !yaml {
        return (modules, prefix, CloudPrefix::Toml);
    }
    // Spring Cloud's properties sit beside the `resilience4j:` tree; they
    // are read as resil's `[cloud]`, and the rest of `spring:` is not ours
    if prefix.is_none() {
        modules.remove("spring");
    }
    if let Some(settings) = tree
        .get(cloud::SPRING_PATH[0])
        .and_then(spring_cloud_settings)
    {
        if let Some(clash) = modules.keys().find(|k| value::relaxed(k) == cloud::TABLE) {
            d.error(ConfigProblem::new(
                name.to_owned(),
                format!(
                    "{}{clash}",
                    prefix.map_or(String::new(), |p| format!("{p}."))
                ),
                None,
                format!(
                    "is not a Resilience4j module; Spring Cloud's settings go under `{}`",
                    cloud::SPRING_PATH.join(".")
                ),
            ));
        } else {
            modules.insert(
                cloud::TABLE.to_owned(),
                Value::new(None, ValueKind::Table(settings.clone())),
            );
        }
    }
    (modules, prefix, CloudPrefix::Spring)
}

/// Warns of the top-level keys beside `resilience4j` that resil does not
/// read (a Spring `application.yml` holds the whole application's
/// properties): each would otherwise be ignored without a word.
fn ignored_top_level_keys(name: &str, tree: &Map<String, Value>, yaml: bool, d: &mut Diagnostics) {
    for (key, node) in tree {
        let message = match value::relaxed(key).as_str() {
            "resilience4j" => continue,
            // Spring Cloud CircuitBreaker's settings are read from there
            "spring" if yaml && spring_cloud_settings(node).is_some() => continue,
            "management" => format!(
                "is not read by resil: the actuator's routes are chosen in code (`resil::actuator::Actuator::builder()`: its router serves every read route, and state changes only with `state_changes(token)`), not by Spring Boot's `{key}.endpoints.web.exposure.include`; this block has no effect"
            ),
            _ => format!(
                "is not read by resil, which reads only `resilience4j`{}: this key has no effect",
                if yaml {
                    " and `spring.cloud.circuitbreaker.resilience4j`"
                } else {
                    ""
                }
            ),
        };
        d.warn(ConfigProblem::new(
            name.to_owned(),
            key.clone(),
            None,
            message,
        ));
    }
}

/// The table at Spring Cloud CircuitBreaker's path under a `spring` value.
fn spring_cloud_settings(spring: &Value) -> Option<&Map<String, Value>> {
    let mut at = match &spring.kind {
        ValueKind::Table(t) => t,
        _ => return None,
    };
    for segment in &cloud::SPRING_PATH[1..] {
        at = match at.get(*segment).map(|v| &v.kind) {
            Some(ValueKind::Table(next)) => next,
            _ => return None,
        };
    }
    Some(at)
}

/// How deep a YAML document may nest (resilience4j's tree needs 6 levels).
const MAX_YAML_DEPTH: usize = 64;
/// How many values a YAML document may expand to, aliases included.
const MAX_YAML_NODES: usize = 100_000;

/// Why a YAML text is refused before parsing it into a tree, if it is.
///
/// The YAML parser and the conversion into `config` values recurse once per
/// level of nesting, and each alias copies the node it names, so a short
/// text can nest deep enough to overflow the stack or expand ("a billion
/// laughs") until memory runs out. This pass reads the parser's events one by
/// one, without building anything, and measures both.
fn yaml_too_big(text: &str) -> Option<String> {
    use yaml_rust2::parser::{Event, Parser};
    struct Open {
        anchor: usize,
        start: usize,
        height: usize,
    }
    let mut parser = Parser::new_from_str(text);
    let mut open: Vec<Open> = Vec::new();
    // per anchor: values in the node and its height
    let mut anchors: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    let mut total = 0usize;
    let mut depth = 0usize;
    loop {
        // a syntax error is reported by the real parse, with its position
        let Ok((event, _)) = parser.next_token() else {
            return None;
        };
        match event {
            Event::StreamEnd => return None,
            Event::MappingStart(anchor, _) | Event::SequenceStart(anchor, _) => {
                total += 1;
                open.push(Open {
                    anchor,
                    start: total,
                    height: 1,
                });
                depth = depth.max(open.len());
            }
            Event::MappingEnd | Event::SequenceEnd => {
                if let Some(done) = open.pop() {
                    if let Some(parent) = open.last_mut() {
                        parent.height = parent.height.max(done.height + 1);
                    }
                    if done.anchor > 0 {
                        anchors.insert(done.anchor, (total - done.start + 1, done.height));
                    }
                }
            }
            Event::Scalar(_, _, anchor, _) => {
                total += 1;
                if anchor > 0 {
                    anchors.insert(anchor, (1, 0));
                }
            }
            Event::Alias(id) => {
                let (values, height) = anchors.get(&id).copied().unwrap_or((1, 0));
                total = total.saturating_add(values);
                depth = depth.max(open.len() + height);
                if let Some(parent) = open.last_mut() {
                    parent.height = parent.height.max(height + 1);
                }
            }
            _ => {}
        }
        if depth > MAX_YAML_DEPTH {
            return Some(format!("nests deeper than {MAX_YAML_DEPTH} levels"));
        }
        if total > MAX_YAML_NODES {
            return Some(format!(
                "expands to more than {MAX_YAML_NODES} values (aliases copy what they name)"
            ));
        }
    }
}

/// The position in a YAML parser's message (`... at byte 105 line 8 column 1`).
fn yaml_line_col(message: &str) -> Option<(usize, usize)> {
    let (_, rest) = message.rsplit_once(" line ")?;
    let (line, rest) = rest.split_once(" column ")?;
    let col: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((line.trim().parse().ok()?, col.parse().ok()?))
}

/// Line and column (from 1, in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut before = &text[..offset.min(text.len())];
    while !text.is_char_boundary(before.len()) {
        before = &before[..before.len() - 1];
    }
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

/// The file's tree as a `config` source.
#[derive(Debug, Clone)]
struct FileSource(Map<String, Value>);

impl Source for FileSource {
    fn clone_into_box(&self) -> Box<dyn Source + Send + Sync> {
        Box::new(self.clone())
    }

    fn collect(&self) -> Result<Map<String, Value>, config::ConfigError> {
        Ok(self.0.clone())
    }
}

/// The file with the overrides on top, merged by the `config` crate.
fn layer(
    tree: Map<String, Value>,
    overrides: EnvSource,
    file: &str,
    d: &mut Diagnostics,
) -> BTreeMap<String, Node> {
    let merged = config::Config::builder()
        .add_source(FileSource(tree))
        .add_source(overrides)
        .build()
        .and_then(|c| c.collect());
    match merged {
        Ok(m) => m
            .into_iter()
            .map(|(k, v)| (k, Node::from_value(v)))
            .collect(),
        Err(e) => {
            d.error(ConfigProblem::new(file.to_owned(), "", None, e.to_string()));
            BTreeMap::new()
        }
    }
}

/// Builds the registries aspect by aspect, collecting problems and the report.
struct Parts<'a> {
    doc: &'a Document,
    declarations: &'a [&'static Declaration],
    /// No declarations to check the instances against (`resil check`).
    offline: bool,
    clock: SharedClock,
    d: Diagnostics,
    instances: Vec<InstanceReport>,
    /// What an instance of each aspect that no table configures gets.
    defaults: BTreeMap<Aspect, Effective>,
}

impl Parts<'_> {
    fn aspect<P: Binder>(&mut self) -> Registry<P> {
        let aspect = P::ASPECT;
        let module = self.doc.module(aspect);
        let d = &mut self.d;
        if aspect == Aspect::ThreadPoolBulkhead {
            // The core's own rule for a pool's name, reported at its table.
            for (name, table) in &module.instances {
                if let Err(e) =
                    resil_core::thread_pool_bulkhead::ThreadPoolBulkhead::check_name(name)
                {
                    for p in e.problems() {
                        d.error(
                            table.problem(format!(
                                "cannot name a thread-pool bulkhead: {}",
                                p.rule()
                            )),
                        );
                    }
                }
            }
        }
        let mut bound = |table| {
            let chain = inherit::chain(aspect, module, table, d)?;
            bind::bind::<P>(&chain, d)
        };
        let configs: BTreeMap<&str, Bound<P::Config>> = module
            .configs
            .iter()
            .filter_map(|(name, t)| Some((name.as_str(), bound(t)?)))
            .collect();
        let instances: BTreeMap<&str, Bound<P::Config>> = module
            .instances
            .iter()
            .filter_map(|(name, t)| Some((name.as_str(), bound(t)?)))
            .collect();
        let mut declared: BTreeMap<&str, Vec<&'static Declaration>> = BTreeMap::new();
        for x in self.declarations.iter().filter(|x| x.aspect == aspect) {
            declared.entry(x.name).or_default().push(x);
        }
        let default = configs.get(inherit::DEFAULT);
        // configured but not declared: likely a typo
        for (name, table) in &module.instances {
            if self.offline || declared.contains_key(name.as_str()) {
                continue;
            }
            let close = did_you_mean(name, declared.keys().copied())
                .map(|n| format!("; did you mean `{n}`?"))
                .unwrap_or_default();
            self.d.warn(table.problem(format!(
                "no protected function in this binary declares {aspect} `{name}`{close} (a crate that the binary never names is not linked: add `use that_crate as _;`)"
            )));
        }
        // what the file says of each declared instance: the error kinds it
        // names must exist in the declared error types, and its settings must
        // be ones the attributes can honour
        for (name, sites) in &declared {
            let Some(effective) = instances.get(name).or(default) else {
                continue;
            };
            check_kinds::<P>(aspect, name, sites, effective, &mut self.d);
            check_honoured::<P>(aspect, name, sites, effective, &mut self.d);
        }
        // the registry, with every configured and declared instance
        let mut tags: Tags = module
            .tags
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // Spring Cloud's group meter filter: every instance has a `group`
        // (the facade's own instances overwrite it with theirs)
        if let Some(cloud) = self
            .doc
            .cloud
            .as_ref()
            .filter(|c| c.enable_group_meter_filter())
        {
            tags.entry(cloud::GROUP_TAG.to_owned())
                .or_insert_with(|| cloud.default_group_tag().to_owned());
        }
        let mut builder = Registry::<P>::builder()
            .clock(self.clock.clone())
            .tags(tags);
        builder = builder.default_config(P::library_default());
        for (name, b) in &configs {
            builder = builder.configuration(*name, b.config.clone());
        }
        let registry = builder.build();
        if !self.d.errors.is_empty() {
            return registry;
        }
        let effective = match default {
            Some(b) => Effective::of::<P>(b),
            None => Effective::library::<P>(),
        };
        self.defaults.insert(aspect, effective);
        let names: BTreeSet<&str> = instances.keys().chain(declared.keys()).copied().collect();
        for name in names {
            let effective = match (instances.get(name), default) {
                (Some(b), _) | (None, Some(b)) => Effective::of::<P>(b),
                (None, None) => Effective::library::<P>(),
            };
            let config = effective
                .config::<P>()
                .cloned()
                .unwrap_or_else(P::library_default);
            registry.get_or_create(name, || config);
            self.instances.push(InstanceReport {
                aspect,
                name: name.to_owned(),
                configured: instances.contains_key(name),
                sources: effective
                    .provenance
                    .iter()
                    .map(|(k, s)| (*k, source_of(s)))
                    .collect(),
                declared_at: declared.get(name).cloned().unwrap_or_default(),
                effective,
            });
        }
        registry
    }
}

/// Warns of settings that the attributes of `sites` cannot honour.
fn check_honoured<P: Binder>(
    aspect: Aspect,
    name: &str,
    sites: &[&'static Declaration],
    effective: &Bound<P::Config>,
    d: &mut Diagnostics,
) {
    // a `#[time_limiter]` whose future owns what it uses honours
    // `cancel-running-future = false`: only the others are said
    let sites: Vec<&'static Declaration> = sites
        .iter()
        .copied()
        .filter(|s| !(aspect == Aspect::TimeLimiter && s.detachable()))
        .collect();
    let Some(&site) = sites.first() else {
        return;
    };
    for (key, why) in P::unhonoured_by_attributes(&effective.config) {
        if let Some(setting) = effective.provenance.get(key) {
            d.warn(setting.problem(format!(
                "has no effect on {aspect} `{name}` as `{}` at {}:{} uses it: {why}",
                site.path(),
                site.file,
                site.line
            )));
        }
    }
}

fn check_kinds<P: Binder>(
    aspect: Aspect,
    name: &str,
    sites: &[&'static Declaration],
    effective: &Bound<P::Config>,
    d: &mut Diagnostics,
) {
    let known: BTreeSet<&str> = sites
        .iter()
        .flat_map(|x| x.error_kinds.iter().copied())
        .collect();
    let types: Vec<&str> = sites
        .iter()
        .map(|x| x.error_type)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let first = sites[0];
    for (key, kinds) in P::kinds(&effective.config) {
        let Some(setting) = effective.provenance.get(key) else {
            continue;
        };
        for kind in kinds {
            if known.contains(kind.as_str()) || REJECTION_KINDS.contains(&kind.as_str()) {
                continue;
            }
            let used = format!(
                "{} (the error type of {aspect} `{name}` at {}:{})",
                value::list(&types),
                first.file,
                first.line
            );
            let message = if known.is_empty() {
                format!(
                    "`{kind}` is not an error kind: {used} has no kinds; derive `resil::Classify` for it, or name only rejections ({})",
                    value::list(&REJECTION_KINDS)
                )
            } else {
                let all: Vec<&str> = known.iter().copied().chain(REJECTION_KINDS).collect();
                let hint = match did_you_mean(&kind, all.iter().copied()) {
                    Some(k) => format!("did you mean `{k}`?"),
                    None => format!(
                        "its kinds are {}",
                        value::list(&known.iter().copied().collect::<Vec<_>>())
                    ),
                };
                format!("`{kind}` is not an error kind of {used}; {hint}")
            };
            d.error(setting.problem(message));
        }
    }
}

/// Where a setting was written, for [`InstanceReport::source`].
fn source_of(s: &Setting) -> String {
    match s.source.strip_prefix("env ") {
        Some(var) => format!("environment variable {var}"),
        None => format!("`{}` in {}", s.path, s.source),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters() {
        let text = "a = 1\nbé = [\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        assert_eq!(line_col(text, 10), (2, 4));
        assert_eq!(line_col(text, 999), (3, 1));
    }
}
