//! The host's files and the service's data stay out of a tenant's reach: a DevTools drop of host files
//! reads nothing, the browser's user opens no file of the data directory (tightened at start, made private
//! after), and the database alone holds no key that mints a DevTools token or signs a webhook.

use crate::cdp_client::Cdp;
use crate::helpers::*;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A page that counts drops and reads every dropped file it is given.
const DROP_READER: &str = r#"(() => {
  window.drops = 0; window.read = [];
  for (const t of ['dragenter', 'dragover']) document.addEventListener(t, (e) => e.preventDefault());
  document.addEventListener('drop', async (e) => {
    e.preventDefault();
    for (const f of e.dataTransfer.files) window.read.push(f.name + ':' + (await f.text()).slice(0, 40));
    window.drops += 1;
  });
  return true;
})()"#;

#[tokio::test]
async fn a_devtools_drop_of_host_files_reads_nothing() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (_, body) = app.session_on(&key, "/").await;
    let mut cdp = Cdp::connect(body["cdpURL"].as_str().expect("cdpURL")).await;
    let (_, page) = cdp.attach_page().await;
    assert_eq!(cdp.eval(&page, DROP_READER).await, true);
    let db = app.data_dir().join("webpilot.db").display().to_string();
    let host = json!(["/etc/passwd", db, "/proc/self/cwd/data/webpilot.db", "/proc/self/environ"]);
    for kind in ["dragEnter", "dragOver", "drop"] {
        let data = json!({ "items": [], "files": host, "dragOperationsMask": 1 });
        let params = json!({ "type": kind, "x": 20, "y": 20, "data": data });
        let refused = cdp.call_in(&page, "Input.dispatchDragEvent", params).await.expect_err("refused");
        assert!(refused.contains("file area"), "{kind}: {refused}");
    }
    // Nested in Target.sendMessageToTarget, too.
    let inner = json!({ "id": 9, "method": "Input.dispatchDragEvent",
        "params": { "type": "drop", "x": 20, "y": 20, "data": { "items": [], "files": ["/etc/passwd"], "dragOperationsMask": 1 } } });
    let nested = json!({ "sessionId": page, "message": inner.to_string() });
    assert!(cdp.call("Target.sendMessageToTarget", nested).await.is_err());

    // A drop without files still reaches the page: the handler above is live, and it read nothing.
    let text = json!({ "items": [{ "mimeType": "text/plain", "data": "hello" }], "dragOperationsMask": 1 });
    for kind in ["dragEnter", "dragOver", "drop"] {
        let params = json!({ "type": kind, "x": 20, "y": 20, "data": text });
        cdp.call_in(&page, "Input.dispatchDragEvent", params).await.expect("a drop of text");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while cdp.eval(&page, "window.drops").await != 1 {
        assert!(Instant::now() < deadline, "the page never saw the text drop");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(cdp.eval(&page, "window.read").await, json!([]));
}

/// Every directory and file under `dir` (symbolic links are not followed).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_path_buf());
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        let meta = std::fs::symlink_metadata(&path).expect("meta");
        if meta.is_dir() {
            walk(&path, out);
        } else if meta.is_file() {
            out.push(path);
        }
    }
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Whether the browser's user (the one Chromium runs as) can open `path`.
fn browser_user_opens(path: &Path) -> bool {
    let id = |flag: &str| {
        let out = Command::new("id").args([flag, "webpilot-browser"]).output().expect("id");
        assert!(out.status.success(), "the browser user exists (scripts/test.sh makes it)");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let (uid, gid) = (id("-u"), id("-g"));
    let what = if path.is_dir() { "ls" } else { "cat" };
    Command::new("setpriv")
        .args([format!("--reuid={uid}"), format!("--regid={gid}"), "--clear-groups".into(), "--".into()])
        .args([what, &path.display().to_string()])
        .output()
        .expect("setpriv")
        .status
        .success()
}

async fn recording_started(app: &TestApp, key: &str) -> PathBuf {
    let body = json!({ "startingUrl": app.site.url("/"), "recording": true });
    let r = app.post("/start/start-session", key, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let dir = app.data_dir().join("recordings").join(r.body["sessionId"].as_str().expect("sessionId"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0) < 2 {
        assert!(Instant::now() < deadline, "the recording's files never appeared in {}", dir.display());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    dir
}

#[tokio::test]
async fn the_browsers_user_opens_no_file_of_the_data_directory() {
    assert_eq!(Command::new("id").arg("-u").output().expect("id").stdout, b"0\n", "the suite runs as root");
    let mut app = TestApp::spawn().await;
    let key = app.key().await;
    recording_started(&app, &key).await;

    // A data directory as an older version (or a copy) left it: open to everyone.
    let mut all = Vec::new();
    walk(app.data_dir(), &mut all);
    for p in &all {
        set_mode(p, if p.is_dir() { 0o755 } else { 0o644 });
    }
    assert!(browser_user_opens(&app.data_dir().join("profile.key")), "the loosened key file opens (the check works)");

    // A restart tightens it, and what is made after is private from the start.
    app.restart().await;
    let recording = recording_started(&app, &key).await;
    let mut all = Vec::new();
    walk(app.data_dir(), &mut all);
    assert!(all.iter().any(|p| p.starts_with(&recording) && p.is_file()), "{all:?}");
    assert!(all.iter().any(|p| p.ends_with("profile.key")) && all.iter().any(|p| p.ends_with("stream.key")));
    for p in &all {
        let mode = std::fs::symlink_metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, if p.is_dir() { 0o700 } else { 0o600 }, "{}", p.display());
        assert!(!browser_user_opens(p), "the browser's user opened {}", p.display());
    }
}

/// The raw value of a column, read straight from the database as a copy of it would give it.
async fn raw(app: &TestApp, query: &'static str, bind: &str) -> String {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&app.database_url()).await.expect("open the database");
    let value: String = sqlx::query_scalar(query).bind(bind).fetch_one(&pool).await.expect("row");
    pool.close().await;
    value
}

#[tokio::test]
async fn the_database_alone_mints_no_devtools_token_and_signs_no_webhook() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, body) = app.session_on(&key, "/").await;
    let cdp_url = body["cdpURL"].as_str().expect("cdpURL").to_owned();

    // The stream key as the database holds it: not the key, and no token made from it opens DevTools.
    let stored = raw(&app, "SELECT value FROM shared_secrets WHERE name = $1", "stream").await;
    let stream_key = std::fs::read_to_string(app.data_dir().join("stream.key")).expect("stream.key");
    assert!(!stored.contains(stream_key.trim()), "the stream key is in the database in clear");
    for name in ["socket", "node"] {
        let stored = raw(&app, "SELECT value FROM shared_secrets WHERE name = $1", name).await;
        assert!(stored.starts_with("sealed1:"), "{name}: {stored}");
    }
    let expires = chrono::Utc::now().timestamp() + 600;
    let candidates = [stored.clone(), stored.trim_start_matches("sealed1:").chars().take(64).collect()];
    for candidate in candidates.iter().filter_map(|c| webpilot_api::StreamKey::from_hex(c).ok()) {
        let token = candidate.issue(&sid, webpilot_api::Scope::Devtools, expires);
        let forged = format!("{}{token}", &cdp_url[..cdp_url.rfind("token=").expect("token=") + "token=".len()]);
        assert!(Cdp::try_connect(&forged, None).await.is_err(), "a token minted from the database opened DevTools");
    }
    assert!(Cdp::try_connect(&cdp_url, None).await.is_ok(), "the real cdpURL still opens");

    // A webhook's secret is shown once, and the database keeps it sealed (after a rotation too).
    let r = app.post("/webhooks", &key, json!({ "url": app.site.url("/hook") })).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let (id, secret) =
        (r.body["webhookId"].as_str().expect("webhookId").to_owned(), r.body["secret"].as_str().expect("secret"));
    let stored = raw(&app, "SELECT secret FROM webhooks WHERE id = $1", &id).await;
    let secret_body = secret.trim_start_matches("whsec_");
    assert!(stored.starts_with("sealed1:") && !stored.contains(secret_body), "{stored}");
    let rotated: Value = app.post(&format!("/webhooks/{id}/rotate-secret"), &key, json!({})).await.body;
    let new_secret = rotated["secret"].as_str().unwrap_or_else(|| panic!("{rotated}")).trim_start_matches("whsec_");
    let stored = raw(&app, "SELECT secret FROM webhooks WHERE id = $1", &id).await;
    let previous = raw(&app, "SELECT previous_secret FROM webhooks WHERE id = $1", &id).await;
    assert!(!stored.contains(new_secret) && !previous.contains(secret_body), "{stored} {previous}");
    assert!(previous.starts_with("sealed1:"), "{previous}");
}
