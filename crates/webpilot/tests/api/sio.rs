//! A real Socket.IO client for the tests: python-socketio driven through `tests/clients/session_client.py`
//! (commands on its stdin, one JSON line per received event on its stdout). The client exits on its own
//! after a timeout, and is killed when dropped.

use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/session_client.py");

pub struct SocketClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    /// Every line received so far, in order.
    pub seen: Vec<Value>,
    /// How far `expect` has looked in `seen`.
    cursor: usize,
    next_id: u64,
}

impl SocketClient {
    /// Starts a client for `session` ("-" for no auth data) against the service at `base`; it connects
    /// with long-polling and upgrades to WebSocket, as the official clients do.
    pub fn start(base: &str, session: &str) -> SocketClient {
        SocketClient::start_over(base, session, "polling,websocket")
    }

    /// As `start`, over the given Engine.IO transports (e.g. "websocket" only).
    pub fn start_over(base: &str, session: &str, transports: &str) -> SocketClient {
        let mut child = Command::new("python3")
            .arg(SCRIPT)
            .arg(base)
            .arg(session)
            .env("WP_CLIENT_TIMEOUT", "90")
            .env("WP_CLIENT_TRANSPORTS", transports)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 with python-socketio (pip install -r crates/webpilot/tests/python-requirements.txt)");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        SocketClient { child, stdin, lines: BufReader::new(stdout).lines(), seen: Vec::new(), cursor: 0, next_id: 0 }
    }

    /// Starts a client and waits until it is connected; returns it with its socket id.
    pub async fn connect(base: &str, session: &str) -> (SocketClient, String) {
        SocketClient::connect_over(base, session, "polling,websocket").await
    }

    /// As `connect`, over the given Engine.IO transports.
    pub async fn connect_over(base: &str, session: &str, transports: &str) -> (SocketClient, String) {
        let mut c = SocketClient::start_over(base, session, transports);
        let ev = c.expect_event("connect", Duration::from_secs(15)).await;
        let sid = ev["sid"].as_str().expect("sid").to_owned();
        (c, sid)
    }

    /// Reads one more line, or None at end of output or after `limit`.
    async fn read(&mut self, limit: Duration) -> Option<Value> {
        match tokio::time::timeout(limit, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => {
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|_| json!({ "event": "raw", "line": line }));
                self.seen.push(v.clone());
                Some(v)
            }
            _ => None,
        }
    }

    /// The next line (after those already looked at) matching `pred`, waiting at most `limit`.
    pub async fn expect(&mut self, limit: Duration, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            while self.cursor < self.seen.len() {
                let v = self.seen[self.cursor].clone();
                self.cursor += 1;
                if pred(&v) {
                    return v;
                }
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() || self.read(left).await.is_none() {
                panic!("no {what} within {limit:?}; received: {:#?}", self.seen);
            }
        }
    }

    /// Makes `expect` look again from the first line received.
    pub fn rewind(&mut self) {
        self.cursor = 0;
    }

    /// The next event named `name`.
    pub async fn expect_event(&mut self, name: &str, limit: Duration) -> Value {
        self.expect(limit, name, |v| v["event"] == name).await
    }

    /// The next task event (`message`) of type `kind`; returns its payload.
    pub async fn expect_message(&mut self, kind: &str, limit: Duration) -> Value {
        let v = self.expect(limit, kind, |v| v["event"] == "message" && v["data"]["type"] == kind).await;
        v["data"].clone()
    }

    /// Emits `message` with `data` and returns the ack's payload.
    pub async fn emit(&mut self, data: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.command(json!({ "emit": "message", "data": data, "id": id })).await;
        let v = self.expect(Duration::from_secs(35), "ack", |v| v["id"] == id).await;
        assert_eq!(v["event"], "ack", "{v}");
        v["data"].clone()
    }

    pub async fn disconnect(&mut self) {
        self.command(json!({ "disconnect": true })).await;
    }

    async fn command(&mut self, cmd: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(format!("{cmd}\n").as_bytes()).await.expect("write to the client");
        stdin.flush().await.expect("flush");
    }

    /// Whether the client process has exited within `limit` (it exits after a server disconnect).
    pub async fn exited(&mut self, limit: Duration) -> bool {
        matches!(tokio::time::timeout(limit, self.child.wait()).await, Ok(Ok(_)))
    }

    /// Closes stdin (the client disconnects and exits) and waits a little for it.
    pub async fn close(mut self) {
        self.stdin.take();
        if !self.exited(Duration::from_secs(5)).await {
            let _ = self.child.kill().await;
        }
    }
}
