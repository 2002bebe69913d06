//! What third-party DevTools clients leave behind and expect: the session's viewport once a client that
//! changed it (browser-use, Puppeteer) has gone.

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
