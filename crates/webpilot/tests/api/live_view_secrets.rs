//! Secrets in the live view's band: a task types a secret into a search form and presses Enter, so the
//! page's URL and title carry the value; the band the service draws over the page (address bar, tab
//! title) must show `<secret:pw>` instead, on the owner's stream and on a read-only share link alike, over
//! MJPEG and over WebRTC (a frame decoded by aiortc).
//! There is no OCR here: the decoded frame's band is compared with the band `draw_band` renders for the
//! masked text and for the unmasked text, where the two renderings differ.

use crate::clients::run_python;
use crate::helpers::TestApp;
use crate::live_view::{view_url, MjpegReader};
use image::RgbImage;
use serde_json::json;
use std::time::{Duration, Instant};
use webpilot_browser::TabInfo;
use webpilot_core::geometry::{CHROME_BAND, FRAME_WIDTH};
use webpilot_liveview::compose::{draw_band, BandInfo};

const SECRET: &str = "hunter2-SuperSecret";

/// The band as the service draws it for one active tab.
fn band(url: &str, title: &str) -> RgbImage {
    draw_band(&BandInfo { tabs: vec![TabInfo { index: 0, url: url.into(), title: title.into(), active: true }] })
}

/// How far the band of `frame` is from `a` and from `b` (mean absolute difference per channel), over the
/// pixels where `a` and `b` differ clearly (the text that differs).
fn distances(frame: &RgbImage, a: &RgbImage, b: &RgbImage) -> (f64, f64, usize) {
    let (mut da, mut db, mut n) = (0u64, 0u64, 0usize);
    for y in 0..CHROME_BAND {
        for x in 0..FRAME_WIDTH {
            let (pa, pb, pf) = (a.get_pixel(x, y).0, b.get_pixel(x, y).0, frame.get_pixel(x, y).0);
            let differ = pa.iter().zip(pb).any(|(u, v)| u.abs_diff(v) > 60);
            if differ {
                n += 1;
                da += pf.iter().zip(pa).map(|(f, u)| u64::from(f.abs_diff(u))).sum::<u64>();
                db += pf.iter().zip(pb).map(|(f, v)| u64::from(f.abs_diff(v))).sum::<u64>();
            }
        }
    }
    let per = (n.max(1) * 3) as f64;
    (da as f64 / per, db as f64 / per, n)
}

/// Reads frames until one's band is the masked rendering (much closer to it than to the unmasked one);
/// panics with the last distances measured when none is within `limit`.
async fn masked_band_within(stream: &mut MjpegReader, masked: &RgbImage, unmasked: &RgbImage, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut last = None;
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(Some(frame)) = tokio::time::timeout(left, stream.next_frame()).await else { break };
        let (to_masked, to_unmasked, pixels) = distances(&frame, masked, unmasked);
        last = Some((to_masked, to_unmasked, pixels));
        if pixels > 200 && to_masked * 3.0 < to_unmasked {
            eprintln!(
                "band: {to_masked:.1} from the masked rendering, {to_unmasked:.1} from the unmasked ({pixels} px)"
            );
            return;
        }
    }
    panic!("no frame's band was the masked one in {limit:?}; last (to masked, to unmasked, pixels): {last:?}");
}

/// The third video frame aiortc decodes from `whep_url` (the first may be a rough keyframe).
async fn whep_frame(whep_url: &str) -> RgbImage {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("frame.rgb");
    let path_arg = path.to_str().expect("a UTF-8 path");
    let out =
        run_python("whep_client.py", &["frame", whep_url, "30", path_arg, "3"], &[], Duration::from_secs(90)).await;
    assert_eq!(out["frames"], 3, "{out}");
    let (w, h) = (out["width"].as_u64().unwrap_or(0) as u32, out["height"].as_u64().unwrap_or(0) as u32);
    let raw = std::fs::read(&path).expect("the saved frame");
    RgbImage::from_raw(w, h, raw).expect("a whole RGB frame")
}

#[tokio::test]
async fn a_secret_typed_into_a_search_form_is_masked_in_the_band_for_owner_and_share_link() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, body) = app.session_on(&key, "/search").await;
    let owner_url = view_url(&body);
    let shared = app.post(&format!("/stream/{sid}/share"), &key, json!({})).await;
    assert_eq!(shared.status, 200, "{}", shared.body);
    let share_url = shared.body["webViewURL"].as_str().expect("webViewURL").to_owned();

    // The task's own secret (not the session's): it must reach the band's mask too.
    let task = json!({
        "actionType": "newTask", "newState": "start",
        "taskDetails": "type \"<secret:pw>\" into \"Search the site\" then press Enter then wait for \"3 results\" \
                        then report the url",
        "secrets": { "pw": SECRET },
    });
    let r = app.send(&key, &sid, task).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let task_id = r.body["taskId"].as_str().expect("taskId").to_owned();
    let done = app.poll_final(&sid, &task_id, Duration::from_secs(30)).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    // The value reached the URL (the poll body masks it, as before).
    let base = app.site.url("/search");
    assert_eq!(done["data"]["message"], format!("{base}?q=<secret:pw>"), "{done}");

    let masked = band(&format!("{base}?q=<secret:pw>"), "Results for <secret:pw>");
    let unmasked = band(&format!("{base}?q={SECRET}"), &format!("Results for {SECRET}"));
    for url in [&owner_url, &share_url] {
        let mut stream = MjpegReader::open(url).await;
        masked_band_within(&mut stream, &masked, &unmasked, Duration::from_secs(20)).await;
    }
    // WebRTC (WHEP), by the owner's token and by the share link's: a frame decoded by aiortc.
    let owner_whep = body["streaming"]["webRTCURL"].as_str().expect("webRTCURL").to_owned();
    for whep_url in [owner_whep, share_url.replacen("/view?", "/whep?", 1)] {
        let frame = whep_frame(&whep_url).await;
        let (to_masked, to_unmasked, pixels) = distances(&frame, &masked, &unmasked);
        eprintln!("WHEP band: {to_masked:.1} from the masked rendering, {to_unmasked:.1} from the unmasked");
        assert!(pixels > 200 && to_masked * 3.0 < to_unmasked, "WHEP band: {to_masked} vs {to_unmasked}");
    }
    app.stop().await;
}
