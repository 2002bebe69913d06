//! Session time is billed (held for the session's whole maxDuration while it is open, charged for its real
//! open time when it ends), and a deactivated account loses its sessions and every link to them.

use crate::helpers::*;
use serde_json::json;
use std::time::{Duration, Instant};
use webpilot_core::usage::usd_to_micros;
use webpilot_core::SessionId;

/// $0.001 per session-second: one micro-dollar per millisecond open.
const PRICE: &str = "0.001";

async fn balance(app: &TestApp, user: &webpilot_core::UserId) -> i64 {
    app.app().store.get_user(user).await.expect("store").expect("user").balance_micros
}

#[tokio::test]
async fn a_held_session_is_charged_for_its_open_time() {
    let app = TestApp::spawn_with(|s| s.arg("price-session-per-second", PRICE)).await;
    let (user, key) = app.user(1.0).await;
    let before_start = Instant::now();
    let sid = app.start_session(&key, json!({ "maxDuration": 60_000 })).await;
    let after_start = Instant::now();
    // Held, not yet charged: driven by hand (as the reproduction did), with no task at all.
    assert_eq!(balance(&app, &user).await, usd_to_micros(1.0));
    for _ in 0..3 {
        let typed = app
            .send(
                &key,
                &sid,
                json!({ "actionType": "interaction", "action": { "type": "TYPE", "text": "ab", "humanLike": true } }),
            )
            .await;
        assert_eq!(typed.status, 200, "{}", typed.body);
    }
    // Kept fixed: a timer is the point (the session is charged for the time it was open).
    tokio::time::sleep(Duration::from_millis(800)).await;
    let before_end = Instant::now();
    let ended = app.state(&key, &sid, "terminate").await;
    assert_eq!(ended.status, 200, "{}", ended.body);
    let after_end = Instant::now();

    // One micro-dollar per millisecond: the charge lies between the shortest and the longest the session
    // can have been open, as seen from here.
    let charged = usd_to_micros(1.0) - balance(&app, &user).await;
    let least = (before_end - after_start).as_millis() as i64;
    let most = (after_end - before_start).as_millis() as i64 + 1;
    assert!(charged >= least && charged <= most, "charged {charged}, expected {least}..={most}");
    let recorded = app.app().store.session_cost(&SessionId::from_string(&sid)).await.expect("store");
    assert_eq!(recorded, Some(charged), "the session's row says what was charged");
    // The next start-session shows the balance after the charge.
    let next = app.post("/start/start-session", &key, json!({ "maxDuration": 1_000 })).await;
    assert_eq!(next.status, 200, "{}", next.body);
    assert_eq!(next.body["balance"], webpilot_core::usage::micros_to_usd(usd_to_micros(1.0) - charged));
    app.stop().await;
}

#[tokio::test]
async fn a_session_starts_only_when_the_balance_covers_its_whole_time() {
    let app = TestApp::spawn_with(|s| s.arg("price-session-per-second", PRICE)).await;
    // $0.007 (the reproduction): 7 session-seconds at this price.
    let (user, key) = app.user(0.007).await;
    let refused = app.post("/start/start-session", &key, json!({ "maxDuration": 300_000 })).await;
    refused.assert_error(402, "INSUFFICIENT_BALANCE");
    let first = app.start_session(&key, json!({ "maxDuration": 5_000 })).await;
    let second = app.post("/start/start-session", &key, json!({ "maxDuration": 5_000 })).await;
    second.assert_error(402, "INSUFFICIENT_BALANCE");
    let run =
        app.post("/start/run-task", &key, json!({ "taskDetails": "report the title", "maxDuration": 5_000 })).await;
    run.assert_error(402, "INSUFFICIENT_BALANCE");
    // What the first one leaves is exactly covered by a 2 s session, which expires by itself.
    let short = app.start_session(&key, json!({ "maxDuration": 2_000 })).await;
    app.wait_session_gone(&key, &short, Duration::from_secs(15)).await;
    assert_eq!(app.end_reason(&short).await.as_deref(), Some("expired"));
    let short_cost = app.app().store.session_cost(&SessionId::from_string(&short)).await.expect("store");
    assert!(
        short_cost.is_some_and(|c| c > 0 && c <= 2_000),
        "an expired session is charged up to its maxDuration: {short_cost:?}"
    );
    assert!(app.state(&key, &first, "terminate").await.status == 200);
    let left = balance(&app, &user).await;
    assert!(left >= 0, "session time never overdraws the balance: {left}");
    app.stop().await;
}

#[tokio::test]
async fn deactivating_an_account_ends_its_sessions_and_its_links() {
    let app = TestApp::spawn_with(|s| s.arg("account-check-ms", 200)).await;
    let (user, key) = app.user(5.0).await;
    let (sid, body) = app.session_on(&key, "/").await;
    let view = body["streaming"]["webViewURL"].as_str().expect("webViewURL");
    let token = view.split("token=").nth(1).expect("token").to_owned();
    let click = json!({ "type": "CLICK", "x": 300, "y": 255 }).to_string();
    let interaction = format!("/stream/{sid}/interaction?token={token}");
    assert_eq!(app.post_raw(&interaction, None, click.clone()).await.status, 200, "the link drives while active");

    app.app().store.deactivate_user(&user).await.expect("deactivate");
    // Every capability path checks the account at once, before the session is ended.
    app.post_raw(&interaction, None, click).await.assert_error(403, "ACCOUNT_DEACTIVATED");
    let watched = app.get(&format!("/stream/{sid}/view?token={token}")).await;
    assert!(matches!(watched.status.as_u16(), 403 | 404), "the stream is refused: {}", watched.status);
    // And the session itself ends, as terminated, without anyone asking.
    let manager = app.app().manager.clone();
    wait_until(Duration::from_secs(15), "the deactivated account's session ends", || !manager.is_live(&sid)).await;
    assert_eq!(app.end_reason(&sid).await.as_deref(), Some("terminated"));
    app.stop().await;
}
