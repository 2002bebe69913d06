//! The service benchmark (prints a table, writes JSON, asserts nothing): session start cold and warm
//! beside the raw DevTools floor, run-task latency, PSS per idle session, GET throughput under load and
//! model tokens per agent step. Run with `cargo bench -p webpilot --bench service`; the JSON goes to
//! `target/bench/service.json`. `WEBPILOT_BENCH_LOAD_SECONDS` shortens the load runs (default 20).

mod common;

use clap::Parser;
use common::load::{closed_loop, open_loop, LoadResult};
use common::{percentile, pss_tree_kib};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use webpilot::config::{ServeConfig, StoreConfig};
use webpilot::RunningApp;
use webpilot_core::usage::usd_to_micros;
use webpilot_testkit::model::content_text;
use webpilot_testkit::{FixtureSite, Reply, ScriptedModel};

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    serve: ServeConfig,
}

/// Sessions started per start-session figure.
const STARTS: usize = 50;

/// A service on a random port with one user, and a client speaking its JSON.
struct Service {
    app: RunningApp,
    base: String,
    key: String,
    client: reqwest::Client,
    _data: tempfile::TempDir,
}

impl Service {
    async fn boot(site: &FixtureSite, model: &ScriptedModel, args: &[&str]) -> Service {
        let allow = format!("127.0.0.1:{}", site.port());
        let base_url = model.base_url();
        let mut argv = vec!["bench", "--egress-allow", &allow, "--listen", "127.0.0.1:0", "--rate-limit", "1000000"];
        argv.extend(["--max-sessions-per-user", "100", "--llm-provider", "openai", "--llm-model", "scripted"]);
        argv.extend(["--llm-base-url", &base_url]);
        argv.extend_from_slice(args);
        let flags = Flags::parse_from(argv);
        let data = tempfile::tempdir().expect("tempdir");
        let app = webpilot::start(&flags.serve, &StoreConfig::sqlite(data.path())).await.expect("start");
        let user = app.store.create_user("bench", usd_to_micros(100_000.0)).await.expect("user");
        let (_, key) = app.store.create_api_key(&user.id, "bench", None).await.expect("key");
        app.manager.pool().warm_up().await.expect("chromium");
        let base = format!("http://{}", app.addr);
        Service { app, base, key, client: reqwest::Client::new(), _data: data }
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let req = self.client.post(format!("{}{path}", self.base)).bearer_auth(&self.key).json(&body);
        req.send().await.expect("request").json::<Value>().await.expect("json")
    }

    async fn terminate(&self, sid: &str) {
        let msg = json!({ "sessionId": sid, "message": { "actionType": "state", "newState": "terminate" } });
        self.post("/start/send-message", msg).await;
    }

    /// Milliseconds each of `n` start-sessions took (each session is terminated before the next;
    /// `before` runs ahead of each start, untimed).
    async fn starts(&self, n: usize, before: impl AsyncFn()) -> Vec<f64> {
        let mut took = Vec::new();
        for _ in 0..n {
            before().await;
            let t = Instant::now();
            let s = self.post("/start/start-session", json!({})).await;
            took.push(ms(t.elapsed()));
            self.terminate(s["sessionId"].as_str().expect("sessionId")).await;
        }
        took
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// p50, p95 and the sample count of `v`.
fn summary(mut v: Vec<f64>) -> Value {
    v.sort_by(|a, b| a.total_cmp(b));
    json!({ "p50_ms": percentile(&v, 50.0), "p95_ms": percentile(&v, 95.0), "n": v.len() })
}

fn row(name: &str, s: &Value) {
    println!(
        "{name:<58} p50 {:>8.1} ms   p95 {:>8.1} ms   (n={})",
        s["p50_ms"].as_f64().unwrap_or(0.0),
        s["p95_ms"].as_f64().unwrap_or(0.0),
        s["n"]
    );
}

fn load_row(name: &str, r: &LoadResult) {
    println!(
        "{name:<40} {:>7.0} req/s   p50 {:>6.2} ms   p99 {:>6.2} ms   max {:>6.1} ms   errors {}   late {}",
        r.rps, r.p50_ms, r.p99_ms, r.max_ms, r.errors, r.late
    );
}

#[tokio::main]
async fn main() {
    let site = FixtureSite::start().await;
    let model = ScriptedModel::start(Vec::new()).await;
    let mut report = serde_json::Map::new();
    let load_secs: u64 = std::env::var("WEBPILOT_BENCH_LOAD_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);

    println!("== session start ({STARTS} sessions one after another, HTTP client on loopback) ==");
    let cold = Service::boot(&site, &model, &["--warm-contexts", "0", "--max-sessions", "4"]).await;
    let pool = cold.app.manager.pool().clone();
    let mut floor = Vec::new();
    for _ in 0..STARTS {
        floor.push(ms(pool.bare_context_round_trip().await.expect("bare context")));
    }
    let floor = summary(floor);
    let cold_starts = summary(cold.starts(STARTS, async || {}).await);
    cold.app.shutdown().await;
    let warm = Service::boot(&site, &model, &["--warm-contexts", "2", "--max-sessions", "4"]).await;
    let pool = warm.app.manager.pool().clone();
    // Each start finds a warm context ready (a service that is not starting sessions faster than it refills).
    let warm_starts = summary(warm.starts(STARTS, async || wait_warm(&pool).await).await);
    // Back to back: the next start comes as soon as the previous session is terminated.
    let burst_starts = summary(warm.starts(STARTS, async || {}).await);
    row("DevTools floor: bare context + about:blank page", &floor);
    row("start-session, cold (--warm-contexts 0)", &cold_starts);
    row("start-session, warm (a context ready)", &warm_starts);
    row("start-session, warm pool, back to back", &burst_starts);
    report.insert(
        "session_start".into(),
        json!({ "devtools_floor": floor, "cold": cold_starts, "warm": warm_starts, "warm_back_to_back": burst_starts }),
    );

    println!("\n== run-task (a new session each, scripted model, the session closed at the end) ==");
    let one_page = || vec![Reply::call("navigate", json!({ "url": site.url("/pricing") })), Reply::done("ok")];
    let five_steps = || {
        vec![
            Reply::call("navigate", json!({ "url": site.url("/form") })),
            Reply::call("type", json!({ "index": "@Your name", "text": "Ada Lovelace" })),
            Reply::call("type", json!({ "index": "@Email", "text": "ada@example.com" })),
            Reply::call("type", json!({ "index": "@Message", "text": "Hello from the benchmark" })),
            Reply::call("click", json!({ "index": "@Send" })),
            Reply::done("sent"),
        ]
    };
    let one = summary(run_tasks(&warm, &model, &pool, 20, one_page).await);
    let first_request = model.requests().len();
    let five = summary(run_tasks(&warm, &model, &pool, 10, five_steps).await);
    row("one page (navigate, done: 2 model turns)", &one);
    row("5 steps (navigate, 3 x type, click, done: 6 turns)", &five);
    let tokens = tokens_per_step(&model.requests()[first_request..]);
    println!(
        "agent tokens per step (o200k_base, whole request): mean {:.0}, max {:.0}, over {} steps",
        tokens["mean"].as_f64().unwrap_or(0.0),
        tokens["max"].as_f64().unwrap_or(0.0),
        tokens["steps"]
    );
    report.insert("run_task".into(), json!({ "one_page": one, "five_steps": five }));
    report.insert("tokens_per_step".into(), tokens);

    println!("\n== GET throughput ({load_secs} s each, 200 connections) ==");
    model.push(one_page());
    let done = warm.post("/start/run-task", json!({ "taskDetails": "poll me", "terminateOnCompletion": false })).await;
    let (sid, tid) = (done["sessionId"].as_str().unwrap_or_default(), done["taskId"].as_str().unwrap_or_default());
    let length = Duration::from_secs(load_secs);
    let mut load = serde_json::Map::new();
    for (name, path) in [("task", format!("/task/{sid}/{tid}")), ("health", "/start/health".to_owned())] {
        let url = format!("{}{path}", warm.base);
        let u = url.clone();
        let full = tokio::task::spawn_blocking(move || closed_loop(u, 200, length)).await.expect("load");
        let paced = tokio::task::spawn_blocking(move || open_loop(url, 200, 1000.0, length)).await.expect("load");
        load_row(&format!("GET {name}: as fast as it answers"), &full);
        load_row(&format!("GET {name}: 1,000 requests/s"), &paced);
        load.insert(name.into(), json!({ "closed_loop": full, "at_1000_rps": paced }));
    }
    report.insert("get_load".into(), Value::Object(load));
    warm.app.shutdown().await;

    println!("\n== memory: PSS of the service process and its Chromium trees (idle sessions on /pricing) ==");
    let mem = Service::boot(&site, &model, &["--warm-contexts", "0", "--max-sessions", "25"]).await;
    let me = std::process::id();
    let settle = || tokio::time::sleep(Duration::from_secs(3));
    settle().await;
    let base_kib = pss_tree_kib(me);
    let mut memory = vec![json!({ "sessions": 0, "pss_mib": base_kib / 1024 })];
    println!("{:>9} {:>10} {:>18}", "sessions", "PSS MiB", "MiB per session");
    println!("{:>9} {:>10} {:>18}", 0, base_kib / 1024, "");
    let mut open = 0;
    for target in [1usize, 10, 25] {
        while open < target {
            let s = mem.post("/start/start-session", json!({ "startingUrl": site.url("/pricing") })).await;
            assert!(s["sessionId"].is_string(), "{s}");
            open += 1;
        }
        settle().await;
        let kib = pss_tree_kib(me);
        let per = (kib.saturating_sub(base_kib)) as f64 / 1024.0 / target as f64;
        println!("{target:>9} {:>10} {per:>18.1}", kib / 1024);
        memory.push(json!({ "sessions": target, "pss_mib": kib / 1024, "mib_per_session": per }));
    }
    report.insert("memory".into(), Value::Array(memory));
    mem.app.shutdown().await;

    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench/service.json");
    if let Some(dir) = out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match std::fs::write(&out, serde_json::to_string_pretty(&Value::Object(report)).unwrap_or_default()) {
        Ok(()) => println!("\nJSON written to {}", out.display()),
        Err(e) => println!("\nthe JSON could not be written to {}: {e}", out.display()),
    }
}

async fn wait_warm(pool: &webpilot_browser::BrowserPool) {
    while pool.stats().warm == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Milliseconds each of `n` run-tasks took, each with the replies `script` gives.
async fn run_tasks(
    svc: &Service,
    model: &ScriptedModel,
    pool: &webpilot_browser::BrowserPool,
    n: usize,
    script: impl Fn() -> Vec<Reply>,
) -> Vec<f64> {
    let mut took = Vec::new();
    for _ in 0..n {
        wait_warm(pool).await;
        model.push(script());
        let t = Instant::now();
        let r = svc.post("/start/run-task", json!({ "taskDetails": "bench" })).await;
        took.push(ms(t.elapsed()));
        assert_eq!(r["status"], "complete", "{r}");
    }
    took
}

/// o200k_base tokens of each model request (messages and tool definitions).
fn tokens_per_step(requests: &[Value]) -> Value {
    let bpe = tiktoken_rs::o200k_base().expect("o200k_base");
    let counts: Vec<f64> = requests
        .iter()
        .map(|r| {
            let text: String = r["messages"].as_array().into_iter().flatten().map(content_text).collect();
            (bpe.encode_with_special_tokens(&text).len()
                + bpe.encode_with_special_tokens(&r["tools"].to_string()).len()) as f64
        })
        .collect();
    let mean = counts.iter().sum::<f64>() / counts.len().max(1) as f64;
    json!({ "steps": counts.len(), "mean": mean, "max": counts.iter().copied().fold(0.0, f64::max) })
}
