//! This node's membership of the cluster, kept in the database: registered at start, a heartbeat with
//! its free capacity every tick, a look for silent nodes on the same tick (the first node to claim a
//! silent one ends its sessions and fails their tasks: `Store::reap_node`), and a clean leave at stop.
//! On one node with SQLite the same loop runs over a single row.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use webpilot_store::{NodeRecord, Reaped, Store, StoreError};
use webpilot_tasks::Tasks;

/// How often to heartbeat and how long a silent node lives.
#[derive(Debug, Clone, Copy)]
pub struct MembershipConfig {
    pub heartbeat: Duration,
    pub timeout: Duration,
}

/// Called with what was ended when this node declared another lost.
pub type OnReaped = Arc<dyn Fn(&str, &Reaped) + Send + Sync>;

/// Called when this node learns that another declared it lost: picks the sessions it holds at once and
/// returns the work that ends them (their rows, tasks and claims were ended by the other node already).
pub type OnLost = Arc<dyn Fn() -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// The other live nodes as of the last heartbeat.
#[derive(Debug)]
struct Peers {
    free: AtomicI64,
    /// When another node was last seen alive (ms since `epoch`; negative: never).
    last_seen_ms: AtomicI64,
    epoch: Instant,
}

impl Default for Peers {
    fn default() -> Self {
        Peers { free: AtomicI64::new(0), last_seen_ms: AtomicI64::new(-1), epoch: Instant::now() }
    }
}

impl Peers {
    fn seen_now(&self) {
        self.last_seen_ms.store(self.epoch.elapsed().as_millis() as i64, Ordering::Relaxed);
    }

    fn seen_within(&self, window: Duration) -> bool {
        let seen = self.last_seen_ms.load(Ordering::Relaxed);
        seen >= 0 && self.epoch.elapsed().as_millis() as i64 - seen <= window.as_millis() as i64
    }
}

/// What the heartbeat calls when nodes are lost.
#[derive(Clone)]
pub struct Hooks {
    pub on_reaped: OnReaped,
    pub on_lost: OnLost,
}

/// This node's place in the cluster; cheap to clone.
#[derive(Clone)]
pub struct Membership {
    store: Store,
    node: Arc<NodeRecord>,
    config: MembershipConfig,
    /// When another node was last seen alive, and their free capacity, as of the last tick.
    peers: Arc<Peers>,
}

impl Membership {
    /// Registers `node` and starts its heartbeat, which runs until `stop`. `free` says this node's free
    /// capacity now. The heartbeat is a task of `tasks`.
    pub async fn join(
        store: Store,
        node: NodeRecord,
        config: MembershipConfig,
        free: impl Fn() -> i64 + Send + Sync + 'static,
        hooks: Hooks,
        tasks: &Tasks,
    ) -> Result<Membership, StoreError> {
        store.register_node(&node).await?;
        let membership = Membership { store, node: Arc::new(node), config, peers: Arc::new(Peers::default()) };
        let beating = membership.clone();
        let group = tasks.clone();
        tasks.spawn("heartbeat", async move {
            let mut tick = tokio::time::interval(beating.config.heartbeat);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = group.stopping() => break,
                    _ = tick.tick() => beating.beat(free(), &hooks, &group).await,
                }
            }
        });
        Ok(membership)
    }

    pub fn node_id(&self) -> &str {
        &self.node.id
    }

    /// Free capacity of the other live nodes (as of the last heartbeat).
    pub fn free_elsewhere(&self) -> i64 {
        self.peers.free.load(Ordering::Relaxed)
    }

    /// Whether a heartbeat within the loss timeout saw another node alive (the last one, or an earlier). A node
    /// alone (every SQLite deployment) need not look up where a session lives. A node that joins is seen
    /// within one heartbeat, before a load balancer's readiness check lets it take sessions; one that was
    /// declared lost and joins again at once (taking sessions straight away) is still counted meanwhile.
    pub fn has_peers(&self) -> bool {
        self.peers.seen_within(self.config.timeout)
    }

    fn timeout_ms(&self) -> i64 {
        self.config.timeout.as_millis() as i64
    }

    async fn beat(&self, free: i64, hooks: &Hooks, tasks: &Tasks) {
        match self.store.heartbeat(&self.node.id, free).await {
            Ok(true) => {}
            Ok(false) => {
                // Another node declared this one lost (a pause or a partition longer than the timeout):
                // its sessions' rows were ended and their tasks failed then, and their clients told. Pick
                // the sessions this node still holds, join again at once (so peers find the sessions it
                // starts from now on, and a death from here on is noticed), then end the picked ones in
                // the background, so no browser keeps working for a session the cluster thinks is gone.
                tracing::error!(node = %self.node.id, "this node had been declared lost; ending its sessions");
                metrics::counter!("webpilot_node_declared_lost_total").increment(1);
                let ending = (hooks.on_lost)();
                if let Err(e) = self.store.register_node(&self.node).await {
                    tracing::warn!(error = %e, "registering the node again failed");
                }
                tasks.spawn("end sessions of a lost node", ending);
            }
            Err(e) => tracing::warn!(error = %e, "node heartbeat failed"),
        }
        match self.store.peers(&self.node.id, self.timeout_ms()).await {
            Ok((count, free)) => {
                self.peers.free.store(free, Ordering::Relaxed);
                if count > 0 {
                    self.peers.seen_now();
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading the cluster's free capacity failed"),
        }
        let silent = match self.store.silent_nodes(self.timeout_ms()).await {
            Ok(silent) => silent,
            Err(e) => {
                tracing::warn!(error = %e, "looking for silent nodes failed");
                return;
            }
        };
        for node in silent.iter().filter(|n| **n != self.node.id) {
            match self.store.reap_node(node, self.timeout_ms()).await {
                Ok(Some(reaped)) => {
                    metrics::counter!("webpilot_nodes_lost_total").increment(1);
                    tracing::warn!(
                        node = %node,
                        sessions = reaped.sessions.len(),
                        tasks = reaped.tasks_failed,
                        "a silent node was declared lost: its sessions ended as instance_lost"
                    );
                    (hooks.on_reaped)(node, &reaped);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(node = %node, error = %e, "declaring a silent node lost failed"),
            }
        }
    }

    /// A clean stop: the row says so at once, so no other node waits out the timeout.
    pub async fn leave(&self) {
        if let Err(e) = self.store.stop_node(&self.node.id).await {
            tracing::warn!(error = %e, "marking the node stopped failed");
        }
    }
}
