//! A live session: tasks, control, manual input, guardrail answers, events, and its end.

import { WebpilotError } from "./errors.js";
import { EventStream } from "./events.js";
import type { Http } from "./http.js";
import { follow, taskIds } from "./tasks.js";
import type {
  InteractionAction,
  LiveSession,
  SessionStarted,
  Streaming,
  TaskAfterWait,
  TaskOptions,
  TaskResult,
  WaitOptions,
} from "./types.js";

// `await using` needs Symbol.asyncDispose, which runtimes before Node 18.18 lack.
const symbols = Symbol as { asyncDispose?: symbol };
symbols.asyncDispose ??= Symbol.for("Symbol.asyncDispose");

/** A message acknowledged at once (`state`, `interaction`, `guardrail`). */
export interface Ack {
  success: boolean;
  message: string;
}

/** One browser session. `terminate()` ends it; `await using` does so on scope exit. */
export class Session {
  readonly id: string;
  /** The Socket.IO URL with the session's capability (`events()` connects to it). */
  readonly socketUrl: string;
  /** The DevTools endpoint for Playwright (`chromium.connectOverCDP(session.cdpUrl)`) or Puppeteer. */
  readonly cdpUrl: string;
  readonly streaming: Streaming;
  /** Whether the session is recorded (false when asked but skipped, see `started.recordingSkipped`);
   *  undefined for a session found by `sessions.list()`. */
  readonly recording: boolean | undefined;
  /** The start-session answer (undefined for a session found by `sessions.list()`). */
  readonly started: SessionStarted | undefined;
  private readonly http: Http;
  private terminated = false;

  constructor(http: Http, info: SessionStarted | LiveSession) {
    this.http = http;
    this.id = info.sessionId;
    this.socketUrl = info.socketURL;
    this.cdpUrl = info.cdpURL;
    this.streaming = info.streaming;
    this.recording = "recording" in info ? info.recording : undefined;
    this.started = "recording" in info ? info : undefined;
  }

  /** Sends one send-message `message`. */
  async send<T = Ack>(message: Record<string, unknown>, signal?: AbortSignal): Promise<T> {
    const json = { sessionId: this.id, message };
    return this.http.json<T>({ method: "POST", path: "/start/send-message", json, signal });
  }

  /**
   * Runs a task and waits for its result: the service's inline wait (up to 50 s), then polls. A failed task
   * throws `TaskFailedError`; a guardrail is answered by `options.onGuardrail` or throws `GuardrailError`.
   */
  async run(task: string, options: TaskOptions & WaitOptions = {}): Promise<TaskResult> {
    const { onGuardrail, pollIntervalMs, timeoutMs, signal, ...fields } = options;
    const message = { actionType: "newTask", newState: "start", taskDetails: task, ...fields };
    const first = await this.send<TaskAfterWait>(message, signal);
    const wait = { onGuardrail, pollIntervalMs, timeoutMs, signal };
    return follow(this.http, taskIds(first), first, (text) => this.answerGuardrail(text), wait);
  }

  /** Waits for a task of this session started earlier (after answering its guardrail, say). */
  wait(taskId: string, options: WaitOptions = {}): Promise<TaskResult> {
    const ids = { sessionId: this.id, taskId };
    return follow(this.http, ids, undefined, (text) => this.answerGuardrail(text), options);
  }

  /** The session's live events (see `EventStream`); `await events.ready` before starting the work. */
  events(): EventStream {
    return new EventStream(this.socketUrl, this.id);
  }

  pause(): Promise<Ack> {
    return this.state("pause");
  }
  resume(): Promise<Ack> {
    return this.state("resume");
  }
  /** Stops the running task; the session stays open for the next one. */
  stop(): Promise<Ack> {
    return this.state("stop");
  }
  private state(newState: string): Promise<Ack> {
    return this.send({ actionType: "state", newState });
  }

  /** Answers the question the agent asked (a `guardrail_trigger`); the task resumes. */
  answerGuardrail(text: string): Promise<Ack> {
    return this.send({ actionType: "guardrail", taskDetails: text, newState: "resume" });
  }

  /** Sends a manual interaction (`takeOverControl` first while a task runs). */
  interact(action: InteractionAction | { type: "UPLOAD"; name: string; x: number; y: number }): Promise<Ack> {
    return this.send({ actionType: "interaction", action });
  }
  takeOverControl(): Promise<Ack> {
    return this.interact({ type: "takeOverControl" });
  }
  releaseControl(): Promise<Ack> {
    return this.interact({ type: "releaseControl" });
  }
  /** A click at frame point (x, y): x 0..1024, y 155..600 (the top 155 pixels are the drawn browser band). */
  click(x: number, y: number): Promise<Ack> {
    return this.interact({ type: "CLICK", x, y });
  }
  doubleClick(x: number, y: number): Promise<Ack> {
    return this.interact({ type: "DOUBLE_CLICK", x, y });
  }
  type(text: string, options: { humanLike?: boolean } = {}): Promise<Ack> {
    return this.interact({ type: "TYPE", text, ...options });
  }
  keyPress(key: string): Promise<Ack> {
    return this.interact({ type: "KEY_PRESS", key });
  }
  /** Sets the session's file `name` on the file input at frame point (x, y). */
  upload(name: string, x: number, y: number): Promise<Ack> {
    return this.interact({ type: "UPLOAD", name, x, y });
  }

  /** Ends the session (browser context, sockets, video). A session that already ended is not an error. */
  async terminate(): Promise<void> {
    if (this.terminated) return;
    try {
      await this.state("terminate");
    } catch (e) {
      if (!(e instanceof WebpilotError && e.code === "SESSION_NOT_FOUND")) throw e;
    }
    this.terminated = true;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.terminate();
  }
}
