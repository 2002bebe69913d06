//! Browser errors, each mapped to the error code the client or the agent sees.

use webpilot_core::ErrorCode;

#[derive(Debug, Clone, thiserror::Error)]
pub enum BrowserError {
    #[error("no browser instance is free")]
    NoCapacity,
    #[error("could not start Chromium: {0}")]
    Launch(String),
    #[error("the browser instance is gone")]
    InstanceLost,
    #[error("the browser does not answer; retry later")]
    Unresponsive,
    #[error("DevTools command failed: {0}")]
    Cdp(String),
    #[error("DevTools command timed out: {0}")]
    Timeout(&'static str),
    #[error("navigation to {0} timed out")]
    NavigationTimeout(String),
    #[error("navigation to {url} failed: {reason}")]
    NavigationFailed { url: String, reason: String },
    #[error("navigation to {url} was blocked by policy: {reason}")]
    Blocked { url: String, reason: String },
    /// The site answered an HTTP error status (`None`: Chromium did not say which).
    #[error("opening {url} failed: the site answered {}", http_answer(*status))]
    HttpStatus { url: String, status: Option<u16> },
    #[error("a session may have at most {0} tabs open; close one first")]
    TooManyTabs(usize),
    #[error("element not found: {0}")]
    ElementNotFound(String),
    #[error("the page crashed")]
    PageCrash,
}

impl webpilot_core::Coded for BrowserError {
    fn code(&self) -> ErrorCode {
        BrowserError::code(self)
    }
    /// The error's own words (they name what failed on the page, never a secret), also for a 5xx.
    fn public_message(&self) -> String {
        self.to_string()
    }
}

impl BrowserError {
    pub fn code(&self) -> ErrorCode {
        match self {
            BrowserError::NoCapacity => ErrorCode::NoInstancesAvailable,
            BrowserError::Launch(_) | BrowserError::InstanceLost | BrowserError::Unresponsive => {
                ErrorCode::InstanceUnavailable
            }
            BrowserError::Cdp(_) | BrowserError::Timeout(_) => ErrorCode::InternalError,
            // One code for every navigation that did not load, as the spec's code table defines it
            // ("page navigation timed out (slow site, network, blocking)"); the message says which.
            BrowserError::NavigationTimeout(_)
            | BrowserError::NavigationFailed { .. }
            | BrowserError::Blocked { .. } => ErrorCode::NavigationTimeout,
            BrowserError::HttpStatus { .. } => ErrorCode::PageHttpError,
            BrowserError::ElementNotFound(_) => ErrorCode::ElementNotFound,
            BrowserError::TooManyTabs(_) => ErrorCode::InvalidParameter,
            BrowserError::PageCrash => ErrorCode::PageCrash,
        }
    }
}

fn http_answer(status: Option<u16>) -> String {
    match status {
        Some(s) => format!("HTTP {s}"),
        None => "with an HTTP error status".to_owned(),
    }
}

impl From<chromiumoxide::error::CdpError> for BrowserError {
    fn from(e: chromiumoxide::error::CdpError) -> Self {
        use chromiumoxide::error::CdpError;
        match e {
            CdpError::Ws(_) | CdpError::ChannelSendError(_) | CdpError::NoResponse => BrowserError::InstanceLost,
            CdpError::Timeout => BrowserError::Timeout("command"),
            other => BrowserError::Cdp(other.to_string()),
        }
    }
}

/// Runs a DevTools future under a deadline, mapping both failure kinds.
pub(crate) async fn within<T, E: Into<BrowserError>>(
    limit: std::time::Duration,
    what: &'static str,
    fut: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, BrowserError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r.map_err(Into::into),
        Err(_) => Err(BrowserError::Timeout(what)),
    }
}
