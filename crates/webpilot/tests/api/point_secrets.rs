//! A secret typed at a point never goes into a frame: a point does not tell which origin's document a
//! click there focuses, so a model that sees the page and types `<secret:…>` at (x, y) over a frame gets
//! SECRET_NOT_ALLOWED and nothing is typed; by the field's index, whose frame's host is known and allowed,
//! the same secret reaches the framed form.

use crate::agent::{tool_results, with_model};
use serde_json::json;
use std::time::Duration;
use webpilot_testkit::Reply;

const PASSWORD: &str = "framed-Pw-61x";

#[tokio::test]
async fn a_secret_typed_at_a_point_over_a_frame_is_refused_and_typed_by_index_it_arrives() {
    let (app, model) = with_model(|s| s.arg("llm-vision", true)).await;
    model.push(vec![
        // Every point of /login/framed is the frame holding the form.
        Reply::call("type", json!({ "x": 200, "y": 60, "text": "<secret:pw>" })),
        Reply::call("type", json!({ "index": "@Password", "text": "<secret:pw>" })),
        Reply::call("click", json!({ "index": "@Sign in" })),
        Reply::done("Signed in."),
    ]);
    let key = app.key().await;
    let secrets = json!({ "pw": { "value": PASSWORD, "domains": ["127.0.0.1"] } });
    let start = json!({ "secrets": secrets, "startingUrl": app.site.url("/login/framed"), "vision": "on" });
    let sid = app.start_session(&key, start).await;
    let task = json!({ "actionType": "newTask", "newState": "start", "taskDetails": "sign in", "cache": "off" });
    let r = app.send(&key, &sid, task).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let tid = r.body["taskId"].as_str().expect("taskId").to_owned();
    let done = app.poll_final(&sid, &tid, Duration::from_secs(60)).await;
    assert_eq!(done["data"]["message"], "Signed in.", "{done}");

    let reqs = model.requests();
    assert_eq!(reqs.len(), 4);
    let refused = tool_results(&reqs[1]);
    assert!(refused.iter().any(|t| t.contains("SECRET_NOT_ALLOWED") && t.contains("not into a frame")), "{refused:?}");
    // The form got the password once, typed by index: the point typed nothing.
    let welcome = app.site.requests().into_iter().filter(|r| r.path == "/login/welcome").collect::<Vec<_>>();
    assert_eq!(welcome.len(), 1, "{welcome:?}");
    let query = welcome[0].query.clone().unwrap_or_default();
    assert!(query.contains(&format!("pw={PASSWORD}")) && !query.contains(&format!("{PASSWORD}{PASSWORD}")), "{query}");
    assert!(!serde_json::to_string(&reqs).expect("json").contains(PASSWORD), "the model never saw the value");
    app.stop().await;
}
