//! Session files' bytes live in the blob store (`<data dir>/files/…`, or the object store), not in the
//! database: they survive a restart, are served whole or by range, leave with their file (deleted or
//! purged), and count against the storage quota; rows written before the blob store are served from the
//! database, then moved into the blob store at the next start, as a node's folder is into the object store
//! it gains; and in a cluster a file kept by one node is uploaded, read and deleted through another.

use crate::cluster::Cluster;
use crate::helpers::{holds, stored_bytes, TestApp};
use crate::recording_storage::S3;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use webpilot_testkit::site::files::REPORT_CSV;

async fn upload(app: &TestApp, key: &str, sid: &str, name: &str, content: &[u8]) -> (u16, Value) {
    let url = format!("{}/sessions/{sid}/files", app.base);
    let r = app.client.post(url).query(&[("name", name)]).bearer_auth(key).body(content.to_vec()).send().await;
    let r = r.expect("upload");
    (r.status().as_u16(), r.json().await.expect("JSON"))
}

async fn get(app: &TestApp, key: &str, sid: &str, name: &str, range: Option<&str>) -> reqwest::Response {
    let mut req = app.client.get(format!("{}/sessions/{sid}/files/{name}", app.base)).bearer_auth(key);
    if let Some(range) = range {
        req = req.header("range", range);
    }
    req.send().await.expect("download")
}

async fn delete(app: &TestApp, key: &str, sid: &str, name: &str) -> u16 {
    let req = app.client.delete(format!("{}/sessions/{sid}/files/{name}", app.base)).bearer_auth(key);
    req.send().await.expect("delete").status().as_u16()
}

/// The blobs under `<data>/files/<sid>/`.
fn blobs_of(data: &Path, sid: &str) -> Vec<PathBuf> {
    let dir = data.join("files").join(sid);
    std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default()
}

/// The blob of `sid` holding `marker`.
fn blob_holding(data: &Path, sid: &str, marker: &str) -> Option<PathBuf> {
    blobs_of(data, sid).into_iter().find(|p| holds(&std::fs::read(p).unwrap_or_default(), marker))
}

/// A file's bytes that say `marker` many times over (well past any inline-storage size).
fn content_with(marker: &str) -> Vec<u8> {
    marker.repeat(4000).into_bytes()
}

/// Polls the session's file list until it has `n` files (at most 20 s).
async fn wait_files(app: &TestApp, key: &str, sid: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = app.client.get(format!("{}/sessions/{sid}/files", app.base)).bearer_auth(key).send().await;
        let body: Value = r.expect("list").json().await.expect("JSON");
        let files = body["files"].as_array().cloned().unwrap_or_default();
        if files.len() >= n {
            return files;
        }
        assert!(Instant::now() < deadline, "still {} files: {body}", files.len());
        tokio::time::sleep(crate::helpers::POLL).await;
    }
}

#[tokio::test]
async fn file_bytes_live_in_the_blob_folder_not_the_database_and_survive_a_restart() {
    let mut app = TestApp::spawn_with(|s| s.arg("storage-quota", "1MB")).await;
    let key = app.key().await;
    let (sid, _) = app.session_on(&key, "/files").await;
    // A download Chromium makes, and an upload with a marker no other byte of the service holds.
    app.run_in(&key, &sid, "click \"Download report\"").await;
    wait_files(&app, &key, &sid, 1).await;
    let marker = format!("blob-marker-{}", uuid::Uuid::new_v4().simple());
    let content = content_with(&marker);
    let (status, stored) = upload(&app, &key, &sid, "marked.txt", &content).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["file"]["bytes"], content.len());

    let blob = blob_holding(app.data_dir(), &sid, &marker).expect("the upload's blob in <data>/files/<session>/");
    assert_eq!(std::fs::read(&blob).expect("blob"), content);
    let csv =
        blobs_of(app.data_dir(), &sid).into_iter().filter(|p| std::fs::read(p).ok().as_deref() == Some(REPORT_CSV));
    assert_eq!(csv.count(), 1, "the download's blob");
    assert!(!holds(&stored_bytes(&app).await, &marker), "the bytes are not in the database");
    let usage = app.client.get(format!("{}/usage", app.base)).bearer_auth(&key).send().await.expect("usage");
    let usage: Value = usage.json().await.expect("JSON");
    let used = content.len() + REPORT_CSV.len();
    assert_eq!(usage["storage"]["usedBytes"], used, "the quota counts them: {usage}");
    let (status, refused) = upload(&app, &key, &sid, "big.bin", &vec![1u8; 1_000_000 - used + 1]).await;
    assert_eq!((status, refused["code"].as_str()), (413, Some("STORAGE_QUOTA_EXCEEDED")), "{refused}");

    app.restart().await;
    let r = get(&app, &key, &sid, "marked.txt", None).await;
    assert_eq!((r.status().as_u16(), r.headers()["content-type"].to_str().ok()), (200, Some("text/plain")));
    assert!(r.headers()["content-disposition"].to_str().is_ok_and(|d| d.contains("marked.txt")));
    assert_eq!(r.bytes().await.expect("body").as_ref(), content.as_slice(), "the same bytes after a restart");
    let r = get(&app, &key, &sid, "report.csv", None).await;
    assert_eq!(r.bytes().await.expect("body").as_ref(), REPORT_CSV);
    let part = get(&app, &key, &sid, "marked.txt", Some("bytes=10-29")).await;
    assert_eq!(part.status().as_u16(), 206);
    assert_eq!(part.headers()["content-range"], format!("bytes 10-29/{}", content.len()).as_str());
    assert_eq!(part.bytes().await.expect("range").as_ref(), &content[10..30]);
    assert_eq!(get(&app, &key, &sid, "marked.txt", Some("bytes=999999-")).await.status().as_u16(), 416);

    // Deleting the file removes its blob, and what the quota counts.
    assert_eq!(delete(&app, &key, &sid, "marked.txt").await, 200);
    assert!(!blob.exists(), "{blob:?}");
    assert_eq!(get(&app, &key, &sid, "marked.txt", None).await.status().as_u16(), 404);
    assert_eq!(delete(&app, &key, &sid, "marked.txt").await, 404);
    let usage = app.client.get(format!("{}/usage", app.base)).bearer_auth(&key).send().await.expect("usage");
    assert_eq!(usage.json::<Value>().await.expect("JSON")["storage"]["usedBytes"], REPORT_CSV.len());

    // The retention purge drops the rest, with its blob.
    let purged = app.app().manager.files().purge(webpilot_store::now_ms() + 1).await.expect("purge");
    assert_eq!(purged, 1);
    assert!(blobs_of(app.data_dir(), &sid).is_empty(), "{:?}", blobs_of(app.data_dir(), &sid));
    assert_eq!(get(&app, &key, &sid, "report.csv", None).await.status().as_u16(), 404);
    app.stop().await;
}

/// Polls `cond` until it holds (at most 20 s).
async fn until<F: std::future::Future<Output = bool>>(what: &str, cond: impl Fn() -> F) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond().await {
        assert!(Instant::now() < deadline, "not reached in 20 s: {what}");
        tokio::time::sleep(crate::helpers::POLL).await;
    }
}

/// `storage` and the length of `content` of file `name`, read from the database itself.
async fn row_of(app: &TestApp, name: &str) -> (String, i64) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&app.database_url()).await.expect("open the database");
    let row: (String, i64) =
        sqlx::query_as("SELECT storage, CAST(LENGTH(content) AS BIGINT) FROM files WHERE name = $1")
            .bind(name)
            .fetch_one(&pool)
            .await
            .expect("the row");
    pool.close().await;
    row
}

#[tokio::test]
async fn a_file_stored_in_the_database_before_the_blob_store_is_served_then_moved_into_it_at_the_next_start() {
    let mut app = TestApp::spawn().await;
    let (user, key) = app.user(5.0).await;
    let sid = app.start_session(&key, json!({})).await;
    // A row as the previous version wrote it: the bytes in `content`, no blob.
    let marker = format!("old-marker-{}", uuid::Uuid::new_v4().simple());
    let content = content_with(&marker);
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&app.database_url()).await.expect("open the database");
    sqlx::query(
        "INSERT INTO files (session_id, user_id, name, bytes, sha256, mime_type, source, created_at, content)
         VALUES ($1, $2, 'old.txt', $3, 'x', 'text/plain', 'upload', $4, $5)",
    )
    .bind(sid.as_str())
    .bind(user.as_str())
    .bind(content.len() as i64)
    .bind(webpilot_store::now_ms())
    .bind(content.clone())
    .execute(&pool)
    .await
    .expect("an old row");
    pool.close().await;
    let r = get(&app, &key, &sid, "old.txt", None).await;
    assert_eq!(r.status().as_u16(), 200);
    assert!(r.headers()["content-disposition"].to_str().is_ok_and(|d| d.contains("old.txt")));
    assert_eq!(r.bytes().await.expect("body").as_ref(), content.as_slice());
    assert_eq!(row_of(&app, "old.txt").await, ("database".to_owned(), content.len() as i64));

    // The next start moves its bytes into the node's blob folder and empties the row.
    app.restart().await;
    crate::helpers::wait_until(Duration::from_secs(20), "the old file's bytes in the blob folder", || {
        blob_holding(app.data_dir(), &sid, &marker).is_some()
    })
    .await;
    until("the old row emptied", || async { row_of(&app, "old.txt").await == ("node".to_owned(), 0) }).await;
    let blob = blob_holding(app.data_dir(), &sid, &marker).expect("the blob");
    assert_eq!(std::fs::read(&blob).expect("blob"), content);
    let r = get(&app, &key, &sid, "old.txt", None).await;
    assert_eq!(r.bytes().await.expect("body").as_ref(), content.as_slice(), "served from the blob");
    assert_eq!(wait_files(&app, &key, &sid, 1).await[0]["bytes"], content.len());
    assert_eq!(delete(&app, &key, &sid, "old.txt").await, 200);
    assert!(!blob.exists(), "the blob went with its file");
    assert_eq!(get(&app, &key, &sid, "old.txt", None).await.status().as_u16(), 404);
    app.stop().await;
}

#[tokio::test]
async fn a_node_that_gains_an_object_store_moves_its_folders_files_there() {
    let s3 = S3::start("webpilot-moved").await;
    let mut app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let marker = format!("moved-marker-{}", uuid::Uuid::new_v4().simple());
    let content = content_with(&marker);
    let (status, stored) = upload(&app, &key, &sid, "kept.txt", &content).await;
    assert_eq!(status, 200, "{stored}");
    let blob = blob_holding(app.data_dir(), &sid, &marker).expect("first in the node's folder");

    app.restart_with(&s3.flags("webpilot-moved", "m")).await;
    let prefix = format!("m/files/{sid}/");
    let listed = || async { s3.keys("webpilot-moved", &prefix).await.contains(&format!("<Key>{prefix}")) };
    until("the file in the object store", listed).await;
    crate::helpers::wait_until(Duration::from_secs(20), "the folder's blob removed", || !blob.exists()).await;
    assert_eq!(row_of(&app, "kept.txt").await.0, "object_store");
    let r = get(&app, &key, &sid, "kept.txt", None).await;
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.bytes().await.expect("body").as_ref(), content.as_slice());
    assert_eq!(delete(&app, &key, &sid, "kept.txt").await, 200);
    let listed = s3.keys("webpilot-moved", &prefix).await;
    assert!(!listed.contains(&format!("<Key>{prefix}")), "deleted from the object store: {listed}");
    app.stop().await;
}

#[tokio::test]
async fn a_file_kept_by_one_node_is_uploaded_read_and_deleted_through_another() {
    let cluster = Cluster::new().await;
    let a = cluster.node_with(None, |s| s).await;
    let b = cluster.node_with(None, |s| s).await;
    let key = a.key().await;
    let sid = a.start_session(&key, json!({})).await;
    let marker = format!("node-marker-{}", uuid::Uuid::new_v4().simple());
    let content = content_with(&marker);

    // Uploaded through B into A's live session: A keeps the bytes.
    let (status, stored) = upload(&b, &key, &sid, "kept.txt", &content).await;
    assert_eq!(status, 200, "{stored}");
    let blob = blob_holding(a.data_dir(), &sid, &marker).expect("in A's folder");
    assert!(blobs_of(b.data_dir(), &sid).is_empty(), "nothing in B's folder");

    // Read through B: forwarded to A, whole and by range, also after the session ended.
    a.state(&key, &sid, "terminate").await;
    a.wait_session_gone(&key, &sid, Duration::from_secs(20)).await;
    let r = get(&b, &key, &sid, "kept.txt", None).await;
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.bytes().await.expect("body").as_ref(), content.as_slice());
    let part = get(&b, &key, &sid, "kept.txt", Some("bytes=0-99")).await;
    assert_eq!(part.status().as_u16(), 206);
    assert_eq!(part.bytes().await.expect("range").as_ref(), &content[..100]);
    let stranger = b.key().await;
    assert_eq!(get(&b, &stranger, &sid, "kept.txt", None).await.status().as_u16(), 404);
    // A client claiming to be a forwarding node gets B's answer for bytes B does not keep: 503, not a 500.
    let url = format!("{}/sessions/{sid}/files/kept.txt", b.base);
    let spoofed = b.client.get(url).bearer_auth(&key).header("x-webpilot-forwarded-by", "node_x").send().await;
    assert_eq!(spoofed.expect("spoofed").status().as_u16(), 503);

    // A second file is deleted through B by A, which removes its blob.
    let second = a.start_session(&key, json!({})).await;
    let (status, _) = upload(&a, &key, &second, "gone.txt", b"to delete").await;
    assert_eq!(status, 200);
    let second_blob = blobs_of(a.data_dir(), &second).pop().expect("A's blob");
    assert_eq!(delete(&b, &key, &second, "gone.txt").await, 200);
    assert!(!second_blob.exists(), "{second_blob:?}");

    assert!(blob.exists(), "the first file's blob stays with its file");

    // Once A stopped, B lists the file but cannot reach its bytes: 503, not a 500.
    a.stop().await;
    assert_eq!(wait_files(&b, &key, &sid, 1).await[0]["name"], "kept.txt");
    let r = get(&b, &key, &sid, "kept.txt", None).await;
    assert_eq!(r.status().as_u16(), 503);
    assert_eq!(r.json::<Value>().await.expect("JSON")["code"], "INSTANCE_UNAVAILABLE");
    b.stop().await;
}

#[tokio::test]
async fn files_in_the_object_store_are_served_by_any_node_and_deleted_from_it() {
    let s3 = S3::start("webpilot-files").await;
    let flags = s3.flags("webpilot-files", "t");
    let cluster = Cluster::new().await;
    let with_s3 = |mut s: crate::helpers::Settings| {
        s.args.extend(flags.clone());
        s
    };
    let a = cluster.node_with(None, with_s3).await;
    let b = cluster.node_with(None, with_s3).await;
    let key = a.key().await;
    let sid = a.start_session(&key, json!({})).await;
    let marker = format!("s3-marker-{}", uuid::Uuid::new_v4().simple());
    let content = content_with(&marker);
    let (status, stored) = upload(&a, &key, &sid, "shared.txt", &content).await;
    assert_eq!(status, 200, "{stored}");
    let object = format!("<Key>t/files/{sid}/");
    assert!(s3.keys("webpilot-files", &format!("t/files/{sid}/")).await.contains(&object), "in the object store");
    assert!(blobs_of(a.data_dir(), &sid).is_empty(), "not in the node's folder");
    assert!(!holds(&stored_bytes(&a).await, &marker), "nor in the database");

    // Another node reads it from the object store itself, also once the node that wrote it stopped.
    a.stop().await;
    let r = get(&b, &key, &sid, "shared.txt", None).await;
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.bytes().await.expect("body").as_ref(), content.as_slice());
    let part = get(&b, &key, &sid, "shared.txt", Some("bytes=-5")).await;
    assert_eq!(part.status().as_u16(), 206);
    assert_eq!(part.bytes().await.expect("range").as_ref(), &content[content.len() - 5..]);
    assert_eq!(delete(&b, &key, &sid, "shared.txt").await, 200);
    let listed = s3.keys("webpilot-files", &format!("t/files/{sid}/")).await;
    assert!(!listed.contains(&object), "deleted from the object store: {listed}");
    b.stop().await;
}
