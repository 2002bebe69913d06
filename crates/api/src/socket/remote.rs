//! Sockets of sessions another node holds. Events: the owner publishes them on Redis
//! (`webpilot_cluster::EventFanout`) and this node emits them. Messages: sent to the owner's internal
//! `POST /internal/socket-message` with the node key, which answers them as a local socket message
//! would; its answer is the ack.

use super::on_message;
use crate::state::AppState;
use futures::Stream;
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::pin::Pin;
use std::sync::Arc;
use webpilot_cluster::WireEvent;
use webpilot_core::{ApiError, ErrorCode};

/// The address of the alive node holding `session`, when another node holds it and events can cross
/// (Redis is configured).
pub(super) async fn owner(state: &AppState, session: &str) -> Option<String> {
    state.events.as_ref()?;
    crate::forward::owner_elsewhere(state, session).await
}

/// The events a socket is given: a local session's, or those of a session another node holds as they arrive.
pub(super) type EventStream = Pin<Box<dyn Stream<Item = WireEvent> + Send>>;

/// A subscription made while the connection is authorised (before the client hears `connect`, so no
/// event after it is missed), handed to the connect handler through the socket's extensions.
#[derive(Clone)]
pub(super) struct Subscribed(Arc<Mutex<Option<EventStream>>>);

impl Subscribed {
    pub(super) fn take(&self) -> Option<EventStream> {
        self.0.lock().take()
    }
}

/// Subscribes to the events of `session`, held by another node; `None` when it is held nowhere.
pub(super) async fn subscribe(state: &AppState, session: &str) -> Option<Subscribed> {
    let fanout = state.events.clone()?;
    let events = match fanout.subscribe(session).await {
        Ok(events) => events,
        Err(e) => {
            tracing::warn!(error = %e, "subscribing to another node's session events failed");
            return None;
        }
    };
    // Subscribed first, then checked: an end published in between is in the subscription.
    owner(state, session).await?;
    Some(Subscribed(Arc::new(Mutex::new(Some(Box::pin(events))))))
}

/// A socket message for a session another node holds: answered by that node.
pub(super) async fn message(state: &AppState, session: &str, msg: Option<Value>) -> Result<Value, ApiError> {
    let owner = owner(state, session).await.ok_or_else(|| ApiError::code(ErrorCode::SessionNotFound))?;
    let body = json!({ "sessionId": session, "message": msg });
    crate::forward::to_node(state, &owner, "/internal/socket-message", &body).await
}

/// A socket message another node received for a session this node holds (`POST /internal/socket-message`):
/// answered as a local socket message would be.
pub(crate) async fn answer_for_node(state: &AppState, body: &Value) -> Result<Value, ApiError> {
    let session = body.get("sessionId").and_then(Value::as_str).unwrap_or_default();
    on_message(state, session, body.get("message").cloned().filter(|m| !m.is_null())).await
}
