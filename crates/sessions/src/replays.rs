//! Finding the task a `replayOf` names: the caller's own, complete, with an action trace.

use crate::error::SessionError;
use webpilot_agent::replay::ReplaySource;
use webpilot_agent::trace;
use webpilot_core::{ErrorCode, UserId};
use webpilot_store::{Store, TaskStatus};

pub(crate) async fn source(store: &Store, user: &UserId, task_id: &str) -> Result<ReplaySource, SessionError> {
    let found = store.replay_source(task_id, user).await.map_err(|e| {
        tracing::error!(error = %e, "reading a task to replay failed");
        SessionError::refused(ErrorCode::InternalError)
    })?;
    // Another user's task is reported as not found, so its existence does not leak.
    let (status, trace, tokens) = found
        .ok_or_else(|| SessionError::new(ErrorCode::TaskNotFound, format!("replayOf: there is no task {task_id:?}")))?;
    if status != TaskStatus::Complete {
        return Err(SessionError::new(
            ErrorCode::InvalidParams,
            format!("replayOf: task {task_id:?} did not complete; only a completed task can be replayed"),
        ));
    }
    let steps = trace.as_deref().map(trace::parse).transpose().ok().flatten().unwrap_or_default();
    if steps.is_empty() {
        return Err(SessionError::new(
            ErrorCode::InvalidParams,
            format!("replayOf: task {task_id:?} has no action trace (only tasks done by the model agent have one)"),
        ));
    }
    Ok(ReplaySource { task_id: task_id.to_owned(), steps, tokens })
}
