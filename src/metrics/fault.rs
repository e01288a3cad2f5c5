//! The faults' meter: the calls each fault delayed and aborted, from the
//! process's board of faults.

use resil_core::fault::Faults;

/// `resil_faults_injected_total`: calls a fault delayed or aborted (tags
/// `name`, the fault's, and `kind` = `delay`, `abort`).
pub const FAULTS_INJECTED: &str = "resil_faults_injected_total";

/// Sets `resil_faults_injected_total` for every name that ever had a fault.
pub(crate) fn refresh() {
    for (name, delayed, aborted) in Faults::global().injected_totals() {
        ::metrics::counter!(FAULTS_INJECTED, "name" => name.clone(), "kind" => "delay")
            .absolute(delayed);
        ::metrics::counter!(FAULTS_INJECTED, "name" => name, "kind" => "abort").absolute(aborted);
    }
}

pub(crate) fn describe() {
    ::metrics::describe_counter!(
        FAULTS_INJECTED,
        "The number of calls a fault injection delayed or aborted"
    );
}
