//! Browser settings, filled from the service configuration.

use crate::sandbox::RunAs;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use webpilot_core::egress::AllowEntry;

#[derive(Debug, Clone)]
pub struct BrowserSettings {
    /// The Chromium executable (Debian: /usr/bin/chromium).
    pub executable: PathBuf,
    /// Chromium processes to spread sessions over.
    pub processes: usize,
    /// Most sessions (browser contexts) open at once, over all processes.
    pub max_sessions: usize,
    /// Time allowed for one DevTools command.
    pub cdp_timeout: Duration,
    /// Time allowed for a navigation to load.
    pub navigation_timeout: Duration,
    /// Time allowed for Chromium to start.
    pub launch_timeout: Duration,
    /// Run Chromium without its sandbox (only when asked for: `--browser-no-sandbox`).
    pub no_sandbox: bool,
    /// The unprivileged user Chromium drops to when the service runs as root.
    pub run_as: Option<RunAs>,
    /// Extra command-line flags.
    pub extra_args: Vec<String>,
    /// Most tabs one session may have open; pages the site opens beyond it are closed at once.
    pub max_tabs: usize,
    /// Destinations the operator allows although they are not public (`--egress-allow`).
    pub egress_allow: Arc<[AllowEntry]>,
    /// Most contexts being prepared at once; more wait their turn, so a burst of session starts does
    /// not starve every one of them past its DevTools timeouts.
    pub max_preparing: usize,
    /// Contexts kept ready for the next session starts (0: every start prepares its own).
    pub warm_contexts: usize,
    /// Most private memory (MiB) one renderer may hold; one that passes it is killed and its session's
    /// page reports PAGE_CRASH (0: no cap).
    pub session_memory_mib: u64,
    /// Remote Chromium DevTools endpoints (`ws://host:port/devtools/browser/<id>` or `http://host:port`);
    /// when any are given the pool uses them, one slot each, and launches no Chromium of its own.
    pub endpoints: Vec<String>,
    /// The address each context's egress proxy listens on. Loopback for local Chromium; for remote
    /// browsers an address of this host they can reach (each proxy then serves its browser's host alone).
    pub egress_listen: std::net::IpAddr,
    /// Largest download kept, in bytes; a bigger one is cancelled.
    pub max_file_bytes: u64,
    /// Most bytes of downloads one session's context keeps.
    pub max_session_file_bytes: u64,
    /// Public keys whose certificate chains local Chromium accepts though no public CA signed them.
    pub trusted_keys: Vec<TrustedKey>,
}

/// A public key the operator trusts for TLS in the browser (`--browser-trust-spki`): the base64 SHA-256 of
/// a certificate's SubjectPublicKeyInfo, as Chromium's `--ignore-certificate-errors-spki-list` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedKey(String);

impl TrustedKey {
    /// Checks that `value` is base64 of 32 bytes (a SHA-256 hash).
    pub fn parse(value: &str) -> Result<Self, String> {
        use base64::Engine;
        let value = value.trim();
        match base64::engine::general_purpose::STANDARD.decode(value) {
            Ok(hash) if hash.len() == 32 => Ok(TrustedKey(value.to_owned())),
            _ => Err("expected the base64 SHA-256 hash of a certificate's public key (44 characters)".into()),
        }
    }

    /// Chromium's flag for these keys; none when there are none.
    pub(crate) fn flag(keys: &[TrustedKey]) -> Option<String> {
        let list: Vec<&str> = keys.iter().map(|k| k.0.as_str()).collect();
        (!list.is_empty()).then(|| format!("--ignore-certificate-errors-spki-list={}", list.join(",")))
    }
}

impl Default for BrowserSettings {
    fn default() -> Self {
        BrowserSettings {
            executable: PathBuf::from("/usr/bin/chromium"),
            processes: 1,
            max_sessions: 4,
            cdp_timeout: Duration::from_secs(15),
            navigation_timeout: Duration::from_secs(20),
            launch_timeout: Duration::from_secs(20),
            no_sandbox: false,
            run_as: None,
            extra_args: Vec::new(),
            max_tabs: 8,
            egress_allow: Arc::from(Vec::new()),
            max_preparing: 4,
            warm_contexts: 2,
            session_memory_mib: 1024,
            endpoints: Vec::new(),
            egress_listen: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            max_file_bytes: 50 * 1024 * 1024,
            max_session_file_bytes: 200 * 1024 * 1024,
            trusted_keys: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TrustedKey;

    #[test]
    fn a_trusted_key_is_a_base64_sha256_and_becomes_one_chromium_flag() {
        let key = "7Qn4shQsdVqmOJhcSV7k42IVNpFmolyoIPBUnGYLbsg=";
        let keys = [TrustedKey::parse(key).expect("a hash"), TrustedKey::parse(&format!(" {key} ")).expect("trimmed")];
        assert_eq!(TrustedKey::flag(&keys), Some(format!("--ignore-certificate-errors-spki-list={key},{key}")));
        assert_eq!(TrustedKey::flag(&[]), None);
        for bad in ["", "not base64!", "AAAA", "7Qn4shQsdVqmOJhcSV7k42IVNpFmolyoIPBUnGYLbsgA"] {
            assert!(TrustedKey::parse(bad).is_err(), "{bad:?}");
        }
    }
}
