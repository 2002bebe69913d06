//! Waiting for a task: the inline answer of newTask / run-task, then polls of `GET /task/{sessionId}/{taskId}`
//! past the inline wait, with guardrails answered through `onGuardrail`.

import { GuardrailError, TaskFailedError, WebpilotError } from "./errors.js";
import { sleep, type Http } from "./http.js";
import type { Guardrail, PollView, TaskAfterWait, TaskResult, WaitOptions } from "./types.js";

/** What an answer says about a task: final, waiting for a human, or still running. */
type Step = { done: TaskResult } | { guardrail: Guardrail } | { running: true };

function step(sessionId: string, taskId: string, body: TaskAfterWait | PollView): Step {
  if ("status" in body && body.status === "failed" && "error" in body) {
    throw new TaskFailedError(sessionId, taskId, body.error, body.code, body);
  }
  if ("result" in body) {
    const data = body.result.data;
    return { done: { sessionId, taskId, message: data.message, output: data.output, data, usage: body.usage } };
  }
  if ("type" in body && body.type === "task_completed" && "completedAt" in body) {
    const data = body.data;
    return { done: { sessionId, taskId, message: data.message, output: data.output, data, usage: body.usage } };
  }
  if ("type" in body && body.type === "guardrail_trigger" && "data" in body && "value" in body.data) {
    return { guardrail: body.data };
  }
  return { running: true };
}

/** The ids of a task answer (newTask, run-task); throws when they are missing. */
export function taskIds(body: TaskAfterWait): { sessionId: string; taskId: string } {
  const b = body as { sessionId?: unknown; taskId?: unknown };
  if (typeof b.sessionId !== "string" || typeof b.taskId !== "string") {
    throw new WebpilotError("the task answer carries no sessionId and taskId", "INVALID_RESPONSE", 200, body);
  }
  return { sessionId: b.sessionId, taskId: b.taskId };
}

/**
 * Follows a task from its first answer (`first`, or a poll when absent) until it completes. A failed task
 * throws `TaskFailedError`; a guardrail is answered by `onGuardrail` through `answer`, or throws
 * `GuardrailError` without one.
 */
export async function follow(
  http: Http,
  ids: { sessionId: string; taskId: string },
  first: TaskAfterWait | undefined,
  answer: (text: string) => Promise<unknown>,
  options: WaitOptions = {},
): Promise<TaskResult> {
  const { sessionId, taskId } = ids;
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
  const interval = options.pollIntervalMs ?? 1000;
  const path = `/task/${encodeURIComponent(sessionId)}/${encodeURIComponent(taskId)}`;
  let body: TaskAfterWait | PollView | undefined = first;
  let answered: string | undefined; // the question answered last, until the task moves past it
  for (;;) {
    if (body === undefined) {
      body = await http.json<PollView>({ method: "GET", path, anonymous: true, signal: options.signal });
    }
    const s = step(sessionId, taskId, body);
    if ("done" in s) return s.done;
    if ("guardrail" in s && answered !== s.guardrail.value) {
      if (!options.onGuardrail) throw new GuardrailError(sessionId, taskId, s.guardrail);
      await answer(await options.onGuardrail(s.guardrail));
      answered = s.guardrail.value;
      body = undefined;
      continue;
    }
    if ("running" in s) answered = undefined;
    if (Date.now() >= deadline) {
      throw new WebpilotError(`task ${taskId} did not end within ${options.timeoutMs} ms`, "TIMEOUT", 0);
    }
    await sleep(interval, options.signal);
    body = undefined;
  }
}
