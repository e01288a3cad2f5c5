//! Spring Cloud's `Resilience4jBulkheadProvider`: one bulkhead per group,
//! semaphore or thread pool.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use resil_config::Registries;
use resil_core::Tags;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};

use crate::sync::lock;

/// The two bulkhead configurations of a group, as Spring Cloud's
/// `Resilience4jBulkheadConfigurationBuilder.BulkheadConfiguration` holds
/// them: the provider uses one or the other.
#[derive(Debug, Clone, Default)]
pub struct BulkheadConfiguration {
    bulkhead: BulkheadConfig,
    thread_pool_bulkhead: ThreadPoolBulkheadConfig,
}

impl BulkheadConfiguration {
    /// A configuration of both kinds.
    pub fn new(bulkhead: BulkheadConfig, thread_pool_bulkhead: ThreadPoolBulkheadConfig) -> Self {
        BulkheadConfiguration {
            bulkhead,
            thread_pool_bulkhead,
        }
    }

    /// The semaphore bulkhead's.
    pub fn bulkhead_config(&self) -> &BulkheadConfig {
        &self.bulkhead
    }

    /// The thread-pool bulkhead's.
    pub fn thread_pool_bulkhead_config(&self) -> &ThreadPoolBulkheadConfig {
        &self.thread_pool_bulkhead
    }
}

/// The default configuration of a group, from the group's name.
pub(crate) type BulkheadDefault = Arc<dyn Fn(&str) -> BulkheadConfiguration + Send + Sync>;

/// The bulkhead a group's calls go through.
#[derive(Clone)]
pub(crate) enum GroupBulkhead {
    Semaphore(Arc<Bulkhead>),
    ThreadPool(Arc<ThreadPoolBulkhead>),
}

impl fmt::Debug for GroupBulkhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupBulkhead::Semaphore(b) => f.debug_tuple("Semaphore").field(&b.name()).finish(),
            GroupBulkhead::ThreadPool(b) => f.debug_tuple("ThreadPool").field(&b.name()).finish(),
        }
    }
}

/// Spring Cloud's bulkhead provider over the registries.
pub(crate) struct BulkheadProvider {
    /// `configure(consumer, ids)` and what `configurations.computeIfAbsent`
    /// filled in.
    configurations: Mutex<HashMap<String, BulkheadConfiguration>>,
    default: Option<BulkheadDefault>,
    semaphore_default: bool,
}

impl BulkheadProvider {
    pub(crate) fn new(
        configured: HashMap<String, BulkheadConfiguration>,
        default: Option<BulkheadDefault>,
        semaphore_default: bool,
    ) -> Self {
        BulkheadProvider {
            configurations: Mutex::new(configured),
            default,
            semaphore_default,
        }
    }

    /// The semaphore bulkhead of `group`, for the async calls (Spring
    /// Cloud's reactive provider has no thread pool).
    pub(crate) fn semaphore(
        &self,
        registries: &Registries,
        group: &str,
        tags: &Tags,
    ) -> Arc<Bulkhead> {
        let configuration = self.configuration(registries, group);
        registries.bulkheads().get_or_create_tagged(
            group,
            || configuration.bulkhead.clone(),
            tags.clone(),
        )
    }

    /// The bulkhead of `group` for the blocking calls: a thread-pool
    /// bulkhead when one of that name exists; else a semaphore one when
    /// `enable-semaphore-default-bulkhead` is set or one of that name
    /// exists; else a thread-pool one.
    pub(crate) fn blocking(
        &self,
        registries: &Registries,
        group: &str,
        tags: &Tags,
    ) -> GroupBulkhead {
        let configuration = self.configuration(registries, group);
        let thread_pools = registries.thread_pool_bulkheads();
        let semaphore = thread_pools.find(group).is_none()
            && (self.semaphore_default || registries.bulkheads().find(group).is_some());
        if semaphore {
            GroupBulkhead::Semaphore(registries.bulkheads().get_or_create_tagged(
                group,
                || configuration.bulkhead.clone(),
                tags.clone(),
            ))
        } else {
            GroupBulkhead::ThreadPool(thread_pools.get_or_create_tagged(
                group,
                || configuration.thread_pool_bulkhead.clone(),
                tags.clone(),
            ))
        }
    }

    /// The configuration of `group`: the one given for it, else the
    /// registries' `configs.<group>` of each kind, else the default.
    fn configuration(&self, registries: &Registries, group: &str) -> BulkheadConfiguration {
        let mut configurations = lock(&self.configurations);
        if let Some(c) = configurations.get(group) {
            return c.clone();
        }
        let default = match &self.default {
            Some(f) => f(group),
            None => BulkheadConfiguration::new(
                registries.bulkheads().default_config(),
                registries.thread_pool_bulkheads().default_config(),
            ),
        };
        let configuration = BulkheadConfiguration::new(
            registries
                .bulkheads()
                .configuration(group)
                .unwrap_or(default.bulkhead),
            registries
                .thread_pool_bulkheads()
                .configuration(group)
                .unwrap_or(default.thread_pool_bulkhead),
        );
        configurations.insert(group.to_owned(), configuration.clone());
        configuration
    }
}

impl fmt::Debug for BulkheadProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadProvider")
            .field("semaphore_default", &self.semaphore_default)
            .finish_non_exhaustive()
    }
}
