//! A screenshot for a model with the secrets painted over: where any secret value shows on the active tab
//! (a field that holds it, text that holds it) is found by a script in an isolated world of the page, so the
//! page's own scripts never see the values, and those boxes are painted an opaque colour before the picture
//! leaves the service (`marks::dress`, after any marks). The rest of the picture is sent as it was.

use crate::error::within;
use crate::{BrowserError, SessionPage};
use chromiumoxide::cdp::browser_protocol::page::CreateIsolatedWorldParams;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use serde::Deserialize;

const SECRET_BOXES: &str = include_str!("js/secret_boxes.js");

/// The colour secrets are painted with.
pub const PAINT: [u8; 3] = [0, 0, 0];

/// Where the secrets show: boxes in viewport CSS pixels `[left, top, width, height]`, and how many times each
/// value was found.
#[derive(Debug, Default, Deserialize)]
pub struct SecretBoxes {
    pub boxes: Vec<[f64; 4]>,
    pub found: Vec<usize>,
}

impl SessionPage {
    /// Where `values` show on the active tab, read in an isolated world of its main frame.
    pub async fn secret_boxes(&self, values: &[String]) -> Result<SecretBoxes, BrowserError> {
        let page = self.page()?;
        let timeout = self.inner.cdp_timeout;
        let frame = within(timeout, "main frame", page.mainframe())
            .await?
            .ok_or_else(|| BrowserError::Cdp("the page has no main frame".into()))?;
        let mut world = CreateIsolatedWorldParams::new(frame);
        world.world_name = Some("webpilot-secrets".into());
        let context = within(timeout, "isolated world", page.execute(world)).await?.result.execution_context_id;
        let arg = serde_json::to_string(values).map_err(|e| BrowserError::Cdp(e.to_string()))?;
        let mut params = EvaluateParams::new(format!("({SECRET_BOXES})({arg})"));
        params.context_id = Some(context);
        params.return_by_value = Some(true);
        let res = within(timeout, "find secrets", page.execute(params)).await?;
        if res.result.exception_details.is_some() {
            // Never the script's text: it would hold the values.
            return Err(BrowserError::Cdp("finding the secrets on the page failed".into()));
        }
        let value = res.result.result.value.clone().unwrap_or_default();
        serde_json::from_value(value).map_err(|_| BrowserError::Cdp("the secrets' boxes were not readable".into()))
    }
}
