//! The DevTools endpoint through any node: a node that does not hold the session opens the same
//! WebSocket on the owner (path, token and `Authorization` passed on, marked as forwarded), answers the
//! client's handshake as the owner answered it (its 401 or 404 with the error body, or the upgrade), then
//! copies frames both ways until either side closes, passing the owner's close frame on.

use crate::error::ErrorResponse;
use crate::forward::FORWARDED_BY;
use crate::state::AppState;
use axum::body::Body;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message as Upstream};
use webpilot_core::{ApiError, ErrorCode};

type Owner = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens the client's DevTools connection on `owner` (`http://host:port`) and hands the client's upgrade
/// over to it; the owner's refusal is the client's.
pub(crate) async fn to_owner(state: &AppState, owner: &str, mut parts: Parts, max_message: usize) -> Response {
    let path = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let Some(ws_base) = owner.strip_prefix("http://").map(|rest| format!("ws://{rest}")) else {
        // A cluster whose nodes speak TLS to each other carries DevTools connections on the owner only.
        let msg = "this session's DevTools endpoint is reached on the node that holds it (its cdpURL)";
        return ErrorResponse(ApiError::new(ErrorCode::InstanceUnavailable, msg)).into_response();
    };
    let Ok(mut req) = format!("{ws_base}{path}").into_client_request() else {
        return ErrorResponse(ApiError::code(ErrorCode::InternalError)).into_response();
    };
    if let Some(auth) = parts.headers.get(header::AUTHORIZATION) {
        req.headers_mut().insert(header::AUTHORIZATION, auth.clone());
    }
    if let Some(me) = crate::forward::this_node(state) {
        req.headers_mut().insert(FORWARDED_BY, me);
    }
    let upstream = match tokio_tungstenite::connect_async(req).await {
        Ok((ws, _)) => ws,
        Err(tungstenite::Error::Http(refused)) => {
            let (head, body) = refused.into_parts();
            let mut response = Response::new(Body::from(body.unwrap_or_default()));
            *response.status_mut() = head.status;
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            return response;
        }
        Err(e) => {
            tracing::warn!(owner, error = %e, "opening a DevTools connection on the session's node failed");
            let msg = "the node holding this session cannot be reached; try again";
            return ErrorResponse(ApiError::new(ErrorCode::InstanceUnavailable, msg)).into_response();
        }
    };
    match WebSocketUpgrade::from_request_parts(&mut parts, state).await {
        Ok(upgrade) => upgrade
            .max_message_size(max_message)
            .max_frame_size(max_message)
            .on_upgrade(move |client| copy(client, upstream))
            .into_response(),
        Err(_) => {
            let msg = "the DevTools endpoint is a WebSocket: send an upgrade request";
            ErrorResponse(ApiError::new(ErrorCode::InvalidParams, msg)).into_response()
        }
    }
}

/// Copies frames between the client and the owner until either closes; the owner's close frame (why the
/// relay ended) reaches the client.
async fn copy(client: WebSocket, owner: Owner) {
    let (mut client_tx, mut client_rx) = client.split();
    let (mut owner_tx, mut owner_rx) = owner.split();
    loop {
        tokio::select! {
            m = client_rx.next() => {
                let out = match m {
                    Some(Ok(Message::Text(t))) => Upstream::text(t.as_str()),
                    Some(Ok(Message::Binary(b))) => Upstream::binary(b.to_vec()),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                        let _ = owner_tx.close().await;
                        return;
                    }
                };
                if owner_tx.send(out).await.is_err() {
                    break;
                }
            }
            m = owner_rx.next() => {
                let out = match m {
                    Some(Ok(Upstream::Text(t))) => Message::Text(t.as_str().into()),
                    Some(Ok(Upstream::Close(frame))) => {
                        let frame = frame.map(|f| CloseFrame { code: f.code.into(), reason: f.reason.as_str().into() });
                        let _ = client_tx.send(Message::Close(frame)).await;
                        return;
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => break,
                };
                if client_tx.send(out).await.is_err() {
                    let _ = owner_tx.close().await;
                    return;
                }
            }
        }
    }
    let frame = CloseFrame { code: 1011, reason: "the node holding this session went away".into() };
    let _ = client_tx.send(Message::Close(Some(frame))).await;
}
