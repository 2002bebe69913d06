//! The DevTools pipe bridge. Chromium speaks DevTools over two pipes (`--remote-debugging-pipe`: it reads
//! NUL-terminated JSON messages on fd 3 and writes them on fd 4) and opens no port, so no other local
//! user can reach it. chromiumoxide speaks WebSocket over TCP only, so the bridge listens on 127.0.0.1:0,
//! accepts exactly one WebSocket connection whose request path carries a random 256-bit token (compared in
//! constant time), closes the listener, and relays text frames to and from the pipes. When either side
//! ends the bridge ends: Chromium's death closes the WebSocket, which marks the browser dead.

use crate::inbox::{inbox, Inbox, InboxSender, MAX_UNREAD};
use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// Time a connection gets to complete its WebSocket handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// A running bridge: the URL to connect to (once), the task relaying messages, and the link through which
/// the process's own frame clients (`frames.rs`) share the pipe.
pub(crate) struct Bridge {
    pub url: String,
    pub task: JoinHandle<()>,
    pub link: Link,
}

/// A client's channels: commands to the browser, and its answers (counted: `inbox.rs`).
type Channels = (mpsc::UnboundedSender<String>, Inbox);
/// The bridge's side of a client: where its answers go, and its commands.
type Registration = (InboxSender, mpsc::UnboundedReceiver<String>);

/// Attaches further in-process clients to the one pipe (never over TCP: the listener is gone).
#[derive(Clone)]
pub(crate) struct Link {
    register: mpsc::UnboundedSender<Registration>,
}

impl Link {
    /// A second client: its commands get ids of their own range, its answers come back to it alone, and the
    /// sessions it attaches (and their events) are kept from chromiumoxide, as on a connection of its own.
    pub fn attach(&self) -> Option<Channels> {
        let (to_browser, from_client) = mpsc::unbounded_channel();
        let (to_client, from_browser) = inbox();
        self.register.send((to_client, from_client)).ok()?;
        Some((to_browser, from_browser))
    }
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
    let (register, registrations) = mpsc::unbounded_channel();
    let task = webpilot_tasks::spawn_owned("devtools pipe", async move {
        let Some(ws) = accept_one(listener, path).await else { return };
        relay(ws, reader, writer, registrations).await;
        tracing::debug!("the DevTools pipe bridge ended");
    });
    Ok(Bridge { url, task, link: Link { register } })
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
/// frames, and the messages of attached in-process clients (`Link`), until either side ends. Reading and
/// writing are two tasks: a large command being written never holds up what Chromium sends, and the
/// writer takes one message from each client in turn, so one client's large messages never queue in
/// front of another's.
async fn relay(
    ws: WebSocketStream<TcpStream>,
    reader: pipe::Receiver,
    writer: pipe::Sender,
    registrations: mpsc::UnboundedReceiver<Registration>,
) {
    let (ws_tx, ws_rx) = ws.split();
    let router = Arc::new(Mutex::new(Router::default()));
    let mut writing =
        webpilot_tasks::spawn_owned("pipe writer", write_commands(ws_rx, writer, registrations, router.clone()));
    tokio::select! {
        mut ws_tx = read_messages(reader, ws_tx, router) => {
            writing.abort();
            let _ = ws_tx.close().await;
        }
        _ = &mut writing => {}
    }
}

type WsSink = futures::stream::SplitSink<WebSocketStream<TcpStream>, Message>;
type WsStream = futures::stream::SplitStream<WebSocketStream<TcpStream>>;

fn lock(router: &Mutex<Router>) -> parking_lot::MutexGuard<'_, Router> {
    router.lock()
}

/// Reads the browser's messages and routes them (to chromiumoxide's WebSocket, or to their client) until
/// the pipe or the WebSocket ends; hands the WebSocket back to be closed.
async fn read_messages(mut reader: pipe::Receiver, mut ws_tx: WsSink, router: Arc<Mutex<Router>>) -> WsSink {
    let mut pending = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) => break tracing::debug!("the browser closed its DevTools pipe"),
            Err(e) => break tracing::debug!(error = %e, "reading the browser's DevTools pipe failed"),
            Ok(n) => n,
        };
        // Bytes kept from earlier reads hold no NUL: only the new ones are searched.
        let mut from = pending.len();
        pending.extend_from_slice(&buf[..n]);
        // (std's NUL search and copies: fast for large messages even in a debug build)
        while let Ok(found) = std::ffi::CStr::from_bytes_until_nul(&pending[from..]) {
            let end = from + found.to_bytes().len();
            from = 0;
            let rest = pending.split_off(end + 1);
            let mut message = std::mem::replace(&mut pending, rest);
            message.pop();
            let Ok(text) = String::from_utf8(message) else {
                tracing::warn!("the browser sent a DevTools message that is not UTF-8");
                continue;
            };
            // Queued, and flushed once per read: a burst of events costs one write.
            let own = lock(&router).route(text);
            if let Some(text) = own {
                if ws_tx.feed(Message::text(text)).await.is_err() {
                    return ws_tx;
                }
            }
        }
        if ws_tx.flush().await.is_err() {
            break;
        }
        // A browser sending without pause (one client's flood of large answers) does not keep the other
        // tasks of the runtime waiting.
        tokio::task::yield_now().await;
    }
    ws_tx
}

/// A client's commands as a stream, ended by one `None` once the client is gone.
fn commands_of(
    index: usize,
    mut from_client: mpsc::UnboundedReceiver<String>,
) -> impl futures::Stream<Item = (usize, Option<String>)> + Send {
    futures::stream::poll_fn(move |cx| from_client.poll_recv(cx))
        .map(move |m| (index, Some(m)))
        .chain(futures::stream::once(async move { (index, None) }))
}

/// Writes chromiumoxide's commands and the attached clients' to the pipe, one client's message at a time
/// in turn (`SelectAll` polls the clients round-robin), until the WebSocket or the pipe ends.
async fn write_commands(
    mut ws_rx: WsStream,
    mut writer: pipe::Sender,
    mut registrations: mpsc::UnboundedReceiver<Registration>,
    router: Arc<Mutex<Router>>,
) {
    let mut clients = futures::stream::SelectAll::new();
    loop {
        let outgoing = tokio::select! {
            msg = ws_rx.next() => match msg {
                Some(Ok(Message::Text(t))) => t.as_bytes().to_vec(),
                Some(Ok(Message::Binary(b))) => b.to_vec(),
                Some(Ok(Message::Close(_))) | None => break tracing::debug!("the DevTools client went away"),
                Some(Ok(_)) => continue,
                Some(Err(e)) => break tracing::debug!(error = %e, "the DevTools client connection failed"),
            },
            Some((to_client, from_client)) = registrations.recv() => {
                let index = {
                    let mut router = lock(&router);
                    router.clients.push(Some(to_client));
                    router.clients.len() - 1
                };
                clients.push(Box::pin(commands_of(index, from_client)));
                continue;
            },
            Some((index, text)) = clients.next(), if !clients.is_empty() => {
                let mut router = lock(&router);
                match text.and_then(|text| router.command_of(index, text)) {
                    Some(text) => text.into_bytes(),
                    None => {
                        // The client is gone: its sessions are forgotten (their events go nowhere).
                        router.forget_if_gone(index);
                        continue;
                    }
                }
            },
        };
        if let Err(e) = writer.write_all(&outgoing).await.and(writer.write_all(&[0]).await) {
            tracing::debug!(error = %e, "writing to the browser's DevTools pipe failed");
            break;
        }
    }
}

/// Ids from here on are commands of attached clients (chromiumoxide counts its own from 0; Chromium takes
/// ids that fit in 32 bits).
const CLIENT_IDS: u64 = 1 << 30;

/// Which messages from the browser belong to an attached client rather than to chromiumoxide.
#[derive(Default)]
struct Router {
    /// Attached clients by index; none once a client went away.
    clients: Vec<Option<InboxSender>>,
    /// Bridge id -> (client, the client's own id, whether the answer attaches a session).
    calls: HashMap<u64, (usize, Value, bool)>,
    next: u64,
    /// Sessions attached by a client, and the sessions attached under those: neither they nor their events
    /// are chromiumoxide's; their events go to the client.
    sessions: HashMap<String, usize>,
    /// Targets a client is attaching to (the `Target.attachedToTarget` event names its session).
    attaching: HashMap<String, usize>,
}

impl Router {
    /// A client's command, with an id of the bridge's range. The id is rewritten in the text when it comes
    /// first (as the relay and frame clients write it), so a large command is not parsed again here.
    fn command_of(&mut self, index: usize, text: String) -> Option<String> {
        let id = CLIENT_IDS + self.next;
        let (own, rest) = match leading_id(&text) {
            Some((own, rest)) if !rest.starts_with(",\"method\":\"Target.attach") => (own, rest),
            _ => return self.parsed_command_of(index, &text, id),
        };
        self.next = (self.next + 1) % CLIENT_IDS;
        self.calls.insert(id, (index, Value::from(own), false));
        Some(format!("{{\"id\":{id}{rest}"))
    }

    fn parsed_command_of(&mut self, index: usize, text: &str, id: u64) -> Option<String> {
        let mut v: Value = serde_json::from_str(text).ok()?;
        let own = v.get("id").cloned()?;
        self.next = (self.next + 1) % CLIENT_IDS;
        let method = v["method"].as_str().unwrap_or_default();
        let attaches = matches!(method, "Target.attachToTarget" | "Target.attachToBrowserTarget");
        self.calls.insert(id, (index, own, attaches));
        if method == "Target.attachToTarget" && v.get("sessionId").is_none() {
            if let Some(target) = v.pointer("/params/targetId").and_then(Value::as_str) {
                self.attaching.insert(target.to_owned(), index);
            }
        }
        v["id"] = Value::from(id);
        Some(v.to_string())
    }

    /// Forgets client `index` once its channel is closed: its calls and pending attaches. Its sessions stay
    /// mapped to it until Chromium reports them detached, so their last events are dropped rather than
    /// handed to chromiumoxide.
    fn forget_if_gone(&mut self, index: usize) {
        let gone = match self.clients.get(index) {
            Some(Some(tx)) => tx.is_closed(),
            _ => true,
        };
        if gone {
            if let Some(slot) = self.clients.get_mut(index) {
                *slot = None;
            }
            self.attaching.retain(|_, i| *i != index);
            self.calls.retain(|_, (i, _, _)| *i != index);
        }
    }

    /// Hands `text` to client `index`. A client that is gone, or that fell `MAX_UNREAD` bytes behind, is
    /// forgotten: the bridge never waits on a client, and never keeps its backlog.
    fn send_to(&mut self, index: usize, text: String) {
        let sent = match self.clients.get(index) {
            Some(Some(tx)) => tx.send(text),
            _ => false,
        };
        if sent {
            return;
        }
        if let Some(slot @ Some(_)) = self.clients.get_mut(index) {
            if slot.as_ref().is_some_and(|tx| !tx.is_closed()) {
                tracing::warn!(limit = MAX_UNREAD, "a DevTools client fell too far behind the browser; it is dropped");
            }
            // Its inbox ends once the client has read what it holds.
            *slot = None;
        }
        self.forget_if_gone(index);
    }

    /// A message from the browser: returned when it is chromiumoxide's, else handed to its client (answers,
    /// and events of the client's sessions).
    fn route(&mut self, text: String) -> Option<String> {
        if self.clients.is_empty() {
            return Some(text);
        }
        if let Some((id, rest)) = leading_id(&text) {
            if id < CLIENT_IDS {
                return Some(text);
            }
            let (index, own, attaches) = self.calls.remove(&id)?;
            if attaches {
                let v: Value = serde_json::from_str(&text).ok()?;
                if let Some(session) = v.pointer("/result/sessionId").and_then(Value::as_str) {
                    self.sessions.insert(session.to_owned(), index);
                }
            }
            // The answer as Chromium wrote it, with the client's id: a large one is not parsed here.
            let answer = format!("{{\"id\":{own}{rest}");
            self.send_to(index, answer);
            return None;
        }
        if self.sessions.is_empty() && self.attaching.is_empty() {
            return Some(text);
        }
        if text.contains("\"Target.attachedToTarget\"") || text.contains("\"Target.detachedFromTarget\"") {
            let v: Value = serde_json::from_str(&text).ok()?;
            let owner = v.get("sessionId").and_then(Value::as_str).and_then(|s| self.sessions.get(s).copied());
            let child = v.pointer("/params/sessionId").and_then(Value::as_str).unwrap_or_default().to_owned();
            let attached = v["method"] == "Target.attachedToTarget";
            match owner {
                // A session attached under a client's session (an iframe, a worker, a tab's page) is the
                // client's too.
                Some(index) if attached => {
                    self.sessions.insert(child, index);
                }
                Some(_) => {
                    self.sessions.remove(&child);
                }
                None if v.get("sessionId").is_none() => {
                    if let Some(target) = v.pointer("/params/targetInfo/targetId").and_then(Value::as_str) {
                        if let Some(index) = self.attaching.remove(target) {
                            self.sessions.insert(child, index);
                            return None;
                        }
                    }
                    if !attached {
                        if let Some(index) = self.sessions.remove(&child) {
                            self.send_to(index, text);
                            return None;
                        }
                    }
                }
                None => {}
            }
            return match owner {
                Some(index) => {
                    self.send_to(index, text);
                    None
                }
                None => Some(text),
            };
        }
        // Chromium writes an event's own session last.
        let session = text.rfind("\"sessionId\":\"").map(|at| &text[at + 13..]).and_then(|s| s.split('"').next());
        let owner = session.and_then(|s| self.sessions.get(s).copied());
        match owner {
            Some(index) => {
                self.send_to(index, text);
                None
            }
            None => Some(text),
        }
    }
}

/// A message's id when it is its first member (`{"id":N...`), and the text after the id.
pub(crate) fn leading_id(text: &str) -> Option<(u64, &str)> {
    let rest = text.strip_prefix("{\"id\":")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let id = rest.get(..digits)?.parse().ok()?;
    Some((id, rest.get(digits..)?))
}

#[cfg(test)]
#[path = "pipe_tests.rs"]
mod tests;
