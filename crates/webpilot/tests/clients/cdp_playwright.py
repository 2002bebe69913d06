"""Drives a webpilot session over its DevTools endpoint with the official Playwright for Python
(`connect_over_cdp`, no browser download needed) and prints what it saw as one JSON line.

usage: cdp_playwright.py <cdpURL> <fixture site base URL>
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
        out["contexts"] = len(browser.contexts)
        context = browser.contexts[0]
        page = context.pages[0]
        out["first_url"] = page.url
        await page.goto(site + "/form")
        await page.fill("#name", "Ada")
        await page.click("button[type=submit]")
        await page.wait_for_url("**/form/submitted**")
        out["submitted_url"] = page.url
        out["evaluated"] = await page.evaluate("() => document.title + '|' + (1 + 1)")
        second = await context.new_page()
        await second.goto(site + "/pricing")
        out["second_title"] = await second.title()
        out["pages"] = len(context.pages)
        await context.add_cookies([{"name": "fixture", "value": "from-playwright", "url": site + "/"}])
        out["cookies"] = sorted(c["name"] for c in await context.cookies())
        await browser.close()
    print(json.dumps(out))


asyncio.run(main())
