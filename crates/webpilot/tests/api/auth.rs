//! Authentication errors, deactivated accounts, balances, and isolation between users.

use crate::helpers::TestApp;
use serde_json::json;
use webpilot_store::now_ms;

const LIMITED: [&str; 3] = ["/start/start-session", "/start/send-message", "/start/run-task"];

#[tokio::test]
async fn a_missing_or_malformed_header_is_unauthorized() {
    let app = TestApp::spawn().await;
    for path in LIMITED {
        app.post_raw(path, None, "{}").await.assert_error(401, "UNAUTHORIZED");
    }
    let r = app
        .client
        .post(format!("{}/start/start-session", app.base))
        .header("authorization", "Basic abc")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["code"], "UNAUTHORIZED");
    app.stop().await;
}

#[tokio::test]
async fn unknown_revoked_and_expired_keys_are_refused() {
    let app = TestApp::spawn().await;
    for path in LIMITED {
        app.post(path, "wp_not_a_real_key", json!({})).await.assert_error(401, "INVALID_API_KEY");
    }
    let store = &app.app().store;
    let (user, _) = app.user(10.0).await;
    let (rec, key) = store.create_api_key(&user, "to revoke", None).await.unwrap();
    store.revoke_api_key(&rec.id).await.unwrap();
    app.post("/start/start-session", &key, json!({})).await.assert_error(401, "INVALID_API_KEY");
    let (_, expired) = store.create_api_key(&user, "old", Some(now_ms() - 1000)).await.unwrap();
    app.post("/start/start-session", &expired, json!({})).await.assert_error(401, "API_KEY_EXPIRED");
    app.stop().await;
}

#[tokio::test]
async fn a_deactivated_account_is_forbidden() {
    let app = TestApp::spawn().await;
    let (user, key) = app.user(10.0).await;
    app.app().store.deactivate_user(&user).await.unwrap();
    for path in LIMITED {
        let r = app.post(path, &key, json!({ "taskDetails": "report the title" })).await;
        r.assert_error(403, "ACCOUNT_DEACTIVATED");
        assert_eq!(r.body["message"], "account is deactivated");
    }
    app.stop().await;
}

#[tokio::test]
async fn no_work_starts_at_or_below_a_zero_balance() {
    let app = TestApp::spawn().await;
    let (user, key) = app.user(0.0).await;
    app.post("/start/start-session", &key, json!({})).await.assert_error(402, "INSUFFICIENT_BALANCE");
    app.post("/start/run-task", &key, json!({ "taskDetails": "report the title" }))
        .await
        .assert_error(402, "INSUFFICIENT_BALANCE");
    // A session opened while funded refuses new tasks once the balance is gone.
    app.app().store.add_balance(&user, 1_000_000).await.unwrap();
    let sid = app.start_session(&key, json!({})).await;
    app.app().store.add_balance(&user, -1_000_000).await.unwrap();
    app.new_task(&key, &sid, "report the title").await.assert_error(402, "INSUFFICIENT_BALANCE");
    app.stop().await;
}

#[tokio::test]
async fn one_user_cannot_reach_another_users_session() {
    let app = TestApp::spawn().await;
    let alice = app.key().await;
    let bob = app.key().await;
    let sid = app.start_session(&alice, json!({})).await;
    let r = app.new_task(&bob, &sid, "report the title").await;
    r.assert_error(404, "SESSION_NOT_FOUND");
    assert!(!r.body.to_string().contains(&sid[4..]), "no data of the session leaks");
    app.state(&bob, &sid, "terminate").await.assert_error(404, "SESSION_NOT_FOUND");
    // Alice's session is untouched by Bob's attempts.
    let done = app.run_in(&alice, &sid, &format!("open {}; report the title", app.site.url("/"))).await;
    assert_eq!(done["data"]["message"], "Fixture Home");
    app.stop().await;
}

#[tokio::test]
async fn a_users_keys_all_reach_its_sessions() {
    let app = TestApp::spawn().await;
    let (user, first) = app.user(10.0).await;
    let (_, second) = app.app().store.create_api_key(&user, "second", None).await.unwrap();
    let sid = app.start_session(&first, json!({})).await;
    let r = app.state(&second, &sid, "terminate").await;
    assert_eq!(r.status, 200, "{}", r.body);
    app.stop().await;
}

#[tokio::test]
async fn the_task_cost_is_charged_to_the_balance() {
    let app = TestApp::spawn_with(|s| s.arg("price-compute-per-second", 1.0)).await;
    let (user, key) = app.user(10.0).await;
    let r = app
        .post(
            "/start/run-task",
            &key,
            json!({ "taskDetails": format!("open {}; wait 500 ms; report the title", app.site.url("/")) }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let cost = r.body["result"]["usage"]["cost"].as_f64().unwrap();
    assert!(cost >= 0.5, "0.5 s at 1 USD/s at least: {cost}");
    let balance = app.app().store.get_user(&user).await.unwrap().unwrap().balance_micros;
    assert_eq!(balance, webpilot_core::usage::usd_to_micros(10.0 - cost));
    let s = app.post("/start/start-session", &key, json!({})).await;
    assert_eq!(s.body["balance"], webpilot_core::usage::micros_to_usd(balance), "start-session shows the live balance");
    app.stop().await;
}
