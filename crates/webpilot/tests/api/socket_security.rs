//! The socket capability: `active-sockets` ids grant nothing, a client that knows only a session id (it
//! is in every pollUrl) cannot connect, the token is in no public answer, and `newTask` over the socket
//! counts toward the owner's rate limit. The official Python client on `socketURL` works unchanged.

use crate::helpers::TestApp;
use crate::sio::SocketClient;
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

/// Posts an Engine.IO polling packet for `sid` that would terminate the session it belongs to.
async fn post_as(app: &TestApp, sid: &str) -> reqwest::StatusCode {
    let body = r#"42["message",{"actionType":"state","newState":"terminate"}]"#;
    let url = format!("{}/socket.io/?EIO=4&transport=polling&sid={sid}", app.base);
    let r = app.client.post(url).header("content-type", "text/plain;charset=UTF-8").body(body).send().await;
    r.expect("request").status()
}

#[tokio::test]
async fn an_id_from_active_sockets_cannot_drive_the_session() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, socket_url) = app.open_session(&key, json!({})).await;
    // The owner's client on the polling transport (as the official clients start).
    let (mut owner, owner_socket_id) = SocketClient::connect_over(&socket_url, &sid, "polling").await;
    // What a stranger can read is the listed id; it is not the owner's transport id, so it drives nothing.
    let listed = app.get("/start/active-sockets").await.body["sockets"][0].as_str().expect("listed").to_owned();
    assert_ne!(listed, owner_socket_id);
    let status = post_as(&app, &listed).await;
    assert!(status.is_client_error(), "posting as {listed} answered {status}");
    // The post was refused by the transport (a 4xx for an id it does not know), so it reached no socket and
    // can have no later effect: the session is checked at once.
    let alive = app.state(&key, &sid, "stop").await;
    assert_eq!(alive.status, 200, "the session was ended by a stranger: {}", alive.body);
    assert!(owner.seen.iter().all(|v| v["event"] != "end_session"), "{:?}", owner.seen);
    // The owner's socket still works.
    let ack = owner.emit(json!({ "actionType": "state", "newState": "stop" })).await;
    assert_eq!(ack["success"], true, "{ack}");
    owner.close().await;
    app.stop().await;
}

#[tokio::test]
async fn a_client_that_knows_only_the_session_id_is_refused() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, socket_url) = app.open_session(&key, json!({})).await;
    let wrong = format!("{}/?token={}", app.base, "0".repeat(32));
    for url in [app.base.clone(), wrong] {
        let mut intruder = SocketClient::start(&url, &sid);
        let refused = intruder.expect_event("connect_error", WAIT).await;
        let message = refused["data"]["message"].as_str().unwrap_or_default().to_owned();
        assert!(message.contains("socketURL"), "{refused}");
        assert!(intruder.exited(Duration::from_secs(10)).await);
        assert!(intruder.seen.iter().all(|v| v["event"] != "connect"), "{:?}", intruder.seen);
    }
    // Another session's token does not open this one.
    let (_, other_url) = app.open_session(&key, json!({})).await;
    let mut intruder = SocketClient::start(&other_url, &sid);
    intruder.expect_event("connect_error", WAIT).await;
    // The token is in no public answer: not in pollUrl, the poll body or active-sockets.
    let token = socket_url.split("token=").nth(1).expect("socketURL carries a token").to_owned();
    let (owner, _) = SocketClient::connect(&socket_url, &sid).await;
    let started = app.new_task(&key, &sid, "report the title").await;
    let task = started.body["taskId"].as_str().expect("taskId").to_owned();
    let poll = app.poll(&sid, &task).await;
    let sockets = app.get("/start/active-sockets").await;
    for public in [started.body["pollUrl"].to_string(), poll.body.to_string(), sockets.body.to_string()] {
        assert!(!public.contains(&token), "the capability leaked: {public}");
    }
    owner.close().await;
    app.stop().await;
}

#[tokio::test]
async fn new_tasks_over_the_socket_count_toward_the_rate_limit_and_other_messages_do_not() {
    let app = TestApp::spawn_with(|s| s.arg("rate-limit", 3)).await;
    let key = app.key().await;
    let (sid, socket_url) = app.open_session(&key, json!({})).await; // 1 of 3
    let (mut client, _) = SocketClient::connect(&socket_url, &sid).await;
    let task = json!({ "actionType": "newTask", "newState": "start", "taskDetails": "report the title" });
    for _ in 0..2 {
        // 2 and 3 of 3. A quick task may complete before its ack arrives: look for it from the start.
        let ack = client.emit(task.clone()).await;
        assert_eq!(ack["success"], true, "{ack}");
        client.rewind();
        let id = ack["taskId"].clone();
        client
            .expect(WAIT, "task_completed", |v| v["data"]["type"] == "task_completed" && v["data"]["taskId"] == id)
            .await;
    }
    let refused = client.emit(task).await;
    assert_eq!(refused["success"], false, "{refused}");
    assert_eq!(refused["code"], "RATE_LIMIT_EXCEEDED", "{refused}");
    for _ in 0..5 {
        let ack = client.emit(json!({ "actionType": "state", "newState": "stop" })).await;
        assert_eq!(ack["success"], true, "state messages are not limited: {ack}");
    }
    client.close().await;
    app.stop().await;
}

/// Runs the official JavaScript client (tests/clients/socket_client.mjs) and returns the JSON lines it printed.
async fn javascript_client(socket_url: &str, session: &str, task: Option<&str>) -> Vec<serde_json::Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/socket_client.mjs");
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(script).arg(socket_url).arg(session);
    if let Some(t) = task {
        cmd.arg(t);
    }
    let out =
        tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("client ended").expect("node runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text} {}", String::from_utf8_lossy(&out.stderr));
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

#[tokio::test]
async fn the_official_javascript_client_on_socket_url_gets_the_events() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, socket_url) = app.open_session(&key, json!({})).await;
    let task = format!("open {}; report the title", app.site.url("/pricing"));
    let seen = javascript_client(&socket_url, &sid, Some(&task)).await;
    let kinds: Vec<&str> =
        seen.iter().filter(|v| v["event"] == "message").filter_map(|v| v["data"]["type"].as_str()).collect();
    assert!(seen.iter().any(|v| v["event"] == "connect"), "{seen:?}");
    let ack = seen.iter().find(|v| v["event"] == "ack").expect("an ack");
    assert_eq!(ack["data"]["success"], true, "{ack}");
    assert!(kinds.contains(&"action") && kinds.contains(&"task_completed"), "{kinds:?}");
    let done = seen.iter().find(|v| v["data"]["type"] == "task_completed").expect("task_completed");
    assert_eq!(done["data"]["data"]["message"], "Pricing", "{done}");
    // The same client with only the session id (the base URL without the token) is refused.
    let refused = javascript_client(&app.base, &sid, None).await;
    let error = refused.iter().find(|v| v["event"] == "connect_error").expect("connect_error");
    assert!(error["message"].as_str().unwrap_or_default().contains("socketURL"), "{error}");
    assert!(refused.iter().all(|v| v["event"] != "connect"), "{refused:?}");
    app.stop().await;
}
