//! `replayOf`: a finished task's action trace replayed without the model — on a page whose layout
//! changed (the element found again by its name and line) — and handed over to the model at the first
//! step that cannot be found.

use crate::agent::with_model;
use crate::helpers::TestApp;
use serde_json::{json, Value};
use std::time::Duration;
use webpilot_testkit::Reply;

/// Runs a task that adds product 29 to the cart on `/shop`; returns its taskId and the tokens it used.
async fn add_product_29(app: &TestApp, model: &webpilot_testkit::ScriptedModel, key: &str) -> (String, u64) {
    model.push(vec![
        Reply::call("click", json!({ "index": "@line:Product 29 $:1" })),
        Reply::call("type", json!({ "index": "@Search products", "text": "socks", "press_enter": false })),
        Reply::done("Product 29 is in the cart."),
    ]);
    let r = app
        .post(
            "/start/run-task",
            key,
            json!({ "taskDetails": "add product 29 to the cart", "startingUrl": app.site.url("/shop") }),
        )
        .await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let tokens =
        r.body["usage"]["inputTokens"].as_u64().unwrap_or(0) + r.body["usage"]["outputTokens"].as_u64().unwrap_or(0);
    (r.body["taskId"].as_str().expect("taskId").to_owned(), tokens)
}

/// Starts a session whose first task replays `of` on `page`; returns the session, the task and its
/// final poll.
async fn replay_on(app: &TestApp, key: &str, of: &str, page: &str) -> (String, String, Value) {
    let r = app
        .post(
            "/start/start-session",
            key,
            json!({ "taskDetails": "add product 29 to the cart", "startingUrl": app.site.url(page), "replayOf": of }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.body["sessionId"].as_str().expect("sid").to_owned();
    let tid = r.body["taskId"].as_str().expect("taskId").to_owned();
    let done = app.poll_final(&sid, &tid, Duration::from_secs(60)).await;
    (sid, tid, done)
}

async fn page_eval(app: &TestApp, sid: &str, script: &str) -> Value {
    let page = app.app().manager.pages(sid).expect("live session").borrow().clone();
    page.eval(script).await.expect("eval")
}

#[tokio::test]
async fn a_replay_calls_the_model_zero_times_and_finds_moved_elements_by_name_and_line() {
    let (app, model) = with_model(|s| s).await;
    let key = app.key().await;
    let (task, tokens) = add_product_29(&app, &model, &key).await;
    let calls = model.requests().len();
    assert!(tokens > 0);

    // Product 29 now sits in a shadow root, so its CSS path no longer leads to it.
    let (sid, replay, done) = replay_on(&app, &key, &task, "/shop?layout=frames").await;
    assert_eq!(done["data"]["message"], "Product 29 is in the cart.", "{done}");
    assert_eq!(model.requests().len(), calls, "the replay called the model");
    let report = &done["data"]["replay"];
    assert_eq!(report["of"], task.as_str(), "{done}");
    assert_eq!((report["steps"].as_u64(), report["replayed"].as_u64()), (Some(3), Some(3)), "{done}");
    assert_eq!(report["tokensSaved"].as_u64(), Some(tokens), "{done}");
    assert!(report.get("handedOverAt").is_none());
    assert_eq!(done["data"]["prompt_tokens"], 0);
    assert_eq!(page_eval(&app, &sid, "document.getElementById('cart').textContent").await, "Cart: Product 29");
    assert_eq!(page_eval(&app, &sid, "document.querySelector('input[name=q]').value").await, "socks");

    // A replay leaves a trace of its own, so it can be replayed in turn.
    let (again, _, done) = replay_on(&app, &key, &replay, "/shop").await;
    assert_eq!(done["data"]["replay"]["replayed"], 3, "{done}");
    assert_eq!(page_eval(&app, &again, "document.getElementById('cart').textContent").await, "Cart: Product 29");
    assert_eq!(model.requests().len(), calls);
    app.stop().await;
}

#[tokio::test]
async fn a_replay_hands_over_to_the_model_where_an_element_is_gone() {
    let (app, model) = with_model(|s| s).await;
    let key = app.key().await;
    let (task, tokens) = add_product_29(&app, &model, &key).await;
    let calls = model.requests().len();
    model.push(vec![Reply::done("There is no product 29 on the pricing page.")]);
    let (_, _, done) = replay_on(&app, &key, &task, "/pricing").await;
    assert_eq!(done["data"]["message"], "There is no product 29 on the pricing page.", "{done}");
    let report = &done["data"]["replay"];
    assert_eq!(report["handedOverAt"], 1, "{done}");
    assert!(report["handedOverBecause"].as_str().is_some_and(|w| w.contains("Add to cart")), "{done}");
    assert_eq!(model.requests().len(), calls + 1);
    let used = done["data"]["total_tokens"].as_u64().expect("tokens");
    assert_eq!(report["tokensSaved"].as_u64(), Some(tokens.saturating_sub(used)), "{done}");
    let handover = serde_json::to_string(&model.requests()[calls]["messages"]).expect("json");
    assert!(handover.contains("replayed up to step 0 of 3"), "{handover}");
    app.stop().await;
}

#[tokio::test]
async fn replay_of_an_unknown_foreign_or_traceless_task_is_refused() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let other = app.key().await;
    // The offline planner leaves no trace.
    let steps = format!("open {}, report the title", app.site.url("/pricing"));
    let planned = app.post("/start/run-task", &key, json!({ "taskDetails": steps })).await;
    assert_eq!(planned.body["status"], "complete", "{}", planned.body);
    let planned = planned.body["taskId"].as_str().expect("taskId").to_owned();
    let body = |of: &str| json!({ "taskDetails": "again", "replayOf": of });
    app.post("/start/run-task", &key, body("no-such-task")).await.assert_error(404, "TASK_NOT_FOUND");
    app.post("/start/run-task", &other, body(&planned)).await.assert_error(404, "TASK_NOT_FOUND");
    app.post("/start/run-task", &key, body(&planned)).await.assert_error(400, "INVALID_PARAMS");
    app.post("/start/run-task", &key, json!({ "taskDetails": "x", "replayOf": 7 }))
        .await
        .assert_error(400, "INVALID_PARAMS");
    assert_eq!(app.app().manager.session_count(), 0, "no session was left behind");
    app.stop().await;
}
