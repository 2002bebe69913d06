//! A small HTTP load generator for the benchmarks: many keep-alive connections, each its own client,
//! run on a runtime of their own thread so the service's runtime is not shared with them.

use std::time::{Duration, Instant};

/// What one load run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadResult {
    pub requests: usize,
    pub errors: usize,
    pub seconds: f64,
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Paced runs: requests sent more than 5 ms after they were due (the client fell behind).
    pub late: usize,
}

/// `connections` clients each send one request after another to `url` for `length`.
pub fn closed_loop(url: String, connections: usize, length: Duration) -> LoadResult {
    run(url, connections, length, None)
}

/// `connections` clients together send `rate` requests per second to `url` for `length`. Latency counts
/// from when a request was sent (tokio's timer fires up to a millisecond after a due time, which would
/// otherwise be counted as the service's); requests sent more than 5 ms late are counted as `late`, so a
/// slow answer that delays the next is not hidden.
pub fn open_loop(url: String, connections: usize, rate: f64, length: Duration) -> LoadResult {
    run(url, connections, length, Some(rate))
}

fn run(url: String, connections: usize, length: Duration, rate: Option<f64>) -> LoadResult {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    rt.block_on(async move {
        let began = Instant::now();
        let deadline = began + length;
        let mut workers = Vec::new();
        for i in 0..connections {
            let url = url.clone();
            workers.push(webpilot_tasks::spawn_owned("load worker", async move {
                let client = reqwest::Client::builder().pool_max_idle_per_host(1).build().expect("client");
                let mut times = Vec::new();
                let mut errors = 0;
                let mut late = 0;
                let mut ticks = rate.map(|r| {
                    let period = Duration::from_secs_f64(connections as f64 / r);
                    // Spread the connections' first requests over one period.
                    let start = tokio::time::Instant::now() + period.mul_f64(i as f64 / connections as f64);
                    let mut t = tokio::time::interval_at(start, period);
                    t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
                    t
                });
                while Instant::now() < deadline {
                    let due = match ticks.as_mut() {
                        Some(t) => t.tick().await.into_std(),
                        None => Instant::now(),
                    };
                    if due >= deadline {
                        break;
                    }
                    let sent = Instant::now();
                    if sent.duration_since(due) > Duration::from_millis(5) {
                        late += 1;
                    }
                    match client.get(&url).send().await {
                        Ok(r) if r.status().is_success() => {
                            let _ = r.bytes().await;
                            times.push(sent.elapsed().as_secs_f64() * 1000.0);
                        }
                        _ => errors += 1,
                    }
                }
                (times, errors, late)
            }));
        }
        let mut times = Vec::new();
        let (mut errors, mut late) = (0, 0);
        for w in workers {
            if let Ok((t, e, l)) = w.await {
                times.extend(t);
                errors += e;
                late += l;
            }
        }
        let seconds = began.elapsed().as_secs_f64();
        times.sort_by(|a, b| a.total_cmp(b));
        LoadResult {
            requests: times.len(),
            errors,
            seconds,
            rps: times.len() as f64 / seconds,
            p50_ms: super::percentile(&times, 50.0),
            p99_ms: super::percentile(&times, 99.0),
            max_ms: times.last().copied().unwrap_or(0.0),
            late,
        }
    })
}
