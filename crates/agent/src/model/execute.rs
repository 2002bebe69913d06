//! Carrying out one action on the session's browser, and telling the model what happened.

use super::actions::Action;
use crate::reveal::{reveal, Receiver};
use crate::trace::{Locator, TraceStep};
use crate::{AgentContext, AgentError};
use serde_json::json;
use std::time::Duration;
use webpilot_browser::BrowserError;
use webpilot_browser::PageSnapshot;
use webpilot_core::geometry::{PagePoint, FRAME_WIDTH, PAGE_HEIGHT};
use webpilot_core::ErrorCode;

/// How an action went, as the model will read it.
pub enum Outcome {
    /// Text for the tool result.
    Ok(String),
    /// A browser error the model may recover from.
    Failed(ErrorCode, String),
    /// The task is over.
    Done { message: String, success: bool, output: Option<serde_json::Value> },
}

fn failed(e: BrowserError) -> Outcome {
    Outcome::Failed(e.code(), e.to_string())
}

/// Most lines `find` returns.
const FIND_LINES: usize = 30;

/// Maximum page text returned by `extract`.
const EXTRACT_CHARS: usize = 8000;

/// Runs an action and adds it to the task's trace when it worked, with a locator for its element
/// (taken from `snapshot`, the observation the action was chosen on, before the action changes it).
pub async fn run_recorded(
    action: &Action,
    ctx: &AgentContext,
    snapshot: Option<&PageSnapshot>,
) -> Result<Outcome, AgentError> {
    let target = match (action.index(), snapshot) {
        (Some(index), Some(snap)) => locate(ctx, snap, index).await,
        _ => None,
    };
    let outcome = run(action, ctx).await?;
    if matches!(outcome, Outcome::Ok(_) | Outcome::Done { success: true, .. }) {
        ctx.trace.record(TraceStep { action: action.clone(), target });
    }
    Ok(outcome)
}

/// How to find element `index` of `snap` again later.
async fn locate(ctx: &AgentContext, snap: &PageSnapshot, index: u32) -> Option<Locator> {
    let (control, context) = super::observe::elements_in_context(snap).into_iter().find(|(c, _)| c.index == index)?;
    let css = ctx.page.css_path(index).await.unwrap_or_default();
    Some(Locator { kind: control.kind, name: control.label, context, css })
}

pub async fn run(action: &Action, ctx: &AgentContext) -> Result<Outcome, AgentError> {
    ctx.fresh.clear();
    let page = &ctx.page;
    let control = &ctx.control;
    let detail = match action {
        Action::Navigate { url } | Action::OpenTab { url } => json!({ "url": url }),
        Action::Click { index, x, y, double: false } => json!({ "index": index, "x": x, "y": y }),
        Action::Click { index, x, y, double: true } => json!({ "index": index, "x": x, "y": y, "double": true }),
        Action::Type { index, text, .. } => json!({ "index": index, "length": text.chars().count() }),
        Action::TypeAt { x, y, text, .. } => json!({ "x": x, "y": y, "length": text.chars().count() }),
        Action::Drag { x, y, to_x, to_y } => json!({ "x": x, "y": y, "to_x": to_x, "to_y": to_y }),
        Action::SelectOption { index, option } => json!({ "index": index, "option": option }),
        Action::UploadFile { index, file } => json!({ "index": index, "name": file }),
        Action::PressKey { key } => json!({ "key": key }),
        Action::Scroll { down, pixels, at } => {
            let mut d = json!({ "direction": if *down { "down" } else { "up" }, "pixels": pixels });
            if let Some((x, y)) = at {
                d["x"] = json!(x);
                d["y"] = json!(y);
            }
            d
        }
        Action::SwitchTab { index } | Action::CloseTab { index } => json!({ "index": index }),
        Action::Wait { seconds } => json!({ "seconds": seconds }),
        Action::AskHuman { question } => json!({ "question": question }),
        Action::Find { query } => json!({ "query": query }),
        Action::GoBack | Action::Extract | Action::Screenshot | Action::Done { .. } => json!({}),
    };
    ctx.events.action(action.name(), detail);
    match action {
        Action::Done { message, success, output } => {
            return Ok(Outcome::Done { message: message.clone(), success: *success, output: output.clone() })
        }
        Action::AskHuman { question } => {
            let answer = control.ask_human(question).await?;
            return Ok(Outcome::Ok(format!("The human answered: {answer}")));
        }
        _ => {}
    }
    // A `<secret:NAME>` is revealed only here, for the page about to receive it.
    let typed = match action {
        Action::Type { text, index, .. } => reveal(ctx, text, Receiver::Element(*index)).await,
        Action::TypeAt { x, y, text, .. } => reveal(ctx, text, Receiver::Point(point(*x, *y))).await,
        _ => Ok(String::new()),
    };
    let typed = match typed {
        Ok(value) => value,
        Err(e) => return Ok(Outcome::Failed(e.code, e.message)),
    };
    let work = async {
        let text = match action {
            Action::Navigate { url } => {
                page.goto(url).await?;
                format!("Opened {url}.")
            }
            Action::GoBack => {
                page.go_back().await?;
                "Went back.".into()
            }
            Action::Click { index: Some(i), .. } => {
                let hit = page.settled(page.click_index(*i)).await?;
                format!("Clicked [{i}] {} {:?}.", hit.tag, hit.text)
            }
            Action::Click { x, y, double, .. } => {
                let at = point(x.unwrap_or(0.0), y.unwrap_or(0.0));
                // The input path manual control takes (`sessions::input`): frames and popups behave the same.
                page.settled(page.click_at(at, *double)).await?;
                let verb = if *double { "Double-clicked" } else { "Clicked" };
                format!("{verb} at ({:.0}, {:.0}).", at.x, at.y)
            }
            Action::Type { index, press_enter, .. } => {
                page.fill_index(*index, &typed).await?;
                if *press_enter {
                    page.settled(page.press_key("Enter")).await?;
                    format!("Typed into [{index}] and pressed Enter.")
                } else {
                    format!("Typed into [{index}].")
                }
            }
            Action::SelectOption { index, option } => {
                let chosen = page.select_option(*index, option).await?;
                format!("Selected {chosen:?} in [{index}].")
            }
            Action::UploadFile { index, file } => {
                page.upload_index(*index, file).await?;
                format!("Set the file {file:?} on [{index}].")
            }
            Action::PressKey { key } => {
                page.settled(page.press_key(key)).await?;
                format!("Pressed {key}.")
            }
            Action::Scroll { down, pixels, at: None } => {
                let y = page.scroll(if *down { *pixels } else { -*pixels }).await?;
                format!("Scrolled; now {y:.0}px from the top.")
            }
            Action::Scroll { down, pixels, at: Some((x, y)) } => {
                let at = point(*x, *y);
                let dy = if *down { *pixels } else { -*pixels };
                let page_y = page.scroll_at(at, dy as f64).await?;
                format!("Turned the wheel at ({:.0}, {:.0}); the page is {page_y:.0}px from the top.", at.x, at.y)
            }
            Action::Drag { x, y, to_x, to_y } => {
                let (from, to) = (point(*x, *y), point(*to_x, *to_y));
                page.settled(page.drag(from, to)).await?;
                format!("Dragged from ({:.0}, {:.0}) to ({:.0}, {:.0}).", from.x, from.y, to.x, to.y)
            }
            Action::TypeAt { x, y, press_enter, .. } => {
                let at = point(*x, *y);
                page.click_at(at, false).await?;
                page.type_keys(&typed).await?;
                if *press_enter {
                    page.settled(page.press_key("Enter")).await?;
                }
                format!("Typed at ({:.0}, {:.0}){}.", at.x, at.y, if *press_enter { " and pressed Enter" } else { "" })
            }
            Action::SwitchTab { index } => {
                page.switch_tab(*index)?;
                format!("Switched to tab {index}.")
            }
            Action::OpenTab { url } => {
                let i = page.open_tab(url).await?;
                format!("Opened tab {i} at {url}.")
            }
            Action::CloseTab { index } => {
                page.close_tab(*index).await?;
                format!("Closed tab {index}.")
            }
            Action::Wait { seconds } => {
                page.wait(Duration::from_secs_f64(*seconds)).await?;
                format!("Waited {seconds} s.")
            }
            Action::Extract => {
                let t = page.body_text(EXTRACT_CHARS).await?;
                format!("Page text (up to {EXTRACT_CHARS} characters):\n{t}")
            }
            Action::Screenshot => "The next observation carries a screenshot of the viewport.".into(),
            Action::Find { query } => {
                let snap = page.snapshot().await?;
                let lines = super::observe::find(&snap, query, FIND_LINES);
                if lines.is_empty() {
                    format!("Nothing on the page matches {query:?}.")
                } else {
                    format!("{} line(s) match {query:?}:\n{}", lines.len(), lines.join("\n"))
                }
            }
            Action::Done { .. } | Action::AskHuman { .. } => String::new(),
        };
        Ok::<String, BrowserError>(text)
    };
    Ok(match control.guard(work).await? {
        Ok(text) => Outcome::Ok(text),
        Err(e) => failed(e),
    })
}

/// A viewport point the model gave, kept inside the 1024 × 445 viewport.
fn point(x: f64, y: f64) -> PagePoint {
    PagePoint { x: x.clamp(0.0, FRAME_WIDTH as f64 - 1.0), y: y.clamp(0.0, PAGE_HEIGHT as f64 - 1.0) }
}
