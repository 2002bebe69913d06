//! Every parameter bound and missing-field rule of the spec, answered with a coded 4xx.

use crate::helpers::TestApp;
use serde_json::{json, Value};

#[tokio::test]
async fn malformed_bodies_get_the_error_format() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    for path in ["/start/start-session", "/start/run-task", "/start/send-message"] {
        let r = app.post_raw(path, Some(&key), "{\"taskDetails\": ").await;
        r.assert_error(400, "INVALID_PARAMS");
        assert!(r.body["message"].as_str().unwrap().contains("not valid JSON"));
        app.post_raw(path, Some(&key), "[1, 2]").await.assert_error(400, "INVALID_PARAMS");
    }
    app.stop().await;
}

#[tokio::test]
async fn session_parameters_are_bounded() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let cases: Vec<(Value, u16, &str)> = vec![
        (json!({ "maxDuration": 999 }), 400, "INVALID_PARAMETER"),
        (json!({ "maxDuration": 300001 }), 400, "INVALID_PARAMETER"),
        (json!({ "maxDuration": -5 }), 400, "INVALID_PARAMETER"),
        (json!({ "maxDuration": 1500.5 }), 400, "INVALID_PARAMS"),
        (json!({ "maxDuration": "60000" }), 400, "INVALID_PARAMS"),
        (json!({ "maxInputTokens": 999 }), 400, "INVALID_PARAMETER"),
        (json!({ "maxInputTokens": 100001 }), 400, "INVALID_PARAMETER"),
        (json!({ "maxOutputTokens": 99 }), 400, "INVALID_PARAMETER"),
        (json!({ "maxOutputTokens": 50001 }), 400, "INVALID_PARAMETER"),
        (json!({ "startingUrl": "javascript:alert(1)" }), 400, "INVALID_PARAMETER"),
        (json!({ "startingUrl": 42 }), 400, "INVALID_PARAMS"),
        (json!({ "avoidDomains": "example.com" }), 400, "INVALID_PARAMS"),
        (json!({ "avoidDomains": [1] }), 400, "INVALID_PARAMS"),
        (json!({ "avoidDomains": ["  "] }), 400, "INVALID_PARAMETER"),
        (json!({ "mode": "turbo" }), 400, "INVALID_PARAMETER"),
        (json!({ "mode": 1 }), 400, "INVALID_PARAMS"),
        (json!({ "terminateOnCompletion": "yes" }), 400, "INVALID_PARAMS"),
        (json!({ "taskDetails": 7 }), 400, "INVALID_PARAMS"),
    ];
    for (body, status, code) in cases {
        let r = app.post("/start/start-session", &key, body.clone()).await;
        assert_eq!(r.body["code"], code, "{body} -> {}", r.body);
        r.assert_error(status, code);
    }
    // The edges of the ranges are accepted.
    let ok = app
        .post("/start/start-session", &key, json!({ "maxDuration": 1000, "maxInputTokens": 100000, "maxOutputTokens": 100, "mode": "default", "startingUrl": null }))
        .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    app.stop().await;
}

#[tokio::test]
async fn run_task_needs_task_details() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({})).await;
    r.assert_error(400, "MISSING_REQUIRED_FIELD");
    assert!(r.body["message"].as_str().unwrap().contains("taskDetails"));
    app.post("/start/run-task", &key, json!({ "taskDetails": "   " })).await.assert_error(400, "INVALID_TASK_DETAILS");
    app.post("/start/run-task", &key, json!({ "taskDetails": "x".repeat(20_001) }))
        .await
        .assert_error(400, "INVALID_TASK_DETAILS");
    app.stop().await;
}

#[tokio::test]
async fn send_message_needs_a_session_and_a_message() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    for body in [
        json!({}),
        json!({ "sessionId": "ses_x" }),
        json!({ "message": { "actionType": "state", "newState": "stop" } }),
    ] {
        let r = app.post("/start/send-message", &key, body).await;
        r.assert_error(400, "MISSING_REQUIRED_FIELD");
        assert_eq!(r.body["message"], "sessionId and message are required");
    }
    app.post("/start/send-message", &key, json!({ "sessionId": 5, "message": {} }))
        .await
        .assert_error(400, "INVALID_PARAMS");
    app.post("/start/send-message", &key, json!({ "sessionId": "s", "message": "stop" }))
        .await
        .assert_error(400, "INVALID_PARAMS");
    app.stop().await;
}

#[tokio::test]
async fn messages_are_validated_against_their_action_type() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "MISSING_REQUIRED_FIELD"),
        (json!({ "actionType": "dance" }), "INVALID_PARAMS"),
        (json!({ "actionType": 3 }), "INVALID_PARAMS"),
        (json!({ "actionType": "newTask", "newState": "start" }), "MISSING_REQUIRED_FIELD"),
        (json!({ "actionType": "newTask", "taskDetails": "x" }), "MISSING_REQUIRED_FIELD"),
        (json!({ "actionType": "newTask", "newState": "pause", "taskDetails": "x" }), "INVALID_PARAMS"),
        (
            json!({ "actionType": "newTask", "newState": "start", "taskDetails": "x", "maxDuration": 10 }),
            "INVALID_PARAMETER",
        ),
        (json!({ "actionType": "state" }), "MISSING_REQUIRED_FIELD"),
        (json!({ "actionType": "state", "newState": "start" }), "INVALID_PARAMS"),
        (json!({ "actionType": "state", "newState": "explode" }), "INVALID_PARAMS"),
        (json!({ "actionType": "interaction" }), "MISSING_REQUIRED_FIELD"),
        (json!({ "actionType": "interaction", "action": {} }), "MISSING_REQUIRED_FIELD"),
        (json!({ "actionType": "interaction", "action": { "type": "SWIPE" } }), "INVALID_PARAMS"),
        (json!({ "actionType": "interaction", "action": { "type": "CLICK", "x": 10 } }), "MISSING_REQUIRED_FIELD"),
        (json!({ "actionType": "interaction", "action": { "type": "CLICK", "x": 10, "y": 154 } }), "INVALID_PARAMETER"),
        (json!({ "actionType": "interaction", "action": { "type": "CLICK", "x": 10, "y": 601 } }), "INVALID_PARAMETER"),
        (
            json!({ "actionType": "interaction", "action": { "type": "DOUBLE_CLICK", "x": -1, "y": 300 } }),
            "INVALID_PARAMETER",
        ),
        (
            json!({ "actionType": "interaction", "action": { "type": "DOUBLE_CLICK", "x": 1025, "y": 300 } }),
            "INVALID_PARAMETER",
        ),
        (json!({ "actionType": "interaction", "action": { "type": "CLICK", "x": "10", "y": 300 } }), "INVALID_PARAMS"),
        (json!({ "actionType": "interaction", "action": { "type": "TYPE" } }), "MISSING_REQUIRED_FIELD"),
        (
            json!({ "actionType": "interaction", "action": { "type": "TYPE", "text": "a", "humanLike": "no" } }),
            "INVALID_PARAMS",
        ),
        (json!({ "actionType": "interaction", "action": { "type": "KEY_PRESS" } }), "MISSING_REQUIRED_FIELD"),
        (
            json!({ "actionType": "interaction", "action": { "type": "KEY_PRESS", "key": "Hyper" } }),
            "INVALID_PARAMETER",
        ),
        (json!({ "actionType": "guardrail", "newState": "resume" }), "MISSING_REQUIRED_FIELD"),
        (json!({ "actionType": "guardrail", "taskDetails": "x", "newState": "stop" }), "INVALID_PARAMS"),
    ];
    for (message, code) in cases {
        let r = app.send(&key, &sid, message.clone()).await;
        assert_eq!(r.body["code"], code, "{message} -> {}", r.body);
        r.assert_error(400, code);
    }
    // The session survived all of it.
    let done = app.run_in(&key, &sid, &format!("open {}; report the title", app.site.url("/"))).await;
    assert_eq!(done["data"]["message"], "Fixture Home");
    app.stop().await;
}

#[tokio::test]
async fn a_second_task_while_one_runs_is_refused() {
    let app = TestApp::spawn_with(|s| s.arg("task-wait-ms", 100)).await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let first = app.new_task(&key, &sid, "wait 3 seconds").await;
    assert_eq!(first.body["pending"], true, "{}", first.body);
    let r = app.new_task(&key, &sid, "report the title").await;
    r.assert_error(409, "TASK_ALREADY_RUNNING");
    app.state(&key, &sid, "stop").await;
    app.stop().await;
}

#[tokio::test]
async fn the_offline_planner_refuses_what_it_does_not_understand() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "find the cheapest plan and buy it" })).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["status"], "failed");
    assert_eq!(r.body["code"], "INVALID_TASK_DETAILS");
    assert!(r.body["error"].as_str().unwrap().contains("does not understand step 1"), "{}", r.body);
    app.stop().await;
}
