//! The per-user sliding-window rate limit and its headers.

use crate::helpers::TestApp;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn the_limit_counts_every_request_and_answers_429_with_headers() {
    let app = TestApp::spawn_with(|s| s.arg("rate-limit", 3)).await;
    let key = app.key().await;
    // Failures count too: a malformed body and a bad session id.
    let r1 = app.post_raw("/start/send-message", Some(&key), "{not json").await;
    r1.assert_error(400, "INVALID_PARAMS");
    assert_eq!(r1.header("x-ratelimit-limit").as_deref(), Some("3"));
    assert_eq!(r1.header("x-ratelimit-remaining").as_deref(), Some("2"));
    let r2 = app.state(&key, "ses_missing", "stop").await;
    r2.assert_error(404, "SESSION_NOT_FOUND");
    assert_eq!(r2.header("x-ratelimit-remaining").as_deref(), Some("1"));
    let r3 = app.post("/start/start-session", &key, json!({})).await;
    assert_eq!(r3.status, 200);
    assert_eq!(r3.header("x-ratelimit-remaining").as_deref(), Some("0"));
    let now = chrono::Utc::now().timestamp() as u64;
    let reset: u64 = r3.header("x-ratelimit-reset").unwrap().parse().unwrap();
    assert!(reset > now && reset <= now + 61, "reset {reset} vs now {now}");
    assert!(r3.header("retry-after").is_none());

    let over = app.post("/start/run-task", &key, json!({ "taskDetails": "report the title" })).await;
    over.assert_error(429, "RATE_LIMIT_EXCEEDED");
    assert!(over.body["message"].as_str().unwrap().starts_with("rate limit exceeded"));
    assert_eq!(over.header("x-ratelimit-remaining").as_deref(), Some("0"));
    let retry: u64 = over.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");

    // Unlimited endpoints stay open; another user has a window of its own.
    assert_eq!(app.get("/start/health").await.status, 200);
    assert_eq!(app.get("/task/a/b").await.status, 404);
    let other = app.key().await;
    assert_eq!(app.post("/start/start-session", &other, json!({})).await.status, 200);
    app.stop().await;
}

#[tokio::test]
async fn all_keys_of_a_user_share_one_window() {
    let app = TestApp::spawn_with(|s| s.arg("rate-limit", 2)).await;
    let (user, first) = app.user(10.0).await;
    let (_, second) = app.app().store.create_api_key(&user, "second", None).await.unwrap();
    assert_eq!(app.state(&first, "ses_x", "stop").await.status, 404);
    assert_eq!(app.state(&second, "ses_x", "stop").await.status, 404);
    app.state(&first, "ses_x", "stop").await.assert_error(429, "RATE_LIMIT_EXCEEDED");
    app.state(&second, "ses_x", "stop").await.assert_error(429, "RATE_LIMIT_EXCEEDED");
    app.stop().await;
}

#[tokio::test]
async fn requests_leave_the_window_as_it_slides() {
    let app = TestApp::spawn_with(|s| s.arg("rate-limit", 2).arg("rate-window-ms", 1500)).await;
    let key = app.key().await;
    assert_eq!(app.state(&key, "ses_x", "stop").await.status, 404);
    // Kept fixed, here and below: a timer is the point (requests leave the sliding window).
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(app.state(&key, "ses_x", "stop").await.status, 404);
    app.state(&key, "ses_x", "stop").await.assert_error(429, "RATE_LIMIT_EXCEEDED");
    // After the first request leaves the window, exactly one more fits.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(app.state(&key, "ses_x", "stop").await.status, 404);
    app.state(&key, "ses_x", "stop").await.assert_error(429, "RATE_LIMIT_EXCEEDED");
    app.stop().await;
}
