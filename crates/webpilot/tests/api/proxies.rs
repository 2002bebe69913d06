//! Upstream proxies on a real Chromium, through real local proxies (testkit's HTTP proxy that requires
//! `Proxy-Authorization`, and a SOCKS5 proxy with username/password), both logging what they carry: each
//! host goes through its own proxy with the right credentials, the egress policy decides first, an
//! operator's proxy works by name, a proxy that cannot be used is refused at start or named when it
//! fails, and the passwords show up nowhere.

use crate::helpers::{free_port, Settings, TestApp};
use crate::logs::Logs;
use serde_json::{json, Value};
use std::time::Duration;
use webpilot_testkit::{Decoy, ProxyKind, TestProxy};

const HTTP_PASSWORD: &str = "hp-Zx81-proxypass";
const SOCKS_PASSWORD: &str = "sp-Qr55-proxypass";
const OPERATOR_PASSWORD: &str = "op-Kt33-proxypass";

/// Adds `extra` to the `--egress-allow` the harness set for its fixture site.
fn also_allow(mut s: Settings, extra: &str) -> Settings {
    let i = s.args.iter().position(|a| a == "--egress-allow").expect("the harness allows its site");
    s.args[i + 1] = format!("{},{extra}", s.args[i + 1]);
    s
}

/// Every event of session `sid` (as the socket and webhooks carry them) until it ends.
fn all_events(app: &TestApp, sid: &str) -> tokio::task::JoinHandle<Vec<Value>> {
    let mut rx = app.app().manager.subscribe(sid).expect("live session");
    tokio::spawn(async move {
        let mut out = Vec::new();
        while let Ok(Ok(ev)) = tokio::time::timeout(Duration::from_secs(60), rx.recv()).await {
            let (name, body) = ev.wire();
            out.push(json!({"name": name, "body": body}));
            if name == "end_session" {
                break;
            }
        }
        out
    })
}

/// The session's files once there are `n` of them (at most 20 s).
async fn files_listed(app: &TestApp, key: &str, sid: &str, n: usize) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (status, files) = get_json(app, key, &format!("/sessions/{sid}/files")).await;
        if status == 200 && files["files"].as_array().is_some_and(|f| f.len() >= n) {
            return files;
        }
        assert!(std::time::Instant::now() < deadline, "{n} files were not stored: {files}");
        tokio::time::sleep(crate::helpers::POLL).await;
    }
}

async fn get_json(app: &TestApp, key: &str, path: &str) -> (u16, Value) {
    let r = app.client.get(format!("{}{path}", app.base)).bearer_auth(key).send().await.expect("get");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn each_host_goes_through_its_own_proxy_after_the_policy_and_no_password_shows() {
    let logs = Logs::capture();
    let http = TestProxy::start(ProxyKind::Http, "alice", HTTP_PASSWORD).await;
    let socks = TestProxy::start(ProxyKind::Socks5, "bob", SOCKS_PASSWORD).await;
    let office = TestProxy::start(ProxyKind::Http, "carol", OPERATOR_PASSWORD).await;
    let proxies_allowed = format!("127.0.0.1:{},127.0.0.1:{}", http.addr.port(), socks.addr.port());
    let operator = format!("office=http://carol:{OPERATOR_PASSWORD}@{}", office.addr);
    let receiver = crate::webhooks::Receiver::start(0).await;
    let allowed = format!("{proxies_allowed},127.0.0.1:{}", receiver.port);
    let app = TestApp::spawn_with(|s| also_allow(s, &allowed).arg("proxy", &operator)).await;
    let key = app.key().await;
    crate::webhooks::register(&app, &key, &receiver, None).await;
    let mut answers: Vec<String> = Vec::new();
    let site_port = app.site.port();

    let (status, listed) = get_json(&app, &key, "/proxies").await;
    assert_eq!((status, &listed), (200, &json!({"success": true, "proxies": [{"name": "office"}]})));
    let unknown = app.post("/start/start-session", &key, json!({"proxies": [{"name": "elsewhere"}]})).await;
    unknown.assert_error(400, "INVALID_PARAMETER");
    assert!(unknown.body["message"].as_str().is_some_and(|m| m.contains("proxies[0]")), "{}", unknown.body);

    // 127.0.0.1 through the HTTP proxy, localhost through SOCKS5; the session is recorded.
    let body = json!({
        "recording": true,
        "proxies": [
            {"server": http.server(), "username": "alice", "password": HTTP_PASSWORD, "domains": ["127.0.0.1"]},
            {"server": socks.server(), "username": "bob", "password": SOCKS_PASSWORD, "domains": ["localhost"]},
        ],
    });
    let r = app.post("/start/start-session", &key, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    answers.push(r.body.to_string());
    let sid = r.body["sessionId"].as_str().expect("sessionId").to_owned();
    let events = all_events(&app, &sid);
    let (_, listed) = get_json(&app, &key, "/start/sessions").await;
    answers.push(listed.to_string());
    let mine = listed["sessions"].as_array().and_then(|l| l.iter().find(|s| s["sessionId"] == sid.as_str()).cloned());
    let shown = json!([
        {"server": http.server(), "domains": ["127.0.0.1"]},
        {"server": socks.server(), "domains": ["localhost"]},
    ]);
    assert_eq!(mine.map(|s| s["proxies"].clone()), Some(shown), "{listed}");

    let decoy = Decoy::on("127.0.0.2").await;
    let tasks = [
        format!("open {} then report the text of body", app.site.url("/pricing")),
        format!("open http://localhost:{site_port}/form then report the text of body"),
        format!(
            "open {} then wait 2 seconds then report the url",
            app.site.url(&format!("/probe?target={}", decoy.url()))
        ),
        format!(
            "open {} then wait 1 seconds then report the url",
            app.site.url(&format!("/probe?target={}", app.base))
        ),
    ];
    for task in &tasks {
        let done = app.run_in(&key, &sid, task).await;
        assert_eq!(done["type"], "task_completed", "{task}: {done}");
        answers.push(done.to_string());
    }
    // https goes through CONNECT with the same credentials. The fixture speaks plain http, so the TLS
    // handshake inside the tunnel fails and the task with it: the tunnel is what is checked here
    // (webpilot-egress's tests/upstream_tls.rs fetches a real HTTPS page through both proxy kinds).
    let https = app.run_in(&key, &sid, &format!("open https://127.0.0.1:{site_port}/ then report the url")).await;
    answers.push(https.to_string());
    let tunnels: Vec<_> = http.hits().into_iter().filter(|h| h.method == "CONNECT").collect();
    assert!(!tunnels.is_empty() && tunnels.iter().all(|h| h.accepted && h.path.is_none()), "{:?}", http.hits());
    // A download through each proxy, one at a time (a second click would cancel the first).
    app.run_in(&key, &sid, &format!("open {} then click \"Download report\"", app.site.url("/files"))).await;
    files_listed(&app, &key, &sid, 1).await;
    let socks_files = format!("http://localhost:{site_port}/files");
    app.run_in(&key, &sid, &format!("open {socks_files} then click \"Download report\"")).await;
    let files = files_listed(&app, &key, &sid, 2).await;
    assert!(files["files"].as_array().is_some_and(|f| f.iter().all(|f| f["bytes"].as_u64() > Some(0))), "{files}");
    answers.push(files.to_string());
    let downloads = app.site.requests().iter().filter(|r| r.path == "/files/report.csv").count();
    assert_eq!(downloads, 2, "one download through each proxy");

    // Each host went through its own proxy, with that proxy's credentials.
    let via_http = http.hits_for(&format!("127.0.0.1:{site_port}"));
    assert!(via_http.iter().any(|h| h.path.as_deref() == Some("/pricing")), "{via_http:?}");
    assert!(via_http.iter().any(|h| h.path.as_deref() == Some("/files/report.csv")), "the download: {via_http:?}");
    assert!(via_http.iter().all(|h| h.accepted && h.credentials.as_deref() == Some(&format!("alice:{HTTP_PASSWORD}"))));
    let via_socks = socks.hits_for(&format!("localhost:{site_port}"));
    assert!(!via_socks.is_empty() && via_socks.iter().all(|h| h.by_name && h.accepted), "{:?}", socks.hits());
    assert!(http.hits().iter().all(|h| h.target == format!("127.0.0.1:{site_port}")), "{:?}", http.hits());
    assert!(socks.hits().iter().all(|h| h.target == format!("localhost:{site_port}")), "{:?}", socks.hits());
    // The policy decided first: the decoy and the service's own port were reached by nothing, and
    // neither proxy heard of them (the assertions above list every target each proxy saw).
    assert_eq!(decoy.hits(), 0);
    assert!(app.site.requests().iter().any(|r| r.path == "/probe"));

    // An operator's proxy by name, in a second session.
    let named = json!({"proxies": [{"name": "office"}], "startingUrl": app.site.url("/")});
    let r = app.post("/start/start-session", &key, named).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let second = r.body["sessionId"].as_str().expect("sessionId").to_owned();
    let (_, listed) = get_json(&app, &key, "/start/sessions").await;
    answers.push(listed.to_string());
    assert!(listed.to_string().contains(r#"[{"name":"office"}]"#), "{listed}");
    let via_office = office.hits_for(&format!("127.0.0.1:{site_port}"));
    assert!(!via_office.is_empty() && via_office.iter().all(|h| h.accepted), "{:?}", office.hits());
    app.state(&key, &second, "terminate").await;

    let (status, timeline) = get_json(&app, &key, &format!("/recordings/{sid}/events")).await;
    assert_eq!(status, 200, "{timeline}");
    answers.push(timeline.to_string());
    app.state(&key, &sid, "terminate").await;
    let events = serde_json::to_string(&events.await.expect("events")).expect("events json");
    assert!(events.contains("end_session") && events.contains("/pricing"), "the events were collected: {events}");
    let ended = |a: &[Value]| a.iter().any(|x| x["type"] == "session.ended" && x.to_string().contains(sid.as_str()));
    let hooks = receiver.wait("the session's webhooks", Duration::from_secs(30), ended).await;
    let hooks = serde_json::to_string(&hooks).expect("webhook bodies");
    assert!(hooks.contains("task.completed"), "{hooks}");
    let logs = logs.text();
    assert!(logs.contains("session started"), "the logs were captured");
    for (what, text) in [("answers", answers.join("\n")), ("events", events), ("webhooks", hooks), ("logs", logs)] {
        for secret in [HTTP_PASSWORD, SOCKS_PASSWORD, OPERATOR_PASSWORD] {
            assert!(!text.contains(secret), "a proxy password is in the {what}");
        }
        assert!(!text.contains(&office.addr.to_string()), "the operator proxy's address is in the {what}");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_proxy_that_cannot_be_used_is_refused_at_start_or_named_when_it_fails() {
    let private = TestProxy::start(ProxyKind::Http, "u", "p").await;
    let strict = TestProxy::start(ProxyKind::Http, "u", "right").await;
    let strict_socks = TestProxy::start(ProxyKind::Socks5, "u", "right").await;
    let dead = free_port();
    let allowed = format!("127.0.0.1:{},127.0.0.1:{},127.0.0.1:{dead}", strict.addr.port(), strict_socks.addr.port());
    let app = TestApp::spawn_with(|s| also_allow(s, &allowed)).await;
    let key = app.key().await;

    for server in [private.server(), "socks5://10.255.0.1:1080".to_owned(), "http://localhost:3128".to_owned()] {
        let body = json!({"taskDetails": "report the url", "proxies": [{"name": "x", "domains": ["a.example"]}, {"server": server}]});
        let refused = app.post("/start/run-task", &key, body.clone()).await;
        refused.assert_error(400, "INVALID_PARAMETER");
        let body = json!({"proxies": [{"server": server}]});
        let refused = app.post("/start/start-session", &key, body).await;
        refused.assert_error(400, "INVALID_PARAMETER");
        let message = refused.body["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("proxies[0]: the proxy ") && message.contains("--egress-allow"), "{message}");
    }
    assert!(private.hits().is_empty(), "nothing connected to the refused proxy");

    let page = app.site.url("/pricing");
    let cases = [
        (format!("http://127.0.0.1:{dead}"), "right", format!("could not connect to the proxy 127.0.0.1:{dead}")),
        (strict.server(), "wrong", format!("the proxy {} refused the credentials (407)", strict.addr)),
        (strict_socks.server(), "wrong", format!("the proxy {} refused the credentials", strict_socks.addr)),
    ];
    for (server, password, named) in cases {
        let body = json!({
            "taskDetails": format!("open {page} then report the text of body"),
            "proxies": [{"server": server, "username": "u", "password": password}],
        });
        let r = app.post("/start/run-task", &key, body).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let (sid, tid) = (r.body["sessionId"].as_str().expect("sid"), r.body["taskId"].as_str().expect("tid"));
        let done = app.poll_final(sid, tid, Duration::from_secs(30)).await;
        assert_eq!(done["status"], "failed", "{server}: {done}");
        let error = done["error"].as_str().unwrap_or_default();
        assert!(error.contains(&named), "{server}: {error:?} should name {named:?}");
        assert!(!error.contains("resolve") && !error.contains("Pricing"), "{error}");
    }
    assert!(strict.hits().iter().all(|h| !h.accepted) && !strict.hits().is_empty());
    assert!(app.site.requests().iter().all(|r| r.path != "/pricing"), "no page was fetched with bad credentials");
    app.stop().await;
}
