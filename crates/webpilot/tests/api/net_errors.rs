//! Each way a navigation can fail is named for what it is: a host that does not resolve, a connection
//! refused, a destination the egress policy blocks (NAVIGATION_TIMEOUT), or the site's own HTTP error
//! status, with a body or without one (PAGE_HTTP_ERROR), over http and https alike.

use crate::helpers::{free_port, TestApp};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server on 127.0.0.1 answering every request `404 Not Found` with an empty body.
async fn empty_404() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                let answer = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    port
}

async fn open(app: &TestApp, key: &str, url: &str) -> Value {
    let r =
        app.post("/start/run-task", key, json!({ "taskDetails": format!("open {url} then report the title") })).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let (sid, tid) = (r.body["sessionId"].as_str().expect("sessionId"), r.body["taskId"].as_str().expect("taskId"));
    app.poll_final(sid, tid, Duration::from_secs(30)).await
}

fn assert_failed(body: &Value, url: &str, code: &str, says: &str) {
    assert_eq!(body["status"], "failed", "{url}: {body}");
    assert_eq!(body["code"], code, "{url}: {body}");
    let error = body["error"].as_str().unwrap_or_default();
    assert!(error.contains(says), "{url}: the error should say {says:?}: {body}");
    assert!(!error.contains("net::ERR_"), "{url}: Chromium's own error name is not the message: {body}");
}

#[tokio::test]
async fn each_network_failure_gets_its_own_code_and_message() {
    let closed = free_port();
    let empty = empty_404().await;
    // Every port of 127.0.0.1 is allowed, so a closed one is refused by the host, not by the policy.
    let app = TestApp::spawn_with(|s| s.arg("egress-allow", "127.0.0.1")).await;
    let key = app.key().await;
    for scheme in ["http", "https"] {
        let url = format!("{scheme}://no-such-host.invalid/");
        let body = open(&app, &key, &url).await;
        assert_failed(&body, &url, "NAVIGATION_TIMEOUT", "could not resolve no-such-host.invalid");
        let url = format!("{scheme}://127.0.0.1:{closed}/");
        let body = open(&app, &key, &url).await;
        assert_failed(&body, &url, "NAVIGATION_TIMEOUT", &format!("the connection to 127.0.0.1:{closed} was refused"));
        let url = format!("{scheme}://127.0.0.2:{closed}/");
        let body = open(&app, &key, &url).await;
        assert_failed(&body, &url, "NAVIGATION_TIMEOUT", "blocked by policy");
    }
    let url = format!("http://127.0.0.1:{empty}/gone");
    assert_failed(&open(&app, &key, &url).await, &url, "PAGE_HTTP_ERROR", "the site answered HTTP 404");
    let url = app.site.url("/no-such-page");
    assert_failed(&open(&app, &key, &url).await, &url, "PAGE_HTTP_ERROR", "the site answered HTTP 404");
    app.stop().await;
}
