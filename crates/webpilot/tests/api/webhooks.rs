//! Webhooks end to end: a receiver written with the official Standard Webhooks library verifies every
//! delivery; failed attempts are retried with the same `webhook-id`, also across a restart of the service;
//! a guardrail is announced before anyone polls; loopback targets are refused; two nodes deliver once.

use crate::cluster::Cluster;
use crate::helpers::*;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The Python receiver (`tests/clients/webhook_receiver.py`), killed when dropped.
pub(crate) struct Receiver {
    _child: tokio::process::Child,
    pub(crate) port: u16,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    pub(crate) async fn start(fail_first: u32) -> Receiver {
        let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients/webhook_receiver.py");
        let mut child = tokio::process::Command::new("python3")
            .arg(script)
            .env("FAIL_FIRST", fail_first.to_string())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await;
        let port =
            first.expect("the receiver starts").expect("stdout").expect("a port line").trim().parse().expect("port");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    into.lock().expect("lock").push(v);
                }
            }
        });
        Receiver { _child: child, port, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }

    async fn trust(&self, secret: &str) {
        let r = reqwest::Client::new().post(format!("http://127.0.0.1:{}/_secret", self.port)).body(secret.to_owned());
        assert!(r.send().await.expect("receiver").status().is_success());
    }

    pub(crate) fn attempts(&self) -> Vec<Value> {
        self.seen.lock().expect("lock").clone()
    }

    /// Waits until `pred` holds for the attempts seen so far.
    pub(crate) async fn wait(&self, what: &str, limit: Duration, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let seen = self.seen.clone();
        wait_until(limit, what, move || pred(&seen.lock().expect("lock"))).await;
        self.attempts()
    }
}

/// Adds `extra` to the `--egress-allow` the harness set for its fixture site.
fn also_allow(mut s: Settings, extra: &str) -> Settings {
    let i = s.args.iter().position(|a| a == "--egress-allow").expect("the harness allows its site");
    s.args[i + 1] = format!("{},{extra}", s.args[i + 1]);
    s
}

pub(crate) async fn register(app: &TestApp, key: &str, receiver: &Receiver, events: Option<Value>) -> String {
    let mut body = json!({ "url": receiver.url(), "description": "test receiver" });
    if let Some(e) = events {
        body["events"] = e;
    }
    let r = app.post("/webhooks", key, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let secret = r.body["secret"].as_str().expect("secret shown once");
    assert!(secret.starts_with("whsec_"), "{secret}");
    receiver.trust(secret).await;
    r.body["webhookId"].as_str().expect("webhookId").to_owned()
}

fn by_id(attempts: &[Value]) -> HashMap<String, Vec<Value>> {
    let mut map: HashMap<String, Vec<Value>> = HashMap::new();
    for a in attempts {
        map.entry(a["id"].as_str().unwrap_or_default().to_owned()).or_default().push(a.clone());
    }
    map
}

#[tokio::test]
async fn every_event_is_signed_retried_with_one_id_and_survives_a_restart() {
    let receiver = Receiver::start(2).await;
    let allow = format!("127.0.0.1:{}", receiver.port);
    // The first retry waits long enough for the restart below to begin before it.
    let mut app = TestApp::spawn_with(|s| also_allow(s, &allow).arg("webhook-retry-schedule", "3s,300ms,300ms")).await;
    let (_, key) = app.user(5.0).await;
    let hook = register(&app, &key, &receiver, None).await;
    let run = app.post("/start/run-task", &key, json!({ "taskDetails": "report the title" })).await;
    assert_eq!(run.status, 200, "{}", run.body);
    let (sid, task) =
        (run.body["sessionId"].as_str().expect("sessionId"), run.body["taskId"].as_str().expect("taskId"));

    // The first (failed) attempt of the task's message is seen: restart before its retry.
    receiver
        .wait("a first attempt", Duration::from_secs(20), |a| a.iter().any(|x| x["type"] == "task.completed"))
        .await;
    app.restart().await;
    let done = |a: &[Value]| {
        let ids = by_id(a);
        ["task.completed", "session.ended"].iter().all(|t| {
            ids.values()
                .any(|tries| tries.len() == 3 && tries.iter().all(|x| x["type"] == *t) && tries[2]["status"] == 204)
        })
    };
    let attempts = receiver.wait("both messages delivered on their third attempt", Duration::from_secs(40), done).await;
    for (id, tries) in by_id(&attempts) {
        assert!(id.starts_with("msg_"), "{id}");
        assert_eq!(tries.len(), 3, "each message arrives three times under one id: {tries:?}");
        assert!(tries.iter().all(|t| t["verified"] == true), "every attempt verifies: {tries:?}");
        assert_eq!(tries.iter().map(|t| t["status"].as_u64().unwrap_or(0)).collect::<Vec<_>>(), vec![500, 500, 204]);
    }
    let completed = attempts.iter().find(|a| a["type"] == "task.completed").expect("task.completed");
    let data = &completed["body"]["data"];
    assert_eq!((data["taskId"].as_str(), data["sessionId"].as_str()), (Some(task), Some(sid)), "{data}");
    assert_eq!(data["type"], "task_completed", "the Socket.IO event's fields: {data}");
    assert!(data["data"]["message"].is_string(), "{data}");
    assert!(completed["body"]["timestamp"].is_string());
    let ended = attempts.iter().find(|a| a["type"] == "session.ended").expect("session.ended");
    assert_eq!(ended["body"]["data"]["reason"], "terminateOnCompletion");

    // The owner sees the attempts (each is recorded just after its answer arrives, so wait for the last);
    // nobody else does.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let log = loop {
        let r = app.client.get(format!("{}/webhooks/{hook}/deliveries", app.base)).bearer_auth(&key).send().await;
        let log: Value = r.expect("deliveries").json().await.expect("json");
        if log["deliveries"].as_array().map(Vec::len) == Some(6) || std::time::Instant::now() > deadline {
            break log;
        }
        tokio::time::sleep(crate::helpers::POLL).await;
    };
    let codes: Vec<u64> =
        log["deliveries"].as_array().expect("deliveries").iter().filter_map(|d| d["statusCode"].as_u64()).collect();
    assert_eq!(codes.len(), 6, "{log}");
    assert_eq!(codes.iter().filter(|c| **c == 204).count(), 2, "{log}");
    let (_, stranger) = app.user(1.0).await;
    let other = app.client.get(format!("{}/webhooks/{hook}/deliveries", app.base)).bearer_auth(&stranger).send().await;
    assert_eq!(other.expect("request").status(), 404);
    app.stop().await;
}

#[tokio::test]
async fn a_guardrail_is_announced_before_anyone_polls() {
    let receiver = Receiver::start(0).await;
    let allow = format!("127.0.0.1:{}", receiver.port);
    let app = TestApp::spawn_with(|s| also_allow(s, &allow)).await;
    let (_, key) = app.user(5.0).await;
    register(&app, &key, &receiver, Some(json!(["task.guardrail"]))).await;
    let r = app
        .post("/start/start-session", &key, json!({ "taskDetails": "ask the human \"Which plan?\"; report the url" }))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.body["sessionId"].as_str().expect("sessionId").to_owned();
    let seen = receiver.wait("task.guardrail", Duration::from_secs(20), |a| !a.is_empty()).await;
    let data = &seen[0]["body"]["data"];
    assert_eq!(seen[0]["type"], "task.guardrail");
    assert!(seen[0]["verified"] == true);
    assert_eq!(data["data"]["value"], "Which plan?", "{data}");
    assert_eq!(data["sessionId"], sid.as_str());
    assert_eq!(data["answer"]["url"], format!("{}/start/send-message", app.base));
    // Only the subscribed type: the answer completes the task, which sends nothing more here.
    let answered =
        app.send(&key, &sid, json!({ "actionType": "guardrail", "taskDetails": "gold", "newState": "resume" })).await;
    assert_eq!(answered.status, 200, "{}", answered.body);
    app.stop().await;
    assert!(receiver.attempts().iter().all(|a| a["type"] == "task.guardrail"), "{:?}", receiver.attempts());
}

#[tokio::test]
async fn private_and_loopback_targets_and_bad_bodies_are_refused() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let own = format!("{}/", app.base);
    for url in [own.as_str(), "http://localhost:9/", "http://10.1.2.3/", "http://[::1]:80/"] {
        let r = app.post("/webhooks", &key, json!({ "url": url })).await;
        r.assert_error(400, "INVALID_PARAMS");
        assert!(r.body["message"].as_str().unwrap_or_default().contains("refused"), "{}", r.body);
    }
    app.post("/webhooks", &key, json!({ "url": "ftp://example.com/" })).await.assert_error(400, "INVALID_PARAMS");
    app.post("/webhooks", &key, json!({})).await.assert_error(400, "MISSING_REQUIRED_FIELD");
    let bad_event = json!({ "url": "https://example.com/", "events": ["task.exploded"] });
    app.post("/webhooks", &key, bad_event).await.assert_error(400, "INVALID_PARAMS");
    app.post("/webhooks/wh_missing/rotate-secret", &key, json!({})).await.assert_error(404, "WEBHOOK_NOT_FOUND");
    let list = || async {
        let r = app.client.get(format!("{}/webhooks", app.base)).bearer_auth(&key).send().await.expect("list");
        r.json::<Value>().await.expect("json")
    };
    assert_eq!(list().await["webhooks"], json!([]), "nothing was registered");
    // An address --egress-allow names (here the fixture site's) may be registered, ten times at most.
    for _ in 0..10 {
        let ok = app.post("/webhooks", &key, json!({ "url": app.site.url("/hook") })).await;
        assert_eq!(ok.status, 200, "{}", ok.body);
    }
    let over = app.post("/webhooks", &key, json!({ "url": app.site.url("/hook") })).await;
    over.assert_error(400, "INVALID_PARAMS");
    assert!(over.body["message"].as_str().unwrap_or_default().contains("at most 10"), "{}", over.body);
    let listed = list().await;
    assert_eq!(listed["webhooks"].as_array().map(Vec::len), Some(10));
    assert!(!listed.to_string().contains("whsec_"), "secrets are never listed: {listed}");
    app.stop().await;
}

#[tokio::test]
async fn two_nodes_deliver_each_message_once() {
    let receiver = Receiver::start(0).await;
    let allow = format!("127.0.0.1:{}", receiver.port);
    let cluster = Cluster::new().await;
    let a = cluster.node_with(None, |s| also_allow(s, &allow)).await;
    let b = cluster.node_with(None, |s| also_allow(s, &allow)).await;
    let (_, key) = a.user(5.0).await;
    register(&a, &key, &receiver, Some(json!(["task.completed"]))).await;
    for node in [&a, &b, &a, &b] {
        let run = node.post("/start/run-task", &key, json!({ "taskDetails": "report the title" })).await;
        assert_eq!(run.status, 200, "{}", run.body);
    }
    receiver.wait("four task messages", Duration::from_secs(30), |a| by_id(a).len() == 4).await;
    // Both workers keep polling for a while; nothing is sent twice. Kept fixed: an absence no event can
    // announce.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let attempts = receiver.attempts();
    assert_eq!(attempts.len(), 4, "each message once: {attempts:?}");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn stored_files_and_ready_recordings_are_announced() {
    let receiver = Receiver::start(0).await;
    let allow = format!("127.0.0.1:{}", receiver.port);
    let app = TestApp::spawn_with(|s| also_allow(s, &allow)).await;
    let (_, key) = app.user(5.0).await;
    register(&app, &key, &receiver, Some(json!(["file.created", "recording.ready"]))).await;
    let body = json!({ "startingUrl": app.site.url("/pricing"), "recording": true });
    let sid = app.start_session(&key, body).await;
    let done = app.run_in(&key, &sid, "report the title").await;
    assert_eq!(done["type"], "task_completed", "{done}");
    let up = app.post_raw(&format!("/sessions/{sid}/files?name=note.txt"), Some(&key), "hello").await;
    assert_eq!(up.status, 200, "{}", up.body);
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    let both = |a: &[Value]| ["file.created", "recording.ready"].iter().all(|t| a.iter().any(|x| x["type"] == *t));
    let seen = receiver.wait("file.created and recording.ready", Duration::from_secs(30), both).await;
    assert!(seen.iter().all(|a| a["verified"] == true), "{seen:?}");
    let of = |t: &str| seen.iter().find(|a| a["type"] == t).map(|a| a["body"]["data"].clone()).expect("seen");
    let file = of("file.created");
    assert_eq!((file["sessionId"].as_str(), file["name"].as_str()), (Some(sid.as_str()), Some("note.txt")), "{file}");
    assert_eq!(file["bytes"], 5, "{file}");
    assert_eq!(file["source"], "upload", "{file}");
    // sha256("hello")
    assert_eq!(file["sha256"], "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "{file}");
    let recording = of("recording.ready");
    assert_eq!((recording["sessionId"].as_str(), recording["status"].as_str()), (Some(sid.as_str()), Some("ready")));
    assert!(recording["bytes"].as_i64().is_some_and(|b| b > 0), "{recording}");
    assert_eq!(recording["video"], format!("/recordings/{sid}/video.webm"), "{recording}");
    app.stop().await;
}
