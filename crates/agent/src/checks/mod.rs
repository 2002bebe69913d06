//! Human checks before each step: the page's facts (one script), the pure decision
//! (`webpilot_core::challenge::detect`), then getting past the check — the operator's solver when one is
//! configured and the kind has a sitekey, else a person through a `human_verification_needed`
//! guardrail (take over, solve, release, answer). The agent itself never touches a check's widget.
//! Every check found is an `action` event `human_verification` with its kind and outcome.

mod solver;

pub use solver::{SolveRequest, Solver, SolverError};

use crate::{AgentContext, AgentError};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;
use webpilot_core::challenge::{detect, Challenge, ChallengeKind};

/// The service's human-check settings (the solver, if any); one per service.
#[derive(Debug, Clone, Default)]
pub struct HumanChecks {
    solver: Option<Arc<Solver>>,
}

impl HumanChecks {
    pub fn new(solver: Option<Solver>) -> Self {
        HumanChecks { solver: solver.map(Arc::new) }
    }

    /// The checks of one task (which remembers the checks a person passed).
    pub fn for_task(&self) -> TaskChecks {
        TaskChecks { solver: self.solver.clone(), passed: Arc::default() }
    }
}

/// The human checks of one task.
#[derive(Debug, Clone, Default)]
pub struct TaskChecks {
    solver: Option<Arc<Solver>>,
    /// Checks a person answered for, by kind and page: not asked about again in this task.
    passed: Arc<Mutex<HashSet<(ChallengeKind, String)>>>,
}

impl TaskChecks {
    fn was_passed(&self, key: &(ChallengeKind, String)) -> bool {
        self.passed.lock().contains(key)
    }

    fn mark_passed(&self, key: (ChallengeKind, String)) {
        let mut p = self.passed.lock();
        p.insert(key);
    }
}

/// The check on the page now, if any (a page that cannot be read shows none).
pub async fn on_page(ctx: &AgentContext) -> Result<Option<(Challenge, String)>, AgentError> {
    let facts = match ctx.control.guard(ctx.page.challenge_facts()).await? {
        Ok(f) => f,
        Err(_) => return Ok(None),
    };
    let url = facts.url.split('#').next().unwrap_or_default().to_owned();
    Ok(detect(&facts).map(|c| (c, url)))
}

/// Before a step: finds a check on the page and gets past it. Returns a note for the model when one was
/// passed; fails only when the task is stopped.
pub async fn before_step(ctx: &AgentContext) -> Result<Option<String>, AgentError> {
    let Some((challenge, url)) = on_page(ctx).await? else { return Ok(None) };
    ctx.fresh.clear();
    let kind = challenge.kind;
    let key = (kind, url.clone());
    if ctx.checks.was_passed(&key) {
        return Ok(None);
    }
    let mut report = Report::new(ctx, kind, &url);
    report.emit("detected", None);
    ctx.events.update(format!("a {} check is on {url}; the agent waits for it to be passed", kind.label()));
    if let Some(note) = try_solver(ctx, &challenge, &url, &mut report).await? {
        return Ok(Some(note));
    }
    let value = format!(
        "A {} check is on {url}. The agent does not solve it. To continue: take over the browser (the console's \
         take-over, or the interaction takeOverControl), pass the check, release control, then answer this \
         guardrail; the task goes on from the same page.",
        kind.label()
    );
    let answer = ctx.control.ask_verification(&value).await?;
    ctx.checks.mark_passed(key);
    // What the person did may still be loading (a check that reloads the page once passed).
    let _ = ctx.control.guard(ctx.page.settle()).await?;
    report.emit("solved_by_person", None);
    let said = answer.trim();
    let said = if said.is_empty() { String::new() } else { format!(" They said: {said:?}.") };
    Ok(Some(format!(
        "A person passed the {} check on this page.{said} Go on with the task from here; do not click inside \
         the check's widget.",
        kind.label()
    )))
}

/// The solver's token, placed on the page; `None` when there is no solver for it or it failed (recorded).
async fn try_solver(
    ctx: &AgentContext,
    challenge: &Challenge,
    url: &str,
    report: &mut Report<'_>,
) -> Result<Option<String>, AgentError> {
    let kind = challenge.kind;
    let (Some(solver), Some(solver_type), Some(sitekey)) =
        (ctx.checks.solver.as_ref(), kind.solver_type(), challenge.sitekey.as_ref())
    else {
        return Ok(None);
    };
    let request = SolveRequest {
        kind: solver_type,
        sitekey: sitekey.clone(),
        // A secret typed into a GET form may be in the address: the solver gets its name, never its value.
        page_url: ctx.events.mask(url),
        action: challenge.action.clone(),
    };
    let token = match ctx.control.guard(solver.solve(&request)).await? {
        Ok(token) => token,
        Err(e) => {
            tracing::warn!(kind = kind.as_str(), error = %e, "the CAPTCHA solver gave no token");
            report.emit(e.outcome(), Some(e.to_string()));
            return Ok(None);
        }
    };
    match ctx.control.guard(ctx.page.place_challenge_token(kind, &token)).await? {
        Ok(placed) if placed.fields > 0 || placed.callback => {
            // A callback may submit the form; what it opens is loaded before the next step looks.
            let _ = ctx.control.guard(ctx.page.settle()).await?;
            report.emit("solved_by_solver", None);
            Ok(Some(format!(
                "The {} check on this page was solved by the service's solver; go on with the task.",
                kind.label()
            )))
        }
        Ok(_) | Err(_) => {
            report.emit("solver_failed", Some("the token had nowhere to go on the page".into()));
            Ok(None)
        }
    }
}

/// The `human_verification` events of one check; a check left waiting when the task ends (its deadline)
/// is reported as `timed_out`, or `stopped`.
struct Report<'a> {
    ctx: &'a AgentContext,
    kind: ChallengeKind,
    url: String,
    finished: bool,
}

impl<'a> Report<'a> {
    fn new(ctx: &'a AgentContext, kind: ChallengeKind, url: &str) -> Self {
        Report { ctx, kind, url: url.to_owned(), finished: false }
    }

    fn emit(&mut self, outcome: &str, reason: Option<String>) {
        let mut detail = json!({ "kind": self.kind.as_str(), "url": self.url, "outcome": outcome });
        if let Some(r) = reason {
            detail["reason"] = json!(r);
        }
        self.finished = matches!(outcome, "solved_by_solver" | "solved_by_person");
        self.ctx.events.action("human_verification", detail);
    }
}

impl Drop for Report<'_> {
    fn drop(&mut self) {
        if !self.finished {
            let outcome = if self.ctx.control.is_stopped() { "stopped" } else { "timed_out" };
            self.emit(outcome, None);
        }
    }
}
