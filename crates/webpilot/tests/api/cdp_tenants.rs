//! The DevTools endpoint as a hostile tenant would use it: sessions of two users A and B on one Chromium,
//! and from A's relay, B's targets, contexts, sessions and cookies are out of sight and out of reach; the
//! browser, the host's files and loopback stay out of reach; every refusal holds inside
//! `Target.sendMessageToTarget` too; and B's new pages never wait on A's auto-attach.

use crate::cdp_client::Cdp;
use crate::helpers::*;
use serde_json::{json, Value};
use std::time::Duration;
use webpilot_testkit::decoy::Decoy;

fn url_of(body: &Value) -> String {
    body["cdpURL"].as_str().expect("cdpURL").to_owned()
}

#[tokio::test]
async fn another_tenants_targets_contexts_sessions_and_cookies_stay_out_of_reach() {
    let app = TestApp::spawn().await;
    let (ka, kb) = (app.key().await, app.key().await);
    let (_, body_a) = app.session_on(&ka, "/").await;
    let (sid_b, body_b) = app.session_on(&kb, "/set-cookie?value=bsecret").await;
    let mut a = Cdp::connect(&url_of(&body_a)).await;
    let mut b = Cdp::connect(&url_of(&body_b)).await;
    let (b_target, b_session) = b.attach_page().await;
    let b_ctx = b.call("Target.getBrowserContexts", json!({})).await.expect("contexts")["browserContextIds"][0].clone();
    let a_contexts = a.call("Target.getBrowserContexts", json!({})).await.expect("contexts");
    let a_ctx = a_contexts["browserContextIds"][0].clone();
    assert_eq!(a_contexts["browserContextIds"].as_array().map(Vec::len), Some(1), "{a_contexts}");
    assert_ne!(a_ctx, b_ctx);

    // Neither listing nor discovery shows B's targets.
    let listed = a.call("Target.getTargets", json!({ "filter": [{}] })).await.expect("targets");
    a.call("Target.setDiscoverTargets", json!({ "discover": true, "filter": [{}] })).await.expect("discover");
    let seen = format!("{listed} {:?}", a.events);
    assert!(!seen.contains(b_target.as_str()) && !seen.contains(b_ctx.as_str().expect("id")), "{seen}");
    assert!(listed["targetInfos"].as_array().expect("infos").iter().all(|t| t["browserContextId"] == a_ctx));

    // B's target by its id: no attach, close, activate or info; B's session: no command.
    for method in ["Target.closeTarget", "Target.activateTarget", "Target.getTargetInfo"] {
        assert!(a.call(method, json!({ "targetId": b_target })).await.is_err(), "{method}");
    }
    let attach = json!({ "targetId": b_target, "flatten": true });
    assert!(a.call("Target.attachToTarget", attach).await.is_err());
    let navigate_b = json!({ "url": app.site.url("/pricing") });
    assert!(a.call_in(&b_session, "Page.navigate", navigate_b.clone()).await.is_err());
    assert!(a.call_in(&b_session, "Runtime.evaluate", json!({ "expression": "1" })).await.is_err());

    // No context is made or disposed; a target naming B's context opens in A's.
    assert!(a.call("Target.createBrowserContext", json!({})).await.is_err());
    assert!(a.call("Target.disposeBrowserContext", json!({ "browserContextId": b_ctx })).await.is_err());
    let b_pages = b.targets("page").await.len();
    let made = a.call("Target.createTarget", json!({ "url": "about:blank", "browserContextId": b_ctx })).await;
    let made = made.expect("createTarget")["targetId"].clone();
    assert_eq!(b.targets("page").await.len(), b_pages, "nothing opened in B's context");
    let a_pages = a.targets("page").await;
    assert!(a_pages.iter().any(|t| t["targetId"] == made && t["browserContextId"] == a_ctx), "{a_pages:?}");

    // No call returns B's cookies.
    let (_, a_session) = a.attach_page().await;
    let own = a.call("Storage.getCookies", json!({})).await.expect("A's cookies");
    let all = a.call_in(&a_session, "Network.getAllCookies", json!({})).await.expect("A's page's cookies");
    assert!(!format!("{own} {all}").contains("bsecret"), "{own} {all}");
    assert!(a.call("Storage.getCookies", json!({ "browserContextId": b_ctx })).await.is_err());
    assert!(a.call_in(&a_session, "Storage.getCookies", json!({ "browserContextId": b_ctx })).await.is_err());
    let b_cookies = b.call("Storage.getCookies", json!({})).await.expect("B's cookies");
    assert!(b_cookies.to_string().contains("bsecret"), "B's own relay sees them: {b_cookies}");

    // The host's files stay out of reach.
    let passwd = json!({ "files": ["/etc/passwd"], "nodeId": 1 });
    let refused = a.call_in(&a_session, "DOM.setFileInputFiles", passwd.clone()).await.expect_err("refused");
    assert!(refused.contains("file area"), "{refused}");
    assert!(a.call_in(&a_session, "Page.navigate", json!({ "url": "file:///etc/passwd" })).await.is_err());

    // Each refusal, nested in Target.sendMessageToTarget, is refused too.
    let nested = [
        json!({ "id": 1, "method": "Target.createBrowserContext" }),
        json!({ "id": 1, "method": "Target.closeTarget", "params": { "targetId": b_target } }),
        json!({ "id": 1, "method": "Target.createTarget", "params": { "url": "about:blank", "browserContextId": b_ctx } }),
        json!({ "id": 1, "method": "Storage.getCookies", "params": { "browserContextId": b_ctx } }),
        json!({ "id": 1, "method": "DOM.setFileInputFiles", "params": passwd }),
        json!({ "id": 1, "method": "Browser.close" }),
    ];
    for inner in nested {
        let wrapped = json!({ "sessionId": a_session, "message": inner.to_string() });
        assert!(a.call("Target.sendMessageToTarget", wrapped).await.is_err(), "nested {inner}");
    }
    let into_b =
        json!({ "sessionId": b_session, "message": json!({"id": 1, "method": "Runtime.evaluate"}).to_string() });
    assert!(a.call("Target.sendMessageToTarget", into_b).await.is_err(), "into B's session");

    // Browser.close ends A's connection only: B's relay, B's session and Chromium go on.
    assert_eq!(a.call("Browser.close", json!({})).await.expect("answered"), json!({}));
    let frame = a.closed_within(Duration::from_secs(10)).await.expect("a close frame");
    assert_eq!(u16::from(frame.code), 1000, "{frame:?}");
    assert_eq!(b.eval(&b_session, "6 * 7").await, 42);
    let done = app.run_in(&kb, &sid_b, &format!("open {} then report the title", app.site.url("/pricing"))).await;
    assert_eq!(done["data"]["message"], "Pricing", "{done}");
    app.stop().await;
}

#[tokio::test]
async fn pages_opened_over_the_relay_keep_the_sessions_egress_policy() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (_, body) = app.session_on(&key, "/").await;
    let decoy = Decoy::on("127.0.0.2").await;
    let mut a = Cdp::connect(&url_of(&body)).await;
    let (_, session) = a.attach_page().await;
    for target in [decoy.url(), format!("{}/start/health", app.base)] {
        a.navigate(&session, &target).await.expect("a navigation is answered");
        let text = a.eval(&session, "document.body ? document.body.innerText : ''").await;
        assert!(!text.to_string().contains("healthy"), "{target}: {text}");
    }
    // A new page straight onto the decoy.
    let made = a.call("Target.createTarget", json!({ "url": decoy.url() })).await.expect("createTarget");
    let attached = a.call("Target.attachToTarget", json!({ "targetId": made["targetId"], "flatten": true })).await;
    let second = attached.expect("attach")["sessionId"].as_str().expect("session").to_owned();
    a.navigate(&second, &decoy.url()).await.expect("answered");
    assert_eq!(decoy.hits(), 0, "the decoy on 127.0.0.2 was reached");
    app.stop().await;
}

#[tokio::test]
async fn a_popup_in_another_session_loads_while_a_client_auto_attaches_and_waits_for_debuggers() {
    let app = TestApp::spawn().await;
    let (ka, kb) = (app.key().await, app.key().await);
    let (_, body_a) = app.session_on(&ka, "/").await;
    let (sid_b, _) = app.session_on(&kb, "/popup").await;
    let mut a = Cdp::connect(&url_of(&body_a)).await;
    // What Playwright sends at connect: browser-wide, every new target paused until this client resumes it.
    let auto = json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true });
    a.call("Target.setAutoAttach", auto).await.expect("setAutoAttach");
    let done = app.run_in(&kb, &sid_b, "click \"Open pricing\" then report the title").await;
    assert_eq!(done["data"]["message"], "Pricing", "B's popup loaded: {done}");
    // A was told of none of it (events that came meanwhile are read with the next answer).
    let listed = a.call("Target.getTargets", json!({})).await.expect("targets");
    assert!(!listed.to_string().contains("/pricing"), "{listed}");
    assert!(!a.events.iter().any(|e| e.to_string().contains("/pricing")), "{:?}", a.events);
    app.stop().await;
}
