//! Inheritance as Resilience4j's Spring Boot binding resolves it.
//!
//! * A table with `base-config = "x"` starts from `configs.x`, which must exist
//!   (a base names a config, never an instance).
//! * A table without `base-config` starts from `configs.default` when there
//!   is one, unless the table is itself named `default`; with no
//!   `configs.default`, from the library defaults. So `configs.default` is
//!   both the implicit base of everything and the registries' default
//!   configuration (used for names that appear only in code).
//! * Chains are followed to the end (`instance → configs.shared →
//!   configs.default`); the table nearest the instance wins, key by key.
//! * A chain that comes back to a config it passed through is a cycle, an
//!   error (Resilience4j overflows its stack). That includes a
//!   `configs.default` whose base-config is a config without one, which
//!   implicitly inherits `configs.default` again.

use crate::aspect::Aspect;
use crate::error::{ConfigProblem, Diagnostics};
use crate::file::{Module, Table};
use crate::value::{Setting, did_you_mean, segment};

/// The name of the implicit base.
pub(crate) const DEFAULT: &str = "default";

/// The tables that make up `table`'s configuration, the deepest base first and
/// `table` last; `None` (with the problem in `d`) for an unknown base or a cycle.
pub(crate) fn chain<'a>(
    aspect: Aspect,
    module: &'a Module,
    table: &'a Table,
    d: &mut Diagnostics,
) -> Option<Vec<&'a Table>> {
    let mut chain = vec![table];
    // how each step was taken, for the cycle message
    let mut steps: Vec<Step<'a>> = Vec::new();
    let mut current = table;
    loop {
        let (next, step) = match current.base_config() {
            Some((name, setting)) => (name, Step::Explicit(setting)),
            None if current.name != DEFAULT && module.configs.contains_key(DEFAULT) => {
                (DEFAULT, Step::Implicit(current))
            }
            None => break,
        };
        let Some(base) = module.configs.get(next) else {
            // only an explicit base can be missing
            if let Step::Explicit(setting) = step {
                d.error(unknown_base(aspect, module, next, setting));
            }
            return None;
        };
        steps.push(step);
        if let Some(at) = chain.iter().position(|t| std::ptr::eq(*t, base)) {
            d.error(cycle(&chain[at..], &steps[at..]));
            return None;
        }
        chain.push(base);
        current = base;
    }
    chain.reverse();
    Some(chain)
}

#[derive(Clone, Copy)]
enum Step<'a> {
    Explicit(&'a Setting),
    Implicit(&'a Table),
}

fn unknown_base(aspect: Aspect, module: &Module, name: &str, setting: &Setting) -> ConfigProblem {
    let configs = module.configs.keys().map(String::as_str);
    let mut message = format!("there is no `{aspect}.configs.{}`", segment(name));
    if let Some(close) = did_you_mean(name, configs) {
        message.push_str(&format!("; did you mean `{close}`?"));
    } else if module.instances.contains_key(name) {
        message.push_str(&format!(
            "; `{name}` is an instance, and a base-config names an entry of `configs`"
        ));
    } else if module.configs.is_empty() {
        message.push_str(&format!("; `{aspect}.configs` is empty"));
    }
    setting.problem(message)
}

/// Reports a cycle once, however many tables lead into it: from its
/// alphabetically first config, at the step that leaves that config.
fn cycle(members: &[&Table], steps: &[Step<'_>]) -> ConfigProblem {
    let n = members.len();
    let start = (0..n)
        .min_by_key(|&i| (members[i].section != "configs", &members[i].name))
        .unwrap_or(0);
    let mut text = members[start].label();
    for k in 0..n {
        let i = (start + k) % n;
        let next = members[(i + 1) % n];
        match steps[i] {
            Step::Explicit(_) => text.push_str(&format!(" → {}", next.label())),
            Step::Implicit(_) => text.push_str(&format!(" → {} (implicitly)", next.label())),
        }
    }
    let mut message = format!("base-config cycle: {text}");
    if steps.iter().any(|s| matches!(s, Step::Implicit(_))) {
        message.push_str(
            "; a table without base-config inherits configs.default, so configs.default must not inherit from it",
        );
    }
    match steps[start] {
        Step::Explicit(setting) => setting.problem(message),
        Step::Implicit(table) => table.problem(message),
    }
}
