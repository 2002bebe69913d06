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

/// Moves the mouse to `at`, with the left button held (a drag) or none.
async fn move_to(page: &Page, at: PagePoint, held: bool, timeout: Duration) -> Result<(), BrowserError> {
    let mut moved = DispatchMouseEventParams::new(DispatchMouseEventType::MouseMoved, at.x, at.y);
    moved.button = Some(if held { MouseButton::Left } else { MouseButton::None });
    if held {
        moved.buttons = Some(1);
    }
    within(timeout, "mouse move", page.execute(moved)).await?;
    Ok(())
}

/// A left click (or double click) at `at`, as move, press and release events.
pub(crate) async fn click(page: &Page, at: PagePoint, double: bool, timeout: Duration) -> Result<(), BrowserError> {
    move_to(page, at, false, timeout).await?;
    let rounds = if double { 2 } else { 1 };
    for n in 1..=rounds {
        within(timeout, "mouse press", page.execute(mouse(DispatchMouseEventType::MousePressed, at, n))).await?;
        within(timeout, "mouse release", page.execute(mouse(DispatchMouseEventType::MouseReleased, at, n))).await?;
    }
    Ok(())
}

/// A left-button drag from `from` to `to`: press, eight moves with the button held, release.
pub(crate) async fn drag(page: &Page, from: PagePoint, to: PagePoint, timeout: Duration) -> Result<(), BrowserError> {
    move_to(page, from, false, timeout).await?;
    within(timeout, "mouse press", page.execute(mouse(DispatchMouseEventType::MousePressed, from, 1))).await?;
    const STEPS: u32 = 8;
    for step in 1..=STEPS {
        let f = f64::from(step) / f64::from(STEPS);
        let at = PagePoint { x: from.x + (to.x - from.x) * f, y: from.y + (to.y - from.y) * f };
        move_to(page, at, true, timeout).await?;
    }
    within(timeout, "mouse release", page.execute(mouse(DispatchMouseEventType::MouseReleased, to, 1))).await?;
    Ok(())
}

/// A mouse wheel turn at `at`, `dy` CSS pixels down (negative: up): whatever scrolls under that point
/// scrolls (an inner list, a map), not necessarily the page.
pub(crate) async fn wheel(page: &Page, at: PagePoint, dy: f64, timeout: Duration) -> Result<(), BrowserError> {
    move_to(page, at, false, timeout).await?;
    let mut turn = DispatchMouseEventParams::new(DispatchMouseEventType::MouseWheel, at.x, at.y);
    turn.delta_x = Some(0.0);
    turn.delta_y = Some(dy);
    within(timeout, "mouse wheel", page.execute(turn)).await?;
    Ok(())
}

/// Presses and releases one key: a name such as `Enter` or `ArrowDown`, or a single character (one the
/// US layout has no key for, such as `é`, is sent as a key event carrying that text).
pub(crate) async fn press_key(page: &Page, key: &str, timeout: Duration) -> Result<(), BrowserError> {
    let key = if key == "Space" { " " } else { key };
    let Some(def) = USKEYBOARD_LAYOUT.iter().find(|d| d.key == key) else {
        if key.chars().count() != 1 {
            return Err(BrowserError::ElementNotFound(format!("there is no key {key:?}")));
        }
        let mut down = DispatchKeyEventParams::new(DispatchKeyEventType::KeyDown);
        down.key = Some(key.to_owned());
        down.text = Some(key.to_owned());
        down.unmodified_text = Some(key.to_owned());
        let mut up = DispatchKeyEventParams::new(DispatchKeyEventType::KeyUp);
        up.key = Some(key.to_owned());
        within(timeout, "key down", page.execute(down)).await?;
        within(timeout, "key up", page.execute(up)).await?;
        return Ok(());
    };
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

/// The longest human-like typing takes: pauses shrink for long texts, and what is left when the time
/// is up is inserted at once.
pub const HUMAN_TYPING_BUDGET: Duration = Duration::from_secs(8);

/// Types `text` into the focused element. Human-like typing sends one character at a time with
/// 40–140 ms pauses (shorter for long texts), within [`HUMAN_TYPING_BUDGET`]; otherwise the text is
/// inserted at once.
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
    let chars: Vec<char> = text.chars().collect();
    let deadline = tokio::time::Instant::now() + HUMAN_TYPING_BUDGET;
    let longest_pause = HUMAN_TYPING_BUDGET / u32::try_from(chars.len().max(1)).unwrap_or(u32::MAX);
    for (i, ch) in chars.iter().copied().enumerate() {
        if tokio::time::Instant::now() >= deadline {
            let rest: String = chars[i..].iter().collect();
            within(timeout, "insert text", page.execute(InsertTextParams::new(rest))).await?;
            break;
        }
        key_or_text(page, ch, timeout).await?;
        let pause = Duration::from_millis(rand::thread_rng().gen_range(40..=140)).min(longest_pause);
        tokio::time::sleep(pause).await;
    }
    Ok(())
}

/// Types `text` as key presses, one character after another without pauses (a character the US layout
/// has no key for is inserted as text): for what listens to keys rather than to a field's input, such as
/// a canvas editor.
pub(crate) async fn type_keys(page: &Page, text: &str, timeout: Duration) -> Result<(), BrowserError> {
    for ch in text.chars() {
        key_or_text(page, ch, timeout).await?;
    }
    Ok(())
}

/// One character as a key press when the US layout has its key, else as inserted text.
async fn key_or_text(page: &Page, ch: char, timeout: Duration) -> Result<(), BrowserError> {
    let s = ch.to_string();
    if USKEYBOARD_LAYOUT.iter().any(|d| d.key == s && ch != '\n') {
        press_key(page, &s, timeout).await
    } else {
        within(timeout, "insert text", page.execute(InsertTextParams::new(s))).await.map(|_| ())
    }
}
