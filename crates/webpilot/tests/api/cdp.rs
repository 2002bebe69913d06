//! The DevTools endpoint (`cdpURL`): Playwright and Puppeteer drive a session unchanged, and what they do is
//! the session's (its tabs, its cookies); its tokens and the handshake refuse every other caller.

use crate::clients::run_python;
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
