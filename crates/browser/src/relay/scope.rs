//! What one DevTools client may see: its session's browser context, the targets in it (kept from the
//! relay's own target discovery), the DevTools sessions the client attached, the windows it was told of,
//! and the session's file area. It answers the allow-list's questions (`rules::Scope`), counting the
//! pages being opened and closed by commands still in flight, in every DevTools connection of the session
//! ([`TabClaims`]), so no burst, from one connection or several, passes the tab cap or closes the last page.

use parking_lot::{Mutex, MutexGuard};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// What all DevTools connections of one session have under way with its pages, held by the session
/// (`page::Inner`) and shared by its relays.
#[derive(Default)]
pub(crate) struct TabClaims(Mutex<Claims>);

#[derive(Default)]
struct Claims {
    /// `Target.createTarget`s sent and not answered yet.
    creating: usize,
    /// Pages Chromium created for a relay that the session has not adopted as tabs yet.
    unadopted: HashSet<String>,
    /// Pages a `Target.closeTarget` or `Page.close` was sent for, unless it failed. Kept once the page is
    /// gone (a target id is never reused), so a page still listed somewhere never counts as another one.
    closing: HashSet<String>,
}

/// At most this many closed pages are remembered; past it, those no source lists any more are forgotten.
const CLOSING_KEPT: usize = 256;

impl TabClaims {
    fn lock(&self) -> MutexGuard<'_, Claims> {
        // The claims are plain counts and sets, valid after any panic of a holder.
        self.0.lock()
    }
}

/// The session's tabs as it has adopted them (target ids); none once the session is gone.
pub(crate) type SessionTabs = Box<dyn Fn() -> Vec<String> + Send + Sync>;

/// This connection's share of the claims, given back when it ends.
#[derive(Default)]
struct Mine {
    creating: usize,
    unadopted: HashSet<String>,
}

/// Target types Chromium attaches at browser level (frames and dedicated workers come from their pages).
const ATTACHABLE: &[&str] = &["page", "tab", "service_worker", "shared_worker"];

/// Whether targets of `kind` are attached by a browser-level auto-attach.
pub(crate) fn attaches_at_browser_level(kind: &str) -> bool {
    ATTACHABLE.contains(&kind)
}

/// Whether a `TargetFilter` (a list of `{type?, exclude?}`, the first entry whose type matches decides)
/// lets a target of `kind` through; none means Chromium's default, which leaves out the browser and tabs.
pub(crate) fn filter_allows(filter: Option<&Value>, kind: &str) -> bool {
    let Some(entries) = filter.and_then(Value::as_array) else {
        return kind != "browser" && kind != "tab";
    };
    for entry in entries {
        let matches = entry.get("type").and_then(Value::as_str).is_none_or(|t| t == kind);
        if matches {
            return !entry.get("exclude").and_then(Value::as_bool).unwrap_or(false);
        }
    }
    false
}

pub(crate) struct ClientScope {
    pub context: String,
    pub files_dir: Option<PathBuf>,
    pub max_tabs: usize,
    /// The context's targets by id (their latest `TargetInfo`).
    pub targets: HashMap<String, Value>,
    /// Sessions the client attached, and those attached under them.
    pub sessions: HashSet<String>,
    pub windows: HashSet<i64>,
    /// The target each of those sessions is attached to (when Chromium said so).
    pub session_targets: HashMap<String, String>,
    /// The session's page claims, shared with its other connections.
    claims: Arc<TabClaims>,
    session_tabs: SessionTabs,
    mine: Mine,
}

impl ClientScope {
    pub fn new(
        context: String,
        files_dir: Option<PathBuf>,
        max_tabs: usize,
        shared: (Arc<TabClaims>, SessionTabs),
    ) -> Self {
        let (claims, session_tabs) = shared;
        ClientScope {
            context,
            files_dir,
            max_tabs,
            targets: HashMap::new(),
            sessions: HashSet::new(),
            windows: HashSet::new(),
            session_targets: HashMap::new(),
            claims,
            session_tabs,
            mine: Mine::default(),
        }
    }

    /// A `Target.createTarget` was sent: the page counts from now on, in every connection.
    pub fn creating(&mut self) {
        self.claims.lock().creating += 1;
        self.mine.creating += 1;
    }

    /// Chromium answered a `Target.createTarget`, with the new page when it made one: that page counts
    /// until the session has adopted it.
    pub fn created(&mut self, target: Option<&str>) {
        let mut claims = self.claims.lock();
        claims.creating = claims.creating.saturating_sub(1);
        self.mine.creating = self.mine.creating.saturating_sub(1);
        if let Some(t) = target {
            claims.unadopted.insert(t.to_owned());
            self.mine.unadopted.insert(t.to_owned());
        }
    }

    /// The session adopted a page this connection created: its tabs count it now.
    pub fn adopted(&mut self, target: &str) {
        self.claims.lock().unadopted.remove(target);
        self.mine.unadopted.remove(target);
    }

    /// A close of `target` was sent: it no longer counts as a page another close may leave.
    pub fn closing(&mut self, target: &str) {
        let mut claims = self.claims.lock();
        if claims.closing.len() >= CLOSING_KEPT {
            let listed = self.listed_pages();
            claims.closing.retain(|t| listed.contains(t));
        }
        claims.closing.insert(target.to_owned());
    }

    /// A close of `target` failed: it is a page again.
    pub fn close_failed(&mut self, target: &str) {
        self.claims.lock().closing.remove(target);
    }

    /// Pages that exist as far as any connection knows: those [`Self::listed_pages`] lists and those made
    /// for a relay but not adopted yet.
    fn known_pages(&self, claims: &Claims) -> HashSet<String> {
        let mut pages = self.listed_pages();
        pages.extend(claims.unadopted.iter().cloned());
        pages
    }

    /// Pages this connection's discovery or the session's tabs list.
    fn listed_pages(&self) -> HashSet<String> {
        let mut ids: HashSet<String> =
            self.targets.iter().filter(|(_, i)| Self::is_page(i)).map(|(id, _)| id.clone()).collect();
        ids.extend((self.session_tabs)());
        ids
    }

    /// Whether a `TargetInfo` is of this context.
    pub fn is_own(&self, info: &Value) -> bool {
        info.get("browserContextId").and_then(Value::as_str) == Some(self.context.as_str())
    }

    /// Keeps (or updates) a target of this context; false for another context's.
    pub fn track(&mut self, info: &Value) -> bool {
        let Some(id) = info.get("targetId").and_then(Value::as_str) else { return false };
        if !self.is_own(info) {
            return false;
        }
        self.targets.insert(id.to_owned(), info.clone());
        true
    }

    /// Forgets a target that is gone.
    pub fn forget(&mut self, target: &str) {
        self.targets.remove(target);
        self.claims.lock().unadopted.remove(target);
        self.mine.unadopted.remove(target);
    }

    /// A DevTools session attached (`Target.attachedToTarget`): the client's, and its target.
    pub fn attached(&mut self, params: &Value) {
        let Some(session) = params.get("sessionId").and_then(Value::as_str) else { return };
        self.sessions.insert(session.to_owned());
        if let Some(target) = params.pointer("/targetInfo/targetId").and_then(Value::as_str) {
            self.session_targets.insert(session.to_owned(), target.to_owned());
        }
    }

    /// A DevTools session detached.
    pub fn detached(&mut self, session: &str) {
        self.sessions.remove(session);
        self.session_targets.remove(session);
    }

    /// The target a client's DevTools session is attached to.
    pub fn target_of(&self, session: &str) -> Option<&str> {
        self.session_targets.get(session).map(String::as_str)
    }

    fn is_page(info: &Value) -> bool {
        info.get("type").and_then(Value::as_str) == Some("page")
    }

    /// The context's targets a client auto-attaching with `filter` is attached to.
    pub fn attachable(&self, filter: Option<&Value>) -> Vec<String> {
        let mut ids: Vec<(&String, &Value)> = self
            .targets
            .iter()
            .filter(|(_, info)| {
                let kind = info.get("type").and_then(Value::as_str).unwrap_or_default();
                attaches_at_browser_level(kind) && filter_allows(filter, kind)
            })
            .collect();
        ids.sort_by_key(|(id, _)| id.as_str());
        ids.into_iter().map(|(id, _)| id.clone()).collect()
    }

    pub fn kind_of(&self, target: &str) -> Option<&str> {
        self.targets.get(target).and_then(|i| i.get("type")).and_then(Value::as_str)
    }
}

impl super::rules::Scope for ClientScope {
    fn context(&self) -> &str {
        &self.context
    }
    fn owns_target(&self, target: &str) -> bool {
        self.targets.contains_key(target)
    }
    fn owns_session(&self, session: &str) -> bool {
        self.sessions.contains(session)
    }
    fn owns_window(&self, window: i64) -> bool {
        self.windows.contains(&window)
    }
    fn may_upload(&self, path: &str) -> bool {
        // The path as the file system resolves it (no `..`, no symbolic link out), inside the area.
        let Some(dir) = self.files_dir.as_ref().and_then(|d| d.canonicalize().ok()) else { return false };
        std::path::Path::new(path).canonicalize().is_ok_and(|p| p.starts_with(&dir) && p.is_file())
    }
    fn is_last_page(&self, target: &str) -> bool {
        // A page being closed, by any connection, already counts as gone: closes at once leave one page.
        let claims = self.claims.lock();
        let others = self.known_pages(&claims).iter().any(|id| id != target && !claims.closing.contains(id));
        self.kind_of(target) == Some("page") && !others
    }
    fn pages(&self) -> (usize, usize) {
        // A page being opened, by any connection, already counts: bursts of createTarget stop at the cap.
        let claims = self.claims.lock();
        (self.known_pages(&claims).len() + claims.creating, self.max_tabs)
    }
}

impl Drop for ClientScope {
    /// A connection that ends gives back what it claimed and will never hear the answer of.
    fn drop(&mut self) {
        let mut claims = self.claims.lock();
        claims.creating = claims.creating.saturating_sub(self.mine.creating);
        for target in &self.mine.unadopted {
            claims.unadopted.remove(target);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{filter_allows, ClientScope, TabClaims};
    use crate::relay::rules::Scope;
    use parking_lot::Mutex;
    use serde_json::json;
    use std::sync::Arc;

    /// A connection of a session whose adopted tabs are `tabs`, sharing `claims`.
    fn connection(claims: &Arc<TabClaims>, tabs: &Arc<Mutex<Vec<String>>>, pages: &[&str]) -> ClientScope {
        let tabs = tabs.clone();
        let listed = Box::new(move || tabs.lock().clone());
        let mut scope = ClientScope::new("ctx".into(), None, 3, (claims.clone(), listed));
        for id in pages {
            scope.track(&json!({ "targetId": id, "type": "page", "browserContextId": "ctx" }));
        }
        scope
    }

    fn with_pages(ids: &[&str]) -> ClientScope {
        connection(&Default::default(), &Arc::new(Mutex::new(Vec::new())), ids)
    }

    #[test]
    fn pages_being_opened_count_against_the_cap() {
        let mut scope = with_pages(&["p1"]);
        scope.creating();
        scope.creating();
        assert_eq!(scope.pages(), (3, 3));
        scope.created(Some("p2"));
        assert_eq!(scope.pages(), (3, 3), "answered, not yet adopted nor discovered");
        scope.track(&json!({ "targetId": "p2", "type": "page", "browserContextId": "ctx" }));
        assert_eq!(scope.pages(), (3, 3), "counted once");
        scope.adopted("p2");
        assert_eq!(scope.pages(), (3, 3), "discovered");
    }

    #[test]
    fn two_connections_of_a_session_share_the_cap_and_the_last_page() {
        let (claims, tabs) = (Arc::new(TabClaims::default()), Arc::new(Mutex::new(vec!["p1".to_owned()])));
        let mut a = connection(&claims, &tabs, &["p1"]);
        let b = connection(&claims, &tabs, &["p1"]);
        a.creating();
        assert_eq!(b.pages(), (2, 3), "A's createTarget in flight counts in B");
        a.created(Some("p2"));
        assert_eq!(b.pages(), (2, 3), "answered to A, not adopted yet, unknown to B's discovery");
        tabs.lock().push("p2".into());
        a.adopted("p2");
        assert_eq!(b.pages(), (2, 3), "adopted: a tab of the session");
        // A closes p1: B may not close p2, the last page left, though B's discovery still lists p1.
        a.closing("p1");
        let mut b = b;
        b.track(&json!({ "targetId": "p2", "type": "page", "browserContextId": "ctx" }));
        assert!(b.is_last_page("p2"));
        a.close_failed("p1");
        assert!(!b.is_last_page("p2"), "p1 stayed");
    }

    #[test]
    fn a_connection_that_ends_gives_back_what_it_claimed() {
        let (claims, tabs) = (Arc::new(TabClaims::default()), Arc::new(Mutex::new(vec!["p1".to_owned()])));
        let b = connection(&claims, &tabs, &["p1"]);
        {
            let mut a = connection(&claims, &tabs, &["p1"]);
            a.creating();
            a.creating();
            a.created(Some("p2"));
            assert_eq!(b.pages(), (3, 3));
        }
        assert_eq!(b.pages(), (1, 3));
    }

    #[test]
    fn a_page_being_closed_leaves_the_other_the_last() {
        let mut scope = with_pages(&["p1", "p2"]);
        assert!(!scope.is_last_page("p1") && !scope.is_last_page("p2"));
        scope.closing("p1");
        assert!(scope.is_last_page("p2"));
        scope.forget("p1");
        assert!(scope.is_last_page("p2"));
        scope.attached(&json!({ "sessionId": "s2", "targetInfo": { "targetId": "p2" } }));
        assert_eq!(scope.target_of("s2"), Some("p2"));
        scope.detached("s2");
        assert_eq!(scope.target_of("s2"), None);
    }

    #[test]
    fn filters_follow_chromiums_rules() {
        assert!(filter_allows(None, "page"));
        assert!(!filter_allows(None, "tab"));
        assert!(!filter_allows(None, "browser"));
        let puppeteer = json!([{"type": "page", "exclude": true}, {}]);
        assert!(!filter_allows(Some(&puppeteer), "page"));
        assert!(filter_allows(Some(&puppeteer), "tab"));
        assert!(filter_allows(Some(&json!([{}])), "browser"));
        assert!(!filter_allows(Some(&json!([{"type": "page"}])), "tab"));
        assert!(!filter_allows(Some(&json!([])), "page"));
    }
}
