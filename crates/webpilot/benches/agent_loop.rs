//! The model-free loop against the raw DevTools floor (prints a table, writes JSON, asserts nothing).
//! The same three steps (open the fixture's home page, click its "Pricing" link, read the title) are timed
//! on the same Chromium: as a planner task sent to a live session (`send-message`, answered inline), as a
//! `replayOf` of a model task and as a cache hit of that task (the last two without the model, and without
//! reading the title), and as bare DevTools calls through another session's `cdpURL` (navigate and wait for `load`, a mouse click
//! on the link's box and wait for `load`, evaluate `document.title`). Then 1, 4, 16 and 32 sessions each run the
//! planner task back to back for a while, and tasks per second are counted.
//! Run with `cargo bench -p webpilot --bench agent_loop`; the JSON goes to `target/bench/agent_loop.json`.
//! `WEBPILOT_BENCH_RUNS` sets the timed runs per side (default 40), `WEBPILOT_BENCH_LOAD_SECONDS` the length
//! of each load run (default 15 s).

mod common;

use clap::Parser;
use common::devtools::DevTools;
use common::percentile;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use webpilot::config::{ServeConfig, StoreConfig};
use webpilot_core::usage::usd_to_micros;
use webpilot_testkit::model::{element_index, last_observation};
use webpilot_testkit::{FixtureSite, Reply, ScriptedModel};

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    serve: ServeConfig,
}

/// A DevTools client on one page of a session, with `Page` events on.
struct Cdp(DevTools);

impl Cdp {
    async fn connect(url: &str) -> Cdp {
        let mut c = DevTools::attach(url).await;
        c.call("Page.enable", json!({})).await;
        Cdp(c)
    }

    /// Sends `method` and returns once both its answer and the page's next `load` event have arrived.
    async fn call_until_load(&mut self, method: &str, params: Value) {
        let id = self.0.send(method, params).await;
        let (mut answered, mut loaded) = (false, false);
        while !(answered && loaded) {
            let v = self.0.read().await;
            answered |= v["id"].as_u64() == Some(id);
            loaded |= v["method"] == "Page.loadEventFired";
        }
    }

    /// The three steps with bare DevTools calls.
    async fn steps(&mut self, home: &str) -> String {
        self.call_until_load("Page.navigate", json!({ "url": home })).await;
        let rect = self
            .0
            .call(
                "Runtime.evaluate",
                json!({ "expression": "(() => { const r = document.querySelector('a[href=\"/pricing\"]').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()", "returnByValue": true }),
            )
            .await;
        let (x, y) = (rect["result"]["value"][0].clone(), rect["result"]["value"][1].clone());
        let press = json!({ "type": "mousePressed", "x": x, "y": y, "button": "left", "clickCount": 1 });
        self.0.call("Input.dispatchMouseEvent", press).await;
        let release = json!({ "type": "mouseReleased", "x": x, "y": y, "button": "left", "clickCount": 1 });
        self.call_until_load("Input.dispatchMouseEvent", release).await;
        let title = self.0.call("Runtime.evaluate", json!({ "expression": "document.title" })).await;
        title["result"]["value"].as_str().unwrap_or_default().to_owned()
    }
}

struct Service {
    http: reqwest::Client,
    base: String,
    key: String,
}

impl Service {
    async fn post(&self, path: &str, body: Value) -> Value {
        let res = self.http.post(format!("{}{path}", self.base)).bearer_auth(&self.key).json(&body).send().await;
        res.expect("request").json::<Value>().await.expect("json")
    }

    async fn start_session(&self) -> Value {
        let started = self.post("/start/start-session", json!({})).await;
        assert_eq!(started["success"], true, "{started}");
        started
    }

    /// Runs the planner task in `session` and answers the reported title.
    async fn task(&self, session: &str, home: &str) -> String {
        let details = format!("open {home}; click \"Pricing\"; report the title");
        let done = self.new_task(session, json!({ "taskDetails": details })).await;
        done["taskId"]
            .as_str()
            .map(|_| done["result"]["data"]["message"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_default()
    }

    /// Sends a `newTask` with `fields` to `session` and answers the send-message answer once it completed.
    async fn new_task(&self, session: &str, fields: Value) -> Value {
        let mut msg = json!({ "actionType": "newTask", "newState": "start" });
        if let (Some(m), Some(f)) = (msg.as_object_mut(), fields.as_object()) {
            m.extend(f.clone());
        }
        let r = self.post("/start/send-message", json!({ "sessionId": session, "message": msg })).await;
        assert_eq!(r["result"]["type"], "task_completed", "{r}");
        r
    }
}

fn summary(name: &str, took: &mut [f64]) -> Value {
    took.sort_by(|a, b| a.total_cmp(b));
    let (p50, p95) = (percentile(took, 50.0), percentile(took, 95.0));
    println!("{name:<48} p50 {p50:>8.1} ms   p95 {p95:>8.1} ms   (n={})", took.len());
    json!({ "p50_ms": p50, "p95_ms": p95, "n": took.len() })
}

/// `sessions` live sessions each run the planner task back to back for `length`; tasks per second in all.
async fn load(svc: &Service, sessions: usize, home: &str, length: Duration) -> f64 {
    let mut ids = Vec::new();
    for _ in 0..sessions {
        ids.push(svc.start_session().await["sessionId"].as_str().expect("sessionId").to_owned());
    }
    let began = Instant::now();
    let deadline = began + length;
    let runs = ids.iter().map(|id| async move {
        let mut done = 0usize;
        while Instant::now() < deadline {
            svc.task(id, home).await;
            done += 1;
        }
        done
    });
    let done: usize = futures::future::join_all(runs).await.into_iter().sum();
    let rate = done as f64 / began.elapsed().as_secs_f64();
    for id in &ids {
        svc.post(
            "/start/send-message",
            json!({ "sessionId": id, "message": { "actionType": "state", "newState": "terminate" } }),
        )
        .await;
    }
    rate
}

/// A service on the fixture site, with the scripted model when `model` is given (else the planner).
async fn serve(
    site: &FixtureSite,
    model: Option<&ScriptedModel>,
    data: &std::path::Path,
) -> (webpilot::RunningApp, Service) {
    let allow = format!("127.0.0.1:{}", site.port());
    let mut argv = vec!["bench".to_owned(), "--egress-allow".into(), allow, "--listen".into(), "127.0.0.1:0".into()];
    for flag in ["--rate-limit=1000000", "--max-sessions=40", "--max-sessions-per-user=40"] {
        argv.push(flag.into());
    }
    if let Some(model) = model {
        for flag in ["--llm-provider=openai", "--llm-model=scripted"] {
            argv.push(flag.into());
        }
        argv.push(format!("--llm-base-url={}", model.base_url()));
    }
    let flags = Flags::parse_from(argv);
    let app = webpilot::start(&flags.serve, &StoreConfig::sqlite(data)).await.expect("start");
    let user = app.store.create_user("bench", usd_to_micros(100_000.0)).await.expect("user");
    let (_, key) = app.store.create_api_key(&user.id, "bench", None).await.expect("key");
    let svc = Service { http: reqwest::Client::new(), base: format!("http://{}", app.addr), key };
    (app, svc)
}

/// A model task's run recorded once (open the home page, click "Pricing", answer), to be replayed and hit in
/// the cache; answers its task id.
async fn record_model_run(svc: &Service, model: &ScriptedModel, session: &str, home: &str, details: &str) -> String {
    // Where the link is in the agent's observation of the home page.
    model.push(vec![Reply::call("navigate", json!({ "url": home })), Reply::done("seen")]);
    svc.new_task(session, json!({ "taskDetails": "look", "cache": "off" })).await;
    let observed = model.requests();
    let link = element_index(&last_observation(&observed[observed.len() - 1]), "Pricing").expect("the link");
    // The task starts on the home page (`startingUrl`), so the run is the floor's steps: open, click.
    model.push(vec![Reply::call("click", json!({ "index": link })), Reply::done("Opened Pricing")]);
    // From the same start page as every hit: the page is part of the cache's key.
    let first = svc.new_task(session, json!({ "taskDetails": details, "startingUrl": home })).await;
    first["taskId"].as_str().expect("taskId").to_owned()
}

#[tokio::main]
async fn main() {
    let runs: usize = std::env::var("WEBPILOT_BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(40);
    let seconds: u64 = std::env::var("WEBPILOT_BENCH_LOAD_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(15);
    let site = FixtureSite::start().await;
    let model = ScriptedModel::start(Vec::new()).await;
    let (data, model_data) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    let (app, svc) = serve(&site, None, data.path()).await;
    let (model_app, model_svc) = serve(&site, Some(&model), model_data.path()).await;
    let home = site.url("/");

    let planner_session = svc.start_session().await["sessionId"].as_str().expect("sessionId").to_owned();
    let model_session = model_svc.start_session().await["sessionId"].as_str().expect("sessionId").to_owned();
    let floor_session = svc.start_session().await;
    let mut cdp = Cdp::connect(floor_session["cdpURL"].as_str().expect("cdpURL")).await;
    let details = "open the home page and click Pricing";
    let recorded = record_model_run(&model_svc, &model, &model_session, &home, details).await;
    let replay = || {
        let fields = json!({ "taskDetails": "again", "replayOf": recorded, "startingUrl": home });
        model_svc.new_task(&model_session, fields)
    };
    let hit = || model_svc.new_task(&model_session, json!({ "taskDetails": details, "startingUrl": home }));
    // Warm every path up before measuring; the model is never asked again from here on.
    let asked = model.requests().len();
    for _ in 0..5 {
        assert_eq!(cdp.steps(&home).await, "Pricing");
        assert!(svc.task(&planner_session, &home).await.contains("Pricing"));
        replay().await;
        let cached = hit().await;
        assert_eq!(cached["result"]["data"]["cache"], "hit", "{cached}");
    }

    println!("== open a page, click a link (and read the title): one session, one run at a time ==");
    let mut took: [Vec<f64>; 4] = Default::default();
    for _ in 0..runs {
        let t = Instant::now();
        cdp.steps(&home).await;
        took[0].push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        svc.task(&planner_session, &home).await;
        took[1].push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        replay().await;
        took[2].push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        hit().await;
        took[3].push(t.elapsed().as_secs_f64() * 1000.0);
    }
    assert_eq!(model.requests().len(), asked, "a replay or a cache hit asked the model");
    let [floor, planner, replayed, cached] = &mut took;
    let floor_row = summary("raw DevTools through cdpURL (the floor)", floor);
    let floor_p50 = floor_row["p50_ms"].as_f64().unwrap_or(1.0);
    let mut rows = serde_json::Map::new();
    for (name, label, row) in [
        ("planner", "planner task (send-message, answered inline)", planner),
        ("replay", "replayOf a model task", replayed),
        ("cache_hit", "cache hit of a model task", cached),
    ] {
        let mut row = summary(label, row);
        let ratio = row["p50_ms"].as_f64().unwrap_or(0.0) / floor_p50;
        println!("{:<48} {ratio:.2}x the floor at p50", "");
        row["ratio_p50"] = json!(ratio);
        rows.insert(name.into(), row);
    }
    drop(cdp);
    for s in [&planner_session, floor_session["sessionId"].as_str().unwrap_or_default()] {
        svc.post(
            "/start/send-message",
            json!({ "sessionId": s, "message": { "actionType": "state", "newState": "terminate" } }),
        )
        .await;
    }
    model_app.shutdown().await;

    println!("== tasks per second, every session running the planner task back to back for {seconds} s ==");
    let mut rates = serde_json::Map::new();
    for sessions in [1, 4, 16, 32] {
        let rate = load(&svc, sessions, &home, Duration::from_secs(seconds)).await;
        println!("{sessions:>2} sessions: {rate:>6.2} tasks/s");
        rates.insert(sessions.to_string(), json!(rate));
    }
    let report = json!({ "floor": floor_row, "model_free": rows, "tasks_per_second": rates });
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    let _ = std::fs::create_dir_all(&out);
    let _ = std::fs::write(out.join("agent_loop.json"), serde_json::to_string_pretty(&report).unwrap_or_default());
    app.shutdown().await;
}
