//! Where recordings are kept and who serves them: the per-user storage quota, an object store every node
//! reads (a directory both nodes mount), and a node that forwards requests for a recording another
//! node keeps. The cluster tests run on the local PostgreSQL, the others on the suite's database.

use crate::clients::run_python;
use crate::cluster::Cluster;
use crate::helpers::{Server, TestApp};
use crate::recordings::{assert_error, cut_off_recording, json_of, ready};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

async fn get(app: &TestApp, path: &str, key: Option<&str>, range: Option<&str>) -> reqwest::Response {
    let mut req = app.client.get(format!("{}{path}", app.base));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    if let Some(r) = range {
        req = req.header("range", r);
    }
    req.send().await.expect("request")
}

/// Records a session on the red page of `app`'s site, ends it, and returns its id once it is ready.
async fn recorded(app: &TestApp, key: &str) -> String {
    let body = json!({ "startingUrl": app.site.url("/paint?bg=ff0000"), "recording": true });
    let r = app.post("/start/start-session", key, body).await;
    assert_eq!((r.status.as_u16(), &r.body["recording"]), (200, &json!(true)), "{}", r.body);
    let sid = r.body["sessionId"].as_str().expect("sessionId").to_owned();
    let done = app.run_in(key, &sid, "wait 1 seconds").await;
    assert_eq!(done["type"], "task_completed", "{done}");
    assert_eq!(app.state(key, &sid, "terminate").await.status, 200);
    ready(app, key, &sid).await;
    sid
}

/// The frames of `video` as PyAV decodes them.
async fn decoded(video: &[u8], dir: &Path) -> Vec<Value> {
    let file = dir.join("fetched.webm");
    std::fs::write(&file, video).expect("write the video");
    let out = run_python("webm_frames.py", &[file.to_str().expect("path")], &[], Duration::from_secs(60)).await;
    assert_eq!(out["codec"], "vp8", "{out}");
    out["frames"].as_array().expect("frames").clone()
}

#[tokio::test]
async fn a_user_over_the_recording_quota_gets_sessions_that_say_they_are_not_recorded() {
    let app = TestApp::spawn_with(|s| s.arg("recording-quota", "1KB")).await;
    let key = app.key().await;
    let (_, other) = app.user(5.0).await;
    let page = app.site.url("/paint?bg=ff0000");
    // Under the quota (nothing recorded yet): recorded. Its video takes more than 1 KB.
    let first = recorded(&app, &key).await;
    let (_, rec) = json_of(get(&app, &format!("/recordings/{first}"), Some(&key), None).await).await;
    assert!(rec["bytes"].as_i64().unwrap_or(0) > 1_000, "{rec}");
    let (_, list) = json_of(get(&app, "/recordings", Some(&key), None).await).await;
    assert_eq!(list["storage"], json!({ "usedBytes": rec["bytes"], "quotaBytes": 1_000 }), "{list}");

    // Now at the quota: the session starts, unrecorded, and its answer says why.
    let over = app.post("/start/start-session", &key, json!({ "startingUrl": page, "recording": true })).await;
    assert_eq!(over.status, 200, "{}", over.body);
    assert_eq!(over.body["recording"], false, "{}", over.body);
    assert_eq!(over.body["recordingSkipped"]["code"], "RECORDING_QUOTA_EXCEEDED", "{}", over.body);
    let sid = over.body["sessionId"].as_str().expect("sessionId").to_owned();
    assert_eq!(app.run_in(&key, &sid, "wait 1 seconds").await["type"], "task_completed");
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    assert_error(
        &json_of(get(&app, &format!("/recordings/{sid}"), Some(&key), None).await).await,
        404,
        "RECORDING_NOT_FOUND",
    );
    // Run-task and chat completions keep their bodies' shapes and say it in a header.
    let header = |r: &reqwest::Response| r.headers().get("x-webpilot-recording").map(|v| v.as_bytes().to_vec());
    let skipped = Some(b"skipped; code=RECORDING_QUOTA_EXCEEDED".to_vec());
    let task = json!({ "taskDetails": "wait 1 seconds", "startingUrl": page, "recording": true });
    let r = app.client.post(format!("{}/start/run-task", app.base)).bearer_auth(&key).json(&task).send().await;
    let r = r.expect("run-task");
    assert_eq!((r.status().as_u16(), header(&r)), (200, skipped.clone()));
    let chat = json!({
        "model": "svc-browser-1",
        "messages": [{ "role": "user", "content": format!("open {page} then report the title") }],
    });
    for (metadata, want) in [(json!({ "recording": "true" }), skipped), (json!({}), Some(b"off".to_vec()))] {
        let mut body = chat.clone();
        body["metadata"] = metadata;
        let r = app.client.post(format!("{}/v1/chat/completions", app.base)).bearer_auth(&key).json(&body).send();
        let r = r.await.expect("chat");
        assert_eq!((r.status().as_u16(), header(&r)), (200, want));
    }
    let task = json!({ "taskDetails": "wait 1 seconds", "startingUrl": page, "recording": true });
    let r = app.client.post(format!("{}/start/run-task", app.base)).bearer_auth(&other).json(&task).send().await;
    assert_eq!(header(&r.expect("run-task")), Some(b"on".to_vec()), "another user's quota is their own");

    // A session that does not ask says nothing of the quota; another user has a quota of their own.
    let plain = app.post("/start/start-session", &key, json!({ "startingUrl": page })).await;
    assert_eq!((plain.body["recording"].as_bool(), plain.body.get("recordingSkipped")), (Some(false), None));
    // (A user with nothing recorded yet: `other`'s run-task above has ended, recorded, before it answered.)
    let (_, third) = app.user(5.0).await;
    let theirs = app.post("/start/start-session", &third, json!({ "startingUrl": page, "recording": true })).await;
    assert_eq!(theirs.body["recording"], true, "{}", theirs.body);

    // Deleting the recording frees the quota.
    let deleted = app.client.delete(format!("{}/recordings/{first}", app.base)).bearer_auth(&key).send().await;
    assert_eq!(deleted.expect("delete").status(), 200);
    let again = app.post("/start/start-session", &key, json!({ "startingUrl": page, "recording": true })).await;
    assert_eq!((again.body["recording"].as_bool(), again.body.get("recordingSkipped")), (Some(true), None));
    app.stop().await;
}

#[tokio::test]
async fn recordings_in_an_object_store_are_served_by_any_node_also_after_theirs_stopped() {
    let cluster = Cluster::new().await;
    let shared = tempfile::tempdir().expect("the directory both nodes mount");
    let store = format!("file://{}/objects", shared.path().display());
    let a = cluster.node_with(None, |s| s.arg("object-store", &store)).await;
    let b = cluster.node_with(None, |s| s.arg("object-store", &store)).await;
    let key = a.key().await;
    let (_, stranger) = a.user(5.0).await;
    let sid = recorded(&a, &key).await;
    // Uploaded before it was settled: the object store has it, the node's folder is gone.
    let objects = shared.path().join("objects/recordings").join(&sid);
    assert!(objects.join("video.webm").is_file() && objects.join("events.json").is_file(), "{objects:?}");
    // The folder goes right after the recording is settled (uploaded, then marked ready, then removed).
    let folder = a.data_dir().join("recordings").join(&sid);
    crate::helpers::wait_until(Duration::from_secs(10), "the node keeps no copy", || !folder.exists()).await;
    let (_, rec) = json_of(get(&a, &format!("/recordings/{sid}"), Some(&key), None).await).await;
    a.stop().await;

    // The other node serves all of it: the video (whole, a range, a range outside it), the timeline.
    let video = get(&b, &format!("/recordings/{sid}/video.webm"), Some(&key), None).await;
    assert_eq!((video.status().as_u16(), video.headers()["content-type"].to_str().ok()), (200, Some("video/webm")));
    let bytes = video.bytes().await.expect("video");
    assert_eq!(bytes.len() as i64, rec["bytes"].as_i64().unwrap_or(-1), "{rec}");
    let frames = decoded(&bytes, b.data_dir()).await;
    assert!(!frames.is_empty() && frames.iter().all(|f| f["width"] == 1024 && f["height"] == 600));
    assert!(frames.iter().any(|f| f["page"] == "red"), "{frames:?}");
    let part = get(&b, &format!("/recordings/{sid}/video.webm"), Some(&key), Some("bytes=0-99")).await;
    assert_eq!(part.status(), 206);
    let whole = bytes.len();
    assert_eq!(part.headers()["content-range"].to_str().ok(), Some(format!("bytes 0-99/{whole}").as_str()));
    assert_eq!(part.bytes().await.expect("range").as_ref(), &bytes[..100]);
    let tail = get(&b, &format!("/recordings/{sid}/video.webm"), Some(&key), Some("bytes=-10")).await;
    assert_eq!(tail.status(), 206);
    assert_eq!(tail.bytes().await.expect("suffix").as_ref(), &bytes[whole - 10..]);
    let outside = get(&b, &format!("/recordings/{sid}/video.webm"), Some(&key), Some(&format!("bytes={whole}-"))).await;
    assert_eq!(outside.status(), 416);
    let (status, timeline) = json_of(get(&b, &format!("/recordings/{sid}/events"), Some(&key), None).await).await;
    assert_eq!(status, 200, "{timeline}");
    assert!(timeline["events"].as_array().is_some_and(|e| e.iter().any(|e| e["event"] == "end_session")), "{timeline}");

    // Still the owner's only; a share link made on this node serves it without a key.
    for p in [format!("/recordings/{sid}/video.webm"), format!("/recordings/{sid}/events")] {
        assert_error(&json_of(get(&b, &p, Some(&stranger), None).await).await, 404, "RECORDING_NOT_FOUND");
        assert_error(&json_of(get(&b, &p, None, None).await).await, 401, "UNAUTHORIZED");
    }
    let link = b.post(&format!("/recordings/{sid}/share"), &key, json!({})).await;
    assert_eq!(link.status, 200, "{}", link.body);
    let shared_video = b.client.get(link.body["videoURL"].as_str().expect("videoURL")).send().await.expect("link");
    assert_eq!(shared_video.bytes().await.expect("video").as_ref(), bytes.as_ref());

    // Deleting it through any node removes the objects.
    let deleted = b.client.delete(format!("{}/recordings/{sid}", b.base)).bearer_auth(&key).send().await;
    assert_eq!(deleted.expect("delete").status(), 200);
    assert!(!objects.join("video.webm").exists(), "{objects:?}");
    b.stop().await;
}

#[tokio::test]
async fn another_node_forwards_requests_for_a_recording_only_its_node_keeps() {
    let cluster = Cluster::new().await;
    let a = cluster.node_with(None, |s| s).await;
    let b = cluster.node_with(None, |s| s).await;
    let key = a.key().await;
    let (_, stranger) = a.user(5.0).await;
    let sid = recorded(&a, &key).await;
    let kept = a.data_dir().join("recordings").join(&sid);
    assert!(kept.join("video.webm").is_file(), "{kept:?}");
    let video = format!("/recordings/{sid}/video.webm");
    let direct = get(&a, &video, Some(&key), None).await.bytes().await.expect("video");

    // Through the other node: the same bytes, ranges and timeline, and the same refusals.
    let through = get(&b, &video, Some(&key), None).await;
    assert_eq!(through.status(), 200);
    assert_eq!(through.bytes().await.expect("forwarded video").as_ref(), direct.as_ref());
    let part = get(&b, &video, Some(&key), Some("bytes=0-99")).await;
    assert_eq!(part.status(), 206);
    assert_eq!(part.bytes().await.expect("range").as_ref(), &direct[..100]);
    let (status, timeline) = json_of(get(&b, &format!("/recordings/{sid}/events"), Some(&key), None).await).await;
    assert_eq!(status, 200, "{timeline}");
    assert!(timeline["events"].as_array().is_some_and(|e| e.iter().any(|e| e["event"] == "end_session")), "{timeline}");
    assert_error(&json_of(get(&b, &video, Some(&stranger), None).await).await, 404, "RECORDING_NOT_FOUND");
    assert_error(&json_of(get(&b, &video, None, None).await).await, 401, "UNAUTHORIZED");
    // A share link made on either node works through either (the nodes sign links with one key).
    for (maker, user) in [(&b, &a), (&a, &b)] {
        let link = maker.post(&format!("/recordings/{sid}/share"), &key, json!({})).await;
        assert_eq!(link.status, 200, "{}", link.body);
        let url = link.body["videoURL"].as_str().expect("videoURL").replace(&maker.base, &user.base);
        let shared = user.client.get(url).send().await.expect("the link");
        assert_eq!(shared.status(), 200);
        assert_eq!(shared.bytes().await.expect("video").as_ref(), direct.as_ref());
    }

    // A second recording is deleted through the other node, by the node that keeps its files.
    let second = recorded(&a, &key).await;
    let second_dir = a.data_dir().join("recordings").join(&second);
    let deleted = b.client.delete(format!("{}/recordings/{second}", b.base)).bearer_auth(&key).send().await;
    assert_eq!(deleted.expect("delete").status(), 200);
    assert!(!second_dir.exists(), "{second_dir:?}");

    // Once its node stopped, the recording is listed but its files cannot be reached: 503, not a 500.
    a.stop().await;
    let (status, rec) = json_of(get(&b, &format!("/recordings/{sid}"), Some(&key), None).await).await;
    assert_eq!((status, rec["status"].as_str()), (200, Some("ready")), "{rec}");
    assert_error(&json_of(get(&b, &video, Some(&key), None).await).await, 503, "INSTANCE_UNAVAILABLE");
    b.stop().await;
}

/// An S3 server (moto's, which speaks the S3 wire protocol) on a free port, with one bucket.
pub(crate) struct S3 {
    endpoint: String,
    _server: tokio::process::Child,
}

impl S3 {
    pub(crate) async fn start(bucket: &str) -> S3 {
        let port = crate::helpers::free_port();
        let server = tokio::process::Command::new("python3")
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("moto's S3 server starts");
        let endpoint = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        // It is up once it creates the bucket (an S3 CreateBucket is `PUT /<bucket>`).
        loop {
            match client.put(format!("{endpoint}/{bucket}")).send().await {
                Ok(r) if r.status().is_success() => break,
                Ok(r) => panic!("the S3 server refused the bucket: {}", r.status()),
                Err(_) if std::time::Instant::now() < deadline => tokio::time::sleep(crate::helpers::POLL).await,
                Err(e) => panic!("the S3 server did not start: {e}"),
            }
        }
        S3 { endpoint, _server: server }
    }

    /// The keys under `prefix` in `bucket` (ListObjectsV2).
    pub(crate) async fn keys(&self, bucket: &str, prefix: &str) -> String {
        let url = format!("{}/{bucket}?list-type=2&prefix={prefix}", self.endpoint);
        reqwest::get(url).await.expect("list").text().await.expect("listing")
    }

    /// The service's flags for keeping recordings under `prefix` of `bucket`.
    pub(crate) fn flags(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let mut flags = vec!["--object-store".to_owned(), format!("s3://{bucket}/{prefix}")];
        for option in [
            format!("aws_endpoint={}", self.endpoint),
            "aws_allow_http=true".into(),
            "aws_region=us-east-1".into(),
            "aws_access_key_id=webpilot-test".into(),
            "aws_secret_access_key=webpilot-test-secret".into(),
        ] {
            flags.extend(["--object-store-option".to_owned(), option]);
        }
        flags
    }
}

#[tokio::test]
async fn recordings_kept_in_s3_are_served_from_it_after_a_restart_and_deleted_from_it() {
    let s3 = S3::start("webpilot-recordings").await;
    let flags = s3.flags("webpilot-recordings", "test");
    let mut app = TestApp::spawn_with(|mut s| {
        s.args.extend(flags);
        s
    })
    .await;
    let key = app.key().await;
    let sid = recorded(&app, &key).await;
    let listed = s3.keys("webpilot-recordings", &format!("test/recordings/{sid}/")).await;
    assert!(listed.contains("video.webm") && listed.contains("events.json"), "{listed}");
    assert!(!app.data_dir().join("recordings").join(&sid).exists(), "uploaded, so not kept on the node");

    app.restart().await;
    let (_, rec) = json_of(get(&app, &format!("/recordings/{sid}"), Some(&key), None).await).await;
    let video = get(&app, &format!("/recordings/{sid}/video.webm"), Some(&key), None).await;
    assert_eq!(video.status(), 200);
    let bytes = video.bytes().await.expect("video");
    assert_eq!(bytes.len() as i64, rec["bytes"].as_i64().unwrap_or(-1), "{rec}");
    assert!(decoded(&bytes, app.data_dir()).await.iter().any(|f| f["page"] == "red"));
    let part = get(&app, &format!("/recordings/{sid}/video.webm"), Some(&key), Some("bytes=100-199")).await;
    assert_eq!(part.status(), 206);
    assert_eq!(part.bytes().await.expect("range").as_ref(), &bytes[100..200]);
    let (status, timeline) = json_of(get(&app, &format!("/recordings/{sid}/events"), Some(&key), None).await).await;
    assert_eq!(status, 200, "{timeline}");
    assert!(timeline["events"].as_array().is_some_and(|e| e.iter().any(|e| e["event"] == "end_session")));

    let deleted = app.client.delete(format!("{}/recordings/{sid}", app.base)).bearer_auth(&key).send().await;
    assert_eq!(deleted.expect("delete").status(), 200);
    let listed = s3.keys("webpilot-recordings", &format!("test/recordings/{sid}/")).await;
    assert!(!listed.contains("video.webm"), "{listed}");
    app.stop().await;
}

#[tokio::test]
async fn a_recording_cut_off_by_a_crash_is_uploaded_as_failed_when_its_node_starts_again() {
    let s3 = S3::start("webpilot-crashed").await;
    let flags = s3.flags("webpilot-crashed", "p");
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (data, server, key, sid) = cut_off_recording(&flags).await;
    let folder = data.path().join("recordings").join(&sid);
    let client = reqwest::Client::new();
    server.crash();
    let cut = std::fs::read(folder.join("video.webm")).expect("the video survives the crash");

    // At its next start the node settles it as failed, uploads what was written, and keeps no copy.
    let server = Server::start_with(data.path(), &flags).await;
    let (status, rec) =
        json_of(client.get(format!("{}/recordings/{sid}", server.base)).bearer_auth(&key).send().await.expect("get"))
            .await;
    assert_eq!((status, rec["status"].as_str()), (200, Some("failed")), "{rec}");
    assert_eq!(rec["bytes"].as_u64(), Some(cut.len() as u64), "{rec}");
    let listed = s3.keys("webpilot-crashed", &format!("p/recordings/{sid}/")).await;
    assert!(listed.contains("video.webm") && listed.contains("events.json"), "{listed}");
    assert!(!folder.exists(), "uploaded, so not kept on the node");
    let video = client.get(format!("{}/recordings/{sid}/video.webm", server.base)).bearer_auth(&key).send().await;
    let served = video.expect("video").bytes().await.expect("bytes");
    assert_eq!(served.as_ref(), cut.as_slice(), "the video up to the cut");
    let frames = decoded(&served, data.path()).await;
    assert!(!frames.is_empty() && frames.iter().all(|f| f["width"] == 1024 && f["height"] == 600));
    server.crash();
}

#[tokio::test]
async fn an_object_store_the_service_cannot_use_stops_its_start_with_the_reason() {
    for (address, option, said) in [
        ("not a url", None, "the object store address is not valid"),
        ("ftp://example.com/recordings", None, "the object store"),
        ("s3://bucket/p", Some("aws_secret_access_key"), "not key=value"),
    ] {
        let mut args = vec!["--object-store", address];
        if let Some(o) = option {
            args.extend(["--object-store-option", o]);
        }
        let error = TestApp::start_error(&args).await;
        assert!(error.contains(said), "{address}: {error}");
    }
}

#[tokio::test]
async fn recordings_in_the_object_store_past_their_retention_are_purged_from_it() {
    let objects = tempfile::tempdir().expect("the object store's directory");
    let store = format!("file://{}", objects.path().display());
    let app = TestApp::spawn_with(|s| s.arg("object-store", &store)).await;
    let key = app.key().await;
    let sid = recorded(&app, &key).await;
    let folder = objects.path().join("recordings").join(&sid);
    assert!(folder.join("video.webm").is_file(), "{folder:?}");
    // A cutoff just now: the recording ended before it, so its row and its objects go.
    assert_eq!(app.app().recorders.purge(webpilot_store::now_ms() + 1).await.expect("purge"), 1);
    assert!(!folder.join("video.webm").exists() && !folder.join("events.json").exists(), "{folder:?}");
    let gone = json_of(get(&app, &format!("/recordings/{sid}"), Some(&key), None).await).await;
    assert_error(&gone, 404, "RECORDING_NOT_FOUND");
    app.stop().await;
}
