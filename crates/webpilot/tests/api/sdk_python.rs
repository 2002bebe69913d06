//! The Python SDK (`sdk/python`, package `webpilot`) against the real service, through scripts that use
//! only the SDK (`tests/clients/sdk_python_*.py`): a recorded session driven by the scripted model with its
//! events, pause / resume / stop, a guardrail, the recording, a file and verified webhooks; the async client
//! on the offline planner with manual input and a 429 retried after `Retry-After`; and `mypy --strict`.

use crate::agent::{tool_results, with_model};
use crate::clients::run_python;
use crate::helpers::{free_port, Settings, TestApp};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::time::Duration;
use webpilot_testkit::site::files::REPORT_CSV;
use webpilot_testkit::Reply;

/// The SDK's source folder, put first on `PYTHONPATH` so the scripts import this checkout's SDK.
fn sdk_src() -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sdk/python/src");
    root.canonicalize().expect("sdk/python/src exists").display().to_string()
}

/// Adds `extra` to the `--egress-allow` the harness set for its fixture site.
fn also_allow(mut s: Settings, extra: &str) -> Settings {
    let i = s.args.iter().position(|a| a == "--egress-allow").expect("the harness allows its site");
    s.args[i + 1] = format!("{},{extra}", s.args[i + 1]);
    s
}

async fn run_sdk_script(name: &str, app: &TestApp, key: &str, extra: &[(&str, &str)]) -> Value {
    let (src, site) = (sdk_src(), app.site.url(""));
    let mut env = vec![
        ("PYTHONPATH", src.as_str()),
        ("WEBPILOT_BASE_URL", app.base.as_str()),
        ("WEBPILOT_API_KEY", key),
        ("WP_SITE", site.trim_end_matches('/')),
    ];
    env.extend_from_slice(extra);
    let out = run_python(name, &[], &env, Duration::from_secs(120)).await;
    eprintln!("{name}: {out}");
    assert_eq!(out["ok"], true, "{out}");
    out
}

#[tokio::test]
async fn the_python_sdk_drives_a_recorded_session_with_events_files_guardrails_and_verified_webhooks() {
    let hook_port = free_port();
    let allow = format!("127.0.0.1:{hook_port}");
    // A short inline wait, so `Session.run` polls past it as it would past the real 50 s.
    let (app, model) = with_model(|s| also_allow(s, &allow).arg("task-wait-ms", 300)).await;
    model.push(vec![
        // run(): the model downloads the report.
        Reply::think("The report is linked from this page.", "click", json!({ "index": "@Download report" })),
        Reply::done("Downloaded the report."),
        // pause / resume: the first turn is still thinking when the pause arrives.
        Reply::delayed(2000, Reply::call("navigate", json!({ "url": app.site.url("/counter") }))),
        Reply::done("Opened the counter."),
        // stop: dropped in flight.
        Reply::delayed(30_000, Reply::done("too late")),
        // A guardrail, answered through the SDK.
        Reply::call("ask_human", json!({ "question": "Which plan do you want?" })),
        Reply::done("Chose the plan."),
    ]);
    let key = app.key().await;
    let sha = hex::encode(Sha256::digest(REPORT_CSV));
    let port = hook_port.to_string();
    let out = run_sdk_script(
        "sdk_python_session.py",
        &app,
        &key,
        &[("WP_HOOK_PORT", port.as_str()), ("WP_REPORT_SHA256", sha.as_str())],
    )
    .await;

    // What the service saw matches what the script reported.
    assert!(app.site.was_requested(None, "/files/report.csv"), "the model's click downloaded the report");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 7, "one request per scripted reply: {out}");
    assert!(
        tool_results(&reqs[6]).contains(&"The human answered: Pro, please".to_owned()),
        "the SDK's guardrail answer reached the model: {:?}",
        tool_results(&reqs[6])
    );
    let sid = out["sessionId"].as_str().expect("sessionId");
    assert_eq!(app.end_reason(sid).await.as_deref(), Some("terminated"), "the context manager terminated it");
    app.stop().await;
}

#[tokio::test]
async fn the_async_python_sdk_runs_planner_tasks_takes_input_and_retries_a_429_after_retry_after() {
    // The offline planner (no model), and a rate limit the script can reach quickly.
    let app =
        TestApp::spawn_with(|s| s.arg("task-wait-ms", 300).arg("rate-limit", 20).arg("rate-window-ms", 2000)).await;
    let key = app.key().await;
    let out = run_sdk_script("sdk_python_async.py", &app, &key, &[]).await;
    let retried = &out["retried"];
    assert_eq!(retried["statuses"], json!([429, 200]), "{out}");
    let (after, waited) = (retried["retryAfter"].as_f64().unwrap_or(0.0), retried["waited"].as_f64().unwrap_or(0.0));
    assert!(after >= 1.0 && waited >= after, "waited {waited} s for a Retry-After of {after} s");
    app.stop().await;
}

#[tokio::test]
async fn the_python_sdk_passes_mypy_strict() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cache = tempfile::tempdir().expect("tempdir");
    // The Python blocks of docs/examples.md, as one module, so the documented calls are the SDK's.
    let examples = cache.path().join("docs_examples.py");
    std::fs::write(&examples, crate::doc_examples::python_program()).expect("write the docs' examples");
    let mut cmd = tokio::process::Command::new("python3");
    cmd.current_dir(&repo)
        .args(["-m", "mypy", "--strict", "--config-file", "sdk/python/pyproject.toml", "--cache-dir"])
        .arg(cache.path())
        // The SDK, the two scripts that use it and the docs' examples: its public API is typed for its callers too.
        .args([
            "sdk/python/src/webpilot",
            "crates/webpilot/tests/clients/sdk_python_session.py",
            "crates/webpilot/tests/clients/sdk_python_async.py",
        ])
        .arg(&examples)
        .env("MYPYPATH", sdk_src())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("mypy finishes within 120 s")
        .expect("python3 -m mypy runs (pip install mypy)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "mypy --strict: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("Success: no issues found"), "{stdout}");
}
