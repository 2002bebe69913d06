//! The DevTools relay's overhead (prints a table, writes JSON, asserts nothing): `Runtime.evaluate("1+1")`
//! round trips (p50, p99) and page screenshots per second, through a session's `cdpURL` beside a client
//! connected straight to a Chromium of its own (same binary and flags, `--remote-debugging-port`, no
//! relay). Run with `cargo bench -p webpilot --bench cdp_relay`; the JSON goes to
//! `target/bench/cdp_relay.json`. `WEBPILOT_BENCH_EVALS` sets the round trips per side (default 2000). Then a
//! noisy neighbour: another tenant's client floods its connection and never reads, while the first tenant's
//! round trips are timed and the service's memory is sampled.

mod common;

use common::devtools::DevTools;
use common::percentile;
use futures::SinkExt;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_tungstenite::tungstenite::Message;
use webpilot::config::{ServeConfig, StoreConfig};
use webpilot_core::usage::usd_to_micros;
use webpilot_testkit::FixtureSite;

use clap::Parser;

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    serve: ServeConfig,
}

const SCREENSHOTS: usize = 100;

/// A sequential DevTools client attached to one page.
struct Client(DevTools);

impl Client {
    async fn connect(url: &str, page_url: &str) -> Client {
        let mut c = DevTools::attach(url).await;
        c.call("Page.navigate", json!({ "url": page_url })).await;
        Client(c)
    }

    /// Milliseconds per `Runtime.evaluate("1+1")` round trip, `n` of them one after another.
    async fn evals(&mut self, n: usize) -> Vec<f64> {
        let mut took = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let r = self.0.call("Runtime.evaluate", json!({ "expression": "1+1" })).await;
            took.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(r["result"]["value"], 2);
        }
        took.sort_by(|a, b| a.total_cmp(b));
        took
    }

    /// Screenshots (PNG, the page's viewport) per second.
    async fn screenshots(&mut self) -> f64 {
        let t = Instant::now();
        for _ in 0..SCREENSHOTS {
            let r = self.0.call("Page.captureScreenshot", json!({ "format": "png" })).await;
            assert!(r["data"].as_str().is_some_and(|d| !d.is_empty()));
        }
        SCREENSHOTS as f64 / t.elapsed().as_secs_f64()
    }
}

/// A Chromium of its own with a DevTools port (the bench's baseline only; the service never opens one),
/// and its browser WebSocket URL.
async fn direct_chromium(profile: &std::path::Path) -> (tokio::process::Child, String) {
    let mut cmd = tokio::process::Command::new("chromium");
    cmd.args(["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0", "--window-size=1024,600"]);
    cmd.arg(format!("--user-data-dir={}", profile.display())).arg("about:blank");
    let mut child = cmd.stderr(std::process::Stdio::piped()).kill_on_drop(true).spawn().expect("chromium");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let wait = async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.strip_prefix("DevTools listening on ") {
                return url.trim().to_owned();
            }
        }
        panic!("chromium printed no DevTools URL")
    };
    let url = tokio::time::timeout(Duration::from_secs(30), wait).await.expect("chromium started");
    (child, url)
}

/// This process's resident memory (the service runs in it), in MiB.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok());
    kib.unwrap_or(0.0) / 1024.0
}

/// Another tenant's client sends 400 evaluates of 1 MB answers each and never reads one, while `probe` (a
/// client of the first tenant) times its own `Runtime.evaluate` round trips; the service's RSS is sampled.
/// Issue 32's goal: the neighbour's p95 under 100 ms, and RSS within +100 MiB.
async fn noisy_neighbour<F, Fut>(app: &webpilot::RunningApp, start_session: &F, probe: &mut Client) -> Value
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let user = app.store.create_user("flooder", usd_to_micros(1000.0)).await.expect("user");
    let (_, key) = app.store.create_api_key(&user.id, "flood", None).await.expect("key");
    let started = start_session(key).await;
    let url = started["cdpURL"].as_str().expect("cdpURL");
    let mut flooder = Client::connect(url, "about:blank").await;
    // A second connection to the same page: its evaluate is answered once the page has run the flood's.
    let mut witness = Client::connect(url, "about:blank").await;
    let big = json!({ "expression": "'x'.repeat(1000000)", "returnByValue": true });
    let session = flooder.0.session.clone();
    let before = rss_mib();
    let peak = std::sync::Arc::new(std::sync::Mutex::new(before));
    let done = std::sync::atomic::AtomicBool::new(false);
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                if let Ok(mut p) = peak.lock() {
                    *p = p.max(rss_mib());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let flood = async {
        for id in 1_000_000..1_000_400u64 {
            let msg = json!({ "id": id, "method": "Runtime.evaluate", "params": big, "sessionId": session });
            let sent = tokio::time::timeout(Duration::from_secs(10), flooder.0.ws.send(Message::text(msg.to_string())));
            if !matches!(sent.await, Ok(Ok(()))) {
                break; // closed, or the relay stopped reading: the flood is over
            }
        }
        witness.0.call("Runtime.evaluate", json!({ "expression": "1 + 1" })).await;
        done.store(true, std::sync::atomic::Ordering::Relaxed);
    };
    let probing = async {
        let mut trips = Vec::new();
        while !done.load(std::sync::atomic::Ordering::Relaxed) || trips.len() < 20 {
            let t = Instant::now();
            probe.0.call("Runtime.evaluate", json!({ "expression": "6 * 7" })).await;
            trips.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        trips
    };
    let ((), mut trips) = tokio::join!(flood, probing);
    sampler.abort();
    trips.sort_by(|a, b| a.total_cmp(b));
    let peak = peak.lock().map(|p| *p).unwrap_or(before);
    let (p50, p95, max) = (percentile(&trips, 50.0), percentile(&trips, 95.0), trips.last().copied().unwrap_or(0.0));
    println!("== a noisy neighbour: another tenant floods 400 x 1 MB answers and never reads ==");
    println!(
        "the other tenant's evaluate: p50 {p50:.2} ms, p95 {p95:.2} ms, max {max:.1} ms (n={}); service RSS {before:.0} MiB, peak {peak:.0} MiB (+{:.0})",
        trips.len(),
        peak - before
    );
    json!({ "p50_ms": p50, "p95_ms": p95, "max_ms": max, "n": trips.len(), "rss_before_mib": before, "rss_peak_mib": peak })
}

fn row(name: &str, evals: &[f64], shots: f64) -> Value {
    let (p50, p99) = (percentile(evals, 50.0), percentile(evals, 99.0));
    println!(
        "{name:<28} evaluate p50 {p50:>7.3} ms   p99 {p99:>7.3} ms   screenshots {shots:>6.1}/s   (n={})",
        evals.len()
    );
    json!({ "evaluate_p50_ms": p50, "evaluate_p99_ms": p99, "screenshots_per_s": shots, "n": evals.len() })
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::var("WEBPILOT_BENCH_EVALS").ok().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let site = FixtureSite::start().await;
    let allow = format!("127.0.0.1:{}", site.port());
    let flags =
        Flags::parse_from(["bench", "--egress-allow", &allow, "--listen", "127.0.0.1:0", "--rate-limit", "1000000"]);
    let data = tempfile::tempdir().expect("tempdir");
    let app = webpilot::start(&flags.serve, &StoreConfig::sqlite(data.path())).await.expect("start");
    let user = app.store.create_user("bench", usd_to_micros(1000.0)).await.expect("user");
    let (_, key) = app.store.create_api_key(&user.id, "bench", None).await.expect("key");
    let start_session = |key: String| {
        let url = format!("http://{}/start/start-session", app.addr);
        async move {
            let r = reqwest::Client::new().post(url).bearer_auth(key).json(&json!({})).send().await;
            r.expect("start-session").json::<Value>().await.expect("json")
        }
    };
    let started = start_session(key.clone()).await;
    let cdp_url = started["cdpURL"].as_str().expect("cdpURL").to_owned();
    let page = site.url("/pricing");

    let profile = tempfile::tempdir().expect("profile");
    let (_chromium, direct_url) = direct_chromium(profile.path()).await;
    let mut direct = Client::connect(&direct_url, &page).await;
    let mut relayed = Client::connect(&cdp_url, &page).await;
    // Warm both paths up before measuring.
    direct.evals(100).await;
    relayed.evals(100).await;

    println!("== DevTools round trips and screenshots, one client at a time ==");
    let d = direct.evals(n).await;
    let r = relayed.evals(n).await;
    let d_shots = direct.screenshots().await;
    let r_shots = relayed.screenshots().await;
    let direct_row = row("direct to Chromium", &d, d_shots);
    let relay_row = row("through the relay (cdpURL)", &r, r_shots);
    let added = percentile(&r, 50.0) - percentile(&d, 50.0);
    let share = r_shots / d_shots * 100.0;
    println!("added at p50: {added:.3} ms; relay screenshot throughput: {share:.0}% of direct");
    let neighbour = noisy_neighbour(&app, &start_session, &mut relayed).await;
    let report = json!({ "direct": direct_row, "relay": relay_row, "added_p50_ms": added, "screenshot_share_pct": share,
        "noisy_neighbour": neighbour });
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    let _ = std::fs::create_dir_all(&out);
    let _ = std::fs::write(out.join("cdp_relay.json"), serde_json::to_string_pretty(&report).unwrap_or_default());
    app.shutdown().await;
}
