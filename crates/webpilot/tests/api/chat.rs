//! `/v1/chat/completions` and `/v1/models` through the official `openai` Python SDK (and raw HTTP where
//! the SDK hides the wire: keep-alive comments, validation bodies, rate-limit headers).

use crate::clients::run_python;
use crate::helpers::TestApp;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(90);

async fn sdk(app: &TestApp, key: &str, mode: &str, task: &str) -> Value {
    run_python("chat_client.py", &[mode, task], &[("WEBPILOT_BASE", &app.base), ("WEBPILOT_KEY", key)], LIMIT).await
}

/// Waits until every browser instance is free again (no session or context left behind).
async fn assert_all_instances_free(app: &TestApp) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = app.get("/start/health").await;
        if r.body["instanceCount"] == 3 {
            assert_eq!(app.app().manager.session_count(), 0);
            return;
        }
        assert!(Instant::now() < deadline, "sessions left behind: {}", r.body);
        tokio::time::sleep(crate::helpers::POLL).await;
    }
}

fn pricing_task(app: &TestApp) -> String {
    format!("open {} then report the text of #cheapest", app.site.url("/pricing"))
}

#[tokio::test]
async fn the_openai_sdk_gets_the_task_result_as_the_assistant_message() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let r = sdk(&app, &key, "complete", &pricing_task(&app)).await;
    assert_eq!(r["content"], "Basic $9", "{r}");
    assert_eq!(r["role"], "assistant");
    assert_eq!(r["object"], "chat.completion");
    assert_eq!(r["model"], "svc-browser-1");
    assert_eq!(r["finish_reason"], "stop");
    assert!(r["id"].as_str().is_some_and(|id| id.starts_with("chatcmpl-")), "{r}");
    assert!(r["created"].as_u64().is_some_and(|c| c > 1_700_000_000), "{r}");
    let u = &r["usage"];
    assert_eq!(u["total_tokens"], u["prompt_tokens"].as_u64().unwrap() + u["completion_tokens"].as_u64().unwrap());
    let svc = &r["svc"];
    let (sid, tid) = (svc["sessionId"].as_str().unwrap(), svc["taskId"].as_str().unwrap());
    assert!(svc["cost"].as_f64().is_some_and(|c| c >= 0.0), "{r}");
    // The session it opened has ended and its open time is part of the cost (free in these tests).
    assert_eq!(svc["sessionCost"].as_f64(), Some(0.0), "{r}");
    // The task is recorded like any other, and its session is gone.
    let poll = app.poll(sid, tid).await;
    assert_eq!(poll.body["type"], "task_completed", "{}", poll.body);
    assert_all_instances_free(&app).await;
    app.stop().await;
}

#[tokio::test]
async fn the_openai_sdk_streams_role_content_and_a_final_stop_chunk() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let r = sdk(&app, &key, "stream", &pricing_task(&app)).await;
    assert_eq!(r["content"], "Basic $9", "{r}");
    let chunks = r["chunks"].as_array().unwrap();
    assert!(chunks.len() >= 3, "{r}");
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(chunks.iter().all(|c| c["object"] == "chat.completion.chunk" && c["model"] == "svc-browser-1"));
    assert!(chunks.iter().all(|c| c["id"] == chunks[0]["id"]));
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert!(last["choices"][0]["delta"]["content"].is_null(), "{last}");
    assert!(chunks[..chunks.len() - 1].iter().all(|c| c["choices"][0]["finish_reason"].is_null()));
    assert_all_instances_free(&app).await;
    app.stop().await;
}

#[tokio::test]
async fn models_lists_the_one_model() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let r = sdk(&app, &key, "models", "").await;
    assert_eq!(r["ids"], json!(["svc-browser-1"]));
    assert_eq!(r["owned_by"], json!(["webpilot"]));
    let raw = app.client.get(format!("{}/v1/models", app.base)).bearer_auth(&key).send().await.unwrap();
    assert!(raw.headers().get("x-ratelimit-limit").is_none(), "models is not rate limited");
    let body: Value = raw.json().await.unwrap();
    assert_eq!(body["object"], "list");
    assert_eq!(body["data"][0]["object"], "model");
    assert!(body["data"][0]["created"].is_u64());
    app.stop().await;
}

#[tokio::test]
async fn a_guardrail_is_a_400_guardrail_error_and_ends_the_session() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let task = "ask the human \"Which plan?\"";
    let r = sdk(&app, &key, "error", task).await;
    assert_eq!(r["raised"], "BadRequestError", "{r}");
    assert_eq!(r["status"], 400);
    let err = if r["body"]["error"].is_object() { &r["body"]["error"] } else { &r["body"] };
    assert_eq!(err["message"], "Guardrail triggered: Which plan?", "{r}");
    assert_eq!(err["type"], "guardrail_error");
    assert_eq!(err["code"], "guardrail_triggered");
    assert_all_instances_free(&app).await;
    // Streaming: headers are already sent, so the guardrail arrives as an error chunk.
    let r = sdk(&app, &key, "error-stream", task).await;
    assert_eq!(r["raised"], "APIError", "{r}");
    assert_eq!(r["body"]["code"], "guardrail_triggered", "{r}");
    assert_eq!(r["message"], "Guardrail triggered: Which plan?");
    assert_all_instances_free(&app).await;
    app.stop().await;
}

#[tokio::test]
async fn a_bad_key_is_a_401_in_the_sdk_with_both_error_shapes() {
    let app = TestApp::spawn().await;
    let r = sdk(&app, "unused", "bad-key", "report the title").await;
    assert_eq!(r["raised"], "AuthenticationError", "{r}");
    assert_eq!(r["status"], 401);
    let raw = app.post_raw("/v1/chat/completions", Some("wp_nope"), "{}").await;
    raw.assert_error(401, "INVALID_API_KEY");
    assert_eq!(raw.body["error"]["type"], "authentication_error");
    assert_eq!(raw.body["error"]["code"], "INVALID_API_KEY");
    app.stop().await;
}

#[tokio::test]
async fn a_failed_task_is_a_502_that_sdks_do_not_retry() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let body = json!({
        "model": "svc-browser-1",
        "messages": [{ "role": "user", "content": format!("open {} then click \"No such button\"", app.site.url("/")) }],
    });
    let r = app.post("/v1/chat/completions", &key, body).await;
    assert_eq!(r.status, 502, "{}", r.body);
    assert_eq!(r.header("x-should-retry").as_deref(), Some("false"));
    assert_eq!(r.body["success"], false);
    assert_eq!(r.body["error"]["type"], "server_error");
    assert!(r.body["error"]["code"].is_string(), "{}", r.body);
    assert_all_instances_free(&app).await;
    app.stop().await;
}

#[tokio::test]
async fn bad_requests_are_refused_before_any_session_starts() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let user = json!([{ "role": "user", "content": "report the title" }]);
    let cases = [
        (json!({ "messages": user }), 400, "MISSING_REQUIRED_FIELD"),
        (json!({ "model": "gpt-4o", "messages": user }), 404, "MODEL_NOT_FOUND"),
        (json!({ "model": "svc-browser-1", "messages": [] }), 400, "INVALID_PARAMS"),
        (
            json!({ "model": "svc-browser-1", "messages": [{ "role": "system", "content": "x" }] }),
            400,
            "INVALID_PARAMS",
        ),
        (json!({ "model": "svc-browser-1", "messages": user, "max_tokens": -5 }), 400, "INVALID_PARAMETER"),
        (json!({ "model": "svc-browser-1", "messages": user, "stream": "yes" }), 400, "INVALID_PARAMS"),
    ];
    for (body, status, code) in cases {
        let r = app.post("/v1/chat/completions", &key, body.clone()).await;
        r.assert_error(status, code);
        assert_eq!(r.body["error"]["code"], code, "{body}");
        assert!(r.header("x-ratelimit-limit").is_some(), "chat completions is rate limited");
    }
    assert_eq!(app.app().manager.session_count(), 0);
    app.stop().await;
}

#[tokio::test]
async fn streaming_sends_keep_alive_comments_while_the_task_runs() {
    let app = TestApp::spawn_with(|s| s.arg("chat-keep-alive-ms", 200)).await;
    let key = app.key().await;
    let task = format!("open {}; wait 2 seconds; report the title", app.site.url("/"));
    let body = json!({ "model": "svc-browser-1", "stream": true, "messages": [{ "role": "user", "content": task }] });
    let resp = app
        .client
        .post(format!("{}/v1/chat/completions", app.base))
        .bearer_auth(&key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let text = resp.text().await.unwrap();
    assert!(text.contains(": keep-alive\n\n"), "{text}");
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    let data: Vec<Value> = text
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let last = data.last().unwrap();
    assert_eq!(last["choices"][0]["delta"], json!({}));
    assert!(last["svc"]["sessionId"].is_string(), "{last}");
    app.stop().await;
}

#[tokio::test]
async fn a_client_that_disconnects_mid_stream_leaves_no_session_behind() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let task = format!("open {}; wait 20 seconds; report the title", app.site.url("/"));
    let body = json!({ "model": "svc-browser-1", "stream": true, "messages": [{ "role": "user", "content": task }] });
    let mut resp = app
        .client
        .post(format!("{}/v1/chat/completions", app.base))
        .bearer_auth(&key)
        .json(&body)
        .send()
        .await
        .unwrap();
    let first = resp.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("\"role\":\"assistant\""));
    assert_eq!(app.app().manager.session_count(), 1);
    drop(resp);
    assert_all_instances_free(&app).await;
    app.stop().await;
}
