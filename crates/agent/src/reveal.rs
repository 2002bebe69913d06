//! The one place a secret's value is revealed: just before it is typed, for the page the agent is on.

use crate::{AgentContext, AgentError};
use webpilot_core::geometry::PagePoint;
use webpilot_core::policy::url_host;
use webpilot_core::secrets::{SecretError, Secrets};
use webpilot_core::ErrorCode;

/// Where typed text goes, for the host that may receive a secret.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Receiver {
    /// The page's focused field (found by label).
    Page,
    /// The document of observation element N (which may be a cross-origin frame).
    Element(u32),
    /// What a click at a viewport point focuses: the page, never a frame there.
    Point(PagePoint),
}

/// `text` with each `<secret:NAME>` replaced by its value, if the host of the document receiving it may
/// have it. Text without a placeholder is returned as it is.
pub(crate) async fn reveal(ctx: &AgentContext, text: &str, to: Receiver) -> Result<String, AgentError> {
    if !Secrets::has_placeholder(text) {
        return Ok(text.to_owned());
    }
    let host = match to {
        Receiver::Element(i) => ctx.page.host_of_index(i).await.map_err(AgentError::from)?,
        Receiver::Page => url_host(&ctx.page.url().await.map_err(AgentError::from)?).unwrap_or_default(),
        // A frame's origin may be another than the page's, and a point does not say which.
        Receiver::Point(at) => ctx.page.host_at(at).await.map_err(AgentError::from)?.ok_or_else(|| {
            let why = "a secret is typed at a point only into the page itself, not into a frame; use the field's index";
            AgentError::new(ErrorCode::SecretNotAllowed, why)
        })?,
    };
    ctx.secrets.substitute(text, &host).map_err(|e| {
        let code = match e {
            SecretError::Unknown { .. } => ErrorCode::InvalidParams,
            SecretError::NotAllowed { .. } => ErrorCode::SecretNotAllowed,
        };
        AgentError::new(code, e.to_string())
    })
}
