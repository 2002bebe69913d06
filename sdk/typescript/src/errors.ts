//! Errors: every failure is a `WebpilotError` carrying the service's `code` and the HTTP `status`.

import type { Guardrail } from "./types.js";

/** An error answer of the service (`{success: false, message, code}`), a transport failure, or an SDK misuse. */
export class WebpilotError extends Error {
  /** The service's error code (`SESSION_NOT_FOUND`, `RATE_LIMIT_EXCEEDED`, ...), or the SDK's own
   *  (`NETWORK_ERROR`, `TIMEOUT`, `INVALID_RESPONSE`, `WEBHOOK_VERIFICATION_FAILED`, `UNSUPPORTED`). */
  readonly code: string;
  /** The HTTP status; 0 when no answer arrived. */
  readonly status: number;
  /** The parsed error body, when there was one. */
  readonly body: unknown;
  /** Seconds the service asked to wait (`Retry-After`), when it said. */
  readonly retryAfter: number | undefined;

  constructor(message: string, code: string, status: number, body?: unknown, retryAfter?: number) {
    super(message);
    this.name = "WebpilotError";
    this.code = code;
    this.status = status;
    this.body = body;
    this.retryAfter = retryAfter;
  }
}

/** A task that ended in failure (`status: "failed"`): `code` is the task's failure code (`TASK_STOPPED`, ...). */
export class TaskFailedError extends WebpilotError {
  readonly sessionId: string;
  readonly taskId: string;

  constructor(sessionId: string, taskId: string, error: string, code: string | null | undefined, body: unknown) {
    super(error, code ?? "TASK_FAILED", 200, body);
    this.name = "TaskFailedError";
    this.sessionId = sessionId;
    this.taskId = taskId;
  }
}

/** The task waits for a human (a guardrail) and no `onGuardrail` handler was given: answer it with
 *  `session.answerGuardrail(text)`, then `session.wait(taskId)`. */
export class GuardrailError extends WebpilotError {
  readonly sessionId: string;
  readonly taskId: string;
  readonly guardrail: Guardrail;

  constructor(sessionId: string, taskId: string, guardrail: Guardrail) {
    super(`the task waits for a human: ${guardrail.value}`, "GUARDRAIL_TRIGGERED", 200, guardrail);
    this.name = "GuardrailError";
    this.sessionId = sessionId;
    this.taskId = taskId;
    this.guardrail = guardrail;
  }
}
