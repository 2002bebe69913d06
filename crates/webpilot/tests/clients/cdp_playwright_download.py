"""Downloads a file with the official Playwright for Python over a webpilot session's DevTools endpoint and
prints what Playwright's `download` event told it, as one JSON line; then again from a link inside a
same-origin iframe (a frame of the page's own process, which is not a DevTools target of its own).

usage: cdp_playwright_download.py <cdpURL> <fixture site base URL>
"""
import asyncio
import json
import sys

from playwright.async_api import async_playwright


async def main() -> None:
    url, site = sys.argv[1], sys.argv[2].rstrip("/")
    out = {}
    async with async_playwright() as p:
        browser = await p.chromium.connect_over_cdp(url, timeout=30_000)
        page = browser.contexts[0].pages[0]
        await page.goto(site + "/files")
        async with page.expect_download(timeout=20_000) as info:
            await page.click("text=Download report")
        download = await info.value
        out["suggested"] = download.suggested_filename
        out["url"] = download.url
        out["failure"] = await download.failure()
        # The same link inside a same-origin iframe.
        await page.evaluate("""() => new Promise((done) => { const f = document.createElement('iframe');
            f.name = 'inner'; f.onload = () => done(); f.src = '/files'; document.body.append(f); })""")
        frame = page.frame(name="inner")
        async with page.expect_download(timeout=20_000) as info:
            await frame.click("text=Download report")
        framed = await info.value
        out["framed"] = {"suggested": framed.suggested_filename, "url": framed.url, "failure": await framed.failure()}
        await browser.close()
    print(json.dumps(out))


asyncio.run(main())
