//! What the model reads: the system prompt (rules, tools, domains to avoid) and a compact text
//! serialisation of each observation.

use std::fmt::Write;
use webpilot_browser::{PageSnapshot, TabInfo};
use webpilot_core::secrets::Secrets;

/// The system prompt for a task: the rules, the domains to avoid, the names of its secrets (never
/// their values) and whether the answer is structured.
pub fn system_prompt(avoid_domains: &[String], secrets: &Secrets, structured: bool) -> String {
    let mut p = String::from(
        "You are webpilot, an agent that operates a real web browser to do a user's task.\n\
         Each turn you get an observation: the URL, title, open tabs, the visible interactive elements as \
         `[index] tag \"text\" attributes`, and the visible text. Act with the tools; refer to elements by their \
         [index]. Elements marked (offscreen) need scrolling before a person could see them, but you may still \
         click them by index.\n\
         Rules: do one or a few actions per turn and check the next observation; if an action fails you get an \
         ERROR with a code (ELEMENT_NOT_FOUND, NAVIGATION_TIMEOUT, PAGE_CRASH, ...): look again and try another way. \
         Use ask_human only for information or decisions only the user has (credentials, choices, confirmations). \
         When the task is finished call done with the complete answer the user asked for; if it cannot be done, \
         call done with success=false and say why.\n",
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
            .map(|(name, s)| match s.domains() {
                [] => name.to_owned(),
                d => format!("{name} (only on {})", d.join(", ")),
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

/// The observation as compact text.
pub fn observation(snap: &PageSnapshot, tabs: &[TabInfo], step: usize) -> String {
    let mut o = String::with_capacity(2048);
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
    let _ = writeln!(o, "Interactive elements:");
    if snap.elements.is_empty() {
        let _ = writeln!(o, "(none)");
    }
    for e in &snap.elements {
        let _ = write!(o, "[{}] {}", e.index, e.tag);
        if !e.kind.is_empty() && e.tag == "input" {
            let _ = write!(o, " type={}", e.kind);
        }
        if !e.role.is_empty() {
            let _ = write!(o, " role={}", e.role);
        }
        if !e.text.is_empty() {
            let _ = write!(o, " {}", quote(&e.text));
        }
        if !e.label.is_empty() && e.label != e.text {
            let _ = write!(o, " label={}", quote(&e.label));
        }
        if !e.placeholder.is_empty() {
            let _ = write!(o, " placeholder={}", quote(&e.placeholder));
        }
        if !e.value.is_empty() {
            let _ = write!(o, " value={}", quote(&e.value));
        }
        if !e.options.is_empty() {
            let _ = write!(o, " options={}", quote(&e.options.join("|")));
        }
        if !e.href.is_empty() {
            let _ = write!(o, " -> {}", e.href);
        }
        if !e.in_view {
            o.push_str(" (offscreen)");
        }
        o.push('\n');
    }
    let _ = writeln!(o, "Visible text:\n{}", snap.text);
    o
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
    use webpilot_browser::ElementInfo;

    #[test]
    fn observations_are_compact_and_indexed() {
        let snap = PageSnapshot {
            url: "http://a.test/".into(),
            title: "Home".into(),
            elements: vec![ElementInfo {
                index: 3,
                tag: "input".into(),
                role: String::new(),
                kind: "text".into(),
                text: String::new(),
                label: "Your name".into(),
                placeholder: String::new(),
                value: "Ada".into(),
                href: String::new(),
                options: vec![],
                x: 1.0,
                y: 2.0,
                in_view: false,
            }],
            text: "Hello".into(),
            scroll_y: 0.0,
            page_height: 1000.0,
            viewport_height: 445.0,
        };
        let o = observation(&snap, &[], 2);
        assert!(o.contains("[3] input type=text label=\"Your name\" value=\"Ada\" (offscreen)"), "{o}");
        assert!(o.contains("555px below"));
        assert!(system_prompt(&["ads.test".into()], &Secrets::default(), false).contains("ads.test"));
        let secrets = Secrets::parse(&serde_json::json!({"pw": {"value": "hunter2", "domains": ["a.test"]}})).unwrap();
        let p = system_prompt(&[], &secrets, true);
        assert!(p.contains("<secret:NAME>") && p.contains("pw (only on a.test)") && !p.contains("hunter2"), "{p}");
        assert!(p.contains("call done with `output`"));
        assert!(task_message("t", &[("user".into(), "hi".into())]).contains("user: hi"));
    }
}
