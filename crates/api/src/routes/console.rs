//! `/console`: the page people use to watch and drive their sessions (plain HTML, its ES modules, a
//! stylesheet and the vendored Socket.IO client, all built into the binary; no build step, no CDN). The page itself is
//! public; everything it does goes through the API with the key the person pastes in.

use crate::error::ErrorResponse;
use crate::path::Path;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use webpilot_core::{ApiError, ErrorCode};

const PAGE: &str = include_str!("../../assets/console/index.html");
const JS: &str = "text/javascript; charset=utf-8";

/// The page's files by name: `console.js` is the entry module, which imports the others by relative path.
/// `socket.io.min.js` is socket.io-client 4.8.4's `dist/socket.io.min.js` from npm (MIT, licence beside it).
const ASSETS: &[(&str, &str, &str)] = &[
    ("console.js", include_str!("../../assets/console/console.js"), JS),
    ("api.js", include_str!("../../assets/console/api.js"), JS),
    ("ui.js", include_str!("../../assets/console/ui.js"), JS),
    ("key.js", include_str!("../../assets/console/key.js"), JS),
    ("sessions.js", include_str!("../../assets/console/sessions.js"), JS),
    ("channel.js", include_str!("../../assets/console/channel.js"), JS),
    ("video.js", include_str!("../../assets/console/video.js"), JS),
    ("takeover.js", include_str!("../../assets/console/takeover.js"), JS),
    ("recordings.js", include_str!("../../assets/console/recordings.js"), JS),
    ("tasks.js", include_str!("../../assets/console/tasks.js"), JS),
    ("account.js", include_str!("../../assets/console/account.js"), JS),
    ("webhooks.js", include_str!("../../assets/console/webhooks.js"), JS),
    ("console.css", include_str!("../../assets/console/console.css"), "text/css; charset=utf-8"),
    ("socket.io.min.js", include_str!("../../assets/console/socket.io.min.js"), JS),
];

/// The names `GET /console/{asset}` serves, for the OpenAPI document's enum.
pub(crate) fn asset_names() -> impl Iterator<Item = &'static str> {
    ASSETS.iter().map(|(name, _, _)| *name)
}

fn text(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // The key lives in the page's session storage: no other origin may frame or script it.
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    // Only its own scripts run; the video may come from the service's public URL, whatever its origin.
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' http: https: data:; \
             media-src 'self' blob: http: https:; connect-src 'self' http: https: ws: wss:; frame-ancestors 'none'",
        ),
    );
    response
}

/// `GET /console`.
pub async fn page() -> Response {
    text(PAGE, "text/html; charset=utf-8")
}

/// `GET /console/:asset`: the page's modules, style and Socket.IO client.
pub async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(file, _, _)| *file == name) {
        Some((_, body, kind)) => text(body, kind),
        None => ErrorResponse::from(ApiError::new(ErrorCode::NotFound, "no such console file")).into_response(),
    }
}
