//! The client: `new Webpilot({ baseUrl, apiKey })`, sessions, one-shot tasks and the account's resources.

import { Http, type ClientOptions } from "./http.js";
import { Files, Profiles, Recordings, Webhooks } from "./resources.js";
import { Session } from "./session.js";
import { follow, taskIds } from "./tasks.js";
import type {
  Health,
  LiveSession,
  RunTaskOptions,
  SessionTask,
  SessionTaskList,
  SessionStarted,
  StartSessionOptions,
  TaskAfterWait,
  TaskResult,
  UsageAnswer,
  WaitOptions,
} from "./types.js";

export class Sessions {
  constructor(private readonly http: Http) {}

  /** Starts a session (start-session); `terminate()` it, or hold it with `await using`. */
  async start(options: StartSessionOptions = {}): Promise<Session> {
    const started = await this.http.json<SessionStarted>({ method: "POST", path: "/start/start-session", json: options });
    return new Session(this.http, started);
  }

  /** The caller's live sessions. */
  async list(): Promise<Session[]> {
    const r = await this.http.json<{ sessions: LiveSession[] }>({ method: "GET", path: "/start/sessions" });
    return r.sessions.map((s) => new Session(this.http, s));
  }

  /** A session's tasks (live or ended), newest first (`GET /start/sessions/{sessionId}/tasks`). */
  async tasks(sessionId: string, options: { limit?: number; offset?: number } = {}): Promise<SessionTask[]> {
    const path = `/start/sessions/${encodeURIComponent(sessionId)}/tasks`;
    const r = await this.http.json<SessionTaskList>({ method: "GET", path, query: { ...options } });
    return r.tasks;
  }
}

export class Webpilot {
  readonly sessions: Sessions;
  readonly recordings: Recordings;
  readonly files: Files;
  readonly profiles: Profiles;
  readonly webhooks: Webhooks;
  private readonly http: Http;

  /** `baseUrl` and `apiKey` default to `WEBPILOT_BASE_URL` and `WEBPILOT_API_KEY` on Node and Deno. */
  constructor(options: ClientOptions = {}) {
    this.http = new Http(options);
    this.sessions = new Sessions(this.http);
    this.recordings = new Recordings(this.http);
    this.files = new Files(this.http);
    this.profiles = new Profiles(this.http);
    this.webhooks = new Webhooks(this.http);
  }

  get baseUrl(): string {
    return this.http.baseUrl;
  }

  /**
   * Runs one task in a session of its own, which ends with it (run-task), and waits for the result: the inline
   * wait, then polls. Failures throw `TaskFailedError`; guardrails go to `options.onGuardrail`.
   */
  async runTask(task: string, options: RunTaskOptions & WaitOptions = {}): Promise<TaskResult> {
    const { onGuardrail, pollIntervalMs, timeoutMs, signal, ...fields } = options;
    const json = { taskDetails: task, ...fields };
    const first = await this.http.json<TaskAfterWait>({ method: "POST", path: "/start/run-task", json, signal });
    const ids = taskIds(first);
    const answer = (text: string): Promise<unknown> =>
      this.http.json({
        method: "POST",
        path: "/start/send-message",
        json: { sessionId: ids.sessionId, message: { actionType: "guardrail", taskDetails: text, newState: "resume" } },
      });
    return follow(this.http, ids, first, answer, { onGuardrail, pollIntervalMs, timeoutMs, signal });
  }

  /** What left the balance: one line per charge, newest first (`GET /usage`). */
  usage(query: { since?: string; until?: string; limit?: number; cursor?: string } = {}): Promise<UsageAnswer> {
    return this.http.json({ method: "GET", path: "/usage", query });
  }

  /** The service's health (no key needed). */
  health(): Promise<Health> {
    return this.http.json({ method: "GET", path: "/start/health", anonymous: true });
  }
}
