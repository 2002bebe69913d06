//! Human checks on the page: the facts one script gathers (`js/challenges.js`) for the pure decision in
//! `webpilot_core::challenge` (with whether the page's document came with `cf-mitigated: challenge`, which
//! `goto` notes), and putting a solver's token where the widget would (`js/challenge_token.js`).

use crate::error::BrowserError;
use crate::page::SessionPage;
use serde_json::json;
use webpilot_core::challenge::{ChallengeKind, PageFacts};

const FACTS: &str = include_str!("js/challenges.js");
const TOKEN: &str = include_str!("js/challenge_token.js");

/// Where a token went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub struct TokenPlaced {
    /// Response fields given the token.
    pub fields: u32,
    /// Whether the widget's callback was called with it.
    pub callback: bool,
}

impl SessionPage {
    /// What the active tab shows of human checks (one script, which only reads).
    pub async fn challenge_facts(&self) -> Result<PageFacts, BrowserError> {
        let value = self.eval(FACTS).await?;
        let mut facts: PageFacts =
            serde_json::from_value(value).map_err(|e| BrowserError::Cdp(format!("unreadable challenge facts: {e}")))?;
        let served = self.inner.challenge_served.lock().clone();
        facts.mitigated = served.is_some_and(|u| same_document(&u, &facts.url));
        Ok(facts)
    }

    /// Gives a solver's `token` to the check of `kind`: its response fields and its callback.
    pub async fn place_challenge_token(&self, kind: ChallengeKind, token: &str) -> Result<TokenPlaced, BrowserError> {
        let (Some(field), Some(widget)) = (kind.response_field(), kind.widget_class()) else {
            return Ok(TokenPlaced { fields: 0, callback: false });
        };
        let value = self.run_script(TOKEN, json!({ "token": token, "field": field, "widget": widget })).await?;
        serde_json::from_value(value).map_err(|e| BrowserError::Cdp(format!("unreadable token answer: {e}")))
    }
}

/// Whether two addresses name the same document (fragments aside).
fn same_document(a: &str, b: &str) -> bool {
    let strip = |u: &str| u.split('#').next().unwrap_or_default().to_owned();
    !a.is_empty() && strip(a) == strip(b)
}
