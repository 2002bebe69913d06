//! The SDK end to end against the real service (run by `crates/webpilot/tests/api/sdk_typescript.rs`).
//! Usage: node e2e.js '<config JSON>' with {model: {base, key, site}, planner: {base, key, site}, hookPort}:
//! `model` is a service with the scripted model (recorded session, events, pause / resume / stop, a webhook),
//! `planner` one with the offline planner and a tight rate limit (interactions, a guardrail, run-task, a
//! downloaded file, a 429 retried after Retry-After). Prints a JSON summary; any failed check throws.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import {
  type RetryInfo,
  type SessionEvent,
  type WebhookMessage,
  TaskFailedError,
  verifyWebhook,
  Webpilot,
  WebpilotError,
} from "../src/index.js";

interface Target {
  base: string;
  key: string;
  site: string;
}
const config = JSON.parse(process.argv[2] ?? "{}") as { model: Target; planner: Target; hookPort: number };

type Of<T extends SessionEvent["type"]> = Extract<SessionEvent, { type: T }>;
const is =
  <T extends SessionEvent["type"]>(type: T, taskId?: string) =>
  (e: SessionEvent): e is Of<T> =>
    e.type === type && (taskId === undefined || ("taskId" in e && e.taskId === taskId));

/** A webhook receiver that verifies every delivery with the SDK's helper. */
function receiver(secret: () => string | undefined) {
  const verified: WebhookMessage[] = [];
  const waiters: (() => void)[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const key = secret();
      if (key === undefined) {
        res.writeHead(503).end();
        return;
      }
      verifyWebhook(key, new Uint8Array(body), req.headers).then(
        (msg) => {
          verified.push(msg);
          waiters.splice(0).forEach((w) => w());
          res.writeHead(204).end();
        },
        () => res.writeHead(400).end(),
      );
    });
  });
  const until = async (pred: (m: WebhookMessage[]) => boolean): Promise<WebhookMessage[]> => {
    while (!pred(verified)) await new Promise<void>((r) => waiters.push(r));
    return verified;
  };
  return { server, verified, until };
}

async function modelPart(t: Target) {
  const wp = new Webpilot({ baseUrl: t.base, apiKey: t.key });
  let secret: string | undefined;
  const hooks = receiver(() => secret);
  await new Promise<void>((r) => hooks.server.listen(config.hookPort, "127.0.0.1", r));
  const hook = await wp.webhooks.create(`http://127.0.0.1:${config.hookPort}/hook`, [
    "task.completed",
    "session.ended",
  ]);
  secret = hook.secret;
  assert.ok(hook.secret.startsWith("whsec_"));
  assert.deepEqual((await wp.webhooks.list()).map((w) => w.webhookId), [hook.webhookId]);

  let sessionId: string;
  let first: { taskId: string; message: string };
  let ending: Promise<Of<"end_session">> | undefined;
  {
    await using s = await wp.sessions.start({ startingUrl: t.site + "/", recording: true });
    sessionId = s.id;
    assert.equal(s.recording, true);
    assert.match(s.cdpUrl, /^ws:\/\/.+\/cdp\//);
    assert.deepEqual((await wp.sessions.list()).map((x) => x.id), [s.id]);
    const events = s.events();
    await events.ready;

    // A task through the scripted model, paused and resumed while its second model call is under way.
    const running = s.run("Report the page title");
    const action = await events.find(is("action"));
    assert.equal(action.data.name, "extract");
    assert.equal((await s.pause()).success, true);
    assert.equal((await s.resume()).success, true);
    const result = await running;
    assert.equal(result.message, "The title is Fixture Home.");
    assert.ok(result.data.prompt_tokens > 0);
    const completed = await events.find(is("task_completed", result.taskId));
    assert.equal(completed.data.message, result.message);
    first = { taskId: result.taskId, message: result.message };

    // A second task, stopped while its model call hangs.
    const stopped = s.run("Think for a long time");
    await events.find((e) => e.type === "action" && e.taskId !== result.taskId);
    assert.equal((await s.stop()).success, true);
    const failure = await stopped.then(
      () => assert.fail("the stopped task completed"),
      (e: unknown) => e,
    );
    assert.ok(failure instanceof TaskFailedError, String(failure));
    assert.equal(failure.code, "TASK_STOPPED");
    await events.find(is("error", failure.taskId));
    // The session's task history, newest first: the stopped task, then the completed one.
    const history = await wp.sessions.tasks(s.id);
    assert.deepEqual(history.map((h) => [h.taskId, h.status]), [[failure.taskId, "failed"], [result.taskId, "complete"]]);
    assert.equal(history[1]?.answer, result.message);
    assert.equal(history[0]?.code, "TASK_STOPPED");
    assert.deepEqual((await wp.sessions.tasks(s.id, { limit: 1, offset: 1 })).map((h) => h.taskId), [result.taskId]);

    // A file uploaded into the session, listed and read back.
    const note = await wp.files.upload(s.id, "note.txt", "hello from the SDK");
    assert.equal(note.bytes, 18);
    assert.deepEqual((await wp.files.list(s.id)).map((f) => f.name), ["note.txt"]);
    assert.equal(new TextDecoder().decode(await wp.files.download(s.id, "note.txt")), "hello from the SDK");

    // Leaving the block terminates the session (`await using`); the stream ends with end_session.
    ending = events.find(is("end_session"));
  }
  const end = await ending;
  assert.equal(end?.reason, "terminated");
  assert.deepEqual(await wp.sessions.list(), []);

  // The recording: listed, ready, and a WebM video.
  const video = await wp.recordings.download(sessionId);
  assert.deepEqual([...video.slice(0, 4)], [0x1a, 0x45, 0xdf, 0xa3], "an EBML (WebM) header");
  const recs = await wp.recordings.list();
  assert.ok(recs.recordings.some((r) => r.sessionId === sessionId && r.status === "ready"));
  const timeline = await wp.recordings.events(sessionId);
  assert.ok(timeline.events.some((e) => e.event === "end_session"));

  // The webhook deliveries, each verified by verifyWebhook; a forged one is refused.
  const got = await hooks.until(
    (m) => m.some((x) => x.type === "task.completed") && m.some((x) => x.type === "session.ended"),
  );
  const done = got.find((x) => x.type === "task.completed");
  assert.ok(done?.type === "task.completed");
  assert.equal(done.data.taskId, first.taskId);
  const ended = got.find((x) => x.type === "session.ended");
  assert.ok(ended?.type === "session.ended");
  assert.equal(ended.data.reason, "terminated");
  const forged = { "webhook-id": "msg_x", "webhook-timestamp": String(Math.floor(Date.now() / 1000)) };
  await assert.rejects(
    verifyWebhook(hook.secret, "{}", { ...forged, "webhook-signature": "v1,AAAA" }),
    (e: unknown) => e instanceof WebpilotError && e.code === "WEBHOOK_VERIFICATION_FAILED",
  );
  hooks.server.close();
  return { sessionId, firstTask: first.taskId, videoBytes: video.length, webhooks: got.map((m) => m.type) };
}

async function plannerPart(t: Target) {
  const retries: RetryInfo[] = [];
  const wp = new Webpilot({ baseUrl: t.base, apiKey: t.key, onRetry: (r) => retries.push(r) });
  // Manual input through the SDK, read back by a planner task.
  {
    await using s = await wp.sessions.start({ startingUrl: t.site + "/counter" });
    assert.equal((await s.click(200, 295)).success, true);
    await s.click(550, 275);
    await s.type("hi");
    await s.keyPress("Tab");
    const r = await s.run('report the text of "#count"; report the text of "#typed"; report the text of "#keys"');
    assert.equal(r.message, "1\nhi\nTab");
  }

  // A guardrail round trip on a one-shot task.
  const asked: string[] = [];
  const guarded = await wp.runTask(`open ${t.site}/; ask the human "Which plan?"; report the title`, {
    onGuardrail: (g) => {
      asked.push(g.value);
      return "Pro";
    },
  });
  assert.deepEqual(asked, ["Which plan?"]);
  assert.equal(guarded.message, "Fixture Home");

  // Use up the rate window without retries, then a run-task waits out Retry-After and goes through.
  // This client takes its base URL and key from the environment.
  process.env["WEBPILOT_BASE_URL"] = t.base;
  process.env["WEBPILOT_API_KEY"] = t.key;
  const strict = new Webpilot({ maxRetries: 0 });
  assert.equal(strict.baseUrl, t.base);
  let limited: WebpilotError | undefined;
  for (let i = 0; i < 20 && limited === undefined; i++) {
    await strict.runTask(" ").catch((e: unknown) => {
      assert.ok(e instanceof WebpilotError);
      if (e.status === 429) limited = e;
      else assert.equal(e.code, "INVALID_TASK_DETAILS");
    });
  }
  assert.ok(limited, "the window filled");
  assert.equal(limited.code, "RATE_LIMIT_EXCEEDED");
  assert.ok(limited.retryAfter !== undefined && limited.retryAfter >= 1);
  retries.length = 0;
  const started = Date.now();
  const download = await wp.runTask(`open ${t.site}/files; click "Download report"`, {
    profile: "sdk-profile",
    persistProfile: true,
  });
  const waited = Date.now() - started;
  const retry = retries.find((r) => r.path === "/start/run-task");
  assert.ok(retry, "the run-task was retried");
  assert.equal(retry.status, 429);
  assert.equal(retry.delayMs, (retry.retryAfter ?? 0) * 1000, "the delay is Retry-After");
  assert.ok(waited >= retry.delayMs, `waited ${waited} ms, Retry-After ${retry.delayMs} ms`);

  // The page's download, stored in the (ended) session.
  const files = await wp.files.list(download.sessionId);
  const report = files.find((f) => f.name === "report.csv");
  assert.ok(report, JSON.stringify(files));
  const bytes = await wp.files.download(download.sessionId, "report.csv");
  assert.equal(new TextDecoder().decode(bytes), "invoice,amount\nINV-001,42.00\nINV-002,17.50\n");
  assert.ok((await wp.profiles.list()).some((p) => p.name === "sdk-profile"));
  return { retryAfter: retry.retryAfter, waitedMs: waited, report: report.sha256 };
}

const [model, planner] = await Promise.all([modelPart(config.model), plannerPart(config.planner)]);
console.log(JSON.stringify({ ok: true, model, planner }));
process.exit(0);
