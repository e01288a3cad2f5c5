//! What a reload reads again: the builder's inputs and the report in force,
//! kept with the registries they built (below the global ones, which hold
//! them); [`reload`](crate::reload()) computes and applies the difference.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use resil_core::clock::SharedClock;

use crate::declaration::Declaration;
use crate::report::Report;
use crate::sync::lock;

/// What a builder was given, so that a reload reads the same source the
/// same way.
#[derive(Debug, Clone)]
pub(crate) struct Inputs {
    /// The file read (given, named by `<PREFIX>_CONFIG`, or the default
    /// one when it existed): reloads read it and require it.
    pub(crate) file: Option<PathBuf>,
    pub(crate) contents: Option<(String, String)>,
    pub(crate) env_prefix: String,
    /// `None`: the process environment, read again at each reload.
    pub(crate) env: Option<Vec<(String, String)>>,
    pub(crate) strict: bool,
    pub(crate) clock: SharedClock,
    pub(crate) declarations: Vec<&'static Declaration>,
    pub(crate) offline: bool,
}

/// The inputs and the report in force, behind one lock that a reload holds
/// from reading the file to applying the difference: reloads run one at a
/// time, and each compares against what the previous one applied.
#[derive(Debug)]
pub(crate) struct Reloader {
    pub(crate) state: Mutex<State>,
}

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) inputs: Inputs,
    pub(crate) current: Arc<Report>,
}

impl Reloader {
    pub(crate) fn new(inputs: Inputs, report: Report) -> Self {
        Reloader {
            state: Mutex::new(State {
                inputs,
                current: Arc::new(report),
            }),
        }
    }

    /// The report in force.
    pub(crate) fn current(&self) -> Arc<Report> {
        lock(&self.state).current.clone()
    }

    /// The file reloads read, if they read one.
    #[cfg(feature = "watch")]
    pub(crate) fn file(&self) -> Option<PathBuf> {
        let state = lock(&self.state);
        match &state.inputs.contents {
            Some(_) => None,
            None => state.inputs.file.clone(),
        }
    }

    /// The clock the registries were built on: a staggered change waits on it.
    #[cfg(feature = "watch")]
    pub(crate) fn clock(&self) -> SharedClock {
        lock(&self.state).inputs.clock.clone()
    }

    pub(crate) fn state_inputs(&self) -> Inputs {
        lock(&self.state).inputs.clone()
    }
}
