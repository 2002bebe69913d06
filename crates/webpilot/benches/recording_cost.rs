//! Benchmark (prints numbers, asserts nothing): what recording a session costs. For an animated page and
//! a still page it prints the CPU of one session recorded against the same session not recorded (the
//! service process and the Chromium process tree, as a share of one core, over a fixed window after the
//! page loaded, Chromium's also split by process type), the recording's bytes per minute, and
//! start-session p50/p90 with `recording: true` against `recording: false`. Run with
//! `cargo bench -p webpilot --bench recording_cost`; `docs/benchmarks.md` has the figures.

mod common;

use clap::Parser;
use common::{cpu_seconds, percentile, process_tree};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use webpilot::config::{ServeConfig, StoreConfig};
use webpilot::RunningApp;
use webpilot_core::usage::usd_to_micros;
use webpilot_testkit::FixtureSite;

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    serve: ServeConfig,
}

/// The CPU window, measured once the page loaded and the feed (if any) started.
const WINDOW: Duration = Duration::from_secs(12);
/// From start-session to the window: the page loads, the recorder's feed starts, the pool refills.
const SETTLE: Duration = Duration::from_secs(3);
/// Recorded and unrecorded sessions alternate this many times per page; the figures are their mean.
const ROUNDS: usize = 2;
/// Sessions started per start-session figure.
const STARTS: usize = 20;
/// Warm contexts the service keeps (its default).
const WARM: usize = 2;

/// A service on a random port with one user, and a client speaking its JSON.
struct Bench {
    app: RunningApp,
    base: String,
    key: String,
    client: reqwest::Client,
}

/// What one session cost over the window: CPU seconds per second of the service and of Chromium, and
/// (recorded) its recording once `ready`.
struct Run {
    service: f64,
    chromium: f64,
    /// Chromium's share split by process type (`browser`, `renderer`, `gpu-process`, `utility`, ...).
    by_type: BTreeMap<String, f64>,
    recording: Option<Value>,
}

/// A Chromium process's `--type=` (none: the browser process). Chromium's helpers rewrite their
/// command line as one string, so arguments are split on spaces as well as NULs.
fn process_type(pid: u32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let cmdline = String::from_utf8_lossy(&cmdline);
    let mut args = cmdline.split(['\0', ' ']);
    args.find_map(|a| a.strip_prefix("--type=").map(str::to_owned)).unwrap_or_else(|| "browser".into())
}

/// CPU seconds used so far by each of `pids`, by process type.
fn cpu_by_type(pids: &[u32]) -> BTreeMap<String, f64> {
    let mut by = BTreeMap::new();
    for &pid in pids {
        *by.entry(process_type(pid)).or_insert(0.0) += cpu_seconds(&[pid]);
    }
    by
}

impl Bench {
    async fn post(&self, path: &str, body: Value) -> Value {
        let req = self.client.post(format!("{}{path}", self.base)).bearer_auth(&self.key).json(&body);
        req.send().await.expect("request").json::<Value>().await.expect("json")
    }

    async fn start(&self, body: Value) -> String {
        let s = self.post("/start/start-session", body).await;
        s["sessionId"].as_str().unwrap_or_else(|| panic!("no sessionId in {s}")).to_owned()
    }

    async fn terminate(&self, sid: &str) {
        let msg = json!({ "sessionId": sid, "message": { "actionType": "state", "newState": "terminate" } });
        self.post("/start/send-message", msg).await;
    }

    /// The recording of `sid` once it is `ready` (or whatever it says after 60 s).
    async fn recording(&self, sid: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let req = self.client.get(format!("{}/recordings/{sid}", self.base)).bearer_auth(&self.key);
            let body: Value = req.send().await.expect("request").json().await.unwrap_or(Value::Null);
            if body["status"] == "ready" || Instant::now() > deadline {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits (at most 30 s) until the warm pool is full again, so each case starts from the same state.
    async fn wait_warm(&self) {
        let pool = self.app.manager.pool();
        let deadline = Instant::now() + Duration::from_secs(30);
        while pool.stats().warm < WARM && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// One session on `page`, recorded or not: its CPU over the window, then (recorded) its recording.
    async fn session(&self, page: &str, recorded: bool) -> Run {
        self.wait_warm().await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let sid = self.start(json!({ "startingUrl": page, "recording": recorded })).await;
        tokio::time::sleep(SETTLE).await;
        let me = [std::process::id()];
        let chromium: Vec<u32> = self.app.manager.pool().pids().await.into_iter().flat_map(process_tree).collect();
        let (s0, c0, t0) = (cpu_seconds(&me), cpu_seconds(&chromium), Instant::now());
        let types0 = cpu_by_type(&chromium);
        tokio::time::sleep(WINDOW).await;
        let secs = t0.elapsed().as_secs_f64();
        let (s1, c1) = (cpu_seconds(&me), cpu_seconds(&chromium));
        let mut by_type = cpu_by_type(&chromium);
        for (kind, used) in by_type.iter_mut() {
            *used = (*used - types0.get(kind).copied().unwrap_or(0.0)) / secs;
        }
        self.terminate(&sid).await;
        let recording = if recorded { Some(self.recording(&sid).await) } else { None };
        Run { service: (s1 - s0) / secs, chromium: (c1 - c0) / secs, by_type, recording }
    }

    /// Milliseconds each of `n` start-sessions with `recording` took, alternating with `n` without it
    /// (each session is terminated, and its recording ready, before the next; the pool is full).
    async fn starts(&self, n: usize) -> (Vec<f64>, Vec<f64>) {
        let (mut plain, mut recorded) = (Vec::new(), Vec::new());
        for _ in 0..n {
            for record in [false, true] {
                self.wait_warm().await;
                let t = Instant::now();
                let sid = self.start(json!({ "recording": record })).await;
                let ms = t.elapsed().as_secs_f64() * 1000.0;
                if record { &mut recorded } else { &mut plain }.push(ms);
                self.terminate(&sid).await;
                if record {
                    self.recording(&sid).await;
                }
            }
        }
        (plain, recorded)
    }
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

fn pct(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

#[tokio::main]
async fn main() {
    let site = FixtureSite::start().await;
    let data = tempfile::tempdir().expect("tempdir");
    let allow_site = format!("127.0.0.1:{}", site.port());
    let warm = WARM.to_string();
    let argv = ["bench", "--egress-allow", &allow_site, "--listen", "127.0.0.1:0", "--rate-limit", "100000"];
    let flags = Flags::parse_from(argv.into_iter().chain(["--warm-contexts", &warm, "--max-sessions", "4"]));
    let app = webpilot::start(&flags.serve, &StoreConfig::sqlite(data.path())).await.expect("start");
    let user = app.store.create_user("bench", usd_to_micros(1000.0)).await.expect("user");
    let (_, key) = app.store.create_api_key(&user.id, "bench", None).await.expect("key");
    app.manager.pool().warm_up().await.expect("chromium");
    let base = format!("http://{}", app.addr);
    let bench = Bench { app, base, key, client: reqwest::Client::new() };

    let pages = [("animated", site.url("/paint?bg=ffffff&animate=1")), ("still", site.url("/paint?bg=ff0000"))];
    let mut sizes = Vec::new();
    println!(
        "== recording cost: CPU over {} s windows from {} s after start-session, mean of {ROUNDS} rounds \
         (2-core machine; % of one core; service process + Chromium tree) ==",
        WINDOW.as_secs(),
        SETTLE.as_secs()
    );
    println!(
        "{:<10} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10}",
        "page", "plain svc", "plain chr", "plain all", "rec svc", "rec chr", "rec all", "extra"
    );
    for (name, url) in &pages {
        let (mut plain, mut recorded) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            plain.push(bench.session(url, false).await);
            recorded.push(bench.session(url, true).await);
        }
        let svc = |runs: &[Run]| mean(runs.iter().map(|r| r.service));
        let chr = |runs: &[Run]| mean(runs.iter().map(|r| r.chromium));
        let (p_all, r_all) = (svc(&plain) + chr(&plain), svc(&recorded) + chr(&recorded));
        println!(
            "{name:<10} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10}",
            pct(svc(&plain)),
            pct(chr(&plain)),
            pct(p_all),
            pct(svc(&recorded)),
            pct(chr(&recorded)),
            pct(r_all),
            format!("{:+.1}%", (r_all - p_all) * 100.0)
        );
        for (i, (p, r)) in plain.iter().zip(&recorded).enumerate() {
            let (pa, ra) = (p.service + p.chromium, r.service + r.chromium);
            println!("  round {}: plain {}, recorded {}, extra {:+.1}%", i + 1, pct(pa), pct(ra), (ra - pa) * 100.0);
        }
        let kinds: std::collections::BTreeSet<&String> =
            plain.iter().chain(&recorded).flat_map(|r| r.by_type.keys()).collect();
        let share = |runs: &[Run], kind: &str| mean(runs.iter().map(|r| r.by_type.get(kind).copied().unwrap_or(0.0)));
        let split: Vec<String> =
            kinds.iter().map(|k| format!("{k} {} -> {}", pct(share(&plain, k)), pct(share(&recorded, k)))).collect();
        println!("  Chromium by process type, plain -> recorded: {}", split.join(", "));
        sizes.push((*name, recorded.into_iter().filter_map(|r| r.recording).collect::<Vec<_>>()));
    }

    println!("\n== recording size (GET /recordings/{{sessionId}} once ready, after terminate) ==");
    println!("{:<10} {:>8} {:>10} {:>10} {:>10} {:>12}", "page", "status", "frames", "seconds", "KiB", "KiB/minute");
    for (name, recs) in &sizes {
        for rec in recs {
            let bytes = rec["bytes"].as_f64().unwrap_or(0.0);
            let secs = rec["durationMs"].as_f64().unwrap_or(0.0) / 1000.0;
            let per_min = if secs > 0.0 { bytes / 1024.0 / secs * 60.0 } else { 0.0 };
            println!(
                "{name:<10} {:>8} {:>10} {:>10.1} {:>10.1} {:>12.1}",
                rec["status"].as_str().unwrap_or("?"),
                rec["frames"].as_i64().unwrap_or(0),
                secs,
                bytes / 1024.0,
                per_min
            );
        }
    }

    println!("\n== start-session latency, {STARTS} each, alternating, a warm context ready before each ==");
    let (mut plain, mut recorded) = bench.starts(STARTS).await;
    println!("{:<20} {:>10} {:>10}", "", "p50", "p90");
    for (name, v) in [("recording: false", &mut plain), ("recording: true", &mut recorded)] {
        v.sort_by(|a, b| a.total_cmp(b));
        println!("{name:<20} {:>8.1}ms {:>8.1}ms", percentile(v, 50.0), percentile(v, 90.0));
    }
    bench.app.shutdown().await;
}
