//! The small hardening items of issue 32: a Bearer challenge on every 401, bad query strings in the JSON
//! error body, webhook events and URLs under one rule with the browser, what a missing `newState` wants,
//! no uploads into an ended session, RFC 9110 ranges on a recording's video, and the OpenAPI 404s.

use crate::helpers::{free_port, wait_until, TestApp};
use crate::recordings::ready;
use serde_json::{json, Value};
use std::time::Duration;

const CHALLENGE: &str = "Bearer realm=\"webpilot\"";

/// A GET whose reply must be the JSON error body (the harness panics on anything else).
async fn get_json(app: &TestApp, path: &str, key: Option<&str>) -> crate::helpers::Reply {
    let mut req = app.client.get(format!("{}{path}", app.base));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.expect("request");
    let (status, headers) = (resp.status(), resp.headers().clone());
    let text = resp.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: not JSON ({status}): {text}"));
    crate::helpers::Reply { status, headers, body }
}

#[tokio::test]
async fn every_401_carries_a_bearer_challenge_on_rest_mcp_and_devtools() {
    let app = TestApp::spawn().await;
    let no_key = app.post_raw("/start/start-session", None, "{}").await;
    no_key.assert_error(401, "UNAUTHORIZED");
    let bad_key = app.post_raw("/start/run-task", Some("wp_nope"), "{}").await;
    bad_key.assert_error(401, "INVALID_API_KEY");
    let webhooks = get_json(&app, "/webhooks", Some("wp_nope")).await;
    let mcp = app.post_raw("/mcp", None, json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string()).await;
    let cdp = get_json(&app, "/cdp/ses_unknown/json/version", None).await;
    let cdp_token = get_json(&app, "/cdp/ses_unknown/json/version?token=forged", None).await;
    for (what, r) in [
        ("no key", &no_key),
        ("bad key", &bad_key),
        ("webhooks", &webhooks),
        ("mcp", &mcp),
        ("cdp", &cdp),
        ("cdp token", &cdp_token),
    ] {
        assert_eq!(r.status, 401, "{what}: {}", r.body);
        assert_eq!(r.header("www-authenticate").as_deref(), Some(CHALLENGE), "{what}");
    }
    // Not on other errors.
    let missing = app.post("/start/run-task", &app.key().await, json!({})).await;
    missing.assert_error(400, "MISSING_REQUIRED_FIELD");
    assert_eq!(missing.header("www-authenticate"), None);
    app.stop().await;
}

#[tokio::test]
async fn a_malformed_query_string_gets_the_json_error_body_on_every_route() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    for path in [
        "/recordings?limit=99999999999999999999",
        "/recordings?limit=1&limit=2",
        "/recordings/ses_x/video.webm?token=a&token=b",
        "/recordings/ses_x/events?token=a&token=b",
        "/cdp/ses_x/json/version?token=a&token=b",
        "/stream/ses_x/view?token=a&token=b",
    ] {
        get_json(&app, path, Some(&key)).await.assert_error(400, "INVALID_PARAMS");
    }
    let upload = app
        .client
        .post(format!("{}/sessions/ses_x/files?name=a.txt&name=b.txt", app.base))
        .bearer_auth(&key)
        .body("hello")
        .send()
        .await
        .expect("upload");
    assert_eq!(upload.status(), 400);
    let body: Value = upload.json().await.expect("a JSON body");
    assert_eq!(body["code"], "INVALID_PARAMS", "{body}");
    assert!(body["message"].as_str().is_some_and(|m| m.contains("name")), "{body}");
    app.stop().await;
}

/// A path segment that is not valid percent-encoded UTF-8 (`%FF`) is refused like a bad query string: the
/// spec's JSON error body with `INVALID_PARAMS`, never axum's plain-text rejection.
#[tokio::test]
async fn a_malformed_path_segment_gets_the_json_error_body_on_every_route() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    for path in [
        "/sessions/%FF/files",
        "/sessions/ses_x/files/%FF",
        "/task/%FF/tsk_x",
        "/recordings/%FF",
        "/recordings/%FF/video.webm",
        "/profiles/%FF",
        "/webhooks/%FF/deliveries",
        "/stream/%FF/view",
        "/cdp/%FF/json/version",
        "/console/%FF",
    ] {
        let r = get_json(&app, path, Some(&key)).await;
        r.assert_error(400, "INVALID_PARAMS");
        assert!(r.body["message"].as_str().is_some_and(|m| m.contains("path")), "{path}: {}", r.body);
    }
    app.stop().await;
}

#[tokio::test]
async fn a_webhook_with_an_empty_event_list_is_refused_and_omitting_it_means_all() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let url = app.site.url("/hook");
    let empty = app.post("/webhooks", &key, json!({ "url": url, "events": [] })).await;
    empty.assert_error(400, "INVALID_PARAMETER");
    assert!(empty.body["message"].as_str().is_some_and(|m| m.contains("omit events")), "{}", empty.body);
    let all = app.post("/webhooks", &key, json!({ "url": url })).await;
    assert_eq!(all.status, 200, "{}", all.body);
    assert_eq!(all.body["events"].as_array().map(Vec::len), Some(6), "{}", all.body);
    app.stop().await;
}

#[tokio::test]
async fn localhost_is_a_webhook_target_under_the_browsers_rule_and_refusals_name_egress_allow() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let port = app.site.port();
    // The harness allows 127.0.0.1:<site port>; the browser reaches localhost:<site port> under it.
    let hook = json!({ "url": format!("http://localhost:{port}/hook"), "events": ["task.failed"] });
    let ok = app.post("/webhooks", &key, hook).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    let other = free_port();
    let refused = app.post("/webhooks", &key, json!({ "url": format!("http://localhost:{other}/hook") })).await;
    refused.assert_error(400, "INVALID_PARAMS");
    assert!(refused.body["message"].as_str().is_some_and(|m| m.contains("--egress-allow")), "{}", refused.body);

    // A navigation the policy refuses says which setting would allow it; its task.failed reaches the
    // localhost webhook (at 127.0.0.1, the allowed address).
    let body = json!({ "taskDetails": "report the title", "startingUrl": format!("http://127.0.0.1:{other}/") });
    let run = app.post("/start/run-task", &key, body).await;
    assert_eq!(run.status, 200, "{}", run.body);
    let (sid, tid) = (run.body["sessionId"].as_str().expect("sessionId"), run.body["taskId"].as_str().expect("taskId"));
    let done = app.poll_final(sid, tid, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert!(done["error"].as_str().is_some_and(|e| e.contains("--egress-allow")), "{done}");
    let site = &app.site;
    wait_until(Duration::from_secs(20), "the webhook delivery", || site.requests().iter().any(|r| r.path == "/hook"))
        .await;
    app.stop().await;
}

#[tokio::test]
async fn a_message_without_new_state_is_told_the_value_it_wants() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    for (message, wanted) in [
        (json!({ "actionType": "newTask", "taskDetails": "go" }), "\"start\""),
        (json!({ "actionType": "guardrail", "taskDetails": "42" }), "\"resume\""),
        (json!({ "actionType": "state" }), "\"terminate\""),
    ] {
        let r = app.send(&key, &sid, message).await;
        r.assert_error(400, "MISSING_REQUIRED_FIELD");
        let said = r.body["message"].as_str().unwrap_or_default();
        assert!(said.contains("newState") && said.contains(wanted), "{}", r.body);
    }
    app.stop().await;
}

#[tokio::test]
async fn an_ended_session_takes_no_uploads_but_keeps_its_files_readable() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let upload = |name: &str| {
        app.client.post(format!("{}/sessions/{sid}/files?name={name}", app.base)).bearer_auth(&key).body("hello").send()
    };
    assert_eq!(upload("before.txt").await.expect("upload").status(), 200);
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    app.wait_session_gone(&key, &sid, Duration::from_secs(20)).await;
    let after = upload("after.txt").await.expect("upload");
    assert_eq!(after.status(), 404);
    let body: Value = after.json().await.expect("json");
    assert_eq!(body["code"], "SESSION_NOT_FOUND", "{body}");
    assert!(body["message"].as_str().is_some_and(|m| m.contains("ended")), "{body}");
    let listed = get_json(&app, &format!("/sessions/{sid}/files"), Some(&key)).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let names: Vec<&str> =
        listed.body["files"].as_array().expect("files").iter().filter_map(|f| f["name"].as_str()).collect();
    assert_eq!(names, vec!["before.txt"], "{}", listed.body);
    app.stop().await;
}

#[tokio::test]
async fn a_recordings_video_serves_ranges_as_rfc_9110_says() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid =
        app.start_session(&key, json!({ "startingUrl": app.site.url("/paint?bg=ff0000"), "recording": true })).await;
    app.run_in(&key, &sid, "wait 1 second").await;
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    ready(&app, &key, &sid).await;
    let video = format!("{}/recordings/{sid}/video.webm", app.base);
    let get = |range: Option<&'static str>| {
        let mut req = app.client.get(&video).bearer_auth(&key);
        if let Some(r) = range {
            req = req.header("range", r);
        }
        req.send()
    };
    let whole = get(None).await.expect("video").bytes().await.expect("bytes");
    let size = whole.len();
    assert!(size > 100, "{size} bytes");
    let at = |r: reqwest::Response| async move {
        let (status, range) =
            (r.status().as_u16(), r.headers().get("content-range").map(|v| v.to_str().unwrap_or("").to_owned()));
        (status, range, r.bytes().await.expect("bytes"))
    };
    // A suffix longer than the video selects all of it.
    let (status, range, bytes) = at(get(Some("bytes=-99999999")).await.expect("suffix")).await;
    assert!(status == 206 || status == 200, "{status}");
    assert_eq!(bytes, whole);
    if status == 206 {
        assert_eq!(range, Some(format!("bytes 0-{}/{size}", size - 1)));
    }
    // Whitespace is allowed.
    let (status, _, bytes) = at(get(Some("bytes= 0-10")).await.expect("spaces")).await;
    assert_eq!((status, bytes.as_ref()), (206, &whole[..11]));
    // A last-byte-pos past 2^64 is clamped to the end.
    let (status, range, bytes) = at(get(Some("bytes=10-99999999999999999999999")).await.expect("huge")).await;
    assert_eq!((status, bytes.as_ref()), (206, &whole[10..]));
    assert_eq!(range, Some(format!("bytes 10-{}/{size}", size - 1)));
    // Several ranges: the whole video with 200.
    let (status, range, bytes) = at(get(Some("bytes=0-1,5-6")).await.expect("several")).await;
    assert_eq!((status, range, bytes), (200, None, whole.clone()));
    // A start past the end: 416.
    let (status, range, _) = at(get(Some("bytes=99999999-")).await.expect("past")).await;
    assert_eq!((status, range), (416, Some(format!("bytes */{size}"))));
    app.stop().await;
}

#[tokio::test]
async fn run_task_documents_and_answers_task_not_found_for_an_unknown_replay() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "again", "replayOf": "task_missing" })).await;
    r.assert_error(404, "TASK_NOT_FOUND");
    let doc = app.get("/openapi.json").await.body;
    for (method, path, status, code) in [
        ("post", "/start/run-task", "404", "TASK_NOT_FOUND"),
        ("post", "/start/start-session", "404", "TASK_NOT_FOUND"),
        ("post", "/start/send-message", "404", "TASK_NOT_FOUND"),
        ("post", "/webhooks", "400", "INVALID_PARAMETER"),
        ("post", "/sessions/{sessionId}/files", "404", "ended"),
        ("get", "/recordings/{sessionId}/video.webm", "400", "INVALID_PARAMS"),
        ("get", "/cdp/{sessionId}/json/version", "400", "INVALID_PARAMS"),
    ] {
        let said = doc["paths"][path][method]["responses"][status]["description"].as_str().unwrap_or_default();
        assert!(said.contains(code), "{method} {path} {status}: {said:?}");
    }
    app.stop().await;
}

/// The `newTask` body README.md shows in "Try it", with the shell's `$SID` put in.
fn readme_new_task(sid: &str) -> Value {
    let readme = include_str!("../../../../README.md");
    let start = readme.find("-d '{\n    \"sessionId\"").expect("README shows a send-message body") + 4;
    let end = start + readme[start..].find("}'").expect("the body's end") + 1;
    let body = readme[start..end].replace("'\"$SID\"'", sid);
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("README's body is not JSON ({e}): {body}"))
}

#[tokio::test]
async fn the_readmes_new_task_body_is_accepted_whole() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let body = readme_new_task(&sid);
    assert_eq!(body["message"]["actionType"], "newTask", "{body}");
    let r = app.post("/start/send-message", &key, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body["taskId"].as_str().is_some(), "{}", r.body);
    app.stop().await;
}

#[tokio::test]
async fn the_openapi_document_lists_the_statuses_every_route_can_answer() {
    let app = TestApp::spawn().await;
    let doc = app.get("/openapi.json").await.body;
    let paths = doc["paths"].as_object().expect("paths");
    let mut missing = Vec::new();
    for (path, ops) in paths {
        for (method, op) in ops.as_object().expect("operations") {
            let Some(responses) = op["responses"].as_object() else { continue };
            let keyed = op["security"].as_array().is_some_and(|s| s.iter().any(|r| r.get("apiKey").is_some()));
            let queried = op["parameters"].as_array().is_some_and(|ps| ps.iter().any(|p| p["in"] == "query"));
            // Requests for a session another node holds are forwarded to it (docs/scaling.md).
            let forwarded = ["/task/", "/stream/", "/cdp/"].iter().any(|p| path.starts_with(p));
            let mut want = Vec::new();
            if keyed {
                want.extend(["401", "500"]);
            }
            if queried {
                want.push("400");
            }
            if forwarded {
                want.push("503");
            }
            for status in want {
                if !responses.contains_key(status) {
                    missing.push(format!("{method} {path} {status}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "undocumented statuses: {missing:#?}");
    app.stop().await;
}
