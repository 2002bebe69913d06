//! The router: every path of the REST contract (the documented ones through `utoipa_axum::routes!`, so
//! each has its OpenAPI entry; `GET /openapi.json` serves the document), the Socket.IO channel
//! (`/socket.io/`), JSON 404/405 fallbacks, and the rate-limit wrapper the four limited endpoints share.

mod cdp;
mod chat;
mod console;
mod files;
mod health;
mod internal;
mod mcp;
mod openai;
mod profiles;
mod recordings;
mod sessions;
mod stream;
mod tasks;
mod webhooks;
mod whep;

pub use cdp::CdpConnections;

use crate::error::ErrorResponse;
use crate::openapi::{ApiDoc, SecurityAndLimits};
use crate::state::AppState;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, delete, get, post};
use axum::Router;
use std::future::Future;
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use webpilot_core::{ApiError, ErrorCode};
use webpilot_store::User;

pub fn router(state: AppState) -> Router {
    let v1 = OpenApiRouter::new()
        .routes(routes!(chat::completions))
        .routes(routes!(openai::models))
        .route("/v1/{*rest}", any(not_found))
        .layer(axum::middleware::from_fn(openai::with_openai_error));
    let metrics = match state.config.metrics_on_main {
        true => Router::new().route("/metrics", get(crate::metrics::render)),
        false => Router::new(),
    };
    // An upload one byte over the cap is read far enough to be refused with FILE_TOO_LARGE.
    let upload_limit =
        usize::try_from(state.manager.pool().settings().max_file_bytes.saturating_add(1)).unwrap_or(usize::MAX);
    // An import is JSON of a profile's content: a few times its sealed cap covers any that fits.
    let profile_limit =
        usize::try_from(state.manager.config().profiles.caps.per_profile.saturating_mul(4)).unwrap_or(usize::MAX);
    let (documented, mut doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(v1)
        .routes(routes!(sessions::start_session))
        .routes(routes!(sessions::send_message))
        .routes(routes!(sessions::run_task))
        .routes(routes!(sessions::list))
        .routes(routes!(tasks::poll))
        .routes(routes!(health::health))
        .routes(routes!(health::active_sockets))
        .routes(routes!(webhooks::create, webhooks::list))
        .routes(routes!(webhooks::remove))
        .routes(routes!(webhooks::rotate_secret))
        .routes(routes!(webhooks::deliveries))
        .split_for_parts();
    SecurityAndLimits.modify(&mut doc);
    let spec = crate::openapi::render(&doc);
    Router::new()
        .merge(documented)
        .merge(metrics)
        .merge(mcp::router(&state))
        .route("/openapi.json", get(move || crate::openapi::document(spec.clone())))
        .route("/console", get(console::page))
        .route("/console/{asset}", get(console::asset))
        .route("/profiles", get(profiles::list))
        .route("/profiles/{name}", get(profiles::get).delete(profiles::remove))
        .route(
            "/profiles/{name}/export",
            get(profiles::export).put(profiles::import).layer(DefaultBodyLimit::max(profile_limit)),
        )
        .route("/recordings", get(recordings::list))
        .route("/recordings/{session_id}", get(recordings::get).delete(recordings::remove))
        .route("/recordings/{session_id}/video.webm", get(recordings::video))
        .route("/recordings/{session_id}/events", get(recordings::events))
        .route(
            "/sessions/{session_id}/files",
            get(files::list).post(files::upload).layer(DefaultBodyLimit::max(upload_limit)),
        )
        .route("/sessions/{session_id}/files/{name}", get(files::fetch).delete(files::remove))
        .route("/internal/{call}", post(internal::call))
        .route("/cdp/{session_id}", get(cdp::connect))
        .route("/cdp/{session_id}/json/version", get(cdp::version))
        .route("/cdp/{session_id}/json/version/", get(cdp::version))
        .route("/stream/{session_id}/view", get(stream::view))
        .route("/stream/{session_id}/share", post(stream::share))
        .route("/stream/{session_id}/interaction", post(stream::interaction))
        .route("/stream/{session_id}/whep", post(whep::offer).options(whep::preflight).patch(whep::no_trickle))
        .route(
            "/stream/{session_id}/whep/{resource}",
            delete(whep::end).options(whep::preflight).patch(whep::no_trickle),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::forward::to_owner))
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .layer(crate::socket::layer(state.clone()))
        .with_state(state)
}

async fn not_found() -> ErrorResponse {
    ApiError::new(ErrorCode::NotFound, "no such endpoint").into()
}

async fn method_not_allowed() -> ErrorResponse {
    ApiError::code(ErrorCode::MethodNotAllowed).into()
}

/// Counts the request against `user`'s window, runs `work` if allowed, and adds the rate-limit
/// headers to whatever the answer is.
pub(crate) async fn rate_limited<F, T>(state: &AppState, user: &User, work: F) -> Response
where
    F: Future<Output = Result<T, ErrorResponse>>,
    T: IntoResponse,
{
    let d = state.rate.hit(&user.id).await;
    let mut response = if d.allowed {
        match work.await {
            Ok(body) => body.into_response(),
            Err(e) => e.into_response(),
        }
    } else {
        let msg = format!("rate limit exceeded, try again in {} seconds", d.retry_after);
        ErrorResponse(ApiError::new(ErrorCode::RateLimitExceeded, msg)).into_response()
    };
    let headers = response.headers_mut();
    let mut set = |name: &'static str, v: u64| {
        headers.insert(HeaderName::from_static(name), HeaderValue::from(v));
    };
    set("x-ratelimit-limit", d.limit as u64);
    set("x-ratelimit-remaining", d.remaining as u64);
    set("x-ratelimit-reset", d.reset_unix);
    if !d.allowed {
        set("retry-after", d.retry_after);
    }
    response
}
