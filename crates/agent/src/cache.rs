//! The action cache: a successful model run is kept (by the session layer's [`ActionCache`]) under a key
//! made of the normalized task text, the start page's origin and path and a fingerprint of that page;
//! when the same user starts the same task there again, its steps are replayed without the model, each
//! step's target checked first (the locator and check code `replayOf` uses, `replay.rs`). A step whose
//! target is missing or ambiguous hands the task to the model, with the run so far in its context, and
//! the healed run replaces the entry. An answer read from the page (an `extract` or `find` step, or an
//! `outputSchema`) is never taken from the cache: the model reads it from the page again.

use crate::model::Action;
use crate::replay::{follow, handover_note, Followed};
use crate::trace::TraceStep;
use crate::{Agent, AgentContext, AgentError, AgentTask};
use async_trait::async_trait;
use sha2::{Digest, Sha256};
use webpilot_browser::PageSnapshot;

/// What the cache did for a task (`data.cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheUse {
    /// Every cached step's target was found; the model was not asked to act.
    Hit,
    /// A cached step's target was missing or ambiguous; the model took over and the entry was rewritten.
    Healed,
    /// Nothing was cached for this task; a successful run was recorded.
    Miss,
    /// The cache was not used (`cache: "off"`, or a `replayOf` task).
    Off,
}

impl CacheUse {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheUse::Hit => "hit",
            CacheUse::Healed => "healed",
            CacheUse::Miss => "miss",
            CacheUse::Off => "off",
        }
    }
}

/// Where a task's cached run is filed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKey {
    /// Hex SHA-256 of the normalized task text, the start URL and the page fingerprint.
    pub digest: String,
    pub task_text: String,
    /// The start page's origin and path (no query, no fragment).
    pub start_url: String,
}

/// A cached run.
#[derive(Debug, Clone)]
pub struct CachedRun {
    pub id: String,
    pub steps: Vec<TraceStep>,
    /// Model tokens the recorded run used.
    pub tokens: u64,
}

/// The user's cache entries, as the session layer keeps them. Failures are the implementation's to log;
/// a cache that cannot be read is a miss, one that cannot be written is skipped.
#[async_trait]
pub trait ActionCache: Send + Sync {
    async fn lookup(&self, key: &CacheKey) -> Option<CachedRun>;
    /// Counts a replay of entry `id`.
    async fn hit(&self, id: &str);
    /// Stores (or rewrites) the run under `key`.
    async fn save(&self, key: &CacheKey, steps: &[TraceStep], tokens: u64);
}

/// The task text as the key reads it: lower case, words separated by single spaces, no final stop.
pub fn normalize(text: &str) -> String {
    let words: Vec<_> = text.split_whitespace().collect();
    words.join(" ").to_lowercase().trim_end_matches(['.', '!', '?', ' ']).to_owned()
}

/// The start page's origin and path; the URL as given when it does not parse.
fn origin_and_path(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!("{}{}", u.origin().ascii_serialization(), u.path()),
        Err(_) => url.to_owned(),
    }
}

/// Text as the fingerprint reads it: lower case, words separated by single spaces, each run of digits one
/// `#` (counters, clocks and dates change from load to load).
fn shape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        let mut in_digits = false;
        for c in word.chars().flat_map(char::to_lowercase) {
            if c.is_ascii_digit() {
                if !in_digits {
                    out.push('#');
                }
                in_digits = true;
            } else {
                out.push(c);
                in_digits = false;
            }
        }
    }
    out
}

/// Whether elements of `kind` are form fields (named by their labels, which say what the form asks).
fn is_field(kind: &str) -> bool {
    kind.starts_with("input")
        || matches!(kind, "textarea" | "select" | "checkbox" | "radio" | "switch" | "combobox" | "textbox")
}

/// A fingerprint of the start page: its title, the kinds of element it has (link, button, `input:email`, …)
/// and the labels of its form fields, each once and sorted, with digits blurred ([`shape_text`]). It tells
/// apart two pages behind one path and title (a form and a list, a logged-in and a logged-out view), and
/// stays the same when text changes from load to load (a clock, a counter, a list of other length), when
/// elements move, and when a button or link is renamed: that is a changed step, which the replay heals.
pub fn fingerprint(snap: &PageSnapshot) -> String {
    let mut kinds = std::collections::BTreeSet::new();
    let mut fields = std::collections::BTreeSet::new();
    for node in &snap.tree {
        node.for_each_control(&mut |c| {
            if is_field(&c.kind) {
                fields.insert(shape_text(&c.label));
            }
            kinds.insert(c.kind.clone());
        });
    }
    let list = |set: std::collections::BTreeSet<String>| set.into_iter().collect::<Vec<_>>().join("\u{2}");
    format!("{}\u{1}{}\u{1}{}", shape_text(&snap.title), list(kinds), list(fields))
}

/// The key of `task_text` started on the page of `snap`, after the conversation `context` (chat
/// completions' earlier messages, which can change what the same words ask for: "my email is …"), with the
/// page's [`fingerprint`].
pub fn key(task_text: &str, context: &[(String, String)], snap: &PageSnapshot) -> CacheKey {
    let text = normalize(task_text);
    let start_url = origin_and_path(&snap.url);
    let fingerprint = fingerprint(snap);
    let mut h = Sha256::new();
    for part in [text.as_str(), start_url.as_str(), fingerprint.as_str()] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    for (role, content) in context {
        for part in ["\u{1}context", role.as_str(), normalize(content).as_str()] {
            h.update(part.as_bytes());
            h.update([0]);
        }
    }
    CacheKey { digest: hex::encode(h.finalize()), task_text: task_text.trim().to_owned(), start_url }
}

/// Whether the run's answer came from the page's content (so a replay must read it again).
fn answer_from_page(steps: &[TraceStep], task: &AgentTask) -> bool {
    task.limits.output_schema.is_some()
        || steps.iter().any(|s| matches!(s.action, Action::Extract | Action::Find { .. }))
}

/// Whether a trace is worth keeping: it ends with a successful answer.
fn complete(steps: &[TraceStep]) -> bool {
    matches!(steps.last(), Some(TraceStep { action: Action::Done { success: true, .. }, .. }))
}

/// Model tokens this task used so far.
fn used(ctx: &AgentContext) -> u64 {
    let u = ctx.usage.snapshot();
    u.input_tokens + u.output_tokens
}

/// Runs `task` through the cache: replays a cached run of it when there is one (handing over to `agent`
/// where the page changed), else lets `agent` do it; a successful model run is stored.
pub async fn run(
    agent: &dyn Agent,
    task: AgentTask,
    ctx: &AgentContext,
    cache: &dyn ActionCache,
) -> (Result<String, AgentError>, CacheUse) {
    let key = match ctx.page.snapshot().await {
        Ok(snap) => {
            let key = key(&task.details, &task.context, &snap);
            // The first turn or replayed step reads this page as it is now.
            ctx.fresh.put(snap, ctx.control.stamp());
            key
        }
        Err(e) => {
            tracing::debug!(error = %e, "no snapshot of the start page; the action cache is skipped");
            return (agent.run(task, ctx.clone()).await, CacheUse::Off);
        }
    };
    let Some(cached) = cache.lookup(&key).await else {
        let result = agent.run(task, ctx.clone()).await;
        save(cache, &key, ctx, &result, used(ctx)).await;
        return (result, CacheUse::Miss);
    };
    ctx.events.update(format!("replaying a cached run of this task ({} steps) without the model", cached.steps.len()));
    let from_page = answer_from_page(&cached.steps, &task);
    let (at, why) = match follow(ctx, &cached.steps, task.limits.output_schema.as_ref(), !from_page).await {
        Err(e) => return (Err(e), CacheUse::Hit),
        Ok(Followed::Done(message)) => {
            cache.hit(&cached.id).await;
            return (Ok(message), CacheUse::Hit);
        }
        Ok(Followed::Stopped { at, why }) => (at, why),
    };
    let replayed = at.saturating_sub(1).min(cached.steps.len());
    // Stopped only at its answer, which is read again from the page: every target was found.
    let only_the_answer = from_page && replayed + 1 == cached.steps.len() && complete(&cached.steps);
    ctx.events.update(format!("the cached run stopped ({why}); the model takes over"));
    let mut task = task;
    task.context.push(("system".into(), handover_note(&cached.steps[..replayed], cached.steps.len())));
    let result = agent.run(task, ctx.clone()).await;
    if only_the_answer {
        if result.is_ok() {
            cache.hit(&cached.id).await;
        }
        return (result, CacheUse::Hit);
    }
    save(cache, &key, ctx, &result, cached.tokens.max(used(ctx))).await;
    (result, CacheUse::Healed)
}

/// Stores the task's trace under `key` when the task succeeded with a complete trace.
async fn save(
    cache: &dyn ActionCache,
    key: &CacheKey,
    ctx: &AgentContext,
    result: &Result<String, AgentError>,
    tokens: u64,
) {
    let steps = ctx.trace.steps();
    if result.is_ok() && complete(&steps) {
        cache.save(key, &steps, tokens).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(url: &str, title: &str) -> PageSnapshot {
        shaped(url, title, serde_json::json!([]))
    }

    fn shaped(url: &str, title: &str, tree: serde_json::Value) -> PageSnapshot {
        serde_json::from_value(serde_json::json!({"url": url, "title": title, "tree": tree, "scroll_y": 0,
            "page_height": 0, "viewport_height": 0}))
        .expect("snapshot")
    }

    #[test]
    fn the_key_ignores_case_spacing_query_and_fragment_but_not_path_title_or_words() {
        let a = key("Add  product 29 to the cart.", &[], &snap("http://a.test/shop?layout=frames#x", "Shop"));
        let b = key("add product 29 to the cart", &[], &snap("http://a.test/shop", "Shop"));
        assert_eq!(a.digest, b.digest);
        assert_eq!(a.start_url, "http://a.test/shop");
        assert_ne!(a.digest, key("add product 28 to the cart", &[], &snap("http://a.test/shop", "Shop")).digest);
        assert_ne!(a.digest, key("add product 29 to the cart", &[], &snap("http://a.test/cart", "Shop")).digest);
        assert_ne!(a.digest, key("add product 29 to the cart", &[], &snap("http://b.test/shop", "Shop")).digest);
        assert_ne!(a.digest, key("add product 29 to the cart", &[], &snap("http://a.test/shop", "Login")).digest);
    }

    #[test]
    fn the_fingerprint_is_the_pages_shape_and_not_its_changing_text() {
        use serde_json::json;
        let print = |title: &str, tree: serde_json::Value| fingerprint(&shaped("http://a.test/n", title, tree));
        let form = |clock: &str, button: &str, y: u32| {
            json!([{"b": [format!("Visit {clock}"), {"i": 1, "k": "input:email", "t": "Email", "y": y},
                          {"i": 2, "k": "button", "t": button, "y": y + 40}], "y": 0}])
        };
        let first = print("Newsletter", form("7 at 13:05:22", "Subscribe", 100));
        // Other text, other positions and indices, a renamed button, a counter in the title: the same page.
        assert_eq!(first, print("Newsletter", form("8 at 13:05:59", "Subscribe", 300)));
        assert_eq!(first, print("Newsletter", form("9", "Sign up", 100)));
        let renumbered = json!([{"i": 14, "k": "button", "t": "Subscribe", "y": 0}, {"i": 9, "k": "input:email", "t": "Email", "y": 9}]);
        assert_eq!(first, print("Newsletter", renumbered));
        assert_eq!(print("Inbox (3)", json!([])), print("Inbox (12)", json!([])));
        // A list instead of the form, another field, another title: other pages.
        let list = json!([{"b": ["Visit 10", {"i": 1, "k": "link", "t": "Issue 1", "y": 0}], "y": 0}]);
        assert_ne!(first, print("Newsletter", list));
        let phone = json!([{"i": 1, "k": "input:tel", "t": "Phone", "y": 0}, {"i": 2, "k": "button", "t": "Subscribe", "y": 0}]);
        assert_ne!(first, print("Newsletter", phone));
        let other_label = json!([{"i": 1, "k": "input:email", "t": "Work email", "y": 0}, {"i": 2, "k": "button", "t": "Subscribe", "y": 0}]);
        assert_ne!(first, print("Newsletter", other_label));
        assert_ne!(first, print("Sign in", form("7", "Subscribe", 100)));
    }

    #[test]
    fn a_conversation_before_the_task_is_part_of_its_key() {
        let page = snap("http://a.test/form", "Form");
        let said = |who: &str| vec![("system".to_owned(), format!("The subscriber is {who}."))];
        let plain = key("Subscribe the subscriber", &[], &page);
        let ann = key("Subscribe the subscriber", &said("ann@example.com"), &page);
        let bob = key("Subscribe the subscriber", &said("bob@example.com"), &page);
        assert_ne!(ann.digest, bob.digest);
        assert_ne!(ann.digest, plain.digest);
        assert_eq!(ann.digest, key("subscribe  the subscriber.", &said("ann@example.com"), &page).digest);
    }
}
