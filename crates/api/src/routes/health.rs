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
    /// `responsive`, or `unresponsive` while one of this node's browsers does not answer its pings.
    browser: &'static str,
    /// Free browser capacity of the whole cluster.
    instance_count: i64,
    /// Whether this node can start a session now.
    instances_available: bool,
    /// With Redis configured: `connected` or `unavailable`.
    #[serde(skip_serializing_if = "Option::is_none")]
    redis: Option<&'static str>,
    /// `healthy`; `degraded` while Redis or some of this node's browsers do not answer; `unhealthy` while
    /// none of its browsers does.
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
/// node still serves, limiting requests on its own; docs/scaling.md). `browser` says whether this node's
/// Chromium answers its pings: while none does the status is `unhealthy` and no session can start here;
/// while only some do, `degraded`.
#[utoipa::path(get, path = "/start/health", operation_id = "health", tag = HEALTH, responses((status = 200, description = "This node's health", body = Health)))]
pub async fn health(State(state): State<AppState>) -> Json<Health> {
    let stats = state.manager.pool().stats();
    let free = stats.free();
    let redis = state.redis.as_ref().map(|r| r.state() == RedisState::Connected);
    let status = match stats.unresponsive {
        0 if redis == Some(false) => "degraded",
        0 => "healthy",
        n if n == stats.processes => "unhealthy",
        _ => "degraded",
    };
    Json(Health {
        browser: if stats.unresponsive == 0 { "responsive" } else { "unresponsive" },
        instance_count: free as i64 + state.cluster.free_elsewhere(),
        instances_available: free > 0,
        redis: redis.map(|up| if up { "connected" } else { "unavailable" }),
        status,
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
