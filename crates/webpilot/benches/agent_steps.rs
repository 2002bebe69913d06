//! Benchmark (prints numbers, asserts nothing): observation and prompt size in o200k tokens per fixture page
//! (`WEBPILOT_BENCH_SHOW=1` prints the observations too). Run with `cargo bench -p webpilot --bench agent_steps`;
//! latency, memory and load are in the `service` benchmark.

use clap::Parser;
use serde_json::{json, Value};
use std::time::Duration;
use webpilot::config::{ServeConfig, StoreConfig};
use webpilot_core::usage::usd_to_micros;
use webpilot_testkit::model::{content_text, last_observation};
use webpilot_testkit::{FixtureSite, Reply, ScriptedModel};

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    serve: ServeConfig,
}

#[tokio::main]
async fn main() {
    let site = FixtureSite::start().await;
    let model = ScriptedModel::start(Vec::new()).await;
    let data = tempfile::tempdir().expect("tempdir");
    let allow_site = format!("127.0.0.1:{}", site.port());
    let flags = Flags::parse_from([
        "bench",
        "--egress-allow",
        &allow_site,
        "--listen",
        "127.0.0.1:0",
        "--rate-limit",
        "100000",
        "--max-sessions",
        "2",
        "--llm-provider",
        "openai",
        "--llm-model",
        "scripted",
        "--llm-base-url",
        &model.base_url(),
    ]);
    let app = webpilot::start(&flags.serve, &StoreConfig::sqlite(data.path())).await.expect("start");
    let base = format!("http://{}", app.addr);
    let user = app.store.create_user("bench", usd_to_micros(1000.0)).await.expect("user");
    let (_, key) = app.store.create_api_key(&user.id, "bench", None).await.expect("key");
    let client = reqwest::Client::new();
    let post = |path: &str, body: Value| {
        let req = client.post(format!("{base}{path}")).bearer_auth(&key).json(&body);
        async move { req.send().await.expect("request").json::<Value>().await.expect("json") }
    };

    // o200k_base is the tokenizer of the GPT-4o and o-series models.
    let bpe = tiktoken_rs::o200k_base().expect("o200k_base");
    let tokens = |text: &str| bpe.encode_with_special_tokens(text).len();
    println!("== observation size per page (o200k_base tokens, counted with tiktoken-rs) ==");
    println!("{:<22} {:>9} {:>11} {:>11} {:>12}", "page", "elements", "page chars", "page tokens", "turn tokens");
    for path in ["/", "/pricing", "/form", "/login", "/counter", "/shop", "/shop?layout=frames", "/shop/xo"] {
        let before = model.requests().len();
        model.push(vec![Reply::call("navigate", json!({ "url": site.url(path) })), Reply::done("ok")]);
        let r = post("/start/run-task", json!({ "taskDetails": "measure" })).await;
        assert_eq!(r["status"], "complete", "{r}");
        let reqs = model.requests();
        let turn = &reqs[before + 1];
        let obs = last_observation(turn);
        let page = obs.split_once("\nPage:\n").map_or("", |(_, p)| p);
        let elements = page.matches('[').count();
        let turn_text: String = turn["messages"].as_array().into_iter().flatten().map(content_text).collect();
        let turn_tokens = tokens(&turn_text) + tokens(&turn["tools"].to_string());
        println!("{path:<22} {elements:>9} {:>11} {:>11} {turn_tokens:>12}", page.len(), tokens(page));
        if std::env::var_os("WEBPILOT_BENCH_SHOW").is_some() {
            println!("{obs}");
        }
    }
    let first = &model.requests()[0];
    let system = content_text(&first["messages"][0]);
    let tools = first["tools"].to_string();
    println!(
        "system prompt: {} tokens; tool definitions (as JSON): {} tokens; together {} (sent with every turn)",
        tokens(&system),
        tokens(&tools),
        tokens(&system) + tokens(&tools)
    );

    tokio::time::sleep(Duration::from_millis(100)).await;
    app.shutdown().await;
}
