//! `task.guardrail`: a guardrail's question changes no stored state, so it is queued when the session's
//! event bus carries it (a hook on every new session), for the owner's webhooks, with the link to answer.

use tokio::sync::broadcast::{self, error::RecvError};
use webpilot_core::events::{SessionEvent, TaskEvent};
use webpilot_core::SessionId;
use webpilot_store::Store;

/// Follows one session's events until it ends, queueing each guardrail question for its owner's webhooks.
/// `public_url` is where the service is reached (the answer link is `send-message` there).
pub fn follow_guardrails(
    store: Store,
    public_url: String,
    session: &SessionId,
    events: broadcast::Receiver<SessionEvent>,
) {
    let session = session.clone();
    webpilot_tasks::spawn_owned("guardrail webhooks", watch(store, public_url, session, events));
}

async fn watch(store: Store, public_url: String, session: SessionId, mut events: broadcast::Receiver<SessionEvent>) {
    let mut owner = None;
    loop {
        let (task_id, guardrail) = match events.recv().await {
            Ok(SessionEvent::Task { task_id, event: TaskEvent::GuardrailTrigger(g) }) => (task_id, g),
            Ok(SessionEvent::EndSession { .. }) | Err(RecvError::Closed) => return,
            Ok(_) => continue,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(skipped = n, "session events missed by the guardrail webhook follower");
                continue;
            }
        };
        if owner.is_none() {
            owner = match store.get_session(&session).await {
                Ok(Some(record)) => Some(record.user_id),
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "reading a session's owner for its guardrail webhook failed");
                    continue;
                }
            };
        }
        let Some(user) = &owner else { continue };
        let mut data = TaskEvent::GuardrailTrigger(guardrail).to_json(&task_id);
        data["sessionId"] = session.to_string().into();
        data["answer"] = serde_json::json!({
            "method": "POST",
            "url": format!("{public_url}/start/send-message"),
            "body": {
                "sessionId": session.as_str(),
                "message": { "actionType": "guardrail", "taskDetails": "<the answer>", "newState": "resume" }
            }
        });
        if let Err(e) = store.enqueue_webhook_event(user, "task.guardrail", &data).await {
            tracing::warn!(error = %e, "queueing a guardrail webhook failed");
        }
    }
}
