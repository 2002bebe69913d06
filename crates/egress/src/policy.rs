//! A session's side of the egress decision: the avoidDomains it currently has (set per task) and a log
//! of the destinations the proxy did not connect to and why (refused by the policy, not resolved, refused
//! by the host, unreachable), which navigation reads to name a failed load for what it was.

use crate::failure::EgressFailure;
use crate::upstream::Routes;
use parking_lot::{Mutex, RwLock};
use std::collections::VecDeque;
use std::sync::Arc;
use webpilot_core::egress::DenyReason;
use webpilot_core::policy::{is_blocked, url_host};

/// Failures kept per session (older ones are dropped; the count keeps going).
const KEPT_FAILURES: usize = 64;

/// One destination the proxy did not connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Sequence number (1 for the session's first failure).
    pub seq: u64,
    pub host: String,
    pub port: u16,
    pub failure: EgressFailure,
}

/// One connection refused by the policy.
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
    /// The session's upstream proxies (none: every host goes direct).
    routes: RwLock<Routes>,
    log: Mutex<Log>,
}

#[derive(Default, Debug)]
struct Log {
    /// Failures so far (the last one's `seq`).
    count: u64,
    /// Of which refused by the policy.
    denied: u64,
    kept: VecDeque<Failure>,
}

impl DomainPolicy {
    pub fn new(avoid: Vec<String>) -> Self {
        let p = DomainPolicy::default();
        p.set(avoid);
        p
    }

    /// Replaces the list (already normalised host names).
    pub fn set(&self, avoid: Vec<String>) {
        let mut guard = self.inner.avoid.write();
        *guard = avoid;
    }

    /// Sets the session's upstream proxies (before its first navigation).
    pub fn set_routes(&self, routes: Routes) {
        let mut guard = self.inner.routes.write();
        *guard = routes;
    }

    /// The session's upstream proxies.
    pub fn routes(&self) -> Routes {
        self.inner.routes.read().clone()
    }

    pub fn domains(&self) -> Vec<String> {
        self.inner.avoid.read().clone()
    }

    pub fn blocks_host(&self, host: &str) -> bool {
        is_blocked(host, &self.inner.avoid.read())
    }

    pub fn blocks_url(&self, url: &str) -> bool {
        url_host(url).is_some_and(|h| self.blocks_host(&h))
    }

    /// Records a refusal made by the egress proxy.
    pub fn record_denial(&self, host: &str, port: u16, reason: DenyReason) {
        self.record_failure(host, port, EgressFailure::Denied(reason));
    }

    /// Records a destination the egress proxy did not connect to (`host` canonical).
    pub fn record_failure(&self, host: &str, port: u16, failure: EgressFailure) {
        let mut log = self.inner.log.lock();
        log.count += 1;
        if matches!(failure, EgressFailure::Denied(_)) {
            log.denied += 1;
        }
        if log.kept.len() == KEPT_FAILURES {
            log.kept.pop_front();
        }
        let seq = log.count;
        log.kept.push_back(Failure { seq, host: host.to_owned(), port, failure });
    }

    /// Connections refused by the policy so far.
    pub fn denied_count(&self) -> u64 {
        self.inner.log.lock().denied
    }

    /// Failures of any kind so far: the mark for [`failure_since`](Self::failure_since).
    pub fn failure_count(&self) -> u64 {
        self.inner.log.lock().count
    }

    /// The first failure after `since` (a [`failure_count`](Self::failure_count) taken earlier) of
    /// `host:port`.
    pub fn failure_since(&self, since: u64, host: &str, port: u16) -> Option<Failure> {
        let host = webpilot_core::policy::canonical_host(host)?;
        let log = self.inner.log.lock();
        log.kept.iter().find(|f| f.seq > since && f.host == host && f.port == port).cloned()
    }

    /// The first failure after `since` of the host and port of `url`.
    pub fn failure_of_url_since(&self, since: u64, url: &str) -> Option<Failure> {
        let u = url::Url::parse(url).ok()?;
        self.failure_since(since, u.host_str()?, u.port_or_known_default()?)
    }

    /// The first refusal by the policy after `since` (a [`failure_count`](Self::failure_count)) of
    /// `host:port`.
    pub fn denial_since(&self, since: u64, host: &str, port: u16) -> Option<Denial> {
        let host = webpilot_core::policy::canonical_host(host)?;
        let log = self.inner.log.lock();
        log.kept.iter().find_map(|f| match &f.failure {
            EgressFailure::Denied(reason) if f.seq > since && f.host == host && f.port == port => {
                Some(Denial { seq: f.seq, host: f.host.clone(), port, reason: reason.clone() })
            }
            _ => None,
        })
    }

    /// The first refusal after `since` of the host and port of `url`.
    pub fn denial_of_url_since(&self, since: u64, url: &str) -> Option<Denial> {
        let u = url::Url::parse(url).ok()?;
        self.denial_since(since, u.host_str()?, u.port_or_known_default()?)
    }
}
