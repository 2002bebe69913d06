//! A bare DevTools client for the tests: JSON commands over the relay's WebSocket, their answers, and the
//! events that came meanwhile (kept for the test to read).

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Bounds a wait that only a broken relay would exceed.
const LIMIT: Duration = Duration::from_secs(20);

pub struct Cdp {
    ws: Ws,
    next: u64,
    pub events: Vec<Value>,
    /// How long a read may wait (20 s unless a test changes it).
    pub limit: Duration,
}

/// A refused handshake: its status and body.
#[derive(Debug)]
pub struct Refused {
    pub status: u16,
    pub body: Value,
}

impl Cdp {
    pub async fn connect(url: &str) -> Cdp {
        Self::try_connect(url, None).await.unwrap_or_else(|r| panic!("the relay refused {url}: {r:?}"))
    }

    /// Connects, with `Authorization: Bearer <key>` when given.
    pub async fn try_connect(url: &str, key: Option<&str>) -> Result<Cdp, Refused> {
        let mut req = url.into_client_request().expect("a WebSocket URL");
        if let Some(k) = key {
            req.headers_mut().insert("authorization", HeaderValue::from_str(&format!("Bearer {k}")).expect("header"));
        }
        match tokio::time::timeout(LIMIT, tokio_tungstenite::connect_async(req)).await.expect("handshake in time") {
            Ok((ws, _)) => Ok(Cdp { ws, next: 0, events: Vec::new(), limit: LIMIT }),
            Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
                let body = resp.body().as_ref().map(|b| serde_json::from_slice(b).unwrap_or(Value::Null));
                Err(Refused { status: resp.status().as_u16(), body: body.unwrap_or(Value::Null) })
            }
            Err(e) => panic!("the handshake failed: {e}"),
        }
    }

    /// Sends a raw text frame.
    pub async fn send_text(&mut self, text: String) {
        self.ws.send(Message::text(text)).await.expect("send");
    }

    /// Sends a raw binary frame.
    pub async fn send_binary(&mut self, bytes: Vec<u8>) {
        self.ws.send(Message::binary(bytes)).await.expect("send");
    }

    /// A command at browser level: its result, or its error message.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.command(None, method, params).await
    }

    /// A command in a session the client attached.
    pub async fn call_in(&mut self, session: &str, method: &str, params: Value) -> Result<Value, String> {
        self.command(Some(session), method, params).await
    }

    /// Sends a raw text frame; false once the connection is closed or failed.
    pub async fn try_send_text(&mut self, text: String) -> bool {
        self.ws.send(Message::text(text)).await.is_ok()
    }

    /// Sends a command without waiting for its answer (read it with [`Cdp::answer`]): its id.
    pub async fn send_command(&mut self, session: Option<&str>, method: &str, params: Value) -> u64 {
        self.next += 1;
        let mut msg = json!({ "id": self.next, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.send_text(msg.to_string()).await;
        self.next
    }

    async fn command(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<Value, String> {
        let id = self.send_command(session, method, params).await;
        self.answer(id, method).await
    }

    /// The answer to command `id` (`method` names it in a failure): its result, or its error message.
    pub async fn answer(&mut self, id: u64, method: &str) -> Result<Value, String> {
        if let Some(at) = self.events.iter().position(|v| v.get("id").and_then(Value::as_u64) == Some(id)) {
            let v = self.events.remove(at);
            return match v.get("error") {
                Some(e) => Err(e["message"].as_str().unwrap_or_default().to_owned()),
                None => Ok(v["result"].clone()),
            };
        }
        loop {
            let v = self.read().await.unwrap_or_else(|| panic!("the relay closed during {method}"));
            if v.get("id").and_then(Value::as_u64) == Some(id) {
                return match v.get("error") {
                    Some(e) => Err(e["message"].as_str().unwrap_or_default().to_owned()),
                    None => Ok(v["result"].clone()),
                };
            }
            self.events.push(v);
        }
    }

    /// The next message, or none once the connection closed.
    async fn read(&mut self) -> Option<Value> {
        loop {
            match tokio::time::timeout(self.limit, self.ws.next()).await.expect("a message in time") {
                Some(Ok(Message::Text(t))) => return Some(serde_json::from_str(t.as_str()).expect("JSON")),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return None,
                Some(Ok(_)) => {}
            }
        }
    }

    /// Waits for the relay's close frame, dropping what comes before it unread, at most `limit`.
    pub async fn close_discarding(&mut self, limit: Duration) -> Option<CloseFrame> {
        let wait = async {
            loop {
                match self.ws.next().await {
                    Some(Ok(Message::Close(frame))) => return frame,
                    Some(Ok(_)) => {}
                    None | Some(Err(_)) => return None,
                }
            }
        };
        tokio::time::timeout(limit, wait).await.expect("the relay closed the connection in time")
    }

    /// Waits for the relay's close frame (events before it are kept), at most `limit`.
    pub async fn closed_within(&mut self, limit: Duration) -> Option<CloseFrame> {
        let wait = async {
            loop {
                match self.ws.next().await {
                    Some(Ok(Message::Close(frame))) => return frame,
                    Some(Ok(Message::Text(t))) => self.events.push(serde_json::from_str(t.as_str()).expect("JSON")),
                    Some(Ok(_)) => {}
                    None | Some(Err(_)) => return None,
                }
            }
        };
        tokio::time::timeout(limit, wait).await.expect("the relay closed the connection in time")
    }

    /// The context's targets of `kind` (`page`, …) as the relay lists them.
    pub async fn targets(&mut self, kind: &str) -> Vec<Value> {
        let all = self.call("Target.getTargets", json!({})).await.expect("getTargets");
        all["targetInfos"].as_array().expect("targetInfos").iter().filter(|t| t["type"] == kind).cloned().collect()
    }

    /// Attaches to the first page (flattened): its target id and session.
    pub async fn attach_page(&mut self) -> (String, String) {
        let page = self.targets("page").await.into_iter().next().expect("a page");
        let target = page["targetId"].as_str().expect("targetId").to_owned();
        let attached =
            self.call("Target.attachToTarget", json!({ "targetId": target, "flatten": true })).await.expect("attach");
        (target, attached["sessionId"].as_str().expect("sessionId").to_owned())
    }

    /// Evaluates `expression` in an attached page session.
    pub async fn eval(&mut self, session: &str, expression: &str) -> Value {
        let params = json!({ "expression": expression, "returnByValue": true, "awaitPromise": true });
        let r = self.call_in(session, "Runtime.evaluate", params).await.expect("evaluate");
        r["result"]["value"].clone()
    }

    /// Navigates an attached page and waits for its load event (the document is the new one after this).
    pub async fn navigate(&mut self, session: &str, url: &str) -> Result<Value, String> {
        self.call_in(session, "Page.enable", json!({})).await.expect("Page.enable");
        self.events.clear();
        let r = self.call_in(session, "Page.navigate", json!({ "url": url })).await?;
        self.event(session, "Page.loadEventFired").await;
        Ok(r)
    }

    /// Waits for event `method` of `session` (or of the browser, when `session` is empty).
    pub async fn event(&mut self, session: &str, method: &str) -> Value {
        let wanted = |v: &Value| v["method"] == method && v["sessionId"].as_str().unwrap_or_default() == session;
        if let Some(at) = self.events.iter().position(wanted) {
            return self.events.remove(at);
        }
        loop {
            let v = self.read().await.unwrap_or_else(|| panic!("the relay closed while waiting for {method}"));
            if wanted(&v) {
                return v;
            }
            self.events.push(v);
        }
    }
}
