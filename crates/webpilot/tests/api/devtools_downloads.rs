//! Playwright's `download` event over the DevTools endpoint: the relay passes the session's download events
//! on to a client that enabled them (also for a download from a same-origin iframe), while the file itself
//! lands in the session's file area.

use crate::clients::run_python;
use crate::helpers::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn playwrights_download_event_fires_and_the_file_reaches_the_sessions_files() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, body) = app.session_on(&key, "/").await;
    let cdp = body["cdpURL"].as_str().expect("cdpURL");
    let out = run_python("cdp_playwright_download.py", &[cdp, &app.site.url("")], &[], Duration::from_secs(90)).await;
    assert_eq!(out["suggested"], "report.csv", "{out}");
    assert_eq!(out["url"], app.site.url("/files/report.csv"), "{out}");
    assert!(out["failure"].is_null(), "the download completed: {out}");
    // From a same-origin iframe too, whose frame is no target of its own.
    let framed = &out["framed"];
    assert_eq!(
        (&framed["suggested"], &framed["url"]),
        (&json!("report.csv"), &json!(app.site.url("/files/report.csv")))
    );
    assert!(framed["failure"].is_null(), "the framed download completed: {out}");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let url = format!("{}/sessions/{sid}/files", app.base);
        let files: serde_json::Value =
            app.client.get(url).bearer_auth(&key).send().await.expect("files").json().await.expect("JSON");
        if files["files"].as_array().is_some_and(|f| f.iter().any(|f| f["name"] == "report.csv")) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the file never reached the session's files: {files}");
        tokio::time::sleep(crate::helpers::POLL).await;
    }
}
