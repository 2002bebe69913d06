//! GET /task/:sessionId/:taskId — no authentication and no rate limit, per the spec.

use crate::error::{ApiResult, ErrorBody};
use crate::openapi::TASKS;
use crate::path::Path;
use crate::state::AppState;
use crate::views::PollView;
use axum::extract::State;
use axum::Json;

/// A task's state: running, completed, waiting on a guardrail, or failed.
#[utoipa::path(get, path = "/task/{sessionId}/{taskId}", operation_id = "getTask", tag = TASKS,
    params(("sessionId" = String, Path), ("taskId" = String, Path)),
    responses(
        (status = 200, description = "The task's state (a failed task answers 200 with `success: false`)", body = PollView),
        (status = 404, description = "`TASK_NOT_FOUND`, `SESSION_NOT_FOUND`", body = ErrorBody),
        (status = 500, description = "`INTERNAL_ERROR`", body = ErrorBody),
        (status = 503, description = "`INSTANCE_UNAVAILABLE` (the node that holds the session cannot be reached)", body = ErrorBody),
    ))]
pub async fn poll(
    State(state): State<AppState>,
    Path((session_id, task_id)): Path<(String, String)>,
) -> ApiResult<Json<PollView>> {
    Ok(Json(crate::calls::get_task(&state, &session_id, &task_id).await?))
}
