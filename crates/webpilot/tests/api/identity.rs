//! A session's browser identity (`locale`, `timezone`, `userAgent`, `geolocation`): page script and the
//! site's request headers see it on the session's page, in a popup the site opens, and in a page a DevTools
//! client opens straight onto the site; bad values are refused before a session starts.

use crate::cdp_client::Cdp;
use crate::helpers::TestApp;
use serde_json::{json, Value};

const AGENT: &str = "Mozilla/5.0 (X11; Linux x86_64) IdentityTest/7.1";

/// Reads `window.identity()` (the fixture's `/identity`) in an attached page, once the page has it. The page
/// is brought to the front first: Chromium answers `navigator.geolocation` in visible pages only.
async fn seen(cdp: &mut Cdp, session: &str) -> Value {
    cdp.call_in(session, "Page.bringToFront", json!({})).await.expect("bringToFront");
    let wait = "new Promise((done) => { const go = () => (window.identity ? window.identity().then(done) \
                : setTimeout(go, 20)); go(); })";
    cdp.eval(session, wait).await
}

async fn attach(cdp: &mut Cdp, target: &Value) -> String {
    let attached = cdp.call("Target.attachToTarget", json!({ "targetId": target, "flatten": true })).await;
    attached.expect("attach")["sessionId"].as_str().expect("sessionId").to_owned()
}

fn assert_identity(where_: &str, v: &Value) {
    assert_eq!(v["headers"]["acceptLanguage"], "de-DE,de;q=0.9", "{where_}: {v}");
    assert_eq!(v["headers"]["userAgent"], AGENT, "{where_}: {v}");
    assert_eq!(v["language"], "de-DE", "{where_}: {v}");
    assert_eq!(v["languages"], json!(["de-DE", "de"]), "{where_}: {v}");
    assert_eq!(v["userAgent"], AGENT, "{where_}: {v}");
    assert_eq!(v["timeZone"], "Europe/Berlin", "{where_}: {v}");
    // Berlin is UTC+1 in January: Date's offset says so.
    assert_eq!(v["offset"], -60, "{where_}: {v}");
    assert_eq!(v["number"], "1.234,5", "{where_}: German number format: {v}");
    assert_eq!(v["position"], json!({ "latitude": 52.52, "longitude": 13.405, "accuracy": 25 }), "{where_}: {v}");
}

#[tokio::test]
async fn the_identity_reaches_script_and_headers_in_the_page_a_popup_and_a_devtools_page() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    for (field, value) in [
        ("locale", json!("not a locale")),
        ("timezone", json!("Mars/Olympus_Mons")),
        ("userAgent", json!("ok\r\nX-Injected: 1")),
        ("userAgent", json!("a".repeat(513))),
        ("geolocation", json!({ "latitude": 91, "longitude": 0 })),
    ] {
        let r = app.post("/start/run-task", &key, json!({ "taskDetails": "report the title", field: value })).await;
        r.assert_error(400, "INVALID_PARAMETER");
        assert!(r.body["message"].as_str().is_some_and(|m| m.contains(field)), "{}", r.body);
    }
    assert_eq!(app.app().manager.session_count(), 0, "no session was left behind");

    let body = json!({
        "startingUrl": app.site.url("/identity"),
        "locale": "de-DE",
        "timezone": "Europe/Berlin",
        "userAgent": AGENT,
        "geolocation": { "latitude": 52.52, "longitude": 13.405, "accuracy": 25 },
    });
    let r = app.post("/start/start-session", &key, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.body["sessionId"].as_str().expect("sessionId").to_owned();
    // The site opens a popup when the agent clicks its link; the popup becomes the active tab.
    let done = app.run_in(&key, &sid, "click \"Open identity popup\" then report the url").await;
    assert!(done["data"]["message"].as_str().is_some_and(|m| m.contains("popup=1")), "{done}");

    let mut cdp = Cdp::connect(r.body["cdpURL"].as_str().expect("cdpURL")).await;
    let pages = cdp.targets("page").await;
    assert_eq!(pages.len(), 2, "{pages:?}");
    for page in &pages {
        let url = page["url"].as_str().unwrap_or_default().to_owned();
        let session = attach(&mut cdp, &page["targetId"]).await;
        let where_ = if url.contains("popup=1") { "the popup" } else { "the session's page" };
        assert_identity(where_, &seen(&mut cdp, &session).await);
        // Its cross-origin frame (a process of its own) says the same.
        let framed = cdp.eval(&session, "window.frameIdentity()").await;
        assert_identity(&format!("the frame of {where_}"), &framed);
    }
    // A page a DevTools client opens straight onto the site (its first request is Chromium's own).
    let made = cdp.call("Target.createTarget", json!({ "url": app.site.url("/identity?cdp=1") })).await;
    let target = made.expect("createTarget")["targetId"].clone();
    let session = attach(&mut cdp, &target).await;
    assert_identity("the DevTools page", &seen(&mut cdp, &session).await);
    // The agent's next task reports from a page of the same identity (the request header, server-side).
    let done = app.run_in(&key, &sid, "report the text of \"#accept-language\"").await;
    assert_eq!(done["data"]["message"], "de-DE,de;q=0.9", "{done}");
    app.stop().await;
}

/// Waits in a page that may still be loading (its first document, or about:blank before it) until it is
/// the fixture's `/identity` with `first=` in its query, then reads what its script sees. An evaluation cut
/// short by the page's navigation is made again in the new document.
async fn seen_once_loaded(cdp: &mut Cdp, session: &str) -> Value {
    cdp.call_in(session, "Page.bringToFront", json!({})).await.expect("bringToFront");
    let wait = "new Promise((done) => { const go = () => (location.search.includes('first=') && window.identity \
                ? window.identity().then(done) : setTimeout(go, 20)); go(); })";
    let params = json!({ "expression": wait, "returnByValue": true, "awaitPromise": true });
    for _ in 0..5 {
        if let Ok(r) = cdp.call_in(session, "Runtime.evaluate", params.clone()).await {
            if r.get("exceptionDetails").is_none() {
                return r["result"]["value"].clone();
            }
        }
    }
    panic!("the new page never showed /identity");
}

/// What a dedicated worker of the page sees: the language, user agent and time zone.
async fn assert_worker_identity(cdp: &mut Cdp, session: &str, where_: &str) {
    let v = cdp.eval(session, "window.workerIdentity()").await;
    assert_eq!(v["language"], "de-DE", "{where_}'s worker: {v}");
    assert_eq!(v["languages"], json!(["de-DE", "de"]), "{where_}'s worker: {v}");
    assert_eq!(v["userAgent"], AGENT, "{where_}'s worker: {v}");
    assert_eq!(v["timeZone"], "Europe/Berlin", "{where_}'s worker: {v}");
}

/// The requests for `/identity?first={which}` the fixture got.
fn first_requests(app: &TestApp, which: &str) -> Vec<webpilot_testkit::site::RequestRecord> {
    let query = format!("first={which}");
    app.site.requests().into_iter().filter(|r| r.path == "/identity" && r.query.as_deref() == Some(&query)).collect()
}

#[tokio::test]
async fn popups_and_a_devtools_page_send_the_identity_with_their_first_and_only_request() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let body = json!({
        "startingUrl": app.site.url("/identity"),
        "locale": "de-DE",
        "timezone": "Europe/Berlin",
        "userAgent": AGENT,
        "geolocation": { "latitude": 52.52, "longitude": 13.405, "accuracy": 25 },
    });
    let r = app.post("/start/start-session", &key, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut cdp = Cdp::connect(r.body["cdpURL"].as_str().expect("cdpURL")).await;
    let (_, opener) = cdp.attach_page().await;
    assert_worker_identity(&mut cdp, &opener, "the session's page").await;
    cdp.call("Target.setDiscoverTargets", json!({ "discover": true })).await.expect("discover");
    let mut known: Vec<Value> = cdp.targets("page").await.iter().map(|t| t["targetId"].clone()).collect();
    let opened_by = [
        ("open", "window.open('/identity?first=open')"),
        ("post", "document.getElementById('post-identity').submit()"),
    ];
    for (which, script) in opened_by {
        let run = json!({ "expression": script, "userGesture": true });
        cdp.call_in(&opener, "Runtime.evaluate", run).await.expect("open the popup");
        let created = loop {
            let event = cdp.event("", "Target.targetCreated").await;
            let info = &event["params"]["targetInfo"];
            if info["type"] == "page" && !known.contains(&info["targetId"]) {
                known.push(info["targetId"].clone());
                break event;
            }
        };
        let session = attach(&mut cdp, &created["params"]["targetInfo"]["targetId"]).await;
        assert_identity(which, &seen_once_loaded(&mut cdp, &session).await);
        assert_worker_identity(&mut cdp, &session, which).await;
        let requests = first_requests(&app, which);
        assert_eq!(requests.len(), 1, "{which}: one request, not loaded again: {requests:?}");
        assert_eq!(requests[0].user_agent.as_deref(), Some(AGENT), "{which}: {requests:?}");
        assert_eq!(requests[0].accept_language.as_deref(), Some("de-DE,de;q=0.9"), "{which}: {requests:?}");
    }
    let made = cdp.call("Target.createTarget", json!({ "url": app.site.url("/identity?first=cdp") })).await;
    let session = attach(&mut cdp, &made.expect("createTarget")["targetId"]).await;
    assert_identity("the DevTools page", &seen_once_loaded(&mut cdp, &session).await);
    assert_worker_identity(&mut cdp, &session, "the DevTools page").await;
    let requests = first_requests(&app, "cdp");
    assert_eq!(requests.len(), 1, "the DevTools page: one request: {requests:?}");
    assert_eq!(requests[0].user_agent.as_deref(), Some(AGENT), "{requests:?}");
    assert_eq!(requests[0].accept_language.as_deref(), Some("de-DE,de;q=0.9"), "{requests:?}");
    app.stop().await;
}
