//! Replaying an earlier task's trace without the model (`replayOf`): each step's element is found again
//! by its locator — the CSS path when it still names an element of the same kind and name, else the
//! element of that kind and name whose line reads the same — and the action is carried out. At the first
//! step that cannot be found or fails, the model (when one is configured) takes over from there.

use crate::model::execute::{self, Outcome};
use crate::model::observe::elements_in_context;
use crate::model::Action;
use crate::trace::{Locator, TraceStep};
use crate::{Agent, AgentContext, AgentError, AgentTask};
use serde_json::{json, Value};

use webpilot_browser::PageSnapshot;
use webpilot_core::ErrorCode;

/// The task being replayed.
#[derive(Debug, Clone)]
pub struct ReplaySource {
    pub task_id: String,
    pub steps: Vec<TraceStep>,
    /// Model tokens (input + output) the replayed task used.
    pub tokens: u64,
}

/// What a replay did, reported in the result's `data.replay`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayReport {
    pub of: String,
    pub steps: usize,
    pub replayed: usize,
    /// The step (from 1) where the model took over, and why.
    pub handed_over: Option<(usize, String)>,
    pub tokens_saved: u64,
}

impl ReplayReport {
    pub fn to_json(&self) -> Value {
        let mut v =
            json!({ "of": self.of, "steps": self.steps, "replayed": self.replayed, "tokensSaved": self.tokens_saved });
        if let Some((step, why)) = &self.handed_over {
            v["handedOverAt"] = json!(step);
            v["handedOverBecause"] = json!(why);
        }
        v
    }
}

/// Model tokens this task used so far.
fn used(ctx: &AgentContext) -> u64 {
    let u = ctx.usage.snapshot();
    u.input_tokens + u.output_tokens
}

/// The index of the element `locator` names on the page now, if exactly one fits.
async fn find(ctx: &AgentContext, snap: &PageSnapshot, locator: &Locator) -> Option<u32> {
    let elements = elements_in_context(snap);
    let same = |kind: &str, name: &str| kind == locator.kind && name == locator.name;
    if !locator.css.is_empty() {
        if let Ok(Some(index)) = ctx.page.index_at_css(&locator.css).await {
            if elements.iter().any(|(c, _)| c.index == index && same(&c.kind, &c.label)) {
                return Some(index);
            }
        }
    }
    let alike: Vec<_> = elements.iter().filter(|(c, _)| same(&c.kind, &c.label)).collect();
    match alike.as_slice() {
        [(c, _)] => Some(c.index),
        [] => None,
        several => {
            let by_line: Vec<_> = several.iter().filter(|(_, line)| *line == locator.context).collect();
            match by_line.as_slice() {
                [(c, _)] => Some(c.index),
                _ => None,
            }
        }
    }
}

/// Carries out one step; `Err` says why it could not be replayed.
async fn replay_step(ctx: &AgentContext, step: &TraceStep) -> Result<Option<Outcome>, String> {
    // Reading steps change nothing on the page; their result was for the model.
    if matches!(step.action, Action::Extract | Action::Find { .. }) {
        return Ok(None);
    }
    let action = match &step.target {
        Some(locator) => {
            let snap = match ctx.fresh.take() {
                Some(fresh) => fresh,
                None => ctx.page.snapshot().await.map_err(|e| e.to_string())?,
            };
            let index = find(ctx, &snap, locator)
                .await
                .ok_or_else(|| format!("no single {} {:?} on the page any more", locator.kind, locator.name))?;
            step.action.with_index(index)
        }
        None => step.action.clone(),
    };
    match execute::run(&action, ctx).await {
        Ok(Outcome::Failed(code, msg)) => Err(format!("{code}: {msg}")),
        Ok(outcome) => {
            // The replay's own trace keeps the original locators, so it can be replayed in turn.
            ctx.trace.record(TraceStep { action, target: step.target.clone() });
            Ok(Some(outcome))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// How following a trace ended.
pub(crate) enum Followed {
    /// The trace's final step answered the task.
    Done(String),
    /// Step `at` (from 1) could not be replayed, for the reason given; the steps before it were.
    Stopped { at: usize, why: String },
}

/// Follows `steps` on the page, checking each step's target before acting. `answer_from_cache` says
/// whether the trace's own final answer may stand (else the replay stops at its `done`, so the answer
/// is read from the page again).
pub(crate) async fn follow(
    ctx: &AgentContext,
    steps: &[TraceStep],
    schema: Option<&webpilot_core::output::OutputSchema>,
    answer_from_cache: bool,
) -> Result<Followed, AgentError> {
    let why = "the trace ended before the task was done".to_owned();
    for (i, step) in steps.iter().enumerate() {
        ctx.control.checkpoint().await?;
        if let Some(note) = crate::checks::before_step(ctx).await? {
            ctx.events.agent(note);
        }
        ctx.control.checkpoint().await?;
        if !answer_from_cache && matches!(step.action, Action::Done { .. }) {
            return Ok(Followed::Stopped { at: i + 1, why: "the answer is read from the page again".into() });
        }
        match replay_step(ctx, step).await {
            Ok(Some(Outcome::Done { message, success: true, output })) => {
                match crate::model::answer::accept(schema, message, output) {
                    Ok(message) => return Ok(Followed::Done(message)),
                    Err(problem) => {
                        return Ok(Followed::Stopped { at: i + 1, why: format!("step {}: {problem}", i + 1) })
                    }
                }
            }
            Ok(_) => {}
            Err(e) => return Ok(Followed::Stopped { at: i + 1, why: format!("step {}: {e}", i + 1) }),
        }
    }
    Ok(Followed::Stopped { at: steps.len() + 1, why })
}

/// What the model is told when it takes over a replay after `done` of `total` steps: where the browser
/// is, and the steps already carried out (the run so far).
pub(crate) fn handover_note(done: &[TraceStep], total: usize) -> String {
    let mut note = format!(
        "An earlier run of this task was replayed up to step {} of {total}; the browser is where it left off. \
         Continue the task from here.",
        done.len()
    );
    if !done.is_empty() {
        note.push_str(" Steps carried out:");
        for (i, step) in done.iter().enumerate() {
            let target = step.target.as_ref().map(|t| format!(" {} {:?}", t.kind, t.name)).unwrap_or_default();
            note.push_str(&format!("\n{}. {}{target}", i + 1, step.action.name()));
        }
    }
    note
}

/// Replays `source` for `task`; hands over to `agent` when it uses a model, else fails at the first
/// step that cannot be replayed.
pub async fn run(
    agent: &dyn Agent,
    task: AgentTask,
    ctx: &AgentContext,
    source: ReplaySource,
) -> (Result<String, AgentError>, ReplayReport) {
    let mut report = ReplayReport {
        of: source.task_id.clone(),
        steps: source.steps.len(),
        replayed: 0,
        handed_over: None,
        tokens_saved: 0,
    };
    ctx.events.update(format!("replaying task {} ({} steps) without the model", source.task_id, source.steps.len()));
    let stop_reason = match follow(ctx, &source.steps, task.limits.output_schema.as_ref(), true).await {
        Err(e) => return (Err(e), report),
        Ok(Followed::Done(message)) => {
            report.replayed = source.steps.len();
            report.tokens_saved = source.tokens.saturating_sub(used(ctx));
            return (Ok(message), report);
        }
        Ok(Followed::Stopped { at, why }) => {
            report.replayed = at.saturating_sub(1).min(source.steps.len());
            why
        }
    };
    report.handed_over = Some((report.replayed + 1, stop_reason.clone()));
    if !agent.uses_model() {
        let e = AgentError::new(
            ErrorCode::ElementNotFound,
            format!("the replay stopped at {stop_reason}, and no model is configured to take over"),
        );
        return (Err(e), report);
    }
    ctx.events.update(format!("the replay stopped ({stop_reason}); the model takes over"));
    let mut task = task;
    task.context.push(("system".into(), handover_note(&source.steps[..report.replayed], report.steps)));
    let result = agent.run(task, ctx.clone()).await;
    report.tokens_saved = source.tokens.saturating_sub(used(ctx));
    (result, report)
}
