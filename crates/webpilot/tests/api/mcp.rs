//! The MCP endpoint (`/mcp`): tools and resources through the official Python `mcp` SDK, and the error
//! mapping (401, MCP_INVALID_REQUEST, MCP_METHOD_NOT_FOUND, MCP_SESSION_NOT_FOUND) over raw HTTP.

use crate::clients::run_python;
use crate::helpers::TestApp;
use serde_json::{json, Value};
use std::time::Duration;

const ACCEPT: &str = "application/json, text/event-stream";

/// POSTs one JSON-RPC body to /mcp; returns status, the Mcp-Session-Id header and the JSON message
/// (read from a JSON body or from the first `data:` line of an SSE body).
pub(crate) async fn rpc(
    app: &TestApp,
    key: Option<&str>,
    session: Option<&str>,
    body: Value,
) -> (u16, Option<String>, Value) {
    let mut req = app
        .client
        .post(format!("{}/mcp", app.base))
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(body.to_string());
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    if let Some(s) = session {
        req = req.header("mcp-session-id", s).header("mcp-protocol-version", "2025-06-18");
    }
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    let sid = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let text = resp.text().await.expect("body");
    let json_text = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| d.starts_with('{'))
        .unwrap_or(text.trim());
    let value = serde_json::from_str(json_text).unwrap_or_else(|_| json!({ "raw": text }));
    (status, sid, value)
}

/// Initializes an MCP session over raw HTTP and returns its id.
pub(crate) async fn initialize(app: &TestApp, key: &str) -> String {
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } },
    });
    let (status, sid, body) = rpc(app, Some(key), None, init).await;
    assert_eq!(status, 200, "{body}");
    let sid = sid.expect("mcp-session-id");
    let (status, _, _) =
        rpc(app, Some(key), Some(&sid), json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    assert!(status == 202 || status == 200, "initialized: {status}");
    sid
}

#[tokio::test]
async fn the_python_mcp_sdk_lists_tools_runs_a_task_and_reads_resources() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let task = format!("open {} then report the text of #cheapest", app.site.url("/pricing"));
    let url = format!("{}/mcp", app.base);
    let env = [("WEBPILOT_MCP_URL", url.as_str()), ("WEBPILOT_KEY", key.as_str())];
    let r = run_python("mcp_client.py", &[&task], &env, Duration::from_secs(90)).await;
    assert_eq!(r["tools"], json!(["get_task", "run_task", "send_message", "start_session"]), "{r}");
    assert_eq!(r["resources"], json!(["webpilot://sessions"]));
    let run = &r["run_task"];
    assert_eq!(run["is_error"], false, "{r}");
    assert_eq!(run["body"]["status"], "complete", "{r}");
    assert_eq!(run["body"]["result"]["data"]["message"], "Basic $9");
    let got = &r["get_task"];
    assert_eq!(got["body"]["type"], "task_completed", "{r}");
    assert_eq!(got["body"]["data"]["message"], "Basic $9");
    assert_eq!(r["task_resource"]["type"], "task_completed", "{r}");
    // The session started over MCP was live when the sessions resource was read, then terminated.
    let started = r["start_session"]["body"]["sessionId"].as_str().expect("sessionId");
    let live: Vec<&str> =
        r["sessions_resource"]["sessions"].as_array().unwrap().iter().filter_map(|s| s["sessionId"].as_str()).collect();
    assert_eq!(live, vec![started], "{r}");
    assert_eq!(r["terminate"]["body"]["success"], true, "{r}");
    assert_eq!(r["missing"]["is_error"], true);
    assert_eq!(r["missing"]["body"]["code"], "MCP_SESSION_NOT_FOUND", "{r}");
    assert_eq!(app.app().manager.session_count(), 0);
    app.stop().await;
}

#[tokio::test]
async fn mcp_requests_without_a_valid_key_get_401_in_the_spec_body() {
    let app = TestApp::spawn().await;
    let ping = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" });
    let (status, _, body) = rpc(&app, None, None, ping.clone()).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["success"], false);
    assert_eq!(body["code"], "UNAUTHORIZED");
    let (status, _, body) = rpc(&app, Some("wp_wrong"), None, ping).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["code"], "INVALID_API_KEY");
    app.stop().await;
}

#[tokio::test]
async fn mcp_protocol_errors_carry_the_spec_codes() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = initialize(&app, &key).await;

    let (status, _, body) = rpc(&app, Some(&key), Some(&sid), json!({ "id": 7, "method": "tools/list" })).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], -32600);
    assert_eq!(body["error"]["data"]["code"], "MCP_INVALID_REQUEST", "{body}");
    assert_eq!(body["id"], 7);

    let unknown = json!({ "jsonrpc": "2.0", "id": 8, "method": "webpilot/nothing" });
    let (_, _, body) = rpc(&app, Some(&key), Some(&sid), unknown).await;
    assert_eq!(body["error"]["code"], -32601, "{body}");
    assert_eq!(body["error"]["data"]["code"], "MCP_METHOD_NOT_FOUND", "{body}");

    let list = json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/list" });
    let (status, _, body) = rpc(&app, Some(&key), Some(&sid), list.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["tools"].as_array().map(Vec::len), Some(4), "{body}");

    let (status, _, body) = rpc(&app, Some(&key), Some("no-such-mcp-session"), list).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["data"]["code"], "MCP_SESSION_NOT_FOUND", "{body}");

    let read = json!({ "jsonrpc": "2.0", "id": 10, "method": "resources/read",
        "params": { "uri": "webpilot://task/ses_nope/tsk_nope" } });
    let (_, _, body) = rpc(&app, Some(&key), Some(&sid), read).await;
    assert_eq!(body["error"]["data"]["code"], "MCP_SESSION_NOT_FOUND", "{body}");
    app.stop().await;
}
