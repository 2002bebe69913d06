//! Remote browsers (`--browser-endpoint`): the node launches no Chromium and drives one that runs on its
//! own (here a headless Chromium the test starts, as the unprivileged user, standing for another host),
//! with the same egress policy: every request of a session goes through the node's proxy.

use crate::helpers::TestApp;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use webpilot_testkit::Decoy;

/// A headless Chromium with its DevTools endpoint open, in a process group of its own.
struct RemoteChromium {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    http: String,
    _profile: tempfile::TempDir,
}

impl RemoteChromium {
    fn start() -> RemoteChromium {
        let profile = tempfile::tempdir().expect("profile");
        // What a browser host is told to set up (docs/scaling.md): no UDP around the proxy for WebRTC.
        let prefs = json!({ "webrtc": { "ip_handling_policy": "disable_non_proxied_udp",
            "multiple_routes_enabled": false, "nonproxied_udp_enabled": false } });
        std::fs::create_dir_all(profile.path().join("Default")).expect("profile dir");
        std::fs::write(profile.path().join("Default/Preferences"), prefs.to_string()).expect("preferences");
        let args = [
            "--headless".to_owned(),
            "--remote-debugging-port=0".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
            "--disable-gpu".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup".to_owned(),
            "about:blank".to_owned(),
        ];
        // As root, as the unprivileged user the suite creates, with the sandbox on.
        let mut cmd = if nix_is_root() {
            let chown = Command::new("chown").args(["-R", "webpilot-browser"]).arg(profile.path()).status();
            assert!(chown.is_ok_and(|s| s.success()), "chown the profile");
            let mut c = Command::new("runuser");
            c.args(["-u", "webpilot-browser", "--", "/usr/bin/chromium"]);
            c
        } else {
            Command::new("/usr/bin/chromium")
        };
        let mut child = cmd
            .args(args)
            .env("HOME", profile.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("start chromium");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let ws = loop {
            let line = lines.next().expect("chromium printed its DevTools address").expect("stderr");
            if let Some(ws) = line.strip_prefix("DevTools listening on ") {
                break ws.trim().to_owned();
            }
        };
        // Keep draining stderr so Chromium never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        let port = ws.trim_start_matches("ws://127.0.0.1:").split('/').next().expect("port").to_owned();
        RemoteChromium { child, http: format!("http://127.0.0.1:{port}"), _profile: profile }
    }

    async fn page_urls(&self) -> Vec<String> {
        let list: Value =
            reqwest::get(format!("{}/json/list", self.http)).await.expect("json/list").json().await.expect("JSON");
        list.as_array().into_iter().flatten().filter_map(|t| t["url"].as_str().map(str::to_owned)).collect()
    }
}

fn nix_is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl Drop for RemoteChromium {
    fn drop(&mut self) {
        // The whole group (runuser and Chromium), and anything left that uses this profile.
        let _ = Command::new("kill").args(["-s", "KILL", "--", &format!("-{}", self.child.id())]).status();
        let profile = format!("--user-data-dir={}", self._profile.path().display());
        let _ = Command::new("pkill").args(["-KILL", "-f", &profile]).status();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn sessions_run_on_a_remote_browser_under_the_nodes_egress_policy() {
    let remote = RemoteChromium::start();
    let app = TestApp::spawn_with(|s| s.arg("browser-endpoint", &remote.http).arg("task-wait-ms", 100)).await;
    let key = app.key().await;
    let (sid, _) = app.open_session(&key, json!({})).await;
    let r = app.new_task(&key, &sid, &format!("open {}; report the title", app.site.url("/"))).await;
    let tid = r.body["taskId"].as_str().expect("taskId").to_owned();
    let done = app.poll_final(&sid, &tid, Duration::from_secs(30)).await;
    assert_eq!(done["data"]["message"], "Fixture Home", "{done}");
    // The page is in the remote browser, and this node started no Chromium of its own.
    let urls = remote.page_urls().await;
    assert!(urls.iter().any(|u| u.starts_with(&app.site.url("/"))), "{urls:?}");
    assert!(app.app().manager.pool().pids().await.is_empty());

    // A loopback neighbour of the browser's host is refused by the node's proxy.
    let decoy = Decoy::on("127.0.0.2").await;
    let r = app.new_task(&key, &sid, &format!("open {} then report the text of body", decoy.url())).await;
    let tid = r.body["taskId"].as_str().expect("taskId").to_owned();
    let blocked = app.poll_final(&sid, &tid, Duration::from_secs(30)).await;
    assert_eq!(blocked["status"], "failed", "{blocked}");
    assert!(blocked["error"].as_str().unwrap_or_default().contains("blocked by policy"), "{blocked}");
    assert_eq!(decoy.hits(), 0);

    // Ending the session disposes its context in the remote browser.
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    let mut left = Vec::new();
    for _ in 0..50 {
        left = remote.page_urls().await;
        if !left.iter().any(|u| u.starts_with(&app.site.url("/"))) {
            break;
        }
        tokio::time::sleep(crate::helpers::POLL).await;
    }
    assert!(!left.iter().any(|u| u.starts_with(&app.site.url("/"))), "{left:?}");
    app.stop().await;
}

#[tokio::test]
async fn a_node_with_an_unreachable_browser_endpoint_refuses_sessions_cleanly() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let app =
        TestApp::spawn_with(|s| s.arg("browser-endpoint", format!("http://127.0.0.1:{port}")).arg("warm-contexts", 0))
            .await;
    let key = app.key().await;
    let r = app.post("/start/start-session", &key, json!({})).await;
    r.assert_error(503, "INSTANCE_UNAVAILABLE");
    assert_eq!(app.get("/start/health").await.status, 200);
    app.stop().await;
}
