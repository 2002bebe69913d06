//! Every endpoint's success shape, and tasks done by the offline planner on the fixture website.

use crate::helpers::TestApp;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn health_reports_free_instances_without_auth() {
    let app = TestApp::spawn().await;
    let r = app.get("/start/health").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["success"], true);
    assert_eq!(r.body["status"], "healthy");
    assert_eq!(r.body["instancesAvailable"], true);
    assert_eq!(r.body["instanceCount"], 3);
    let ts = r.body["timestamp"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(ts).is_ok(), "{ts}");
    app.stop().await;
}

#[tokio::test]
async fn active_sockets_lists_none_before_any_socket_connects() {
    let app = TestApp::spawn().await;
    let r = app.get("/start/active-sockets").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["success"], true);
    assert_eq!(r.body["sockets"], json!([]));
    assert_eq!(r.body["count"], 0);
    assert!(r.body["timestamp"].is_string());
    app.stop().await;
}

#[tokio::test]
async fn start_session_returns_every_spec_field() {
    let app = TestApp::spawn().await;
    let (_, key) = app.user(12.5).await;
    let r = app.post("/start/start-session", &key, json!({ "maxDuration": 120000 })).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let b = &r.body;
    assert_eq!(b["success"], true);
    assert!(b["sessionId"].as_str().is_some_and(|s| s.starts_with("ses_")));
    // The base URL with the session's socket capability (see socket_security.rs).
    let socket_url = b["socketURL"].as_str().expect("socketURL");
    let token = socket_url.strip_prefix(&format!("{}/?token=", app.base)).expect("base URL with a token");
    assert!(token.len() == 32 && token.chars().all(|c| c.is_ascii_hexdigit()), "{socket_url}");
    assert!(b["streaming"]["webRTCURL"].as_str().unwrap().starts_with(&app.base));
    assert!(b["streaming"]["webViewURL"].as_str().unwrap().starts_with(&app.base));
    assert_eq!(b["streaming"]["dimensions"], json!({ "width": 1024, "height": 600 }));
    assert_eq!(b["initialPrompt"], "");
    assert_eq!(b["expiresIn"], 120000);
    assert_eq!(b["balance"], 12.5);
    assert!(b["message"].is_string());
    assert!(b.get("taskId").is_none());
    app.stop().await;
}

#[tokio::test]
async fn start_session_with_a_task_returns_its_id_and_the_task_runs() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let details = format!("open {} then report the title", app.site.url("/"));
    let r = app.post("/start/start-session", &key, json!({ "taskDetails": details })).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["initialPrompt"], details);
    assert_eq!(r.body["expiresIn"], 300000);
    let (sid, tid) = (r.body["sessionId"].as_str().unwrap(), r.body["taskId"].as_str().unwrap());
    let done = app.poll_final(sid, tid, Duration::from_secs(30)).await;
    assert_eq!(done["data"]["message"], "Fixture Home", "{done}");
    app.stop().await;
}

#[tokio::test]
async fn run_task_completes_inline_and_closes_its_session() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let details = format!("open {}; click \"Pricing\"; report the text of \"#cheapest\"", app.site.url("/"));
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": details })).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let b = &r.body;
    assert_eq!(b["success"], true);
    assert_eq!(b["status"], "complete");
    assert_eq!(b["result"]["type"], "task_completed");
    assert_eq!(b["result"]["data"]["message"], "Basic $9");
    for f in ["prompt_tokens", "completion_tokens", "total_tokens", "completion_time"] {
        assert!(b["result"]["data"][f].is_number(), "{f} in {b}");
    }
    assert!(b["result"]["usage"]["cost"].as_f64().unwrap() > 0.0);
    let sid = b["sessionId"].as_str().unwrap();
    app.wait_session_gone(&key, sid, Duration::from_secs(5)).await;
    // The finished task stays pollable after its session closed.
    let polled = app.poll(sid, b["taskId"].as_str().unwrap()).await;
    assert_eq!(polled.body["type"], "task_completed");
    app.stop().await;
}

#[tokio::test]
async fn a_slow_task_answers_pending_then_polls_to_completion() {
    let app = TestApp::spawn_with(|s| s.arg("task-wait-ms", 300)).await;
    let key = app.key().await;
    let details = format!("open {}; wait 1500 ms; report the title", app.site.url("/pricing"));
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": details })).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"], "pending");
    assert_eq!(r.body["pending"], true);
    assert!(r.body["message"].is_string());
    let (sid, tid) = (r.body["sessionId"].as_str().unwrap(), r.body["taskId"].as_str().unwrap());
    assert_eq!(r.body["pollUrl"], format!("{}/task/{sid}/{tid}", app.base));
    let running = app.poll(sid, tid).await;
    assert_eq!(running.body["success"], true);
    assert_eq!(running.body["status"], "active");
    assert_eq!(running.body["pending"], true);
    for f in ["inputTokens", "outputTokens", "computeTime", "cost"] {
        assert!(running.body["usage"][f].is_number(), "{f} in {}", running.body);
    }
    let done = app.poll_final(sid, tid, Duration::from_secs(30)).await;
    assert_eq!(done["success"], true);
    assert_eq!(done["data"]["message"], "Pricing");
    assert!(chrono::DateTime::parse_from_rfc3339(done["completedAt"].as_str().unwrap()).is_ok());
    assert!(done["usage"]["computeTime"].as_f64().unwrap() >= 1.5);
    app.stop().await;
}

#[tokio::test]
async fn send_message_new_task_returns_the_result_inline() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let r = app
        .new_task(&key, &sid, &format!("open {} then report the text of #details", app.site.url("/pricing/details")))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["success"], true);
    assert_eq!(r.body["sessionId"], sid);
    assert!(r.body["taskId"].as_str().unwrap().starts_with("task_"));
    assert_eq!(r.body["result"]["type"], "task_completed");
    assert_eq!(r.body["result"]["data"]["message"], "All plans include support.");
    app.stop().await;
}

#[tokio::test]
async fn a_form_is_filled_by_label_placeholder_and_enter() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({ "startingUrl": app.site.url("/form") })).await;
    let done = app
        .run_in(&key, &sid, "type \"Ada\" into \"Your name\"; fill in Email address with ada@example.org; smile at the camera; report the text of #result")
        .await;
    // Smiling is not a step the planner knows: the whole task fails before touching the page.
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(done["code"], "INVALID_TASK_DETAILS");
    assert!(done["error"].as_str().unwrap().contains("step 3"), "{done}");
    let done = app
        .run_in(&key, &sid, "type \"Ada\" into \"Your name\"; fill in Email address with ada@example.org; type \"Hi\" into the Message field; click \"Send\"; report the text of #result")
        .await;
    assert_eq!(done["data"]["message"], "Thanks Ada (ada@example.org)", "{done}");
    let url = app.site.url("/form");
    let done = app
        .run_in(
            &key,
            &sid,
            &format!("open {url}; type \"Bo\" into \"Your name\"; press Enter; report the text of #result"),
        )
        .await;
    assert_eq!(done["data"]["message"], "Thanks Bo ()", "{done}");
    app.stop().await;
}

#[tokio::test]
async fn a_missing_element_fails_the_task_with_element_not_found() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let url = app.site.url("/vanish");
    let r = app
        .post(
            "/start/run-task",
            &key,
            json!({ "taskDetails": format!("open {url}; wait 600 ms; click \"Disappear\"") }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["success"], false);
    assert_eq!(r.body["status"], "failed");
    assert_eq!(r.body["code"], "ELEMENT_NOT_FOUND");
    let polled = app.poll(r.body["sessionId"].as_str().unwrap(), r.body["taskId"].as_str().unwrap()).await;
    assert_eq!(polled.status, 200);
    assert_eq!(polled.body["success"], false);
    assert_eq!(polled.body["status"], "failed");
    assert_eq!(polled.body["code"], "ELEMENT_NOT_FOUND");
    assert!(polled.body["error"].as_str().unwrap().contains("Disappear"));
    assert!(polled.body["usage"]["cost"].is_number());
    app.stop().await;
}

#[tokio::test]
async fn unknown_paths_and_methods_answer_in_the_error_format() {
    let app = TestApp::spawn().await;
    app.get("/nope").await.assert_error(404, "NOT_FOUND");
    app.get("/start/run-task").await.assert_error(405, "METHOD_NOT_ALLOWED");
    app.get("/task/ses_x/task_y").await.assert_error(404, "TASK_NOT_FOUND");
    // Under /v1 the error also carries the OpenAI-style object SDKs read.
    let v1 = app.get("/v1/embeddings").await;
    v1.assert_error(404, "NOT_FOUND");
    assert_eq!(v1.body["error"]["code"], "NOT_FOUND", "{}", v1.body);
    assert!(v1.body["error"]["message"].is_string());
    app.stop().await;
}

#[tokio::test]
async fn plain_steps_joined_by_and_and_commas_run_and_an_error_page_fails_the_task() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    // Issue 13's reproduction: the URL used to swallow "and report ...", land on a 404 page and answer
    // "complete" anyway.
    let run = |details: String| {
        let app = &app;
        let key = key.clone();
        async move { app.post("/start/run-task", &key, json!({ "taskDetails": details })).await }
    };
    let r = run(format!("Open {} and report the page title", app.site.url("/pricing"))).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    assert_eq!(r.body["result"]["data"]["message"], "Pricing", "{}", r.body);
    let r = run(format!("go to {}, click Pricing, report the url", app.site.url("/"))).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    assert_eq!(r.body["result"]["data"]["message"], app.site.url("/pricing"), "{}", r.body);
    // A page that answers 404 is a failed step, not a success.
    let r = run(format!("open {} and report the title", app.site.url("/no-such-page"))).await;
    assert_eq!(
        (r.body["status"].as_str(), r.body["code"].as_str()),
        (Some("failed"), Some("PAGE_HTTP_ERROR")),
        "{}",
        r.body
    );
    assert!(r.body["error"].as_str().unwrap_or_default().contains("HTTP 404"), "{}", r.body);
    app.stop().await;
}
