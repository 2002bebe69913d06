//! Verifying a webhook delivery (Standard Webhooks): `webhook-signature` holds `v1,<base64 HMAC-SHA256 of
//! id.timestamp.body>` under the key a `whsec_` secret carries in base64; several, space-separated, after a
//! rotation. Uses Web Crypto, so it runs on Node 18+, Deno, browsers and edge runtimes.

import { WebpilotError } from "./errors.js";
import type { WebhookMessage } from "./types.js";

/** Request headers: a `Headers`, or a plain object (Node's `req.headers`, values possibly arrays). */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

function fromBase64(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function toBase64(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

/** Compares two strings in time independent of where they differ. */
function equal(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

const fail = (why: string): WebpilotError => new WebpilotError(why, "WEBHOOK_VERIFICATION_FAILED", 0);

/**
 * Checks a delivery's signature and timestamp and returns its parsed message. `body` must be the raw body as
 * received (not re-serialised JSON). Throws `WebpilotError` with code `WEBHOOK_VERIFICATION_FAILED` when a
 * header is missing, no signature matches, or the timestamp is more than `toleranceSeconds` (default 300)
 * away from now (a replay).
 */
export async function verifyWebhook(
  secret: string,
  body: string | Uint8Array,
  headers: HeaderSource,
  options: { toleranceSeconds?: number; now?: Date } = {},
): Promise<WebhookMessage> {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures) throw fail("the webhook-id, -timestamp or -signature header is missing");
  const ts = Number(timestamp);
  const now = (options.now ?? new Date()).getTime() / 1000;
  if (!Number.isInteger(ts) || Math.abs(now - ts) > (options.toleranceSeconds ?? 300)) {
    throw fail("the webhook-timestamp is too old or too new");
  }
  let key: ArrayBuffer;
  try {
    key = fromBase64(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret).buffer as ArrayBuffer;
  } catch {
    throw fail("the secret is not a whsec_ secret");
  }
  const text = typeof body === "string" ? body : new TextDecoder().decode(body);
  const hmac = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const signed = new TextEncoder().encode(`${id}.${timestamp}.${text}`);
  const expected = toBase64(new Uint8Array(await crypto.subtle.sign("HMAC", hmac, signed)));
  const matches = signatures
    .split(" ")
    .map((s) => s.split(","))
    .some(([version, sig]) => version === "v1" && sig !== undefined && equal(sig, expected));
  if (!matches) throw fail("no signature matches the secret");
  try {
    return JSON.parse(text) as WebhookMessage;
  } catch {
    throw fail("the body is not JSON");
  }
}
