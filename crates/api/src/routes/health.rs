//! GET /start/health and /start/active-sockets (no authentication).

use crate::state::AppState;
use crate::views::now_iso;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

pub async fn health(State(state): State<AppState>) -> Json<Value> {
    let stats = state.manager.pool().stats();
    let free = stats.capacity.saturating_sub(stats.in_use);
    Json(json!({
        "success": true,
        "status": "healthy",
        "instancesAvailable": free > 0,
        "instanceCount": free,
        "timestamp": now_iso(),
    }))
}

/// Lists the ids of the connected Socket.IO clients.
pub async fn active_sockets(State(state): State<AppState>) -> Json<Value> {
    let sockets = state.sockets.ids();
    Json(json!({ "success": true, "count": sockets.len(), "sockets": sockets, "timestamp": now_iso() }))
}
