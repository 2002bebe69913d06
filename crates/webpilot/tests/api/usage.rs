//! `GET /usage`: a caller reconciles its balance from API answers alone. The lines of a new user add up to
//! what left its balance, page without gaps, stay the caller's own, and bad queries are refused.

use crate::helpers::*;
use serde_json::{json, Value};
use std::time::Duration;
use webpilot_core::usage::usd_to_micros;

async fn usage(app: &TestApp, key: &str, query: &str) -> Reply {
    let resp = app.client.get(format!("{}/usage{query}", app.base)).bearer_auth(key).send().await.expect("request");
    let status = resp.status();
    let body: Value = resp.json().await.expect("JSON");
    Reply { status, headers: Default::default(), body }
}

#[tokio::test]
async fn the_lines_of_a_new_user_add_up_to_what_left_its_balance() {
    // Session time is billed here (one micro-dollar per millisecond open), tasks by their compute.
    let app = TestApp::spawn_with(|s| s.arg("price-session-per-second", "0.001")).await;
    let (user, key) = app.user(1.0).await;
    let (_, other) = app.user(1.0).await;
    let task = json!({ "taskDetails": format!("open {} then report the title", app.site.url("/")) });
    // Each run-task answer reports everything the call charged: its task and the session it ended.
    let mut runs = Vec::new();
    for _ in 0..2 {
        let run = app.post("/start/run-task", &key, task.clone()).await;
        assert_eq!(run.status, 200, "{}", run.body);
        let usage = &run.body["usage"];
        assert!(usage["sessionCost"].as_f64().is_some_and(|c| c > 0.0), "{}", run.body);
        runs.push(run.body);
    }
    let sid = app.start_session(&key, json!({ "maxDuration": 60_000 })).await;
    // An open session holds the price of its whole maxDuration: 60 s at $0.001.
    assert_eq!(usage(&app, &key, "").await.body["held"], 0.06);
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);

    // Three sessions end (run-task ends its own after answering) and two tasks finish: five charges.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let all = loop {
        let r = usage(&app, &key, "").await;
        let sessions = r.body["lines"].as_array().map_or(0, |l| l.iter().filter(|l| l["kind"] == "session").count());
        if sessions == 3 {
            break r.body;
        }
        assert!(std::time::Instant::now() < deadline, "not every charge was listed: {}", r.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let lines = all["lines"].as_array().expect("lines").clone();
    assert_eq!(lines.iter().filter(|l| l["kind"] == "task").count(), 2, "{all}");
    let charged: i64 = lines.iter().map(|l| usd_to_micros(l["cost"].as_f64().expect("cost"))).sum();
    let balance = app.app().store.get_user(&user).await.expect("store").expect("user").balance_micros;
    assert_eq!(charged, usd_to_micros(1.0) - balance, "{all}");
    assert_eq!(usd_to_micros(all["balance"].as_f64().expect("balance")), balance);
    assert_eq!(all["held"], 0.0);
    assert!(
        lines.iter().all(|l| l["createdAt"].as_str().is_some_and(|t| t.ends_with('Z')) && l["sessionId"].is_string()
            || l["kind"] == "task" && l["taskId"].is_string()),
        "{all}"
    );
    assert!(lines.iter().any(|l| l["sessionId"] == sid.as_str()), "{all}");
    for run in &runs {
        let of_run: i64 = lines
            .iter()
            .filter(|l| l["sessionId"] == run["sessionId"] || l["taskId"] == run["taskId"])
            .map(|l| usd_to_micros(l["cost"].as_f64().expect("cost")))
            .sum();
        assert_eq!(usd_to_micros(run["usage"]["cost"].as_f64().expect("cost")), of_run, "{run} {all}");
        let session: i64 = lines
            .iter()
            .filter(|l| l["kind"] == "session" && l["sessionId"] == run["sessionId"])
            .map(|l| usd_to_micros(l["cost"].as_f64().expect("cost")))
            .sum();
        assert_eq!(usd_to_micros(run["usage"]["sessionCost"].as_f64().expect("sessionCost")), session, "{run}");
    }

    // Pages of one line follow each other to the same list.
    let (mut paged, mut query) = (Vec::new(), "?limit=1".to_owned());
    loop {
        let page = usage(&app, &key, &query).await;
        assert_eq!(page.status, 200, "{}", page.body);
        paged.extend(page.body["lines"].as_array().expect("lines").iter().cloned());
        match page.body["next"].as_str() {
            Some(next) => query = format!("?limit=1&cursor={next}"),
            None => break,
        }
        assert!(paged.len() <= lines.len(), "paging never ends");
    }
    assert_eq!(paged, lines);

    // Within a window, the caller's own only, and bad queries refused.
    let later = usage(&app, &key, "?since=2999-01-01T00:00:00Z").await;
    assert_eq!(later.body["lines"], json!([]), "{}", later.body);
    let earlier = usage(&app, &key, "?until=2000-01-01T00:00:00Z").await;
    assert_eq!(earlier.body["lines"], json!([]), "{}", earlier.body);
    assert_eq!(usage(&app, &other, "").await.body["lines"], json!([]));
    for bad in ["?since=yesterday", "?limit=0", "?limit=201", "?cursor=nope"] {
        usage(&app, &key, bad).await.assert_error(400, "INVALID_PARAMETER");
    }
    let anonymous = app.get("/usage").await;
    anonymous.assert_error(401, "UNAUTHORIZED");
}

async fn upload(app: &TestApp, key: &str, sid: &str, name: &str, bytes: usize) -> Reply {
    let url = format!("{}/sessions/{sid}/files", app.base);
    let r = app.client.post(url).query(&[("name", name)]).bearer_auth(key).body(vec![7u8; bytes]).send().await;
    let r = r.expect("upload");
    let status = r.status();
    Reply { status, headers: Default::default(), body: r.json().await.expect("JSON") }
}

#[tokio::test]
async fn files_past_a_users_storage_quota_are_refused_and_usage_shows_what_they_take() {
    let app = TestApp::spawn_with(|s| s.arg("storage-quota", "100KB")).await;
    let (key, other) = (app.key().await, app.key().await);
    let (first, second) = (app.start_session(&key, json!({})).await, app.start_session(&key, json!({})).await);
    assert_eq!(upload(&app, &key, &first, "a.bin", 60_000).await.status, 200);
    let storage = usage(&app, &key, "").await.body["storage"].clone();
    assert_eq!(storage, json!({ "usedBytes": 60_000, "quotaBytes": 100_000 }));

    // The quota is the user's, over all its sessions; another user has its own.
    let refused = upload(&app, &key, &second, "b.bin", 50_000).await;
    refused.assert_error(413, "STORAGE_QUOTA_EXCEEDED");
    assert!(refused.body["message"].as_str().is_some_and(|m| m.contains("GET /usage")), "{}", refused.body);
    assert_eq!(upload(&app, &other, &app.start_session(&other, json!({})).await, "b.bin", 50_000).await.status, 200);

    // Deleting a file makes room.
    let url = format!("{}/sessions/{first}/files/a.bin", app.base);
    let deleted = app.client.delete(url).bearer_auth(&key).send().await.expect("delete");
    assert_eq!(deleted.status().as_u16(), 200);
    assert_eq!(upload(&app, &key, &second, "b.bin", 50_000).await.status, 200);
    assert_eq!(usage(&app, &key, "").await.body["storage"]["usedBytes"], 50_000);
}
