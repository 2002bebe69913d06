//! The client of an operator's CAPTCHA solver service (`--captcha-solver-url`): POSTs
//! `{type, sitekey, pageUrl, action?}` and expects `{token}` within the configured time. The service's
//! address was checked like a webhook URL at start, and requests are pinned to the addresses that passed.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::time::Duration;

/// What the solver is asked.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SolveRequest {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub sitekey: String,
    pub page_url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

#[derive(Deserialize)]
struct SolveAnswer {
    token: String,
}

/// Why the solver gave no token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SolverError {
    #[error("the solver did not answer within {0} s")]
    TimedOut(u64),
    #[error("the solver answered HTTP {0}")]
    Status(u16),
    #[error("the solver could not be reached")]
    Unreachable,
    #[error("the solver's answer had no token")]
    NoToken,
}

impl SolverError {
    /// The outcome recorded in the `human_verification` event.
    pub fn outcome(&self) -> &'static str {
        match self {
            SolverError::TimedOut(_) => "solver_timed_out",
            _ => "solver_failed",
        }
    }
}

/// A configured solver service.
#[derive(Debug, Clone)]
pub struct Solver {
    client: reqwest::Client,
    url: url::Url,
    timeout: Duration,
}

impl Solver {
    /// A client for `url`; `pinned` is the host name and the addresses it may be reached at (from the
    /// webhook URL check), none for an IP literal.
    pub fn new(url: url::Url, pinned: Option<(String, Vec<SocketAddr>)>, timeout: Duration) -> Result<Self, String> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .no_proxy()
            .user_agent("webpilot-captcha-solver-client/1");
        if let Some((domain, addrs)) = &pinned {
            builder = builder.resolve_to_addrs(domain, addrs);
        }
        let client = builder.build().map_err(|e| format!("the solver client could not be built: {e}"))?;
        Ok(Solver { client, url, timeout })
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Asks for a token.
    pub async fn solve(&self, request: &SolveRequest) -> Result<String, SolverError> {
        let answer = tokio::time::timeout(self.timeout, async {
            let response = self.client.post(self.url.clone()).json(request).send().await.map_err(|e| {
                if e.is_timeout() {
                    SolverError::TimedOut(self.timeout.as_secs())
                } else {
                    SolverError::Unreachable
                }
            })?;
            let status = response.status();
            if !status.is_success() {
                return Err(SolverError::Status(status.as_u16()));
            }
            let answer: SolveAnswer = response.json().await.map_err(|_| SolverError::NoToken)?;
            let token = answer.token.trim().to_owned();
            if token.is_empty() {
                return Err(SolverError::NoToken);
            }
            Ok(token)
        })
        .await;
        answer.unwrap_or(Err(SolverError::TimedOut(self.timeout.as_secs())))
    }
}
