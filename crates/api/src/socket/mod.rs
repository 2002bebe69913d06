//! The Socket.IO channel at `/socket.io/` (Socket.IO v5 / Engine.IO v4): a client connects to the
//! `socketURL` start-session returned (it carries the session's capability token in its query string)
//! with `{sessionId}` as its auth data and receives the session's events (`message` for task events,
//! `end_session`, `instance:disconnected`, `instance:reconnected`); it may emit `message` with a
//! send-message `message` object and gets the REST answer as its ack. Socket traffic is not
//! rate-limited (spec: Limits), except that a `newTask` counts toward the owner's limit. A socket may
//! connect to any node: for a session another node holds, `remote` relays its events (Redis) and its
//! messages (an internal call to that node).

mod remote;

pub(crate) use remote::answer_for_node;

use crate::calls::{self, Call, Via, Wait};
use crate::connections::sockets::SocketRegistry;
use crate::error::error_json;
use crate::state::AppState;
use futures::{Stream, StreamExt};
use serde_json::Value;
use socketioxide::extract::{AckSender, SocketRef, State, TryData};
use socketioxide::handler::ConnectHandler;
use socketioxide::layer::SocketIoLayer;
use socketioxide::SocketIo;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;
use webpilot_cluster::WireEvent;
use webpilot_core::events::SessionEvent;
use webpilot_core::{ApiError, ErrorCode};

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
    state.sockets.serve_with(io);
    layer
}

fn session_of(auth: &Result<Value, impl fmt::Debug>) -> Option<String> {
    let id = webpilot_core::params::id_text(auth.as_ref().ok()?.get("sessionId")?.as_str()?);
    (!id.is_empty()).then(|| id.to_owned())
}

/// The capability token: from the connection URL's query (`socketURL` carries it), or `auth.token`.
fn token_of(s: &SocketRef, auth: &Result<Value, impl fmt::Debug>) -> Option<String> {
    let from_query = s.req_parts().uri.query().and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "token").map(|(_, v)| v.into_owned())
    });
    from_query.or_else(|| Some(auth.as_ref().ok()?.get("token")?.as_str()?.to_owned()))
}

async fn authorize(s: SocketRef, State(state): State<AppState>, TryData(auth): TryData<Value>) -> Result<(), Refusal> {
    let id = session_of(&auth).ok_or(Refusal("sessionId is required in the auth data"))?;
    const UNKNOWN: Refusal = Refusal("session not found: it is unknown, terminated or expired");
    let local = state.manager.is_live(&id);
    if !local && remote::owner(&state, &id).await.is_none() {
        return Err(UNKNOWN);
    }
    let token = token_of(&s, &auth).unwrap_or_default();
    if !state.sockets.verify(&id, &token) {
        return Err(Refusal("connect to the socketURL start-session returned: its token is missing or wrong"));
    }
    if !local {
        s.extensions.insert(remote::subscribe(&state, &id).await.ok_or(UNKNOWN)?);
    }
    Ok(())
}

async fn on_connect(s: SocketRef, State(state): State<AppState>, TryData(auth): TryData<Value>) {
    let Some(session_id) = session_of(&auth) else {
        let _ = s.disconnect();
        return;
    };
    // Messages being answered, so the socket is not closed before their acks are out.
    let in_flight = Arc::new(watch::Sender::new(0usize));
    // Held by another node: `authorize` subscribed to its events.
    let subscribed = s.extensions.remove::<remote::Subscribed>().and_then(|sub| sub.take());
    let remote_here = subscribed.is_some();
    let events = match (subscribed, state.manager.subscribe(&session_id)) {
        (Some(events), _) => events,
        (None, Some(events)) => Box::pin(local_events(events)),
        // The session ended since `authorize`.
        (None, None) => {
            let _ = s.disconnect();
            return;
        }
    };
    let forwarder = webpilot_tasks::spawn_owned(
        "socket forwarder",
        forward(s.clone(), events, state.sockets.clone(), in_flight.clone()),
    );
    state.sockets.add(s.id.to_string(), session_id.clone(), forwarder.abort_handle());
    tracing::info!(session = %session_id, remote = remote_here, "socket connected");
    let for_messages = state.clone();
    s.on("message", move |TryData(msg): TryData<Value>, ack: AckSender| {
        let state = for_messages.clone();
        let session_id = session_id.clone();
        let in_flight = in_flight.clone();
        async move {
            in_flight.send_modify(|n| *n += 1);
            let answer = match remote_here {
                true => remote::message(&state, &session_id, msg.ok()).await,
                false => on_message(&state, &session_id, msg.ok()).await,
            };
            let body = match answer {
                Ok(body) => body,
                Err(e) => error_json(&e),
            };
            let _ = ack.send(&body);
            in_flight.send_modify(|n| *n -= 1);
        }
    });
    s.on_disconnect(async |s: SocketRef, State(state): State<AppState>| {
        state.sockets.remove(&s.id.to_string());
        tracing::debug!("socket disconnected");
    });
}

/// Emits every session event to the socket (a local session's, or one relayed from the node that holds
/// it); after `end_session` (or when the session is gone) the socket is disconnected.
async fn forward(
    s: SocketRef,
    mut events: remote::EventStream,
    registry: Arc<SocketRegistry>,
    in_flight: Arc<watch::Sender<usize>>,
) {
    while let Some(event) = events.next().await {
        if let Err(e) = s.emit(event.name.as_str(), &event.payload) {
            tracing::debug!(error = %e, "emitting to a socket failed");
            break;
        }
        if event.is_end() {
            break;
        }
    }
    close(s, &registry, &in_flight).await;
}

/// The events of a session this node holds, in the shape they cross between nodes.
fn local_events(events: broadcast::Receiver<SessionEvent>) -> impl Stream<Item = WireEvent> + Send {
    futures::stream::unfold(events, |mut events| async move {
        loop {
            match events.recv().await {
                Ok(event) => {
                    let (name, payload) = event.wire();
                    return Some((WireEvent { name: name.to_owned(), payload }, events));
                }
                Err(RecvError::Lagged(n)) => tracing::warn!(skipped = n, "a slow socket missed session events"),
                Err(RecvError::Closed) => return None,
            }
        }
    })
}

/// Disconnects a socket whose session ended, once the acks of the messages it is answering are out (a
/// `terminate` sent on this socket is answered just after `end_session`).
async fn close(s: SocketRef, registry: &SocketRegistry, in_flight: &watch::Sender<usize>) {
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
    let message = webpilot_core::params::SendMessage {
        session_id: session_id.to_owned(),
        message: webpilot_core::params::Message::parse(&msg),
    };
    let call = Call::Send { message, wait: Wait::No };
    if calls::counts_toward_limit(&call, Via::Socket) && !state.rate.hit(&user.id).await.allowed {
        return Err(ApiError::code(ErrorCode::RateLimitExceeded));
    }
    let outcome = calls::execute(state, &user, call).await?;
    serde_json::to_value(outcome).map_err(|_| ApiError::code(ErrorCode::InternalError))
}
