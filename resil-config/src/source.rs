//! Reading a configuration file: its size, its format (TOML, or YAML
//! with Spring Boot's `resilience4j` prefix), the positions of its
//! problems, and the environment's overrides laid on top.

use std::collections::BTreeMap;
use std::path::Path;

use config::{FileFormat, Format as _, Map, Source, Value, ValueKind};

use crate::cloud;
use crate::env::EnvSource;
use crate::error::{ConfigProblem, Diagnostics};
use crate::value::{self, CloudPrefix, Node};

/// The largest file resil reads (a resilience configuration is a few kilobytes).
const MAX_FILE_SIZE: usize = 1 << 20;

/// Reads a file; `None` when it is absent and not `required`, or unreadable (reported).
pub(crate) fn read(path: &Path, required: bool, d: &mut Diagnostics) -> Option<(String, String)> {
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
pub(crate) fn file_kind(t: &std::fs::FileType) -> &'static str {
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
pub(crate) fn parse(
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
pub(crate) fn ignored_top_level_keys(
    name: &str,
    tree: &Map<String, Value>,
    yaml: bool,
    d: &mut Diagnostics,
) {
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
pub(crate) fn spring_cloud_settings(spring: &Value) -> Option<&Map<String, Value>> {
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
pub(crate) fn yaml_too_big(text: &str) -> Option<String> {
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
pub(crate) fn yaml_line_col(message: &str) -> Option<(usize, usize)> {
    let (_, rest) = message.rsplit_once(" line ")?;
    let (line, rest) = rest.split_once(" column ")?;
    let col: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((line.trim().parse().ok()?, col.parse().ok()?))
}

/// Line and column (from 1, in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
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
pub(crate) fn layer(
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
