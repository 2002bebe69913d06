//! GET /task/:sessionId/:taskId — no authentication and no rate limit, per the spec.

use crate::error::ApiResult;
use crate::state::AppState;
use crate::views;
use axum::extract::{Path, State};
use axum::Json;
use serde_json::Value;

pub async fn poll(
    State(state): State<AppState>,
    Path((session_id, task_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let view = state.manager.poll(&session_id, &task_id).await?;
    Ok(Json(views::poll(&state.manager.config().prices, &view)))
}
