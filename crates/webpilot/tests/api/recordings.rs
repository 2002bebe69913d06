//! Session recordings: a session with `recording: true` leaves a VP8/WebM video (decoded here by
//! PyAV, FFmpeg's decoder) of what its live view showed, and a timeline of its events, served to its
//! owner only, with `Range` support for the video.

use crate::clients::run_python;
use crate::helpers::{admin, wait_until, Server, TestApp};
use crate::live_view::{view_url, MjpegReader};
use image::{Rgb, RgbImage};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn near(p: &Rgb<u8>, c: [u8; 3]) -> bool {
    p.0.iter().zip(c).all(|(a, b)| a.abs_diff(b) < 24)
}

fn page_is(f: &RgbImage, c: [u8; 3]) -> bool {
    [(300, 300), (700, 450), (900, 590)].iter().all(|&(x, y)| near(f.get_pixel(x, y), c))
}

async fn get_with(app: &TestApp, path: &str, key: Option<&str>) -> reqwest::Response {
    let mut req = app.client.get(format!("{}{path}", app.base));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    req.send().await.expect("request")
}

pub(crate) async fn json_of(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

pub(crate) fn assert_error((status, body): &(u16, Value), want_status: u16, code: &str) {
    assert_eq!(*status, want_status, "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body["code"], code, "{body}");
}

/// The time (s) of the first timeline entry of an action `navigate` to a URL containing `part`.
fn navigated_at(events: &[Value], part: &str) -> f64 {
    let hit = events.iter().find(|e| {
        e["event"] == "message"
            && e["data"]["type"] == "action"
            && e["data"]["data"]["name"] == "navigate"
            && e["data"]["data"]["url"].as_str().is_some_and(|u| u.contains(part))
    });
    hit.and_then(|e| e["t"].as_f64()).unwrap_or_else(|| panic!("no navigate to {part} in {events:?}")) / 1000.0
}

/// Polls the recording of `sid` until it is `ready` (at most 10 s) and returns it.
pub(crate) async fn ready(app: &TestApp, key: &str, sid: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = json_of(get_with(app, &format!("/recordings/{sid}"), Some(key)).await).await;
        assert_eq!(status, 200, "{body}");
        if body["status"] == "ready" {
            return body;
        }
        assert_eq!(body["status"], "recording", "{body}");
        assert!(Instant::now() < deadline, "the recording is not ready after 10 s: {body}");
        tokio::time::sleep(crate::helpers::POLL).await;
    }
}

/// A recorder alone pauses the page's screencast between the frames it takes; the video must still
/// show an animated page moving.
#[tokio::test]
async fn a_recording_alone_on_an_animated_page_shows_it_moving() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let url = app.site.url("/paint?bg=ffffff&animate=1");
    let r = app.post("/start/start-session", &key, json!({ "startingUrl": url, "recording": true })).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.body["sessionId"].as_str().expect("sessionId").to_owned();
    let done = app.run_in(&key, &sid, "wait 3 seconds").await;
    assert_eq!(done["type"], "task_completed", "{done}");
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    ready(&app, &key, &sid).await;

    let bytes = get_with(&app, &format!("/recordings/{sid}/video.webm"), Some(&key)).await.bytes().await;
    let file = app.data_dir().join("animated.webm");
    std::fs::write(&file, bytes.expect("video bytes")).expect("write the video");
    let decoded = run_python("webm_frames.py", &[file.to_str().expect("path")], &[], Duration::from_secs(60)).await;
    let frames = decoded["frames"].as_array().expect("frames");
    let mut places: Vec<i64> = frames.iter().filter_map(|f| f["box"].as_i64()).map(|x| x / 10).collect();
    places.dedup();
    // The box crosses 250 px a second: over 3 s, a moving recording shows it in many places.
    assert!(places.len() >= 6, "the box is seen in {} places: {decoded}", places.len());
}

#[tokio::test]
async fn a_recorded_session_leaves_a_video_of_its_pages_in_order_and_a_timeline() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (_, stranger) = app.user(5.0).await;
    let (red, green, blue) =
        (app.site.url("/paint?bg=ff0000"), app.site.url("/paint?bg=00aa00"), app.site.url("/paint?bg=0000ff"));
    // Not asked for (and --record-sessions is off): nothing is recorded.
    let plain = app.start_session(&key, json!({ "startingUrl": red })).await;
    let began = Instant::now();
    let r = app.post("/start/start-session", &key, json!({ "startingUrl": red, "recording": true })).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.body["sessionId"].as_str().expect("sessionId").to_owned();
    // The red page is in the feed the recorder shares; the viewer then leaves, the recording goes on.
    let mut viewer = MjpegReader::open(&view_url(&r.body)).await;
    viewer.frame_where(Duration::from_secs(20), "the red page", |f| page_is(f, [255, 0, 0])).await;
    drop(viewer);
    let done = app.run_in(&key, &sid, &format!("open {green}; wait 2 seconds; open {blue}")).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    assert_eq!(app.app().live_view.active_feeds(), 1, "the recorder keeps the feed without viewers");
    // The session ends once its live view showed the blue page (what the recording must end on).
    let mut viewer = MjpegReader::open(&view_url(&r.body)).await;
    viewer.frame_where(Duration::from_secs(20), "the blue page", |f| page_is(f, [0, 0, 255])).await;
    drop(viewer);
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    let life = began.elapsed().as_secs_f64();

    // Ready within 10 s of the end.
    let path = format!("/recordings/{sid}");
    let rec = ready(&app, &key, &sid).await;
    assert_eq!(rec["success"], true);
    assert_eq!(rec["sessionId"], sid.as_str());
    assert!(rec["frames"].as_i64().unwrap_or(0) >= 3, "{rec}");
    assert!(rec["bytes"].as_i64().unwrap_or(0) > 0, "{rec}");
    assert!(rec["endedAt"].is_string() && rec["startedAt"].is_string(), "{rec}");
    let duration = rec["durationMs"].as_f64().unwrap_or(0.0) / 1000.0;
    assert!((duration - life).abs() <= 2.0, "the video lasts {duration} s, the session {life} s");
    assert_eq!(rec["videoURL"], format!("{}/recordings/{sid}/video.webm", app.base));

    // The video, decoded by PyAV: 1024 x 600 VP8 frames, red then green then blue.
    let video = get_with(&app, &format!("/recordings/{sid}/video.webm"), Some(&key)).await;
    assert_eq!(video.status(), 200);
    assert_eq!(video.headers()["content-type"], "video/webm");
    let bytes = video.bytes().await.expect("video bytes");
    assert_eq!(bytes.len() as i64, rec["bytes"].as_i64().unwrap_or(-1));
    let file = app.data_dir().join("downloaded.webm");
    std::fs::write(&file, &bytes).expect("write the video");
    let decoded = run_python("webm_frames.py", &[file.to_str().expect("path")], &[], Duration::from_secs(60)).await;
    assert_eq!(decoded["codec"], "vp8", "{decoded}");
    let frames = decoded["frames"].as_array().expect("frames");
    assert!(frames.iter().all(|f| f["width"] == 1024 && f["height"] == 600), "{decoded}");
    let mut order: Vec<&str> = Vec::new();
    for page in frames.iter().filter_map(|f| f["page"].as_str()).filter(|p| *p != "other") {
        if order.last() != Some(&page) {
            order.push(page);
        }
    }
    assert_eq!(order, vec!["red", "green", "blue"], "{decoded}");

    // The timeline: every event with its time; the colours change where its navigations say (±1 s).
    let (status, timeline) = json_of(get_with(&app, &format!("/recordings/{sid}/events"), Some(&key)).await).await;
    assert_eq!(status, 200, "{timeline}");
    let events = timeline["events"].as_array().expect("events").clone();
    assert!(events.windows(2).all(|w| w[0]["t"].as_u64() <= w[1]["t"].as_u64()), "{timeline}");
    assert!(events.iter().any(|e| e["event"] == "end_session"), "{timeline}");
    assert!(events.iter().any(|e| e["event"] == "navigation" && e["data"]["url"] == blue.as_str()), "{timeline}");
    let first = |colour: &str| {
        frames.iter().find(|f| f["page"] == colour).and_then(|f| f["t"].as_f64()).expect("a frame of the colour")
    };
    for (colour, part) in [("green", "00aa00"), ("blue", "0000ff")] {
        let (seen, said) = (first(colour), navigated_at(&events, part));
        assert!((seen - said).abs() <= 1.0, "{colour} shows at {seen} s, the timeline says {said} s");
    }

    // Seekable: a byte range answers 206 with those bytes.
    let ranged = app
        .client
        .get(format!("{}/recordings/{sid}/video.webm", app.base))
        .bearer_auth(&key)
        .header("range", "bytes=0-99")
        .send()
        .await
        .expect("range request");
    assert_eq!(ranged.status(), 206);
    assert_eq!(ranged.bytes().await.expect("range bytes").as_ref(), &bytes[..100]);

    // Listed newest first; another user's key gets 404, no key 401; the plain session has none.
    let (_, list) = json_of(get_with(&app, "/recordings", Some(&key)).await).await;
    assert_eq!(list["recordings"][0]["sessionId"], sid.as_str(), "{list}");
    assert_eq!(list["recordings"].as_array().map(Vec::len), Some(1), "{list}");
    for p in [path.clone(), format!("{path}/video.webm"), format!("{path}/events")] {
        assert_error(&json_of(get_with(&app, &p, Some(&stranger)).await).await, 404, "RECORDING_NOT_FOUND");
        assert_error(&json_of(get_with(&app, &p, None).await).await, 401, "UNAUTHORIZED");
    }
    let none = json_of(get_with(&app, &format!("/recordings/{plain}"), Some(&key)).await).await;
    assert_error(&none, 404, "RECORDING_NOT_FOUND");
    let delete = |k: String| app.client.delete(format!("{}{path}", app.base)).bearer_auth(k).send();
    assert_error(&json_of(delete(stranger.clone()).await.expect("delete")).await, 404, "RECORDING_NOT_FOUND");
    let (status, _) = json_of(delete(key.clone()).await.expect("delete")).await;
    assert_eq!(status, 200);
    assert_error(&json_of(get_with(&app, &path, Some(&key)).await).await, 404, "RECORDING_NOT_FOUND");
    assert!(!app.data_dir().join("recordings").join(&sid).exists(), "the files are gone too");
    wait_until(Duration::from_secs(10), "the feed stopped", || app.app().live_view.active_feeds() == 0).await;
    app.stop().await;
}

/// The real binary on a fresh data directory with one user, recording every session (`--record-sessions`,
/// and `extra`), with one session started and a keyframe of its video on disk: ready to be killed. Returns
/// the data directory, the server, the user's key and the session id.
pub(crate) async fn cut_off_recording(extra: &[&str]) -> (tempfile::TempDir, Server, String, String) {
    let data = tempfile::tempdir().expect("tempdir");
    let user = admin(data.path(), &["users", "create", "--name", "recorded", "--balance", "2.5"]);
    let key = admin(data.path(), &["keys", "create", "--user", &user, "--name", "ci"]);
    let mut flags = vec!["--record-sessions"];
    flags.extend_from_slice(extra);
    let server = Server::start_with(data.path(), &flags).await;
    let started: Value = reqwest::Client::new()
        .post(format!("{}/start/start-session", server.base))
        .bearer_auth(&key)
        .json(&json!({}))
        .send()
        .await
        .expect("start-session")
        .json()
        .await
        .expect("its body");
    assert_eq!(started["recording"], true, "{started}");
    let sid = started["sessionId"].as_str().expect("sessionId").to_owned();
    let video = data.path().join("recordings").join(&sid).join("video.webm");
    // A keyframe is on disk (the header alone is some hundred bytes).
    let written = || std::fs::metadata(&video).map(|m| m.len()).unwrap_or(0) > 2_000;
    wait_until(Duration::from_secs(20), "a frame written", written).await;
    (data, server, key, sid)
}

#[tokio::test]
async fn a_recording_cut_off_by_a_crash_is_listed_as_failed_and_plays_up_to_the_cut() {
    // Every session is recorded (--record-sessions), without asking.
    let (data, server, key, sid) = cut_off_recording(&[]).await;
    let video = data.path().join("recordings").join(&sid).join("video.webm");
    let client = reqwest::Client::new();
    server.crash();

    let size = std::fs::metadata(&video).expect("the video survives").len();
    let decoded = run_python("webm_frames.py", &[video.to_str().expect("path")], &[], Duration::from_secs(60)).await;
    let frames = decoded["frames"].as_array().expect("frames");
    assert!(!frames.is_empty(), "{decoded}");
    assert!(frames.iter().all(|f| f["width"] == 1024 && f["height"] == 600), "{decoded}");

    let server = Server::start(data.path()).await;
    let (status, rec) =
        json_of(client.get(format!("{}/recordings/{sid}", server.base)).bearer_auth(&key).send().await.expect("get"))
            .await;
    assert_eq!(status, 200, "{rec}");
    assert_eq!(rec["status"], "failed", "{rec}");
    assert_eq!(rec["bytes"].as_u64(), Some(size), "{rec}");
    let (_, list) =
        json_of(client.get(format!("{}/recordings", server.base)).bearer_auth(&key).send().await.expect("list")).await;
    assert_eq!(list["recordings"][0]["sessionId"], sid.as_str(), "{list}");
    server.crash();
}

#[tokio::test]
async fn the_timeline_names_secrets_and_never_holds_their_values() {
    const SECRET: &str = "hunter2-SuperSecret";
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let body = json!({ "startingUrl": app.site.url("/search"), "recording": true });
    let sid = app.start_session(&key, body).await;
    let task = json!({
        "actionType": "newTask", "newState": "start",
        "taskDetails": "type \"<secret:pw>\" into \"Search the site\" then press Enter then report the url",
        "secrets": { "pw": SECRET },
    });
    let r = app.send(&key, &sid, task).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let task_id = r.body["taskId"].as_str().expect("taskId").to_owned();
    let done = app.poll_final(&sid, &task_id, Duration::from_secs(30)).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    // The timeline, read while recording, gets the address with the value in it: as its name.
    let events = format!("/recordings/{sid}/events");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, timeline) = json_of(get_with(&app, &events, Some(&key)).await).await;
        assert_eq!(status, 200, "{timeline}");
        let list = timeline["events"].as_array().cloned().unwrap_or_default();
        let url = |e: &Value| e["data"]["url"].as_str().unwrap_or_default().to_owned();
        if list.iter().any(|e| e["event"] == "navigation" && url(e).contains("q=")) {
            break;
        }
        assert!(Instant::now() < deadline, "no navigation to the results in {timeline}");
        tokio::time::sleep(crate::helpers::POLL).await;
    }
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    ready(&app, &key, &sid).await;
    let raw = get_with(&app, &events, Some(&key)).await.text().await.expect("timeline");
    assert!(raw.contains("<secret:pw>"), "{raw}");
    assert!(!raw.contains(SECRET) && !raw.contains("SuperSecret"), "the value leaked: {raw}");
    let file =
        std::fs::read_to_string(app.data_dir().join("recordings").join(&sid).join("events.json")).expect("events.json");
    assert!(!file.contains("SuperSecret") && file.contains("<secret:pw>"), "{file}");
    app.stop().await;
}

#[tokio::test]
async fn a_share_link_serves_the_video_and_timeline_without_a_key_and_nothing_else() {
    let app = TestApp::spawn().await;
    let ((owner, key), other) = (app.user(5.0).await, app.key().await);
    let body = json!({ "startingUrl": app.site.url("/paint?bg=ff0000"), "recording": true });
    let sid = app.start_session(&key, body).await;
    app.run_in(&key, &sid, "wait 1 second").await;
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    ready(&app, &key, &sid).await;
    let share = |k: &str, body: Value| {
        app.client.post(format!("{}/recordings/{sid}/share", app.base)).bearer_auth(k).json(&body).send()
    };
    let link = json_of(share(&key, json!({ "ttlSeconds": 600 })).await.expect("share")).await;
    assert_eq!(link.0, 200, "{}", link.1);
    assert_error(&json_of(share(&other, json!({})).await.expect("share")).await, 404, "RECORDING_NOT_FOUND");
    assert_error(
        &json_of(share(&key, json!({ "ttlSeconds": 0 })).await.expect("share")).await,
        400,
        "INVALID_PARAMETER",
    );
    let (video, events) =
        (link.1["videoURL"].as_str().expect("videoURL"), link.1["eventsURL"].as_str().expect("eventsURL"));
    let ranged = app.client.get(video).header("range", "bytes=0-99").send().await.expect("video");
    assert_eq!(ranged.status().as_u16(), 206);
    assert_eq!(ranged.bytes().await.expect("bytes").len(), 100);
    let (status, timeline) = json_of(app.client.get(events).send().await.expect("events")).await;
    assert_eq!((status, timeline["sessionId"].as_str()), (200, Some(sid.as_str())), "{timeline}");
    // The link's token opens this recording only, and no live view.
    let token = video.split("token=").nth(1).expect("token");
    let elsewhere = get_with(&app, &format!("/recordings/ses_other/video.webm?token={token}"), None).await;
    assert_error(&json_of(elsewhere).await, 401, "UNAUTHORIZED");
    let live = get_with(&app, &format!("/stream/{sid}/view?token={token}"), None).await;
    assert_error(&json_of(live).await, 401, "UNAUTHORIZED");
    let forged = get_with(&app, &format!("/recordings/{sid}/events?token=9999999999.r.{}", "0".repeat(32)), None).await;
    assert_error(&json_of(forged).await, 401, "UNAUTHORIZED");
    // A deactivated account's links stop working, like its live-view and DevTools links.
    app.app().store.deactivate_user(&owner).await.expect("deactivate");
    assert_error(&json_of(app.client.get(video).send().await.expect("video")).await, 403, "ACCOUNT_DEACTIVATED");
    assert_error(&json_of(app.client.get(events).send().await.expect("events")).await, 403, "ACCOUNT_DEACTIVATED");
    app.stop().await;
}

#[tokio::test]
async fn a_recorded_sessions_downloads_are_in_its_timeline() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let body = json!({ "startingUrl": app.site.url("/files"), "recording": true });
    let sid = app.start_session(&key, body).await;
    let mut events = app.app().manager.subscribe(&sid).expect("live session");
    let done = app.run_in(&key, &sid, "click \"Download report\"").await;
    assert_eq!(done["type"], "task_completed", "{done}");
    // The session announces the stored file; the recording's timeline follows the same events.
    let announced = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(webpilot_core::events::SessionEvent::Download(d)) = events.recv().await {
                return d;
            }
        }
    })
    .await
    .expect("a download event");
    assert_eq!(announced.name.as_deref(), Some("report.csv"));
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    ready(&app, &key, &sid).await;
    let (status, timeline) = json_of(get_with(&app, &format!("/recordings/{sid}/events"), Some(&key)).await).await;
    assert_eq!(status, 200, "{timeline}");
    let entries = timeline["events"].as_array().expect("events");
    let download = entries.iter().find(|e| e["event"] == "download").unwrap_or_else(|| panic!("{timeline}"));
    assert_eq!(download["data"]["name"], "report.csv", "{download}");
    assert!(download["data"]["sha256"].as_str().is_some_and(|s| s.len() == 64), "{download}");
    app.stop().await;
}

#[tokio::test]
async fn recordings_past_their_retention_are_purged_with_their_files() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let body = json!({ "startingUrl": app.site.url("/paint?bg=ff0000"), "recording": true });
    let sid = app.start_session(&key, body).await;
    let live = json!({ "startingUrl": app.site.url("/paint?bg=00ff00"), "recording": true });
    let still_recording = app.start_session(&key, live).await;
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    ready(&app, &key, &sid).await;
    let dir = app.data_dir().join("recordings").join(&sid);
    assert!(dir.join("video.webm").is_file(), "{dir:?}");
    // A cutoff just now: what ended before it goes, what still records stays.
    let purged = app.app().recorders.purge(webpilot_store::now_ms() + 1).await.expect("purge");
    assert_eq!(purged, 1);
    assert!(!dir.exists(), "the files went with the row");
    assert_error(
        &json_of(get_with(&app, &format!("/recordings/{sid}"), Some(&key)).await).await,
        404,
        "RECORDING_NOT_FOUND",
    );
    let (status, body) = json_of(get_with(&app, &format!("/recordings/{still_recording}"), Some(&key)).await).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("recording")), "{body}");
    app.stop().await;
}

#[tokio::test]
async fn chat_completions_record_when_their_metadata_asks() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let task = format!("open {} then report the title", app.site.url("/pricing"));
    let body = json!({
        "model": "svc-browser-1",
        "messages": [{ "role": "user", "content": task }],
        "metadata": { "recording": "true" },
    });
    let r = app.client.post(format!("{}/v1/chat/completions", app.base)).bearer_auth(&key).json(&body).send();
    let (status, answer) = json_of(r.await.expect("chat")).await;
    assert_eq!(status, 200, "{answer}");
    let sid = answer["svc"]["sessionId"].as_str().expect("svc.sessionId").to_owned();
    // The chat session ends with its task; its recording is then settled.
    let rec = ready(&app, &key, &sid).await;
    assert!(rec["frames"].as_i64().is_some_and(|f| f > 0), "{rec}");
    let mut bad = body.clone();
    bad["metadata"] = json!({ "recording": "yes" });
    let r = app.client.post(format!("{}/v1/chat/completions", app.base)).bearer_auth(&key).json(&bad).send();
    let (status, refused) = json_of(r.await.expect("chat")).await;
    assert_eq!(status, 400, "{refused}");
    app.stop().await;
}

#[tokio::test]
async fn devtools_connections_are_in_the_timeline() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let body = json!({ "startingUrl": app.site.url("/pricing"), "recording": true });
    let r = app.post("/start/start-session", &key, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.body["sessionId"].as_str().expect("sessionId").to_owned();
    let mut events = app.app().manager.subscribe(&sid).expect("live session");
    let mut client = crate::cdp_client::Cdp::connect(r.body["cdpURL"].as_str().expect("cdpURL")).await;
    client.call("Browser.getVersion", json!({})).await.expect("version");
    drop(client);
    // The session tells its listeners as clients come and go: 1, then 0.
    let mut seen = Vec::new();
    while seen.last() != Some(&0) {
        match tokio::time::timeout(Duration::from_secs(20), events.recv()).await.expect("an event in time") {
            Ok(webpilot_core::events::SessionEvent::Devtools { connections }) => seen.push(connections),
            Ok(_) => {}
            Err(e) => panic!("the session's events: {e}"),
        }
    }
    assert_eq!(seen, vec![1, 0]);
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    ready(&app, &key, &sid).await;
    let (status, timeline) = json_of(get_with(&app, &format!("/recordings/{sid}/events"), Some(&key)).await).await;
    assert_eq!(status, 200, "{timeline}");
    let counts: Vec<u64> = timeline["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["event"] == "devtools")
        .filter_map(|e| e["data"]["connections"].as_u64())
        .collect();
    assert_eq!(counts, vec![1, 0], "{timeline}");
    app.stop().await;
}
