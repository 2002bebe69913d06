//! Task rows, their final outcome and its charge, and start-up recovery of tasks cut off by a crash.

use crate::webhooks::WebhookEvent;
use crate::{now_ms, users::insert_ledger, Result, Store, StoreError};
use webpilot_core::usage::Usage;
use webpilot_core::{ErrorCode, SessionId, TaskId, UserId};

/// Stored task status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    Running,
    /// Waiting for a human's answer.
    Guardrail,
    Complete,
    Failed,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Running => "running",
            TaskStatus::Guardrail => "guardrail",
            TaskStatus::Complete => "complete",
            TaskStatus::Failed => "failed",
        }
    }
    fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "running" => TaskStatus::Running,
            "guardrail" => TaskStatus::Guardrail,
            "complete" => TaskStatus::Complete,
            "failed" => TaskStatus::Failed,
            other => return Err(StoreError::Corrupt(format!("task status {other:?}"))),
        })
    }
    pub fn is_final(self) -> bool {
        matches!(self, TaskStatus::Complete | TaskStatus::Failed)
    }
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskOutcome {
    /// `output`: the JSON text of a structured answer (a task with an outputSchema).
    Complete {
        message: String,
        output: Option<String>,
    },
    Failed {
        error: String,
        code: ErrorCode,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    pub id: TaskId,
    pub session_id: SessionId,
    pub user_id: UserId,
    pub details: String,
    pub status: TaskStatus,
    pub result_message: Option<String>,
    /// JSON text of a structured answer.
    pub output: Option<String>,
    /// JSON of what a replay did (`data.replay`).
    pub replay: Option<String>,
    /// What the action cache did (`data.cache`): `hit`, `healed`, `miss` or `off`.
    pub cache: Option<String>,
    pub error: Option<String>,
    pub code: Option<ErrorCode>,
    /// `(type, value)` of the pending guardrail.
    pub guardrail: Option<(String, String)>,
    pub usage: Usage,
    pub cost_micros: i64,
    pub created_at: i64,
    pub completed_at: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct TaskRow {
    id: String,
    session_id: String,
    user_id: String,
    details: String,
    status: String,
    result_message: Option<String>,
    output: Option<String>,
    replay: Option<String>,
    cache: Option<String>,
    error: Option<String>,
    code: Option<String>,
    guardrail: Option<String>,
    input_tokens: i64,
    output_tokens: i64,
    compute_ms: i64,
    cost_micros: i64,
    created_at: i64,
    completed_at: Option<i64>,
}

impl TryFrom<TaskRow> for TaskRecord {
    type Error = StoreError;
    fn try_from(r: TaskRow) -> Result<Self> {
        let guardrail = r.guardrail.and_then(|g| {
            let (kind, value) = g.split_once('\n')?;
            Some((kind.to_owned(), value.to_owned()))
        });
        Ok(TaskRecord {
            id: TaskId::from_string(r.id),
            session_id: SessionId::from_string(r.session_id),
            user_id: UserId::from_string(r.user_id),
            details: r.details,
            status: TaskStatus::parse(&r.status)?,
            result_message: r.result_message,
            output: r.output,
            replay: r.replay,
            cache: r.cache,
            error: r.error,
            code: r.code.as_deref().and_then(ErrorCode::parse),
            guardrail,
            usage: Usage {
                input_tokens: r.input_tokens.max(0) as u64,
                output_tokens: r.output_tokens.max(0) as u64,
                compute_ms: r.compute_ms.max(0) as u64,
            },
            cost_micros: r.cost_micros,
            created_at: r.created_at,
            completed_at: r.completed_at,
        })
    }
}

impl Store {
    pub async fn insert_task(&self, id: &TaskId, session: &SessionId, user: &UserId, details: &str) -> Result<()> {
        sqlx::query(
            "INSERT INTO tasks (id, session_id, user_id, details, status, created_at) VALUES ($1, $2, $3, $4, 'running', $5)",
        )
        .bind(id.as_str())
        .bind(session.as_str())
        .bind(user.as_str())
        .bind(details)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Sets (Some) or clears (None) the pending guardrail of a running task.
    pub async fn set_task_guardrail(&self, id: &TaskId, guardrail: Option<(&str, &str)>) -> Result<()> {
        let (status, stored) = match guardrail {
            Some((kind, value)) => (TaskStatus::Guardrail, Some(format!("{kind}\n{value}"))),
            None => (TaskStatus::Running, None),
        };
        sqlx::query(
            "UPDATE tasks SET status = $1, guardrail = $2 WHERE id = $3 AND status IN ('running', 'guardrail')",
        )
        .bind(status.as_str())
        .bind(stored)
        .bind(id.as_str())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records a task's outcome and charges `cost_micros` to its user, in one transaction.
    /// Returns the user's balance afterwards. A task already final is left as it was. Concurrent
    /// writers never make it fail: see [`crate::retry`].
    /// `webhook` is the message for the user's webhooks, queued in the same transaction.
    pub async fn finish_task(
        &self,
        id: &TaskId,
        outcome: &TaskOutcome,
        usage: Usage,
        cost_micros: i64,
        webhook: Option<&WebhookEvent>,
    ) -> Result<i64> {
        crate::retry::on_busy("finish a task", || self.finish_task_once(id, outcome, usage, cost_micros, webhook)).await
    }

    async fn finish_task_once(
        &self,
        id: &TaskId,
        outcome: &TaskOutcome,
        usage: Usage,
        cost_micros: i64,
        webhook: Option<&WebhookEvent>,
    ) -> Result<i64> {
        let (status, message, output, error, code) = match outcome {
            TaskOutcome::Complete { message, output } => {
                (TaskStatus::Complete, Some(message.as_str()), output.as_deref(), None, None)
            }
            TaskOutcome::Failed { error, code } => {
                (TaskStatus::Failed, None, None, Some(error.as_str()), Some(code.as_str()))
            }
        };
        let mut tx = self.pool.begin().await?;
        // Write first: the first statement takes the write lock (waiting out other writers), so no read
        // ever has to be upgraded to a write, which SQLite refuses at once under contention.
        let user: Option<String> = sqlx::query_scalar(
            "UPDATE tasks SET status = $1, result_message = $2, error = $3, code = $4, guardrail = NULL,
                input_tokens = $5, output_tokens = $6, compute_ms = $7, cost_micros = $8, completed_at = $9,
                output = $11
             WHERE id = $10 AND status IN ('running', 'guardrail') RETURNING user_id",
        )
        .bind(status.as_str())
        .bind(message)
        .bind(error)
        .bind(code)
        .bind(usage.input_tokens as i64)
        .bind(usage.output_tokens as i64)
        .bind(usage.compute_ms as i64)
        .bind(cost_micros)
        .bind(now_ms())
        .bind(id.as_str())
        .bind(output)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(user) = user else {
            tx.rollback().await?;
            return Err(StoreError::NotFound("running task"));
        };
        let user = UserId::from_string(user);
        let balance: i64 = sqlx::query_scalar(
            "UPDATE users SET balance_micros = balance_micros - $1 WHERE id = $2 RETURNING balance_micros",
        )
        .bind(cost_micros)
        .bind(user.as_str())
        .fetch_one(&mut *tx)
        .await?;
        insert_ledger(&mut tx, &user, (Some(id.as_str()), None), -cost_micros, "task").await?;
        if let Some(event) = webhook {
            crate::webhooks::enqueue(&mut tx, &user, event.event_type, &event.data).await?;
        }
        tx.commit().await?;
        Ok(balance)
    }

    /// Keeps a task's action trace and, for a replay, its report (JSON texts); before its outcome.
    pub async fn set_task_trace(&self, id: &TaskId, trace: Option<&str>, replay: Option<&str>) -> Result<()> {
        crate::retry::on_busy("store a task trace", || async {
            sqlx::query("UPDATE tasks SET trace = $1, replay = $2 WHERE id = $3")
                .bind(trace)
                .bind(replay)
                .bind(id.as_str())
                .execute(&self.pool)
                .await?;
            Ok(())
        })
        .await
    }

    /// Keeps what the action cache did for a task (`hit`, `healed`, `miss`, `off`); before its outcome.
    pub async fn set_task_cache(&self, id: &TaskId, cache: &str) -> Result<()> {
        crate::retry::on_busy("store a task's cache use", || async {
            sqlx::query("UPDATE tasks SET cache = $1 WHERE id = $2")
                .bind(cache)
                .bind(id.as_str())
                .execute(&self.pool)
                .await?;
            Ok(())
        })
        .await
    }

    /// What a replay of task `task` needs, if it is `user`'s: its status, trace and the tokens it used.
    pub async fn replay_source(&self, task: &str, user: &UserId) -> Result<Option<(TaskStatus, Option<String>, u64)>> {
        let row: Option<(String, Option<String>, i64, i64)> = sqlx::query_as(
            "SELECT status, trace, input_tokens, output_tokens FROM tasks WHERE id = $1 AND user_id = $2",
        )
        .bind(task)
        .bind(user.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.map(|(status, trace, i, o)| Ok((TaskStatus::parse(&status)?, trace, (i.max(0) + o.max(0)) as u64)))
            .transpose()
    }

    /// The task `task` of session `session`; `None` when either does not match.
    pub async fn get_task(&self, session: &str, task: &str) -> Result<Option<TaskRecord>> {
        let row: Option<TaskRow> = sqlx::query_as(
            "SELECT id, session_id, user_id, details, status, result_message, output, replay, cache, error, code, guardrail,
                    input_tokens, output_tokens, compute_ms, cost_micros, created_at, completed_at
             FROM tasks WHERE id = $1 AND session_id = $2",
        )
        .bind(task)
        .bind(session)
        .fetch_optional(&self.pool)
        .await?;
        row.map(TaskRecord::try_from).transpose()
    }

    /// The tasks of session `session`, newest first (ties by id, so pages never overlap).
    pub async fn list_session_tasks(&self, session: &SessionId, limit: i64, offset: i64) -> Result<Vec<TaskRecord>> {
        let rows: Vec<TaskRow> = sqlx::query_as(
            "SELECT id, session_id, user_id, details, status, result_message, output, replay, cache, error, code, guardrail,
                    input_tokens, output_tokens, compute_ms, cost_micros, created_at, completed_at
             FROM tasks WHERE session_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3",
        )
        .bind(session.as_str())
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(TaskRecord::try_from).collect()
    }

    /// Work not finished now: (tasks running or waiting on a guardrail, sessions not ended). The soak run
    /// checks both are 0 once every session is gone.
    pub async fn open_work(&self) -> Result<(u64, u64)> {
        let tasks: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tasks WHERE status IN ('running', 'guardrail')")
            .fetch_one(&self.pool)
            .await?;
        let sessions: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM sessions WHERE ended_at IS NULL").fetch_one(&self.pool).await?;
        Ok((tasks.max(0) as u64, sessions.max(0) as u64))
    }

    /// Start-up recovery of node `node`: the tasks it left running when its process died are failed with
    /// `TASK_INTERRUPTED`, and the sessions it left open are ended (so are rows from before sessions had
    /// a node). Other nodes' work is left alone. Returns (tasks failed, sessions ended).
    pub async fn recover_interrupted(&self, node: &str) -> Result<(u64, u64)> {
        let mut tx = self.pool.begin().await?;
        let error = "the task was cut off when the server stopped unexpectedly";
        let (tasks, sessions) =
            crate::nodes::end_work_of(&mut tx, node, true, error, ErrorCode::TaskInterrupted, now_ms()).await?;
        tx.commit().await?;
        Ok((tasks, sessions.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::store;

    #[tokio::test]
    async fn a_finished_task_is_charged_once_and_recovery_fails_running_ones() {
        let (s, _d) = store().await;
        let u = s.create_user("c", 1_000_000).await.unwrap();
        let sid = SessionId::generate();
        s.insert_session(&sid, &u.id, "active", "{}", "node_a").await.unwrap();
        // Another node's session and task: a restart of node_a leaves them alone.
        let elsewhere = SessionId::generate();
        s.insert_session(&elsewhere, &u.id, "active", "{}", "node_b").await.unwrap();
        let t3 = TaskId::generate();
        s.insert_task(&t3, &elsewhere, &u.id, "c").await.unwrap();
        let t1 = TaskId::generate();
        let t2 = TaskId::generate();
        s.insert_task(&t1, &sid, &u.id, "a").await.unwrap();
        s.insert_task(&t2, &sid, &u.id, "b").await.unwrap();
        let usage = Usage { input_tokens: 10, output_tokens: 5, compute_ms: 1500 };
        let bal = s
            .finish_task(
                &t1,
                &TaskOutcome::Complete { message: "ok".into(), output: Some("[1]".into()) },
                usage,
                250_000,
                None,
            )
            .await
            .unwrap();
        assert_eq!(bal, 750_000);
        assert!(s
            .finish_task(&t1, &TaskOutcome::Complete { message: "again".into(), output: None }, usage, 1, None)
            .await
            .is_err());
        s.set_task_guardrail(&t2, Some(("human_input_needed", "which one?"))).await.unwrap();
        let g = s.get_task(sid.as_str(), t2.as_str()).await.unwrap().unwrap();
        assert_eq!(g.status, TaskStatus::Guardrail);
        assert_eq!(g.guardrail, Some(("human_input_needed".into(), "which one?".into())));
        assert_eq!(s.recover_interrupted("node_a").await.unwrap(), (1, 1));
        let other = s.get_task(elsewhere.as_str(), t3.as_str()).await.unwrap().unwrap();
        assert_eq!(other.status, TaskStatus::Running);
        assert_eq!(s.get_session(&elsewhere).await.unwrap().unwrap().ended_at, None);
        let t = s.get_task(sid.as_str(), t2.as_str()).await.unwrap().unwrap();
        assert_eq!(t.status, TaskStatus::Failed);
        assert_eq!(t.code, Some(ErrorCode::TaskInterrupted));
        let done = s.get_task(sid.as_str(), t1.as_str()).await.unwrap().unwrap();
        assert_eq!(done.result_message.as_deref(), Some("ok"));
        assert_eq!(done.output.as_deref(), Some("[1]"));
        s.set_task_trace(&t1, Some("[{}]"), Some("{}")).await.unwrap();
        let (status, trace, tokens) = s.replay_source(t1.as_str(), &u.id).await.unwrap().unwrap();
        assert_eq!((status, trace.as_deref(), tokens), (TaskStatus::Complete, Some("[{}]"), 15));
        let stranger = s.create_user("d", 0).await.unwrap();
        assert!(s.replay_source(t1.as_str(), &stranger.id).await.unwrap().is_none());
        assert!(s.get_task("other", t1.as_str()).await.unwrap().is_none());
    }
}
