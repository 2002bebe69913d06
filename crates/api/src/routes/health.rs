//! GET /start/health and /start/active-sockets (no authentication).

use crate::openapi::HEALTH;
use crate::state::AppState;
use crate::views::now_iso;
use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use webpilot_cluster::RedisState;

/// Body of `GET /start/health`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// Free browser capacity of the whole cluster.
    instance_count: i64,
    /// Whether this node can start a session now.
    instances_available: bool,
    /// With Redis configured: `connected` or `unavailable`.
    #[serde(skip_serializing_if = "Option::is_none")]
    redis: Option<&'static str>,
    /// `healthy`, or `degraded` while Redis does not answer.
    status: &'static str,
    success: bool,
    /// ISO 8601.
    timestamp: String,
}

/// Body of `GET /start/active-sockets`.
#[derive(Serialize, ToSchema)]
pub struct ActiveSockets {
    count: usize,
    sockets: Vec<String>,
    success: bool,
    /// ISO 8601.
    timestamp: String,
}

/// This node's health; `instanceCount` is the free capacity of the whole cluster (this node's now, the
/// others' as of their last heartbeat) and `instancesAvailable` whether this node can start one. With
/// Redis configured, `redis` says whether it answers; while it does not, the status is `degraded` (the
/// node still serves, limiting requests on its own; docs/scaling.md).
#[utoipa::path(get, path = "/start/health", operation_id = "health", tag = HEALTH, responses((status = 200, description = "This node's health", body = Health)))]
pub async fn health(State(state): State<AppState>) -> Json<Health> {
    let stats = state.manager.pool().stats();
    let free = stats.capacity.saturating_sub(stats.in_use);
    let redis = state.redis.as_ref().map(|r| r.state() == RedisState::Connected);
    Json(Health {
        instance_count: free as i64 + state.cluster.free_elsewhere(),
        instances_available: free > 0,
        redis: redis.map(|up| if up { "connected" } else { "unavailable" }),
        status: if redis == Some(false) { "degraded" } else { "healthy" },
        success: true,
        timestamp: now_iso(),
    })
}

/// Lists the ids of the connected Socket.IO clients.
#[utoipa::path(get, path = "/start/active-sockets", operation_id = "activeSockets", tag = HEALTH, responses((status = 200, description = "The connected sockets", body = ActiveSockets)))]
pub async fn active_sockets(State(state): State<AppState>) -> Json<ActiveSockets> {
    let sockets = state.sockets.ids();
    Json(ActiveSockets { count: sockets.len(), sockets, success: true, timestamp: now_iso() })
}
