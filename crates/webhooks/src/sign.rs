//! Signing in the Standard Webhooks format (`webhook-id`, `webhook-timestamp`, `webhook-signature`:
//! `v1,<base64 HMAC-SHA256 of id.timestamp.body>`), through the reference `standardwebhooks` crate so any
//! Standard Webhooks verifier accepts it unchanged. Secrets are `whsec_` + base64 of 32 random bytes.

use base64::Engine;
use rand::RngCore;
use standardwebhooks::Webhook;

/// A fresh signing secret.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The three headers for `body` sent as message `id` at `timestamp` (Unix seconds), signed with every
/// secret in `secrets` (after a rotation, the new one and the old one, space-separated as the format
/// allows). A secret that does not parse signs nothing.
pub fn signature_headers(id: &str, timestamp: i64, body: &str, secrets: &[String]) -> Vec<(&'static str, String)> {
    let signatures: Vec<String> = secrets
        .iter()
        .filter_map(|s| Webhook::new(s).ok())
        .filter_map(|w| w.sign(id, timestamp, body.as_bytes()).ok())
        .collect();
    vec![
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", signatures.join(" ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_message_verifies_with_either_secret() {
        let (new, old) = (new_secret(), new_secret());
        assert!(new.starts_with("whsec_"));
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let body = r#"{"type":"task.completed","timestamp":"2026-11-25T10:00:00Z","data":{}}"#;
        let headers = signature_headers("msg_1", now as i64, body, &[new.clone(), old.clone()]);
        let mut map = http::HeaderMap::new();
        for (name, value) in headers {
            map.insert(name, value.parse().expect("header"));
        }
        for secret in [&new, &old] {
            Webhook::new(secret).expect("secret").verify(body.as_bytes(), &map).expect("verifies");
        }
        assert!(Webhook::new(&new_secret()).expect("secret").verify(body.as_bytes(), &map).is_err());
    }
}
