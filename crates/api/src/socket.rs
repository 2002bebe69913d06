//! The Socket.IO channel at `/socket.io/` (Socket.IO v5 / Engine.IO v4): a client connects with
//! `{sessionId}` as its auth data and receives the session's events (`message` for task events,
//! `end_session`, `instance:disconnected`, `instance:reconnected`); it may emit `message` with a
//! send-message `message` object and gets the REST answer as its ack. Not rate-limited (spec: Limits).

use crate::error::error_json;
use crate::state::AppState;
use crate::views;
use serde_json::{json, Value};
use socketioxide::extract::{AckSender, SocketRef, State, TryData};
use socketioxide::handler::ConnectHandler;
use socketioxide::layer::SocketIoLayer;
use socketioxide::SocketIo;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;
use tokio::task::AbortHandle;
use webpilot_core::events::SessionEvent;
use webpilot_core::{ApiError, ErrorCode};
use webpilot_sessions::SendOutcome;

/// The connected sockets (for `GET /start/active-sockets`), each with the task forwarding its
/// session's events; and the Socket.IO handle, to close every socket at shutdown.
#[derive(Default)]
pub struct SocketRegistry {
    sockets: Mutex<BTreeMap<String, Entry>>,
    io: Mutex<Option<SocketIo>>,
}

struct Entry {
    session_id: String,
    forwarder: AbortHandle,
}

impl SocketRegistry {
    /// Ids of the connected sockets, sorted.
    pub fn ids(&self) -> Vec<String> {
        self.sockets.lock().map(|m| m.keys().cloned().collect()).unwrap_or_default()
    }

    fn add(&self, id: String, session_id: String, forwarder: AbortHandle) {
        if let Ok(mut m) = self.sockets.lock() {
            m.insert(id, Entry { session_id, forwarder });
        }
    }

    fn remove(&self, id: &str) {
        if let Some(entry) = self.sockets.lock().ok().and_then(|mut m| m.remove(id)) {
            entry.forwarder.abort();
            tracing::debug!(socket = %id, session = %entry.session_id, "socket forgotten");
        }
    }

    /// Disconnects every socket (graceful shutdown); the channel accepts no one afterwards.
    pub async fn close(&self) {
        let io = self.io.lock().ok().and_then(|mut g| g.take());
        if let Some(io) = io {
            io.close().await;
        }
    }
}

/// How long a closing socket waits for the acks of messages still being answered.
const ACK_GRACE: Duration = Duration::from_secs(2);

/// Why a connection was refused; the client gets it as `connect_error {message}`.
#[derive(Debug)]
struct Refusal(&'static str);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// The Socket.IO layer for the router, on the default path `/socket.io/`.
pub(crate) fn layer(state: AppState) -> SocketIoLayer {
    let (layer, io) = SocketIo::builder().with_state(state.clone()).build_layer();
    io.ns("/", on_connect.with(authorize));
    if let Ok(mut slot) = state.sockets.io.lock() {
        *slot = Some(io);
    }
    layer
}

fn session_of(auth: &Result<Value, impl fmt::Debug>) -> Option<String> {
    let id = auth.as_ref().ok()?.get("sessionId")?.as_str()?.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

async fn authorize(State(state): State<AppState>, TryData(auth): TryData<Value>) -> Result<(), Refusal> {
    let id = session_of(&auth).ok_or(Refusal("sessionId is required in the auth data"))?;
    if !state.manager.is_live(&id) {
        return Err(Refusal("session not found: it is unknown, terminated or expired"));
    }
    Ok(())
}

async fn on_connect(s: SocketRef, State(state): State<AppState>, TryData(auth): TryData<Value>) {
    // The session can end between `authorize` and here.
    let Some((session_id, events)) = session_of(&auth).and_then(|id| Some((id.clone(), state.manager.subscribe(&id)?)))
    else {
        let _ = s.disconnect();
        return;
    };
    let socket_id = s.id.to_string();
    // Messages being answered, so the socket is not closed before their acks are out.
    let in_flight = Arc::new(watch::Sender::new(0usize));
    let forwarder = tokio::spawn(forward(s.clone(), events, state.sockets.clone(), in_flight.clone()));
    state.sockets.add(socket_id.clone(), session_id.clone(), forwarder.abort_handle());
    tracing::info!(socket = %socket_id, session = %session_id, "socket connected");
    let for_messages = state.clone();
    s.on("message", move |TryData(msg): TryData<Value>, ack: AckSender| {
        let state = for_messages.clone();
        let session_id = session_id.clone();
        let in_flight = in_flight.clone();
        async move {
            in_flight.send_modify(|n| *n += 1);
            let body = match on_message(&state, &session_id, msg.ok()).await {
                Ok(body) => body,
                Err(e) => error_json(&e),
            };
            let _ = ack.send(&body);
            in_flight.send_modify(|n| *n -= 1);
        }
    });
    s.on_disconnect(async |s: SocketRef, State(state): State<AppState>| {
        state.sockets.remove(&s.id.to_string());
        tracing::info!(socket = %s.id, "socket disconnected");
    });
}

/// Emits every session event to the socket; after `end_session` (or when the session is gone) the
/// socket is disconnected.
async fn forward(
    s: SocketRef,
    mut events: broadcast::Receiver<SessionEvent>,
    registry: Arc<SocketRegistry>,
    in_flight: Arc<watch::Sender<usize>>,
) {
    loop {
        match events.recv().await {
            Ok(event) => {
                let (name, payload) = event.wire();
                if let Err(e) = s.emit(name, &payload) {
                    tracing::debug!(socket = %s.id, error = %e, "emitting to a socket failed");
                    break;
                }
                if matches!(event, SessionEvent::EndSession { .. }) {
                    break;
                }
            }
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(socket = %s.id, skipped = n, "a slow socket missed session events");
            }
            Err(RecvError::Closed) => break,
        }
    }
    // A `terminate` sent on this socket is answered just after `end_session`: let its ack out first.
    let _ = tokio::time::timeout(ACK_GRACE, in_flight.subscribe().wait_for(|n| *n == 0)).await;
    let id = s.id.to_string();
    let _ = s.disconnect();
    registry.remove(&id);
}

/// A `message` from the client: the same effect and answer as send-message, acting as the session's
/// owner. A new task is answered at once as pending; its events report the rest.
async fn on_message(state: &AppState, session_id: &str, msg: Option<Value>) -> Result<Value, ApiError> {
    let mut msg = msg.ok_or_else(|| ApiError::new(ErrorCode::InvalidParams, "the message must be a JSON object"))?;
    // Also accept the whole send-message body `{sessionId, message}`.
    if msg.get("actionType").is_none() && msg.get("message").is_some_and(Value::is_object) {
        msg = msg["message"].take();
    }
    let user = state.manager.owner(session_id).await?;
    if !user.is_active() {
        return Err(ApiError::code(ErrorCode::AccountDeactivated));
    }
    Ok(match state.manager.send(&user, session_id, &msg).await? {
        SendOutcome::Task(task) => json!({
            "success": true,
            "sessionId": task.session_id,
            "taskId": task.task_id,
            "status": "pending",
            "pending": true,
            "pollUrl": views::poll_url(&state.config, &task),
            "message": "the task started; its events follow on this socket",
        }),
        SendOutcome::Ack(message) => json!({ "success": true, "message": message }),
    })
}
