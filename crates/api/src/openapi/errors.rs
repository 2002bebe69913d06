//! Error answers many operations share, as response sets an operation's `responses(...)` names once
//! instead of repeating their rows.
// Never built: the variants only say which statuses an operation answers, and with which body.
#![allow(dead_code)]

use crate::error::ErrorBody;
use utoipa::IntoResponses;

/// What every operation behind the API key may answer besides its own: the key refused (401), the
/// account deactivated (403), or the key could not be checked (500).
#[derive(IntoResponses)]
pub enum AuthErrors {
    #[response(
        status = 401,
        description = "`UNAUTHORIZED` (no or malformed header), `INVALID_API_KEY`, `API_KEY_EXPIRED`"
    )]
    Unauthorized(ErrorBody<'static>),
    #[response(status = 403, description = "`ACCOUNT_DEACTIVATED`")]
    Deactivated(ErrorBody<'static>),
    #[response(status = 500, description = "`INTERNAL_ERROR`")]
    Internal(ErrorBody<'static>),
}

/// [`AuthErrors`] as the webhook, live-view share and MCP operations word their 401, more briefly (kept so
/// the document, and the SDKs generated from it, stay as they are).
#[derive(IntoResponses)]
pub enum AuthErrorsBrief {
    #[response(status = 401, description = "`UNAUTHORIZED`, `INVALID_API_KEY`, `API_KEY_EXPIRED`")]
    Unauthorized(ErrorBody<'static>),
    #[response(status = 403, description = "`ACCOUNT_DEACTIVATED`")]
    Deactivated(ErrorBody<'static>),
    #[response(status = 500, description = "`INTERNAL_ERROR`")]
    Internal(ErrorBody<'static>),
}

/// What every operation that reads a JSON body answers to one over the size limit (413).
#[derive(IntoResponses)]
pub enum BodyErrors {
    #[response(status = 413, description = "`PAYLOAD_TOO_LARGE`")]
    TooLarge(ErrorBody<'static>),
}
