//! Work that ends at the same moment: every outcome and every charge is recorded, whatever the
//! contention on the store.

use crate::helpers::TestApp;
use futures::future::join_all;
use serde_json::{json, Value};
use std::time::Duration;
use webpilot_core::usage::usd_to_micros;

/// Starts `details` as a run-task for `key` and returns (sessionId, taskId). Twenty browser contexts made
/// at once on a loaded 2-core machine can overrun the DevTools timeout; the service then answers 503
/// `INSTANCE_UNAVAILABLE` ("retry"), and this client retries as the message says.
async fn start(app: &TestApp, key: &str, details: &str) -> (String, String) {
    let mut r = app.post("/start/run-task", key, json!({ "taskDetails": details })).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while r.status == 503 && std::time::Instant::now() < deadline {
        r.assert_error(503, "INSTANCE_UNAVAILABLE");
        tokio::time::sleep(crate::helpers::POLL).await;
        r = app.post("/start/run-task", key, json!({ "taskDetails": details })).await;
    }
    assert_eq!(r.status, 200, "{}", r.body);
    (r.body["sessionId"].as_str().expect("sessionId").to_owned(), r.body["taskId"].as_str().expect("taskId").to_owned())
}

fn cost_micros(final_poll: &Value) -> i64 {
    usd_to_micros(final_poll["usage"]["cost"].as_f64().expect("usage.cost"))
}

#[tokio::test]
async fn twenty_tasks_of_several_users_ending_together_are_all_recorded_and_charged() {
    let app =
        TestApp::spawn_with(|s| s.arg("max-sessions", 20).arg("max-sessions-per-user", 5).arg("task-wait-ms", 100))
            .await;
    let mut users = Vec::new();
    for _ in 0..4 {
        users.push(app.user(10.0).await);
    }
    let details = "wait 3 seconds; report the url";
    let starts = (0..20).map(|i| {
        let key = users[i % 4].1.clone();
        let app = &app;
        async move { (i % 4, start(app, &key, details).await) }
    });
    let started = join_all(starts).await;
    let finals = join_all(started.iter().map(|(u, (sid, tid))| {
        let app = &app;
        async move { (*u, app.poll_final(sid, tid, Duration::from_secs(60)).await) }
    }))
    .await;
    let mut charged = [0i64; 4];
    for (u, body) in &finals {
        assert_eq!(body["type"], "task_completed", "{body}");
        assert!(cost_micros(body) > 0, "{body}");
        charged[*u] += cost_micros(body);
    }
    for (i, (id, _)) in users.iter().enumerate() {
        let user = app.app().store.get_user(id).await.expect("store").expect("user");
        assert_eq!(user.balance_micros, usd_to_micros(10.0) - charged[i], "user {i} was charged for every task");
    }
    // And what was recorded is what the polls said, after a restart too.
    let mut app = app;
    app.restart().await;
    for ((_, (sid, tid)), (_, before)) in started.iter().zip(&finals) {
        let after = app.poll(sid, tid).await;
        assert_eq!(after.body["type"], "task_completed", "{}", after.body);
        assert_eq!(cost_micros(&after.body), cost_micros(before));
    }
    app.stop().await;
}

#[tokio::test]
async fn one_user_cannot_take_every_browser() {
    let app = TestApp::spawn_with(|s| s.arg("max-sessions", 3).arg("max-sessions-per-user", 2)).await;
    let alice = app.key().await;
    let bob = app.key().await;
    let first = app.start_session(&alice, json!({})).await;
    app.start_session(&alice, json!({})).await;
    let third = app.post("/start/start-session", &alice, json!({})).await;
    third.assert_error(429, "SESSION_LIMIT_REACHED");
    let run = app.post("/start/run-task", &alice, json!({ "taskDetails": "report the url" })).await;
    run.assert_error(429, "SESSION_LIMIT_REACHED");
    // The last browser is still there for another user.
    app.start_session(&bob, json!({})).await;
    // A session ended gives its place back.
    assert_eq!(app.state(&alice, &first, "terminate").await.status, 200);
    app.start_session(&alice, json!({})).await;
    app.stop().await;
}

#[tokio::test]
async fn parallel_tasks_cannot_overdraw_a_small_balance_by_more_than_one_hold() {
    let hold_usd = 0.05;
    let app =
        TestApp::spawn_with(|s| s.arg("max-sessions", 8).arg("task-wait-ms", 100).arg("task-hold-usd", hold_usd)).await;
    let (user, key) = app.user(0.004).await;
    let details = "wait 2 seconds; report the url";
    let replies = join_all((0..8).map(|_| app.post("/start/run-task", &key, json!({ "taskDetails": details })))).await;
    let accepted: Vec<&Value> = replies.iter().filter(|r| r.status == 200).map(|r| &r.body).collect();
    for r in replies.iter().filter(|r| r.status != 200) {
        r.assert_error(402, "INSUFFICIENT_BALANCE");
    }
    assert!(!accepted.is_empty(), "the balance covers new work until something is held");
    assert!(accepted.len() < 8, "the first task's hold leaves nothing for the rest");
    let mut charged = 0;
    for body in &accepted {
        let (sid, tid) = (body["sessionId"].as_str().unwrap(), body["taskId"].as_str().unwrap());
        let done = app.poll_final(sid, tid, Duration::from_secs(30)).await;
        assert_eq!(done["type"], "task_completed", "every accepted task has its outcome: {done}");
        charged += cost_micros(&done);
    }
    let balance = app.app().store.get_user(&user).await.expect("store").expect("user").balance_micros;
    assert_eq!(balance, usd_to_micros(0.004) - charged);
    assert!(balance >= -usd_to_micros(hold_usd), "overdrawn by more than one hold: {balance}");
    // Once the tasks are charged their holds are gone: what is left of the balance covers new work again.
    assert!(balance > 0);
    let again = app.post("/start/run-task", &key, json!({ "taskDetails": details })).await;
    assert_eq!(again.status, 200, "{}", again.body);
    app.stop().await;
}

#[tokio::test]
async fn a_task_that_ends_while_the_store_fails_is_shown_as_ended_not_active() {
    let app = TestApp::spawn_with(|s| s.arg("task-wait-ms", 100)).await;
    let key = app.key().await;
    let (sid, tid) = start(&app, &key, "wait 2 seconds; report the url").await;
    // Every write fails from here on (the pool is closed), including the task's outcome.
    app.app().store.close().await;
    let shown = app.poll_final(&sid, &tid, Duration::from_secs(20)).await;
    assert_eq!(shown["type"], "task_completed", "the ended task is shown from memory: {shown}");
    assert_eq!(shown["data"]["message"], "about:blank", "{shown}");
    app.stop().await;
}
