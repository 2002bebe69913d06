"""The TypeScript SDK in a web page, in Playwright for Python on Debian's Chromium: the compiled SDK
(`sdk/typescript/dist-test`, as `tsc` left it, no bundler) and socket.io-client's browser build are served
under `/__sdk-test/` of the service's own origin by Playwright (the service never sees those requests), with
an import map for `socket.io-client`. The page runs `test/browser.js`, which drives the real service. Prints
what the page reported as one JSON line, with the console's errors; exits non-zero when the page did not
finish.

usage: sdk_browser.py <service base URL> <API key> <fixture site base URL> <sdk/typescript folder>
"""
import json
import mimetypes
import sys
from pathlib import Path
from urllib.parse import quote, urlparse

from playwright.sync_api import sync_playwright

PREFIX = "/__sdk-test/"
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>webpilot SDK in a browser</title>
<script type="importmap">{"imports": {"socket.io-client": "/__sdk-test/socket.io.esm.min.js"}}</script>
<script type="module" src="/__sdk-test/dist-test/test/browser.js"></script>
</head><body></body></html>"""


def main() -> None:
    base, key, site, sdk = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3].rstrip("/"), Path(sys.argv[4])
    files = {
        "index.html": PAGE.encode(),
        "socket.io.esm.min.js": (sdk / "node_modules/socket.io-client/dist/socket.io.esm.min.js").read_bytes(),
    }
    served = []

    def serve(route):
        path = urlparse(route.request.url).path[len(PREFIX):]
        served.append(path)
        if path in files:
            body = files[path]
        else:
            file = (sdk / path).resolve()
            if not path.startswith("dist-test/") or sdk.resolve() not in file.parents or not file.is_file():
                route.fulfill(status=404, body=b"not served")
                return
            body = file.read_bytes()
        kind = "text/html" if path.endswith(".html") else mimetypes.guess_type(path)[0] or "text/javascript"
        if path.endswith(".js"):
            kind = "text/javascript"
        route.fulfill(status=200, body=body, headers={"content-type": kind})

    errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.route(f"{base}{PREFIX}**", serve)
        config = quote(json.dumps({"key": key, "site": site}))
        page.goto(f"{base}{PREFIX}index.html#{config}")
        page.wait_for_function("() => window.webpilotOutcome !== undefined", timeout=60_000)
        outcome = page.evaluate("() => window.webpilotOutcome")
        has_process = page.evaluate("() => typeof process !== 'undefined' || typeof require !== 'undefined'")
        browser.close()
    print(json.dumps({"outcome": outcome, "errors": errors, "served": served, "nodeGlobals": has_process}))
    if not outcome.get("ok"):
        sys.exit(1)


if __name__ == "__main__":
    main()
