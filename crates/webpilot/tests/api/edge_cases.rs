//! What a code reading suggested and a quick try did not confirm, each checked by a test: stop then
//! newTask at once, page dialogs, a graceful stop during inline waits, and a non-number from the model.

use crate::agent::{tool_results, with_model};
use crate::helpers::TestApp;
use crate::sio::SocketClient;
use serde_json::json;
use std::time::Duration;
use webpilot_testkit::Reply;

#[tokio::test]
async fn stop_then_new_task_at_once_leaves_no_task_running_forever() {
    let app = TestApp::spawn_with(|s| s.arg("task-wait-ms", 100)).await;
    let key = app.key().await;
    let (sid, socket_url) = app.open_session(&key, json!({})).await;
    let long = json!({ "actionType": "newTask", "newState": "start", "taskDetails": "wait 5 seconds; report the url" });
    // Over REST.
    let first = app.send(&key, &sid, long.clone()).await.body["taskId"].as_str().expect("taskId").to_owned();
    assert_eq!(app.state(&key, &sid, "stop").await.status, 200);
    let second = app.send(&key, &sid, long.clone()).await;
    assert_eq!(second.status, 200, "{}", second.body);
    let stopped = app.poll_final(&sid, &first, Duration::from_secs(10)).await;
    assert_eq!(stopped["code"], "TASK_STOPPED", "{stopped}");
    // Over the socket, without waiting between the two.
    let (mut client, _) = SocketClient::connect(&socket_url, &sid).await;
    let running = second.body["taskId"].as_str().expect("taskId").to_owned();
    let ack = client.emit(json!({ "actionType": "state", "newState": "stop" })).await;
    assert_eq!(ack["success"], true, "{ack}");
    let next = client.emit(long).await;
    assert_eq!(next["success"], true, "{next}");
    let stopped = app.poll_final(&sid, &running, Duration::from_secs(10)).await;
    assert_eq!(stopped["code"], "TASK_STOPPED", "{stopped}");
    let next_id = next["taskId"].as_str().expect("taskId").to_owned();
    let done = app.poll_final(&sid, &next_id, Duration::from_secs(20)).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    client.close().await;
    app.stop().await;
}

#[tokio::test]
async fn page_dialogs_do_not_block_the_page() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let page = app.site.url("/dialogs");
    let done = app.run_in(&key, &sid, &format!("open {page}; report the title")).await;
    assert_eq!(done["data"]["message"], "after dialogs", "{done}");
    // A page that asks before it is left can still be left.
    let away = app.run_in(&key, &sid, &format!("open {}; report the title", app.site.url("/pricing"))).await;
    assert_eq!(away["data"]["message"], "Pricing", "{away}");
    app.stop().await;
}

#[tokio::test]
async fn a_graceful_stop_does_not_wait_for_inline_waits() {
    let app = TestApp::spawn_with(|s| s.arg("task-wait-ms", 50_000)).await;
    let key = app.key().await;
    let first_page = app.site.url("/pricing");
    let details = format!("open {first_page}; wait 10 seconds; wait 10 seconds; wait 10 seconds; report the url");
    let long = json!({ "taskDetails": details });
    let request = app.client.post(format!("{}/start/run-task", app.base)).bearer_auth(&key).json(&long).send();
    let waiting = tokio::spawn(async move { request.await.expect("answer").json::<serde_json::Value>().await });
    // Stop once the task is surely running: it has loaded its first page.
    while !app.site.was_requested(None, "/pricing") {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.stop().await;
    let reply = waiting.await.expect("joined").expect("JSON");
    // The inline wait ended with the stop and says how the task ended, instead of running on to its end.
    assert_eq!(reply["status"], "failed", "{reply}");
    assert_eq!(reply["code"], "TASK_INTERRUPTED", "{reply}");
}

#[tokio::test]
async fn a_wait_of_not_a_number_is_not_a_crash() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![
        Reply::call("wait", json!({ "seconds": "NaN" })),
        Reply::call("wait", json!({ "seconds": -1e308 })),
        Reply::call("wait", json!({ "seconds": "not a number" })),
        Reply::done("still here"),
    ]);
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "wait oddly" })).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let told = tool_results(model.requests().last().expect("requests"));
    assert_eq!(told.len(), 3, "{told:?}");
    app.stop().await;
}
