//! A session's side of the egress decision: the avoidDomains it currently has (set per task) and a log
//! of what the proxy refused, which navigation reads to tell "blocked by policy" from a network error.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, RwLock};
use webpilot_core::egress::DenyReason;
use webpilot_core::policy::{is_blocked, url_host};

/// Refusals kept per session (older ones are dropped; the count keeps going).
const KEPT_DENIALS: usize = 64;

/// One refused connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// Sequence number (1 for the session's first refusal).
    pub seq: u64,
    pub host: String,
    pub port: u16,
    pub reason: DenyReason,
}

/// Shared by the session (which sets the domains per task), its egress proxy (which reads them per
/// connection and logs refusals) and its pages (which read the log after a navigation).
#[derive(Clone, Default, Debug)]
pub struct DomainPolicy {
    inner: Arc<Inner>,
}

#[derive(Default, Debug)]
struct Inner {
    avoid: RwLock<Vec<String>>,
    denials: Mutex<(u64, VecDeque<Denial>)>,
}

impl DomainPolicy {
    pub fn new(avoid: Vec<String>) -> Self {
        let p = DomainPolicy::default();
        p.set(avoid);
        p
    }

    /// Replaces the list (already normalised host names).
    pub fn set(&self, avoid: Vec<String>) {
        if let Ok(mut guard) = self.inner.avoid.write() {
            *guard = avoid;
        }
    }

    pub fn domains(&self) -> Vec<String> {
        self.inner.avoid.read().map(|g| g.clone()).unwrap_or_default()
    }

    pub fn blocks_host(&self, host: &str) -> bool {
        self.inner.avoid.read().map(|g| is_blocked(host, &g)).unwrap_or(true)
    }

    pub fn blocks_url(&self, url: &str) -> bool {
        url_host(url).is_some_and(|h| self.blocks_host(&h))
    }

    /// Records a refusal made by the egress proxy.
    pub fn record_denial(&self, host: &str, port: u16, reason: DenyReason) {
        if let Ok(mut guard) = self.inner.denials.lock() {
            let (count, log) = &mut *guard;
            *count += 1;
            if log.len() == KEPT_DENIALS {
                log.pop_front();
            }
            log.push_back(Denial { seq: *count, host: host.to_owned(), port, reason });
        }
    }

    /// Connections refused so far.
    pub fn denied_count(&self) -> u64 {
        self.inner.denials.lock().map(|g| g.0).unwrap_or(0)
    }

    /// The first refusal after `since` (a [`denied_count`](Self::denied_count) taken earlier) of
    /// `host:port`.
    pub fn denial_since(&self, since: u64, host: &str, port: u16) -> Option<Denial> {
        let host = webpilot_core::policy::canonical_host(host)?;
        let guard = self.inner.denials.lock().ok()?;
        guard.1.iter().find(|d| d.seq > since && d.host == host && d.port == port).cloned()
    }

    /// The first refusal after `since` of the host and port of `url`.
    pub fn denial_of_url_since(&self, since: u64, url: &str) -> Option<Denial> {
        let u = url::Url::parse(url).ok()?;
        self.denial_since(since, u.host_str()?, u.port_or_known_default()?)
    }
}
