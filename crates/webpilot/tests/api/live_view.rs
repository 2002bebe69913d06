//! The live view over HTTP (MJPEG): frames of 1024 x 600 with the drawn band over the active tab
//! (following popups), tokens that must be right and unexpired, read-only links, manual clicks by
//! the owner's link, and streams (and their screencast) ending with the session or the last viewer.

use crate::helpers::{wait_until, TestApp};
use image::{Rgb, RgbImage};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Reads the JPEG parts of a `multipart/x-mixed-replace` response.
pub(crate) struct MjpegReader {
    resp: reqwest::Response,
    buf: Vec<u8>,
}

impl MjpegReader {
    pub(crate) async fn open(url: &str) -> MjpegReader {
        let resp = reqwest::get(url).await.expect("stream request");
        assert_eq!(resp.status(), 200, "stream refused: {}", resp.text().await.unwrap_or_default());
        let ct = resp.headers()["content-type"].to_str().expect("content type").to_owned();
        assert!(ct.starts_with("multipart/x-mixed-replace; boundary="), "{ct}");
        MjpegReader { resp, buf: Vec::new() }
    }

    /// The next part's JPEG bytes, or None when the stream ended.
    async fn next_jpeg(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(jpeg) = self.take_part() {
                return Some(jpeg);
            }
            match self.resp.chunk().await {
                Ok(Some(chunk)) => self.buf.extend_from_slice(&chunk),
                _ => return None,
            }
        }
    }

    /// Cuts one whole part (headers with Content-Length, then the body) off the buffer.
    fn take_part(&mut self) -> Option<Vec<u8>> {
        let head_end = find(&self.buf, b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&self.buf[..head_end]).to_string();
        assert!(head.starts_with("--webpilot-frame\r\n"), "part head: {head}");
        assert!(head.contains("Content-Type: image/jpeg"), "part head: {head}");
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .and_then(|v| v.trim().parse().ok())
            .expect("Content-Length");
        let start = head_end + 4;
        if self.buf.len() < start + len + 2 {
            return None;
        }
        let jpeg = self.buf[start..start + len].to_vec();
        self.buf.drain(..start + len + 2);
        Some(jpeg)
    }

    pub(crate) async fn next_frame(&mut self) -> Option<RgbImage> {
        let jpeg = self.next_jpeg().await?;
        let img = image::load_from_memory_with_format(&jpeg, image::ImageFormat::Jpeg).expect("a JPEG part");
        Some(img.to_rgb8())
    }

    /// Reads frames until one satisfies `pred` (at most `limit`); returns it.
    pub(crate) async fn frame_where(
        &mut self,
        limit: Duration,
        what: &str,
        pred: impl Fn(&RgbImage) -> bool,
    ) -> RgbImage {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let frame = tokio::time::timeout(left, self.next_frame()).await;
            match frame {
                Ok(Some(f)) if pred(&f) => return f,
                Ok(Some(_)) => continue,
                Ok(None) => panic!("the stream ended before {what}"),
                Err(_) => panic!("no frame showed {what} in {limit:?}"),
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn near(p: &Rgb<u8>, c: [u8; 3]) -> bool {
    p.0.iter().zip(c).all(|(a, b)| a.abs_diff(b) < 24)
}

/// Whether the page part of `f` (below the 155-pixel band) is painted `c` at a few points.
fn page_is(f: &RgbImage, c: [u8; 3]) -> bool {
    [(300, 300), (700, 450), (900, 590)].iter().all(|&(x, y)| near(f.get_pixel(x, y), c))
}

pub(crate) fn view_url(body: &Value) -> String {
    body["streaming"]["webViewURL"].as_str().expect("webViewURL").to_owned()
}

#[tokio::test]
async fn the_stream_shows_the_band_over_the_active_tab_and_follows_popups() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, body) = app.session_on(&key, "/paint?bg=ff0000&open=00aa00").await;
    assert_eq!(body["streaming"]["dimensions"], json!({ "width": 1024, "height": 600 }));
    let mut stream = MjpegReader::open(&view_url(&body)).await;
    let red = stream.frame_where(Duration::from_secs(20), "the red page", |f| page_is(f, [255, 0, 0])).await;
    assert_eq!(red.dimensions(), (1024, 600));
    // The band is the service's drawing (tab strip colour, white toolbar), not the page.
    assert!(near(red.get_pixel(1015, 2), [222, 225, 230]), "tab strip: {:?}", red.get_pixel(1015, 2));
    assert!(near(red.get_pixel(100, 60), [255, 255, 255]), "toolbar: {:?}", red.get_pixel(100, 60));
    let dark_text = (14..40).flat_map(|y| (8..200).map(move |x| (x, y))).any(|(x, y)| red.get_pixel(x, y).0[0] < 100);
    assert!(dark_text, "the tab title is written in the strip");

    // The page changes: the frame's lower part follows.
    let done = app.run_in(&key, &sid, &format!("open {}", app.site.url("/paint?bg=0000ff&open=00aa00"))).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    stream.frame_where(Duration::from_secs(20), "the blue page", |f| page_is(f, [0, 0, 255])).await;

    // The site opens a popup: the stream shows it (and the band now has two tabs).
    let done = app.run_in(&key, &sid, "click Open").await;
    assert_eq!(done["type"], "task_completed", "{done}");
    // The band follows too: two tabs, the second (the popup) drawn as the active one.
    let second_tab_active = |f: &RgbImage| near(f.get_pixel(8 + 220 + 100, 20), [255, 255, 255]);
    let first_tab_inactive = |f: &RgbImage| near(f.get_pixel(8 + 200, 20), [222, 225, 230]);
    stream
        .frame_where(Duration::from_secs(20), "the popup, as the active second tab", |f| {
            page_is(f, [0, 170, 0]) && second_tab_active(f) && first_tab_inactive(f)
        })
        .await;
    app.stop().await;
}

#[tokio::test]
async fn tokens_must_be_right_and_unexpired_and_shared_links_are_read_only() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, body) = app.session_on(&key, "/paint?bg=ffffff").await;
    let (other, other_body) = app.session_on(&key, "/paint?bg=ffffff").await;
    let url = view_url(&body);
    let token = url.split("token=").nth(1).expect("a token in webViewURL").to_owned();
    assert!(body["streaming"]["webRTCURL"].as_str().expect("webRTCURL").contains("token="));
    // No token, a made-up one, or another session's token: 401 in the error format.
    let other_token = view_url(&other_body).split("token=").nth(1).expect("token").to_owned();
    for path in [
        format!("/stream/{sid}/view"),
        format!("/stream/{sid}/view?token=1999999999.c.00112233445566778899aabbccddeeff"),
        format!("/stream/{sid}/view?token={other_token}"),
        format!("/stream/{other}/view?token={token}"),
    ] {
        app.get(&path).await.assert_error(401, "UNAUTHORIZED");
    }
    // A read-only link: watches, cannot drive, and expires.
    let shared = app.post(&format!("/stream/{sid}/share"), &key, json!({ "ttlSeconds": 5 })).await;
    assert_eq!(shared.status, 200, "{}", shared.body);
    assert_eq!(shared.body["readOnly"], true);
    let shared_url = shared.body["webViewURL"].as_str().expect("webViewURL").to_owned();
    let mut watching = MjpegReader::open(&shared_url).await;
    assert!(watching.next_frame().await.is_some());
    drop(watching);
    let shared_token = shared_url.split("token=").nth(1).expect("token").to_owned();
    let click = json!({ "type": "CLICK", "x": 300, "y": 255 });
    let refused =
        app.post_raw(&format!("/stream/{sid}/interaction?token={shared_token}"), None, click.to_string()).await;
    refused.assert_error(401, "UNAUTHORIZED");
    // The link's ttl runs out: polled (the answer's status only, as a live view streams) until it is refused.
    let view = format!("{}/stream/{sid}/view?token={shared_token}", app.base);
    let deadline = Instant::now() + Duration::from_secs(15);
    while app.client.get(&view).send().await.expect("view").status() != 401 {
        assert!(Instant::now() < deadline, "the shared link still opens 15 s after its 5 s ttl");
        tokio::time::sleep(crate::helpers::POLL).await;
    }
    let expired = app.get(&format!("/stream/{sid}/view?token={shared_token}")).await;
    expired.assert_error(401, "UNAUTHORIZED");
    assert!(expired.body["message"].as_str().unwrap_or_default().contains("expired"), "{}", expired.body);
    // Only the owner shares; bad ttl is a 400.
    let (_, stranger) = app.user(5.0).await;
    app.post(&format!("/stream/{sid}/share"), &stranger, json!({})).await.assert_error(404, "SESSION_NOT_FOUND");
    let bad = app.post(&format!("/stream/{sid}/share"), &key, json!({ "ttlSeconds": 0 })).await;
    bad.assert_error(400, "INVALID_PARAMETER");
    // The owner's link drives: a click at frame (300, 255) lands on page (300, 100).
    let clicked = app.post_raw(&format!("/stream/{sid}/interaction?token={token}"), None, click.to_string()).await;
    assert_eq!(clicked.status, 200, "{}", clicked.body);
    let done = app.run_in(&key, &sid, "report the title").await;
    assert_eq!(done["data"]["message"], "clicked 300,100", "{done}");
    app.stop().await;
}

#[tokio::test]
async fn streams_end_with_the_session_and_the_screencast_stops_without_viewers() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, body) = app.session_on(&key, "/paint?bg=ff0000").await;
    let url = view_url(&body);
    // The last viewer leaving stops the feed (and its screencast).
    let mut first = MjpegReader::open(&url).await;
    first.frame_where(Duration::from_secs(20), "the red page", |f| page_is(f, [255, 0, 0])).await;
    assert_eq!(app.app().live_view.active_feeds(), 1);
    drop(first);
    wait_until(Duration::from_secs(10), "the feed stopped", || app.app().live_view.active_feeds() == 0).await;
    // Terminate ends an open stream; the URL then answers 404.
    let mut second = MjpegReader::open(&url).await;
    assert!(second.next_frame().await.is_some());
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    let ended =
        tokio::time::timeout(Duration::from_secs(10), async { while second.next_jpeg().await.is_some() {} }).await;
    assert!(ended.is_ok(), "the stream went on after terminate");
    app.get(&format!("/stream/{sid}/view?{}", url.split('?').nth(1).expect("query")))
        .await
        .assert_error(404, "SESSION_NOT_FOUND");
    wait_until(Duration::from_secs(10), "the feed stopped", || app.app().live_view.active_feeds() == 0).await;
    app.stop().await;
}
