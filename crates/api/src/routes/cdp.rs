//! The DevTools endpoint of a session: `GET /cdp/{id}` upgrades to a WebSocket that Playwright's
//! `connect_over_cdp`, Puppeteer's `connect` or any CDP client speaks to as to a browser whose only context
//! is the session's (the relay is reached through `webpilot_sessions::devtools`). `GET
//! /cdp/{id}/json/version` answers the usual discovery JSON. Both take the session's `cdp` token
//! (`?token=`, from `cdpURL`) or the owner's API key (`Authorization: Bearer`); every other caller gets 401
//! at the handshake. The token is never logged.

use crate::connections::devtools::{Slot, MAX_CONNECTIONS_PER_SESSION};
use crate::error::{ErrorBody, ErrorResponse};
use crate::openapi::DEVTOOLS;
use crate::path::Path;
use crate::query::Query;
use crate::state::AppState;
use crate::stream_token::Scope;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use webpilot_core::{ApiError, ErrorCode};
use webpilot_sessions::devtools::{self as relay, Devtools, RelayEnd};

/// The largest message a client may send (bigger ones close the connection with 1009).
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// How long a closing connection waits for the client to take what is left and the close frame.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CdpQuery {
    /// The session's `cdp` token (in `cdpURL`); or send the owner's API key as `Authorization: Bearer`.
    token: Option<String>,
}

/// How the caller proved it may drive the session: the `cdp` token (kept for the discovery URL), or the
/// owner's API key.
enum Proof {
    Token(String),
    OwnerKey,
}

/// The caller's right to the DevTools endpoint of `session_id`: its `cdp` token, else the session owner's
/// API key. Stream and socket tokens are not `cdp` tokens: 401, as for every other caller.
async fn authorize(
    state: &AppState,
    session_id: &str,
    token: Option<&str>,
    parts: &mut Parts,
) -> Result<Proof, ErrorResponse> {
    let refused =
        || ApiError::new(ErrorCode::Unauthorized, "the DevTools endpoint needs its cdp token or the owner's API key");
    if let Some(token) = token {
        let scope = state.stream_key.check(session_id, token, chrono::Utc::now().timestamp());
        if scope != Ok(Scope::Devtools) {
            return Err(refused().into());
        }
        if let Ok(owner) = state.manager.owner(session_id).await {
            if !owner.is_active() {
                return Err(ApiError::code(ErrorCode::AccountDeactivated).into());
            }
        }
        return Ok(Proof::Token(token.to_owned()));
    }
    if !parts.headers.contains_key(axum::http::header::AUTHORIZATION) {
        return Err(refused().into());
    }
    let crate::auth::AuthUser(user) = crate::auth::AuthUser::from_request_parts(parts, state).await?;
    match state.manager.owns_session(&user.id, session_id) {
        true => Ok(Proof::OwnerKey),
        false => Err(refused().into()),
    }
}

/// The session's DevTools side on this node, or 404.
fn devtools_of(state: &AppState, session_id: &str) -> Result<Devtools, ErrorResponse> {
    let devtools = Devtools::of(&state.manager, session_id)
        .ok_or_else(|| ApiError::new(ErrorCode::SessionNotFound, "the session has ended"))?;
    Ok(devtools)
}

/// The session's DevTools endpoint: a WebSocket (upgrade) speaking the Chrome DevTools Protocol, scoped
/// to the session's browser context (docs/cdp.md). Through any node.
#[utoipa::path(get, path = "/cdp/{sessionId}", operation_id = "connectDevtools", tag = DEVTOOLS, security((), ("apiKey" = [])),
    params(("sessionId" = String, Path), CdpQuery),
    responses(
        (status = 101, description = "Switching to the WebSocket"),
        (status = 400, description = "`INVALID_PARAMS` (not a WebSocket upgrade, a malformed query string)", body = ErrorBody),
        (status = 401, description = "`UNAUTHORIZED`: no `cdp` token or owner's API key (stream, socket and other sessions' tokens included), `INVALID_API_KEY`, `API_KEY_EXPIRED`", body = ErrorBody),
        (status = 403, description = "`ACCOUNT_DEACTIVATED`", body = ErrorBody),
        (status = 404, description = "`SESSION_NOT_FOUND` (ended)", body = ErrorBody),
        (status = 429, description = "`SESSION_LIMIT_REACHED` (4 connections per session)", body = ErrorBody),
        (status = 500, description = "`INTERNAL_ERROR`", body = ErrorBody),
        (status = 503, description = "`INSTANCE_UNAVAILABLE` (the session's node cannot be reached)", body = ErrorBody),
    ))]
pub async fn connect(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    Query(q): Query<CdpQuery>,
    mut parts: Parts,
) -> Result<Response, ErrorResponse> {
    if !parts.headers.contains_key(crate::forward::FORWARDED_BY) {
        if let Some(owner) = crate::forward::owner_elsewhere(&state, &session_id).await {
            return Ok(crate::cdp_forward::to_owner(&state, &owner, parts, MAX_MESSAGE_BYTES).await);
        }
    }
    authorize(&state, &session_id, q.token.as_deref(), &mut parts).await?;
    let upgrade = WebSocketUpgrade::from_request_parts(&mut parts, &state).await.map_err(|_| {
        ApiError::new(ErrorCode::InvalidParams, "the DevTools endpoint is a WebSocket: send an upgrade request")
    })?;
    let devtools = devtools_of(&state, &session_id)?;
    let slot = state.cdp.take(&session_id).ok_or_else(|| {
        let msg = format!("a session may have {MAX_CONNECTIONS_PER_SESSION} DevTools connections at once");
        ApiError::new(ErrorCode::SessionLimitReached, msg)
    })?;
    let upgrade = upgrade.max_message_size(MAX_MESSAGE_BYTES).max_frame_size(MAX_MESSAGE_BYTES);
    Ok(upgrade
        .on_upgrade(move |socket| async move {
            let (all, manager) = (state.cdp.clone(), state.manager.clone());
            manager.announce_devtools(&session_id, all.count(&session_id));
            serve(socket, devtools, slot).await;
            manager.announce_devtools(&session_id, all.count(&session_id));
        })
        .into_response())
}

/// Pumps the socket to and from the relay through byte-bounded queues (`CONNECTION_BUDGET` each way):
/// the socket is not read while the client's messages fill its queue to the relay, and a client that does
/// not read what the relay sends it is closed with 1008 once its queue is full. Closes the socket with a
/// close frame saying why the relay ended.
async fn serve(socket: WebSocket, devtools: Devtools, _slot: Slot) {
    let (to_relay, from_client) = relay::queue(relay::CONNECTION_BUDGET);
    let (to_client, mut from_relay) = relay::queue(relay::CONNECTION_BUDGET);
    let mut relay = webpilot_tasks::spawn_owned("devtools relay", devtools.relay(from_client, to_client));
    let mut relay_end = None;
    let (mut sink, mut stream) = socket.split();
    let mut refused: Option<(u16, &'static str)> = None;
    // A message read from the client, waiting for room in the queue to the relay.
    let mut held: Option<String> = None;
    loop {
        let wanted = held.as_ref().map_or(0, String::len);
        tokio::select! {
            room = to_relay.reserve(wanted), if held.is_some() => {
                let sent = room.and_then(|room| room.send(held.take().unwrap_or_default()));
                if sent.is_err() {
                    break;
                }
            }
            msg = stream.next(), if held.is_none() => match msg {
                Some(Ok(Message::Text(text))) => held = Some(text.as_str().to_owned()),
                Some(Ok(Message::Binary(_))) => {
                    refused = Some((1003, "DevTools messages are text frames"));
                    break;
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_))) | None => break,
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "a DevTools client's connection failed");
                    refused = Some((1009, "the message is too big or malformed"));
                    break;
                }
            },
            out = from_relay.recv() => match out {
                Some(queued) => {
                    // Its bytes stay counted until written; a client that does not read holds this write
                    // until the relay finds its queue full and ends.
                    let (text, _charge) = queued.into_parts();
                    let mut send = std::pin::pin!(sink.send(Message::Text(text.into())));
                    let sent = tokio::select! {
                        biased;
                        sent = &mut send => sent,
                        end = &mut relay, if relay_end.is_none() => {
                            let too_slow = matches!(end, Ok(Ok(RelayEnd::ClientTooSlow)));
                            relay_end = Some(end);
                            if too_slow {
                                break;
                            }
                            // The relay ended otherwise: what it said still goes out.
                            send.await
                        }
                    };
                    if sent.is_err() {
                        break;
                    }
                }
                None => break,
            },
        }
    }
    drop(to_relay);
    let end = match relay_end {
        Some(end) => end,
        None => relay.await,
    };
    let (code, reason) = match refused {
        Some(r) => r,
        None => match end {
            Ok(Ok(RelayEnd::SessionEnded)) => (1001, "the session ended"),
            Ok(Ok(RelayEnd::ClientClosedBrowser)) => (1000, "Browser.close ends this connection; the session lives on"),
            Ok(Ok(RelayEnd::ClientLeft)) => (1000, ""),
            Ok(Ok(RelayEnd::ClientTooSlow)) => (1008, "the client did not read its messages (64 MiB waited for it)"),
            Ok(Ok(RelayEnd::BrowserGone)) | Ok(Err(_)) | Err(_) => (1011, "the session's browser is gone"),
        },
    };
    let close = async {
        // Whatever the relay still had to say goes out before the close frame, unless the client was not
        // reading it.
        if code != 1008 {
            while let Some(queued) = from_relay.try_recv() {
                let _ = sink.send(Message::Text(queued.text.into())).await;
            }
        }
        drop(from_relay);
        let frame = CloseFrame { code, reason: reason.into() };
        let _ = sink.send(Message::Close(Some(frame))).await;
    };
    // A client that never reads never takes the close frame either: its socket is dropped after a while.
    if tokio::time::timeout(CLOSE_WAIT, close).await.is_err() {
        tracing::debug!(code, "a DevTools client did not take its close frame");
    }
    tracing::debug!(code, "a DevTools connection closed");
}

/// Chromium's discovery JSON, its `webSocketDebuggerUrl` pointing back at the relay (also at
/// `/json/version/`).
#[utoipa::path(get, path = "/cdp/{sessionId}/json/version", operation_id = "devtoolsVersion", tag = DEVTOOLS, security((), ("apiKey" = [])),
    params(("sessionId" = String, Path), CdpQuery),
    responses(
        (status = 200, description = "`Browser`, `Protocol-Version`, `User-Agent`, `V8-Version`, `WebKit-Version`, `webSocketDebuggerUrl`", body = Object),
        (status = 400, description = "`INVALID_PARAMS` (a malformed query string: a repeated or unreadable parameter)", body = ErrorBody),
        (status = 401, description = "`UNAUTHORIZED`: no `cdp` token or owner's API key (stream, socket and other sessions' tokens included), `INVALID_API_KEY`, `API_KEY_EXPIRED`", body = ErrorBody),
        (status = 403, description = "`ACCOUNT_DEACTIVATED`", body = ErrorBody),
        (status = 404, description = "`SESSION_NOT_FOUND` (ended)", body = ErrorBody),
        (status = 500, description = "`INTERNAL_ERROR`", body = ErrorBody),
        (status = 503, description = "`INSTANCE_UNAVAILABLE`", body = ErrorBody),
    ))]
pub async fn version(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    Query(q): Query<CdpQuery>,
    mut parts: Parts,
) -> Result<Json<serde_json::Value>, ErrorResponse> {
    let proof = authorize(&state, &session_id, q.token.as_deref(), &mut parts).await?;
    let mut body = devtools_of(&state, &session_id)?.version().await?;
    let token = match proof {
        Proof::Token(t) => Some(t),
        Proof::OwnerKey => None,
    };
    body["webSocketDebuggerUrl"] =
        serde_json::Value::from(crate::views::cdp_url(&state.config, &session_id, token.as_deref()));
    Ok(Json(body))
}
