//! Prometheus metrics: the recorder (installed once per process; the `metrics` facade is global), and
//! `GET /metrics` in the Prometheus text format. Counters and histograms are recorded where things
//! happen (sessions, tasks, the pool, the rate limiter); gauges are read at each scrape.
//!
//! Names: `webpilot_sessions_open`, `webpilot_pool_capacity`, `webpilot_pool_in_use`, `webpilot_pool_warm`,
//! `webpilot_chromium_processes`, `webpilot_sockets_connected` (gauges); `webpilot_tasks_total{outcome}`,
//! `webpilot_model_tokens_total{kind}`, `webpilot_chromium_restarts_total`,
//! `webpilot_rate_limited_total` (counters); `webpilot_session_start_seconds`,
//! `webpilot_task_duration_seconds` (histograms).

use crate::state::AppState;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;

/// Bucket bounds (seconds) of the latency histograms: session starts are milliseconds, tasks minutes.
const BUCKETS: [f64; 16] =
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0];

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the Prometheus recorder for this process (once) and returns its handle; `None` when
/// another recorder was installed first.
pub fn install() -> Option<PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new().set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &BUCKETS);
            let recorder = match builder {
                Ok(b) => b.build_recorder(),
                Err(e) => {
                    tracing::warn!(error = %e, "metrics are off: the histogram buckets were refused");
                    return None;
                }
            };
            let handle = recorder.handle();
            match metrics::set_global_recorder(recorder) {
                Ok(()) => Some(handle),
                Err(_) => {
                    tracing::warn!("metrics are off: another metrics recorder is installed");
                    None
                }
            }
        })
        .clone()
}

/// `GET /metrics`.
pub async fn render(State(state): State<AppState>) -> Response {
    let Some(handle) = &state.metrics else {
        return (axum::http::StatusCode::NOT_FOUND, "metrics are off\n").into_response();
    };
    let stats = state.manager.pool().stats();
    metrics::gauge!("webpilot_sessions_open").set(state.manager.session_count() as f64);
    metrics::gauge!("webpilot_pool_capacity").set(stats.capacity as f64);
    metrics::gauge!("webpilot_pool_in_use").set(stats.in_use as f64);
    metrics::gauge!("webpilot_pool_warm").set(stats.warm as f64);
    metrics::gauge!("webpilot_chromium_processes").set(stats.processes as f64);
    metrics::gauge!("webpilot_sockets_connected").set(state.sockets.ids().len() as f64);
    ([(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], handle.render()).into_response()
}

/// A router serving only `/metrics` (for `--metrics-listen`).
pub fn router(state: AppState) -> axum::Router {
    axum::Router::new().route("/metrics", axum::routing::get(render)).with_state(state)
}
