//! A throwaway Redis Cluster: six `redis-server` processes with
//! `--cluster-enabled yes` on free loopback ports, joined by `redis-cli
//! --cluster create` as three masters with a replica each, each node
//! killed by pid when the cluster is dropped.

use std::io;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::redis::{RedisServer, program, skipped};

/// How long a node waits on another before it counts it as failing
/// (`cluster-node-timeout`): short, so that a failover takes a few seconds.
pub const NODE_TIMEOUT: Duration = Duration::from_millis(1000);

/// The nodes of the cluster.
const NODES: usize = 6;

/// The `redis-cli` run to create the cluster, unless `RESIL_REDIS_CLI`
/// names another.
fn cli() -> String {
    std::env::var("RESIL_REDIS_CLI").unwrap_or_else(|_| "redis-cli".to_owned())
}

/// A Redis Cluster of six `redis-server` processes that this test owns:
/// three masters holding the 16384 slots, each with one replica.
///
/// ```no_run
/// let Some(mut cluster) = resil_testkit::RedisCluster::start_or_skip("my_test") else {
///     return Ok(()); // no redis-server or redis-cli here, and not in CI: skipped
/// };
/// let url = cluster.url(); // redis+cluster://127.0.0.1:<port>,...
/// let master = cluster.master_of("resil:{partner-api}:ratelimiter")?;
/// cluster.kill(master); // its replica takes over after the node timeout
/// cluster.wait_for_master_other_than("resil:{partner-api}:ratelimiter", master)?;
/// # let _ = url;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

/// One line of `CLUSTER NODES`.
struct NodeLine<'a> {
    port: u16,
    flags: &'a str,
    slots: Vec<(u16, u16)>,
}

fn node_lines(text: &str) -> Vec<NodeLine<'_>> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let _id = f.next()?;
            let addr = f.next()?;
            let port = addr.split('@').next()?.rsplit(':').next()?.parse().ok()?;
            let flags = f.next()?;
            let slots = f
                .skip(5)
                .filter(|s| !s.starts_with('['))
                .filter_map(|s| match s.split_once('-') {
                    Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                    None => s.parse().ok().map(|n| (n, n)),
                })
                .collect();
            Some(NodeLine { port, flags, slots })
        })
        .collect()
}

impl RedisCluster {
    /// Starts a cluster, or returns `None` after printing why the test
    /// `test` is skipped when `redis-server` or `redis-cli` is not on
    /// `PATH` and `CI` is not set.
    ///
    /// # Panics
    ///
    /// When `CI` is set and a program is missing, or when the cluster does
    /// not come up.
    pub fn start_or_skip(test: &str) -> Option<RedisCluster> {
        if skipped(test, &[program(), cli()]) {
            return None;
        }
        Some(RedisCluster::start().unwrap_or_else(|e| panic!("{test}: {e}")))
    }

    /// Starts six nodes, creates the cluster and waits until every node
    /// says `cluster_state:ok` and every replica is in sync.
    ///
    /// # Errors
    ///
    /// When a node does not start, `redis-cli --cluster create` fails, or
    /// the cluster is not ready within 30 s.
    pub fn start() -> io::Result<RedisCluster> {
        let args = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            &NODE_TIMEOUT.as_millis().to_string(),
        ]
        .map(str::to_owned)
        .to_vec();
        // the cluster bus listens on the port + 10000: it must be free too
        let bus_free = |port: u16| {
            port.checked_add(10_000)
                .is_some_and(|bus| TcpListener::bind(("127.0.0.1", bus)).is_ok())
        };
        let mut nodes = Vec::with_capacity(NODES);
        for _ in 0..NODES {
            nodes.push(RedisServer::start_with(args.clone(), bus_free)?);
        }
        let cluster = RedisCluster { nodes };
        let output = Command::new(cli())
            .args(["--cluster", "create"])
            .args(
                cluster
                    .nodes
                    .iter()
                    .map(|n| format!("127.0.0.1:{}", n.port())),
            )
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot run `{}`: {e}", cli())))?;
        if !output.status.success() {
            return Err(io::Error::other(format!(
                "`{} --cluster create` failed ({}): {}{}",
                cli(),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        cluster.wait_until("every node is ok and every replica in sync", || {
            cluster.nodes.iter().all(|n| {
                let info = n.command(&["CLUSTER", "INFO"]).unwrap_or_default();
                let repl = n.command(&["INFO", "replication"]).unwrap_or_default();
                info.contains("cluster_state:ok")
                    && info.contains(&format!("cluster_known_nodes:{NODES}"))
                    && (repl.contains("role:master") || repl.contains("master_link_status:up"))
            })
        })?;
        Ok(cluster)
    }

    /// `redis+cluster://127.0.0.1:<port>,...`: every node.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    /// The nodes, in the order they were created with.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// The index of the master that serves `key`'s slot now, as a running
    /// node sees it.
    ///
    /// # Errors
    ///
    /// When no running node answers, or none names a master for the slot.
    pub fn master_of(&self, key: &str) -> io::Result<usize> {
        let alive = self
            .nodes
            .iter()
            .find(|n| n.pid().is_some())
            .ok_or_else(|| io::Error::other("no node is running"))?;
        let slot: u16 = alive
            .command(&["CLUSTER", "KEYSLOT", key])?
            .parse()
            .map_err(io::Error::other)?;
        let text = alive.command(&["CLUSTER", "NODES"])?;
        let port = node_lines(&text)
            .into_iter()
            .find(|l| {
                l.flags.contains("master")
                    && !l.flags.contains("fail")
                    && l.slots.iter().any(|&(a, b)| (a..=b).contains(&slot))
            })
            .map(|l| l.port)
            .ok_or_else(|| io::Error::other(format!("no master serves slot {slot}: {text}")))?;
        self.nodes
            .iter()
            .position(|n| n.port() == port)
            .ok_or_else(|| io::Error::other(format!("port {port} is not one of the cluster's")))
    }

    /// Kills node `i` (`SIGKILL`, by pid).
    pub fn kill(&mut self, i: usize) {
        self.nodes[i].kill();
    }

    /// Starts node `i` again on its port, with its cluster configuration:
    /// it rejoins the cluster (as a replica, if another took its place).
    pub fn restart(&mut self, i: usize) {
        self.nodes[i].restart();
    }

    /// Waits until a running master other than node `old` serves `key`'s
    /// slot and every running node says `cluster_state:ok`.
    ///
    /// # Errors
    ///
    /// When that does not happen within 30 s.
    pub fn wait_for_master_other_than(&self, key: &str, old: usize) -> io::Result<usize> {
        let mut master = old;
        self.wait_until("a replica is promoted", || {
            match self.master_of(key) {
                Ok(m) if m != old && self.nodes[m].pid().is_some() => master = m,
                _ => return false,
            }
            self.nodes.iter().filter(|n| n.pid().is_some()).all(|n| {
                n.command(&["CLUSTER", "INFO"])
                    .is_ok_and(|i| i.contains("cluster_state:ok"))
            })
        })?;
        Ok(master)
    }

    #[allow(clippy::disallowed_methods)] // real processes: real time
    fn wait_until(&self, what: &str, mut ready: impl FnMut() -> bool) -> io::Result<()> {
        let until = Instant::now() + Duration::from_secs(30);
        while !ready() {
            if Instant::now() > until {
                return Err(io::Error::other(format!(
                    "the Redis Cluster on {} is not ready within 30 s: waited until {what}",
                    self.url()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }
}
