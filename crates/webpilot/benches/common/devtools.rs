//! A sequential DevTools client for the benchmarks: attached (flat) to the first page of a browser or of a
//! session's `cdpURL`, sending one command at a time and reading until its answer.

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

pub type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub struct DevTools {
    pub ws: Ws,
    next: u64,
    /// The page's flat session id (empty until attached).
    pub session: String,
}

impl DevTools {
    /// Connects to `url` and attaches to its first page.
    pub async fn attach(url: &str) -> DevTools {
        let (ws, _) = tokio_tungstenite::connect_async(url).await.expect("connect");
        let mut c = DevTools { ws, next: 0, session: String::new() };
        let targets = c.call("Target.getTargets", json!({})).await;
        let page = targets["targetInfos"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["type"] == "page"))
            .expect("a page")
            .clone();
        let attached = c.call("Target.attachToTarget", json!({ "targetId": page["targetId"], "flatten": true })).await;
        c.session = attached["sessionId"].as_str().expect("session").to_owned();
        c
    }

    /// Sends `method` (to the page once attached); its id.
    pub async fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next += 1;
        let mut msg = json!({ "id": self.next, "method": method, "params": params });
        if !self.session.is_empty() {
            msg["sessionId"] = json!(self.session);
        }
        self.ws.send(Message::text(msg.to_string())).await.expect("send");
        self.next
    }

    /// The next message, answer or event.
    pub async fn read(&mut self) -> Value {
        let Some(Ok(Message::Text(t))) = self.ws.next().await else { panic!("the connection closed") };
        serde_json::from_str(t.as_str()).expect("JSON")
    }

    /// Sends `method` and returns its result (events meanwhile are dropped).
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params).await;
        loop {
            let v = self.read().await;
            if v["id"].as_u64() == Some(id) {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }
}
