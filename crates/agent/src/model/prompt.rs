//! What the model reads: the system prompt (rules, tools, domains to avoid) and a compact text
//! serialisation of each observation.

use std::fmt::Write;
use webpilot_browser::{Mark, PageSnapshot, TabInfo};
use webpilot_core::secrets::Secrets;

/// The system prompt for a task: the rules, the domains to avoid, the names of its secrets (never
/// their values) and whether the answer is structured.
pub fn system_prompt(avoid_domains: &[String], secrets: &Secrets, structured: bool) -> String {
    let mut p = String::from(
        "You are webpilot, operating a real web browser to do the user's task.\n\
         Each turn's observation: URL, title, tabs, then the whole page in reading order, frames included. \
         [N label] is an element to click; fields show kind, label and value ([N input: Email = \"a\"]). In a \
         line repeating the one above, [N] alone is the same element as there. Tools take an element's N as \
         index; elements below the visible area work too. A cut page says what was left out: use find.\n\
         Rules: do one or a few actions per turn and check the next observation; a failed action returns \
         ERROR with a code: look again and try another way. Use ask_human only for what only the user knows or \
         decides. Never work a CAPTCHA or \"verify you are human\" check: the service hands it to a solver or a \
         person before your turn. When finished, call done with the complete answer; if \
         it cannot be done, success=false and why.\n",
    );
    if !avoid_domains.is_empty() {
        let _ = writeln!(
            p,
            "Never visit these domains or their subdomains (requests to them are blocked): {}.",
            avoid_domains.join(", ")
        );
    }
    if !secrets.is_empty() {
        let names: Vec<String> = secrets
            .names()
            .map(|(name, s)| {
                let kind = if s.is_one_time_code() { ", a one-time code computed when typed" } else { "" };
                match s.domains() {
                    [] if kind.is_empty() => name.to_owned(),
                    [] => format!("{name} ({})", &kind[2..]),
                    d => format!("{name} (only on {}{kind})", d.join(", ")),
                }
            })
            .collect();
        let _ = writeln!(
            p,
            "Secrets: you do not know their values; to type one, write <secret:NAME> in the type tool's text. \
             Names: {}.",
            names.join(", ")
        );
    }
    if structured {
        p.push_str("The answer is structured: call done with `output`, JSON matching the schema of its parameter.\n");
    }
    p
}

/// The first user message: the task, with earlier conversation as context.
pub fn task_message(task: &str, context: &[(String, String)]) -> String {
    if context.is_empty() {
        return format!("Task: {task}");
    }
    let mut s = String::from("Earlier conversation (context):\n");
    for (role, content) in context {
        let _ = writeln!(s, "{role}: {content}");
    }
    let _ = write!(s, "\nTask: {task}");
    s
}

fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// The observation as compact text: where the page is, then the page itself (`observe::render_listing`);
/// and the elements it lists, with their boxes.
pub fn observation(snap: &PageSnapshot, tabs: &[TabInfo], step: usize, max_chars: usize) -> (String, Vec<Mark>) {
    let mut o = String::with_capacity(4096);
    let _ = writeln!(o, "Observation (step {step})");
    let _ = writeln!(o, "URL: {}", snap.url);
    let _ = writeln!(o, "Title: {}", snap.title);
    if tabs.len() > 1 {
        let list: Vec<String> = tabs
            .iter()
            .map(|t| format!("[{}]{} {} {}", t.index, if t.active { "*" } else { "" }, quote(&t.title), t.url))
            .collect();
        let _ = writeln!(o, "Tabs (* = current): {}", list.join(" | "));
    }
    let below = (snap.page_height - snap.scroll_y - snap.viewport_height).max(0.0);
    let _ = writeln!(o, "Scroll: {:.0}px above, {:.0}px below", snap.scroll_y, below);
    o.push_str("Page:\n");
    let (page, marks) = super::observe::render_listing(snap, max_chars);
    o.push_str(&page);
    (o, marks)
}

/// The observation when the current tab cannot be read (it crashed).
pub fn unreadable(code: &str, reason: &str, tabs: &[TabInfo], step: usize) -> String {
    let mut o = format!("Observation (step {step})\nThe current tab cannot be read: {code}: {reason}.\n");
    o.push_str("Navigate it to a URL, or open or switch to another tab.\n");
    for t in tabs {
        let _ = writeln!(o, "Tab [{}]{} {} {}", t.index, if t.active { "*" } else { "" }, quote(&t.title), t.url);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_say_where_the_page_is_then_show_it() {
        let snap: PageSnapshot = serde_json::from_value(serde_json::json!({
            "url": "http://a.test/", "title": "Home", "scroll_y": 0, "page_height": 1000, "viewport_height": 445,
            "tree": [{"b": ["Hello", {"i": 3, "k": "input", "t": "Your name", "v": "Ada", "y": 500}], "y": 500}]
        }))
        .expect("snapshot");
        let (o, marks) = observation(&snap, &[], 2, 4000);
        assert!(marks.is_empty(), "no boxes, no marks");
        assert!(o.starts_with("Observation (step 2)\nURL: http://a.test/\nTitle: Home\n"), "{o}");
        assert!(o.contains("555px below"));
        assert!(o.contains("Page:\n--- below the visible area ---\nHello [3 input: Your name = \"Ada\"]"), "{o}");
        assert!(system_prompt(&["ads.test".into()], &Secrets::default(), false).contains("ads.test"));
        let secrets = Secrets::parse(&serde_json::json!({"pw": {"value": "hunter2", "domains": ["a.test"]}})).unwrap();
        let p = system_prompt(&[], &secrets, true);
        assert!(p.contains("<secret:NAME>") && p.contains("pw (only on a.test)") && !p.contains("hunter2"), "{p}");
        assert!(p.contains("call done with `output`"));
        let seed = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";
        let codes =
            Secrets::parse(&serde_json::json!({"otp": {"totp": seed}, "otp2": {"totp": seed, "domains": ["a.test"]}}))
                .unwrap();
        let p = system_prompt(&[], &codes, false);
        assert!(p.contains("otp (a one-time code computed when typed)"), "{p}");
        assert!(p.contains("otp2 (only on a.test, a one-time code computed when typed)") && !p.contains(seed), "{p}");
        assert!(task_message("t", &[("user".into(), "hi".into())]).contains("user: hi"));
    }
}
