//! MCP sessions under a hostile tenant: a per-user and a global cap on live MCP sessions (429
//! `SESSION_LIMIT_REACHED`), places given back by DELETE and by idle expiry, sessions bound to the user
//! who initialized them (another user's id is 404 as an unknown one), one in-flight request per
//! JSON-RPC id, and batches refused with a JSON-RPC error.

use crate::helpers::TestApp;
use crate::mcp::{initialize, rpc};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const ACCEPT: &str = "application/json, text/event-stream";
/// The documented default of `--max-mcp-sessions-per-user`.
const PER_USER_DEFAULT: usize = 32;

fn init_body() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } },
    })
}

/// An `initialize` that may be refused: status, the Mcp-Session-Id header and the body.
async fn try_initialize(app: &TestApp, key: &str) -> (u16, Option<String>, Value) {
    rpc(app, Some(key), None, init_body()).await
}

/// A request to /mcp with `method` (GET or DELETE) on `session`: status and body.
async fn bare(app: &TestApp, method: reqwest::Method, key: &str, session: &str) -> (u16, Value) {
    let resp = app
        .client
        .request(method, format!("{}/mcp", app.base))
        .bearer_auth(key)
        .header("accept", ACCEPT)
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .expect("request");
    let status = resp.status().as_u16();
    // An accepted GET is an endless SSE stream: only its status is read.
    if status == 200 {
        return (status, Value::Null);
    }
    let text = resp.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or_else(|_| json!({ "raw": text })))
}

async fn delete(app: &TestApp, key: &str, session: &str) -> (u16, Value) {
    bare(app, reqwest::Method::DELETE, key, session).await
}

fn assert_limit(status: u16, body: &Value) {
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body["code"], "SESSION_LIMIT_REACHED", "{body}");
    assert!(body["message"].as_str().is_some_and(|m| m.contains("MCP")), "{body}");
}

fn assert_not_found(status: u16, body: &Value) {
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], -32001, "{body}");
    assert_eq!(body["error"]["data"]["code"], "MCP_SESSION_NOT_FOUND", "{body}");
}

/// Resident memory of this process (the service runs in it), in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_flood_of_mcp_initializes_gets_429_at_the_per_user_cap_and_delete_frees_a_place() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let before = rss_kib();
    let mut sessions = Vec::new();
    for _ in 0..PER_USER_DEFAULT {
        sessions.push(initialize(&app, &key).await);
    }
    let (status, sid, body) = try_initialize(&app, &key).await;
    assert_limit(status, &body);
    assert!(sid.is_none(), "a refused initialize made a session");
    // The flood goes on: every further initialize is refused and memory stays put.
    let at_cap = rss_kib();
    for _ in 0..2000 {
        let (status, _, body) = try_initialize(&app, &key).await;
        assert_limit(status, &body);
    }
    let after_flood = rss_kib();
    eprintln!(
        "RSS: {before} KiB before, {at_cap} KiB with {PER_USER_DEFAULT} MCP sessions, {after_flood} KiB after 2000 refused initializes"
    );
    // The cap is per user: another user still gets a session.
    let other = app.key().await;
    let theirs = initialize(&app, &other).await;
    // A DELETE ends the session (its id is then unknown) and gives its place back.
    let gone = sessions.pop().expect("a session");
    let (status, body) = delete(&app, &key, &gone).await;
    assert_eq!(status, 202, "{body}");
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let (status, _, body) = rpc(&app, Some(&key), Some(&gone), list.clone()).await;
    assert_not_found(status, &body);
    let fresh = initialize(&app, &key).await;
    let (status, _, body) = rpc(&app, Some(&key), Some(&fresh), list.clone()).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = try_initialize(&app, &key).await;
    assert_limit(status, &body);
    let (status, _, body) = rpc(&app, Some(&other), Some(&theirs), list).await;
    assert_eq!(status, 200, "{body}");
    app.stop().await;
}

#[tokio::test]
async fn the_global_mcp_session_cap_holds_across_users() {
    let app = TestApp::spawn_with(|s| s.arg("max-mcp-sessions", 3)).await;
    let (a, b) = (app.key().await, app.key().await);
    let first = initialize(&app, &a).await;
    initialize(&app, &a).await;
    initialize(&app, &b).await;
    let (status, _, body) = try_initialize(&app, &b).await;
    assert_limit(status, &body);
    let (status, body) = delete(&app, &a, &first).await;
    assert_eq!(status, 202, "{body}");
    initialize(&app, &b).await;
    let (status, _, body) = try_initialize(&app, &a).await;
    assert_limit(status, &body);
    app.stop().await;
}

#[tokio::test]
async fn an_idle_mcp_session_expires_and_gives_its_place_back() {
    let app = TestApp::spawn_with(|s| s.arg("max-mcp-sessions-per-user", 1).arg("mcp-idle-timeout-ms", 2000)).await;
    let key = app.key().await;
    let first = initialize(&app, &key).await;
    let (status, _, body) = try_initialize(&app, &key).await;
    assert_limit(status, &body);
    // Once the first has been idle for the timeout, its place is free again.
    let deadline = Instant::now() + Duration::from_secs(20);
    let second = loop {
        let (status, sid, body) = try_initialize(&app, &key).await;
        if status == 200 {
            break sid.expect("mcp-session-id");
        }
        assert_limit(status, &body);
        assert!(Instant::now() < deadline, "the idle MCP session never expired");
        tokio::time::sleep(crate::helpers::POLL).await;
    };
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let (status, _, body) = rpc(&app, Some(&key), Some(&first), list.clone()).await;
    assert_not_found(status, &body);
    let (status, _, body) = rpc(&app, Some(&key), Some(&second), list).await;
    assert_eq!(status, 200, "{body}");
    app.stop().await;
}

#[tokio::test]
async fn another_users_mcp_session_id_is_not_found_on_every_method() {
    let app = TestApp::spawn().await;
    let (a, b) = (app.key().await, app.key().await);
    let theirs = initialize(&app, &a).await;
    let list = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" });
    // B's POST, GET (SSE) and DELETE with A's id: 404 exactly as for an unknown id.
    let (status, _, stolen) = rpc(&app, Some(&b), Some(&theirs), list.clone()).await;
    assert_not_found(status, &stolen);
    let (_, _, unknown) = rpc(&app, Some(&b), Some("no-such-mcp-session"), list.clone()).await;
    assert_eq!(stolen, unknown, "another user's session must look unknown");
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let (status, body) = bare(&app, method.clone(), &b, &theirs).await;
        assert_not_found(status, &body);
        let (_, unknown) = bare(&app, method.clone(), &b, "no-such-mcp-session").await;
        assert_eq!(body, unknown, "{method}");
    }
    // A's session is untouched: it lists tools and A's GET listens.
    let (status, _, body) = rpc(&app, Some(&a), Some(&theirs), list).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["tools"].as_array().map(Vec::len), Some(4), "{body}");
    let (status, _) = bare(&app, reqwest::Method::GET, &a, &theirs).await;
    assert_eq!(status, 200);
    let (status, body) = delete(&app, &a, &theirs).await;
    assert_eq!(status, 202, "{body}");
    app.stop().await;
}

#[tokio::test]
async fn a_second_request_with_an_in_flight_id_is_refused_and_the_first_is_answered() {
    let app = TestApp::spawn_with(|s| s.arg("task-wait-ms", 60_000)).await;
    let key = app.key().await;
    let session = app.start_session(&key, json!({})).await;
    let mcp = initialize(&app, &key).await;
    let call = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": { "name": "send_message",
        "arguments": { "sessionId": session, "message": { "actionType": "newTask", "newState": "start",
        "taskDetails": "wait 60 seconds; report the title" } } } });
    let post = |body: &Value| {
        app.client
            .post(format!("{}/mcp", app.base))
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .header("accept", ACCEPT)
            .header("mcp-session-id", &mcp)
            .header("mcp-protocol-version", "2025-06-18")
            .body(body.to_string())
            .send()
    };
    // The first call's answer headers are out once the request is registered; its task then waits.
    let first = post(&call).await.expect("first call");
    assert_eq!(first.status(), 200);
    let (status, _, body) = rpc(&app, Some(&key), Some(&mcp), call.clone()).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["id"], 5, "{body}");
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert_eq!(body["error"]["data"]["code"], "MCP_INVALID_REQUEST", "{body}");
    // Another id is served meanwhile.
    let (status, _, body) =
        rpc(&app, Some(&key), Some(&mcp), json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/list" })).await;
    assert_eq!(status, 200, "{body}");
    // Stopping the task ends the first call, which gets its own answer.
    let stopped = app.state(&key, &session, "stop").await;
    assert_eq!(stopped.status, 200, "{}", stopped.body);
    let text = tokio::time::timeout(Duration::from_secs(30), first.text()).await.expect("the first call hangs");
    let answer: Value = text
        .expect("body")
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find_map(|d| serde_json::from_str::<Value>(d).ok().filter(|v| v.get("id").is_some()))
        .expect("a JSON-RPC answer");
    assert_eq!(answer["id"], 5, "{answer}");
    assert_eq!(answer["result"]["structuredContent"]["sessionId"], session.as_str(), "{answer}");
    // The id is free again once answered.
    let (status, _, body) =
        rpc(&app, Some(&key), Some(&mcp), json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/list" })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], 5, "{body}");
    app.stop().await;
}

#[tokio::test]
async fn a_jsonrpc_batch_gets_a_jsonrpc_error() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let mcp = initialize(&app, &key).await;
    let batch = json!([
        { "jsonrpc": "2.0", "id": 1, "method": "ping" },
        { "jsonrpc": "2.0", "id": 2, "method": "tools/list" },
    ]);
    for session in [Some(mcp.as_str()), None] {
        let (status, _, body) = rpc(&app, Some(&key), session, batch.clone()).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        assert_eq!(body["id"], Value::Null, "{body}");
        assert_eq!(body["error"]["code"], -32600, "{body}");
        assert!(body["error"]["message"].as_str().is_some_and(|m| m.contains("batch")), "{body}");
        assert_eq!(body["error"]["data"]["code"], "MCP_INVALID_REQUEST", "{body}");
    }
    app.stop().await;
}

/// Tasks alive in this test's runtime (the service runs in it).
fn alive_tasks() -> usize {
    tokio::runtime::Handle::current().metrics().num_alive_tasks()
}

/// Waits until at most `most` tasks are alive.
async fn wait_tasks_at_most(most: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive_tasks() > most {
        assert!(Instant::now() < deadline, "{} tasks still alive, expected at most {most}", alive_tasks());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn deleted_mcp_sessions_end_their_tasks_and_give_their_memory_back() {
    const N: usize = 1000;
    let app = TestApp::spawn_with(|s| s.arg("max-mcp-sessions-per-user", N).arg("max-mcp-sessions", N)).await;
    let key = app.key().await;
    let open = || async {
        let mut ids = Vec::with_capacity(N);
        for _ in 0..N {
            let (status, sid, body) = try_initialize(&app, &key).await;
            assert_eq!(status, 200, "{body}");
            ids.push(sid.expect("mcp-session-id"));
        }
        ids
    };
    let (tasks_before, rss_before) = (alive_tasks(), rss_kib());
    let mut rss = Vec::new();
    for _round in 0..2 {
        let ids = open().await;
        // Each live session runs its own tasks (rmcp's session worker and service).
        assert!(alive_tasks() >= tasks_before + 2 * N, "{} tasks with {N} sessions", alive_tasks());
        rss.push(rss_kib());
        let (status, _, body) = try_initialize(&app, &key).await;
        assert_limit(status, &body);
        for id in &ids {
            let (status, body) = delete(&app, &key, id).await;
            assert_eq!(status, 202, "{body}");
        }
        // DELETE ends them: their tasks finish and their memory is freed for reuse.
        wait_tasks_at_most(tasks_before + 5).await;
        rss.push(rss_kib());
    }
    eprintln!("RSS (KiB) with {N} MCP sessions: {rss_before} before; open, deleted, open again, deleted: {rss:?}");
    let (first, second) = (rss[0].saturating_sub(rss_before), rss[2].saturating_sub(rss[1]));
    assert!(second < first, "deleted MCP sessions' memory was not reused: +{first} KiB, then +{second} KiB");
    app.stop().await;
}
