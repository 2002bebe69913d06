//! The model agent's secrets and structured answers: a secret typed on an allowed page never reaches
//! the model, the events, the logs or the database; an outputSchema answer lands in `data.output`,
//! gets one retry, and fails with OUTPUT_INVALID after that.

use crate::agent::{collect_events, tool_results, with_model};
use crate::helpers::{holds, stored_bytes, TestApp};
use crate::logs::Logs;
use serde_json::{json, Value};
use std::time::Duration;
use webpilot_testkit::model::{content_text, last_observation};
use webpilot_testkit::Reply;

const USER: &str = "ada.lovelace-77";
const PASSWORD: &str = "hunter2-Zq9!x";
const ELSEWHERE: &str = "never-typed-4k2";

#[tokio::test]
async fn a_secret_is_typed_on_its_domain_and_never_leaves_the_service() {
    let logs = Logs::capture();
    let (app, model) = with_model(|s| s).await;
    model.push(vec![
        Reply::call("type", json!({ "index": "@Username", "text": "<secret:user>" })),
        Reply::call("type", json!({ "index": "@Password", "text": "<secret:pw>" })),
        Reply::call("type", json!({ "index": "@Username", "text": "<secret:elsewhere>" })),
        Reply::call("type", json!({ "index": "@Username", "text": "<secret:user>" })),
        Reply::call("click", json!({ "index": "@Sign in" })),
        Reply::call("find", json!({})),
        Reply::done("Signed in."),
    ]);
    let key = app.key().await;
    let secrets = json!({
        "user": USER,
        "pw": { "value": PASSWORD, "domains": ["127.0.0.1"] },
        "elsewhere": { "value": ELSEWHERE, "domains": ["example.com"] },
    });
    let sid = app.start_session(&key, json!({ "secrets": secrets, "startingUrl": app.site.url("/login") })).await;
    let events = collect_events(&app, &sid);
    let task = app
        .send(
            &key,
            &sid,
            json!({ "actionType": "newTask", "newState": "start", "taskDetails": "Sign in, then say so",
                    "secrets": { "pw": { "value": PASSWORD, "domains": ["127.0.0.1"] } } }),
        )
        .await;
    assert_eq!(task.status, 200, "{}", task.body);
    let tid = task.body["taskId"].as_str().expect("taskId").to_owned();
    let done = app.poll_final(&sid, &tid, Duration::from_secs(60)).await;
    assert_eq!(done["data"]["message"], "Signed in.", "{done}");

    let reqs = model.requests();
    let system = content_text(&reqs[0]["messages"][0]);
    assert!(system.contains("<secret:NAME>") && system.contains("pw (only on 127.0.0.1)"), "{system}");
    // The domain rule was enforced and told to the model.
    assert!(tool_results(&reqs[3]).iter().any(|t| t.contains("SECRET_NOT_ALLOWED")), "{:?}", tool_results(&reqs[3]));
    // The values reached the page: it echoes both, and the model reads them back as names.
    let welcome = last_observation(&reqs[5]);
    assert!(welcome.contains("Signed in as <secret:user>"), "{welcome}");
    assert!(welcome.contains("Your password is <secret:pw>"), "{welcome}");
    assert!(tool_results(&reqs[6]).iter().any(|t| t.contains("Your password is <secret:pw>")));

    let events = events.await.expect("events");
    assert!(events.iter().any(|e| e["type"] == "action" && e["data"]["name"] == "type"));
    // The last line the task writes: every earlier one is in the capture too.
    logs.wait_for("task finished").await;
    let seen = [
        ("model requests", serde_json::to_string(&reqs).expect("json")),
        ("events", serde_json::to_string(&events).expect("json")),
        ("task result", done.to_string()),
        ("logs", logs.text()),
    ];
    for (what, text) in &seen {
        for value in [USER, PASSWORD, ELSEWHERE, "hunter2-Zq9%21x"] {
            assert!(!text.contains(value), "a secret value is in the {what}");
        }
    }
    let stored = stored_bytes(&app).await;
    assert!(holds(&stored, &tid), "the database holds the task");
    for value in [USER, PASSWORD, ELSEWHERE] {
        assert!(!holds(&stored, value), "a secret value is in the database");
    }
    app.stop().await;
}

fn title_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "title": { "type": "string" }, "plans": { "type": "integer", "minimum": 1 } },
        "required": ["title", "plans"],
        "additionalProperties": false
    })
}

#[tokio::test]
async fn a_structured_answer_is_checked_retried_once_and_returned_as_data_output() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url("/pricing") })),
        Reply::call("done", json!({ "output": { "title": "Pricing", "plans": "three" } })),
        Reply::call("done", json!({ "output": { "title": "Pricing", "plans": 3 } })),
    ]);
    let key = app.key().await;
    let run = app
        .post("/start/run-task", &key, json!({ "taskDetails": "How many plans?", "outputSchema": title_schema() }))
        .await;
    assert_eq!(run.status, 200, "{}", run.body);
    let data = &run.body["result"]["data"];
    assert_eq!(data["output"], json!({ "title": "Pricing", "plans": 3 }), "{}", run.body);
    let message: Value = serde_json::from_str(data["message"].as_str().expect("message")).expect("json");
    assert_eq!(&message, &data["output"]);
    let reqs = model.requests();
    let done_tool =
        reqs[0]["tools"].as_array().expect("tools").iter().find(|t| t["function"]["name"] == "done").cloned();
    assert_eq!(done_tool.expect("done")["function"]["parameters"]["properties"]["output"], title_schema());
    let told = tool_results(&reqs[2]).join("\n");
    assert!(told.contains("OUTPUT_INVALID") && told.contains("/plans"), "{told}");

    // The stored answer is what a poll shows, after a restart too.
    let (sid, tid) = (run.body["sessionId"].as_str().expect("sid"), run.body["taskId"].as_str().expect("tid"));
    let mut app = app;
    app.restart().await;
    let polled = app.poll(sid, tid).await;
    assert_eq!(polled.body["data"]["output"], json!({ "title": "Pricing", "plans": 3 }), "{}", polled.body);
    app.stop().await;
}

#[tokio::test]
async fn a_model_that_cannot_satisfy_the_schema_fails_with_output_invalid() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![Reply::Text("There are three plans.".into()), Reply::done("three")]);
    let key = app.key().await;
    let run = app
        .post("/start/run-task", &key, json!({ "taskDetails": "How many plans?", "outputSchema": title_schema() }))
        .await;
    assert_eq!(run.body["status"], "failed", "{}", run.body);
    assert_eq!(run.body["code"], "OUTPUT_INVALID", "{}", run.body);
    assert_eq!(model.requests().len(), 2);
    app.stop().await;
}

#[tokio::test]
async fn chat_completions_with_a_json_schema_answer_with_json_content() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![Reply::call("done", json!({ "output": { "title": "Fixture Home", "plans": 1 } }))]);
    let key = app.key().await;
    let r = app
        .post(
            "/v1/chat/completions",
            &key,
            json!({ "model": "svc-browser-1", "messages": [{ "role": "user", "content": "Read the title" }],
                    "response_format": { "type": "json_schema",
                                         "json_schema": { "name": "page", "schema": title_schema(), "strict": true } } }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let content = r.body["choices"][0]["message"]["content"].as_str().expect("content");
    assert_eq!(
        serde_json::from_str::<Value>(content).expect("JSON content"),
        json!({ "title": "Fixture Home", "plans": 1 })
    );
    app.stop().await;
}

#[tokio::test]
async fn bad_secrets_and_schemas_are_refused_before_a_session_starts() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    for (body, code) in [
        (json!({ "taskDetails": "x", "secrets": ["pw"] }), "INVALID_PARAMS"),
        (json!({ "taskDetails": "x", "secrets": { "bad name": "v" } }), "INVALID_PARAMS"),
        (json!({ "taskDetails": "x", "secrets": { "pw": "" } }), "INVALID_PARAMETER"),
        (json!({ "taskDetails": "x", "secrets": { "pw": { "value": "v", "domains": "a.com" } } }), "INVALID_PARAMS"),
        (json!({ "taskDetails": "x", "outputSchema": "json" }), "INVALID_PARAMS"),
        (json!({ "taskDetails": "x", "outputSchema": { "type": "nope" } }), "INVALID_PARAMS"),
    ] {
        app.post("/start/run-task", &key, body).await.assert_error(400, code);
    }
    assert_eq!(app.app().manager.session_count(), 0, "no session was left behind");
    app.stop().await;
}

#[tokio::test]
async fn the_offline_planner_types_secrets_and_reports_them_masked() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let steps = format!(
        "open {}, type \"<secret:user>\" into \"Username\", type \"<secret:pw>\" into \"Password\", \
         click \"Sign in\", report the text of \"#pw\"",
        app.site.url("/login")
    );
    let secrets = json!({ "user": USER, "pw": { "value": PASSWORD, "domains": ["127.0.0.1"] } });
    let run = app.post("/start/run-task", &key, json!({ "taskDetails": steps, "secrets": secrets })).await;
    assert_eq!(run.body["status"], "complete", "{}", run.body);
    let message = run.body["result"]["data"]["message"].as_str().expect("message");
    assert!(message.contains("Your password is <secret:pw>"), "{message}");

    let elsewhere = json!({ "pw": { "value": PASSWORD, "domains": ["example.com"] } });
    let steps = format!("open {}, type \"<secret:pw>\" into \"Password\"", app.site.url("/login"));
    let run = app.post("/start/run-task", &key, json!({ "taskDetails": steps, "secrets": elsewhere })).await;
    assert_eq!(run.body["code"], "SECRET_NOT_ALLOWED", "{}", run.body);
    assert!(!run.body.to_string().contains(PASSWORD));
    app.stop().await;
}
