//! Profiles: a session that signs in with `persistProfile` leaves its httpOnly session cookie, its
//! localStorage and its IndexedDB record in the profile, sealed at rest; the next session with that
//! profile starts signed in, from its first request; another user's profile of the same name starts
//! empty; one live writer per profile (409 PROFILE_IN_USE); the /profiles API lists, exports, imports
//! and deletes for the owner only.

use crate::cluster::Cluster;
use crate::helpers::{holds, stored_bytes, Reply, TestApp};
use serde_json::{json, Value};
use webpilot_testkit::site::account::{cart_of, order_of, session_token, SESSION_COOKIE};

async fn call(app: &TestApp, method: reqwest::Method, path: &str, key: &str, body: Option<String>) -> Reply {
    let mut req = app.client.request(method, format!("{}{path}", app.base)).bearer_auth(key);
    if let Some(body) = body {
        req = req.header("content-type", "application/json").body(body);
    }
    let resp = req.send().await.expect("request");
    let (status, headers) = (resp.status(), resp.headers().clone());
    let text = resp.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
    Reply { status, headers, body }
}

/// Signs in as `user` on the fixture shop in a new session with `params`, then terminates it.
async fn sign_in(app: &TestApp, key: &str, user: &str, params: Value) {
    let sid = app.start_session(key, params).await;
    let task = format!(
        "open {}; type \"{user}\" into \"user\"; click \"Sign in\"; wait for \"Saved\"",
        app.site.url("/account/login")
    );
    let done = app.run_in(key, &sid, &task).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    terminate(app, key, &sid).await;
}

/// What a new session with `params` sees on the account page, before any step that could set it.
async fn account_seen(app: &TestApp, key: &str, params: Value) -> String {
    account_seen_on(app, &app.site.url("/account"), key, params).await
}

/// [`account_seen`] with the account page at `url` (another node's fixture site).
async fn account_seen_on(app: &TestApp, url: &str, key: &str, params: Value) -> String {
    let sid = app.start_session(key, params).await;
    let task = format!("open {url}; wait for \"Loaded\"; report the text of \"#summary\"");
    let done = app.run_in(key, &sid, &task).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    terminate(app, key, &sid).await;
    done["data"]["message"].as_str().unwrap_or_default().to_owned()
}

/// Terminates a session; the answer comes once it is closed (its profile saved).
async fn terminate(app: &TestApp, key: &str, sid: &str) {
    let r = app.state(key, sid, "terminate").await;
    assert_eq!(r.status, 200, "{}", r.body);
}

async fn put(app: &TestApp, key: &str, name: &str, body: String) -> Reply {
    call(app, reqwest::Method::PUT, &format!("/profiles/{name}/export"), key, Some(body)).await
}

fn summary(cookie: &str, cart: &str, order: &str) -> String {
    format!("cookie={cookie} cart={cart} order={order}")
}

#[tokio::test]
async fn a_persisted_profile_carries_the_login_to_the_next_session_and_is_sealed_at_rest() {
    let app = TestApp::spawn().await;
    let (key, other) = (app.key().await, app.key().await);
    sign_in(&app, &key, "ann", json!({ "profile": "shop", "persistProfile": true })).await;

    // Saved, sealed: the cookie's value is nowhere in the database files (or rows) in clear.
    let token = session_token("ann");
    let stored = stored_bytes(&app).await;
    assert!(!holds(&stored, &token), "the session cookie is stored in plain text");
    assert!(!holds(&stored, &hex::encode(&token)), "the session cookie is stored in plain hex");
    assert!(!holds(&stored, &cart_of("ann")) && !holds(&stored, &order_of("ann")), "storage in plain text");
    let listed = call(&app, reqwest::Method::GET, "/profiles", &key, None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let profile = &listed.body["profiles"][0];
    assert_eq!(profile["name"], "shop", "{}", listed.body);
    assert!(profile["cookies"].as_i64().is_some_and(|n| n >= 1), "{profile}");
    assert_eq!(profile["origins"], json!([app.site.url("")]), "{profile}");
    assert!(!listed.body.to_string().contains(&token), "a listing never shows content");

    // The next session starts signed in: its very first request carries the cookie.
    let before = app.site.requests().len();
    let seen = account_seen(&app, &key, json!({ "profile": "shop" })).await;
    assert_eq!(seen, summary(&token, &cart_of("ann"), &order_of("ann")));
    let first = app.site.requests().into_iter().skip(before).find(|r| r.path == "/account").expect("account request");
    assert!(first.cookie.is_some_and(|c| c.contains(&format!("{SESSION_COOKIE}={token}"))));
    // Loading and saving the profile reached each origin's storage without a request to the site.
    assert!(!app.site.was_requested(None, "/"), "the profile pages made a request: {:?}", app.site.requests());

    // Another user's profile of the same name is theirs: empty.
    assert_eq!(account_seen(&app, &other, json!({ "profile": "shop" })).await, summary("none", "none", "none"));
    // A reader does not write: the profile is as the first session left it.
    let again = call(&app, reqwest::Method::GET, "/profiles/shop", &key, None).await;
    assert_eq!(again.body["updatedAt"], profile["updatedAt"], "{}", again.body);
}

#[tokio::test]
async fn one_live_session_writes_a_profile_and_readers_are_always_allowed() {
    let app = TestApp::spawn().await;
    let (key, other) = (app.key().await, app.key().await);
    let writer = app.start_session(&key, json!({ "profile": "shop", "persistProfile": true })).await;
    let second = app.post("/start/start-session", &key, json!({ "profile": "shop", "persistProfile": true })).await;
    second.assert_error(409, "PROFILE_IN_USE");
    let task = json!({ "taskDetails": "report the url", "profile": "shop", "persistProfile": true });
    app.post("/start/run-task", &key, task).await.assert_error(409, "PROFILE_IN_USE");
    // An import is a write too.
    put(&app, &key, "shop", "{}".into()).await.assert_error(409, "PROFILE_IN_USE");
    // A reader, another name, and another user's "shop" are all fine.
    let reader = app.start_session(&key, json!({ "profile": "shop" })).await;
    terminate(&app, &key, &reader).await;
    let elsewhere = app.start_session(&other, json!({ "profile": "shop", "persistProfile": true })).await;
    terminate(&app, &other, &elsewhere).await;
    // Once the writer ended, the profile is free again.
    terminate(&app, &key, &writer).await;
    let next = app.start_session(&key, json!({ "profile": "shop", "persistProfile": true })).await;
    terminate(&app, &key, &next).await;

    for bad in [json!({ "profile": "a b" }), json!({ "profile": "x".repeat(65) }), json!({ "profile": 5 })] {
        app.post("/start/start-session", &key, bad).await.assert_error(400, "INVALID_PARAMS");
    }
    let orphan = json!({ "persistProfile": true });
    app.post("/start/start-session", &key, orphan).await.assert_error(400, "MISSING_REQUIRED_FIELD");
}

#[tokio::test]
async fn the_profiles_api_exports_imports_and_deletes_for_the_owner_only() {
    let app = TestApp::spawn_with(|s| s.arg("max-profile-bytes", 4096)).await;
    let (key, other) = (app.key().await, app.key().await);
    let origin = app.site.url("");
    let state = json!({
        "cookies": [{ "name": SESSION_COOKIE, "value": session_token("bo"), "domain": "127.0.0.1", "path": "/",
                      "expires": -1, "httpOnly": true, "secure": false, "sameSite": "Lax" },
                    // One the browser refuses (a __Host- cookie must be secure): left out, the rest load.
                    { "name": "__Host-bad", "value": "x", "domain": "127.0.0.1", "secure": false }],
        "origins": [{ "origin": origin, "localStorage": [{ "name": "shop_cart", "value": cart_of("bo") }] }],
    });
    let imported = put(&app, &key, "moved", state.to_string()).await;
    assert_eq!(imported.status, 200, "{}", imported.body);
    assert_eq!((imported.body["name"].clone(), imported.body["cookies"].clone()), (json!("moved"), json!(2)));

    // Export gives back what was imported; the listing and the record never show it.
    let exported = call(&app, reqwest::Method::GET, "/profiles/moved/export", &key, None).await;
    assert_eq!(exported.status, 200, "{}", exported.body);
    assert_eq!(exported.body["cookies"][0]["value"], session_token("bo"));
    assert_eq!(exported.body["origins"], state["origins"]);
    let record = call(&app, reqwest::Method::GET, "/profiles/moved", &key, None).await;
    assert_eq!((record.status.as_u16(), record.body["origins"].clone()), (200, json!([origin])));
    assert!(!record.body.to_string().contains(&session_token("bo")));

    // An imported profile starts a session signed in.
    let seen = account_seen(&app, &key, json!({ "profile": "moved" })).await;
    assert_eq!(seen, summary(&session_token("bo"), &cart_of("bo"), "none"));

    // Another user sees none of it, and cannot delete it.
    for (method, path) in [
        (reqwest::Method::GET, "/profiles/moved"),
        (reqwest::Method::GET, "/profiles/moved/export"),
        (reqwest::Method::DELETE, "/profiles/moved"),
    ] {
        call(&app, method, path, &other, None).await.assert_error(404, "PROFILE_NOT_FOUND");
    }
    let theirs = call(&app, reqwest::Method::GET, "/profiles", &other, None).await;
    assert_eq!(theirs.body["profiles"], json!([]), "{}", theirs.body);

    // Bad imports and one over the cap are refused; nothing is stored for them.
    put(&app, &key, "bad", "{\"origins\":[{\"origin\":\"file:///etc\"}]}".into())
        .await
        .assert_error(400, "INVALID_PARAMS");
    put(&app, &key, "bad", "not json".into()).await.assert_error(400, "INVALID_PARAMS");
    put(&app, &key, "a b", state.to_string()).await.assert_error(400, "INVALID_PARAMS");
    let big =
        json!({ "origins": [{ "origin": origin, "localStorage": [{ "name": "k", "value": "x".repeat(5000) }] }] });
    put(&app, &key, "big", big.to_string()).await.assert_error(413, "FILE_TOO_LARGE");
    call(&app, reqwest::Method::GET, "/profiles/big", &key, None).await.assert_error(404, "PROFILE_NOT_FOUND");

    let deleted = call(&app, reqwest::Method::DELETE, "/profiles/moved", &key, None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    call(&app, reqwest::Method::GET, "/profiles/moved", &key, None).await.assert_error(404, "PROFILE_NOT_FOUND");
    call(&app, reqwest::Method::DELETE, "/profiles/moved", &key, None).await.assert_error(404, "PROFILE_NOT_FOUND");
}

/// Waits until `user`'s profile `name` exists (it is saved as its session ends), at most 20 s.
async fn wait_profile(app: &TestApp, key: &str, name: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let r = call(app, reqwest::Method::GET, &format!("/profiles/{name}"), key, None).await;
        if r.status == 200 {
            return r.body;
        }
        r.assert_error(404, "PROFILE_NOT_FOUND");
        assert!(std::time::Instant::now() < deadline, "profile {name} was never saved");
        tokio::time::sleep(crate::helpers::POLL).await;
    }
}

#[tokio::test]
async fn a_profile_is_saved_when_its_session_completes_or_expires() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sign_in = |user: &str| {
        format!(
            "open {}; type \"{user}\" into \"user\"; click \"Sign in\"; wait for \"Saved\"",
            app.site.url("/account/login")
        )
    };
    // run-task closes its session when the task completes.
    let run = json!({ "taskDetails": sign_in("cy"), "profile": "done", "persistProfile": true });
    let r = app.post("/start/run-task", &key, run).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(wait_profile(&app, &key, "done").await["cookies"].as_i64().is_some_and(|n| n >= 1));
    let seen = account_seen(&app, &key, json!({ "profile": "done" })).await;
    assert_eq!(seen, summary(&session_token("cy"), &cart_of("cy"), &order_of("cy")));

    // A session that reaches its maxDuration saves it too.
    let short = json!({ "profile": "late", "persistProfile": true, "maxDuration": 8000 });
    let sid = app.start_session(&key, short).await;
    let done = app.run_in(&key, &sid, &sign_in("di")).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    wait_profile(&app, &key, "late").await;
    // The profile is saved before the session's end is recorded.
    assert_eq!(app.wait_end_reason(&sid, std::time::Duration::from_secs(10)).await, "expired");
    let seen = account_seen(&app, &key, json!({ "profile": "late" })).await;
    assert_eq!(seen, summary(&session_token("di"), &cart_of("di"), &order_of("di")));
}

#[tokio::test]
async fn a_profile_has_one_writer_across_nodes_and_any_node_with_the_key_loads_it() {
    let cluster = Cluster::new().await;
    let profile_key = "5a".repeat(32);
    let a = cluster.node_with(None, |s| s.arg("profile-key", &profile_key)).await;
    // Node b reaches node a's fixture site, so both see one origin.
    let site = format!("127.0.0.1:{}", a.site.port());
    let b = cluster.node_with(None, |s| s.arg("profile-key", &profile_key).arg("egress-allow", &site)).await;
    let key = a.key().await;
    let writer = a.start_session(&key, json!({ "profile": "shop", "persistProfile": true })).await;
    let second = b.post("/start/start-session", &key, json!({ "profile": "shop", "persistProfile": true })).await;
    second.assert_error(409, "PROFILE_IN_USE");
    let task = format!(
        "open {}; type \"eve\" into \"user\"; click \"Sign in\"; wait for \"Saved\"",
        a.site.url("/account/login")
    );
    let done = a.run_in(&key, &writer, &task).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    terminate(&a, &key, &writer).await;
    // Sealed on a, opened on b; and b may write it now.
    let account = a.site.url("/account");
    let seen = account_seen_on(&b, &account, &key, json!({ "profile": "shop", "persistProfile": true })).await;
    assert_eq!(seen, summary(&session_token("eve"), &cart_of("eve"), &order_of("eve")));
}

/// Writes an executable shell script (atomically, so a running launch never sees half a file).
fn write_script(path: &std::path::Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::rename(&tmp, path).expect("rename script");
}

#[tokio::test]
async fn a_lost_instance_saves_nothing_and_frees_the_profile() {
    // Chromium is started through a wrapper the test can break: after the kill, relaunching fails.
    let dir = tempfile::tempdir().expect("tempdir");
    let wrapper = dir.path().join("chromium");
    write_script(&wrapper, "exec /usr/bin/chromium \"$@\"");
    let app =
        TestApp::spawn_with(|s| s.arg("chromium", wrapper.display()).arg("instance-reconnect-window-ms", 1500)).await;
    let key = app.key().await;
    let before = json!({ "cookies": [{ "name": "before", "value": "kept", "domain": "127.0.0.1" }] });
    assert_eq!(put(&app, &key, "shop", before.to_string()).await.status, 200);
    let sid = app.start_session(&key, json!({ "profile": "shop", "persistProfile": true })).await;
    let task = format!(
        "open {}; type \"fay\" into \"user\"; click \"Sign in\"; wait for \"Saved\"",
        app.site.url("/account/login")
    );
    assert_eq!(app.run_in(&key, &sid, &task).await["type"], "task_completed");
    write_script(&wrapper, "exit 1");
    for pid in app.app().manager.pool().pids().await {
        let _ = std::process::Command::new("kill").arg("-KILL").arg(pid.to_string()).status();
    }
    assert_eq!(app.wait_end_reason(&sid, std::time::Duration::from_secs(30)).await, "instance_lost");
    // Nothing was saved from the dead browser: the profile is as it was.
    let exported = call(&app, reqwest::Method::GET, "/profiles/shop/export", &key, None).await;
    assert_eq!(exported.body["cookies"][0]["value"], "kept", "{}", exported.body);
    assert_eq!(exported.body["cookies"].as_array().map(Vec::len), Some(1), "{}", exported.body);
    // And the profile is free for the next writer.
    write_script(&wrapper, "exec /usr/bin/chromium \"$@\"");
    let next = app.start_session(&key, json!({ "profile": "shop", "persistProfile": true })).await;
    terminate(&app, &key, &next).await;
}

#[tokio::test]
async fn a_save_over_the_cap_is_refused_and_the_session_still_ends() {
    let app = TestApp::spawn_with(|s| s.arg("max-profile-bytes", 100)).await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({ "profile": "shop", "persistProfile": true })).await;
    let task = format!(
        "open {}; type \"gus\" into \"user\"; click \"Sign in\"; wait for \"Saved\"",
        app.site.url("/account/login")
    );
    assert_eq!(app.run_in(&key, &sid, &task).await["type"], "task_completed");
    terminate(&app, &key, &sid).await;
    assert_eq!(app.end_reason(&sid).await.as_deref(), Some("terminated"));
    call(&app, reqwest::Method::GET, "/profiles/shop", &key, None).await.assert_error(404, "PROFILE_NOT_FOUND");
    // The lock went with the session.
    let next = app.start_session(&key, json!({ "profile": "shop", "persistProfile": true })).await;
    terminate(&app, &key, &next).await;
}
