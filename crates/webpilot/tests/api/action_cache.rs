//! The action cache: the same task again is replayed without the model (`cache: "hit"`); a page whose
//! button was renamed and moved is healed by the model from that step and the entry rewritten
//! (`"healed"`, then `"hit"` again); another user's task and `cache: "off"` ask the model; entries
//! survive a restart and are listed and deleted by their owner alone (`GET /cache`, `DELETE /cache/{id}`).

use crate::agent::with_model;
use crate::helpers::{Reply, TestApp};
use serde_json::{json, Value};
use std::time::Duration;
use webpilot_testkit::Reply as ModelReply;

const TASK: &str = "Subscribe ann@example.com to the newsletter";
const ANSWER: &str = "Subscribed ann@example.com.";

/// What the model does on the first design: type the email, press Subscribe, answer.
fn first_design_script() -> Vec<ModelReply> {
    vec![
        ModelReply::call("type", json!({ "index": "@Email", "text": "ann@example.com", "press_enter": false })),
        ModelReply::call("click", json!({ "index": "@Subscribe" })),
        ModelReply::done(ANSWER),
    ]
}

/// Runs the newsletter task in a new session of `key` (with `extra` body fields); returns the final poll
/// and the page's status line, then ends the session.
async fn subscribe(app: &TestApp, key: &str, extra: Value) -> (Value, Value) {
    let mut body = json!({ "taskDetails": TASK, "startingUrl": app.site.url("/newsletter") });
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let r = app.post("/start/start-session", key, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.body["sessionId"].as_str().expect("sessionId").to_owned();
    let tid = r.body["taskId"].as_str().expect("taskId").to_owned();
    let done = app.poll_final(&sid, &tid, Duration::from_secs(60)).await;
    let page = app.app().manager.pages(&sid).expect("live session").borrow().clone();
    let status = page.eval("(document.getElementById('status') || {}).textContent ?? null").await.expect("eval");
    let end = app.state(key, &sid, "terminate").await;
    assert_eq!(end.status, 200, "{}", end.body);
    (done, status)
}

fn cost(done: &Value) -> f64 {
    done["usage"]["cost"].as_f64().expect("usage.cost")
}

async fn call(app: &TestApp, method: reqwest::Method, path: &str, key: &str) -> Reply {
    let resp =
        app.client.request(method, format!("{}{path}", app.base)).bearer_auth(key).send().await.expect("request");
    let (status, headers) = (resp.status(), resp.headers().clone());
    let text = resp.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
    Reply { status, headers, body }
}

#[tokio::test]
async fn a_repeated_task_is_replayed_without_the_model_and_a_changed_page_is_healed() {
    let (app, model) = with_model(|s| s).await;
    let key = app.key().await;

    model.push(first_design_script());
    let (first, status) = subscribe(&app, &key, json!({})).await;
    assert_eq!(first["data"]["cache"], "miss", "{first}");
    assert_eq!(first["data"]["message"], ANSWER, "{first}");
    assert_eq!(status, "Subscribed: ann@example.com");
    let calls = model.requests().len();
    assert_eq!(calls, 3);

    // The same task again: every step's target is found; the model is not asked.
    let (second, status) = subscribe(&app, &key, json!({})).await;
    assert_eq!(second["data"]["cache"], "hit", "{second}");
    assert_eq!(second["data"]["message"], ANSWER, "{second}");
    assert_eq!(second["data"]["total_tokens"], 0, "{second}");
    assert_eq!(status, "Subscribed: ann@example.com", "the replay typed and clicked");
    assert_eq!(model.requests().len(), calls, "a hit called the model");
    assert!(cost(&second) < cost(&first), "a hit costs less: {} vs {}", cost(&second), cost(&first));

    // The button is renamed and moved: the replay types, then cannot find "Subscribe"; the model takes
    // over from that step, knowing what was done.
    app.site.set_newsletter_redesign(true);
    model.push(vec![ModelReply::call("click", json!({ "index": "@Sign up" })), ModelReply::done(ANSWER)]);
    let (third, status) = subscribe(&app, &key, json!({})).await;
    assert_eq!(third["data"]["cache"], "healed", "{third}");
    assert_eq!(third["data"]["message"], ANSWER, "{third}");
    assert_eq!(status, "Subscribed: ann@example.com");
    assert_eq!(model.requests().len(), calls + 2, "the model did the changed step and the answer");
    let handover = serde_json::to_string(&model.requests()[calls]["messages"]).expect("json");
    assert!(handover.contains("replayed up to step 1 of 3"), "{handover}");
    assert!(handover.contains("1. type"), "the run so far is in the model's context: {handover}");

    // The healed run replaced the entry: the redesign is a hit now.
    let (fourth, status) = subscribe(&app, &key, json!({})).await;
    assert_eq!(fourth["data"]["cache"], "hit", "{fourth}");
    assert_eq!(status, "Subscribed: ann@example.com");
    assert_eq!(model.requests().len(), calls + 2);
    app.stop().await;
}

/// The start page's fingerprint is its shape, not its title alone: another page under the same path and title
/// is a miss; the same page with other changing text (its visit counter and clock) is a hit.
#[tokio::test]
async fn another_page_under_the_same_path_and_title_is_a_miss_and_changing_text_is_still_a_hit() {
    let (app, model) = with_model(|s| s).await;
    let key = app.key().await;
    model.push(first_design_script());
    let (first, _) = subscribe(&app, &key, json!({})).await;
    assert_eq!(first["data"]["cache"], "miss", "{first}");
    let (again, status) = subscribe(&app, &key, json!({})).await;
    assert_eq!(again["data"]["cache"], "hit", "the visit counter and the clock moved on: {again}");
    assert_eq!(status, "Subscribed: ann@example.com");
    assert_eq!(model.requests().len(), 3);

    // The archive: the same origin, path (the key drops the query) and title, but links and no form. The model
    // is asked from the start; no cached run is tried and handed over.
    model.push(vec![ModelReply::done("There is no form here, only the archive.")]);
    let archive = json!({ "startingUrl": app.site.url("/newsletter?look=archive") });
    let (other, _) = subscribe(&app, &key, archive).await;
    assert_eq!(other["data"]["cache"], "miss", "{other}");
    assert_eq!(model.requests().len(), 4);
    let asked = serde_json::to_string(&model.requests()[3]["messages"]).expect("json");
    assert!(!asked.contains("replayed up to step"), "{asked}");
    app.stop().await;
}

#[tokio::test]
async fn another_users_task_is_a_miss_and_cache_off_always_asks_the_model() {
    let (app, model) = with_model(|s| s).await;
    let (key, other) = (app.key().await, app.key().await);
    model.push(first_design_script());
    let (first, _) = subscribe(&app, &key, json!({})).await;
    assert_eq!(first["data"]["cache"], "miss", "{first}");

    model.push(first_design_script());
    let (theirs, status) = subscribe(&app, &other, json!({})).await;
    assert_eq!(theirs["data"]["cache"], "miss", "another user's run is not theirs: {theirs}");
    assert_eq!(status, "Subscribed: ann@example.com");
    assert_eq!(model.requests().len(), 6);

    for round in 1..=2 {
        model.push(first_design_script());
        let (off, _) = subscribe(&app, &key, json!({ "cache": "off" })).await;
        assert_eq!(off["data"]["cache"], "off", "{off}");
        assert_eq!(model.requests().len(), 6 + 3 * round, "cache off asks the model");
    }
    let bad = app.post("/start/run-task", &key, json!({ "taskDetails": TASK, "cache": "sometimes" })).await;
    bad.assert_error(400, "INVALID_PARAMS");
    app.post("/start/run-task", &key, json!({ "taskDetails": TASK, "cache": true }))
        .await
        .assert_error(400, "INVALID_PARAMS");
    app.stop().await;
}

#[tokio::test]
async fn entries_survive_a_restart_and_are_listed_and_deleted_by_their_owner_alone() {
    let (mut app, model) = with_model(|s| s).await;
    let (key, other) = (app.key().await, app.key().await);
    model.push(first_design_script());
    let (first, _) = subscribe(&app, &key, json!({})).await;
    assert_eq!(first["data"]["cache"], "miss", "{first}");

    app.restart().await;
    let (again, status) = subscribe(&app, &key, json!({})).await;
    assert_eq!(again["data"]["cache"], "hit", "{again}");
    assert_eq!(status, "Subscribed: ann@example.com");
    assert_eq!(model.requests().len(), 3);

    let listed = call(&app, reqwest::Method::GET, "/cache", &key).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.body["total"], 1, "{}", listed.body);
    let entry = &listed.body["entries"][0];
    assert_eq!(entry["taskDetails"], TASK, "{entry}");
    assert_eq!(entry["startingUrl"], app.site.url("/newsletter"), "{entry}");
    assert_eq!((entry["steps"].as_u64(), entry["hits"].as_u64()), (Some(3), Some(1)), "{entry}");
    assert!(entry["tokens"].as_u64().is_some_and(|t| t > 0), "{entry}");
    let id = entry["id"].as_str().expect("id").to_owned();
    assert!(!listed.body.to_string().contains("ann@example.com\""), "steps are not listed");

    let theirs = call(&app, reqwest::Method::GET, "/cache", &other).await;
    assert_eq!((theirs.body["total"].as_i64(), theirs.body["entries"].as_array().map(Vec::len)), (Some(0), Some(0)));
    call(&app, reqwest::Method::GET, "/cache?limit=0", &key).await.assert_error(400, "INVALID_PARAMETER");
    let path = format!("/cache/{id}");
    call(&app, reqwest::Method::DELETE, &path, &other).await.assert_error(404, "NOT_FOUND");
    let removed = call(&app, reqwest::Method::DELETE, &path, &key).await;
    assert_eq!((removed.status.as_u16(), removed.body["success"].as_bool()), (200, Some(true)), "{}", removed.body);
    call(&app, reqwest::Method::DELETE, &path, &key).await.assert_error(404, "NOT_FOUND");

    // Deleted: the model is asked again.
    model.push(first_design_script());
    let (after, _) = subscribe(&app, &key, json!({})).await;
    assert_eq!(after["data"]["cache"], "miss", "{after}");
    assert_eq!(model.requests().len(), 6);
    app.stop().await;
}

/// A chat completion of the newsletter task after `conversation` (its earlier messages), with `metadata`;
/// answers the completion's body.
async fn chat(app: &TestApp, key: &str, conversation: &str, metadata: Value) -> Value {
    let task = format!("Subscribe the subscriber to the newsletter at {}", app.site.url("/newsletter"));
    let body = json!({
        "model": "svc-browser-1",
        "messages": [{ "role": "system", "content": conversation }, { "role": "user", "content": task }],
        "metadata": metadata,
    });
    let r = app.post("/v1/chat/completions", key, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

/// What the model does for a chat: open the page, type the email it was told, press Subscribe, answer.
fn chat_script(app: &TestApp, email: &str) -> Vec<ModelReply> {
    vec![
        ModelReply::call("navigate", json!({ "url": app.site.url("/newsletter") })),
        ModelReply::call("type", json!({ "index": "@Email", "text": email, "press_enter": false })),
        ModelReply::call("click", json!({ "index": "@Subscribe" })),
        ModelReply::done(&format!("Subscribed {email}.")),
    ]
}

#[tokio::test]
async fn a_chat_is_replayed_only_after_the_same_conversation_and_metadata_can_turn_the_cache_off() {
    let (app, model) = with_model(|s| s).await;
    let key = app.key().await;
    let ann = "The subscriber is ann@example.com.";
    model.push(chat_script(&app, "ann@example.com"));
    let first = chat(&app, &key, ann, json!({})).await;
    assert_eq!(first["choices"][0]["message"]["content"], "Subscribed ann@example.com.", "{first}");
    assert_eq!(model.requests().len(), 4);

    // The same conversation again: replayed without the model.
    let again = chat(&app, &key, ann, json!({})).await;
    assert_eq!(again["choices"][0]["message"]["content"], "Subscribed ann@example.com.", "{again}");
    assert_eq!(again["usage"]["total_tokens"], 0, "{again}");
    assert_eq!(model.requests().len(), 4, "the same conversation is a hit");

    // The same last message after another conversation asks for another thing: the model is asked, and
    // types what this conversation says.
    model.push(chat_script(&app, "bob@example.com"));
    let bob = chat(&app, &key, "The subscriber is bob@example.com.", json!({})).await;
    assert_eq!(bob["choices"][0]["message"]["content"], "Subscribed bob@example.com.", "{bob}");
    assert_eq!(model.requests().len(), 8, "another conversation is a miss");
    let asked = serde_json::to_string(&model.requests()[4]["messages"]).expect("json");
    assert!(asked.contains("bob@example.com"), "the model saw this conversation: {asked}");

    // metadata.cache "off": the model is asked although the run is cached.
    model.push(chat_script(&app, "ann@example.com"));
    let off = chat(&app, &key, ann, json!({ "cache": "off" })).await;
    assert!(off["usage"]["total_tokens"].as_u64().is_some_and(|t| t > 0), "{off}");
    assert_eq!(model.requests().len(), 12, "cache off asks the model");

    let bad = json!({ "model": "svc-browser-1", "messages": [{ "role": "user", "content": "report the title" }],
        "metadata": { "cache": "sometimes" } });
    let r = app.post("/v1/chat/completions", &key, bad).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.to_string().contains("metadata.cache"), "{}", r.body);
    app.stop().await;
}
