//! Webhook deliveries are fair between users: one user's ten receivers that never answer take at most that
//! user's share of a node's delivery slots, and another user's delivery goes out while they hang.

use crate::helpers::*;
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// An HTTP receiver on loopback: reports each request's path as it arrives, and answers 204 at once, or
/// never (`hang`) while the test lasts.
async fn receiver(hang: bool) -> (u16, mpsc::UnboundedReceiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                // The request line and headers are enough to know which endpoint was called.
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&seen).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or_default().to_owned();
                let _ = tx.send(path);
                if hang {
                    // Held open until the test ends (the worker's own timeout is longer than the test).
                    std::future::pending::<()>().await;
                }
                let _ = conn.write_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n").await;
            });
        }
    });
    (port, rx)
}

#[tokio::test]
async fn one_users_hanging_receivers_never_hold_up_another_users_delivery() {
    let (slow_port, mut slow) = receiver(true).await;
    let (fast_port, mut fast) = receiver(false).await;
    let app = TestApp::spawn_with(|s| {
        let site = s.args[s.args.iter().position(|a| a == "--egress-allow").expect("allow") + 1].clone();
        s.arg("egress-allow", format!("{site},127.0.0.1:{slow_port},127.0.0.1:{fast_port}"))
    })
    .await;
    let (hog, hog_key) = app.user(1.0).await;
    let (other, other_key) = app.user(1.0).await;
    for i in 0..10 {
        let hook = json!({ "url": format!("http://127.0.0.1:{slow_port}/hog/{i}"), "events": ["task.completed"] });
        assert_eq!(app.post("/webhooks", &hog_key, hook).await.status, 200);
    }
    let hook = json!({ "url": format!("http://127.0.0.1:{fast_port}/other"), "events": ["task.completed"] });
    assert_eq!(app.post("/webhooks", &other_key, hook).await.status, 200);

    // Forty messages to the hog's ten endpoints: enough for every slot of the node, were it unfair.
    let store = &app.app().store;
    for n in 0..4 {
        store.enqueue_webhook_event(&hog, "task.completed", &json!({ "n": n })).await.expect("enqueue");
    }
    // The hog's receivers take what they can before the other user's message is even queued.
    let mut hanging = 0;
    while hanging < 4 {
        tokio::time::timeout(Duration::from_secs(20), slow.recv()).await.expect("the hog's deliveries start");
        hanging += 1;
    }
    store.enqueue_webhook_event(&other, "task.completed", &json!({ "n": 0 })).await.expect("enqueue");
    let delivered = tokio::time::timeout(Duration::from_secs(8), fast.recv()).await;
    assert_eq!(delivered.ok().flatten().as_deref(), Some("/other"), "the other user's delivery waited behind the hog");
    // And the hog never held more than its share (4 of the node's 16) at once.
    let mut more = 0;
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(1500), slow.recv()).await {
        more += 1;
    }
    assert_eq!(hanging + more, 4, "the hog's deliveries in flight at once");
}
