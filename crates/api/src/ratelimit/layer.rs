//! The rate limit as a route layer: on the work-starting routes (start-session, run-task, send-message,
//! share, chat completions) it authenticates the caller, counts the request in the caller's window (also
//! one that then fails), refuses past the limit with 429 `RATE_LIMIT_EXCEEDED`, and adds the
//! `x-ratelimit-*` headers (and `retry-after`) to whatever the answer is. Handlers take the counted
//! caller as [`LimitedUser`].

use crate::auth::AuthUser;
use crate::error::ErrorResponse;
use crate::state::AppState;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use webpilot_core::{ApiError, ErrorCode};
use webpilot_store::User;

/// The caller of a rate-limited route, authenticated and counted by [`limit`].
pub struct LimitedUser(pub User);

impl FromRequestParts<AppState> for LimitedUser {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, _state: &AppState) -> Result<Self, Self::Rejection> {
        match parts.extensions.remove::<CountedCaller>() {
            Some(CountedCaller(user)) => Ok(LimitedUser(user)),
            // A route that takes a counted caller without the layer: a mistake in the router, not the caller's.
            None => Err(ApiError::new(ErrorCode::InternalError, "the route is not rate limited").into()),
        }
    }
}

/// Put into the request by the layer for the handler.
#[derive(Clone)]
struct CountedCaller(User);

/// The layer: authenticate, count, run the handler if allowed, and add the rate-limit headers.
pub async fn limit(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let user = match AuthUser::from_request_parts(&mut parts, &state).await {
        Ok(AuthUser(user)) => user,
        Err(refused) => return refused.into_response(),
    };
    let d = state.rate.hit(&user.id).await;
    let mut response = if d.allowed {
        parts.extensions.insert(CountedCaller(user));
        next.run(Request::from_parts(parts, body)).await
    } else {
        let msg = format!("rate limit exceeded, try again in {} seconds", d.retry_after);
        ErrorResponse(ApiError::new(ErrorCode::RateLimitExceeded, msg)).into_response()
    };
    let headers = response.headers_mut();
    let mut set = |name: &'static str, v: u64| {
        headers.insert(HeaderName::from_static(name), HeaderValue::from(v));
    };
    set("x-ratelimit-limit", u64::from(d.limit));
    set("x-ratelimit-remaining", u64::from(d.remaining));
    set("x-ratelimit-reset", d.reset_unix);
    if !d.allowed {
        set("retry-after", d.retry_after);
    }
    response
}
