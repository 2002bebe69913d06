//! A fake CAPTCHA solver service for tests (the one mock besides the model): answers every
//! `POST /solve` with `{"token": CHALLENGE_TOKEN}`, or with HTTP 500 while told to fail, and keeps the
//! request bodies it got.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::site::challenges::CHALLENGE_TOKEN;

#[derive(Default)]
struct Shared {
    failing: AtomicBool,
    requests: Mutex<Vec<Value>>,
}

/// A running fake solver on `127.0.0.1`; stops when dropped.
pub struct FakeSolver {
    shared: Arc<Shared>,
    port: u16,
    task: JoinHandle<()>,
}

impl FakeSolver {
    /// # Panics
    /// Panics if the loopback listener cannot be bound (a broken test environment).
    pub async fn start() -> FakeSolver {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind the fake solver");
        let port = listener.local_addr().expect("fake solver address").port();
        let shared = Arc::new(Shared::default());
        let app = Router::new().route("/solve", post(solve)).with_state(shared.clone());
        let task = webpilot_tasks::spawn_owned("fake solver", async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeSolver { shared, port, task }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:{port}/solve`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/solve", self.port)
    }

    /// From now on, answer 500 (true) or a token (false).
    pub fn set_failing(&self, failing: bool) {
        self.shared.failing.store(failing, Ordering::SeqCst);
    }

    /// The request bodies received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Drop for FakeSolver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn solve(State(shared): State<Arc<Shared>>, Json(body): Json<Value>) -> Response {
    if let Ok(mut r) = shared.requests.lock() {
        r.push(body);
    }
    if shared.failing.load(Ordering::SeqCst) {
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({ "error": "the solver failed" }))).into_response();
    }
    Json(json!({ "token": CHALLENGE_TOKEN })).into_response()
}
