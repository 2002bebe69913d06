//! The Socket.IO channel through a real python-socketio client: events of a task, messages and acks,
//! `end_session`, refused connections, the active-sockets list, and browser instance loss (recovery and
//! `instance_lost`).

use crate::helpers::TestApp;
use crate::sio::SocketClient;
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

async fn quick_app() -> TestApp {
    TestApp::spawn_with(|s| s.arg("task-wait-ms", 100)).await
}

#[tokio::test]
async fn a_socket_receives_the_events_of_a_full_task() {
    let app = quick_app().await;
    let key = app.key().await;
    let (sid, socket_url) = app.open_session(&key, json!({})).await;
    let (mut client, _) = SocketClient::connect(&socket_url, &sid).await;
    let r = app.new_task(&key, &sid, &format!("open {}; report the title", app.site.url("/"))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let task_id = r.body["taskId"].as_str().expect("taskId").to_owned();
    let update = client.expect_message("response_update", WAIT).await;
    assert!(update["data"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{update}");
    let action = client.expect_message("action", WAIT).await;
    assert_eq!(action["data"]["name"], "navigate", "{action}");
    let done = client.expect_message("task_completed", WAIT).await;
    assert_eq!(done["taskId"], task_id.as_str());
    assert_eq!(done["data"]["message"], "Fixture Home");
    assert!(done["data"]["usage"]["cost"].is_number(), "{done}");
    client.close().await;
    app.stop().await;
}

#[tokio::test]
async fn tasks_and_state_commands_sent_over_the_socket_take_effect() {
    let app = quick_app().await;
    let key = app.key().await;
    let (sid, socket_url) = app.open_session(&key, json!({})).await;
    let (mut client, _) = SocketClient::connect(&socket_url, &sid).await;
    let pricing = app.site.url("/pricing");
    let details = format!("wait 1 seconds; open {pricing}; report the title");
    let ack = client.emit(json!({ "actionType": "newTask", "newState": "start", "taskDetails": details })).await;
    assert_eq!(ack["success"], true, "{ack}");
    assert_eq!(ack["pending"], true, "{ack}");
    assert_eq!(ack["sessionId"], sid.as_str());
    let task_id = ack["taskId"].as_str().expect("taskId").to_owned();
    let paused = client.emit(json!({ "actionType": "state", "newState": "pause" })).await;
    assert_eq!(paused["success"], true, "{paused}");
    assert!(paused["message"].is_string());
    // Kept fixed: that the paused agent does not go on is an absence no event can announce.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(!app.site.was_requested(None, "/pricing"), "the agent went on while paused");
    assert_eq!(app.poll(&sid, &task_id).await.body["status"], "active");
    // Errors come back in the REST error body.
    let refused = client.emit(json!({ "actionType": "newTask", "newState": "start", "taskDetails": "x" })).await;
    assert_eq!(refused["success"], false, "{refused}");
    assert_eq!(refused["code"], "TASK_ALREADY_RUNNING");
    assert!(refused["message"].is_string());
    let bad = client.emit(json!({ "actionType": "dance" })).await;
    assert_eq!(bad["success"], false, "{bad}");
    let resumed = client.emit(json!({ "actionType": "state", "newState": "resume" })).await;
    assert_eq!(resumed["success"], true, "{resumed}");
    let done = client.expect_message("task_completed", WAIT).await;
    assert_eq!(done["taskId"], task_id.as_str());
    assert_eq!(done["data"]["message"], "Pricing");
    assert_eq!(app.poll(&sid, &task_id).await.body["type"], "task_completed");
    client.close().await;
    app.stop().await;
}

#[tokio::test]
async fn terminate_sends_end_session_terminated_and_closes_the_socket() {
    let app = quick_app().await;
    let key = app.key().await;
    let (sid, socket_url) = app.open_session(&key, json!({})).await;
    let (mut client, _) = SocketClient::connect(&socket_url, &sid).await;
    let ended = client.emit(json!({ "actionType": "state", "newState": "terminate" })).await;
    assert_eq!(ended["success"], true, "{ended}");
    client.rewind(); // end_session and the ack may come in either order
    let end = client.expect_event("end_session", WAIT).await;
    assert_eq!(end["data"]["reason"], "terminated");
    client.expect_event("disconnect", WAIT).await;
    assert!(client.exited(Duration::from_secs(5)).await, "the client was not disconnected");
    assert_eq!(app.end_reason(&sid).await.as_deref(), Some("terminated"));
    app.stop().await;
}

#[tokio::test]
async fn max_duration_sends_end_session_expired() {
    let app = quick_app().await;
    let key = app.key().await;
    // Long enough for the Python client to start and connect on a loaded machine (it once took more than
    // 2.5 s), so the session cannot expire before the socket is in.
    let (sid, socket_url) = app.open_session(&key, json!({ "maxDuration": 6000 })).await;
    let (mut client, _) = SocketClient::connect(&socket_url, &sid).await;
    let end = client.expect_event("end_session", WAIT).await;
    assert_eq!(end["data"]["reason"], "expired");
    client.expect_event("disconnect", WAIT).await;
    app.stop().await;
}

#[tokio::test]
async fn a_connection_for_an_unknown_or_missing_session_is_refused() {
    let app = quick_app().await;
    for session in ["ses_does_not_exist", "-"] {
        let mut client = SocketClient::start(&app.base, session);
        let refused = client.expect_event("connect_error", WAIT).await;
        let message = refused["data"]["message"].as_str().unwrap_or_default().to_owned();
        assert!(message.contains("session"), "{refused}");
        assert!(client.exited(Duration::from_secs(10)).await);
        assert!(client.seen.iter().all(|v| v["event"] != "connect"), "{:?}", client.seen);
    }
    // An ended session is refused too.
    let key = app.key().await;
    let (sid, socket_url) = app.open_session(&key, json!({})).await;
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    let mut client = SocketClient::start(&socket_url, &sid);
    client.expect_event("connect_error", WAIT).await;
    app.stop().await;
}

#[tokio::test]
async fn active_sockets_lists_the_connected_sockets() {
    let app = quick_app().await;
    let key = app.key().await;
    let (sid, socket_url) = app.open_session(&key, json!({})).await;
    // A client that speaks WebSocket from the start (no long-polling first).
    let (mut client, socket_id) = SocketClient::connect_over(&socket_url, &sid, "websocket").await;
    let r = app.get("/start/active-sockets").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["success"], true);
    assert_eq!(r.body["count"], 1, "{}", r.body);
    // Listed by an id of its own, not the client's Socket.IO id (see socket_security.rs).
    let listed = r.body["sockets"][0].as_str().expect("one id").to_owned();
    assert!(listed.starts_with("sock_") && listed != socket_id, "{}", r.body);
    assert!(r.body["timestamp"].is_string());
    client.disconnect().await;
    client.expect_event("disconnect", WAIT).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let r = app.get("/start/active-sockets").await;
        if r.body["count"] == 0 {
            assert_eq!(r.body["sockets"], json!([]));
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "socket still listed: {}", r.body);
        tokio::time::sleep(crate::helpers::POLL).await;
    }
    app.stop().await;
}

fn kill(pid: u32) {
    let status = std::process::Command::new("kill").arg("-KILL").arg(pid.to_string()).status().expect("kill");
    assert!(status.success(), "kill -KILL {pid}");
}

#[tokio::test]
async fn a_killed_browser_is_replaced_and_the_session_goes_on_with_its_cookies() {
    let app = quick_app().await;
    let key = app.key().await;
    let (sid, socket_url) = app.open_session(&key, json!({})).await;
    let (mut client, _) = SocketClient::connect(&socket_url, &sid).await;
    let set = app.site.url("/set-cookie?value=kept");
    let first = app.run_in(&key, &sid, &format!("open {set}; report the title")).await;
    assert_eq!(first["type"], "task_completed", "{first}");
    // A long task is running when the browser dies: it fails with INSTANCE_UNAVAILABLE.
    let r = app.new_task(&key, &sid, "wait 30 seconds").await;
    let running = r.body["taskId"].as_str().expect("taskId").to_owned();
    let pids = app.app().manager.pool().pids().await;
    assert_eq!(pids.len(), 1, "{pids:?}");
    kill(pids[0]);
    let lost = client.expect_event("instance:disconnected", WAIT).await;
    assert_eq!(lost["data"]["gracePeriod"], 300000);
    let failed = client.expect_message("error", WAIT).await;
    assert_eq!(failed["taskId"], running.as_str());
    assert_eq!(failed["code"], "INSTANCE_UNAVAILABLE");
    client.expect_event("instance:reconnected", WAIT).await;
    let polled = app.poll_final(&sid, &running, Duration::from_secs(5)).await;
    assert_eq!(polled["code"], "INSTANCE_UNAVAILABLE", "{polled}");
    let new_pids = app.app().manager.pool().pids().await;
    assert!(!new_pids.contains(&pids[0]), "{new_pids:?}");
    // The last page was reopened and the cookie restored.
    let url = app.run_in(&key, &sid, "report the url").await;
    assert_eq!(url["data"]["message"], set.as_str(), "{url}");
    let show = app.site.url("/show-cookie");
    let cookie = app.run_in(&key, &sid, &format!("open {show}; report the text of \"#cookie\"")).await;
    assert_eq!(cookie["data"]["message"], "kept", "{cookie}");
    let done = client.expect_message("task_completed", WAIT).await;
    assert!(done["taskId"].is_string());
    client.close().await;
    app.stop().await;
}

#[tokio::test]
async fn without_a_replacement_browser_the_session_ends_as_instance_lost() {
    // Chromium is started through a wrapper the test can break: after the kill, relaunching fails.
    let dir = tempfile::tempdir().expect("tempdir");
    let wrapper = dir.path().join("chromium");
    write_script(&wrapper, "exec /usr/bin/chromium \"$@\"");
    let app = TestApp::spawn_with(|s| {
        s.arg("task-wait-ms", 100).arg("chromium", wrapper.display()).arg("instance-reconnect-window-ms", 1500)
    })
    .await;
    let key = app.key().await;
    let (sid, socket_url) = app.open_session(&key, json!({})).await;
    let (mut client, _) = SocketClient::connect(&socket_url, &sid).await;
    write_script(&wrapper, "exit 1");
    let pids = app.app().manager.pool().pids().await;
    kill(pids[0]);
    let lost = client.expect_event("instance:disconnected", WAIT).await;
    assert_eq!(lost["data"]["gracePeriod"], 300000);
    let end = client.expect_event("end_session", WAIT).await;
    assert_eq!(end["data"]["reason"], "instance_lost");
    assert!(client.seen.iter().all(|v| v["event"] != "instance:reconnected"), "{:?}", client.seen);
    client.expect_event("disconnect", WAIT).await;
    assert_eq!(app.end_reason(&sid).await.as_deref(), Some("instance_lost"));
    app.wait_session_gone(&key, &sid, Duration::from_secs(5)).await;
    app.stop().await;
}

/// Writes an executable shell script (atomically, so a running launch never sees half a file).
fn write_script(path: &std::path::Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::rename(&tmp, path).expect("rename script");
}
