//! The session state machine: pause / resume / stop / terminate, terminateOnCompletion, expiry,
//! idle timeout and guardrails.

use crate::helpers::TestApp;
use serde_json::json;
use std::time::{Duration, Instant};

async fn quick_app() -> TestApp {
    TestApp::spawn_with(|s| s.arg("task-wait-ms", 100)).await
}

#[tokio::test]
async fn pause_waits_after_the_current_action_and_resume_continues() {
    let app = quick_app().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let pricing = app.site.url("/pricing");
    let r = app.new_task(&key, &sid, &format!("wait 1 seconds; open {pricing}; report the title")).await;
    let tid = r.body["taskId"].as_str().unwrap().to_owned();
    let paused = app.state(&key, &sid, "pause").await;
    assert_eq!(paused.status, 200, "{}", paused.body);
    assert_eq!(paused.body["success"], true);
    assert!(paused.body["message"].is_string());
    // The wait finishes, but the next step (opening /pricing) must not happen while paused. Kept fixed: an
    // absence no event can announce.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(!app.site.was_requested(None, "/pricing"), "the agent went on while paused");
    let polled = app.poll(&sid, &tid).await;
    assert_eq!(polled.body["status"], "active", "{}", polled.body);
    app.state(&key, &sid, "pause").await; // pausing twice is harmless
    app.new_task(&key, &sid, "report the title").await.assert_error(409, "TASK_ALREADY_RUNNING");
    let resumed = app.state(&key, &sid, "resume").await;
    assert_eq!(resumed.status, 200, "{}", resumed.body);
    let done = app.poll_final(&sid, &tid, Duration::from_secs(20)).await;
    assert_eq!(done["data"]["message"], "Pricing");
    app.stop().await;
}

#[tokio::test]
async fn stop_ends_the_task_at_once_and_the_session_takes_a_new_task() {
    let app = quick_app().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let r = app.new_task(&key, &sid, "wait 30 seconds; report the title").await;
    let tid = r.body["taskId"].as_str().unwrap().to_owned();
    let started = Instant::now();
    let stopped = app.state(&key, &sid, "stop").await;
    assert_eq!(stopped.status, 200, "{}", stopped.body);
    let done = app.poll_final(&sid, &tid, Duration::from_secs(5)).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(done["status"], "failed");
    assert_eq!(done["code"], "TASK_STOPPED");
    // Stopped -> newTask is allowed; a second stop with nothing running is a no-op.
    assert_eq!(app.state(&key, &sid, "stop").await.status, 200);
    let next = app.run_in(&key, &sid, &format!("open {}; report the title", app.site.url("/"))).await;
    assert_eq!(next["data"]["message"], "Fixture Home");
    app.stop().await;
}

#[tokio::test]
async fn pause_and_resume_without_a_task_are_refused() {
    let app = quick_app().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    app.state(&key, &sid, "pause").await.assert_error(409, "INVALID_STATE");
    app.state(&key, &sid, "resume").await.assert_error(409, "INVALID_STATE");
    app.send(&key, &sid, json!({ "actionType": "guardrail", "newState": "resume", "taskDetails": "hi" }))
        .await
        .assert_error(409, "INVALID_STATE");
    app.stop().await;
}

#[tokio::test]
async fn terminate_closes_the_session_and_frees_its_browser() {
    let app = quick_app().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    assert_eq!(app.get("/start/health").await.body["instanceCount"], 2);
    let r = app.new_task(&key, &sid, "wait 30 seconds").await;
    let tid = r.body["taskId"].as_str().unwrap().to_owned();
    let t = app.state(&key, &sid, "terminate").await;
    assert_eq!(t.status, 200, "{}", t.body);
    app.new_task(&key, &sid, "report the title").await.assert_error(404, "SESSION_NOT_FOUND");
    app.state(&key, &sid, "terminate").await.assert_error(404, "SESSION_NOT_FOUND");
    let done = app.poll_final(&sid, &tid, Duration::from_secs(5)).await;
    assert_eq!(done["code"], "TASK_STOPPED");
    assert_eq!(app.get("/start/health").await.body["instanceCount"], 3);
    assert_eq!(app.end_reason(&sid).await.as_deref(), Some("terminated"));
    app.stop().await;
}

#[tokio::test]
async fn terminate_on_completion_closes_the_session_after_its_task() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let r = app
        .post("/start/start-session", &key, json!({ "terminateOnCompletion": true, "taskDetails": format!("open {}; report the title", app.site.url("/")) }))
        .await;
    let (sid, tid) = (r.body["sessionId"].as_str().unwrap().to_owned(), r.body["taskId"].as_str().unwrap().to_owned());
    let done = app.poll_final(&sid, &tid, Duration::from_secs(20)).await;
    assert_eq!(done["data"]["message"], "Fixture Home");
    app.wait_session_gone(&key, &sid, Duration::from_secs(5)).await;
    assert_eq!(app.end_reason(&sid).await.as_deref(), Some("terminateOnCompletion"));

    // On a message task too.
    let sid = app.start_session(&key, json!({})).await;
    let r = app
        .send(&key, &sid, json!({ "actionType": "newTask", "newState": "start", "taskDetails": "report the url", "terminateOnCompletion": true }))
        .await;
    assert_eq!(r.body["result"]["data"]["message"], "about:blank", "{}", r.body);
    app.wait_session_gone(&key, &sid, Duration::from_secs(5)).await;
    app.stop().await;
}

#[tokio::test]
async fn max_duration_ends_the_session_even_while_a_task_runs() {
    let app = quick_app().await;
    let key = app.key().await;
    let r =
        app.post("/start/start-session", &key, json!({ "maxDuration": 1500, "taskDetails": "wait 30 seconds" })).await;
    let (sid, tid) = (r.body["sessionId"].as_str().unwrap().to_owned(), r.body["taskId"].as_str().unwrap().to_owned());
    let done = app.poll_final(&sid, &tid, Duration::from_secs(10)).await;
    assert_eq!(done["code"], "SESSION_EXPIRED", "{done}");
    app.wait_session_gone(&key, &sid, Duration::from_secs(5)).await;
    assert_eq!(app.end_reason(&sid).await.as_deref(), Some("expired"));
    app.stop().await;
}

#[tokio::test]
async fn a_task_longer_than_its_max_duration_times_out() {
    let app = quick_app().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let r = app
        .send(&key, &sid, json!({ "actionType": "newTask", "newState": "start", "taskDetails": "wait 20 seconds", "maxDuration": 1000 }))
        .await;
    let done = app.poll_final(&sid, r.body["taskId"].as_str().unwrap(), Duration::from_secs(10)).await;
    assert_eq!(done["code"], "TASK_TIMEOUT", "{done}");
    // The session outlives its task's limit.
    assert_eq!(app.state(&key, &sid, "stop").await.status, 200);
    app.stop().await;
}

#[tokio::test]
async fn an_idle_session_expires() {
    let app = TestApp::spawn_with(|s| s.arg("idle-timeout-ms", 1000)).await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    // Waits on the stored end, not by messages to the session (a message is activity: it would keep it open).
    assert_eq!(app.wait_end_reason(&sid, Duration::from_secs(10)).await, "expired");
    app.state(&key, &sid, "stop").await.assert_error(404, "SESSION_NOT_FOUND");
    app.stop().await;
}

#[tokio::test]
async fn a_guardrail_is_shown_on_poll_and_answered_over_rest() {
    let app = quick_app().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({ "startingUrl": app.site.url("/form") })).await;
    let r = app
        .new_task(&key, &sid, "ask the human \"What name should I use?\"; type \"{answer}\" into \"Your name\"; press Enter; report the text of #result")
        .await;
    let tid = r.body["taskId"].as_str().unwrap().to_owned();
    let g = app.poll_until(&sid, &tid, Duration::from_secs(10), |b| b["type"] == "guardrail_trigger").await;
    assert_eq!(g["success"], true);
    assert_eq!(g["data"], json!({ "type": "human_input_needed", "value": "What name should I use?" }));
    let a =
        app.send(&key, &sid, json!({ "actionType": "guardrail", "newState": "resume", "taskDetails": "Grace" })).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let done = app.poll_final(&sid, &tid, Duration::from_secs(20)).await;
    assert_eq!(done["data"]["message"], "Thanks Grace ()");
    app.stop().await;
}

#[tokio::test]
async fn a_guardrail_answers_the_inline_wait_early() {
    let app = TestApp::spawn().await; // the inline wait is 20 s here
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "ask the human \"Which plan?\"" })).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["pending"], true, "{}", r.body);
    assert_eq!(r.body["type"], "guardrail_trigger");
    assert_eq!(r.body["data"]["value"], "Which plan?");
    let sid = r.body["sessionId"].as_str().unwrap();
    app.send(&key, sid, json!({ "actionType": "guardrail", "newState": "resume", "taskDetails": "Pro" })).await;
    let done = app.poll_final(sid, r.body["taskId"].as_str().unwrap(), Duration::from_secs(10)).await;
    assert_eq!(done["type"], "task_completed");
    app.stop().await;
}

#[tokio::test]
async fn a_stopped_task_leaves_its_session_open_whatever_terminate_on_completion_says() {
    let app = TestApp::spawn_with(|s| s.arg("task-wait-ms", 100)).await;
    let key = app.key().await;
    let long = "wait 5 seconds; report the title";
    let run = app.post("/start/run-task", &key, json!({ "taskDetails": long })).await;
    let from_run_task = run.body["sessionId"].as_str().expect("sessionId").to_owned();
    let opened = app.start_session(&key, json!({ "terminateOnCompletion": true })).await;
    let started = app.new_task(&key, &opened, long).await;
    assert_eq!(started.status, 200, "{}", started.body);
    // Both start calls answered after their 100 ms inline wait (`--task-wait-ms`), with the tasks running.
    for sid in [&from_run_task, &opened] {
        let stop = app.state(&key, sid, "stop").await;
        assert_eq!(stop.status, 200, "{}", stop.body);
        // The session stays open: it is not ended, and it takes (and completes) a new task, which a session
        // ended by the stop would refuse with 404.
        assert_eq!(app.end_reason(sid).await, None, "a stopped session stays open");
        let next = app.run_in(&key, sid, "report the url").await;
        assert_eq!(next["type"], "task_completed", "it takes a new task: {next}");
    }
    app.stop().await;
}
