//! Webhooks: the endpoints users registered, the outbox of messages for them, and the log of delivery
//! attempts. A message is written by `enqueue` inside the transaction of the state change it describes
//! (a task's outcome, a session's end), one row per subscribed endpoint, so none is lost to a crash;
//! a node claims due rows for a lease (`claimed_until`), so a cluster delivers each once at a time.

use crate::sealed::WEBHOOK;
use crate::{now_ms, retry, Result, Store};
use webpilot_core::UserId;

/// The event types a webhook may subscribe to.
pub const WEBHOOK_EVENTS: &[&str] =
    &["task.completed", "task.failed", "task.guardrail", "session.ended", "file.created", "recording.ready"];

/// A message to queue with a state change: its type and its `data`.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookEvent {
    pub event_type: &'static str,
    pub data: serde_json::Value,
}

/// A registered endpoint (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookRecord {
    pub id: String,
    pub url: String,
    /// Subscribed event types; empty means all.
    pub events: Vec<String>,
    pub description: Option<String>,
    pub created_at: i64,
}

/// One message due for delivery to one endpoint, with what signing and sending it needs.
#[derive(Debug, Clone)]
pub struct OutboxMessage {
    /// The message id (`webhook-id`), the same on every attempt.
    pub id: String,
    pub webhook_id: String,
    pub event_type: String,
    pub body: String,
    /// When the message was made (ms): its `webhook-timestamp` on every attempt.
    pub created_at: i64,
    /// Attempts made before this one.
    pub attempts: i64,
    pub url: String,
    /// The current secret, then the previous one while it is still valid after a rotation.
    pub secrets: Vec<String>,
}

/// A due message, before it is claimed: which endpoint and whose.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DueMessage {
    pub id: String,
    pub webhook_id: String,
    pub user_id: String,
}

/// One delivery attempt, as `GET /webhooks/<id>/deliveries` lists it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DeliveryRecord {
    pub message_id: String,
    pub event_type: String,
    pub attempt: i64,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub latency_ms: i64,
    pub created_at: i64,
}

/// What became of an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    Delivered,
    /// Try again at this time (ms).
    RetryAt(i64),
    /// No attempts left.
    Failed,
}

#[derive(sqlx::FromRow)]
struct WebhookRow {
    id: String,
    url: String,
    events: String,
    description: Option<String>,
    created_at: i64,
}

impl From<WebhookRow> for WebhookRecord {
    fn from(r: WebhookRow) -> Self {
        let events = r.events.split(',').filter(|e| !e.is_empty()).map(str::to_owned).collect();
        WebhookRecord { id: r.id, url: r.url, events, description: r.description, created_at: r.created_at }
    }
}

#[derive(sqlx::FromRow)]
struct DueRow {
    id: String,
    webhook_id: String,
    event_type: String,
    body: String,
    created_at: i64,
    attempts: i64,
    url: String,
    secret: String,
    previous_secret: Option<String>,
    previous_until: Option<i64>,
}

impl Store {
    /// Registers an endpoint of `user` with its signing `secret`, unless `user` has `max` already (None).
    /// Counted under a lock on the user's row, so concurrent registrations cannot pass the cap.
    pub async fn create_webhook(
        &self,
        user: &UserId,
        url: &str,
        events: &[String],
        description: Option<&str>,
        secret: &str,
        max: i64,
    ) -> Result<Option<WebhookRecord>> {
        let record = WebhookRecord {
            id: format!("wh_{}", uuid::Uuid::new_v4().simple()),
            url: url.to_owned(),
            events: events.to_vec(),
            description: description.map(str::to_owned),
            created_at: now_ms(),
        };
        let sealed = self.sealer.seal(WEBHOOK, &record.id, secret);
        retry::on_busy("register a webhook", || async {
            let mut tx = self.pool.begin().await?;
            sqlx::query("UPDATE users SET balance_micros = balance_micros WHERE id = $1")
                .bind(user.as_str())
                .execute(&mut *tx)
                .await?;
            let count: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM webhooks WHERE user_id = $1 AND deleted_at IS NULL")
                    .bind(user.as_str())
                    .fetch_one(&mut *tx)
                    .await?;
            if count >= max {
                tx.rollback().await?;
                return Ok(None);
            }
            sqlx::query(
                "INSERT INTO webhooks (id, user_id, url, events, description, secret, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(&record.id)
            .bind(user.as_str())
            .bind(url)
            .bind(events.join(","))
            .bind(description)
            .bind(&sealed)
            .bind(record.created_at)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(Some(record.clone()))
        })
        .await
    }

    /// `user`'s endpoints, oldest first.
    pub async fn list_webhooks(&self, user: &UserId) -> Result<Vec<WebhookRecord>> {
        let rows: Vec<WebhookRow> = sqlx::query_as(
            "SELECT id, url, events, description, created_at FROM webhooks
             WHERE user_id = $1 AND deleted_at IS NULL ORDER BY created_at, id",
        )
        .bind(user.as_str())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(WebhookRecord::from).collect())
    }

    /// Removes `user`'s endpoint `id` (its undelivered messages are dropped); false when there is none.
    pub async fn delete_webhook(&self, user: &UserId, id: &str) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        let done =
            sqlx::query("UPDATE webhooks SET deleted_at = $1 WHERE id = $2 AND user_id = $3 AND deleted_at IS NULL")
                .bind(now_ms())
                .bind(id)
                .bind(user.as_str())
                .execute(&mut *tx)
                .await?;
        if done.rows_affected() == 0 {
            tx.rollback().await?;
            return Ok(false);
        }
        sqlx::query("UPDATE webhook_outbox SET status = 'cancelled' WHERE webhook_id = $1 AND status = 'pending'")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Gives `user`'s endpoint `id` a new secret; the old one still signs (as a second signature) until
    /// `old_valid_until` (ms). False when there is no such endpoint.
    pub async fn rotate_webhook_secret(
        &self,
        user: &UserId,
        id: &str,
        secret: &str,
        old_valid_until: i64,
    ) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE webhooks SET previous_secret = secret, previous_until = $1, secret = $2
             WHERE id = $3 AND user_id = $4 AND deleted_at IS NULL",
        )
        .bind(old_valid_until)
        .bind(self.sealer.seal(WEBHOOK, id, secret))
        .bind(id)
        .bind(user.as_str())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// The latest `limit` attempts to `user`'s endpoint `id`, newest first; None when there is no such
    /// endpoint.
    pub async fn webhook_deliveries(&self, user: &UserId, id: &str, limit: i64) -> Result<Option<Vec<DeliveryRecord>>> {
        let owned: Option<String> =
            sqlx::query_scalar("SELECT id FROM webhooks WHERE id = $1 AND user_id = $2 AND deleted_at IS NULL")
                .bind(id)
                .bind(user.as_str())
                .fetch_optional(&self.pool)
                .await?;
        if owned.is_none() {
            return Ok(None);
        }
        let rows: Vec<DeliveryRecord> = sqlx::query_as(
            "SELECT message_id, event_type, attempt, status_code, error, latency_ms, created_at
             FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY created_at DESC, attempt DESC LIMIT $2",
        )
        .bind(id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(Some(rows))
    }

    /// Writes one message for `user`'s endpoints subscribed to `event_type`, in its own transaction
    /// (for events that change no stored state, such as a guardrail's question).
    pub async fn enqueue_webhook_event(&self, user: &UserId, event_type: &str, data: &serde_json::Value) -> Result<()> {
        retry::on_busy("queue a webhook message", || async {
            let mut tx = self.pool.begin().await?;
            enqueue(&mut tx, user, event_type, data).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// Due messages of the outbox, oldest due first, at most `limit` and at most `per_user` of any one user
    /// (so one user's backlog never hides another's messages): which endpoint and user each is for, so a
    /// worker can choose fairly before it claims one ([`Store::claim_webhook_message`]).
    pub async fn due_webhook_messages(&self, limit: i64, per_user: i64) -> Result<Vec<DueMessage>> {
        Ok(sqlx::query_as(
            "SELECT id, webhook_id, user_id FROM (
                SELECT o.id, o.webhook_id, w.user_id, o.next_attempt_at,
                       ROW_NUMBER() OVER (PARTITION BY w.user_id ORDER BY o.next_attempt_at, o.id) AS nth
                FROM webhook_outbox o JOIN webhooks w ON w.id = o.webhook_id
                WHERE o.status = 'pending' AND o.next_attempt_at <= $1 AND o.claimed_until <= $1
             ) due WHERE nth <= $3 ORDER BY next_attempt_at, id LIMIT $2",
        )
        .bind(now_ms())
        .bind(limit)
        .bind(per_user)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Claims the due message `id` for `lease_ms` (no other node takes it meanwhile) with what sending it
    /// needs; None when another node claimed it first or it is no longer due.
    pub async fn claim_webhook_message(&self, id: &str, lease_ms: i64) -> Result<Option<OutboxMessage>> {
        let now = now_ms();
        // Conditional: of two nodes that saw the row due, one updates it.
        let won = retry::on_busy("claim a webhook message", || async {
            Ok(sqlx::query(
                "UPDATE webhook_outbox SET claimed_until = $1
                 WHERE id = $2 AND status = 'pending' AND claimed_until <= $3 AND next_attempt_at <= $3",
            )
            .bind(now + lease_ms)
            .bind(id)
            .bind(now)
            .execute(&self.pool)
            .await?
            .rows_affected()
                == 1)
        })
        .await?;
        if !won {
            return Ok(None);
        }
        let row: Option<DueRow> = sqlx::query_as(
            "SELECT o.id, o.webhook_id, o.event_type, o.body, o.created_at, o.attempts, w.url, w.secret,
                    w.previous_secret, w.previous_until
             FROM webhook_outbox o JOIN webhooks w ON w.id = o.webhook_id WHERE o.id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        let Some(r) = row else { return Ok(None) };
        let mut secrets = vec![self.sealer.open_or_clear(WEBHOOK, &r.webhook_id, &r.secret)?];
        if let (Some(old), Some(until)) = (r.previous_secret, r.previous_until) {
            if until > now {
                secrets.push(self.sealer.open_or_clear(WEBHOOK, &r.webhook_id, &old)?);
            }
        }
        Ok(Some(OutboxMessage {
            id: r.id,
            webhook_id: r.webhook_id,
            event_type: r.event_type,
            body: r.body,
            created_at: r.created_at,
            attempts: r.attempts,
            url: r.url,
            secrets,
        }))
    }

    /// Claims up to `limit` due messages, oldest due first (see [`Store::claim_webhook_message`]).
    pub async fn claim_webhook_messages(&self, lease_ms: i64, limit: i64) -> Result<Vec<OutboxMessage>> {
        let mut claimed = Vec::new();
        for due in self.due_webhook_messages(limit, limit).await? {
            if let Some(m) = self.claim_webhook_message(&due.id, lease_ms).await? {
                claimed.push(m);
            }
        }
        Ok(claimed)
    }

    /// Logs an attempt at `message` and settles the outbox row by `outcome`.
    pub async fn record_webhook_attempt(
        &self,
        message: &OutboxMessage,
        status_code: Option<u16>,
        error: Option<&str>,
        latency_ms: i64,
        outcome: AttemptOutcome,
    ) -> Result<()> {
        retry::on_busy("record a webhook attempt", || async {
            let mut tx = self.pool.begin().await?;
            let (status, next) = match outcome {
                AttemptOutcome::Delivered => ("delivered", 0),
                AttemptOutcome::RetryAt(at) => ("pending", at),
                AttemptOutcome::Failed => ("failed", 0),
            };
            sqlx::query(
                "UPDATE webhook_outbox SET attempts = attempts + 1, status = $1, next_attempt_at = $2, claimed_until = 0
                 WHERE id = $3 AND status = 'pending'",
            )
            .bind(status)
            .bind(next)
            .bind(&message.id)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "INSERT INTO webhook_deliveries
                 (id, webhook_id, message_id, event_type, attempt, status_code, error, latency_ms, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(uuid::Uuid::new_v4().simple().to_string())
            .bind(&message.webhook_id)
            .bind(&message.id)
            .bind(&message.event_type)
            .bind(message.attempts + 1)
            .bind(status_code.map(i64::from))
            .bind(error)
            .bind(latency_ms)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }
}

/// Writes a message `{type, timestamp, data}` for each of `user`'s endpoints subscribed to
/// `event_type`, inside the caller's transaction.
pub(crate) async fn enqueue(
    tx: &mut sqlx::AnyConnection,
    user: &UserId,
    event_type: &str,
    data: &serde_json::Value,
) -> Result<()> {
    let hooks: Vec<(String, String)> =
        sqlx::query_as("SELECT id, events FROM webhooks WHERE user_id = $1 AND deleted_at IS NULL")
            .bind(user.as_str())
            .fetch_all(&mut *tx)
            .await?;
    let now = now_ms();
    for (hook, events) in hooks {
        if !(events.is_empty() || events.split(',').any(|e| e == event_type)) {
            continue;
        }
        let id = format!("msg_{}", uuid::Uuid::new_v4().simple());
        let timestamp = crate::rfc3339(now);
        let body = serde_json::json!({ "type": event_type, "timestamp": timestamp, "data": data }).to_string();
        sqlx::query(
            "INSERT INTO webhook_outbox (id, webhook_id, event_type, body, created_at, next_attempt_at, status)
             VALUES ($1, $2, $3, $4, $5, $5, 'pending')",
        )
        .bind(&id)
        .bind(&hook)
        .bind(event_type)
        .bind(body)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::store;

    #[tokio::test]
    async fn messages_are_queued_per_subscribed_endpoint_and_claimed_once() {
        let (s, _d) = store().await;
        let u = s.create_user("w", 1_000).await.unwrap();
        let all =
            s.create_webhook(&u.id, "https://a.example/", &[], None, "whsec_a", 10).await.unwrap().expect("registered");
        let ended = ["session.ended".to_owned()];
        s.create_webhook(&u.id, "https://b.example/", &ended, Some("b"), "whsec_b", 2).await.unwrap().expect("second");
        let third = s.create_webhook(&u.id, "https://c.example/", &[], None, "whsec_c", 2).await.unwrap();
        assert!(third.is_none(), "at the cap");
        s.enqueue_webhook_event(&u.id, "task.guardrail", &serde_json::json!({"taskId": "t"})).await.unwrap();
        let first = s.claim_webhook_messages(60_000, 10).await.unwrap();
        assert_eq!(first.len(), 1, "only the endpoint subscribed to every event");
        assert_eq!(first[0].webhook_id, all.id);
        assert!(first[0].body.contains("\"type\":\"task.guardrail\""), "{}", first[0].body);
        assert!(s.claim_webhook_messages(60_000, 10).await.unwrap().is_empty(), "claimed messages are leased");
        s.record_webhook_attempt(&first[0], Some(500), None, 3, AttemptOutcome::RetryAt(0)).await.unwrap();
        let again = s.claim_webhook_messages(60_000, 10).await.unwrap();
        assert_eq!((again[0].id.as_str(), again[0].attempts), (first[0].id.as_str(), 1), "same message id");
        s.record_webhook_attempt(&again[0], Some(204), None, 2, AttemptOutcome::Delivered).await.unwrap();
        assert!(s.claim_webhook_messages(60_000, 10).await.unwrap().is_empty());
        let log = s.webhook_deliveries(&u.id, &all.id, 10).await.unwrap().expect("own endpoint");
        assert_eq!(log.iter().map(|d| d.status_code).collect::<Vec<_>>(), vec![Some(204), Some(500)]);
        let other = s.create_user("x", 0).await.unwrap();
        assert!(s.webhook_deliveries(&other.id, &all.id, 10).await.unwrap().is_none(), "not another user's");
        assert!(!s.delete_webhook(&other.id, &all.id).await.unwrap());
        assert!(s.rotate_webhook_secret(&u.id, &all.id, "whsec_new", now_ms() + 1_000).await.unwrap());
        s.enqueue_webhook_event(&u.id, "task.failed", &serde_json::json!({})).await.unwrap();
        let rotated = s.claim_webhook_messages(60_000, 10).await.unwrap();
        assert_eq!(rotated[0].secrets, vec!["whsec_new".to_owned(), "whsec_a".to_owned()]);
        assert!(s.delete_webhook(&u.id, &all.id).await.unwrap());
        assert_eq!(s.list_webhooks(&u.id).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn work_ended_by_recovery_is_announced_too() {
        let (s, _d) = store().await;
        let u = s.create_user("w", 1_000).await.unwrap();
        s.create_webhook(&u.id, "https://a.example/", &[], None, "whsec_a", 10).await.unwrap().expect("registered");
        let session = webpilot_core::SessionId::generate();
        s.insert_session(&session, &u.id, "active", "{}", "node_a").await.unwrap();
        s.insert_task(&webpilot_core::TaskId::generate(), &session, &u.id, "t").await.unwrap();
        s.recover_interrupted("node_a").await.unwrap();
        let mut types: Vec<String> =
            s.claim_webhook_messages(60_000, 10).await.unwrap().into_iter().map(|m| m.event_type).collect();
        types.sort();
        assert_eq!(types, vec!["session.ended".to_owned(), "task.failed".to_owned()]);
    }
}
