//! `GET /usage`: what left the caller's balance, so it can be reconciled from API answers alone. One line
//! per charge (a task's usage, a session's open time), newest first, paged by an opaque cursor, optionally
//! within `[since, until)`; with the balance now and what running tasks hold of it. Credits (top-ups) are
//! not lines: the lines of a new user add up to what left its balance. It also says what the caller's files
//! and recordings take against the storage quota.

use crate::auth::AuthUser;
use crate::error::{ErrorBody, ErrorResponse};
use crate::openapi::errors::AuthErrors;
use crate::openapi::BILLING;
use crate::paging;
use crate::query::Query;
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use webpilot_core::usage::micros_to_usd;
use webpilot_core::{ApiError, ErrorCode};
use webpilot_store::{rfc3339, UsageLine, UsagePage};

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// Charges made at or after this time (RFC 3339).
    since: Option<String>,
    /// Charges made before this time (RFC 3339).
    until: Option<String>,
    /// 1 to 200 (default 50).
    limit: Option<i64>,
    /// The `next` of the page before.
    cursor: Option<String>,
}

/// One charge.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageLineView {
    /// `task` (a task's tokens and compute) or `session` (a session's open time).
    kind: String,
    /// The session charged for, or the task's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    task_id: Option<String>,
    /// What left the balance, in USD.
    cost: f64,
    /// RFC 3339, UTC.
    created_at: String,
}

/// What the caller's files and recordings take, against the storage quota.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageView {
    /// Bytes of the caller's stored files and recordings.
    used_bytes: i64,
    /// The most they may take together (`--storage-quota`); absent when there is no quota.
    #[serde(skip_serializing_if = "Option::is_none")]
    quota_bytes: Option<i64>,
}

/// Body of `GET /usage`.
#[derive(Serialize, ToSchema)]
pub struct UsageAnswer {
    success: bool,
    /// The balance now, in USD.
    balance: f64,
    /// What open sessions and running tasks hold of the balance now (USD): not charged yet.
    held: f64,
    lines: Vec<UsageLineView>,
    storage: StorageView,
    /// The cursor of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
}

fn bad(message: impl Into<String>) -> ErrorResponse {
    ApiError::new(ErrorCode::InvalidParameter, message).into()
}

fn time(name: &str, value: Option<&str>, default: i64) -> Result<i64, ErrorResponse> {
    match value {
        None => Ok(default),
        Some(t) => chrono::DateTime::parse_from_rfc3339(t)
            .map(|t| t.timestamp_millis())
            .map_err(|_| bad(format!("{name} must be an RFC 3339 time (2026-11-27T10:00:00Z)"))),
    }
}

/// The cursor is the last line's time and id: `<ms>.<id>`.
fn cursor(text: &str) -> Result<(i64, String), ErrorResponse> {
    let parsed = text.split_once('.').and_then(|(at, id)| Some((at.parse().ok()?, id.to_owned())));
    parsed.filter(|(_, id)| !id.is_empty()).ok_or_else(|| bad("cursor is not one this endpoint gave"))
}

fn view(l: UsageLine) -> UsageLineView {
    // A task's line names its session when the task is known to be of one: the ledger keeps the task.
    UsageLineView {
        kind: l.kind,
        session_id: l.session_id,
        task_id: l.task_id,
        cost: micros_to_usd(l.cost_micros),
        created_at: rfc3339(l.created_at),
    }
}

/// The caller's charges, newest first.
#[utoipa::path(get, path = "/usage", operation_id = "getUsage", tag = BILLING, security(("apiKey" = [])),
    params(UsageQuery),
    responses(
        AuthErrors,
        (status = 200, description = "The balance, what is held, and the charges", body = UsageAnswer),
        (status = 400, description = "`INVALID_PARAMETER` (a time, the limit or the cursor)", body = ErrorBody),
    ))]
pub async fn usage(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Query(q): Query<UsageQuery>,
) -> Result<Json<UsageAnswer>, ErrorResponse> {
    let limit = paging::limit(q.limit)?;
    let page = UsagePage {
        since: time("since", q.since.as_deref(), 0)?,
        until: time("until", q.until.as_deref(), i64::MAX)?,
        after: q.cursor.as_deref().map(cursor).transpose()?,
        // One more than asked: whether a next page exists.
        limit: limit + 1,
    };
    let mut lines = state.store.usage_lines(&user.id, &page).await?;
    let next = match lines.len() as i64 > limit {
        true => {
            lines.truncate(limit as usize);
            lines.last().map(|l| format!("{}.{}", l.created_at, l.id))
        }
        false => None,
    };
    let balance = state.store.get_user(&user.id).await?.map_or(user.balance_micros, |u| u.balance_micros);
    let held = state.manager.held_micros(&user.id).await.map_err(webpilot_core::ApiError::from)?;
    let storage = StorageView {
        used_bytes: state.store.storage_bytes(&user.id).await?,
        quota_bytes: state.manager.config().storage_quota_bytes,
    };
    Ok(Json(UsageAnswer {
        success: true,
        balance: micros_to_usd(balance),
        held: micros_to_usd(held),
        lines: lines.into_iter().map(view).collect(),
        storage,
        next,
    }))
}
