//! Benchmark (prints numbers, asserts nothing): what watching a session costs. For 0, 1 and 2 watched
//! sessions on an animated page, and for a still page, over MJPEG and over WebRTC (WHEP, received and
//! decoded by a headless Chromium on the fixture's player page), it prints the frames per second each
//! viewer receives, the bytes per frame, and the CPU used by the service and by the session's Chromium
//! tree (not the viewer's), as a share of one core. Run with `cargo bench -p webpilot --bench live_view`.

mod common;

use clap::Parser;
use common::{cpu_seconds, process_tree};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use webpilot::config::{ServeConfig, StoreConfig};
use webpilot_core::usage::usd_to_micros;
use webpilot_testkit::viewer::{eval, eval_until};
use webpilot_testkit::{FixtureSite, Viewer};

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    serve: ServeConfig,
}

const WINDOW: Duration = Duration::from_secs(10);

/// Counts the parts (frames) and bytes of one MJPEG stream until dropped.
fn watch(url: String, frames: Arc<AtomicU64>, bytes: Arc<AtomicU64>) -> tokio::task::JoinHandle<()> {
    webpilot_tasks::spawn_owned("mjpeg watcher", async move {
        let Ok(mut resp) = reqwest::get(&url).await else { return };
        let mut carry = Vec::new();
        while let Ok(Some(chunk)) = resp.chunk().await {
            bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            carry.extend_from_slice(&chunk);
            // Count part boundaries; keep a tail in case one is split across chunks.
            let marker = b"--webpilot-frame\r\n";
            let found = carry.windows(marker.len()).filter(|w| w == marker).count();
            frames.fetch_add(found as u64, Ordering::Relaxed);
            let keep = carry.len().min(marker.len() - 1);
            carry.drain(..carry.len() - keep);
        }
    })
}

#[derive(Clone, Copy)]
enum Transport {
    Mjpeg,
    WebRtc,
}

/// What a case's viewers received so far: MJPEG parts and bytes counted by the readers, or WebRTC frames
/// decoded and bytes received as the players' `getStats()` report them.
enum Counter {
    Mjpeg(Arc<AtomicU64>, Arc<AtomicU64>),
    WebRtc,
}

impl Counter {
    async fn read(&self, players: &[webpilot_testkit::viewer::Page]) -> (u64, u64) {
        match self {
            Counter::Mjpeg(frames, bytes) => (frames.load(Ordering::Relaxed), bytes.load(Ordering::Relaxed)),
            Counter::WebRtc => {
                let (mut frames, mut bytes) = (0, 0);
                for page in players {
                    let s = eval(page, STATS).await;
                    frames += s["frames"].as_u64().unwrap_or(0);
                    bytes += s["bytes"].as_u64().unwrap_or(0);
                }
                (frames, bytes)
            }
        }
    }
}

/// Frames decoded and bytes received by a WHEP player page.
const STATS: &str = "(async () => { let frames = 0, bytes = 0; (await window.whep.pc.getStats()).forEach((s) => { \
                     if (s.type === 'inbound-rtp' && s.kind === 'video') { frames = s.framesDecoded || 0; bytes = s.bytesReceived || 0; } }); \
                     return { frames, bytes }; })()";

#[tokio::main]
async fn main() {
    let site = FixtureSite::start().await;
    let data = tempfile::tempdir().expect("tempdir");
    let allow_site = format!("127.0.0.1:{}", site.port());
    let argv = ["bench", "--egress-allow", &allow_site, "--listen", "127.0.0.1:0", "--rate-limit", "100000"];
    let flags = Flags::parse_from(argv);
    let app = webpilot::start(&flags.serve, &StoreConfig::sqlite(data.path())).await.expect("start");
    let base = format!("http://{}", app.addr);
    let user = app.store.create_user("bench", usd_to_micros(1000.0)).await.expect("user");
    let (_, key) = app.store.create_api_key(&user.id, "bench", None).await.expect("key");
    let client = reqwest::Client::new();
    let start = |page: String| {
        let req =
            client.post(format!("{base}/start/start-session")).bearer_auth(&key).json(&json!({ "startingUrl": page }));
        async move { req.send().await.expect("request").json::<Value>().await.expect("json") }
    };
    let animated = site.url("/paint?bg=ffffff&animate=1");
    let sessions = [start(animated.clone()).await, start(animated).await, start(site.url("/paint?bg=ff0000")).await];
    let urls: Vec<String> =
        sessions.iter().map(|s| s["streaming"]["webViewURL"].as_str().expect("webViewURL").to_owned()).collect();
    let whep_urls: Vec<String> =
        sessions.iter().map(|s| s["streaming"]["webRTCURL"].as_str().expect("webRTCURL").to_owned()).collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let me = std::process::id();
    let chromium = app.manager.pool().pids().await;

    println!("== live view cost over {} s windows (2-core machine; CPU as % of one core) ==", WINDOW.as_secs());
    println!("{:<34} {:>10} {:>12} {:>12} {:>14}", "case", "fps/viewer", "KiB/frame", "service CPU", "Chromium CPU");
    let cases: [(&str, Transport, &[usize]); 7] = [
        ("no viewer (2 animated sessions)", Transport::Mjpeg, &[]),
        ("MJPEG: 1 viewer, animated page", Transport::Mjpeg, &[0]),
        ("MJPEG: 2 viewers, 2 animated", Transport::Mjpeg, &[0, 1]),
        ("MJPEG: 1 viewer, still page", Transport::Mjpeg, &[2]),
        ("WebRTC: 1 viewer, animated page", Transport::WebRtc, &[0]),
        ("WebRTC: 2 viewers, 2 animated", Transport::WebRtc, &[0, 1]),
        ("WebRTC: 1 viewer, still page", Transport::WebRtc, &[2]),
    ];
    let viewer = Viewer::launch().await;
    let player = site.url("/whep-player");
    for (name, transport, watched) in cases {
        let (counter, mjpeg, players) = match transport {
            Transport::Mjpeg => {
                let (frames, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
                let handles = watched.iter().map(|&i| watch(urls[i].clone(), frames.clone(), bytes.clone())).collect();
                (Counter::Mjpeg(frames, bytes), handles, Vec::new())
            }
            Transport::WebRtc => {
                let mut pages = Vec::new();
                for &i in watched {
                    let page = viewer.open(&player).await;
                    let status = eval(&page, &format!("startWhep({})", json!(whep_urls[i]))).await;
                    assert_eq!(status, 201, "the WHEP offer was refused");
                    eval_until(&page, "whepStats()", Duration::from_secs(20), "decoded video", |s| {
                        s["framesDecoded"].as_u64().unwrap_or(0) > 0
                    })
                    .await;
                    pages.push(page);
                }
                (Counter::WebRtc, Vec::new(), pages)
            }
        };
        // Let the feeds start before measuring.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let browser: Vec<u32> = chromium.iter().flat_map(|&p| process_tree(p)).collect();
        let (f0, b0) = counter.read(&players).await;
        let (s0, c0, t0) = (cpu_seconds(&[me]), cpu_seconds(&browser), Instant::now());
        tokio::time::sleep(WINDOW).await;
        let secs = t0.elapsed().as_secs_f64();
        let (s1, c1) = (cpu_seconds(&[me]), cpu_seconds(&browser));
        let (f1, b1) = counter.read(&players).await;
        let (df, db) = (f1 - f0, b1 - b0);
        for v in mjpeg {
            v.abort();
        }
        for page in players {
            let location = eval(&page, "window.whep.location").await;
            if let Some(location) = location.as_str() {
                let _ = client.delete(format!("{base}{location}")).send().await;
            }
            let _ = page.close().await;
        }
        let per_viewer = if watched.is_empty() { 0.0 } else { df as f64 / secs / watched.len() as f64 };
        let kib = if df == 0 { 0.0 } else { db as f64 / df as f64 / 1024.0 };
        println!(
            "{name:<34} {per_viewer:>10.1} {kib:>12.1} {:>11.0}% {:>13.0}%",
            (s1 - s0) / secs * 100.0,
            (c1 - c0) / secs * 100.0
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    println!("WebRTC viewers (encoders) still running after the viewers left: {}", app.whep.active());
    viewer.close().await;
    println!("feeds still running after the viewers left: {}", app.live_view.active_feeds());
    app.shutdown().await;
}
