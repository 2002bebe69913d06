//! The egress policy on a real Chromium: decoys on loopback neighbours (127.0.0.2, [::1], another port of
//! 127.0.0.1) and the service's own port receive nothing, whatever way a task or a page reaches for them;
//! the fixture site, allowed by the harness with `--egress-allow 127.0.0.1:<port>`, still works.

use crate::agent::{tool_results, with_model};
use crate::helpers::TestApp;
use serde_json::{json, Value};
use std::time::Duration;
use webpilot_testkit::{Decoy, Reply};

/// The three decoys every test aims at.
async fn decoys(app: &TestApp) -> Vec<Decoy> {
    let other_port = Decoy::on("127.0.0.1").await;
    assert_ne!(other_port.addr.port(), app.site.port());
    vec![Decoy::on("127.0.0.2").await, Decoy::on("::1").await, other_port]
}

/// Runs a task to its end and returns its final poll body.
async fn run_task(app: &TestApp, key: &str, body: Value) -> Value {
    let r = app.post("/start/run-task", key, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let (sid, tid) = (r.body["sessionId"].as_str().expect("sessionId"), r.body["taskId"].as_str().expect("taskId"));
    app.poll_final(sid, tid, Duration::from_secs(30)).await
}

fn assert_blocked(body: &Value, what: &str) {
    assert_eq!(body["status"], "failed", "{what}: {body}");
    assert_eq!(body["code"], "NAVIGATION_TIMEOUT", "{what}: {body}");
    let error = body["error"].as_str().unwrap_or_default();
    assert!(error.contains("blocked by policy"), "{what}: {body}");
    assert!(!body.to_string().contains("decoy reached") && !body.to_string().contains("healthy"), "{what}: {body}");
}

#[tokio::test]
async fn tasks_cannot_reach_loopback_neighbours_by_url_start_url_or_redirect() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let decoys = decoys(&app).await;
    let mut targets: Vec<String> = decoys.iter().map(Decoy::url).collect();
    targets.push(format!("{}/start/health", app.base));
    targets.push(format!("http://decoy.localhost:{}", decoys[2].addr.port()));
    for t in &targets {
        let by_url =
            run_task(&app, &key, json!({ "taskDetails": format!("open {t} then report the text of body") })).await;
        assert_blocked(&by_url, &format!("open {t}"));
        let start = json!({ "taskDetails": "report the text of body", "startingUrl": t });
        assert_blocked(&run_task(&app, &key, start).await, &format!("startingUrl {t}"));
        let hop = app.site.url(&format!("/redirect?to={t}"));
        let redirected =
            run_task(&app, &key, json!({ "taskDetails": format!("open {hop} then report the text of body") })).await;
        assert_blocked(&redirected, &format!("redirect to {t}"));
    }
    for d in &decoys {
        assert_eq!(d.hits(), 0, "decoy {} was reached", d.addr);
    }
    // The redirects were served by the allowed fixture site: the policy let it through.
    assert!(app.site.requests().iter().filter(|r| r.path == "/redirect").count() >= targets.len());
    app.stop().await;
}

#[tokio::test]
async fn pages_cannot_reach_loopback_neighbours_by_frames_images_fetch_sockets_workers_or_popups() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let decoys = decoys(&app).await;
    let mut targets: Vec<String> = decoys.iter().map(Decoy::url).collect();
    targets.push(app.base.clone());
    let stun = tokio::net::UdpSocket::bind("127.0.0.2:0").await.expect("udp decoy");
    let stun_at = stun.local_addr().expect("udp addr");
    for t in &targets {
        let probe = app.site.url(&format!("/probe?target={t}&stun={stun_at}"));
        let task = format!("open {probe} then wait 2 seconds then report the url");
        let body = run_task(&app, &key, json!({ "taskDetails": task })).await;
        assert_eq!(body["type"], "task_completed", "{t}: {body}");
    }
    for d in &decoys {
        assert_eq!(d.hits(), 0, "decoy {} was reached", d.addr);
    }
    let mut buf = [0u8; 1500];
    assert!(stun.try_recv_from(&mut buf).is_err(), "WebRTC sent UDP around the egress proxy");
    // Each probe page loaded and ran its scripts (its worker script was fetched from the fixture).
    let workers = app.site.requests().iter().filter(|r| r.path == "/probe/worker.js").count();
    assert!(workers >= targets.len(), "{workers} worker scripts for {} probes", targets.len());
    // The same probe aimed at the allowed site reaches it in every way: the probes do work.
    let own = app.site.url("");
    let probe = app.site.url(&format!("/probe?target={own}"));
    let body = run_task(
        &app,
        &key,
        json!({ "taskDetails": format!("open {probe} then wait 2 seconds then report the title") }),
    )
    .await;
    assert_eq!(body["type"], "task_completed", "{body}");
    let paths: Vec<String> = app.site.requests().into_iter().map(|r| r.path).collect();
    for p in ["/iframe", "/img.png", "/style.css", "/fetch", "/ws", "/worker", "/popup", "/probe/sw.js"] {
        assert!(paths.iter().any(|x| x == p), "the probe did not request {p}: {paths:?}");
    }
    app.stop().await;
}

#[tokio::test]
async fn the_model_agent_cannot_open_files_browser_pages_or_data_urls() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![
        Reply::call("navigate", json!({ "url": "file:///etc/passwd" })),
        Reply::call("tab", json!({ "url": "chrome://settings" })),
        Reply::call("navigate", json!({ "url": app.site.url("/") })),
        Reply::call("navigate", json!({ "url": "view-source:http://127.0.0.2/" })),
        Reply::call("navigate", json!({ "url": "data:text/html,<h1>hi</h1>" })),
        Reply::done("done"),
    ]);
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "read local files" })).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let told = tool_results(model.requests().last().expect("requests"));
    let refused = told.iter().filter(|t| t.starts_with("ERROR NAVIGATION_TIMEOUT") && t.contains("blocked by policy"));
    assert_eq!(refused.count(), 4, "{told:?}");
    assert!(!told.iter().any(|t| t.contains("root:x:0")), "{told:?}");
    assert!(told.iter().any(|t| t.starts_with("Opened http://127.0.0.1")), "the allowed site still opens: {told:?}");
    app.stop().await;
}
