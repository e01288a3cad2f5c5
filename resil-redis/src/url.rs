//! `cluster-url` values: one server (`redis://host:port/db`) or Redis
//! Cluster (`redis+cluster://host:port,host:port`), checked before any
//! connection is made. No message holds the URL's password.

use redis::{Client, IntoConnectionInfo};
use resil_core::redact;

/// The scheme of a Redis Cluster URL.
pub(crate) const CLUSTER_SCHEME: &str = "redis+cluster";

/// What a URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// One server, at this URL.
    Server(String),
    /// A cluster, found through these nodes (`redis://[userinfo@]host:port`
    /// each, every one with the URL's credentials).
    Cluster(Vec<String>),
}

/// Parses `url`.
///
/// # Errors
///
/// What is wrong with it, in words that follow the URL in a message
/// (`cluster url `…` <message>`), without its password.
pub(crate) fn parse(url: &str) -> Result<Target, String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(NOT_REDIS.to_owned());
    };
    let redacted = |m: String| redact::userinfo(&m).into_owned();
    match scheme {
        CLUSTER_SCHEME => cluster(rest).map_err(redacted),
        "rediss+cluster" | "rediss" => Err(format!(
            "`{scheme}://` needs TLS, which resil's Redis client is built without; use `redis://` or `redis+cluster://` on a trusted network or a TLS tunnel"
        )),
        "redis" | "unix" | "redis+unix" => {
            if scheme == "redis" {
                let authority = rest.split(['/', '?']).next().unwrap_or("");
                let hosts = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
                if hosts.contains(',') {
                    return Err(redacted(format!(
                        "names several servers (`{hosts}`) after `redis://`, which connects to one: for Redis Cluster write `{CLUSTER_SCHEME}://{hosts}`"
                    )));
                }
            }
            Client::open(url)
                .map(|_| Target::Server(url.to_owned()))
                .map_err(|e| redacted(format!("is not a valid Redis URL: {e}")))
        }
        _ => Err(NOT_REDIS.to_owned()),
    }
}

const NOT_REDIS: &str = "must be a Redis URL: `redis://host:port/db` for one server, `redis+cluster://host:port,host:port` for Redis Cluster (or `unix://`, `redis+unix://` for a socket)";

/// The nodes of `redis+cluster://<rest>`.
fn cluster(rest: &str) -> Result<Target, String> {
    let example = format!("`{CLUSTER_SCHEME}://host1:port1,host2:port2`");
    if let Some(other) = rest.split(',').find(|n| n.contains("://")) {
        return Err(format!(
            "mixes a single server's URL (`{}`) into a cluster URL: list every node as `host:port` after one `{CLUSTER_SCHEME}://`, as {example}",
            other.trim()
        ));
    }
    let (userinfo, rest) = match rest.rsplit_once('@') {
        Some((info, hosts)) => (Some(info), hosts),
        None => (None, rest),
    };
    if userinfo.is_some_and(|i| i.contains(',')) {
        return Err(format!(
            "gives credentials to some nodes only: give them once, before the first node, as `{CLUSTER_SCHEME}://user:password@host1:port1,host2:port2`"
        ));
    }
    let (hosts, path) = match rest.find(['/', '?']) {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    if !matches!(path, "" | "/" | "/0") {
        return Err(format!(
            "ends in `{path}`: Redis Cluster has one database (0) and resil takes no options in a cluster URL; write {example}"
        ));
    }
    if hosts.trim().is_empty() || hosts.split(',').all(|h| h.trim().is_empty()) {
        return Err(format!(
            "names no node: list at least one `host:port` of the cluster, as {example} (the client finds the other nodes)"
        ));
    }
    let mut nodes = Vec::new();
    for (i, host) in hosts.split(',').enumerate() {
        let host = host.trim();
        if host.is_empty() {
            return Err(format!(
                "has an empty node (number {}): list nodes as {example}",
                i + 1
            ));
        }
        let node = match userinfo {
            Some(info) => format!("redis://{info}@{host}"),
            None => format!("redis://{host}"),
        };
        if let Err(e) = node.as_str().into_connection_info() {
            return Err(format!(
                "has a node `{host}` that is not a valid `host:port`: {e}"
            ));
        }
        nodes.push(node);
    }
    Ok(Target::Cluster(nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn refused(url: &str, says: &str) {
        let e = parse(url).unwrap_err();
        assert!(e.contains(says), "{url}: {e}");
        assert!(!e.contains("secret"), "{url}: {e}");
    }

    #[test]
    fn a_cluster_url_lists_its_nodes() {
        assert_eq!(
            parse("redis+cluster://10.0.0.1:7000,10.0.0.2:7001").unwrap(),
            Target::Cluster(vec![
                "redis://10.0.0.1:7000".to_owned(),
                "redis://10.0.0.2:7001".to_owned()
            ])
        );
        assert_eq!(
            parse("redis+cluster://u:secret@h1:7000, h2:7001/").unwrap(),
            Target::Cluster(vec![
                "redis://u:secret@h1:7000".to_owned(),
                "redis://u:secret@h2:7001".to_owned()
            ])
        );
        assert_eq!(
            parse("redis+cluster://h1/0").unwrap(),
            Target::Cluster(vec!["redis://h1".to_owned()])
        );
        assert_eq!(
            parse("redis://127.0.0.1:6379/0").unwrap(),
            Target::Server("redis://127.0.0.1:6379/0".to_owned())
        );
    }

    #[test]
    fn bad_cluster_urls_say_what_is_wrong() {
        refused("redis+cluster://", "names no node");
        refused("redis+cluster://u:secret@", "names no node");
        refused("redis+cluster://,", "names no node");
        refused("redis+cluster:// ", "names no node");
        refused("redis+cluster://h1:1,,h2:2", "empty node (number 2)");
        refused(
            "redis+cluster://h1:1,redis://h2:2",
            "mixes a single server's URL (`redis://h2:2`)",
        );
        refused(
            "redis://h1:1,h2:2/0",
            "for Redis Cluster write `redis+cluster://h1:1,h2:2`",
        );
        refused("redis://u:secret@h1:1,h2:2", "`redis+cluster://h1:1,h2:2`");
        refused(
            "redis+cluster://u:secret@h1:1,v:secret@h2:2",
            "credentials to some nodes",
        );
        refused("redis+cluster://h1:1/3", "one database (0)");
        refused("redis+cluster://h1:1?protocol=resp3", "takes no options");
        refused("redis+cluster://u:secret@h1:notaport", "node `h1:notaport`");
        refused("rediss+cluster://h1:1", "needs TLS");
        refused("http://h1:1", "must be a Redis URL");
    }
}
