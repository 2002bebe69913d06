//! Session files: downloads a page makes (an attachment, a Blob made by script) land in the session's
//! area and the store, are listed with their sha256, served byte for byte, still after the session
//! ended, to their owner only; one over the cap is refused with a `download` event and not kept.

use crate::helpers::TestApp;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};
use webpilot_core::events::SessionEvent;
use webpilot_testkit::site::files::{BIG_BYTE, BLOB_TEXT, REPORT_CSV};

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

async fn get_with(app: &TestApp, key: &str, path: &str) -> reqwest::Response {
    app.client.get(format!("{}{path}", app.base)).bearer_auth(key).send().await.expect("request")
}

async fn list(app: &TestApp, key: &str, sid: &str) -> (u16, Value) {
    let r = get_with(app, key, &format!("/sessions/{sid}/files")).await;
    let status = r.status().as_u16();
    (status, r.json().await.expect("JSON"))
}

/// Polls the file list until it has `n` files (at most 20 s).
async fn wait_files(app: &TestApp, key: &str, sid: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = list(app, key, sid).await;
        assert_eq!(status, 200, "{body}");
        let files = body["files"].as_array().cloned().unwrap_or_default();
        if files.len() >= n {
            return files;
        }
        assert!(Instant::now() < deadline, "still {} files: {body}", files.len());
        tokio::time::sleep(crate::helpers::POLL).await;
    }
}

/// The session's `download` events, as the socket sends them, until `n` arrived (at most 20 s).
fn download_events(app: &TestApp, sid: &str, n: usize) -> tokio::task::JoinHandle<Vec<Value>> {
    let mut rx = app.app().manager.subscribe(sid).expect("live session");
    tokio::spawn(async move {
        let mut out = Vec::new();
        while out.len() < n {
            match tokio::time::timeout(Duration::from_secs(20), rx.recv()).await {
                Ok(Ok(ev @ SessionEvent::Download(_))) => {
                    let (name, payload) = ev.wire();
                    assert_eq!(name, "download");
                    out.push(payload);
                }
                Ok(Ok(_)) => {}
                _ => break,
            }
        }
        out
    })
}

#[tokio::test]
async fn downloads_are_listed_served_and_outlive_the_session_for_their_owner_only() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, _) = app.session_on(&key, "/files").await;
    let events = download_events(&app, &sid, 2);
    // One at a time: a click on the second while the first link's response is still pending would
    // cancel that navigation before it becomes a download.
    app.run_in(&key, &sid, "click \"Download report\"").await;
    wait_files(&app, &key, &sid, 1).await;
    app.run_in(&key, &sid, "click \"Make blob report\"").await;
    let files = wait_files(&app, &key, &sid, 2).await;
    let events = events.await.expect("events");
    let by_name =
        |name: &str| files.iter().find(|f| f["name"] == name).cloned().unwrap_or_else(|| panic!("{name} in {files:?}"));
    let csv = by_name("report.csv");
    assert_eq!(csv["sha256"], sha256(REPORT_CSV));
    assert_eq!(csv["bytes"], REPORT_CSV.len());
    assert_eq!((csv["mimeType"].as_str(), csv["source"].as_str()), (Some("text/csv"), Some("download")));
    let created = csv["createdAt"].as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
    assert!(
        created.is_some_and(|t| t.timestamp() > 0) && csv["createdAt"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{csv}"
    );
    let blob = by_name("blob-report.txt");
    assert_eq!(blob["sha256"], sha256(BLOB_TEXT.as_bytes()), "the Blob download is caught");
    for f in [&csv, &blob] {
        let announced = events.iter().find(|e| e["name"] == f["name"]).unwrap_or_else(|| panic!("{events:?}"));
        assert_eq!(announced["type"], "download");
        assert_eq!((&announced["sha256"], &announced["bytes"]), (&f["sha256"], &f["bytes"]));
    }

    app.state(&key, &sid, "terminate").await;
    app.wait_session_gone(&key, &sid, Duration::from_secs(20)).await;
    let r = get_with(&app, &key, &format!("/sessions/{sid}/files/report.csv")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/csv");
    assert_eq!(r.bytes().await.expect("body").as_ref(), REPORT_CSV, "the bytes after the session ended");
    let r = get_with(&app, &key, &format!("/sessions/{sid}/files/blob-report.txt")).await;
    assert_eq!(r.bytes().await.expect("body").as_ref(), BLOB_TEXT.as_bytes());

    let other = app.key().await;
    let (status, body) = list(&app, &other, &sid).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("SESSION_NOT_FOUND")), "{body}");
    let r = get_with(&app, &other, &format!("/sessions/{sid}/files/report.csv")).await;
    assert_eq!(r.status(), 404);

    let del = app.client.delete(format!("{}/sessions/{sid}/files/report.csv", app.base)).bearer_auth(&key);
    assert_eq!(del.send().await.expect("delete").status(), 200);
    let r = get_with(&app, &key, &format!("/sessions/{sid}/files/report.csv")).await;
    assert_eq!(r.status(), 404);
    assert_eq!(wait_files(&app, &key, &sid, 1).await.len(), 1, "the other file stays");
    app.stop().await;
}

#[tokio::test]
async fn a_download_over_the_file_cap_is_refused_with_an_event_and_not_kept() {
    let app = TestApp::spawn_with(|s| s.arg("max-file-bytes", 100_000)).await;
    let key = app.key().await;
    let (sid, _) = app.session_on(&key, "/files?bytes=3000000").await;
    let events = download_events(&app, &sid, 2);
    let first = download_events(&app, &sid, 1);
    // The big file first, and once it was refused, one under the cap (a click while the first link's
    // response is pending would cancel that navigation before it becomes a download).
    app.run_in(&key, &sid, "click \"Download big file\"").await;
    assert_eq!(first.await.expect("the first event").len(), 1);
    app.run_in(&key, &sid, "click \"Download report\"").await;
    let events = events.await.expect("events");
    let refused = events.iter().find(|e| e.get("error").is_some()).unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(refused["code"], "FILE_TOO_LARGE", "{refused}");
    let message = refused["error"].as_str().unwrap_or_default();
    assert!(message.contains("big.bin") && message.contains("100000"), "{message}");
    let files = wait_files(&app, &key, &sid, 1).await;
    let names: Vec<&str> = files.iter().filter_map(|f| f["name"].as_str()).collect();
    assert_eq!(names, ["report.csv"], "the refused file is not listed");
    assert!(files.iter().all(|f| f["sha256"] != sha256(&vec![BIG_BYTE; 3_000_000])));
    app.stop().await;
}

#[tokio::test]
async fn a_run_task_download_is_fetchable_after_the_session_closed_itself() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    // The bytes come 2 s after the headers: the task (and the session) ends while the download is under way.
    let details = "click \"Download slow report\"";
    let body = serde_json::json!({ "taskDetails": details, "startingUrl": app.site.url("/files") });
    let r = app.post("/start/run-task", &key, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.body["sessionId"].as_str().expect("sessionId").to_owned();
    app.wait_session_gone(&key, &sid, Duration::from_secs(30)).await;
    let files = wait_files(&app, &key, &sid, 1).await;
    assert_eq!(files[0]["sha256"], sha256(REPORT_CSV), "{files:?}");
    let r = get_with(&app, &key, &format!("/sessions/{sid}/files/report.csv")).await;
    assert_eq!(r.bytes().await.expect("body").as_ref(), REPORT_CSV);
    app.stop().await;
}

async fn upload(app: &TestApp, key: &str, sid: &str, name: &str, content: &[u8]) -> (u16, Value) {
    let url = format!("{}/sessions/{sid}/files", app.base);
    let r = app.client.post(url).query(&[("name", name)]).bearer_auth(key).body(content.to_vec()).send().await;
    let r = r.expect("upload");
    let status = r.status().as_u16();
    (status, r.json().await.expect("JSON"))
}

#[tokio::test]
async fn an_uploaded_file_is_set_on_the_page_by_the_planner_and_reaches_the_site() {
    let app = TestApp::spawn_with(|s| s.arg("max-file-bytes", 1000)).await;
    let key = app.key().await;
    let (sid, _) = app.session_on(&key, "/files/upload").await;
    let content: Vec<u8> = (0u8..=255).collect();
    let (status, body) = upload(&app, &key, &sid, "doc.bin", &content).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["file"]["source"].as_str(), body["file"]["sha256"].as_str()),
        (Some("upload"), Some(sha256(&content).as_str()))
    );
    for bad in ["../x", "a/b", "/etc/passwd", ".."] {
        let (status, body) = upload(&app, &key, &sid, bad, b"x").await;
        assert_eq!((status, body["code"].as_str()), (400, Some("INVALID_PARAMS")), "{bad}: {body}");
    }
    let (status, body) = upload(&app, &key, &sid, "big.bin", &[0u8; 1001]).await;
    assert_eq!((status, body["code"].as_str()), (413, Some("FILE_TOO_LARGE")), "{body}");

    let done = app
        .run_in(&key, &sid, "upload \"doc.bin\" into \"Document\"; click \"Send file\"; wait for \"received\"; report the text of #received")
        .await;
    let hex: String = content.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(done["data"]["message"], format!("doc.bin: received 256 bytes: {hex}"), "{done}");
    let refused = app.run_in(&key, &sid, "upload \"/etc/passwd\" into \"Document\"").await;
    assert_eq!(refused["status"], "failed", "a host path is never set: {refused}");
    app.stop().await;
}

#[tokio::test]
async fn the_upload_interaction_sets_a_session_file_on_the_input_at_a_point() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, _) = app.session_on(&key, "/files/upload").await;
    let (status, body) = upload(&app, &key, &sid, "note.txt", b"hello upload").await;
    assert_eq!(status, 200, "{body}");
    let y = 320.0 + f64::from(webpilot_core::geometry::CHROME_BAND);
    let action = |name: &str| serde_json::json!({ "actionType": "interaction", "action": { "type": "UPLOAD", "name": name, "x": 250, "y": y } });
    let r = app.send(&key, &sid, action("note.txt")).await;
    assert_eq!((r.status.as_u16(), &r.body["success"]), (200, &Value::Bool(true)), "{}", r.body);
    app.send(&key, &sid, action("../etc/passwd")).await.assert_error(400, "INVALID_PARAMS");
    let done = app.run_in(&key, &sid, "click \"Send file\"; wait for \"received\"; report the text of #received").await;
    let hex: String = b"hello upload".iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(done["data"]["message"], format!("note.txt: received 12 bytes: {hex}"), "{done}");
    app.stop().await;
}

#[tokio::test]
async fn the_model_agent_sets_an_uploaded_file_with_its_upload_file_tool() {
    let (app, model) = crate::agent::with_model(|s| s).await;
    let key = app.key().await;
    let (sid, started) = app.session_on(&key, "/files/upload").await;
    let content = b"model upload \x00\x01\x02".to_vec();
    let (status, body) = upload(&app, &key, &sid, "report.bin", &content).await;
    assert_eq!(status, 200, "{body}");
    model.push(vec![
        webpilot_testkit::Reply::call("upload_file", serde_json::json!({ "index": "@Document", "name": "report.bin" })),
        webpilot_testkit::Reply::call("click", serde_json::json!({ "index": "@Send file" })),
        webpilot_testkit::Reply::done("sent"),
    ]);
    let done = app.run_in(&key, &sid, "attach report.bin to the form and send it").await;
    assert_eq!(done["type"], "task_completed", "{done}");
    let hex: String = content.iter().map(|b| format!("{b:02x}")).collect();
    // What the page shows once the site answered, read over the session's DevTools endpoint.
    let seen = received_text(started["cdpURL"].as_str().expect("cdpURL")).await;
    assert_eq!(seen, format!("report.bin: received {} bytes: {hex}", content.len()));
    // A name outside the session's area is refused to the model, and nothing is set.
    model.push(vec![
        webpilot_testkit::Reply::call(
            "upload_file",
            serde_json::json!({ "index": "@Document", "name": "/etc/passwd" }),
        ),
        webpilot_testkit::Reply::done("tried"),
    ]);
    app.run_in(&key, &sid, "attach /etc/passwd").await;
    let results = crate::agent::tool_results(model.requests().last().expect("a model turn")).join("\n");
    assert!(results.contains("/etc/passwd") && !results.contains("Set the file \"/etc/passwd\""), "{results}");
    app.stop().await;
}

/// The fixture's `#received` text once the site answered an upload (a promise resolved by a
/// MutationObserver, evaluated over the session's DevTools endpoint).
async fn received_text(cdp_url: &str) -> String {
    let mut cdp = crate::cdp_client::Cdp::connect(cdp_url).await;
    let (_, page) = cdp.attach_page().await;
    let wait = "new Promise((resolve) => { const el = document.getElementById('received'); \
        const check = () => { if (el.textContent.includes('received')) resolve(el.textContent); }; \
        new MutationObserver(check).observe(el, { childList: true, characterData: true, subtree: true }); check(); })";
    cdp.eval(&page, wait).await.as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_multipart_upload_stores_its_file_part_under_its_filename() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, _) = app.session_on(&key, "/files/upload").await;
    let send = |filename: &str| {
        let body = format!(
            "--XyZ\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nnot the file\r\n\
             --XyZ\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"{filename}\"\r\n\
             Content-Type: text/plain\r\n\r\nhello multipart\r\n--XyZ--\r\n"
        );
        app.client
            .post(format!("{}/sessions/{sid}/files", app.base))
            .bearer_auth(&key)
            .header("content-type", "multipart/form-data; boundary=XyZ")
            .body(body)
            .send()
    };
    let r = send("form.txt").await.expect("upload");
    assert_eq!(r.status().as_u16(), 200);
    let body: Value = r.json().await.expect("JSON");
    assert_eq!(body["file"]["name"], "form.txt", "{body}");
    assert_eq!(body["file"]["sha256"], sha256(b"hello multipart"), "{body}");
    let r = send("../evil.txt").await.expect("upload");
    assert_eq!(r.status().as_u16(), 400, "a filename with a path in it is refused");
    let fetched = app.client.get(format!("{}/sessions/{sid}/files/form.txt", app.base)).bearer_auth(&key).send();
    assert_eq!(fetched.await.expect("fetch").bytes().await.expect("bytes").as_ref(), b"hello multipart");
    app.stop().await;
}
