//! What one DevTools client may see: its session's browser context, the targets in it (kept from the
//! relay's own target discovery), the DevTools sessions the client attached, the windows it was told of,
//! and the session's file area. It answers the allow-list's questions (`rules::Scope`), counting the
//! pages being opened and closed by commands still in flight, so a burst of them cannot pass the tab cap
//! or close the last page.

use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

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
    /// `Target.createTarget`s sent and not answered yet.
    pub creating: usize,
    /// Pages created (answered) that discovery has not reported yet.
    pub unseen: HashSet<String>,
    /// Pages a `Target.closeTarget` or `Page.close` was sent for, not yet answered with a failure or gone.
    pub closing: HashSet<String>,
}

impl ClientScope {
    pub fn new(context: String, files_dir: Option<PathBuf>, max_tabs: usize) -> Self {
        ClientScope {
            context,
            files_dir,
            max_tabs,
            targets: HashMap::new(),
            sessions: HashSet::new(),
            windows: HashSet::new(),
            session_targets: HashMap::new(),
            creating: 0,
            unseen: HashSet::new(),
            closing: HashSet::new(),
        }
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
        self.unseen.remove(id);
        self.targets.insert(id.to_owned(), info.clone());
        true
    }

    /// Forgets a target that is gone.
    pub fn forget(&mut self, target: &str) {
        self.targets.remove(target);
        self.unseen.remove(target);
        self.closing.remove(target);
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
        // A page being closed already counts as gone: two closes at once leave one page.
        let others = self
            .targets
            .iter()
            .any(|(id, info)| id != target && Self::is_page(info) && !self.closing.contains(id.as_str()));
        self.kind_of(target) == Some("page") && !others && self.unseen.is_empty()
    }
    fn pages(&self) -> (usize, usize) {
        // A page being opened already counts: a burst of createTarget stops at the cap.
        let open = self.targets.values().filter(|i| Self::is_page(i)).count();
        (open + self.creating + self.unseen.len(), self.max_tabs)
    }
}

#[cfg(test)]
mod tests {
    use super::{filter_allows, ClientScope};
    use crate::relay::rules::Scope;
    use serde_json::json;

    fn with_pages(ids: &[&str]) -> ClientScope {
        let mut scope = ClientScope::new("ctx".into(), None, 3);
        for id in ids {
            scope.track(&json!({ "targetId": id, "type": "page", "browserContextId": "ctx" }));
        }
        scope
    }

    #[test]
    fn pages_being_opened_count_against_the_cap() {
        let mut scope = with_pages(&["p1"]);
        scope.creating = 2;
        assert_eq!(scope.pages(), (3, 3));
        scope.creating = 1;
        scope.unseen.insert("p2".into());
        assert_eq!(scope.pages(), (3, 3), "answered, not yet discovered");
        scope.track(&json!({ "targetId": "p2", "type": "page", "browserContextId": "ctx" }));
        assert_eq!(scope.pages(), (3, 3), "counted once");
    }

    #[test]
    fn a_page_being_closed_leaves_the_other_the_last() {
        let mut scope = with_pages(&["p1", "p2"]);
        assert!(!scope.is_last_page("p1") && !scope.is_last_page("p2"));
        scope.closing.insert("p1".into());
        assert!(scope.is_last_page("p2"));
        scope.forget("p1");
        assert!(scope.is_last_page("p2") && scope.closing.is_empty());
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
