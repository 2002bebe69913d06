//! The node's connection to Redis: one multiplexed connection that reconnects by itself
//! (`redis::aio::ConnectionManager`), every command bounded by a timeout, and a flag saying whether
//! the last command reached Redis, for `GET /start/health` and the log.

use crate::ClusterError;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long one command may take before the caller goes on without Redis.
pub const COMMAND_TIMEOUT: Duration = Duration::from_millis(500);

/// Whether Redis answered the last command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisState {
    Connected,
    Unavailable,
}

/// A cheap-to-clone handle on the node's Redis connection.
#[derive(Clone)]
pub struct RedisLink {
    client: redis::Client,
    conn: ConnectionManager,
    up: Arc<AtomicBool>,
}

impl std::fmt::Debug for RedisLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLink").field("state", &self.state()).finish_non_exhaustive()
    }
}

impl RedisLink {
    /// Connects to `url` (`redis://[:password@]host:port[/db]`). Fails when Redis cannot be reached at
    /// start, so a misconfigured node does not start at all; later outages are survived.
    pub async fn connect(url: &str) -> Result<RedisLink, ClusterError> {
        let client = redis::Client::open(url).map_err(|_| ClusterError::BadUrl)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(COMMAND_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let conn =
            tokio::time::timeout(Duration::from_secs(5), ConnectionManager::new_with_config(client.clone(), config))
                .await
                .map_err(|_| ClusterError::Timeout(Duration::from_secs(5)))??;
        Ok(RedisLink { client, conn, up: Arc::new(AtomicBool::new(true)) })
    }

    pub fn state(&self) -> RedisState {
        if self.up.load(Ordering::Relaxed) {
            RedisState::Connected
        } else {
            RedisState::Unavailable
        }
    }

    /// The client, for connections of their own (subscriptions).
    pub(crate) fn client(&self) -> &redis::Client {
        &self.client
    }

    /// A connection for one command or script.
    pub(crate) fn conn(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// Notes how a command went; a change is logged once, not on every request.
    pub(crate) fn record<T>(&self, result: &Result<T, ClusterError>) {
        let ok = result.is_ok();
        let was = self.up.swap(ok, Ordering::Relaxed);
        match (was, result) {
            (true, Err(e)) => {
                tracing::error!(error = %e, "Redis is unavailable: rate limits fall back to this node alone")
            }
            (false, Ok(_)) => tracing::info!("Redis is reachable again"),
            _ => {}
        }
    }

    /// Runs `fut` (a command on this link) within [`COMMAND_TIMEOUT`], recording the outcome.
    pub(crate) async fn run<T, F>(&self, fut: F) -> Result<T, ClusterError>
    where
        F: std::future::Future<Output = Result<T, redis::RedisError>>,
    {
        let result = match tokio::time::timeout(COMMAND_TIMEOUT, fut).await {
            Ok(r) => r.map_err(ClusterError::from),
            Err(_) => Err(ClusterError::Timeout(COMMAND_TIMEOUT)),
        };
        self.record(&result);
        result
    }
}
