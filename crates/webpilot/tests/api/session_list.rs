//! What `GET /start/sessions` tells of each live session (its start, its state as the agent works, its
//! page's address and title) and a session's task history, `GET /start/sessions/{sessionId}/tasks`: newest
//! first, paged, kept after the session ends, and another user's session answered 404. Runs on both stores.

use crate::helpers::TestApp;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn get(app: &TestApp, key: &str, path: &str) -> (u16, Value) {
    let r = app.client.get(format!("{}{path}", app.base)).bearer_auth(key).send().await.expect("GET");
    let status = r.status().as_u16();
    (status, r.json().await.expect("JSON"))
}

/// The list's entry for `sid` once `pred` holds for it (at most 20 s).
async fn listed_until(app: &TestApp, key: &str, sid: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = get(app, key, "/start/sessions").await;
        assert_eq!(status, 200, "{body}");
        let entry = body["sessions"].as_array().and_then(|l| l.iter().find(|s| s["sessionId"] == sid)).cloned();
        let entry = entry.unwrap_or(Value::Null);
        if pred(&entry) {
            return entry;
        }
        assert!(Instant::now() < deadline, "the list never showed what was awaited: {body}");
        tokio::time::sleep(crate::helpers::POLL).await;
    }
}

#[tokio::test]
async fn the_list_shows_each_sessions_start_state_and_page_and_its_task_history() {
    let app = TestApp::spawn_with(|s| s.arg("task-wait-ms", 100)).await;
    let key = app.key().await;
    let (_, other) = app.user(5.0).await;
    let before = chrono::Utc::now();
    let red = app.site.url("/paint?bg=ff0000");
    let sid = app.start_session(&key, json!({ "startingUrl": red })).await;

    // Idle, on its start page, with its start time.
    let entry = listed_until(&app, &key, &sid, |e| e["state"] == "idle").await;
    assert_eq!((&entry["url"], &entry["title"]), (&json!(red), &json!("Paint ff0000")), "{entry}");
    let created = chrono::DateTime::parse_from_rfc3339(entry["createdAt"].as_str().unwrap_or_default())
        .unwrap_or_else(|e| panic!("createdAt {entry}: {e}"));
    let age = created.signed_duration_since(before).num_milliseconds();
    assert!((-1000..60_000).contains(&age), "started {age} ms after the call: {entry}");

    // Running, then paused, then done.
    let r = app.new_task(&key, &sid, "wait 2 seconds; report the title").await;
    let first = r.body["taskId"].as_str().expect("taskId").to_owned();
    listed_until(&app, &key, &sid, |e| e["state"] == "running").await;
    assert_eq!(app.state(&key, &sid, "pause").await.status, 200);
    listed_until(&app, &key, &sid, |e| e["state"] == "paused").await;
    let (_, history) = get(&app, &key, &format!("/start/sessions/{sid}/tasks")).await;
    assert_eq!(history["tasks"][0]["status"], "active", "a paused task is still active: {history}");
    assert!(history["tasks"][0]["completedAt"].is_null(), "{history}");
    assert_eq!(app.state(&key, &sid, "resume").await.status, 200);
    let done = app.poll_final(&sid, &first, Duration::from_secs(20)).await;
    assert_eq!(done["data"]["message"], "Paint ff0000", "{done}");
    listed_until(&app, &key, &sid, |e| e["state"] == "idle").await;

    // Waiting on a guardrail, then answered; a navigation shows in the list.
    let green = app.site.url("/paint?bg=00ff00");
    let r = app.new_task(&key, &sid, &format!("ask the human \"Which word?\"; open {green}; report the title")).await;
    let second = r.body["taskId"].as_str().expect("taskId").to_owned();
    listed_until(&app, &key, &sid, |e| e["state"] == "guardrail").await;
    let (_, history) = get(&app, &key, &format!("/start/sessions/{sid}/tasks")).await;
    assert_eq!(history["tasks"][0]["status"], "guardrail", "{history}");
    let answer = json!({ "actionType": "guardrail", "taskDetails": "blue", "newState": "resume" });
    assert_eq!(app.send(&key, &sid, answer).await.status, 200);
    let done = app.poll_final(&sid, &second, Duration::from_secs(20)).await;
    assert_eq!(done["data"]["message"], "Paint 00ff00", "{done}");
    let entry = listed_until(&app, &key, &sid, |e| e["state"] == "idle" && e["title"] == "Paint 00ff00").await;
    assert_eq!(entry["url"], json!(green), "{entry}");

    // The history: newest first, each with its text, status, answer, cost and duration.
    let (status, history) = get(&app, &key, &format!("/start/sessions/{sid}/tasks")).await;
    assert_eq!(status, 200, "{history}");
    assert_eq!((&history["success"], &history["sessionId"]), (&json!(true), &json!(sid)), "{history}");
    let tasks = history["tasks"].as_array().expect("tasks");
    let ids: Vec<&str> = tasks.iter().filter_map(|t| t["taskId"].as_str()).collect();
    assert_eq!(ids, [second.as_str(), first.as_str()], "{history}");
    for t in tasks {
        assert_eq!(t["status"], "complete", "{t}");
        assert!(t["cost"].as_f64().is_some_and(|c| c >= 0.0), "{t}");
        let (start, end) = (t["createdAt"].as_str().unwrap_or_default(), t["completedAt"].as_str().unwrap_or_default());
        let ms = |s: &str| chrono::DateTime::parse_from_rfc3339(s).map(|d| d.timestamp_millis()).unwrap_or(0);
        assert_eq!(t["durationMs"].as_i64(), Some(ms(end) - ms(start)), "{t}");
        assert!(t["error"].is_null() && t["code"].is_null(), "{t}");
    }
    assert_eq!((&tasks[0]["answer"], &tasks[1]["answer"]), (&json!("Paint 00ff00"), &json!("Paint ff0000")));
    assert_eq!(tasks[1]["task"], "wait 2 seconds; report the title", "{history}");
    assert!(tasks[1]["durationMs"].as_i64() >= Some(2000), "{history}");

    // Paged like the other lists.
    let (_, page) = get(&app, &key, &format!("/start/sessions/{sid}/tasks?limit=1&offset=1")).await;
    assert_eq!(
        page["tasks"].as_array().map(|l| l.iter().map(|t| t["taskId"].clone()).collect::<Vec<_>>()),
        Some(vec![json!(first)])
    );
    let (status, refused) = get(&app, &key, &format!("/start/sessions/{sid}/tasks?limit=0")).await;
    assert_eq!((status, &refused["code"]), (400, &json!("INVALID_PARAMETER")), "{refused}");

    // Another user's session, an unknown one, and no key.
    let (status, refused) = get(&app, &other, &format!("/start/sessions/{sid}/tasks")).await;
    assert_eq!((status, &refused["code"], &refused["success"]), (404, &json!("SESSION_NOT_FOUND"), &json!(false)));
    assert!(!refused.to_string().contains("Paint"), "{refused}");
    let (status, _) = get(&app, &key, "/start/sessions/nope/tasks").await;
    assert_eq!(status, 404);
    app.get(&format!("/start/sessions/{sid}/tasks")).await.assert_error(401, "UNAUTHORIZED");

    // Ended: gone from the list, its history kept.
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    let (_, list) = get(&app, &key, "/start/sessions").await;
    assert_eq!(list["count"], 0, "{list}");
    let (status, history) = get(&app, &key, &format!("/start/sessions/{sid}/tasks")).await;
    assert_eq!((status, history["tasks"].as_array().map(Vec::len)), (200, Some(2)), "{history}");
    app.stop().await;
}
