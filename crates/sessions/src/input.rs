//! Manual input on a session's page, as a part its actor owns: clicks, typing, key presses and uploads
//! run one at a time (in the order they came), at most [`MAX_INTERACTIONS_IN_FLIGHT`] waiting or running.

use crate::error::SessionError;
use std::sync::Arc;
use tokio::sync::{oneshot, Mutex};
use tokio::task::JoinSet;
use webpilot_browser::SessionPage;
use webpilot_core::geometry::frame_to_page;
use webpilot_core::params::Interaction;
use webpilot_core::ErrorCode;

/// Manual interactions one session may have waiting for their turn or running.
pub(crate) const MAX_INTERACTIONS_IN_FLIGHT: usize = 8;

/// The session's manual input under way.
#[derive(Default)]
pub(crate) struct Inputs {
    running: JoinSet<()>,
    /// Taken by each interaction while it acts, so they never interleave.
    turn: Arc<Mutex<()>>,
}

impl Inputs {
    /// Why one more interaction is refused now (429 `RATE_LIMIT_EXCEEDED` at the cap), if it is.
    pub fn refusal(&mut self) -> Option<SessionError> {
        // Reap finished interactions, then refuse past the cap (they are answered one at a time).
        while self.running.try_join_next().is_some() {}
        (self.running.len() >= MAX_INTERACTIONS_IN_FLIGHT).then(|| {
            SessionError::new(
                ErrorCode::RateLimitExceeded,
                format!("at most {MAX_INTERACTIONS_IN_FLIGHT} interactions may be in flight per session; wait for their answers"),
            )
        })
    }

    /// Runs `action` on `page` after those before it, answering `reply` when it is done.
    pub fn perform(
        &mut self,
        page: SessionPage,
        action: Interaction,
        reply: oneshot::Sender<Result<String, SessionError>>,
    ) {
        let turn = self.turn.clone();
        self.running.spawn(async move {
            let _guard = turn.lock().await;
            let result = match action {
                Interaction::Click { x, y } => page.click_at(frame_to_page(x, y), false).await.map(|_| "clicked"),
                Interaction::DoubleClick { x, y } => {
                    page.click_at(frame_to_page(x, y), true).await.map(|_| "double-clicked")
                }
                Interaction::Type { text, human_like } => page.type_text(&text, human_like).await.map(|_| "typed"),
                Interaction::KeyPress { key } => page.press_key(&key).await.map(|_| "key pressed"),
                Interaction::Upload { name, x, y } => {
                    page.upload_at(frame_to_page(x, y), &name).await.map(|_| "file set on the input")
                }
                Interaction::TakeOverControl | Interaction::ReleaseControl => Ok("done"),
            };
            let _ = reply.send(result.map(str::to_owned).map_err(SessionError::from));
        });
    }

    /// Drops the input under way (the session ends).
    pub fn abort_all(&mut self) {
        self.running.abort_all();
    }
}
