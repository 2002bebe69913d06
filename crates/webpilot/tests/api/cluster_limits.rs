//! Per-user limits across nodes (the session cap and the task holds are the user's, not each node's), and
//! a node that learns it was declared lost while it was alive.

use crate::cluster::Cluster;
use crate::sio::SocketClient;
use serde_json::json;
use std::time::Duration;
use webpilot_core::usage::usd_to_micros;
use webpilot_core::SessionId;

#[tokio::test]
async fn the_session_cap_and_task_holds_are_counted_across_nodes() {
    let cluster = Cluster::new().await;
    let settings = |s: crate::helpers::Settings| {
        s.arg("max-sessions-per-user", 2).arg("task-hold-usd", 0.05).arg("task-wait-ms", 100)
    };
    let a = cluster.node_with(None, settings).await;
    let b = cluster.node_with(None, settings).await;

    // Two sessions, one on each node, fill the user's cap on both.
    let key = a.key().await;
    let (on_a, _) = a.session_on(&key, "/").await;
    let (_on_b, _) = b.session_on(&key, "/").await;
    for node in [&a, &b] {
        let r = node.post("/start/start-session", &key, json!({})).await;
        r.assert_error(429, "SESSION_LIMIT_REACHED");
    }
    // A place given back on a is free on b at once.
    assert_eq!(a.state(&key, &on_a, "terminate").await.status, 200);
    let r = b.post("/start/start-session", &key, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);

    // A balance below one hold: a task running on a leaves nothing for new work on b.
    let (user, small) = a.user(0.04).await;
    let r = a.post("/start/run-task", &small, json!({ "taskDetails": "wait 3 seconds; report the url" })).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let (sid, tid) = (r.body["sessionId"].as_str().expect("sid"), r.body["taskId"].as_str().expect("tid"));
    let refused = b.post("/start/run-task", &small, json!({ "taskDetails": "report the url" })).await;
    refused.assert_error(402, "INSUFFICIENT_BALANCE");
    let done = a.poll_final(sid, tid, Duration::from_secs(60)).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    // Charged and released: the rest of the balance covers new work again, on either node.
    let balance = b.app().store.get_user(&user).await.expect("store").expect("user").balance_micros;
    assert!(balance > 0 && balance < usd_to_micros(0.04), "{balance}");
    let r = b.post("/start/run-task", &small, json!({ "taskDetails": "report the url" })).await;
    assert_eq!(r.status, 200, "{}", r.body);
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_node_declared_lost_while_alive_ends_its_own_sessions() {
    let cluster = Cluster::new().await;
    let a = cluster.node_with(None, |s| s.arg("task-wait-ms", 100)).await;
    let b = cluster.node_with(None, |s| s).await;
    let (user, key) = a.user(10.0).await;
    let r = a.post("/start/start-session", &key, json!({ "taskDetails": "wait 60 seconds" })).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let (sid, tid) = (r.body["sessionId"].as_str().expect("sid"), r.body["taskId"].as_str().expect("tid"));
    let (mut socket, _) = SocketClient::connect(r.body["socketURL"].as_str().expect("socketURL"), sid).await;
    assert_eq!(a.poll(sid, tid).await.body["status"], "active");

    // Another node declares a lost (as b's heartbeat does when a pauses past the timeout): the rows end.
    let reaped = b.app().store.reap_node(a.app().cluster.node_id(), -1).await.expect("store").expect("a claimed");
    assert_eq!(reaped.sessions, vec![SessionId::from_string(sid)]);

    // a learns it on its next heartbeat and ends the session itself: the task stops, the browser context
    // is given back, its socket hears why.
    let end = socket.expect_event("end_session", Duration::from_secs(10)).await;
    assert_eq!(end["data"]["reason"], "instance_lost", "{end}");
    crate::helpers::wait_until(Duration::from_secs(10), "a ended the session", || !a.app().manager.is_live(sid)).await;
    crate::helpers::wait_until(Duration::from_secs(10), "the lost session's browser context is disposed", || {
        a.app().manager.pool().stats().in_use == 0
    })
    .await;
    let failed = a.poll(sid, tid).await.body;
    assert_eq!((failed["status"].as_str(), failed["code"].as_str()), (Some("failed"), Some("INSTANCE_UNAVAILABLE")));
    let task = a.app().store.get_task(sid, tid).await.expect("store").expect("task");
    assert_eq!(task.cost_micros, 0, "the lost task is charged nothing");
    let balance = a.app().store.get_user(&user).await.expect("store").expect("user").balance_micros;
    assert_eq!(balance, usd_to_micros(10.0));

    // a joined again: a session it starts now is driven through b.
    let (again, _) = a.session_on(&key, "/").await;
    let r = b.new_task(&key, &again, "report the title").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let tid = r.body["taskId"].as_str().expect("taskId").to_owned();
    let done = b.poll_final(&again, &tid, Duration::from_secs(30)).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    a.stop().await;
    b.stop().await;
}
