//! The real browser: cookies and storage per session, avoidDomains at the network level, manual
//! input as real events, and the pool's capacity.

use crate::helpers::TestApp;
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test]
async fn cookies_and_storage_survive_between_tasks_of_a_session_but_not_across_sessions() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let set = app
        .run_in(&key, &sid, &format!("open {}; report the text of #status", app.site.url("/set-cookie?value=abc")))
        .await;
    assert_eq!(set["data"]["message"], "cookie set", "{set}");
    let show = app.site.url("/show-cookie");
    let seen =
        app.run_in(&key, &sid, &format!("open {show}; report the text of #cookie; report the text of #storage")).await;
    assert_eq!(seen["data"]["message"], "abc\nabc", "{seen}");
    let other = app.start_session(&key, json!({})).await;
    let fresh = app
        .run_in(&key, &other, &format!("open {show}; report the text of #cookie; report the text of #storage"))
        .await;
    assert_eq!(fresh["data"]["message"], "none\nnone", "{fresh}");
    app.stop().await;
}

#[tokio::test]
async fn avoid_domains_blocks_requests_at_the_network_level() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let tracker = app.site.url("/tracker");
    // Control: without the policy the page does reach the tracker host.
    let sid = app.start_session(&key, json!({})).await;
    app.run_in(&key, &sid, &format!("open {tracker}; report the title")).await;
    assert!(app.site.was_requested(Some("tracker.localhost"), "/pixel.png"));
    let before = app.site.requests().len();

    let sid = app.start_session(&key, json!({ "avoidDomains": ["Tracker.Localhost"] })).await;
    let done = app.run_in(&key, &sid, &format!("open {tracker}; report the title")).await;
    assert_eq!(done["data"]["message"], "Tracker page");
    let after: Vec<_> = app.site.requests().into_iter().skip(before).collect();
    assert!(after.iter().any(|r| r.path == "/ok.png"), "allowed image loads: {after:?}");
    assert!(!after.iter().any(|r| r.host == "tracker.localhost"), "blocked host was reached: {after:?}");

    // Navigating to a blocked domain (or a subdomain of one) fails the task with a clear reason.
    let blocked = app.run_in(&key, &sid, &format!("open {}", app.site.url_on("a.tracker.localhost", "/"))).await;
    assert_eq!(blocked["code"], "NAVIGATION_TIMEOUT", "{blocked}");
    assert!(blocked["error"].as_str().unwrap().contains("avoidDomains"));
    app.stop().await;
}

#[tokio::test]
async fn a_task_can_add_domains_to_avoid() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let r = app
        .send(
            &key,
            &sid,
            json!({ "actionType": "newTask", "newState": "start", "avoidDomains": ["tracker.localhost"],
            "taskDetails": format!("open {}; report the title", app.site.url("/tracker")) }),
        )
        .await;
    assert_eq!(r.body["result"]["data"]["message"], "Tracker page", "{}", r.body);
    assert!(!app.site.was_requested(Some("tracker.localhost"), "/pixel.png"));
    app.stop().await;
}

async fn interact(app: &TestApp, key: &str, sid: &str, action: Value) {
    let r = app.send(key, sid, json!({ "actionType": "interaction", "action": action })).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["success"], true);
    assert!(r.body["message"].is_string());
}

async fn read(app: &TestApp, key: &str, sid: &str, selector: &str) -> String {
    let done = app.run_in(key, sid, &format!("report the text of \"{selector}\"")).await;
    done["data"]["message"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn manual_clicks_typing_and_keys_change_the_page() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({ "startingUrl": app.site.url("/counter") })).await;
    // The button spans page x 100..300, y 100..180; frame y is page y + 155.
    interact(&app, &key, &sid, json!({ "type": "CLICK", "x": 200, "y": 295 })).await;
    assert_eq!(read(&app, &key, &sid, "#count").await, "1");
    // Clicking the chrome band's equivalent on the page (page y < 100) misses the button.
    interact(&app, &key, &sid, json!({ "type": "CLICK", "x": 200, "y": 240 })).await;
    assert_eq!(read(&app, &key, &sid, "#count").await, "1");
    interact(&app, &key, &sid, json!({ "type": "DOUBLE_CLICK", "x": 200, "y": 295 })).await;
    assert_eq!(read(&app, &key, &sid, "#dbl").await, "double");
    // The box spans page x 400..700, y 100..140.
    interact(&app, &key, &sid, json!({ "type": "CLICK", "x": 550, "y": 275 })).await;
    interact(&app, &key, &sid, json!({ "type": "TYPE", "text": "héllo" })).await;
    interact(&app, &key, &sid, json!({ "type": "TYPE", "text": " wo", "humanLike": true })).await;
    assert_eq!(read(&app, &key, &sid, "#typed").await, "héllo wo");
    interact(&app, &key, &sid, json!({ "type": "KEY_PRESS", "key": "Backspace" })).await;
    assert_eq!(read(&app, &key, &sid, "#typed").await, "héllo w");
    for k in ["ArrowLeft", "Escape", "Tab", "Enter"] {
        interact(&app, &key, &sid, json!({ "type": "KEY_PRESS", "key": k })).await;
        assert_eq!(read(&app, &key, &sid, "#keys").await, k);
    }
    app.stop().await;
}

#[tokio::test]
async fn manual_input_during_a_task_needs_take_over_control() {
    let app = TestApp::spawn_with(|s| s.arg("task-wait-ms", 100)).await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({ "startingUrl": app.site.url("/counter") })).await;
    let r = app.new_task(&key, &sid, "wait 1 seconds; report the text of #count").await;
    let tid = r.body["taskId"].as_str().unwrap().to_owned();
    let click = json!({ "actionType": "interaction", "action": { "type": "CLICK", "x": 200, "y": 295 } });
    app.send(&key, &sid, click.clone()).await.assert_error(409, "TASK_ALREADY_RUNNING");
    interact(&app, &key, &sid, json!({ "type": "takeOverControl" })).await;
    interact(&app, &key, &sid, json!({ "type": "CLICK", "x": 200, "y": 295 })).await;
    interact(&app, &key, &sid, json!({ "type": "CLICK", "x": 200, "y": 295 })).await;
    // The agent waits while a human has control.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(app.poll(&sid, &tid).await.body["status"], "active");
    interact(&app, &key, &sid, json!({ "type": "releaseControl" })).await;
    let done = app.poll_final(&sid, &tid, Duration::from_secs(10)).await;
    assert_eq!(done["data"]["message"], "2", "{done}");
    app.stop().await;
}

#[tokio::test]
async fn the_pool_answers_503_when_full_and_recovers_when_a_session_ends() {
    let app = TestApp::spawn_with(|s| s.arg("max-sessions", 1)).await;
    let key = app.key().await;
    let first = app.start_session(&key, json!({})).await;
    app.post("/start/start-session", &key, json!({})).await.assert_error(503, "NO_INSTANCES_AVAILABLE");
    app.post("/start/run-task", &key, json!({ "taskDetails": "report the title" }))
        .await
        .assert_error(503, "NO_INSTANCES_AVAILABLE");
    let health = app.get("/start/health").await;
    assert_eq!(health.body["instancesAvailable"], false);
    assert_eq!(health.body["instanceCount"], 0);
    assert_eq!(app.state(&key, &first, "terminate").await.status, 200);
    let again = app.post("/start/start-session", &key, json!({})).await;
    assert_eq!(again.status, 200, "{}", again.body);
    app.stop().await;
}

#[tokio::test]
async fn no_chromium_outlives_the_service() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    app.run_in(&key, &sid, &format!("open {}; report the title", app.site.url("/"))).await;
    let pids = app.app().manager.pool().pids().await;
    assert_eq!(pids.len(), 1);
    assert!(std::path::Path::new(&format!("/proc/{}", pids[0])).exists());
    app.stop().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    for pid in pids {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        assert!(status.is_empty() || status.contains("State:\tZ"), "chromium {pid} still running: {status}");
    }
}
