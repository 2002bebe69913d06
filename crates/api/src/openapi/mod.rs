//! The OpenAPI 3.1 document, `GET /openapi.json`: the operations come from the handlers' `#[utoipa::path]`
//! attributes, collected by the router (`utoipa_axum::routes!`, so a documented route cannot exist
//! without its entry); this module adds what is shared: the API-key security scheme, the rate-limit
//! headers of the limited operations, and the Socket.IO and webhook schemas.

pub mod errors;
pub mod events;
mod links;
pub mod protocols;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ObjectBuilder, OpenApi as Document, RefOr, Type};
use utoipa::{Modify, OpenApi};

/// Raw bytes: a body that is not JSON (a video, a file, JPEG frames).
#[derive(utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct Binary(#[allow(dead_code)] Vec<u8>);

/// The name of the Bearer API-key scheme operations refer to.
pub const API_KEY: &str = "apiKey";

/// Paths answered by the per-user rate limit (docs/api.md "Limits").
pub const RATE_LIMITED: &[&str] =
    &["/start/start-session", "/start/send-message", "/start/run-task", "/v1/chat/completions"];

/// Tag names.
pub const SESSIONS: &str = "sessions";
pub const TASKS: &str = "tasks";
pub const OPENAI: &str = "openai";
pub const HEALTH: &str = "health";
pub const WEBHOOKS: &str = "webhooks";
pub const FILES: &str = "files";
pub const RECORDINGS: &str = "recordings";
pub const DEVTOOLS: &str = "devtools";
pub const PROFILES: &str = "profiles";
pub const BILLING: &str = "billing";
pub const CACHE: &str = "cache";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "webpilot",
        description = "A browser-automation agent service: sessions run an AI agent in a remote Chromium. \
            Events arrive over Socket.IO (`socketURL`, event `message` and the connection events) and webhooks; \
            their payloads are the `SocketMessage`, `EndSessionEvent`, `InstanceDisconnectedEvent` and \
            `WebhookMessage` schemas. See docs/api.md."
    ),
    paths(
        protocols::view,
        protocols::share,
        protocols::interaction,
        protocols::whep_offer,
        protocols::whep_end,
        protocols::mcp,
        protocols::mcp_stream,
        protocols::mcp_end,
        protocols::metrics,
        protocols::console,
        protocols::console_asset,
    ),
    components(schemas(
        events::SocketMessage,
        events::EndSessionEvent,
        events::InstanceDisconnectedEvent,
        events::WebhookMessage,
        events::WebhookEventType,
        webpilot_core::params::Message,
    )),
    tags(
        (name = SESSIONS, description = "Sessions and their messages"),
        (name = TASKS, description = "Task results by polling"),
        (name = OPENAI, description = "The OpenAI-compatible face"),
        (name = HEALTH, description = "Health and sockets"),
        (name = WEBHOOKS, description = "Webhook endpoints of the caller's account"),
        (name = FILES, description = "A session's files: downloads and uploads (docs/profiles-and-files.md)"),
        (name = RECORDINGS, description = "Recordings of sessions started with `recording: true`"),
        (name = protocols::LIVE_VIEW, description = "The live view: MJPEG, WebRTC (WHEP), share links, take-over"),
        (name = protocols::PROTOCOLS, description = "MCP, Prometheus metrics and the web console"),
        (name = PROFILES, description = "Saved storage states (cookies, localStorage, IndexedDB) to start sessions from"),
        (name = BILLING, description = "The caller's balance and charges"),
        (name = CACHE, description = "The caller's action cache: runs replayed without the model (docs/agent.md)"),
        (name = DEVTOOLS, description = "A session's DevTools endpoint for Playwright, Puppeteer and CDP clients (docs/cdp.md)"),
    )
)]
pub struct ApiDoc;

/// Adds the Bearer API-key scheme, and the `x-ratelimit-*` headers (plus `retry-after` on 429) to every
/// response of the rate-limited operations, and names the service's public address as the server; run on
/// the document the router collected.
pub struct SecurityAndLimits<'a> {
    /// `--public-url`: where clients reach the service.
    pub public_url: &'a str,
}

impl Modify for SecurityAndLimits<'_> {
    fn modify(&self, doc: &mut Document) {
        doc.servers = Some(vec![utoipa::openapi::server::Server::new(self.public_url)]);
        let components = doc.components.get_or_insert_with(Default::default);
        let bearer = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .bearer_format("API key")
            .description(Some("`Authorization: Bearer <API key>`"))
            .build();
        components.add_security_scheme(API_KEY, SecurityScheme::Http(bearer));
        for path in RATE_LIMITED {
            let Some(item) = doc.paths.paths.get_mut(*path) else { continue };
            let Some(op) = item.post.as_mut() else { continue };
            for (status, response) in op.responses.responses.iter_mut() {
                let RefOr::T(response) = response else { continue };
                for (name, what) in [
                    ("x-ratelimit-limit", "Requests allowed per window (60 s, per user)"),
                    ("x-ratelimit-remaining", "Requests left in the window"),
                    ("x-ratelimit-reset", "Unix time (s) the window frees a request"),
                ] {
                    response.headers.insert(name.to_owned(), RefOr::T(integer_header(what)));
                }
                if status == "429" {
                    response
                        .headers
                        .insert("retry-after".to_owned(), RefOr::T(integer_header("Seconds until a retry")));
                }
            }
        }
        links::add(doc);
        console_assets(doc);
    }
}

/// `GET /console/{asset}`'s parameter as the enum of the files the binary serves, from the same list.
fn console_assets(doc: &mut Document) {
    let Some(op) = doc.paths.paths.get_mut("/console/{asset}").and_then(|item| item.get.as_mut()) else { return };
    for param in op.parameters.iter_mut().flatten() {
        let RefOr::T(param) = param else { continue };
        if param.name != "asset" {
            continue;
        }
        let names = crate::routes::console::asset_names().collect::<Vec<_>>();
        param.schema = Some(RefOr::T(ObjectBuilder::new().schema_type(Type::String).enum_values(Some(names)).into()));
    }
}

fn integer_header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(Some(ObjectBuilder::new().schema_type(Type::Integer)))
        .description(Some(description))
        .build()
}

/// The document as JSON, rendered once when the router is built.
pub fn render(doc: &Document) -> Arc<str> {
    match doc.to_json() {
        Ok(json) => json.into(),
        Err(e) => {
            tracing::error!(error = %e, "rendering the OpenAPI document failed");
            Arc::from("{}")
        }
    }
}

/// `GET /openapi.json` (no authentication).
pub async fn document(json: Arc<str>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], json.to_string()).into_response()
}
