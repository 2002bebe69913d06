//! Retrying a model request with exponential backoff and jitter.

use crate::error::LlmError;
use rand::Rng;
use std::future::Future;
use std::time::Duration;

/// Runs `attempt` until it succeeds, fails for good, or `max_retries` retries are spent.
pub(crate) async fn with_retries<T, F, Fut>(max_retries: u32, backoff: Duration, mut attempt: F) -> Result<T, LlmError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, LlmError>>,
{
    let mut delay = backoff;
    let mut tries = 0;
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) if e.is_retryable() && tries < max_retries => {
                tries += 1;
                let jitter = rand::thread_rng().gen_range(0.8..1.2);
                let wait = delay.mul_f64(jitter);
                tracing::warn!(error = %e, attempt = tries, wait_ms = wait.as_millis() as u64, "model call failed; retrying");
                tokio::time::sleep(wait).await;
                delay = (delay * 2).min(Duration::from_secs(8));
            }
            Err(e) => return Err(e),
        }
    }
}

/// POSTs `body` as JSON to `{base_url}/{path}` with retries; `sign` adds the provider's headers.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    config: &crate::LlmConfig,
    path: &str,
    body: &serde_json::Value,
    sign: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
) -> Result<serde_json::Value, LlmError> {
    let url = format!("{}/{path}", config.base_url.trim_end_matches('/'));
    with_retries(config.max_retries, config.backoff, || async {
        let resp = sign(client.post(&url).json(body)).send().await.map_err(LlmError::from_reqwest)?;
        read_json(resp).await
    })
    .await
}

/// Reads a response: the JSON body on success, a `Status` error (body cut to 500 chars) otherwise.
async fn read_json(resp: reqwest::Response) -> Result<serde_json::Value, LlmError> {
    let status = resp.status();
    let text = resp.text().await.map_err(LlmError::from_reqwest)?;
    if !status.is_success() {
        return Err(LlmError::Status { status: status.as_u16(), body: text.chars().take(500).collect() });
    }
    serde_json::from_str(&text).map_err(|e| LlmError::Decode(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn retryable_errors_are_retried_and_others_are_not() {
        let calls = AtomicU32::new(0);
        let r = with_retries(3, Duration::from_millis(1), || async {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            if n < 2 {
                Err(LlmError::Status { status: 503, body: String::new() })
            } else {
                Ok(n)
            }
        })
        .await;
        assert_eq!(r.unwrap(), 2);
        let calls = AtomicU32::new(0);
        let r: Result<(), _> = with_retries(3, Duration::from_millis(1), || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(LlmError::Status { status: 400, body: String::new() })
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
