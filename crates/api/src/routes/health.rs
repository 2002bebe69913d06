//! GET /start/health and /start/active-sockets (no authentication).

use crate::state::AppState;
use crate::views::now_iso;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};
use webpilot_cluster::RedisState;

/// This node's health; `instanceCount` is the free capacity of the whole cluster (this node's now, the
/// others' as of their last heartbeat) and `instancesAvailable` whether this node can start one. With
/// Redis configured, `redis` says whether it answers; while it does not, the status is `degraded` (the
/// node still serves, limiting requests on its own; docs/scaling.md). `browser` says whether this node's
/// Chromium answers its pings: while none does the status is `unhealthy` and no session can start here;
/// while only some do, `degraded`.
pub async fn health(State(state): State<AppState>) -> Json<Value> {
    let stats = state.manager.pool().stats();
    let free = stats.free();
    let browser_status = match stats.unresponsive {
        0 => "healthy",
        n if n == stats.processes => "unhealthy",
        _ => "degraded",
    };
    let mut body = json!({
        "success": true,
        "status": browser_status,
        "browser": if stats.unresponsive == 0 { "responsive" } else { "unresponsive" },
        "instancesAvailable": free > 0,
        "instanceCount": free as i64 + state.cluster.free_elsewhere(),
        "timestamp": now_iso(),
    });
    if let Some(redis) = &state.redis {
        let up = redis.state() == RedisState::Connected;
        body["redis"] = json!(if up { "connected" } else { "unavailable" });
        if !up && browser_status == "healthy" {
            body["status"] = json!("degraded");
        }
    }
    Json(body)
}

/// Lists the ids of the connected Socket.IO clients.
pub async fn active_sockets(State(state): State<AppState>) -> Json<Value> {
    let sockets = state.sockets.ids();
    Json(json!({ "success": true, "count": sockets.len(), "sockets": sockets, "timestamp": now_iso() }))
}
