//! The nodes of a cluster: registration, heartbeats, where a session lives, and declaring a silent
//! node lost (its sessions end as `instance_lost`, their running tasks fail with
//! `INSTANCE_UNAVAILABLE`). Heartbeats are written and judged by the database's clock (`Store::clock_ms`),
//! so the nodes' own clocks may drift apart.

use crate::sealed::SHARED;
use crate::{now_ms, Result, Store};
use webpilot_core::{ErrorCode, SessionId, UserId};

/// A node as registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRecord {
    pub id: String,
    /// Where other nodes reach it (`http://host:port`).
    pub address: String,
    pub capacity: i64,
    pub free: i64,
}

/// Where a session lives, as the database says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPlace {
    pub node_id: String,
    pub address: String,
}

/// What declaring a node lost ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reaped {
    pub tasks_failed: u64,
    pub sessions: Vec<SessionId>,
}

impl Store {
    /// The shared secret `name`: `candidate` if this is the first node to ask, else what the first stored.
    /// It is kept sealed (`sealed.rs`).
    pub async fn shared_secret(&self, name: &str, candidate: &str) -> Result<String> {
        sqlx::query(
            "INSERT INTO shared_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(self.sealer.seal(SHARED, name, candidate))
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        let stored: String = sqlx::query_scalar("SELECT value FROM shared_secrets WHERE name = $1")
            .bind(name)
            .fetch_one(&self.pool)
            .await?;
        Ok(self.sealer.open_or_clear(SHARED, name, &stored)?)
    }

    /// Registers (or re-registers, after a restart) a node as alive now.
    pub async fn register_node(&self, node: &NodeRecord) -> Result<()> {
        let now = self.clock_ms().await?;
        sqlx::query(
            "INSERT INTO nodes (id, address, capacity, free, started_at, heartbeat_at) VALUES ($1, $2, $3, $4, $5, $5)
             ON CONFLICT (id) DO UPDATE SET address = $2, capacity = $3, free = $4, started_at = $5,
                 heartbeat_at = $5, stopped_at = NULL",
        )
        .bind(&node.id)
        .bind(&node.address)
        .bind(node.capacity)
        .bind(node.free)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Marks `node` alive now with `free` capacity. `false` when it had been declared lost (or stopped).
    pub async fn heartbeat(&self, node: &str, free: i64) -> Result<bool> {
        let now = self.clock_ms().await?;
        let done = sqlx::query("UPDATE nodes SET heartbeat_at = $1, free = $2 WHERE id = $3 AND stopped_at IS NULL")
            .bind(now)
            .bind(free)
            .bind(node)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// A graceful stop: the node's row says so, and nobody waits for its heartbeat to time out. Claims
    /// its sessions and tasks did not give back (a release that failed on the way down) are dropped.
    pub async fn stop_node(&self, node: &str) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("UPDATE nodes SET stopped_at = $1 WHERE id = $2 AND stopped_at IS NULL")
            .bind(now_ms())
            .bind(node)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM claims WHERE node_id = $1").bind(node).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The nodes alive (heartbeat within `alive_ms`) other than `except`: how many, and their free capacity.
    pub async fn peers(&self, except: &str, alive_ms: i64) -> Result<(i64, i64)> {
        let now = self.clock_ms().await?;
        let (count, free): (i64, Option<i64>) = sqlx::query_as(
            "SELECT COUNT(*), CAST(SUM(free) AS BIGINT) FROM nodes
             WHERE id <> $1 AND stopped_at IS NULL AND heartbeat_at >= $2",
        )
        .bind(except)
        .bind(now - alive_ms)
        .fetch_one(&self.pool)
        .await?;
        Ok((count, free.unwrap_or(0).max(0)))
    }

    /// The node holding open session `session`, when it is another alive one than `except`.
    pub async fn session_place(&self, session: &str, except: &str) -> Result<Option<SessionPlace>> {
        let row: Option<(String, String)> = sqlx::query_as(
            "SELECT n.id, n.address FROM sessions s JOIN nodes n ON n.id = s.node_id
             WHERE s.id = $1 AND s.ended_at IS NULL AND n.id <> $2 AND n.stopped_at IS NULL",
        )
        .bind(session)
        .bind(except)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|(node_id, address)| SessionPlace { node_id, address }))
    }

    /// The address of `node` while it runs (not stopped, not declared lost).
    pub async fn node_address(&self, node: &str) -> Result<Option<String>> {
        Ok(sqlx::query_scalar("SELECT address FROM nodes WHERE id = $1 AND stopped_at IS NULL")
            .bind(node)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Nodes whose last heartbeat is older than `timeout_ms` and that were not stopped.
    pub async fn silent_nodes(&self, timeout_ms: i64) -> Result<Vec<String>> {
        let now = self.clock_ms().await?;
        Ok(sqlx::query_scalar("SELECT id FROM nodes WHERE stopped_at IS NULL AND heartbeat_at < $1")
            .bind(now - timeout_ms)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Declares `node` lost if it is still silent for `timeout_ms`: in one transaction its row is closed,
    /// its open sessions end as `instance_lost` and their running tasks fail with `INSTANCE_UNAVAILABLE`
    /// (charged nothing). Only one node wins the claim; the others get `None`.
    pub async fn reap_node(&self, node: &str, timeout_ms: i64) -> Result<Option<Reaped>> {
        let now = self.clock_ms().await?;
        let mut tx = self.pool.begin().await?;
        let claimed =
            sqlx::query("UPDATE nodes SET stopped_at = $1 WHERE id = $2 AND stopped_at IS NULL AND heartbeat_at < $3")
                .bind(now)
                .bind(node)
                .bind(now - timeout_ms)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        if claimed == 0 {
            tx.rollback().await?;
            return Ok(None);
        }
        let error = "the node running this task's browser stopped answering";
        let (tasks_failed, sessions) =
            end_work_of(&mut tx, node, false, error, ErrorCode::InstanceUnavailable, now).await?;
        tx.commit().await?;
        Ok(Some(Reaped { tasks_failed, sessions: sessions.into_iter().map(SessionId::from_string).collect() }))
    }
}

/// Inside the caller's transaction: fails the running tasks of `node`'s sessions with `code` and ends its
/// open sessions as `instance_lost` (with `unowned_too`, also those rows from before sessions had a node),
/// and drops its claims.
/// Returns (tasks failed, sessions ended).
pub(crate) async fn end_work_of(
    tx: &mut sqlx::AnyConnection,
    node: &str,
    unowned_too: bool,
    error: &str,
    code: ErrorCode,
    now: i64,
) -> Result<(u64, Vec<String>)> {
    let unowned = i64::from(unowned_too);
    let failed: Vec<(String, String, String)> = sqlx::query_as(
        "UPDATE tasks SET status = 'failed', error = $1, code = $2, guardrail = NULL, completed_at = $3
         WHERE status IN ('running', 'guardrail')
           AND session_id IN (SELECT id FROM sessions WHERE node_id = $4 OR ($5 = 1 AND node_id IS NULL))
         RETURNING id, session_id, user_id",
    )
    .bind(error)
    .bind(code.as_str())
    .bind(now)
    .bind(node)
    .bind(unowned)
    .fetch_all(&mut *tx)
    .await?;
    let ended: Vec<(String, String)> = sqlx::query_as(
        "UPDATE sessions SET state = 'terminated', ended_at = $1, end_reason = 'instance_lost'
         WHERE ended_at IS NULL AND (node_id = $2 OR ($3 = 1 AND node_id IS NULL)) RETURNING id, user_id",
    )
    .bind(now)
    .bind(node)
    .bind(unowned)
    .fetch_all(&mut *tx)
    .await?;
    // Their owners' webhooks hear of it in the same transaction, as for work that ends normally.
    for (task, session, user) in &failed {
        let data = serde_json::json!({
            "type": "error", "taskId": task, "sessionId": session, "error": error, "code": code.as_str()
        });
        crate::webhooks::enqueue(tx, &UserId::from_string(user.clone()), "task.failed", &data).await?;
    }
    for (session, user) in &ended {
        let data = serde_json::json!({ "sessionId": session, "reason": "instance_lost", "cost": 0.0 });
        crate::webhooks::enqueue(tx, &UserId::from_string(user.clone()), "session.ended", &data).await?;
    }
    let tasks = failed.len() as u64;
    let sessions = ended.into_iter().map(|(id, _)| id).collect();
    sqlx::query("DELETE FROM claims WHERE node_id = $1").bind(node).execute(&mut *tx).await?;
    Ok((tasks, sessions))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::store;
    use crate::TaskStatus;
    use webpilot_core::TaskId;

    fn node(id: &str) -> NodeRecord {
        NodeRecord { id: id.into(), address: format!("http://{id}:8080"), capacity: 4, free: 4 }
    }

    #[tokio::test]
    async fn a_silent_node_is_reaped_once_and_its_work_ends() {
        let (s, _d) = store().await;
        s.register_node(&node("a")).await.unwrap();
        s.register_node(&node("b")).await.unwrap();
        let u = s.create_user("u", 1_000_000).await.unwrap();
        let on_a = SessionId::generate();
        s.insert_session(&on_a, &u.id, "active", "{}", "a").await.unwrap();
        let on_b = SessionId::generate();
        s.insert_session(&on_b, &u.id, "active", "{}", "b").await.unwrap();
        let task = TaskId::generate();
        s.insert_task(&task, &on_a, &u.id, "t").await.unwrap();

        // b looks for a's session: it is on a, alive.
        let place = s.session_place(on_a.as_str(), "b").await.unwrap().unwrap();
        assert_eq!(place, SessionPlace { node_id: "a".into(), address: "http://a:8080".into() });
        assert_eq!(s.session_place(on_a.as_str(), "a").await.unwrap(), None, "a node does not forward to itself");
        assert!(s.heartbeat("b", 3).await.unwrap());
        assert_eq!(s.peers("a", 60_000).await.unwrap(), (1, 3));

        // Nobody is silent for a minute; everybody is for -1 ms.
        assert!(s.silent_nodes(60_000).await.unwrap().is_empty());
        assert_eq!(s.reap_node("a", 60_000).await.unwrap(), None, "a live node is not reaped");
        let reaped = s.reap_node("a", -1).await.unwrap().unwrap();
        assert_eq!(reaped, Reaped { tasks_failed: 1, sessions: vec![on_a.clone()] });
        assert_eq!(s.reap_node("a", -1).await.unwrap(), None, "only one node wins the claim");
        let t = s.get_task(on_a.as_str(), task.as_str()).await.unwrap().unwrap();
        assert_eq!((t.status, t.code), (TaskStatus::Failed, Some(ErrorCode::InstanceUnavailable)));
        assert_eq!(t.cost_micros, 0);
        let ended = s.get_session(&on_a).await.unwrap().unwrap();
        assert_eq!(ended.end_reason.as_deref(), Some("instance_lost"));
        assert_eq!(s.get_session(&on_b).await.unwrap().unwrap().ended_at, None, "b's session is untouched");
        assert_eq!(s.session_place(on_a.as_str(), "b").await.unwrap(), None);
        assert!(!s.heartbeat("a", 4).await.unwrap(), "a reaped node learns it from its heartbeat");
        assert_eq!(s.get_user(&u.id).await.unwrap().unwrap().balance_micros, 1_000_000);

        // The first value of a shared secret wins.
        assert_eq!(s.shared_secret("k", "first").await.unwrap(), "first");
        assert_eq!(s.shared_secret("k", "second").await.unwrap(), "first");

        // A restart re-registers it.
        s.register_node(&node("a")).await.unwrap();
        assert!(s.heartbeat("a", 4).await.unwrap());
        s.stop_node("a").await.unwrap();
        assert_eq!(s.peers("b", 60_000).await.unwrap(), (0, 0));
    }
}
