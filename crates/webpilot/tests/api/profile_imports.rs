//! Profile imports are checked before they are stored: one that could never load into a browser is
//! refused with its reason (and never stored, so no session start meets it), and an import that meets a
//! writer is told what holds the profile.

use crate::helpers::*;
use serde_json::json;

async fn put(app: &TestApp, key: &str, name: &str, body: String) -> Reply {
    let url = format!("{}/profiles/{name}/export", app.base);
    let r = app.client.put(url).bearer_auth(key).header("content-type", "application/json").body(body).send().await;
    let r = r.expect("request");
    let status = r.status();
    Reply { status, headers: Default::default(), body: r.json().await.expect("JSON") }
}

async fn get(app: &TestApp, key: &str, path: &str) -> Reply {
    let r = app.client.get(format!("{}{path}", app.base)).bearer_auth(key).send().await.expect("request");
    let status = r.status();
    Reply { status, headers: Default::default(), body: r.json().await.expect("JSON") }
}

#[tokio::test]
async fn an_import_that_could_never_load_is_refused_with_its_reason_and_never_stored() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let origin = |extra: &str| format!(r#"{{"origins":[{{"origin":"https://a.example",{extra}}}]}}"#);
    let huge = "x".repeat(15 * 1024 * 1024);
    let sixty: Vec<String> = (0..60).map(|i| format!(r#"{{"origin":"https://o{i}.example"}}"#)).collect();
    let bad = [
        (origin(&format!(r#""localStorage":[{{"name":"k","value":"{huge}"}}]"#)), "localStorage"),
        (
            origin(r#""indexedDB":[{"name":"db","version":1,"stores":[{"name":"s","keyPath":"id","records":[]}]}]"#),
            "indexes",
        ),
        (origin(r#""indexedDB":[[]]"#), "IndexedDB"),
        (origin(r#""indexedDB":[{}]"#), "IndexedDB"),
        ("[]".to_owned(), "JSON object"),
        (format!(r#"{{"origins":[{}]}}"#, sixty.join(",")), "at most 50 origins"),
    ];
    for (body, says) in bad {
        let r = put(&app, &key, "shop", body).await;
        r.assert_error(400, "INVALID_PARAMS");
        let message = r.body["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{says}: {message}");
        get(&app, &key, "/profiles/shop").await.assert_error(404, "PROFILE_NOT_FOUND");
    }

    // An empty state is a profile that loads: a session starts from it.
    assert_eq!(put(&app, &key, "shop", "{}".to_owned()).await.status, 200);
    let started = app.post("/start/start-session", &key, json!({ "profile": "shop" })).await;
    assert_eq!(started.status, 200, "{}", started.body);

    // An import meeting a writer is told what holds the profile.
    app.start_session(&key, json!({ "profile": "held", "persistProfile": true })).await;
    let r = put(&app, &key, "held", "{}".to_owned()).await;
    r.assert_error(409, "PROFILE_IN_USE");
    assert!(r.body["message"].as_str().is_some_and(|m| m.contains("being written right now")), "{}", r.body);
}

#[tokio::test]
async fn a_stored_profile_that_cannot_load_is_named_as_the_cause_never_a_503() {
    let app = TestApp::spawn().await;
    let (user, key) = app.user(10.0).await;
    // As a version before import checks could have stored it: sealed with the service's own key.
    // A 6 Mi-character localStorage value (12 MiB in UTF-16): past the 10 MiB Chromium keeps for an origin,
    // so it never loads.
    let huge = "x".repeat(6 * 1024 * 1024);
    let local = json!([{ "name": "k", "value": huge }]);
    let bad = json!({ "cookies": [], "origins": [{ "origin": "https://a.example", "localStorage": local }] });
    let root = std::fs::read_to_string(app.data_dir().join("profile.key")).expect("profile.key");
    let sealed = webpilot_sessions::ProfileKey::from_hex(root.trim()).expect("key").seal(
        &user,
        "old",
        bad.to_string().as_bytes(),
    );
    let origins = vec!["https://a.example".to_owned()];
    let profile = webpilot_store::NewProfile { name: "old", sealed: &sealed, origins: &origins, cookies: 0 };
    let caps = webpilot_store::ProfileCaps { per_profile: i64::MAX, per_user: i64::MAX };
    app.app().store.save_profile(&user, profile, caps).await.expect("store").expect("saved");

    let r = app.post("/start/start-session", &key, json!({ "profile": "old" })).await;
    r.assert_error(400, "INVALID_PARAMETER");
    let message = r.body["message"].as_str().unwrap_or_default();
    assert!(message.contains("cannot be loaded") && message.contains("localStorage"), "{message}");
    // Nothing is held by the refused start: a session without the profile starts.
    assert_eq!(app.post("/start/start-session", &key, json!({})).await.status, 200);
}
