//! `/metrics` in the Prometheus text format: unauthenticated on the main listener by default, or only
//! on its own address with `--metrics-listen`; it counts what happened (sessions, tasks, refusals).

use crate::helpers::TestApp;
use serde_json::json;

/// The value of the first sample line that starts with `series` (name and labels), if any.
pub(crate) fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))?.rsplit(' ').next()?.parse().ok()
}

pub(crate) async fn scrape(url: &str) -> (u16, String, String) {
    let r = reqwest::get(url).await.expect("scrape");
    let status = r.status().as_u16();
    let kind = r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    (status, kind, r.text().await.expect("body"))
}

#[tokio::test]
async fn metrics_count_sessions_tasks_and_refusals() {
    let app = TestApp::spawn_with(|s| s.arg("rate-limit", 4)).await;
    let key = app.key().await;
    let steps = format!("open {}, report the title", app.site.url("/pricing"));
    let done = app.post("/start/run-task", &key, json!({ "taskDetails": steps })).await;
    assert_eq!(done.body["status"], "complete", "{}", done.body);
    app.start_session(&key, json!({})).await;
    for _ in 0..3 {
        app.post("/start/start-session", &key, json!({ "taskDetails": "" })).await;
    }
    let (status, kind, text) = scrape(&format!("{}/metrics", app.base)).await;
    assert_eq!(status, 200);
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    assert!(sample(&text, "webpilot_tasks_total{outcome=\"complete\"}").is_some_and(|v| v >= 1.0), "{text}");
    assert!(sample(&text, "webpilot_sessions_open").is_some_and(|v| v >= 1.0), "{text}");
    assert_eq!(sample(&text, "webpilot_pool_capacity"), Some(3.0), "{text}");
    assert!(sample(&text, "webpilot_rate_limited_total").is_some_and(|v| v >= 1.0), "{text}");
    assert!(sample(&text, "webpilot_session_start_seconds_count").is_some_and(|v| v >= 2.0), "{text}");
    assert!(text.contains("webpilot_session_start_seconds_bucket{le=\"0.25\"}"), "{text}");
    assert!(sample(&text, "webpilot_task_duration_seconds_count").is_some_and(|v| v >= 1.0), "{text}");
    assert!(text.contains("webpilot_model_tokens_total{kind=\"input\"}"), "{text}");
    app.stop().await;
}

#[tokio::test]
async fn metrics_can_have_a_listener_of_their_own() {
    let app = TestApp::spawn_with(|s| s.arg("metrics-listen", "127.0.0.1:0")).await;
    let at = app.app().metrics_addr.expect("a metrics address");
    assert_eq!(scrape(&format!("{}/metrics", app.base)).await.0, 404, "not on the main listener");
    let (status, _, text) = scrape(&format!("http://{at}/metrics")).await;
    assert_eq!(status, 200);
    assert!(sample(&text, "webpilot_sessions_open") == Some(0.0), "{text}");
    app.stop().await;
}
