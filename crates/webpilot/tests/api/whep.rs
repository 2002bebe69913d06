//! The WebRTC live view (WHEP): a real WebRTC peer (headless Chromium's `RTCPeerConnection`, on a page
//! of another origin) gets a 201 answer and decodes 1024 x 600 VP8 video of the composed frames;
//! `DELETE` ends the viewer and its encoder; bad requests get clear errors. aiortc (`tests/clients/whep_client.py`),
//! a player that is not Chromium, decodes a still page, and share links leave the owner a place.

use crate::clients::run_python;
use crate::helpers::{wait_until, TestApp};
use crate::live_view::{view_url, MjpegReader};
use serde_json::{json, Value};
use std::time::Duration;
use webpilot_testkit::viewer::{eval, eval_until};
use webpilot_testkit::Viewer;

fn near(px: &Value, c: [i64; 3]) -> bool {
    px.as_array()
        .is_some_and(|p| p.len() == 3 && p.iter().zip(c).all(|(a, b)| (a.as_i64().unwrap_or(-99) - b).abs() < 40))
}

#[tokio::test]
async fn a_webrtc_viewer_decodes_the_composed_video_until_it_is_deleted() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, body) = app.session_on(&key, "/paint?bg=ff0000").await;
    let whep_url = body["streaming"]["webRTCURL"].as_str().expect("webRTCURL").to_owned();

    let viewer = Viewer::launch().await;
    let player = viewer.open(&app.site.url("/whep-player")).await;
    let status = eval(&player, &format!("startWhep({})", json!(whep_url))).await;
    assert_eq!(status, 201, "{}", eval(&player, "JSON.stringify(window.whep)").await);

    let stats = "whepStats()";
    let red = eval_until(&player, stats, Duration::from_secs(30), "decoded red video", |s| {
        s["framesDecoded"].as_u64().unwrap_or(0) >= 1 && near(&s["page"], [255, 0, 0])
    })
    .await;
    assert_eq!((red["width"].as_u64(), red["height"].as_u64()), (Some(1024), Some(600)), "{red}");
    assert_eq!(red["codec"], "video/VP8", "{red}");
    assert_eq!(red["contentType"], "application/sdp", "{red}");
    // The top band is the service's drawing (the tab strip's colour), not the page.
    assert!(near(&red["band"], [222, 225, 230]), "{red}");
    assert_eq!(app.app().whep.active(), 1);

    // The page changes: the video follows.
    let done = app.run_in(&key, &sid, &format!("open {}", app.site.url("/paint?bg=0000ff"))).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    let blue =
        eval_until(&player, stats, Duration::from_secs(20), "decoded blue video", |s| near(&s["page"], [0, 0, 255]))
            .await;
    assert!(blue["framesDecoded"].as_u64() > red["framesDecoded"].as_u64(), "{blue}");

    // DELETE on the resource ends the viewer, its encoder and (the last viewer gone) the screencast.
    let location = red["location"].as_str().expect("a Location").to_owned();
    assert!(location.starts_with(&format!("/stream/{sid}/whep/")), "{location}");
    let deleted = app.client.delete(format!("{}{location}", app.base)).send().await.expect("DELETE");
    assert_eq!(deleted.status(), 200);
    assert_eq!(app.app().whep.active(), 0);
    wait_until(Duration::from_secs(10), "the feed stopped", || app.app().live_view.active_feeds() == 0).await;
    let again = app.client.delete(format!("{}{location}", app.base)).send().await.expect("DELETE");
    assert_eq!(again.status(), 404);

    // A player closed without DELETE: its peer goes silent and is ended, encoder and all.
    let gone = viewer.open(&app.site.url("/whep-player")).await;
    assert_eq!(eval(&gone, &format!("startWhep({})", json!(whep_url))).await, 201);
    eval_until(&gone, stats, Duration::from_secs(30), "the closing player's video", |s| {
        s["framesDecoded"].as_u64().unwrap_or(0) >= 1
    })
    .await;
    assert_eq!(app.app().whep.active(), 1);
    gone.close().await.expect("the player tab closes");
    wait_until(Duration::from_secs(30), "the silent viewer ended", || app.app().whep.active() == 0).await;

    // A viewer that is still watching when the session ends is ended with it.
    let status = eval(&player, &format!("startWhep({})", json!(whep_url))).await;
    assert_eq!(status, 201);
    eval_until(&player, stats, Duration::from_secs(30), "the second connection's video", |s| {
        s["framesDecoded"].as_u64().unwrap_or(0) >= 1
    })
    .await;
    assert_eq!(app.app().whep.active(), 1);
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    wait_until(Duration::from_secs(10), "the viewer ended with the session", || app.app().whep.active() == 0).await;
    wait_until(Duration::from_secs(10), "the feed stopped", || app.app().live_view.active_feeds() == 0).await;
    viewer.close().await;
    app.stop().await;
}

#[tokio::test]
async fn whep_requests_that_cannot_be_answered_get_clear_errors() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, body) = app.session_on(&key, "/paint?bg=ffffff").await;
    let whep_url = body["streaming"]["webRTCURL"].as_str().expect("webRTCURL").to_owned();
    let post = |url: String, ct: &'static str, body: &'static str| {
        let client = app.client.clone();
        async move {
            let r = client.post(url).header("content-type", ct).body(body).send().await.expect("POST");
            let status = r.status().as_u16();
            let cors = r.headers().get("access-control-allow-origin").map(|v| v.to_str().unwrap_or("").to_owned());
            (status, cors, r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (status, cors, err) = post(format!("{}/stream/{sid}/whep", app.base), "application/sdp", "v=0").await;
    assert_eq!((status, err["code"].as_str()), (401, Some("UNAUTHORIZED")), "{err}");
    assert_eq!(cors.as_deref(), Some("*"), "errors are readable cross-origin too");
    let (status, _, err) = post(whep_url.clone(), "application/json", "{}").await;
    assert_eq!((status, err["code"].as_str()), (415, Some("UNSUPPORTED_MEDIA_TYPE")), "{err}");
    let (status, _, err) = post(whep_url.clone(), "application/sdp", "not an offer").await;
    assert_eq!(
        (status, err["code"].as_str(), err["success"].as_bool()),
        (400, Some("INVALID_PARAMS"), Some(false)),
        "{err}"
    );

    // The CORS preflight a browser sends before posting application/sdp.
    let pre = app.client.request(reqwest::Method::OPTIONS, &whep_url).send().await.expect("OPTIONS");
    assert_eq!(pre.status(), 204);
    let methods = pre.headers()["access-control-allow-methods"].to_str().unwrap_or("").to_owned();
    assert!(methods.contains("POST") && methods.contains("DELETE"), "{methods}");
    assert_eq!(pre.headers()["accept-post"], "application/sdp");
    let patch = app.client.patch(&whep_url).send().await.expect("PATCH");
    assert_eq!(patch.status(), 405);
    let unknown = app.client.delete(format!("{}/stream/{sid}/whep/00112233", app.base)).send().await.expect("DELETE");
    assert_eq!(unknown.status(), 404);

    // A terminated session's URL: 404.
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    let (status, _, err) = post(whep_url, "application/sdp", "v=0").await;
    assert_eq!((status, err["code"].as_str()), (404, Some("SESSION_NOT_FOUND")), "{err}");
    app.stop().await;
}

fn near_rgb(p: &image::Rgb<u8>, c: [u8; 3]) -> bool {
    p.0.iter().zip(c).all(|(a, b)| a.abs_diff(b) < 24)
}

/// The WHEP URL of a read-only share link of `sid` (the share token in the WHEP path).
async fn shared_whep_url(app: &TestApp, key: &str, sid: &str) -> String {
    let shared = app.post(&format!("/stream/{sid}/share"), key, json!({})).await;
    assert_eq!(shared.status, 200, "{}", shared.body);
    let view = shared.body["webViewURL"].as_str().expect("webViewURL");
    view.replacen("/view?", "/whep?", 1)
}

#[tokio::test]
async fn share_links_cannot_take_the_owners_webrtc_place() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, body) = app.session_on(&key, "/paint?bg=ffffff").await;
    let owner = body["streaming"]["webRTCURL"].as_str().expect("webRTCURL").to_owned();
    let share = shared_whep_url(&app, &key, &sid).await;
    // Four offers on the share link, then the owner's own; the viewers stay connected while all are posted.
    let urls = [&share, &share, &share, &share, &owner, &owner];
    let args: Vec<&str> = std::iter::once("offers").chain(urls.iter().map(|u| u.as_str())).collect();
    let out = run_python("whep_client.py", &args, &[], Duration::from_secs(90)).await;
    assert_eq!(out["statuses"], json!([201, 201, 201, 429, 201, 429]), "{out}");
    assert_eq!(out["codes"][3], "RATE_LIMIT_EXCEEDED", "{out}");
    app.stop().await;
}

#[tokio::test]
async fn a_non_chromium_player_gets_frames_of_a_still_page() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (_, body) = app.session_on(&key, "/paint?bg=336699").await;
    let whep_url = body["streaming"]["webRTCURL"].as_str().expect("webRTCURL").to_owned();
    // An MJPEG viewer holds the feed until the page is drawn and has settled, so the WebRTC viewer joins
    // a picture that no longer changes.
    let mut mjpeg = MjpegReader::open(&view_url(&body)).await;
    mjpeg
        .frame_where(Duration::from_secs(20), "the painted page", |f| {
            near_rgb(f.get_pixel(500, 400), [0x33, 0x66, 0x99])
        })
        .await;
    // A still picture is repeated once a second on MJPEG: a few of them, and the page has settled.
    for _ in 0..3 {
        let frame = tokio::time::timeout(Duration::from_secs(20), mjpeg.next_frame()).await;
        assert!(frame.expect("an MJPEG frame within 20 s").is_some(), "the MJPEG stream ended");
    }
    // aiortc releases a frame only when the next one arrives: a still page must still send frames.
    let out = run_python("whep_client.py", &["frame", &whep_url, "20"], &[], Duration::from_secs(90)).await;
    assert_eq!(out["status"], 201, "{out}");
    assert_eq!(out["frames"], 1, "no frame decoded within 20 s: {out}");
    assert_eq!((out["width"].as_u64(), out["height"].as_u64()), (Some(1024), Some(600)), "{out}");
    eprintln!("aiortc decoded its first frame {} ms after posting", out["waitedMs"]);
    drop(mjpeg);
    app.stop().await;
}
