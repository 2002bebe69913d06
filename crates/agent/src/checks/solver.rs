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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A one-answer HTTP server: reads the request (to its JSON body's end), waits `delay`, answers `raw`.
    async fn serve(status: &'static str, body: &'static str, delay: Duration) -> url::Url {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        webpilot_tasks::spawn_owned("test solver", async move {
            while let Ok((mut s, _)) = listener.accept().await {
                webpilot_tasks::spawn_owned("test solver connection", async move {
                    let mut got = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !got.ends_with(b"}") {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    tokio::time::sleep(delay).await;
                    let raw = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = s.write_all(raw.as_bytes()).await;
                });
            }
        });
        url::Url::parse(&format!("http://{addr}/solve")).expect("url")
    }

    fn request() -> SolveRequest {
        SolveRequest { kind: "turnstile", sitekey: "0x4K".into(), page_url: "https://a.test/".into(), action: None }
    }

    #[test]
    fn the_request_has_the_documented_shape() {
        let mut r = request();
        assert_eq!(
            serde_json::to_value(&r).expect("json"),
            json!({ "type": "turnstile", "sitekey": "0x4K", "pageUrl": "https://a.test/" })
        );
        r.action = Some("login".into());
        assert_eq!(serde_json::to_value(&r).expect("json")["action"], "login");
    }

    #[tokio::test]
    async fn a_token_an_error_status_no_token_and_no_answer_in_time() {
        let cases: [(&str, &str, Duration, Result<String, SolverError>); 4] = [
            ("200 OK", r#"{"token":" tok-1 "}"#, Duration::ZERO, Ok("tok-1".into())),
            ("500 Internal Server Error", r#"{"error":"x"}"#, Duration::ZERO, Err(SolverError::Status(500))),
            ("200 OK", r#"{"token":""}"#, Duration::ZERO, Err(SolverError::NoToken)),
            ("200 OK", r#"{"token":"late"}"#, Duration::from_secs(30), Err(SolverError::TimedOut(1))),
        ];
        for (status, body, delay, want) in cases {
            let url = serve(status, body, delay).await;
            let solver = Solver::new(url, None, Duration::from_secs(1)).expect("client");
            assert_eq!(solver.solve(&request()).await, want, "{status} {body}");
        }
        let closed = url::Url::parse("http://127.0.0.1:1/solve").expect("url");
        let solver = Solver::new(closed, None, Duration::from_secs(1)).expect("client");
        assert_eq!(solver.solve(&request()).await, Err(SolverError::Unreachable));
        assert_eq!(SolverError::TimedOut(1).outcome(), "solver_timed_out");
        assert_eq!(SolverError::Status(500).outcome(), "solver_failed");
    }
}
