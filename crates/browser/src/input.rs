//! Real input events over Input.dispatch*: mouse clicks at a point, key presses with the US layout
//! definitions chromiumoxide ships, and text insertion (optionally at a human pace).

use crate::error::{within, BrowserError};
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType, InsertTextParams,
    MouseButton,
};
use chromiumoxide::keys::USKEYBOARD_LAYOUT;
use chromiumoxide::Page;
use rand::Rng;
use std::time::Duration;
use webpilot_core::geometry::PagePoint;

fn mouse(kind: DispatchMouseEventType, at: PagePoint, clicks: i64) -> DispatchMouseEventParams {
    let mut p = DispatchMouseEventParams::new(kind, at.x, at.y);
    p.button = Some(MouseButton::Left);
    p.click_count = Some(clicks);
    p.buttons = Some(if clicks > 0 { 1 } else { 0 });
    p
}

/// A left click (or double click) at `at`, as move, press and release events.
pub(crate) async fn click(page: &Page, at: PagePoint, double: bool, timeout: Duration) -> Result<(), BrowserError> {
    let mut moved = DispatchMouseEventParams::new(DispatchMouseEventType::MouseMoved, at.x, at.y);
    moved.button = Some(MouseButton::None);
    within(timeout, "mouse move", page.execute(moved)).await?;
    let rounds = if double { 2 } else { 1 };
    for n in 1..=rounds {
        within(timeout, "mouse press", page.execute(mouse(DispatchMouseEventType::MousePressed, at, n))).await?;
        within(timeout, "mouse release", page.execute(mouse(DispatchMouseEventType::MouseReleased, at, n))).await?;
    }
    Ok(())
}

/// Presses and releases one key: a name such as `Enter` or `ArrowDown`, or a single character.
pub(crate) async fn press_key(page: &Page, key: &str, timeout: Duration) -> Result<(), BrowserError> {
    let key = if key == "Space" { " " } else { key };
    let def = USKEYBOARD_LAYOUT
        .iter()
        .find(|d| d.key == key)
        .ok_or_else(|| BrowserError::Cdp(format!("unknown key {key:?}")))?;
    let text = def.text.map(str::to_owned).or_else(|| (key.chars().count() == 1).then(|| key.to_owned()));
    let mut down = DispatchKeyEventParams::new(if text.is_some() {
        DispatchKeyEventType::KeyDown
    } else {
        DispatchKeyEventType::RawKeyDown
    });
    down.key = Some(def.key.to_owned());
    down.code = Some(def.code.to_owned());
    down.windows_virtual_key_code = Some(def.key_code);
    down.native_virtual_key_code = Some(def.key_code);
    down.text = text.clone();
    down.unmodified_text = text;
    let mut up = DispatchKeyEventParams::new(DispatchKeyEventType::KeyUp);
    up.key = Some(def.key.to_owned());
    up.code = Some(def.code.to_owned());
    up.windows_virtual_key_code = Some(def.key_code);
    up.native_virtual_key_code = Some(def.key_code);
    within(timeout, "key down", page.execute(down)).await?;
    within(timeout, "key up", page.execute(up)).await?;
    Ok(())
}

/// Types `text` into the focused element. Human-like typing sends one character at a time with
/// 40–140 ms pauses; otherwise the text is inserted at once.
pub(crate) async fn type_text(
    page: &Page,
    text: &str,
    human_like: bool,
    timeout: Duration,
) -> Result<(), BrowserError> {
    if !human_like {
        within(timeout, "insert text", page.execute(InsertTextParams::new(text))).await?;
        return Ok(());
    }
    for ch in text.chars() {
        let s = ch.to_string();
        if USKEYBOARD_LAYOUT.iter().any(|d| d.key == s && ch != '\n') {
            press_key(page, &s, timeout).await?;
        } else {
            within(timeout, "insert text", page.execute(InsertTextParams::new(s))).await?;
        }
        let pause = rand::thread_rng().gen_range(40..=140);
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
    Ok(())
}
