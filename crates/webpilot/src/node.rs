//! This process as a node of the cluster: its id (kept in the data directory, so a restart recovers its
//! own sessions at once), the address other nodes forward to, and its heartbeat in the database.

use crate::config::ServeConfig;
use crate::StartError;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;
use webpilot_api::SocketKey;
use webpilot_cluster::{EventFanout, Hooks, Membership, MembershipConfig, NodeKey, OnLost};
use webpilot_core::events::{EndReason, SessionEvent};
use webpilot_sessions::SessionManager;
use webpilot_store::{NodeRecord, Reaped, Store};
use webpilot_tasks::Tasks;

/// The keys every node holds alike, made by the first node to start and kept in the database.
pub(crate) struct SharedKeys {
    /// Signs the socket capability (a socket may connect to any node).
    pub socket: SocketKey,
    /// What nodes present to each other on internal calls.
    pub node: NodeKey,
}

impl SharedKeys {
    pub async fn load(store: &Store) -> Result<SharedKeys, StartError> {
        let fresh = || hex::encode(rand::random::<[u8; 32]>());
        let socket = store.shared_secret("socket", &fresh()).await?;
        let bytes: [u8; 32] = hex::decode(&socket)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| webpilot_store::StoreError::Corrupt("the shared socket key".into()))?;
        let node = store.shared_secret("node", &fresh()).await?;
        Ok(SharedKeys { socket: SocketKey::from_bytes(bytes), node: NodeKey::new(&node) })
    }
}

/// `--node-id`, or the id in `<data dir>/node.id`, made at first start.
pub(crate) fn node_id(serve: &ServeConfig, data_dir: &Path) -> Result<String, StartError> {
    if let Some(id) = serve.node_id.as_deref().map(str::trim).filter(|id| !id.is_empty()) {
        return Ok(id.to_owned());
    }
    let path = data_dir.join("node.id");
    let fail = |source| StartError::NodeId { path: path.clone(), source };
    match std::fs::read_to_string(&path) {
        Ok(id) if !id.trim().is_empty() => Ok(id.trim().to_owned()),
        Ok(_) => Err(fail(std::io::Error::new(std::io::ErrorKind::InvalidData, "the file is empty"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Made private (and tightened) by `start` already; made here only if it is missing.
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(crate::data_dir::DIR_MODE)
                .create(data_dir)
                .map_err(fail)?;
            let id = format!("node_{}", uuid::Uuid::new_v4().simple());
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(crate::data_dir::FILE_MODE)
                .open(&path)
                .map_err(fail)?;
            std::io::Write::write_all(&mut file, id.as_bytes()).map_err(fail)?;
            Ok(id)
        }
        Err(e) => Err(fail(e)),
    }
}

/// Registers this node (listening on `addr`) and starts its heartbeat in `tasks`.
pub(crate) async fn join(
    serve: &ServeConfig,
    store: &Store,
    id: String,
    addr: SocketAddr,
    manager: SessionManager,
    events: Option<EventFanout>,
    tasks: &Tasks,
) -> Result<Membership, StartError> {
    let address = serve
        .node_address
        .as_deref()
        .map(|a| a.trim().trim_end_matches('/').to_owned())
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| format!("http://{addr}"));
    if serve.node_address.is_none() && addr.ip().is_unspecified() {
        tracing::warn!(%address, "listening on every address without --node-address: other nodes cannot forward here");
    }
    let pool = manager.pool().clone();
    let free = move || {
        let stats = pool.stats();
        stats.capacity.saturating_sub(stats.in_use) as i64
    };
    let node = NodeRecord { id, address, capacity: serve.max_sessions as i64, free: free() };
    let config = MembershipConfig {
        heartbeat: Duration::from_millis(serve.node_heartbeat_ms),
        timeout: Duration::from_millis(serve.node_timeout_ms),
    };
    // Sockets of the lost node's sessions connected to other nodes hear that they ended.
    let announcing = tasks.clone();
    let on_reaped = std::sync::Arc::new(move |_node: &str, reaped: &Reaped| {
        let Some(events) = events.clone() else { return };
        let sessions = reaped.sessions.clone();
        announcing.spawn("announce reaped sessions", async move {
            let end = SessionEvent::EndSession { reason: EndReason::InstanceLost };
            for session in sessions {
                if let Err(e) = events.publish(session.as_str(), &end).await {
                    tracing::warn!(error = %e, "announcing a lost session's end failed");
                }
            }
        });
    });
    // Declared lost while alive (a long pause, a partition from the database): end this node's sessions
    // too, as the other nodes already announced.
    let on_lost: OnLost = std::sync::Arc::new(move || {
        let ending = manager.end_live(EndReason::InstanceLost);
        Box::pin(async move {
            let ended = ending.await;
            tracing::warn!(sessions = ended, "ended this node's sessions after it was declared lost");
        })
    });
    let hooks = Hooks { on_reaped, on_lost };
    Ok(Membership::join(store.clone(), node, config, free, hooks, tasks).await?)
}
