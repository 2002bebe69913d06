//! The TypeScript SDK (`sdk/typescript`) end to end: compiled with `tsc --strict` together with its test
//! program (`sdk/typescript/test/e2e.ts`), which drives two real services through the SDK alone: one with the
//! scripted model (a recorded session, typed events, pause / resume / stop, a file, a webhook verified by the
//! SDK's helper, `await using`), one with the offline planner and a tight rate limit (manual input, a
//! guardrail, run-task, a page's download, a 429 retried after `Retry-After`); then the same compiled SDK in
//! a web page of Chromium, with no Node (`test/browser.ts`, through `clients/sdk_browser.py`), and under Deno
//! (`test/deno.ts`). Also checks that the SDK's
//! types, generated from `/openapi.json`, are those the service documents now.

use crate::agent::with_model;
use crate::helpers::{free_port, TestApp};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;
use webpilot_testkit::Reply;

fn sdk_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sdk/typescript")
}

/// Runs `node <args>` in the SDK's folder, at most `limit`.
async fn node(args: &[&str], limit: Duration) -> Output {
    let mut cmd = tokio::process::Command::new("node");
    cmd.current_dir(sdk_dir()).args(args).kill_on_drop(true);
    tokio::time::timeout(limit, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("node {args:?} did not finish within {limit:?}"))
        .expect("node runs")
}

fn assert_ok(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `tsc --strict` (the SDK's tsconfig) over the SDK, its test program and the docs' examples, into `dist-test/`.
async fn compile() {
    let tsc = sdk_dir().join("node_modules/typescript/bin/tsc");
    assert!(tsc.exists(), "the SDK's dependencies are missing: run `npm install --prefix sdk/typescript`");
    let tsc = tsc.to_string_lossy().into_owned();
    // The TypeScript blocks of docs/examples.md, as one module beside the test program (gitignored), so the
    // documented calls are the SDK's.
    let examples = sdk_dir().join("test/docs_examples.ts");
    std::fs::write(&examples, crate::doc_examples::typescript_program()).expect("write the docs' examples");
    let out = node(&[&tsc, "-p", "tsconfig.test.json", "--strict"], Duration::from_secs(120)).await;
    assert_ok("tsc --strict", &out);
    // Nothing Node-only is imported when the SDK loads, so it bundles for a browser.
    for entry in std::fs::read_dir(sdk_dir().join("dist-test/src")).expect("compiled SDK").flatten() {
        let code = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for node_only in ["from \"node:", "import(\"node:", "require("] {
            assert!(!code.contains(node_only), "{} loads Node-only code: {node_only}", entry.path().display());
        }
    }
}

/// The types openapi-typescript generates from the running service equal the checked-in ones.
async fn generated_types_are_current(base: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let fresh = dir.path().join("openapi.ts");
    let bin = sdk_dir().join("node_modules/openapi-typescript/bin/cli.js").to_string_lossy().into_owned();
    let url = format!("{base}/openapi.json");
    let out = node(&[&bin, &url, "-o", &fresh.to_string_lossy()], Duration::from_secs(60)).await;
    assert_ok("openapi-typescript", &out);
    let fresh = std::fs::read_to_string(&fresh).expect("generated types");
    let kept = std::fs::read_to_string(sdk_dir().join("src/generated/openapi.ts")).expect("checked-in types");
    assert!(
        fresh == kept,
        "sdk/typescript/src/generated/openapi.ts is not what the service documents now: regenerate it with \
         `WEBPILOT_OPENAPI=<base>/openapi.json npm run generate --prefix sdk/typescript`"
    );
}

#[tokio::test]
async fn the_typescript_sdk_drives_the_service_end_to_end() {
    let hook_port = free_port();
    let (model_app, model) = with_model(|s| {
        let i = s.args.iter().position(|a| a == "--egress-allow").expect("the harness allows its site");
        let mut s = s;
        s.args[i + 1] = format!("{},127.0.0.1:{hook_port}", s.args[i + 1]);
        s
    })
    .await;
    model.push(vec![
        Reply::think("I will read the page.", "find", json!({})),
        // The second call takes a while: the test pauses and resumes the task meanwhile.
        Reply::delayed(1500, Reply::done("The title is Fixture Home.")),
        Reply::think("Let me think.", "find", json!({})),
        // Hangs until the test stops the task.
        Reply::delayed(30_000, Reply::done("too late")),
    ]);
    let planner = TestApp::spawn_with(|s| s.arg("rate-limit", 10).arg("rate-window-ms", 3000)).await;
    let (model_key, planner_key) = (model_app.key().await, planner.key().await);
    let site = |app: &TestApp| app.site.url("/").trim_end_matches('/').to_owned();
    let config = json!({
        "model": { "base": model_app.base, "key": model_key, "site": site(&model_app) },
        "planner": { "base": planner.base, "key": planner_key, "site": site(&planner) },
        "hookPort": hook_port,
    });
    let ((), ()) = tokio::join!(compile(), generated_types_are_current(&planner.base));

    let out = node(&["dist-test/test/e2e.js", &config.to_string()], Duration::from_secs(90)).await;
    assert_ok("the SDK's end-to-end program", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|_| panic!("no JSON summary: {stdout}"));
    assert_eq!(summary["ok"], true, "{summary}");

    // What the program saw matches what the services did.
    let sid = summary["model"]["sessionId"].as_str().expect("sessionId");
    // Two turns of the first task; the stopped one made one, or two when the stop came after its second
    // call began.
    let reqs = model.requests();
    assert!((3..=4).contains(&reqs.len()), "{} model calls", reqs.len());
    let asked = |i: usize| webpilot_testkit::model::content_text(&reqs[i]["messages"][1]);
    assert!(asked(0).contains("Report the page title") && asked(1).contains("Report the page title"));
    assert!(asked(2).contains("Think for a long time"), "{}", asked(2));
    assert_eq!(model_app.end_reason(sid).await.as_deref(), Some("terminated"));
    assert!(summary["model"]["videoBytes"].as_u64().unwrap_or(0) > 100, "{summary}");
    let retry_after = summary["planner"]["retryAfter"].as_u64().unwrap_or(0);
    assert!((1..=3).contains(&retry_after), "{summary}");
    assert!(summary["planner"]["waitedMs"].as_u64().unwrap_or(0) >= retry_after * 1000, "{summary}");
    assert!(planner.site.was_requested(None, "/files/report.csv"), "the planner downloaded the report");

    // The same compiled SDK in a web page, with no Node: fetch, socket.io-client's browser build, WebCrypto.
    let sdk = sdk_dir().to_string_lossy().into_owned();
    let page = crate::clients::run_python(
        "sdk_browser.py",
        &[&planner.base, &planner_key, &site(&planner), &sdk],
        &[],
        Duration::from_secs(90),
    )
    .await;
    let summary = &page["outcome"]["summary"];
    assert_eq!(page["errors"], json!([]), "{page}");
    assert_eq!(page["nodeGlobals"], false, "{page}");
    assert_eq!(summary["answer"], "Fixture Home", "{page}");
    assert_eq!(summary["completedEvent"], "task_completed", "{page}");
    assert_eq!((&summary["listed"], &summary["history"]), (&json!(true), &json!(["complete"])), "{page}");
    assert_eq!(summary["refused"], json!({ "code": "INVALID_API_KEY", "status": 401 }), "{page}");
    assert_eq!(
        (&summary["verified"], &summary["forged"]),
        (&json!("task.completed"), &json!("WEBHOOK_VERIFICATION_FAILED"))
    );
    let browser_sid = summary["sessionId"].as_str().expect("the page's session");
    assert_eq!(planner.end_reason(browser_sid).await.as_deref(), Some("terminated"));

    // And under Deno: its fetch and WebCrypto, socket.io-client resolved from the SDK's node_modules.
    let config = json!({ "base": planner.base, "key": planner_key, "site": site(&planner) }).to_string();
    let mut deno = tokio::process::Command::new("deno");
    deno.current_dir(sdk_dir()).kill_on_drop(true);
    deno.args(["run", "--no-lock", "--allow-net", "--allow-read", "--allow-env", "dist-test/test/deno.js", &config]);
    let out = tokio::time::timeout(Duration::from_secs(60), deno.output()).await.expect("deno within 60 s");
    let out = out.expect("deno runs: it comes with crates/webpilot/tests/python-requirements.txt");
    assert_ok("the SDK under Deno", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ran: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("Deno's JSON summary");
    let summary = &ran["summary"];
    assert!(ran["deno"].as_str().is_some_and(|v| v.starts_with("2.")), "{ran}");
    assert_eq!(summary["answer"], "Fixture Home", "{ran}");
    assert_eq!((&summary["completedEvent"], &summary["listed"]), (&json!("task_completed"), &json!(true)), "{ran}");
    assert_eq!(summary["refused"], json!({ "code": "INVALID_API_KEY", "status": 401 }), "{ran}");
    assert_eq!(
        (&summary["verified"], &summary["forged"]),
        (&json!("task.completed"), &json!("WEBHOOK_VERIFICATION_FAILED"))
    );
    let deno_sid = summary["sessionId"].as_str().expect("Deno's session");
    assert_eq!(planner.end_reason(deno_sid).await.as_deref(), Some("terminated"));
    model_app.stop().await;
    planner.stop().await;
}
