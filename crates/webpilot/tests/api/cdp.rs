//! The DevTools endpoint (`cdpURL`): Playwright and Puppeteer drive a session unchanged, and what they do is
//! the session's (its tabs, its cookies); its tokens and the handshake refuse every other caller.

use crate::cdp_client::Cdp;
use crate::clients::{run_node, run_python};
use crate::helpers::*;
use std::time::Duration;

#[tokio::test]
async fn playwright_drives_the_session_and_leaves_its_tabs_and_cookies_to_the_agent() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, body) = app.session_on(&key, "/").await;
    let cdp = body["cdpURL"].as_str().expect("cdpURL");
    assert!(cdp.starts_with("ws://") && cdp.contains(&format!("/cdp/{sid}?token=")), "{cdp}");
    let site = app.site.url("");
    let out = run_python("cdp_playwright.py", &[cdp, &site], &[], Duration::from_secs(90)).await;
    assert_eq!(out["contexts"], 1, "{out}");
    assert_eq!(out["first_url"], app.site.url("/"), "contexts[0].pages[0] is the session's page: {out}");
    assert!(out["submitted_url"].as_str().is_some_and(|u| u.contains("/form/submitted?name=Ada")), "{out}");
    assert!(out["evaluated"].as_str().is_some_and(|e| e.ends_with("|2")), "{out}");
    assert_eq!(out["pages"], 2, "{out}");
    assert!(out["cookies"].as_array().is_some_and(|c| c.iter().any(|n| n == "fixture")), "{out}");
    // The page Playwright opened is the session's active tab: the agent reports on it.
    let done = app.run_in(&key, &sid, "report the url").await;
    assert_eq!(done["type"], "task_completed", "{done}");
    assert!(done["data"]["message"].as_str().is_some_and(|m| m.contains("/pricing")), "{done}");
    // The cookie Playwright set is there for the next task.
    let show = format!("open {} then report the text of \"#cookie\"", app.site.url("/show-cookie"));
    let done = app.run_in(&key, &sid, &show).await;
    assert_eq!(done["data"]["message"], "from-playwright", "{done}");
    app.stop().await;
}

#[tokio::test]
async fn puppeteer_drives_the_session_and_browser_close_leaves_it_running() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, body) = app.session_on(&key, "/").await;
    let cdp = body["cdpURL"].as_str().expect("cdpURL");
    let out = run_node("cdp_puppeteer.mjs", &[cdp, &app.site.url("")], Duration::from_secs(90)).await;
    assert_eq!(out["pages"], 1, "{out}");
    assert_eq!(out["first_url"], app.site.url("/"), "{out}");
    assert_eq!(out["title"], "Pricing", "{out}");
    assert_eq!(out["evaluated"], 42, "{out}");
    assert_eq!(out["pages_after"], 2, "{out}");
    assert_eq!(out["closed"], true, "{out}");
    // browser.close() sent Browser.close: the session and its browser live on.
    let done = app.run_in(&key, &sid, "report the title").await;
    assert_eq!(done["data"]["message"], "Pricing", "{done}");
    app.stop().await;
}

fn token_in(url: &str) -> String {
    url.split("token=").nth(1).expect("a token").to_owned()
}

#[tokio::test]
async fn only_the_cdp_token_or_the_owners_key_opens_the_endpoint_and_terminate_closes_it() {
    let app = TestApp::spawn().await;
    let (ka, kb) = (app.key().await, app.key().await);
    let (sa, body_a) = app.session_on(&ka, "/").await;
    let (_, body_b) = app.session_on(&kb, "/").await;
    let url_a = body_a["cdpURL"].as_str().expect("cdpURL").to_owned();
    let bare = url_a.split('?').next().expect("url").to_owned();
    let with = |token: &str| format!("{bare}?token={token}");
    let refused = [
        ("no token", bare.clone(), None),
        ("a wrong token", with(&format!("9999999999.d.{}", "0".repeat(32))), None),
        ("B's session's token", with(&token_in(body_b["cdpURL"].as_str().expect("B's cdpURL"))), None),
        ("the live-view token", with(&token_in(body_a["streaming"]["webViewURL"].as_str().expect("view"))), None),
        ("the socket token", with(&token_in(body_a["socketURL"].as_str().expect("socketURL"))), None),
        ("B's API key", bare.clone(), Some(kb.as_str())),
    ];
    for (what, url, key) in refused {
        let r = Cdp::try_connect(&url, key).await.err().unwrap_or_else(|| panic!("{what} was let in"));
        assert_eq!(r.status, 401, "{what}: {:?}", r.body);
        assert_eq!(r.body["success"], false, "{what}");
        assert!(r.body["code"].is_string() && r.body["message"].is_string(), "{what}: {:?}", r.body);
    }
    // The DevTools token opens no live view.
    let token_a = token_in(&url_a);
    app.get(&format!("/stream/{sa}/view?token={token_a}")).await.assert_error(401, "UNAUTHORIZED");
    // Discovery: with the token, the WebSocket URL is cdpURL itself; without any proof, 401.
    let version = app.get(&format!("/cdp/{sa}/json/version?token={token_a}")).await;
    assert_eq!(version.status, 200, "{}", version.body);
    assert_eq!(version.body["webSocketDebuggerUrl"], url_a.as_str(), "{}", version.body);
    assert!(version.body["Browser"].as_str().is_some_and(|b| b.contains("Chrom")), "{}", version.body);
    app.get(&format!("/cdp/{sa}/json/version")).await.assert_error(401, "UNAUTHORIZED");

    // The owner's key opens it too; at most four connections at once.
    let mut open = vec![Cdp::try_connect(&bare, Some(&ka)).await.expect("the owner's key")];
    for _ in 0..3 {
        open.push(Cdp::connect(&url_a).await);
    }
    let fifth = Cdp::try_connect(&url_a, None).await.err().expect("a fifth connection is refused");
    assert_eq!((fifth.status, fifth.body["code"].as_str()), (429, Some("SESSION_LIMIT_REACHED")), "{:?}", fifth.body);

    // Terminate closes every open relay with a close frame.
    let ended = app.state(&ka, &sa, "terminate").await;
    assert_eq!(ended.status, 200, "{}", ended.body);
    for conn in &mut open {
        let frame = conn.closed_within(Duration::from_secs(2)).await.expect("a close frame");
        assert_eq!(u16::from(frame.code), 1001, "{frame:?}");
    }
    let after = Cdp::try_connect(&url_a, None).await.err().expect("the session is gone");
    assert_eq!((after.status, after.body["code"].as_str()), (404, Some("SESSION_NOT_FOUND")), "{:?}", after.body);
    app.stop().await;
}

#[tokio::test]
async fn the_devtools_endpoint_works_through_a_node_that_does_not_hold_the_session() {
    let cluster = crate::cluster::Cluster::new().await;
    let a = cluster.node_with(None, |s| s).await;
    let b = cluster.node_with(None, |s| s).await;
    let key = a.key().await;
    let (sid, started) = a.session_on(&key, "/").await;
    let ws = |base: &str| base.replacen("http://", "ws://", 1);
    let through_b = started["cdpURL"].as_str().expect("cdpURL").replace(&ws(&a.base), &ws(&b.base));
    assert!(through_b.starts_with(&ws(&b.base)), "{through_b}");
    let mut client = Cdp::connect(&through_b).await;
    let (_, page) = client.attach_page().await;
    assert_eq!(client.eval(&page, "location.href").await, a.site.url("/"));
    // The owner's refusal is b's answer.
    let bare = through_b.split('?').next().expect("url").to_owned();
    let refused = Cdp::try_connect(&bare, None).await.err().expect("refused");
    assert_eq!((refused.status, refused.body["code"].as_str()), (401, Some("UNAUTHORIZED")), "{:?}", refused.body);
    let token = token_in(&through_b);
    let version = b.get(&format!("/cdp/{sid}/json/version?token={token}")).await;
    assert_eq!(version.status, 200, "{}", version.body);
    // Ending the session through b closes the connection through b with the owner's close frame.
    assert_eq!(b.state(&key, &sid, "terminate").await.status, 200);
    let frame = client.closed_within(Duration::from_secs(10)).await.expect("a close frame");
    assert_eq!(u16::from(frame.code), 1001, "{frame:?}");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn binary_frames_are_refused_and_a_lost_browser_closes_the_relay() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (_, body) = app.session_on(&key, "/").await;
    let url = body["cdpURL"].as_str().expect("cdpURL").to_owned();
    let mut binary = Cdp::connect(&url).await;
    binary.send_binary(b"{\"id\":1,\"method\":\"Browser.getVersion\"}".to_vec()).await;
    let frame = binary.closed_within(Duration::from_secs(10)).await.expect("a close frame");
    assert_eq!(u16::from(frame.code), 1003, "{frame:?}");
    // Chromium killed under an open relay: the connection closes with a close frame.
    let mut client = Cdp::connect(&url).await;
    client.attach_page().await;
    for pid in app.app().manager.pool().pids().await {
        let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    }
    let frame = client.closed_within(Duration::from_secs(20)).await.expect("a close frame");
    assert!([1001, 1011].contains(&u16::from(frame.code)), "{frame:?}");
    app.stop().await;
}
