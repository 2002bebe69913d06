//! The DevTools pipe bridge. Chromium speaks DevTools over two pipes (`--remote-debugging-pipe`: it reads
//! NUL-terminated JSON messages on fd 3 and writes them on fd 4) and opens no port, so no other local
//! user can reach it. chromiumoxide speaks WebSocket over TCP only, so the bridge listens on 127.0.0.1:0,
//! accepts exactly one WebSocket connection whose request path carries a random 256-bit token (compared in
//! constant time), closes the listener, and relays text frames to and from the pipes. When either side
//! ends the bridge ends: Chromium's death closes the WebSocket, which marks the browser dead.

use futures::{SinkExt, StreamExt};
use std::os::fd::OwnedFd;
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// Time a connection gets to complete its WebSocket handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// A running bridge: the URL to connect to (once) and the task relaying messages.
pub(crate) struct Bridge {
    pub url: String,
    pub task: JoinHandle<()>,
}

/// Starts a bridge over Chromium's pipes: `to_browser` is the write end of the pipe Chromium reads as fd 3,
/// `from_browser` the read end of the one it writes as fd 4.
pub(crate) async fn start(to_browser: OwnedFd, from_browser: OwnedFd) -> std::io::Result<Bridge> {
    let writer = pipe::Sender::from_owned_fd(to_browser)?;
    let reader = pipe::Receiver::from_owned_fd(from_browser)?;
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let port = listener.local_addr()?.port();
    let token = hex::encode(rand::random::<[u8; 32]>());
    let path = format!("/devtools/browser/{token}");
    let url = format!("ws://127.0.0.1:{port}{path}");
    let task = tokio::spawn(async move {
        let Some(ws) = accept_one(listener, path).await else { return };
        relay(ws, reader, writer).await;
        tracing::debug!("the DevTools pipe bridge ended");
    });
    Ok(Bridge { url, task })
}

/// Accepts connections until one completes a WebSocket handshake on `path`; every other is refused. The
/// listener is closed when this returns.
async fn accept_one(listener: TcpListener, path: String) -> Option<WebSocketStream<TcpStream>> {
    let mut handshakes = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let path = path.clone();
                    handshakes.spawn(async move {
                        tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(stream, path)).await.ok().flatten()
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the DevTools bridge could not accept");
                    return None;
                }
            },
            Some(done) = handshakes.join_next() => {
                if let Ok(Some(ws)) = done {
                    return Some(ws);
                }
            }
        }
    }
}

/// The WebSocket handshake, refused with 403 unless the request path is exactly `path`.
#[allow(clippy::result_large_err)] // the callback's signature is tungstenite's
async fn handshake(stream: TcpStream, path: String) -> Option<WebSocketStream<TcpStream>> {
    let check = move |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        if bool::from(req.uri().path().as_bytes().ct_eq(path.as_bytes())) {
            return Ok(resp);
        }
        let mut refused = ErrorResponse::new(None);
        *refused.status_mut() = StatusCode::FORBIDDEN;
        Err(refused)
    };
    match tokio_tungstenite::accept_hdr_async(stream, check).await {
        Ok(ws) => Some(ws),
        Err(e) => {
            tracing::warn!(error = %e, "the DevTools bridge refused a connection");
            None
        }
    }
}

/// Relays WebSocket text frames to the pipe (each message NUL-terminated) and pipe messages back as text
/// frames, until either side ends.
async fn relay(ws: WebSocketStream<TcpStream>, mut reader: pipe::Receiver, mut writer: pipe::Sender) {
    let (mut ws_tx, mut ws_rx) = ws.split();
    let to_browser = async {
        while let Some(msg) = ws_rx.next().await {
            let msg = match msg {
                Ok(m) => m,
                Err(e) => {
                    tracing::debug!(error = %e, "the DevTools client connection failed");
                    break;
                }
            };
            let bytes = match msg {
                Message::Text(t) => t.as_bytes().to_vec(),
                Message::Binary(b) => b.to_vec(),
                Message::Close(_) => break,
                _ => continue,
            };
            if let Err(e) = writer.write_all(&bytes).await.and(writer.write_all(&[0]).await) {
                tracing::debug!(error = %e, "writing to the browser's DevTools pipe failed");
                break;
            }
        }
        tracing::debug!("the DevTools client went away");
    };
    let from_browser = async {
        let mut pending = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match reader.read(&mut buf).await {
                Ok(0) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "reading the browser's DevTools pipe failed");
                    break;
                }
                Ok(n) => n,
            };
            // Bytes kept from earlier reads hold no NUL: only the new ones are searched.
            let mut from = pending.len();
            pending.extend_from_slice(&buf[..n]);
            while let Some(at) = pending[from..].iter().position(|b| *b == 0) {
                let end = from + at;
                from = 0;
                let message: Vec<u8> = pending.drain(..=end).take(end).collect();
                let Ok(text) = String::from_utf8(message) else {
                    tracing::warn!("the browser sent a DevTools message that is not UTF-8");
                    continue;
                };
                // Queued, and flushed once per read: a burst of events costs one write.
                if ws_tx.feed(Message::text(text)).await.is_err() {
                    return;
                }
            }
            if ws_tx.flush().await.is_err() {
                return;
            }
        }
        tracing::debug!("the browser closed its DevTools pipe");
        let _ = ws_tx.close().await;
    };
    tokio::select! {
        () = to_browser => {}
        () = from_browser => {}
    }
}

#[cfg(test)]
mod tests {
    use super::start;
    use futures::{SinkExt, StreamExt};
    use std::os::fd::OwnedFd;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_tungstenite::tungstenite::Message;

    #[tokio::test]
    async fn only_one_connection_with_the_token_is_bridged_and_messages_cross_both_ways() {
        // The "browser" side: it reads what the bridge writes to fd 3 and writes what it sends on fd 4.
        let (browser_reads, to_browser) = std::io::pipe().expect("pipe");
        let (from_browser, browser_writes) = std::io::pipe().expect("pipe");
        let bridge = start(OwnedFd::from(to_browser), OwnedFd::from(from_browser)).await.expect("bridge");
        let (prefix, _token) = bridge.url.rsplit_once('/').expect("a token in the path");
        let wrong = format!("{prefix}/{}", "0".repeat(64));
        assert!(tokio_tungstenite::connect_async(&wrong).await.is_err(), "a wrong token is refused");
        let (mut ws, _) = tokio_tungstenite::connect_async(&bridge.url).await.expect("the service connects");
        let port = bridge.url.split(':').nth(2).and_then(|p| p.split('/').next()).expect("port").to_owned();
        let refused = tokio::net::TcpStream::connect(format!("127.0.0.1:{port}")).await;
        assert!(refused.is_err(), "the listener is closed once the service is connected");

        ws.send(Message::text(r#"{"id":1}"#)).await.expect("send");
        let mut reader = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(browser_reads)).expect("rx");
        let mut got = vec![0u8; 9];
        reader.read_exact(&mut got).await.expect("read");
        assert_eq!(got, b"{\"id\":1}\0");
        let mut writer = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(browser_writes)).expect("tx");
        writer.write_all(b"{\"id\":1,\"result\":{}}\0{\"method\":").await.expect("write");
        writer.write_all(b"\"x\"}\0").await.expect("write");
        let first = ws.next().await.expect("a message").expect("ok");
        assert_eq!(first.into_text().expect("text").as_str(), r#"{"id":1,"result":{}}"#);
        let second = ws.next().await.expect("a message").expect("ok");
        assert_eq!(second.into_text().expect("text").as_str(), r#"{"method":"x"}"#);
        // The browser going away ends the bridge and closes the client's connection.
        drop(writer);
        while let Some(Ok(m)) = ws.next().await {
            assert!(m.is_close(), "{m:?}");
        }
        bridge.task.await.expect("the bridge ends");
    }
}
