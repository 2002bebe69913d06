//! The model-driven agent: observe the page, ask the model, carry out its tool calls, repeat until it
//! calls `done`. Browser errors go back to the model so it can recover; the task fails with them only
//! when the model gives up, keeps failing, or keeps repeating itself (`loops`).

pub(crate) mod actions;
pub(crate) mod answer;
mod budget;
pub(crate) mod execute;
mod loops;
pub(crate) mod observe;
mod prompt;
mod vision;

pub use actions::{tool_specs, Action, Offer};

use crate::{Agent, AgentContext, AgentError, AgentTask};
use async_trait::async_trait;
use base64::Engine;
use execute::Outcome;
use std::sync::Arc;
use webpilot_browser::BrowserError;
use webpilot_core::vision::VisionMode;
use webpilot_core::ErrorCode;
use webpilot_llm::{ChatMessage, ChatModel, ChatRequest, ContentPart, Role};

/// Tunables of the model agent.
#[derive(Debug, Clone)]
pub struct ModelAgentSettings {
    /// Model turns before the task fails.
    pub max_steps: usize,
    /// Characters of the page per observation (about a quarter as many tokens); the rest is cut with a
    /// note saying how much, which `find` or scrolling brings back.
    pub max_page_chars: usize,
    /// Consecutive failed actions after which the task fails with the last error.
    pub max_failures: usize,
    /// JPEG quality of screenshots (when the model takes images).
    pub screenshot_quality: i64,
}

impl Default for ModelAgentSettings {
    fn default() -> Self {
        ModelAgentSettings { max_steps: 40, max_page_chars: 12_000, max_failures: 4, screenshot_quality: 50 }
    }
}

pub struct ModelAgent {
    model: Arc<dyn ChatModel>,
    settings: ModelAgentSettings,
    name: String,
}

impl ModelAgent {
    pub fn new(model: Arc<dyn ChatModel>, settings: ModelAgentSettings) -> Self {
        let name = model.name();
        ModelAgent { model, settings, name }
    }

    /// The current observation as a user message (text, and a screenshot when the task's `vision` and
    /// the turn call for one), with a fingerprint of what it shows (the step number left out).
    async fn observe(
        &self,
        ctx: &AgentContext,
        step: usize,
        mode: VisionMode,
        turn: vision::Turn,
    ) -> Result<Observed, AgentError> {
        let page = &ctx.page;
        let tabs = ctx.control.act(page.tabs()).await.unwrap_or_default();
        let snapshot = match ctx.fresh.take() {
            Some(fresh) => Ok(fresh),
            None => ctx.control.guard(page.snapshot()).await?,
        };
        let snapshot = match snapshot {
            Ok(s) => s,
            // The model is told and may navigate the tab again, or use another one.
            Err(e @ (BrowserError::PageCrash | BrowserError::NavigationTimeout(_))) => {
                let text = prompt::unreadable(&e.code().to_string(), &e.to_string(), &tabs, step);
                let print = page_print(&text);
                return Ok((ChatMessage::text(Role::User, text), print, None));
            }
            Err(e) => return Err(e.into()),
        };
        let (text, listed) = prompt::observation(&snapshot, &tabs, step, self.settings.max_page_chars);
        // A page showing a secret (a field typed into) is described with the value masked, and its
        // screenshot has the secret painted over.
        let shown = if ctx.secrets.is_empty() { Vec::new() } else { ctx.secrets.values_in(&text) };
        let text = ctx.secrets.mask(&text);
        let print = page_print(&text);
        let mut content = vec![ContentPart::Text(text)];
        if vision::wanted(ctx, mode, self.model.supports_images(), &snapshot, print, turn).await {
            let quality = self.settings.screenshot_quality;
            if let Ok(jpeg) = ctx.control.act(page.screenshot_jpeg(quality)).await {
                let marks = vision::marks(mode, &snapshot, listed);
                if let Some(jpeg) = vision::dressed(ctx, jpeg, &marks, &shown, quality).await {
                    if !marks.is_empty() {
                        content.push(ContentPart::Text(MARKS_NOTE.into()));
                    }
                    let base64 = base64::engine::general_purpose::STANDARD.encode(jpeg);
                    content.push(ContentPart::Image { media_type: "image/jpeg".into(), base64 });
                }
            }
        }
        let message = ChatMessage { role: Role::User, content, tool_calls: Vec::new(), tool_call_id: None };
        Ok((message, print, Some(snapshot)))
    }
}

/// Said beside a picture that carries marks.
pub(crate) const MARKS_NOTE: &str = "The picture labels each element with its index (black on orange).";

/// An observation: the message, its fingerprint, and the snapshot it shows (none for a crashed tab).
type Observed = (ChatMessage, u64, Option<webpilot_browser::PageSnapshot>);

/// A fingerprint of what an observation shows: its text without the first line ("Observation (step N)").
fn page_print(observation: &str) -> u64 {
    loops::fingerprint(&observation.split_once('\n').map_or(observation, |(_, rest)| rest))
}

/// `message` with every secret value in its text masked.
fn mask_message(message: &ChatMessage, secrets: &webpilot_core::secrets::Secrets) -> ChatMessage {
    let mut m = message.clone();
    if secrets.is_empty() {
        return m;
    }
    for part in &mut m.content {
        if let ContentPart::Text(t) = part {
            *t = secrets.mask(t);
        }
    }
    m
}

/// Replaces the full text of an old observation by a one-line stub, so the prompt does not grow with
/// every page seen.
fn shrink(message: &mut ChatMessage) {
    if message.role == Role::User && message.joined_text().starts_with("Observation (step") {
        let first = message.joined_text().lines().take(3).collect::<Vec<_>>().join(" | ");
        *message = ChatMessage::text(Role::User, format!("{first} (older observation omitted)"));
    }
}

#[async_trait]
impl Agent for ModelAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn uses_model(&self) -> bool {
        true
    }

    async fn run(&self, task: AgentTask, ctx: AgentContext) -> Result<String, AgentError> {
        let schema = task.limits.output_schema.as_ref();
        // The `screenshot` tool only where it changes something: `auto` decides per turn, and the model asking
        // is one of its cues.
        let sees = self.model.supports_images() && task.limits.vision != VisionMode::Off;
        let offer = Offer { screenshot: sees && task.limits.vision == VisionMode::Auto, points: sees };
        let tools = tool_specs(schema.map(|s| s.schema()), offer);
        let secrets = &ctx.secrets;
        let system = prompt::system_prompt(&task.limits.avoid_domains, secrets, schema.is_some());
        let mut history = vec![
            ChatMessage::text(Role::System, system),
            ChatMessage::text(Role::User, secrets.mask(&prompt::task_message(&task.details, &task.context))),
        ];
        let mut invalid_answers = 0usize;
        let max_output = task.limits.max_output_tokens.min(u32::MAX as u64) as u32;
        let mut failures = 0usize;
        let mut last_error: Option<(ErrorCode, String)> = None;
        let mut loops = loops::LoopDetector::default();
        let mut warning: Option<String> = None;
        let mut turn = vision::Turn::default();
        for step in 1..=self.settings.max_steps {
            ctx.control.checkpoint().await?;
            let check = crate::checks::before_step(&ctx).await?;
            if check.is_some() {
                ctx.control.checkpoint().await?;
            }
            history.iter_mut().for_each(shrink);
            let (mut observation, page_print, snapshot) = self.observe(&ctx, step, task.limits.vision, turn).await?;
            turn = vision::Turn::default();
            if let Some(note) = check {
                observation.content.push(ContentPart::Text(format!("NOTE: {note}")));
            }
            if let Some(warning) = warning.take() {
                // Part of the observation rather than a message of its own: some providers refuse two
                // user messages in a row.
                observation.content.push(ContentPart::Text(format!("WARNING: {warning}")));
            }
            history.push(observation);
            // Page text reaches the history through observations and tool results; every message is
            // masked again here, so no secret value can reach the model whatever path it took.
            let messages = history.iter().map(|m| mask_message(m, secrets)).collect();
            let request = ChatRequest { messages, tools: tools.clone(), max_output_tokens: max_output };
            let response = ctx
                .control
                .act(async {
                    self.model
                        .complete(&request)
                        .await
                        .map_err(|e| AgentError::new(ErrorCode::ModelUnavailable, e.to_string()))
                })
                .await?;
            ctx.usage.add_tokens(response.usage.prompt_tokens, response.usage.completion_tokens)?;
            if let Some(text) = &response.text {
                ctx.events.agent(text.clone());
            }
            if response.tool_calls.is_empty() {
                // A plain answer without tools is taken as the final answer.
                let Some(text) = response.text else {
                    return Err(AgentError::new(
                        ErrorCode::TaskFailed,
                        "the model answered with neither text nor a tool call",
                    ));
                };
                match answer::accept(schema, text.clone(), None) {
                    Ok(message) => return Ok(message),
                    Err(problem) => {
                        invalid_answers += 1;
                        if invalid_answers >= answer::MAX_INVALID_ANSWERS {
                            return Err(AgentError::new(ErrorCode::OutputInvalid, problem));
                        }
                        history.push(ChatMessage::text(Role::Assistant, text));
                        warning = Some(format!("ERROR OUTPUT_INVALID: {problem}"));
                        continue;
                    }
                }
            }
            let mut assistant = ChatMessage::text(Role::Assistant, response.text.clone().unwrap_or_default());
            assistant.tool_calls = response.tool_calls.clone();
            history.push(assistant);
            ctx.events.update(format!("step {step}: {} action(s)", response.tool_calls.len()));
            for (i, call) in response.tool_calls.iter().enumerate() {
                if i > 0 {
                    ctx.control.checkpoint().await?;
                }
                let outcome = match Action::from_call(call) {
                    Ok(action) => execute::run_recorded(&action, &ctx, snapshot.as_ref()).await?,
                    Err(msg) => Outcome::Failed(ErrorCode::InvalidParams, msg),
                };
                let reply = match outcome {
                    Outcome::Done { message, success: true, output } => match answer::accept(schema, message, output) {
                        Ok(message) => return Ok(message),
                        Err(problem) => {
                            invalid_answers += 1;
                            if invalid_answers >= answer::MAX_INVALID_ANSWERS {
                                return Err(AgentError::new(ErrorCode::OutputInvalid, problem));
                            }
                            format!("ERROR OUTPUT_INVALID: {problem}")
                        }
                    },
                    Outcome::Done { message, success: false, .. } => {
                        let code = last_error.map(|(c, _)| c).unwrap_or(ErrorCode::TaskFailed);
                        return Err(AgentError::new(code, format!("the agent gave up: {message}")));
                    }
                    Outcome::Ok(text) => {
                        failures = 0;
                        text
                    }
                    Outcome::Failed(code, msg) => {
                        failures += 1;
                        last_error = Some((code, msg.clone()));
                        if failures >= self.settings.max_failures {
                            return Err(AgentError::new(
                                code,
                                format!("{failures} actions failed in a row; last: {msg}"),
                            ));
                        }
                        format!("ERROR {code}: {msg}")
                    }
                };
                history.push(ChatMessage::tool_result(call.id.clone(), reply));
            }
            turn.acted_on = Some(page_print);
            turn.asked = response.tool_calls.iter().any(|c| c.name == "screenshot");
            let actions: Vec<String> =
                response.tool_calls.iter().map(|c| format!("{} {}", c.name, c.arguments)).collect();
            match loops.record(page_print, &actions) {
                loops::Verdict::Fine => {}
                loops::Verdict::Warn(text) => {
                    ctx.events.update(format!("step {step}: the agent is repeating itself; it was warned"));
                    warning = Some(text);
                }
                loops::Verdict::Fail(what) => return Err(AgentError::new(ErrorCode::AgentLoop, what)),
            }
        }
        Err(AgentError::new(
            ErrorCode::TaskFailed,
            format!("the agent did not finish within {} steps", self.settings.max_steps),
        ))
    }
}
