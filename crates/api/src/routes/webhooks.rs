//! Webhook endpoints of the caller's account: `POST /webhooks` registers one (the signing secret is shown
//! once), `GET /webhooks` lists them, `DELETE /webhooks/{id}`, `POST /webhooks/{id}/rotate-secret` (the old
//! secret keeps signing for 24 h), `GET /webhooks/{id}/deliveries` (the latest attempts). Delivery is the
//! `webpilot-webhooks` worker's; the messages are queued by the store with the state they describe.

use crate::auth::AuthUser;
use crate::body::Valid;
use crate::error::ErrorBody;
use crate::error::ErrorResponse;
use crate::openapi::errors::{AuthErrorsBrief, BodyErrors};
use crate::openapi::events::WebhookEventType;
use crate::openapi::WEBHOOKS;
use crate::path::Path;
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use utoipa::openapi::schema::{ArrayBuilder, RefBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;
use webpilot_core::params::decl::{component, plain, typed, BodyField, BodyGroup, Components};
use webpilot_core::params::{Fields, RequestBody};
use webpilot_core::{ApiError, ErrorCode};
use webpilot_store::{now_ms, rfc3339, DeliveryRecord, WebhookRecord, WEBHOOK_EVENTS};
use webpilot_webhooks::{check_url, new_secret};

/// Most webhooks one user may register.
pub const MAX_WEBHOOKS_PER_USER: usize = 10;
/// How long a rotated-out secret keeps signing.
const OLD_SECRET_VALID_MS: i64 = 24 * 3600 * 1000;
const MAX_URL_LEN: usize = 2048;
const MAX_DESCRIPTION_LEN: usize = 256;
const DELIVERIES_LISTED: i64 = 100;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookView {
    webhook_id: String,
    url: String,
    /// The subscribed event types (all of them when none were named).
    events: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    /// RFC 3339, UTC.
    created_at: String,
}

impl From<WebhookRecord> for WebhookView {
    fn from(r: WebhookRecord) -> Self {
        let events =
            if r.events.is_empty() { WEBHOOK_EVENTS.iter().map(|e| e.to_string()).collect() } else { r.events };
        WebhookView {
            webhook_id: r.id,
            url: r.url,
            events,
            description: r.description,
            created_at: rfc3339(r.created_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookCreated {
    success: bool,
    #[serde(flatten)]
    webhook: WebhookView,
    /// Shown once: the `whsec_…` secret that signs every delivery.
    secret: String,
}

#[derive(Serialize, ToSchema)]
pub struct WebhookList {
    success: bool,
    webhooks: Vec<WebhookView>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretRotated {
    success: bool,
    webhook_id: String,
    secret: String,
    /// Until when (RFC 3339, UTC) the previous secret still signs, beside the new one.
    previous_secret_valid_until: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryView {
    message_id: String,
    #[serde(rename = "type")]
    event_type: String,
    attempt: i64,
    status_code: Option<i64>,
    error: Option<String>,
    latency_ms: i64,
    /// RFC 3339, UTC.
    created_at: String,
}

impl From<DeliveryRecord> for DeliveryView {
    fn from(d: DeliveryRecord) -> Self {
        DeliveryView {
            message_id: d.message_id,
            event_type: d.event_type,
            attempt: d.attempt,
            status_code: d.status_code,
            error: d.error,
            latency_ms: d.latency_ms,
            created_at: rfc3339(d.created_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct DeliveryList {
    success: bool,
    deliveries: Vec<DeliveryView>,
}

#[derive(Serialize, ToSchema)]
pub struct Done {
    success: bool,
    message: &'static str,
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidParams, message)
}

webpilot_core::body! {
    /// The body of `POST /webhooks`.
    pub struct NewWebhook as NewWebhookRequest unknown refuse_unknown {
        /// An absolute http or https URL whose host resolves only to public addresses.
        req "url" url: WebhookUrl,
        /// The event types to deliver (all of them when absent).
        opt "events" events: WebhookEvents,
        opt "description" description: WebhookDescription,
    }
}

impl RequestBody for NewWebhook {
    fn from_json(body: &Value) -> Result<Self, ApiError> {
        <NewWebhook as BodyGroup>::read(&Fields::of(body, "the body")?)
    }
}

/// A field not declared is refused, before any field is read.
fn refuse_unknown(f: &Fields<'_>, declared: &[&str]) -> Result<(), ApiError> {
    match f.names().find(|name| !declared.contains(name)) {
        Some(unknown) => Err(invalid(format!("unknown field '{unknown}'"))),
        None => Ok(()),
    }
}

/// `url`: 1 to [`MAX_URL_LEN`] bytes, not blank, kept trimmed; `null` is not a string.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookUrl(pub String);

impl BodyField for WebhookUrl {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::String, nullable, description).max_length(Some(MAX_URL_LEN)).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        match f.raw(name) {
            None => Ok(None),
            Some(Value::String(u)) if !u.trim().is_empty() && u.len() <= MAX_URL_LEN => Ok(Some(Self(u.trim().into()))),
            Some(Value::String(_)) => Err(invalid(format!("{name} must be 1 to {MAX_URL_LEN} characters"))),
            Some(_) => Err(invalid(format!("{name} must be a string"))),
        }
    }
}

/// `events`: a non-empty list of [`WEBHOOK_EVENTS`], each kept once; an empty list would be stored as "no
/// filter" and receive every event, so it is refused, not guessed at.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookEvents(pub Vec<String>);

impl BodyField for WebhookEvents {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        let items = RefBuilder::new().ref_location_from_schema_name(WebhookEventType::name());
        let list = ArrayBuilder::new().schema_type(typed(Type::Array, nullable)).items(items);
        list.description(description).into()
    }
    fn components(out: &mut Components) {
        component::<WebhookEventType>(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        let list = match f.get(name) {
            None => return Ok(None),
            Some(Value::Array(list)) => list,
            Some(_) => return Err(invalid(format!("{name} must be an array of event types"))),
        };
        if list.is_empty() {
            let msg = format!("{name} must name at least one event type; omit {name} to receive all of them");
            return Err(ApiError::new(ErrorCode::InvalidParameter, msg));
        }
        let mut events: Vec<String> = Vec::new();
        for e in list {
            let only = || invalid(format!("{name} may name only {}", WEBHOOK_EVENTS.join(", ")));
            let event = e.as_str().filter(|n| WEBHOOK_EVENTS.contains(n)).ok_or_else(only)?;
            if !events.iter().any(|x| x == event) {
                events.push(event.to_owned());
            }
        }
        Ok(Some(Self(events)))
    }
}

/// `description`: any text of at most [`MAX_DESCRIPTION_LEN`] characters, kept as given.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookDescription(pub String);

impl BodyField for WebhookDescription {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::String, nullable, description).max_length(Some(MAX_DESCRIPTION_LEN)).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        match f.get(name) {
            None => Ok(None),
            Some(Value::String(d)) if d.chars().count() <= MAX_DESCRIPTION_LEN => Ok(Some(Self(d.clone()))),
            Some(_) => Err(invalid(format!("{name} must be a string of at most {MAX_DESCRIPTION_LEN} characters"))),
        }
    }
}

/// `POST /webhooks {url, events?, description?}`.
#[utoipa::path(post, path = "/webhooks", operation_id = "createWebhook", tag = WEBHOOKS, security(("apiKey" = [])),
    request_body(content = NewWebhook),
    responses(
        AuthErrorsBrief, BodyErrors,
        (status = 200, description = "Registered; the `whsec_` secret is shown once", body = WebhookCreated),
        (status = 400, description = "`INVALID_PARAMS` (bad or refused url, unknown event, too many webhooks), `INVALID_PARAMETER` (`events: []`; omit `events` for all of them), `MISSING_REQUIRED_FIELD`", body = ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Valid(new): Valid<NewWebhook>,
) -> Result<Json<WebhookCreated>, ErrorResponse> {
    let (url, description) = (new.url.0, new.description.map(|d| d.0));
    let events = new.events.map(|e| e.0).unwrap_or_default();
    check_url(&url, &state.config.egress_allow).await.map_err(|e| invalid(e.to_string()))?;
    let secret = new_secret();
    let max = MAX_WEBHOOKS_PER_USER as i64;
    let created = state.store.create_webhook(&user.id, &url, &events, description.as_deref(), &secret, max).await?;
    let Some(record) = created else {
        let msg = format!("a user may register at most {MAX_WEBHOOKS_PER_USER} webhooks; delete one first");
        return Err(invalid(msg).into());
    };
    tracing::info!(user = %user.id, webhook = %record.id, "webhook registered");
    Ok(Json(WebhookCreated { success: true, webhook: record.into(), secret }))
}

/// `GET /webhooks`.
#[utoipa::path(get, path = "/webhooks", operation_id = "listWebhooks", tag = WEBHOOKS, security(("apiKey" = [])),
    responses(AuthErrorsBrief, (status = 200, description = "The caller's webhooks (never a secret)", body = WebhookList)))]
pub async fn list(State(state): State<AppState>, AuthUser(user): AuthUser) -> Result<Json<WebhookList>, ErrorResponse> {
    let hooks = state.store.list_webhooks(&user.id).await?;
    Ok(Json(WebhookList { success: true, webhooks: hooks.into_iter().map(WebhookView::from).collect() }))
}

/// `DELETE /webhooks/{id}`: its undelivered messages are dropped.
#[utoipa::path(delete, path = "/webhooks/{webhookId}", operation_id = "deleteWebhook", tag = WEBHOOKS, security(("apiKey" = [])), params(("webhookId" = String, Path)),
    responses(AuthErrorsBrief, (status = 200, description = "Deleted", body = Done), (status = 404, description = "`WEBHOOK_NOT_FOUND` (unknown, or another user's)", body = ErrorBody)))]
pub async fn remove(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<Done>, ErrorResponse> {
    match state.store.delete_webhook(&user.id, &id).await? {
        true => Ok(Json(Done { success: true, message: "webhook deleted" })),
        false => Err(ApiError::code(ErrorCode::WebhookNotFound).into()),
    }
}

/// `POST /webhooks/{id}/rotate-secret`.
#[utoipa::path(post, path = "/webhooks/{webhookId}/rotate-secret", operation_id = "rotateWebhookSecret", tag = WEBHOOKS, security(("apiKey" = [])), params(("webhookId" = String, Path)),
    responses(AuthErrorsBrief, (status = 200, description = "The new secret, shown once", body = SecretRotated), (status = 404, description = "`WEBHOOK_NOT_FOUND` (unknown, or another user's)", body = ErrorBody)))]
pub async fn rotate_secret(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<SecretRotated>, ErrorResponse> {
    let secret = new_secret();
    let until = now_ms() + OLD_SECRET_VALID_MS;
    match state.store.rotate_webhook_secret(&user.id, &id, &secret, until).await? {
        true => Ok(Json(SecretRotated {
            success: true,
            webhook_id: id,
            secret,
            previous_secret_valid_until: rfc3339(until),
        })),
        false => Err(ApiError::code(ErrorCode::WebhookNotFound).into()),
    }
}

/// `GET /webhooks/{id}/deliveries`: the latest attempts, newest first.
#[utoipa::path(get, path = "/webhooks/{webhookId}/deliveries", operation_id = "listWebhookDeliveries", tag = WEBHOOKS, security(("apiKey" = [])), params(("webhookId" = String, Path)),
    responses(AuthErrorsBrief, (status = 200, description = "The latest 100 attempts, newest first", body = DeliveryList), (status = 404, description = "`WEBHOOK_NOT_FOUND` (unknown, or another user's)", body = ErrorBody)))]
pub async fn deliveries(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<DeliveryList>, ErrorResponse> {
    match state.store.webhook_deliveries(&user.id, &id, DELIVERIES_LISTED).await? {
        Some(list) => {
            Ok(Json(DeliveryList { success: true, deliveries: list.into_iter().map(DeliveryView::from).collect() }))
        }
        None => Err(ApiError::code(ErrorCode::WebhookNotFound).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::NewWebhook;
    use serde_json::{json, Value};
    use utoipa::{PartialSchema, ToSchema};
    use webpilot_core::params::RequestBody;

    fn refused(body: Value) -> String {
        NewWebhook::from_json(&body).map(|_| ()).expect_err("refused").message
    }

    #[test]
    fn a_new_webhook_is_checked_in_its_order() {
        let body = json!({"url": null, "events": [], "description": 5, "extra": 1});
        assert_eq!(refused(body.clone()), "unknown field 'extra'");
        let mut body = body.as_object().cloned().unwrap_or_default();
        body.remove("extra");
        assert_eq!(refused(body.clone().into()), "url must be a string", "null is not absent here");
        body.insert("url".into(), json!("https://hooks.example/x"));
        assert!(refused(body.clone().into()).starts_with("events must name at least one event type"));
        body.insert("events".into(), json!(["task.completed", "task.completed"]));
        assert_eq!(refused(body.clone().into()), "description must be a string of at most 256 characters");
        body.remove("description");
        let new = NewWebhook::from_json(&body.into()).expect("accepted");
        assert_eq!(new.events.map(|e| e.0), Some(vec!["task.completed".to_owned()]), "each event kept once");
        assert_eq!(refused(json!({})), "url is required");
        assert_eq!(refused(json!([])), "the body must be a JSON object");
    }

    /// Each `maxLength` the document gives is the check's: the edge accepted, one past it refused.
    #[test]
    fn a_new_webhooks_documented_bounds_are_checked() {
        assert_eq!(NewWebhook::name(), "NewWebhookRequest");
        let schema = serde_json::to_value(NewWebhook::schema()).expect("a schema is JSON");
        assert_eq!(schema["required"], json!(["url"]));
        let mut checked = 0;
        for (name, property) in schema["properties"].as_object().into_iter().flatten() {
            let Some(max) = property["maxLength"].as_u64().and_then(|m| usize::try_from(m).ok()) else { continue };
            let body = |n: usize| {
                let mut body = json!({"url": "https://hooks.example/x"});
                body[name] = json!("h".repeat(n));
                NewWebhook::from_json(&body)
            };
            assert!(body(max).is_ok(), "{name} at its maxLength {max}");
            assert!(body(max + 1).is_err_and(|e| e.message.contains(name.as_str())), "{name} one past {max}");
            checked += 1;
        }
        assert_eq!(checked, 2, "url and description");
    }
}
