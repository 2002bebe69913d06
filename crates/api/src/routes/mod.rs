//! The router: every path of the REST contract (the documented ones through `utoipa_axum::routes!`, so
//! each has its OpenAPI entry; `GET /openapi.json` serves the document), the Socket.IO channel
//! (`/socket.io/`), JSON 404/405 fallbacks, and the rate-limit layer on the work-starting routes.

mod byte_range;
mod cache;
mod cdp;
mod chat;
pub(crate) mod console;
mod files;
mod health;
mod held;
mod internal;
mod mcp;
mod openai;
mod profiles;
mod recording_files;
mod recordings;
mod sessions;
mod stream;
mod tasks;
mod usage;
mod webhooks;
mod whep;

use crate::error::ErrorResponse;
use crate::openapi::{ApiDoc, SecurityAndLimits};
use crate::state::AppState;
use axum::extract::DefaultBodyLimit;

use axum::routing::{any, delete, get, post};
use axum::Router;
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use webpilot_core::{ApiError, ErrorCode};

pub fn router(state: AppState) -> Router {
    let limit = || axum::middleware::from_fn_with_state(state.clone(), crate::ratelimit::limit);
    let v1 = OpenApiRouter::new()
        .routes(routes!(chat::completions))
        .route_layer(limit())
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
        .merge(
            OpenApiRouter::new()
                .routes(routes!(sessions::start_session))
                .routes(routes!(sessions::send_message))
                .routes(routes!(sessions::run_task))
                .route_layer(limit()),
        )
        .routes(routes!(sessions::list))
        .routes(routes!(sessions::tasks))
        .routes(routes!(sessions::proxies))
        .routes(routes!(tasks::poll))
        .routes(routes!(health::health))
        .routes(routes!(health::active_sockets))
        .routes(routes!(webhooks::create, webhooks::list))
        .routes(routes!(webhooks::remove))
        .routes(routes!(webhooks::rotate_secret))
        .routes(routes!(webhooks::deliveries))
        .merge(
            OpenApiRouter::new().routes(routes!(files::list, files::upload)).layer(DefaultBodyLimit::max(upload_limit)),
        )
        .routes(routes!(files::fetch, files::remove))
        .routes(routes!(recordings::list))
        .routes(routes!(recordings::get, recordings::remove))
        .routes(routes!(recordings::video))
        .routes(routes!(recordings::events))
        .routes(routes!(recordings::share))
        .routes(routes!(cache::list))
        .routes(routes!(cache::remove))
        .routes(routes!(usage::usage))
        .routes(routes!(profiles::list))
        .routes(routes!(profiles::get, profiles::remove))
        .merge(
            OpenApiRouter::new()
                .routes(routes!(profiles::export, profiles::import))
                .layer(DefaultBodyLimit::max(profile_limit)),
        )
        .routes(routes!(cdp::connect))
        .routes(routes!(cdp::version))
        .split_for_parts();
    SecurityAndLimits { public_url: &state.config.public_url }.modify(&mut doc);
    let spec = crate::openapi::render(&doc);
    Router::new()
        .merge(documented)
        .merge(metrics)
        .merge(mcp::router(&state))
        .route("/openapi.json", get(move || crate::openapi::document(spec.clone())))
        .route("/console", get(console::page))
        .route("/console/{asset}", get(console::asset))
        .route("/internal/{call}", post(internal::call))
        .route("/cdp/{sessionId}/json/version/", get(cdp::version))
        .route("/stream/{session_id}/view", get(stream::view))
        .route("/stream/{session_id}/share", post(stream::share).route_layer(limit()))
        .route("/stream/{session_id}/interaction", post(stream::interaction))
        .route("/stream/{session_id}/whep", post(whep::offer).options(whep::preflight).patch(whep::no_trickle))
        .route(
            "/stream/{session_id}/whep/{resource}",
            delete(whep::end).options(whep::preflight).patch(whep::no_trickle),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::forward::to_owner))
        .layer(axum::middleware::map_response(crate::auth::challenge))
        // The span names the path alone: a query may carry a capability (`?token=`), which is never logged.
        .layer(tower_http::trace::TraceLayer::new_for_http().make_span_with(|req: &axum::extract::Request| {
            tracing::debug_span!("request", method = %req.method(), path = %req.uri().path())
        }))
        .layer(crate::socket::layer(state.clone()))
        .with_state(state)
}

async fn not_found() -> ErrorResponse {
    ApiError::new(ErrorCode::NotFound, "no such endpoint").into()
}

async fn method_not_allowed() -> ErrorResponse {
    ApiError::code(ErrorCode::MethodNotAllowed).into()
}
