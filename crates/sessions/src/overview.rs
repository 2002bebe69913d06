//! What a console shows of a user's sessions without watching them: each live session's start time,
//! what it is doing, and its page's address and title; and a session's task history from the store,
//! with the running task's live state.

pub use crate::actor::Activity;
use crate::error::SessionError;
use crate::live::TaskView;
use crate::manager::SessionManager;
use chrono::{DateTime, Utc};
use std::time::Duration;
use webpilot_core::usage::micros_to_usd;
use webpilot_core::{ErrorCode, SessionId, UserId};
use webpilot_store::TaskRecord;

/// How long the session list waits for a browser to tell its page's address and title.
const PAGE_WAIT: Duration = Duration::from_secs(2);

/// A live session as the session list shows it.
#[derive(Debug, Clone)]
pub struct SessionOverview {
    pub created_at: DateTime<Utc>,
    pub activity: Activity,
    /// The active tab's address and title; `None` when the browser did not tell them in time.
    pub url: Option<String>,
    pub title: Option<String>,
}

/// One task of a session's history.
#[derive(Debug, Clone)]
pub struct TaskEntry {
    pub record: TaskRecord,
    /// What a poll shows of it now (the live state of a running task).
    pub view: TaskView,
    /// Its cost so far in USD (what it was charged, once it is over).
    pub cost_usd: f64,
}

impl TaskEntry {
    /// Milliseconds from its start to its end, or to now while it runs.
    pub fn duration_ms(&self) -> i64 {
        let end = self.record.completed_at.unwrap_or_else(|| Utc::now().timestamp_millis());
        (end - self.record.created_at).max(0)
    }
}

impl SessionManager {
    /// What `user`'s live session `id` is doing and showing; `None` once it has ended.
    pub async fn session_overview(&self, user: &UserId, id: &SessionId) -> Option<SessionOverview> {
        let handle = self.env().sessions().owned(user, id)?;
        let status = handle.status();
        let page = handle.pages().borrow().clone();
        let tabs = tokio::time::timeout(PAGE_WAIT, page.tabs()).await.ok().and_then(Result::ok);
        let active = tabs.and_then(|tabs| tabs.into_iter().find(|t| t.active));
        Some(SessionOverview {
            created_at: handle.created_at(),
            activity: status.activity(),
            url: active.as_ref().map(|t| t.url.clone()),
            title: active.map(|t| t.title),
        })
    }

    /// The tasks of `user`'s session `session_id` (live or ended), newest first; another user's or an
    /// unknown session is `SESSION_NOT_FOUND`.
    pub async fn session_tasks(
        &self,
        user: &UserId,
        session_id: &str,
        (limit, offset): (i64, i64),
    ) -> Result<Vec<TaskEntry>, SessionError> {
        let id = SessionId::from_string(session_id);
        let session = self.store().get_session(&id).await?;
        if session.is_none_or(|s| &s.user_id != user) {
            return Err(SessionError::refused(ErrorCode::SessionNotFound));
        }
        let records = self.store().list_session_tasks(&id, limit, offset).await?;
        let prices = &self.config().prices;
        Ok(records
            .into_iter()
            .map(|record| {
                let live = (!record.status.is_final()).then(|| self.env().tasks().get(&record.id)).flatten();
                let view = live.as_ref().map_or_else(|| TaskView::from_record(&record), |l| l.view());
                let cost_usd = match (&view, &live) {
                    (TaskView::Running { .. } | TaskView::Guardrail(_), Some(l)) => {
                        micros_to_usd(l.meter.snapshot().cost_micros(prices))
                    }
                    _ => view.cost_usd(prices),
                };
                TaskEntry { record, view, cost_usd }
            })
            .collect())
    }
}
