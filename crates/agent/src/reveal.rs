//! The one place a secret's value is revealed: just before it is typed, for the page the agent is on.

use crate::{AgentContext, AgentError};
use webpilot_core::policy::url_host;
use webpilot_core::secrets::{SecretError, Secrets};
use webpilot_core::ErrorCode;

/// `text` with each `<secret:NAME>` replaced by its value, if the host of the document receiving it may
/// have it: the document of element `index` (which may be a cross-origin frame), else the page's.
/// Text without a placeholder is returned as it is.
pub(crate) async fn reveal(ctx: &AgentContext, text: &str, index: Option<u32>) -> Result<String, AgentError> {
    if !Secrets::has_placeholder(text) {
        return Ok(text.to_owned());
    }
    let host = match index {
        Some(i) => ctx.page.host_of_index(i).await.map_err(AgentError::from)?,
        None => url_host(&ctx.page.url().await.map_err(AgentError::from)?).unwrap_or_default(),
    };
    ctx.secrets.substitute(text, &host).map_err(|e| {
        let code = match e {
            SecretError::Unknown { .. } => ErrorCode::InvalidParams,
            SecretError::NotAllowed { .. } => ErrorCode::SecretNotAllowed,
        };
        AgentError::new(code, e.to_string())
    })
}
