//! The connection: the reconnecting `ConnectionManager` of one server, or
//! the cluster client's connection, which finds the nodes of a Redis
//! Cluster from a few of them, routes each script to the node that holds
//! its key's slot, follows `MOVED` and `ASK`, and reads the slots again
//! when the topology changes (a failover, a resharding).

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClientBuilder, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Client, Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, RedisResult, Value};

use crate::RedisOptions;
use crate::url::Target;

/// How often a request is tried again on the cluster (after a `MOVED`, a
/// `TRYAGAIN`, a node gone) within its response timeout.
const CLUSTER_RETRIES: u32 = 3;

/// A connection to one server or to a cluster. Cheap to clone: clones share
/// the connection.
#[derive(Clone)]
pub(crate) enum Con {
    Server(ConnectionManager),
    Cluster {
        con: ClusterConnection,
        /// The nodes the URL names (with its credentials: never shown).
        seeds: Arc<[String]>,
    },
}

impl Con {
    /// Connects lazily to `target`: nothing is sent before the first
    /// command. Needs a tokio runtime entered.
    pub(crate) fn new(target: Target, options: &RedisOptions) -> RedisResult<Con> {
        let timeout = options.response_timeout;
        match target {
            Target::Server(url) => {
                let config = ConnectionManagerConfig::new()
                    .set_response_timeout(Some(timeout))
                    .set_connection_timeout(Some(timeout))
                    .set_number_of_retries(1)
                    .set_min_delay(Duration::from_millis(10))
                    .set_max_delay(Duration::from_millis(200));
                let client = Client::open(url)?;
                ConnectionManager::new_lazy_with_config(client, config).map(Con::Server)
            }
            Target::Cluster(nodes) => {
                let client = ClusterClientBuilder::new(nodes.clone())
                    .retries(CLUSTER_RETRIES)
                    .min_retry_wait(10)
                    .max_retry_wait(200)
                    .build()?;
                let config = ClusterConfig::new()
                    .set_connection_timeout(timeout)
                    .set_response_timeout(timeout);
                Ok(Con::Cluster {
                    con: client.get_pending_async_connection_with_config(config),
                    seeds: nodes.into(),
                })
            }
        }
    }

    /// Why the cluster client finds no node to send `e`'s command to, when
    /// the reason is one people can act on: a node the URL names answers,
    /// but is a server without cluster support. Asks each node the URL
    /// names, on a connection of its own, within `timeout`.
    pub(crate) async fn diagnose(&self, e: &RedisError, timeout: Duration) -> Option<String> {
        let Con::Cluster { seeds, .. } = self else {
            return None;
        };
        if e.kind() != ErrorKind::ClusterConnectionNotFound {
            return None;
        }
        for seed in seeds.iter() {
            let Ok(client) = Client::open(seed.as_str()) else {
                continue;
            };
            let info = tokio::time::timeout(timeout, async {
                let mut con = client.get_multiplexed_async_connection().await?;
                redis::cmd("INFO")
                    .arg("cluster")
                    .query_async::<String>(&mut con)
                    .await
            })
            .await;
            if let Ok(Ok(info)) = info
                && info.contains("cluster_enabled:0")
            {
                let node = seed.strip_prefix("redis://").unwrap_or(seed);
                let node = node.rsplit_once('@').map_or(node, |(_, n)| n);
                return Some(format!(
                    "the node `{node}` of the `{}://` URL is a Redis server without cluster support (`cluster_enabled:0`): name the nodes of a Redis Cluster, or write `redis://{node}/0` for this one server (the client said: {e})",
                    crate::url::CLUSTER_SCHEME
                ));
            }
        }
        None
    }
}

impl ConnectionLike for Con {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Con::Server(c) => c.req_packed_command(cmd),
            Con::Cluster { con: c, .. } => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Con::Server(c) => c.req_packed_commands(pipeline, offset, count),
            Con::Cluster { con: c, .. } => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Con::Server(c) => c.get_db(),
            Con::Cluster { con: c, .. } => c.get_db(),
        }
    }
}
