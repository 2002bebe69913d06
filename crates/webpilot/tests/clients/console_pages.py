"""The console's session tools and account page in Playwright for Python, on Debian's Chromium: the session list
shows a session's page title, URL, age and state (as the service tells them) with its id on hover; a session started
with recording, a profile and persistProfile; its task history with the answer, cost and duration; the video box not
moving while frames and events stream; after a reload the list and the history (read from the service) are still
right; the live video's WebRTC connection, cut by the service (its WHEP resource deleted), is negotiated again and
plays; then the account page: the balance and recent usage, a session's file downloaded, the saved
profile exported and deleted, a webhook created (its markup shown as text), rotated and its deliveries listed; no
sideways scroll at 1280 x 800, 1920 x 1080 and 390 x 844; and the light and dark schemes with sufficient
contrast, following the system. Prints what it saw as one JSON line; exits non-zero on the first failed check.
With WEBPILOT_CONSOLE_ACCOUNT_SCREENSHOT=<path> it saves the account page at 1280 x 800 there
(docs/console-account.png is made this way).

usage: console_pages.py <service base URL> <API key> <fixture site base URL> <a live session's id>
"""
import json
import os
import pathlib
import sys

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

from console_layout import PIXEL, no_overflow, check

PROFILE = "console-profile"
MARKUP = '<img src=x onerror="window.__xss=1">ops'
# WCAG's contrast ratio of an element's text colour on the nearest opaque background behind it.
CONTRAST = """(sel) => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const node = document.querySelector(sel);
  let bg = node, c = [0, 0, 0, 0];
  while (bg) { c = rgb(getComputedStyle(bg).backgroundColor); if (c.length === 3 || c[3] > 0.9) break; bg = bg.parentElement; }
  const fg = lum(rgb(getComputedStyle(node).color)), back = lum(c);
  return { ratio: (Math.max(fg, back) + 0.05) / (Math.min(fg, back) + 0.05), background: back };
}"""
# Samples the video box's place on every animation frame until stopped.
WATCH_BOX = """() => { window.__boxes = new Set(); const tick = () => {
  const r = document.getElementById('screen').getBoundingClientRect();
  window.__boxes.add([r.left, r.top, r.width, r.height].map((v) => v.toFixed(1)).join(','));
  if (!window.__stopBoxes) requestAnimationFrame(tick); }; tick(); }"""


def wait_text(page, selector, needle, timeout=20_000):
    try:
        page.wait_for_function("([s, n]) => Array.from(document.querySelectorAll(s))"
                               ".some((e) => e.textContent.includes(n))", arg=[selector, needle], timeout=timeout)
    except PlaywrightTimeout:
        texts = page.evaluate("(s) => Array.from(document.querySelectorAll(s)).map((e) => e.textContent)", selector)
        raise SystemExit(f"check failed: no {needle!r} in {selector}: {texts}; status: {page.text_content('#status')}")


def base_of(page):
    """The service's origin, from the page's address."""
    return page.evaluate("() => location.origin")


def sessions_page(page, site, live, seen):
    # The list: a session started elsewhere, its id on hover and its state.
    entry = f"#sessions li[data-id='{live}']"
    wait_text(page, f"{entry} .meta", " ago · idle")
    wait_text(page, f"{entry} .url", "/paint?bg=0000ff")
    check(page.get_attribute(entry, "title") == live, "the id on hover")

    # Start a session with a start URL, recording, a profile and persistProfile.
    page.fill("#starting-url", site + "/paint?bg=ff0000")
    page.fill("#profile", PROFILE)
    page.check("#persist-profile")
    page.check("#record")
    page.click("#start")
    page.wait_for_function(f"() => {{ const p = ({PIXEL})([500, 400]); return p && p[0] > 200 && p[1] < 60; }}",
                           timeout=30_000)
    sid = page.text_content("#current")
    check(sid and sid != live, f"a new session watched: {sid}")
    # The recording is listed once the service has made it: reload the list as a person would.
    for _ in range(100):
        if page.locator(f"#recordings li[title^='{sid}']:has-text('recording')").count():
            break
        page.click("#refresh-recordings")
        page.wait_for_timeout(200)
    check(page.locator(f"#recordings li[title^='{sid}']").count() == 1, "the new session is being recorded")
    # Listed with its page's URL, its age and state.
    mine = f"#sessions li[data-id='{sid}']"
    wait_text(page, f"{mine} .url", "/paint?bg=ff0000")
    wait_text(page, f"{mine} .meta", " ago · ")
    seen["listed"] = [page.text_content(f"{mine} .title"), page.text_content(f"{mine} .url"),
                      page.text_content(f"{mine} .meta")]

    # A task: its history shows the text, status, answer, cost and duration; the video box never moves.
    page.evaluate(WATCH_BOX)
    page.fill("#task", "report the title")
    page.click("#send-task")
    page.wait_for_selector("#tasks li[data-status='complete'] .answer", timeout=30_000)
    # The cost comes with the finished task's poll, just after its event.
    wait_text(page, "#tasks li .meta", "$")
    wait_text(page, "#tasks li .meta", " s")
    task = page.locator("#tasks li").first
    seen["task"] = [task.locator(".task-text").text_content(), task.locator(".meta").text_content(),
                    task.locator(".answer").text_content()]
    check(seen["task"][0] == "report the title" and seen["task"][2] == "Paint ff0000", f"the task {seen['task']}")
    check("$" in seen["task"][1], f"the task's cost: {seen['task']}")
    seen["boxes"] = page.evaluate("() => { window.__stopBoxes = true; return Array.from(window.__boxes); }")
    check(len(seen["boxes"]) == 1, f"the video box moved while the task streamed: {seen['boxes']}")
    seen["events"] = page.locator("#log li").count()

    # A reload: the list and the history come from the service, not from what the tab remembered.
    page.reload()
    wait_text(page, f"{mine} .title", "Paint ff0000")
    wait_text(page, f"{mine} .url", "/paint?bg=ff0000")
    wait_text(page, f"{mine} .meta", " ago · idle")
    seen["reloaded"] = [page.text_content(f"{mine} .title"), page.text_content(f"{mine} .meta")]
    whep = []
    page.on("response", lambda r: whep.append(r.headers.get("location")) if r.request.method == "POST"
            and "/whep" in r.url and r.status == 201 else None)
    page.click(f"{mine} button:has-text('Watch')")
    page.wait_for_selector("#tasks li[data-status='complete'] .answer", timeout=20_000)
    wait_text(page, "#tasks li .meta", "$")
    task = page.locator("#tasks li").first
    seen["history"] = [task.locator(".task-text").text_content(), task.locator(".answer").text_content()]
    check(seen["history"] == ["report the title", "Paint ff0000"], f"the history after a reload: {seen['history']}")

    # The service cuts the live video (its WHEP resource deleted): the console negotiates again, and frames play.
    page.wait_for_function(f"() => {{ const p = ({PIXEL})([500, 400]); return p && p[0] > 200 && p[1] < 60; }}",
                           timeout=30_000)
    check(page.text_content("#video-mode") == "WebRTC" and len(whep) == 1 and whep[0], f"the WHEP resource {whep}")
    cut = page.request.delete(base_of(page) + whep[0] if whep[0].startswith("/") else whep[0])
    check(cut.status in (200, 204), f"the WHEP resource not deleted: {cut.status}")
    wait_text(page, "#log li", "WebRTC connection lost", timeout=30_000)
    wait_text(page, "#log li", "WebRTC reconnected", timeout=30_000)
    check(len(whep) == 2, f"one new WHEP negotiation: {whep}")
    frames = page.evaluate("() => document.getElementById('video').getVideoPlaybackQuality().totalVideoFrames")
    page.fill("#task", f"open {site}/paint?bg=00ff00")
    page.click("#send-task")
    page.wait_for_function(f"() => {{ const p = ({PIXEL})([500, 400]); return p && p[0] < 60 && p[1] > 200; }}",
                           timeout=30_000)
    page.wait_for_function("(n) => document.getElementById('video').getVideoPlaybackQuality().totalVideoFrames > n",
                           arg=frames, timeout=10_000)
    seen["rewatched"] = [page.text_content("#video-mode"), frames,
                         page.evaluate("() => document.getElementById('video').getVideoPlaybackQuality().totalVideoFrames")]

    page.click("#toolbar button[data-state=terminate]")
    page.wait_for_function("() => document.getElementById('current').textContent.includes('ended: terminated')",
                           timeout=20_000)
    return sid


def account_page(page, site, key, live, seen):
    page.click("#nav-account")
    page.wait_for_function("() => document.getElementById('balance').textContent.startsWith('$')")
    balance = page.evaluate("(k) => fetch('/usage', { headers: { Authorization: 'Bearer ' + k } })"
                            ".then((r) => r.json()).then((u) => u.balance)", key)
    page.wait_for_function("() => document.querySelectorAll('#usage li.line').length > 0")
    seen["balance"] = [page.text_content("#balance"), balance, page.locator("#usage li.line").count()]
    check(page.text_content("#balance") == f"${balance:.2f}", f"the balance {seen['balance']}")

    # A session's file, downloaded.
    page.fill("#files-session", live)
    page.click("#files-form button")
    page.wait_for_selector("#files li.file")
    with page.expect_download() as got:
        page.click("#files li.file button")
    path = got.value.path()
    seen["file"] = [got.value.suggested_filename, pathlib.Path(path).read_text()]
    check(seen["file"] == ["notes.txt", "hello from webpilot"], f"the file {seen['file']}")

    # The saved profile: listed once the session's end saved it, exported, deleted.
    for _ in range(50):
        if page.locator(f"#profiles li.profile:has-text('{PROFILE}')").count():
            break
        page.click("#refresh-account")
        page.wait_for_timeout(200)
    with page.expect_download() as got:
        page.click(f"#profiles li.profile:has-text('{PROFILE}') button:has-text('Export')")
    exported = json.loads(pathlib.Path(got.value.path()).read_text())
    check("cookies" in exported and "origins" in exported, f"the export {exported}")
    page.once("dialog", lambda d: d.accept())
    page.click(f"#profiles li.profile:has-text('{PROFILE}') button:has-text('Delete')")
    page.wait_for_function(f"() => !document.getElementById('profiles').textContent.includes('{PROFILE}')")
    seen["profile"] = "exported and deleted"

    # A webhook: created (the secret shown once; markup in its description shown as text), rotated, deliveries.
    page.fill("#webhook-url", site + "/hook")
    page.fill("#webhook-events", "task.completed, session.ended")
    page.fill("#webhook-description", MARKUP)
    page.click("#webhook-form button")
    page.wait_for_selector("#webhook-secret .secret")
    first = page.text_content("#webhook-secret .secret")
    wait_text(page, "#webhooks li.webhook .meta", MARKUP)
    check(page.evaluate("() => document.querySelectorAll('#webhooks img').length") == 0, "markup became HTML")
    check(page.evaluate("() => window.__xss") is None, "markup ran")
    page.click("#webhooks li.webhook button:has-text('Rotate secret')")
    page.wait_for_function("(s) => { const e = document.querySelector('#webhook-secret .secret'); "
                           "return e && e.textContent !== s; }", arg=first)
    second = page.text_content("#webhook-secret .secret")
    check(first.startswith("whsec_") and second.startswith("whsec_"), f"the secrets {first} {second}")
    page.click("#webhooks li.webhook button:has-text('Deliveries')")
    page.wait_for_selector("#deliveries li")
    seen["webhook"] = [page.text_content("#webhooks li.webhook .meta"), page.locator("#deliveries li").count()]

    # Keyboard: Tab reaches a control and shows where the focus is.
    page.focus("#refresh-account")
    page.keyboard.press("Tab")
    seen["focus"] = page.evaluate("() => [document.activeElement.id || document.activeElement.textContent, "
                                  "getComputedStyle(document.activeElement).outlineStyle]")
    check(seen["focus"][1] == "solid", f"no visible focus: {seen['focus']}")

    if os.environ.get("WEBPILOT_CONSOLE_ACCOUNT_SCREENSHOT"):
        page.screenshot(path=os.environ["WEBPILOT_CONSOLE_ACCOUNT_SCREENSHOT"])

    # No sideways scroll on either page at any size.
    for width, height in [(1280, 800), (1920, 1080), (390, 844)]:
        page.set_viewport_size({"width": width, "height": height})
        no_overflow(page, f"account at {width}x{height}")
        page.click("#nav-sessions")
        no_overflow(page, f"sessions at {width}x{height}")
        page.click("#nav-account")


def scheme(browser, base, name):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme=name)
    page = ctx.new_page()
    page.goto(base + "/console")
    text = page.evaluate(CONTRAST, "main h2")
    muted = page.evaluate(CONTRAST, "#video-mode")
    ctx.close()
    dark = text["background"] < 0.2
    check(dark == (name == "dark"), f"the {name} scheme not applied: {text}")
    check(text["ratio"] >= 7 and muted["ratio"] >= 4.5, f"low contrast in the {name} scheme: {text} {muted}")
    return [round(text["ratio"], 1), round(muted["ratio"], 1)]


def main() -> None:
    base, key, site, live = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3].rstrip("/"), sys.argv[4]
    seen = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"])
        seen["light"] = scheme(browser, base, "light")
        seen["dark"] = scheme(browser, base, "dark")
        ctx = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
        page = ctx.new_page()
        page.goto(base + "/console")
        page.fill("#key", key)
        page.click("#use-key")
        page.wait_for_function("() => document.getElementById('who').textContent.includes('key in use')")
        try:
            seen["started"] = sessions_page(page, site, live, seen)
            account_page(page, site, key, live, seen)
        except PlaywrightTimeout as e:
            shown = page.evaluate("() => ['#tasks', '#log', '#status', '#profiles', '#webhooks', '#deliveries']"
                                  ".map((s) => s + ': ' + document.querySelector(s).innerText)")
            raise SystemExit(f"check failed: {e}\nseen: {seen}\nshown: {shown}") from None
        ctx.close()
        browser.close()
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
