//! The state every handler reads: the registries shown, their report and
//! reload, the Prometheus handle, the token, the streams' slots, the audit log.

use std::sync::OnceLock;

#[allow(clippy::wildcard_imports)]
use super::*;

/// Where the registries shown come from ([`SharedRegistries`]'s inside).
#[derive(Debug, Clone)]
pub(super) enum Source {
    /// [`registries`](crate::registries), once built.
    Global,
    /// Registries given as `&'static`.
    Static(&'static Registries),
    /// Registries given by value or shared.
    Owned(Arc<Registries>),
    /// Registries of `Resilience::builder()`, with their report and reload.
    Resilience(Arc<Resilience>),
}

/// What `POST /actuator/refresh` calls: `true` for a dry run.
pub(super) type ReloadFn = Arc<dyn Fn(bool) -> Result<ReloadReport, InitError> + Send + Sync>;

/// What every handler of one [`Actuator`] reads.
pub(super) struct Shared {
    pub(super) source: Source,
    pub(super) report: Option<Arc<Report>>,
    pub(super) reload: Option<ReloadFn>,
    pub(super) prometheus: Option<PrometheusHandle>,
    pub(super) token: Option<String>,
    pub(super) streams: stream::Slots,
    pub(super) expose_sources: bool,
    /// The state changes asked for, and their answers.
    pub(super) audit: audit::Audit,
}

/// [`ActuatorBuilder::max_stream_clients`]'s default.
pub(super) const DEFAULT_MAX_STREAM_CLIENTS: usize = 16;

/// [`ActuatorBuilder::max_stream_clients_per_peer`]'s default.
pub(super) const DEFAULT_MAX_STREAM_CLIENTS_PER_PEER: usize = 4;

/// The most a state change's body may hold, whatever limit the application's
/// router sets (or lifts with `DefaultBodyLimit::disable()`).
pub(super) const MAX_BODY: usize = 64 * 1024;

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("source", &self.source)
            .field("report", &self.report.is_some())
            .field("reload", &self.reload.is_some())
            .field("prometheus", &self.prometheus.is_some())
            .field("state_changes", &self.token.is_some())
            .field("streams", &self.streams)
            .field("expose_sources", &self.expose_sources)
            .finish()
    }
}

impl Shared {
    /// The Prometheus text, its gauges refreshed first; `None` without a
    /// handle (what `/actuator/prometheus` and `/actuator/metrics` read).
    pub(super) fn render_prometheus(&self) -> Option<String> {
        let handle = self.prometheus.as_ref()?;
        let binding = self.binding();
        binding.refresh();
        crate::metrics::refresh_deadlines();
        crate::metrics::fault::refresh();
        crate::metrics::refresh_budgets(&self.registries().retry_budgets());
        // the keyed instances' `key`-tagged series are resil's, not the recorder's
        Some(crate::metrics::with_keyed_series_of(
            &binding,
            &handle.render(),
        ))
    }

    pub(super) fn registries_if_any(&self) -> Option<&Registries> {
        match &self.source {
            Source::Global => resil_config::global::built(),
            Source::Static(r) => Some(r),
            Source::Owned(r) => Some(r),
            Source::Resilience(r) => Some(r.registries()),
        }
    }

    /// The registries, or empty ones while the global registries are not built.
    pub(super) fn registries(&self) -> &Registries {
        static EMPTY: OnceLock<Registries> = OnceLock::new();
        self.registries_if_any()
            .unwrap_or_else(|| EMPTY.get_or_init(Registries::of_defaults))
    }

    pub(super) fn binding(&self) -> Arc<Binding> {
        Binding::of(self.registries())
    }

    /// The report shown: the one given, else the one in force.
    pub(super) fn report(&self) -> Option<Arc<Report>> {
        match (&self.report, &self.source) {
            (Some(r), _) => Some(r.clone()),
            (None, Source::Global) => resil_config::global::current_report(),
            (None, Source::Resilience(r)) => Some(r.current_report()),
            (None, _) => None,
        }
    }

    /// Reloads the configuration of the registries shown (a dry run
    /// applies nothing); `None` when nothing says how.
    pub(super) fn reload(&self, dry_run: bool) -> Option<Result<ReloadReport, InitError>> {
        if let Some(reload) = &self.reload {
            return Some(reload(dry_run));
        }
        match (&self.source, dry_run) {
            (Source::Global, false) => Some(resil_config::reload()),
            (Source::Global, true) => Some(resil_config::reload_dry_run()),
            (Source::Resilience(r), false) => Some(r.reload()),
            (Source::Resilience(r), true) => Some(r.reload_dry_run()),
            _ => None,
        }
    }
}
