"""The console (`/console`) in Playwright for Python, on Debian's Chromium, at 1280 x 800, 1920 x 1080 and
390 x 844: no sideways scroll, every control reachable, the empty states and disabled controls, a wrong
key reported, a session's live frames in the scaled video, a take-over click on a link in the scaled
video opening it (at 1280 x 800), a guardrail answered and a lost connection reported on the phone, a task text carrying markup shown as text, and after Terminate the
ended state with its reason and the controls disabled. Prints what it saw as one JSON line; exits
non-zero on the first failed check.

usage: console_layout.py <service base URL> <API key> <fixture site base URL> [screenshot path]
"""
import json
import sys
import time

from playwright.sync_api import sync_playwright

VIEWPORTS = [(1280, 800), (1920, 1080), (390, 844)]
SESSION_BUTTONS = "#toolbar button[data-state], #takeover, #send-task"
FRAME_W, FRAME_H, BAND = 1024, 600, 155

# The visible controls that stick out of the viewport sideways (vertical scrolling is allowed).
OUTSIDE = """() => Array.from(document.querySelectorAll('button, input, textarea, video, #screen'))
  .filter((e) => e.offsetParent !== null)
  .map((e) => [e.id || e.textContent.trim(), e.getBoundingClientRect()])
  .filter(([, r]) => r.width === 0 || r.left < -0.5 || r.right > innerWidth + 0.5)
  .map(([name, r]) => `${name} at ${r.left}..${r.right}`)"""
OVERFLOW = "() => [document.documentElement.scrollWidth, innerWidth]"
DISABLED = f"() => Array.from(document.querySelectorAll('{SESSION_BUTTONS}')).map((b) => b.disabled)"
# The colour of the live video at a frame point (drawn at the frame's own size).
PIXEL = """([x, y]) => { const v = document.getElementById('video');
  if (!v.videoWidth) return null;
  const c = document.createElement('canvas'); c.width = 1024; c.height = 600;
  const g = c.getContext('2d'); g.drawImage(v, 0, 0, 1024, 600);
  return Array.from(g.getImageData(x, y, 1, 1).data.slice(0, 3)); }"""
SCREEN = """() => { const r = document.getElementById('screen').getBoundingClientRect();
  const v = document.getElementById('video').getBoundingClientRect();
  return { left: r.left, top: r.top, width: r.width, height: r.height, videoWidth: v.width, videoHeight: v.height }; }"""


def check(cond, what):
    if not cond:
        raise SystemExit(f"check failed: {what}")


def near(pixel, want):
    return pixel is not None and all(abs(a - b) < 40 for a, b in zip(pixel, want))


def no_overflow(page, when):
    width, inner = page.evaluate(OVERFLOW)
    check(width <= inner, f"{when}: the page is {width} px wide in a {inner} px window")
    outside = page.evaluate(OUTSIDE)
    check(not outside, f"{when}: controls outside the viewport: {outside}")
    return width


def one_viewport(browser, base, key, site, width, height, shot):
    seen = {"viewport": f"{width}x{height}"}
    started = time.monotonic()
    ctx = browser.new_context(viewport={"width": width, "height": height})
    page = ctx.new_page()
    page.goto(base + "/console")
    when = f"{width}x{height}"

    # Empty: it says to paste a key; nothing that needs a session (or a key) can be pressed.
    no_overflow(page, f"{when} empty")
    page.wait_for_function("() => document.getElementById('hint').textContent.includes('Paste your API key')")
    check(all(page.evaluate(DISABLED)), f"{when}: session controls enabled without a session")
    check(page.is_disabled("#start"), f"{when}: Start enabled without a key")

    # A wrong key is reported in the header and not kept.
    page.fill("#key", "wp_not-a-real-key")
    page.click("#use-key")
    page.wait_for_function("() => document.getElementById('who').textContent.includes('wrong key')")
    seen["wrong_key"] = page.text_content("#who")
    check("in use" not in seen["wrong_key"], f"{when}: a wrong key shown as in use")
    check(page.evaluate("() => sessionStorage.getItem('webpilot.key')") is None, f"{when}: a wrong key kept")

    # The right key: kept in the tab's session storage; the hint says to start or pick a session.
    page.fill("#key", key)
    page.click("#use-key")
    page.wait_for_function("() => document.getElementById('who').textContent.includes('key in use')")
    check(page.evaluate("() => sessionStorage.getItem('webpilot.key')") == key, f"{when}: the key not kept")
    check(key not in page.url, f"{when}: the key in the URL")
    page.wait_for_function("() => document.getElementById('hint').textContent.includes('Start a session')")
    check(all(page.evaluate(DISABLED)), f"{when}: session controls enabled with no session selected")
    no_overflow(page, f"{when} keyed")

    # Start a session on a red page with a link: its live frames show in the scaled video.
    page.fill("#starting-url", site + "/paint?bg=ff0000&open=00aa00")
    page.click("#start")
    page.wait_for_function(f"() => {{ const p = ({PIXEL})([500, 400]); return p && p[0] > 200 && p[1] < 60; }}",
                           timeout=30_000)
    check(page.evaluate("() => document.getElementById('hint').hidden"), f"{when}: the hint covers the video")
    check(not any(page.evaluate(DISABLED)), f"{when}: session controls disabled while watching")
    screen = page.evaluate(SCREEN)
    seen["screen"] = [round(screen["width"], 1), round(screen["height"], 1)]
    ratio = screen["width"] / screen["height"]
    check(abs(ratio - FRAME_W / FRAME_H) < 0.01, f"{when}: the video's box is {screen}")
    check(abs(screen["videoWidth"] - screen["width"]) < 0.5 and abs(screen["videoHeight"] - screen["height"]) < 0.5,
          f"{when}: the video does not fill its box: {screen}")
    check(screen["top"] + screen["height"] <= height or width < 600,
          f"{when}: the video runs below the window: {screen}")
    seen["page_width"] = no_overflow(page, f"{when} watching")

    # Markup in a task's text is shown as text.
    if width == 1920:
        page.fill("#task", '<img src=x onerror="window.__xss=1">report the title')
        page.click("#send-task")
        page.wait_for_function("() => Array.from(document.querySelectorAll('#log li')).some((li) => "
                               "li.textContent.includes('<img src=x'))")
        check(page.evaluate("() => document.querySelectorAll('#log img').length") == 0, "markup became HTML")
        check(page.evaluate("() => window.__xss") is None, "markup ran")
        seen["markup_as_text"] = True

    # Take over and click the link in the scaled video (page point 27,22; frame point 27,177): the popup
    # opens, and the video follows it. The console logs the frame point it sent, mapped through the scale.
    if width == 1280:
        page.fill("#task", "report the title")
        page.click("#send-task")
        page.wait_for_function("() => Array.from(document.querySelectorAll('#log li')).some((li) => "
                               "li.textContent.includes('task_completed'))", timeout=30_000)
        page.click("#takeover")
        page.wait_for_function("() => document.getElementById('takeover').getAttribute('aria-pressed') === 'true'")
        sx, sy = screen["width"] / FRAME_W, screen["height"] / FRAME_H
        cx = round(screen["left"] + 27 * sx)
        cy = round(screen["top"] + (BAND + 22) * sy)
        want = (round((cx - screen["left"]) / sx), round((cy - screen["top"]) / sy))
        page.mouse.click(cx, cy)
        page.wait_for_function(f"() => Array.from(document.querySelectorAll('#log li')).some((li) => "
                               f"li.textContent.endsWith('click: {want[0]},{want[1]}'))")
        seen["clicked_frame"] = list(want)
        page.wait_for_function(f"() => {{ const p = ({PIXEL})([500, 400]); return p && p[0] < 60 && p[1] > 130; }}",
                               timeout=20_000)
        seen["link_opened"] = True
        # The popup came from a person's click, which sends no event: the list still shows it as the
        # session's page once the console reads the list again.
        page.wait_for_function("() => { const li = document.querySelector('#sessions li.selected .url'); "
                               "return Boolean(li) && li.textContent.includes('bg=00aa00'); }", timeout=10_000)
        seen["list_follows_popup"] = True
        page.click("#takeover")
        if shot:
            page.screenshot(path=shot)

    # On a phone: the agent's question fits the screen and is answered there; a lost connection is
    # reported, and the console reconnects.
    if width == 390:
        page.fill("#task", 'ask the human "Which word?"; report the url')
        page.click("#send-task")
        page.wait_for_selector("#guardrail", state="visible")
        check(page.text_content("#guardrail-question") == "Which word?", "the question shown")
        no_overflow(page, f"{when} guardrail")
        page.fill("#guardrail-answer", "blue")
        page.click("#guardrail button[type=submit]")
        page.wait_for_selector("#guardrail", state="hidden")
        page.wait_for_function("() => Array.from(document.querySelectorAll('#log li')).some((li) => "
                               "li.textContent.includes('task_completed'))", timeout=20_000)
        seen["guardrail_answered"] = True
        ctx.set_offline(True)
        page.wait_for_function("() => document.getElementById('conn').textContent.includes('connection lost')",
                               timeout=20_000)
        seen["lost"] = page.text_content("#conn")
        ctx.set_offline(False)
        page.wait_for_function("() => document.getElementById('conn').textContent === ''", timeout=20_000)
        seen["reconnected"] = True

    # Terminate: the console says the session ended and why, and its controls are disabled.
    page.click("#toolbar button[data-state=terminate]")
    page.wait_for_function("() => document.getElementById('current').textContent.includes('ended: terminated')",
                           timeout=20_000)
    page.wait_for_function("() => !document.getElementById('hint').hidden")
    seen["ended_hint"] = page.text_content("#hint")
    check("terminated" in seen["ended_hint"], f"{when}: the ended hint {seen['ended_hint']!r}")
    check(all(page.evaluate(DISABLED)), f"{when}: session controls enabled after the session ended")
    no_overflow(page, f"{when} ended")
    ctx.close()
    seen["seconds"] = round(time.monotonic() - started, 1)
    return seen


def main() -> None:
    base, key, site = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3].rstrip("/")
    shot = sys.argv[4] if len(sys.argv) > 4 else None
    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"])
        for width, height in VIEWPORTS:
            out.append(one_viewport(browser, base, key, site, width, height, shot))
        browser.close()
    print(json.dumps({"viewports": out}))


if __name__ == "__main__":
    main()
