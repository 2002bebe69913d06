//! What the SDK does with web-platform APIs only (`fetch`, `socket.io-client`, WebCrypto), run in a Chromium
//! page by `browser.ts` and under Deno by `deno.ts`: a session, a planner task and its `task_completed` event,
//! the session list and history, a refused key, and the webhook helper on a signature made here.

import { type SessionEvent, verifyWebhook, Webpilot, WebpilotError } from "../src/index.js";

export interface Config {
  /** The service's base URL. */
  base: string;
  key: string;
  /** The fixture site's base URL (its home page's title is "Fixture Home"). */
  site: string;
}

/** A Standard Webhooks signature made here with WebCrypto, as a sender would. */
async function sign(secret: string, id: string, timestamp: string, body: string): Promise<string> {
  const raw = Uint8Array.from(atob(secret.replace(/^whsec_/, "")), (c) => c.charCodeAt(0));
  const key = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${id}.${timestamp}.${body}`));
  return `v1,${btoa(String.fromCharCode(...new Uint8Array(mac)))}`;
}

/** One session, task and event stream, a refused call and the webhook helper, through the SDK alone. */
export async function portableRun(config: Config): Promise<Record<string, unknown>> {
  const wp = new Webpilot({ baseUrl: config.base, apiKey: config.key });
  const health = await wp.health();

  const s = await wp.sessions.start({ startingUrl: `${config.site}/` });
  const events = s.events();
  await events.ready;
  const result = await s.run("report the title");
  const completed = await events.find(
    (e: SessionEvent) => e.type === "task_completed" && "taskId" in e && e.taskId === result.taskId,
  );
  events.close();
  const listed = (await wp.sessions.list()).some((x) => x.id === s.id);
  const history = await wp.sessions.tasks(s.id);
  await s.terminate();

  // A refused call is the SDK's error, with the service's code and status.
  let refused: { code: string; status: number } | undefined;
  await new Webpilot({ baseUrl: config.base, apiKey: "wrong", maxRetries: 0 }).sessions.list().catch((e: unknown) => {
    if (e instanceof WebpilotError) refused = { code: e.code, status: e.status };
  });

  // The webhook helper verifies with WebCrypto, and refuses a forged signature.
  const secret = `whsec_${btoa("a browser's webhook secret")}`;
  const body = JSON.stringify({ type: "task.completed", timestamp: new Date().toISOString(), data: {} });
  const id = "msg_browser";
  const timestamp = String(Math.floor(Date.now() / 1000));
  const headers = { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": await sign(secret, id, timestamp, body) };
  const verified = (await verifyWebhook(secret, body, headers)).type;
  const forged = await verifyWebhook(secret, body, { ...headers, "webhook-signature": "v1,AAAA" }).then(
    () => "accepted",
    (e: unknown) => (e instanceof WebpilotError ? e.code : String(e)),
  );

  return {
    health: health.status,
    sessionId: s.id,
    answer: result.message,
    completedEvent: completed.type,
    listed,
    history: history.map((t) => t.status),
    refused,
    verified,
    forged,
  };
}
