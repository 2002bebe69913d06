//! The offline planner: an `Agent` that needs no model. It follows explicit step-by-step instructions
//! (see `parse`) on the real browser, emitting an `action` event per step, and fails clearly on
//! anything it does not understand.

mod parse;

pub use parse::{parse, ParseError, Step};

use crate::{Agent, AgentContext, AgentError, AgentTask};
use async_trait::async_trait;
use serde_json::json;
use std::time::{Duration, Instant};
use webpilot_browser::BrowserError;
use webpilot_core::output::OutputSchema;
use webpilot_core::ErrorCode;

/// Placeholder in later steps for the last answer a human gave.
pub const ANSWER_PLACEHOLDER: &str = "{answer}";

#[derive(Debug, Default, Clone)]
pub struct OfflinePlanner;

#[async_trait]
impl Agent for OfflinePlanner {
    fn name(&self) -> &str {
        "offline-planner"
    }

    async fn run(&self, task: AgentTask, ctx: AgentContext) -> Result<String, AgentError> {
        let steps = parse(&task.details).map_err(|e| AgentError::new(ErrorCode::InvalidTaskDetails, e.to_string()))?;
        ctx.events.agent(format!("Following {} explicit step(s) without a model.", steps.len()));
        let mut reports: Vec<String> = Vec::new();
        let mut answer = String::new();
        for (i, step) in steps.iter().enumerate() {
            ctx.control.checkpoint().await?;
            if let Some(note) = crate::checks::before_step(&ctx).await? {
                ctx.events.agent(note);
                ctx.control.checkpoint().await?;
            }
            ctx.events.update(format!("step {}/{}: {}", i + 1, steps.len(), describe(step)));
            let step = with_answer(step, &answer);
            if let Some(report) = run_step(&step, &ctx, &mut answer).await? {
                reports.push(report);
            }
        }
        let message = if reports.is_empty() {
            let title = ctx.control.act(ctx.page.title()).await.unwrap_or_default();
            format!("Done: {} step(s) completed; the page is now {title:?}.", steps.len())
        } else {
            reports.join("\n")
        };
        structured(message, task.limits.output_schema.as_ref())
    }
}

/// With an outputSchema, the planner's text answer must fit it: as the JSON it may hold (a reported
/// text that is JSON), else as a JSON string.
fn structured(message: String, schema: Option<&OutputSchema>) -> Result<String, AgentError> {
    let Some(schema) = schema else { return Ok(message) };
    let value = OutputSchema::parse_answer(&message)
        .ok()
        .filter(|v| schema.check(v).is_ok())
        .unwrap_or(serde_json::Value::String(message));
    schema.check(&value).map(|_| value.to_string()).map_err(|problems| {
        AgentError::new(
            ErrorCode::OutputInvalid,
            format!("the offline planner answers with text, which does not match the outputSchema: {problems}"),
        )
    })
}

fn with_answer(step: &Step, answer: &str) -> Step {
    match step {
        Step::Type { text, field } => {
            Step::Type { text: text.replace(ANSWER_PLACEHOLDER, answer), field: field.clone() }
        }
        other => other.clone(),
    }
}

fn describe(step: &Step) -> String {
    match step {
        Step::Navigate(u) => format!("open {u}"),
        Step::Back => "go back".into(),
        Step::Click(t) => format!("click {t:?}"),
        Step::Type { field, .. } => format!("type into {field:?}"),
        Step::Upload { name, field } => format!("upload {name:?} into {field:?}"),
        Step::Press(k) => format!("press {k}"),
        Step::Scroll(dy) => format!("scroll by {dy}"),
        Step::Wait(ms) => format!("wait {ms} ms"),
        Step::WaitForText(t) => format!("wait for {t:?}"),
        Step::ReportTitle => "read the title".into(),
        Step::ReportUrl => "read the url".into(),
        Step::ReportText(t) => format!("read the text of {t:?}"),
        Step::AskHuman(q) => format!("ask a human: {q}"),
    }
}

/// Runs one step; returns what it reports, if anything.
async fn run_step(step: &Step, ctx: &AgentContext, answer: &mut String) -> Result<Option<String>, AgentError> {
    let page = &ctx.page;
    let control = &ctx.control;
    match step {
        Step::Navigate(url) => {
            control.act(page.goto(url)).await?;
            let status = control.act(page.http_status()).await?;
            ctx.events.action("navigate", json!({ "url": url, "status": status }));
            // An error page is not the page asked for: the step failed, whatever the page shows.
            // A challenge page (Cloudflare's interstitial comes with 403) is a check to pass, at the next step.
            if let Some(status) = status.filter(|s| *s >= 400) {
                if crate::checks::on_page(ctx).await?.is_some() {
                    return Ok(None);
                }
                return Err(BrowserError::HttpStatus { url: url.clone(), status: Some(status) }.into());
            }
        }
        Step::Back => {
            control.act(page.go_back()).await?;
            ctx.events.action("go_back", json!({}));
        }
        Step::Click(text) => {
            let hit = control.act(page.settled(page.click_text(text))).await?;
            ctx.events.action("click", json!({ "text": hit.text, "tag": hit.tag, "x": hit.at.x, "y": hit.at.y }));
        }
        Step::Type { text, field } => {
            let value = crate::reveal::reveal(ctx, text, crate::reveal::Receiver::Page).await?;
            control.act(page.fill(field, &value)).await?;
            ctx.events.action("type", json!({ "field": field, "length": text.chars().count() }));
        }
        Step::Upload { name, field } => {
            control.act(page.upload_into(field, name)).await?;
            ctx.events.action("upload", json!({ "name": name, "field": field }));
        }
        Step::Press(key) => {
            control.act(page.settled(page.press_key(key))).await?;
            ctx.events.action("key_press", json!({ "key": key }));
        }
        Step::Scroll(dy) => {
            let y = control.act(page.scroll(*dy)).await?;
            ctx.events.action("scroll", json!({ "dy": dy, "scrollY": y }));
        }
        Step::Wait(ms) => {
            // Ends at once, with PAGE_CRASH, when the page's renderer dies meanwhile.
            control.act(page.wait(Duration::from_millis(*ms))).await?;
            ctx.events.action("wait", json!({ "ms": ms }));
        }
        Step::WaitForText(text) => {
            control.act(wait_for_text(ctx, text)).await?;
            ctx.events.action("wait_for_text", json!({ "text": text }));
        }
        Step::ReportTitle => {
            let title = control.act(page.title()).await?;
            ctx.events.action("extract", json!({ "what": "title" }));
            return Ok(Some(title));
        }
        Step::ReportUrl => {
            let url = control.act(page.url()).await?;
            ctx.events.action("extract", json!({ "what": "url" }));
            return Ok(Some(url));
        }
        Step::ReportText(target) => {
            let text = control.act(page.text_of(target)).await?;
            ctx.events.action("extract", json!({ "what": "text", "target": target }));
            return Ok(Some(text));
        }
        Step::AskHuman(question) => {
            ctx.events.action("ask_human", json!({ "question": question }));
            *answer = control.ask_human(question).await?;
            ctx.events.agent("A human answered the question.");
        }
    }
    Ok(None)
}

/// Polls the page text until it contains `text`, up to 20 s.
async fn wait_for_text(ctx: &AgentContext, text: &str) -> Result<(), AgentError> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let want = text.to_lowercase();
    loop {
        if ctx.page.body_text(200_000).await?.to_lowercase().contains(&want) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(BrowserError::ElementNotFound(format!("the text {text:?} did not appear")).into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_structured_planner_answer_is_json_or_fails_with_output_invalid() {
        let string = OutputSchema::parse(&json!({"type": "string"})).expect("schema");
        assert_eq!(structured("Pricing".into(), Some(&string)).expect("fits"), "\"Pricing\"");
        let object = OutputSchema::parse(&json!({"type": "object", "required": ["a"]})).expect("schema");
        assert_eq!(structured("{\"a\": 1}".into(), Some(&object)).expect("fits"), "{\"a\":1}");
        assert_eq!(structured("Pricing".into(), Some(&object)).unwrap_err().code, ErrorCode::OutputInvalid);
        assert_eq!(structured("Pricing".into(), None).expect("text"), "Pricing");
    }
}
