//! What third-party DevTools clients leave behind and expect: the session's viewport once a client that
//! changed it (browser-use, Puppeteer) has gone, or once a client clears its override while it stays.

use crate::cdp_client::Cdp;
use crate::helpers::*;
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn the_sessions_viewport_is_restored_when_a_client_that_changed_it_leaves() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (_, body) = app.session_on(&key, "/").await;
    let url = body["cdpURL"].as_str().expect("cdpURL").to_owned();
    let size = "[innerWidth, innerHeight]";

    let mut watcher = Cdp::connect(&url).await;
    let (_, watched) = watcher.attach_page().await;
    assert_eq!(watcher.eval(&watched, size).await, json!([1024, 445]));
    // As browser-use (1920 × 1080) and Puppeteer's default connect (800 × 600) do.
    for (w, h) in [(1920, 1080), (800, 600)] {
        let mut client = Cdp::connect(&url).await;
        let (_, page) = client.attach_page().await;
        let metrics = json!({ "width": w, "height": h, "deviceScaleFactor": 1, "mobile": false });
        client.call_in(&page, "Emulation.setDeviceMetricsOverride", metrics).await.expect("override");
        assert_eq!(client.eval(&page, size).await, json!([w, h]));
        drop(client);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let now = watcher.eval(&watched, size).await;
            if now == json!([1024, 445]) {
                break;
            }
            assert!(Instant::now() < deadline, "after a {w}×{h} client left the page is {now}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[tokio::test]
async fn a_client_that_clears_its_override_or_sizes_to_the_window_gets_the_sessions_viewport() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (_, body) = app.session_on(&key, "/").await;
    let url = body["cdpURL"].as_str().expect("cdpURL").to_owned();
    let size = "[innerWidth, innerHeight, devicePixelRatio]";

    let mut client = Cdp::connect(&url).await;
    let (_, page) = client.attach_page().await;
    let metrics = json!({ "width": 800, "height": 600, "deviceScaleFactor": 2, "mobile": false });
    client.call_in(&page, "Emulation.setDeviceMetricsOverride", metrics).await.expect("override");
    assert_eq!(client.eval(&page, size).await, json!([800, 600, 2]));
    // Cleared while the client stays: the page is the session's size, not the headless window's.
    client.call_in(&page, "Emulation.clearDeviceMetricsOverride", json!({})).await.expect("clear");
    assert_eq!(client.eval(&page, size).await, json!([1024, 445, 1]));
    // An override of 0 × 0 asks for the window's size too; its other settings are kept.
    let window = json!({ "width": 0, "height": 0, "deviceScaleFactor": 2, "mobile": false });
    client.call_in(&page, "Emulation.setDeviceMetricsOverride", window).await.expect("0 × 0");
    assert_eq!(client.eval(&page, size).await, json!([1024, 445, 2]));
    let narrow = json!({ "width": 500, "height": 0, "deviceScaleFactor": 1, "mobile": false });
    client.call_in(&page, "Emulation.setDeviceMetricsOverride", narrow).await.expect("500 × 0");
    assert_eq!(client.eval(&page, size).await, json!([500, 445, 1]));
}
