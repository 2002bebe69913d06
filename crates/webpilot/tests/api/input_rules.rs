//! One rule per input on every transport: `ttlSeconds` of a share link follows the validation codes
//! (a wrong type is `INVALID_PARAMS`, out of range `INVALID_PARAMETER`), and a `sessionId` with
//! surrounding whitespace names the same session over REST, MCP and Socket.IO.

use crate::helpers::TestApp;
use crate::mcp::{initialize, rpc};
use crate::sio::SocketClient;
use serde_json::{json, Value};

#[tokio::test]
async fn a_wrong_type_ttl_seconds_is_invalid_params_and_out_of_range_is_invalid_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let share = format!("/stream/{sid}/share");
    for wrong in [json!("60"), json!(true), json!([60]), json!({ "s": 60 }), json!(1.5)] {
        let r = app.post(&share, &key, json!({ "ttlSeconds": wrong })).await;
        r.assert_error(400, "INVALID_PARAMS");
        assert!(r.body["message"].as_str().is_some_and(|m| m.contains("ttlSeconds")), "{}", r.body);
    }
    app.post_raw(&share, Some(&key), "[]").await.assert_error(400, "INVALID_PARAMS");
    for out in [0, -5, 86_401] {
        let r = app.post(&share, &key, json!({ "ttlSeconds": out })).await;
        r.assert_error(400, "INVALID_PARAMETER");
    }
    for fine in [json!({ "ttlSeconds": 1 }), json!({ "ttlSeconds": 86_400 }), json!({ "ttlSeconds": null }), json!({})]
    {
        let r = app.post(&share, &key, fine.clone()).await;
        assert_eq!(r.status, 200, "{fine}: {}", r.body);
        assert_eq!(r.body["readOnly"], true);
    }
    app.stop().await;
}

#[tokio::test]
async fn a_session_id_with_surrounding_whitespace_names_the_session_on_every_transport() {
    let app = TestApp::spawn_with(|s| s.arg("task-wait-ms", 100)).await;
    let key = app.key().await;
    let (sid, socket_url) = app.open_session(&key, json!({})).await;
    let spaced = format!("  {sid}\t\n");
    // REST send-message: the owner's message reaches the session.
    let r = app.state(&key, &spaced, "stop").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["success"], true, "{}", r.body);
    // Still only the owner's: another user gets 404 as for an unknown id.
    let stranger = app.key().await;
    app.state(&stranger, &spaced, "stop").await.assert_error(404, "SESSION_NOT_FOUND");
    // MCP send_message and get_task.
    let mcp = initialize(&app, &key).await;
    let call = |name: &str, arguments: Value| json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": name, "arguments": arguments } });
    let stop = json!({ "sessionId": spaced, "message": { "actionType": "state", "newState": "stop" } });
    let (status, _, body) = rpc(&app, Some(&key), Some(&mcp), call("send_message", stop)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["structuredContent"]["success"], true, "{body}");
    let task = app.new_task(&key, &sid, "report the title").await;
    assert_eq!(task.status, 200, "{}", task.body);
    let tid = task.body["taskId"].as_str().expect("taskId").to_owned();
    let get = json!({ "sessionId": spaced, "taskId": format!(" {tid} ") });
    let (status, _, body) = rpc(&app, Some(&key), Some(&mcp), call("get_task", get)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["isError"], false, "{body}");
    assert_eq!(body["result"]["structuredContent"]["success"], true, "{body}");
    // Socket.IO: the spaced id in the auth data connects to the session and drives it.
    let (mut client, _) = SocketClient::connect(&socket_url, &spaced).await;
    let ack = client.emit(json!({ "actionType": "state", "newState": "stop" })).await;
    assert_eq!(ack["success"], true, "{ack}");
    // The whole send-message body over the socket, with the spaced id, is the same message.
    let ack =
        client.emit(json!({ "sessionId": spaced, "message": { "actionType": "state", "newState": "stop" } })).await;
    assert_eq!(ack["success"], true, "{ack}");
    client.close().await;
    app.stop().await;
}
