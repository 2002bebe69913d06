//! The SDK inside a web page, with no Node at all (run by `crates/webpilot/tests/clients/sdk_browser.py` in
//! Playwright's Chromium, from a page on the service's own origin): the browser's `fetch`, `socket.io-client`'s
//! browser build for events, and WebCrypto for the webhook helper. The key and the site come in the URL's
//! fragment; the outcome is left in `window.webpilotOutcome` (a summary, or the error that stopped it).

import { type Config, portableRun } from "./portable.js";

declare global {
  interface Window {
    webpilotOutcome?: { ok: true; summary: unknown } | { ok: false; error: string };
  }
}

const given = JSON.parse(decodeURIComponent(location.hash.slice(1))) as Omit<Config, "base">;
portableRun({ ...given, base: location.origin }).then(
  (summary) => {
    window.webpilotOutcome = { ok: true, summary };
  },
  (e: unknown) => {
    window.webpilotOutcome = { ok: false, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  },
);
