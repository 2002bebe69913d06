//! Several nodes on one PostgreSQL and one Redis (the local servers every machine has): the rate window
//! they share, a Redis outage, and balances charged by tasks on two nodes at once.

use crate::helpers::{Server, Settings, TestApp};
use crate::sio::SocketClient;
use futures::future::join_all;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use webpilot_core::usage::usd_to_micros;
use webpilot_store::testdb::TestDatabase;

pub fn redis_url() -> String {
    std::env::var("WEBPILOT_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// One PostgreSQL schema and one Redis key prefix, shared by the nodes a test starts.
pub struct Cluster {
    pub db: TestDatabase,
    pub prefix: String,
    /// The profile key every node is given (the database's secrets are sealed under it).
    pub profile_key: String,
}

impl Cluster {
    pub async fn new() -> Cluster {
        let db = TestDatabase::create().await.expect("the local PostgreSQL");
        let profile_key = format!("{:032x}{:032x}", uuid::Uuid::new_v4().as_u128(), uuid::Uuid::new_v4().as_u128());
        Cluster { db, prefix: format!("webpilot-test-{}", uuid::Uuid::new_v4().simple()), profile_key }
    }

    /// A node of this cluster (Redis at `redis`, the local one when `None`), with settings `f`.
    pub async fn node_with(&self, redis: Option<&str>, f: impl FnOnce(Settings) -> Settings) -> TestApp {
        let redis = redis.map(str::to_owned).unwrap_or_else(redis_url);
        TestApp::spawn_with(|s| {
            let s = s.database(&self.db.url).arg("profile-key", &self.profile_key);
            f(s.arg("redis-url", redis).arg("redis-prefix", &self.prefix))
        })
        .await
    }
}

#[tokio::test]
async fn a_node_without_the_clusters_key_does_not_start_on_its_database() {
    let cluster = Cluster::new().await;
    let _a = cluster.node_with(None, |s| s).await;
    let other = "77".repeat(32);
    let why = TestApp::start_error_on(Some(&cluster.db.url), &["--profile-key", &other]).await;
    assert!(why.contains("--profile-key"), "{why}");
    // The old key as a previous one opens the secrets, and the node seals them under its new key.
    let previous = cluster.profile_key.as_str();
    let b = cluster.node_with(None, |s| s.arg("profile-key", &other).arg("profile-previous-keys", previous)).await;
    assert_eq!(b.get("/start/health").await.status, 200);
    let why = TestApp::start_error_on(Some(&cluster.db.url), &["--profile-key", previous]).await;
    assert!(why.contains("--profile-key"), "sealed under the new key now: {why}");
}

#[tokio::test]
async fn the_rate_limit_holds_across_nodes() {
    let cluster = Cluster::new().await;
    let a = cluster.node_with(None, |s| s.arg("rate-limit", 10)).await;
    let b = cluster.node_with(None, |s| s.arg("rate-limit", 10)).await;
    assert_eq!(b.get("/start/health").await.body["redis"], "connected");
    // One user, one key, known to both nodes through the shared database.
    let key = a.key().await;
    for i in 0..10 {
        let node = if i % 2 == 0 { &a } else { &b };
        let r = node.state(&key, "ses_missing", "stop").await;
        r.assert_error(404, "SESSION_NOT_FOUND");
        assert_eq!(r.header("x-ratelimit-remaining"), Some((9 - i).to_string()), "request {i}");
    }
    // The 11th in the window is refused whichever node it reaches.
    for node in [&a, &b] {
        let over = node.state(&key, "ses_missing", "stop").await;
        over.assert_error(429, "RATE_LIMIT_EXCEEDED");
        let retry: u64 = over.header("retry-after").expect("Retry-After").parse().expect("seconds");
        assert!((1..=60).contains(&retry), "{retry}");
    }
    // Another user has a window of its own on both.
    let other = b.key().await;
    assert_eq!(a.state(&other, "ses_missing", "stop").await.status, 404);
    a.stop().await;
    b.stop().await;
}

/// A TCP relay to Redis that a test can cut (closing every connection and refusing new ones) and mend.
struct Relay {
    addr: std::net::SocketAddr,
    upstream: String,
    task: Option<JoinHandle<()>>,
}

impl Relay {
    async fn start(upstream: &str) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut relay = Relay { addr, upstream: upstream.to_owned(), task: None };
        relay.task = Some(tokio::spawn(Self::serve(listener, relay.upstream.clone())));
        relay
    }

    async fn serve(listener: TcpListener, upstream: String) {
        let mut conns = tokio::task::JoinSet::new();
        while let Ok((mut inbound, _)) = listener.accept().await {
            let upstream = upstream.clone();
            conns.spawn(async move {
                if let Ok(mut outbound) = TcpStream::connect(&upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    }

    fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Closes the relay's connections and its port (the JoinSet aborts every connection when dropped).
    async fn cut(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }

    async fn mend(&mut self) {
        let listener = TcpListener::bind(self.addr).await.expect("rebind the relay's port");
        self.task = Some(tokio::spawn(Self::serve(listener, self.upstream.clone())));
    }
}

#[tokio::test]
async fn a_redis_outage_is_reported_and_the_node_keeps_limiting_alone() {
    let upstream = redis_url().trim_start_matches("redis://").trim_end_matches('/').to_owned();
    let mut relay = Relay::start(&upstream).await;
    let cluster = Cluster::new().await;
    let node = cluster.node_with(Some(&relay.url()), |s| s.arg("rate-limit", 3)).await;
    let key = node.key().await;
    assert_eq!(node.state(&key, "ses_missing", "stop").await.status, 404);
    let health = node.get("/start/health").await.body;
    assert_eq!((health["status"].as_str(), health["redis"].as_str()), (Some("healthy"), Some("connected")));

    relay.cut().await;
    // Requests go on, limited on this node alone (its own window starts empty): 3 pass, the 4th is refused.
    for _ in 0..3 {
        node.state(&key, "ses_missing", "stop").await.assert_error(404, "SESSION_NOT_FOUND");
    }
    node.state(&key, "ses_missing", "stop").await.assert_error(429, "RATE_LIMIT_EXCEEDED");
    let health = node.get("/start/health").await;
    assert_eq!(health.status, 200, "a node without Redis still serves");
    assert_eq!(
        (health.body["status"].as_str(), health.body["redis"].as_str()),
        (Some("degraded"), Some("unavailable"))
    );

    relay.mend().await;
    let mut back = Value::Null;
    for _ in 0..40 {
        // The next limited request reconnects; health reflects the last command.
        let _ = node.state(&key, "ses_missing", "stop").await;
        back = node.get("/start/health").await.body;
        if back["redis"] == "connected" {
            break;
        }
        tokio::time::sleep(crate::helpers::POLL).await;
    }
    assert_eq!((back["status"].as_str(), back["redis"].as_str()), (Some("healthy"), Some("connected")), "{back}");
    node.stop().await;
}

#[tokio::test]
async fn a_node_does_not_start_when_its_redis_cannot_be_reached() {
    let closed = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let err = TestApp::start_error(&["--redis-url", &format!("redis://127.0.0.1:{port}")]).await;
    assert!(err.starts_with("Redis:"), "{err}");
    assert!(!err.contains("127.0.0.1"), "the URL (it may hold a password) is not echoed: {err}");
    let bad = TestApp::start_error(&["--redis-url", "not a url"]).await;
    assert_eq!(bad, "Redis: invalid Redis URL");
}

#[tokio::test]
async fn tasks_on_two_nodes_at_once_charge_the_balance_exactly() {
    let cluster = Cluster::new().await;
    let a = cluster.node_with(None, |s| s.arg("max-sessions", 4).arg("task-wait-ms", 100)).await;
    let b = cluster.node_with(None, |s| s.arg("max-sessions", 4).arg("task-wait-ms", 100)).await;
    let (user, key) = a.user(10.0).await;
    let runs = (0..8).map(|i| {
        let node = if i % 2 == 0 { &a } else { &b };
        let key = key.clone();
        async move {
            let r =
                node.post("/start/run-task", &key, json!({ "taskDetails": "wait 2 seconds; report the url" })).await;
            assert_eq!(r.status, 200, "{}", r.body);
            let (sid, tid) = (r.body["sessionId"].as_str().expect("sid"), r.body["taskId"].as_str().expect("tid"));
            node.poll_final(sid, tid, Duration::from_secs(60)).await
        }
    });
    let finals = join_all(runs).await;
    let mut charged = 0;
    for body in &finals {
        assert_eq!(body["type"], "task_completed", "{body}");
        let cost = usd_to_micros(body["usage"]["cost"].as_f64().expect("usage.cost"));
        assert!(cost > 0, "{body}");
        charged += cost;
    }
    for node in [&a, &b] {
        let balance = node.app().store.get_user(&user).await.expect("store").expect("user").balance_micros;
        assert_eq!(balance, usd_to_micros(10.0) - charged, "every task charged exactly once");
    }
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_session_started_on_one_node_is_driven_through_another() {
    let cluster = Cluster::new().await;
    let a = cluster.node_with(None, |s| s).await;
    let b = cluster.node_with(None, |s| s).await;
    let key = a.key().await;
    let (sid, started) = a.session_on(&key, "/").await;
    assert!(!b.app().manager.is_live(&sid) && a.app().manager.is_live(&sid));

    // A task given through b runs on a; b answers its poll.
    let r = b.new_task(&key, &sid, "report the title").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let tid = r.body["taskId"].as_str().expect("taskId").to_owned();
    let done = b.poll_final(&sid, &tid, Duration::from_secs(30)).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    assert_eq!(a.poll(&sid, &tid).await.body, b.poll(&sid, &tid).await.body);

    // The live view opened through b streams a's browser.
    let view = started["streaming"]["webViewURL"].as_str().expect("webViewURL").replace(&a.base, &b.base);
    let stream = reqwest::get(&view).await.expect("stream through b");
    assert_eq!(stream.status(), 200);
    let ct = stream.headers()["content-type"].to_str().expect("content type").to_owned();
    assert!(ct.starts_with("multipart/x-mixed-replace"), "{ct}");
    drop(stream);

    // Someone else's key is refused by the owner, through b too.
    let stranger = b.key().await;
    b.state(&stranger, &sid, "stop").await.assert_error(404, "SESSION_NOT_FOUND");
    // Ending it through b ends it on a.
    assert_eq!(b.state(&key, &sid, "terminate").await.status, 200);
    crate::helpers::wait_until(Duration::from_secs(10), "the session ended on a", || !a.app().manager.is_live(&sid))
        .await;
    b.state(&key, &sid, "stop").await.assert_error(404, "SESSION_NOT_FOUND");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_killed_node_has_its_sessions_ended_as_instance_lost_by_another() {
    let cluster = Cluster::new().await;
    let b = cluster.node_with(None, |s| s.arg("node-timeout-ms", 3000).arg("node-heartbeat-ms", 300)).await;
    let key = b.key().await;
    let data = tempfile::tempdir().expect("tempdir");
    let a = Server::start_with(
        data.path(),
        &[
            "--database-url",
            &cluster.db.url,
            "--redis-url",
            &redis_url(),
            "--redis-prefix",
            &cluster.prefix,
            "--node-timeout-ms",
            "3000",
            "--profile-key",
            &cluster.profile_key,
        ],
    )
    .await;
    let client = reqwest::Client::new();
    let r: Value = client
        .post(format!("{}/start/start-session", a.base))
        .bearer_auth(&key)
        .json(&json!({ "taskDetails": "wait 60 seconds" }))
        .send()
        .await
        .expect("start-session on a")
        .json()
        .await
        .expect("JSON");
    let (sid, tid) = (r["sessionId"].as_str().expect("sid").to_owned(), r["taskId"].as_str().expect("tid").to_owned());
    // Through b while a lives: forwarded to a; a socket on b follows the session.
    assert_eq!(b.poll(&sid, &tid).await.body["status"], "active");
    let socket_url = r["socketURL"].as_str().expect("socketURL").replace(&a.base, &b.base);
    let (mut socket, _) = SocketClient::connect(&socket_url, &sid).await;

    let killed = std::time::Instant::now();
    a.crash();
    let failed = b.poll_until(&sid, &tid, Duration::from_secs(30), |v| v["status"] == "failed").await;
    assert_eq!(failed["code"], "INSTANCE_UNAVAILABLE", "{failed}");
    assert!(killed.elapsed() < Duration::from_secs(30));
    let session = b.app().store.get_session(&webpilot_core::SessionId::from_string(sid.clone())).await.expect("store");
    assert_eq!(session.expect("row").end_reason.as_deref(), Some("instance_lost"));
    let end = socket.expect_event("end_session", Duration::from_secs(10)).await;
    assert_eq!(end["data"]["reason"], "instance_lost", "{end}");
    socket.expect_event("disconnect", Duration::from_secs(10)).await;
    assert!(socket.exited(Duration::from_secs(10)).await, "the socket on b is closed after end_session");
    b.send(&key, &sid, json!({ "actionType": "state", "newState": "stop" }))
        .await
        .assert_error(404, "SESSION_NOT_FOUND");
    // Nothing was charged for the lost task; b's own work goes on.
    let user = b.app().store.get_task(&sid, &tid).await.expect("store").expect("task");
    assert_eq!(user.cost_micros, 0);
    let (own, _) = b.session_on(&key, "/").await;
    assert!(b.app().manager.is_live(&own));
    b.stop().await;
}

#[tokio::test]
async fn a_socket_on_one_node_follows_and_drives_a_session_on_another() {
    const WAIT: Duration = Duration::from_secs(20);
    let cluster = Cluster::new().await;
    let a = cluster.node_with(None, |s| s.arg("task-wait-ms", 100)).await;
    let b = cluster.node_with(None, |s| s.arg("task-wait-ms", 100)).await;
    let key = a.key().await;
    let (sid, socket_url) = a.open_session(&key, json!({})).await;
    let on_b = socket_url.replace(&a.base, &b.base);
    assert_ne!(on_b, socket_url);
    let (mut client, _) = SocketClient::connect(&on_b, &sid).await;
    // Listed by b once its relay is subscribed (just after `connect`).
    let mut listed = Value::Null;
    for _ in 0..50 {
        listed = b.get("/start/active-sockets").await.body;
        if listed["count"] == 1 {
            break;
        }
        tokio::time::sleep(crate::helpers::POLL).await;
    }
    assert_eq!(listed["count"], 1, "{listed}");

    // A task started on a reports its events to the socket on b.
    let r = a.new_task(&key, &sid, &format!("open {}; report the title", a.site.url("/"))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let action = client.expect_message("action", WAIT).await;
    assert_eq!(action["data"]["name"], "navigate", "{action}");
    let done = client.expect_message("task_completed", WAIT).await;
    assert_eq!(done["data"]["message"], "Fixture Home", "{done}");

    // A message on b's socket acts on a, and its answer is the ack.
    let ack =
        client.emit(json!({ "actionType": "newTask", "newState": "start", "taskDetails": "report the url" })).await;
    assert_eq!((ack["success"].as_bool(), ack["pending"].as_bool()), (Some(true), Some(true)), "{ack}");
    let tid = ack["taskId"].as_str().expect("taskId").to_owned();
    assert_eq!(a.poll_final(&sid, &tid, WAIT).await["type"], "task_completed");
    let refused = client.emit(json!({ "actionType": "state", "newState": "bogus" })).await;
    assert_eq!(refused["success"], false, "{refused}");
    assert!(refused["code"].is_string(), "{refused}");

    // A wrong token is refused on b as on a.
    let forged = on_b.split("?token=").next().expect("base").to_owned() + "?token=00112233445566778899aabbccddeeff";
    let mut intruder = SocketClient::start(&forged, &sid);
    let refused = intruder.expect_event("connect_error", WAIT).await;
    assert!(refused["data"]["message"].as_str().unwrap_or_default().contains("token"), "{refused}");
    assert!(intruder.exited(WAIT).await);

    // Terminating through b's socket ends the session on a, and b's socket hears it.
    let ack = client.emit(json!({ "actionType": "state", "newState": "terminate" })).await;
    assert_eq!(ack["success"], true, "{ack}");
    client.rewind();
    let end = client.expect_event("end_session", WAIT).await;
    assert_eq!(end["data"]["reason"], "terminated", "{end}");
    client.expect_event("disconnect", WAIT).await;
    assert!(client.exited(WAIT).await);
    assert!(!a.app().manager.is_live(&sid));
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn the_internal_message_endpoint_wants_the_node_key() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, _) = app.open_session(&key, json!({})).await;
    let body = json!({ "sessionId": sid, "message": { "actionType": "state", "newState": "terminate" } });
    for presented in [None, Some("not-the-key")] {
        let mut req = app.client.post(format!("{}/internal/socket-message", app.base)).json(&body);
        if let Some(k) = presented {
            req = req.header("x-webpilot-node-key", k);
        }
        let r = req.send().await.expect("request");
        assert_eq!(r.status(), 404);
    }
    assert!(app.app().manager.is_live(&sid), "nothing was done without the key");
    app.stop().await;
}

#[tokio::test]
async fn mcp_calls_for_a_session_on_another_node_run_there() {
    let cluster = Cluster::new().await;
    let a = cluster.node_with(None, |s| s.arg("task-wait-ms", 100)).await;
    let b = cluster.node_with(None, |s| s.arg("task-wait-ms", 100)).await;
    let key = a.key().await;
    let (sid, _) = a.open_session(&key, json!({})).await;
    let mcp = crate::mcp::initialize(&b, &key).await;
    let call = |id: u64, name: &str, arguments: Value| json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": name, "arguments": arguments } });
    let details = format!("open {}; report the title", a.site.url("/"));
    let message = json!({ "sessionId": sid, "message": { "actionType": "newTask", "newState": "start", "taskDetails": details } });
    let (status, _, sent) = crate::mcp::rpc(&b, Some(&key), Some(&mcp), call(2, "send_message", message)).await;
    assert_eq!(status, 200, "{sent}");
    let started = &sent["result"]["structuredContent"];
    let tid = started["taskId"].as_str().unwrap_or_else(|| panic!("taskId in {sent}")).to_owned();
    assert!(a.app().manager.is_live(&sid), "the task runs on a");
    let mut last = Value::Null;
    for n in 0..100 {
        let args = json!({ "sessionId": sid, "taskId": tid });
        let (_, _, polled) = crate::mcp::rpc(&b, Some(&key), Some(&mcp), call(3 + n, "get_task", args)).await;
        last = polled["result"]["structuredContent"].clone();
        if last["type"] == "task_completed" {
            break;
        }
        tokio::time::sleep(crate::helpers::POLL).await;
    }
    assert_eq!(last["data"]["message"], "Fixture Home", "{last}");
    // Errors come back as the owner gave them: another user's key cannot act on the session.
    let stranger = b.key().await;
    let other = crate::mcp::initialize(&b, &stranger).await;
    let stop = json!({ "sessionId": sid, "message": { "actionType": "state", "newState": "stop" } });
    let (_, _, refused) = crate::mcp::rpc(&b, Some(&stranger), Some(&other), call(200, "send_message", stop)).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(refused.to_string().contains("SESSION_NOT_FOUND"), "{refused}");
    assert!(a.app().manager.is_live(&sid));
    a.stop().await;
    b.stop().await;
}
