//! Chromium's DevTools is reachable by this service alone: another local user (`nobody`) who tries every
//! loopback port the service or its Chromium listens on, by `/json/list`, `/json/version` and a WebSocket
//! handshake, gets no target and no DevTools connection.

use crate::helpers::{process_tree, TestApp};
use serde_json::json;
use std::process::Command;

/// Loopback TCP ports listening now whose owner is one of `pids` (from `ss -ltnp`).
fn listening_ports(pids: &[u32]) -> Vec<u16> {
    let out = Command::new("ss").args(["-Hltnp"]).output().expect("run ss");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut ports = Vec::new();
    for line in text.lines() {
        let owned = pids.iter().any(|p| line.contains(&format!("pid={p},")));
        let local = line.split_whitespace().nth(3).unwrap_or_default();
        let loopback = local.starts_with("127.") || local.starts_with("[::1]") || local.starts_with("0.0.0.0");
        if let (true, true, Some(port)) = (owned, loopback, local.rsplit_once(':').and_then(|(_, p)| p.parse().ok())) {
            if !ports.contains(&port) {
                ports.push(port);
            }
        }
    }
    ports
}

/// `curl` run as the user `nobody`: what it printed (headers included with `-i`). Awaited, so the service
/// in this process goes on answering meanwhile.
async fn curl_as_nobody(args: &[&str]) -> String {
    let out = tokio::process::Command::new("runuser")
        .args(["-u", "nobody", "--", "curl", "-s", "-m", "3"])
        .args(args)
        .output()
        .await
        .expect("run curl as nobody");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn no_other_local_user_reaches_chromiums_devtools() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let done = app.run_in(&key, &sid, &format!("open {}; report the title", app.site.url("/pricing"))).await;
    assert_eq!(done["data"]["message"], "Pricing", "{done}");
    let browser = app.app().manager.pool().pids().await;
    assert_eq!(browser.len(), 1);
    let chromium = process_tree(browser[0]);
    let mut owners = chromium.clone();
    owners.push(std::process::id());
    let ports = listening_ports(&owners);
    // The probe works as `nobody`: the service's own listener answers it.
    let service_port: u16 = app.base.rsplit_once(':').and_then(|(_, p)| p.parse().ok()).expect("service port");
    assert!(ports.contains(&service_port), "{ports:?}");
    let health = curl_as_nobody(&[&format!("http://127.0.0.1:{service_port}/start/health")]).await;
    assert!(health.contains("\"success\":true"), "nobody reaches loopback: {health}");
    for port in ports {
        for path in ["/json/list", "/json/version", "/json"] {
            let answer = curl_as_nobody(&[&format!("http://127.0.0.1:{port}{path}")]).await;
            assert!(
                !answer.contains("webSocketDebuggerUrl") && !answer.contains("devtoolsFrontendUrl"),
                "port {port}{path} lists DevTools targets to another user: {answer}"
            );
        }
        let upgrade = curl_as_nobody(&[
            "-i",
            "-H",
            "Connection: Upgrade",
            "-H",
            "Upgrade: websocket",
            "-H",
            "Sec-WebSocket-Version: 13",
            "-H",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            &format!("http://127.0.0.1:{port}/devtools/browser"),
        ])
        .await;
        assert!(!upgrade.contains(" 101 "), "port {port} accepts a DevTools WebSocket from another user: {upgrade}");
    }
    assert_eq!(listening_ports(&chromium), Vec::<u16>::new(), "Chromium listens on no TCP port");
    app.stop().await;
}
