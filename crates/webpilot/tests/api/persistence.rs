//! Nothing is lost: a restart keeps users, keys, balances and finished tasks, and a task cut off by a
//! crash is failed with TASK_INTERRUPTED when the service comes back. Also the admin commands.

use crate::helpers::{admin, Server, TestApp};
use serde_json::json;

#[tokio::test]
async fn a_restart_keeps_users_keys_balances_and_finished_tasks() {
    let mut app = TestApp::spawn().await;
    let (user, key) = app.user(3.0).await;
    let r = app
        .post(
            "/start/run-task",
            &key,
            json!({ "taskDetails": format!("open {}; report the title", app.site.url("/")) }),
        )
        .await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let (sid, tid) = (r.body["sessionId"].as_str().unwrap().to_owned(), r.body["taskId"].as_str().unwrap().to_owned());
    let balance = app.app().store.get_user(&user).await.unwrap().unwrap().balance_micros;
    assert!(balance < 3_000_000);

    app.restart().await;

    let polled = app.poll(&sid, &tid).await;
    assert_eq!(polled.body["type"], "task_completed", "{}", polled.body);
    assert_eq!(polled.body["data"]["message"], "Fixture Home");
    let s = app.post("/start/start-session", &key, json!({})).await;
    assert_eq!(s.status, 200, "the key still works: {}", s.body);
    assert_eq!(s.body["balance"], webpilot_core::usage::micros_to_usd(balance));
    app.stop().await;
}

#[tokio::test]
async fn a_graceful_stop_fails_running_tasks_as_interrupted() {
    let mut app = TestApp::spawn_with(|s| s.arg("task-wait-ms", 100)).await;
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "wait 30 seconds" })).await;
    let (sid, tid) = (r.body["sessionId"].as_str().unwrap().to_owned(), r.body["taskId"].as_str().unwrap().to_owned());
    app.restart().await;
    let polled = app.poll(&sid, &tid).await;
    assert_eq!(polled.body["status"], "failed", "{}", polled.body);
    assert_eq!(polled.body["code"], "TASK_INTERRUPTED");
    assert!(polled.body["error"].as_str().unwrap().contains("shut down"));
    app.stop().await;
}

#[tokio::test]
async fn a_task_cut_off_by_a_crash_is_failed_on_restart() {
    let data = tempfile::tempdir().unwrap();
    let user = admin(data.path(), &["users", "create", "--name", "crashy", "--balance", "2.5"]);
    let key = admin(data.path(), &["keys", "create", "--user", &user, "--name", "ci"]);
    assert!(key.starts_with("wp_"));
    let listed = admin(data.path(), &["users", "list"]);
    assert!(listed.contains(&user) && listed.contains("2.500000"), "{listed}");

    let server = Server::start(data.path()).await;
    let client = reqwest::Client::new();
    let r: serde_json::Value = client
        .post(format!("{}/start/run-task", server.base))
        .bearer_auth(&key)
        .json(&json!({ "taskDetails": "wait 30 seconds" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["status"], "pending", "{r}");
    let (sid, tid) = (r["sessionId"].as_str().unwrap().to_owned(), r["taskId"].as_str().unwrap().to_owned());
    server.crash();

    // The data dir is picked up by a new process of the service.
    let server = Server::start(data.path()).await;
    let polled: serde_json::Value =
        reqwest::get(format!("{}/task/{sid}/{tid}", server.base)).await.unwrap().json().await.unwrap();
    assert_eq!(polled["success"], false, "{polled}");
    assert_eq!(polled["status"], "failed");
    assert_eq!(polled["code"], "TASK_INTERRUPTED");
    // The session died with the crash.
    let msg = client
        .post(format!("{}/start/send-message", server.base))
        .bearer_auth(&key)
        .json(&json!({ "sessionId": sid, "message": { "actionType": "state", "newState": "stop" } }))
        .send()
        .await
        .unwrap();
    assert_eq!(msg.status(), 404);
    server.crash();
}

#[tokio::test]
async fn admin_commands_manage_keys_and_balances() {
    let data = tempfile::tempdir().unwrap();
    let user = admin(data.path(), &["users", "create", "--name", "ops"]);
    let key = admin(data.path(), &["keys", "create", "--user", &user, "--expires-in-days", "30"]);
    let keys = admin(data.path(), &["keys", "list", "--user", &user]);
    assert!(keys.contains(&key[..10]) && keys.contains("active"), "{keys}");
    assert!(!keys.contains(&key), "the key itself is never listed");
    let key_id = keys.split('\t').next().unwrap().to_owned();
    assert_eq!(admin(data.path(), &["balance", "add", "--user", &user, "--amount", "4.25"]), "4.250000");
    assert_eq!(admin(data.path(), &["balance", "add", "--user", &user, "--amount", "-0.25"]), "4.000000");
    assert_eq!(admin(data.path(), &["keys", "revoke", "--key", &key_id]), "revoked");
    assert!(admin(data.path(), &["keys", "list", "--user", &user]).contains("revoked"));
    assert_eq!(admin(data.path(), &["users", "deactivate", "--user", &user]), "deactivated");
    assert!(admin(data.path(), &["users", "list"]).contains("deactivated"));
}
