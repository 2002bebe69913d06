//! The HTTP layer: `fetch` with the API key, JSON in and out, errors as `WebpilotError`, and retries with
//! backoff on 429 and 503 that honour `Retry-After`.

import { WebpilotError } from "./errors.js";

/** What `onRetry` is told before each retry. */
export interface RetryInfo {
  method: string;
  path: string;
  status: number;
  code: string;
  /** 1 for the first retry. */
  attempt: number;
  /** How long the SDK waits before it (ms): `Retry-After` when the service sent one, else the backoff. */
  delayMs: number;
  /** The `Retry-After` header in seconds, when present. */
  retryAfter: number | undefined;
}

export interface ClientOptions {
  /** The service's base URL; `WEBPILOT_BASE_URL` on Node and Deno when absent. */
  baseUrl?: string;
  /** An API key; `WEBPILOT_API_KEY` on Node and Deno when absent. */
  apiKey?: string;
  /** Retries of a request answered 429 or 503 (default 3). */
  maxRetries?: number;
  /** First backoff when no `Retry-After` is given (ms, default 500; doubled at each retry, at most 8 s). */
  backoffMs?: number;
  /** Timeout of one request (ms, default 120000: a newTask may wait 50 s inline). */
  timeoutMs?: number;
  /** Called before each retry (logging, metrics). */
  onRetry?: (info: RetryInfo) => void;
  /** Another `fetch` (a proxy agent, a test double). */
  fetch?: typeof fetch;
}

/** An environment variable on Node (`process.env`) or Deno (`Deno.env`); undefined in a browser. */
export function env(name: string): string | undefined {
  const g = globalThis as {
    process?: { env?: Record<string, string | undefined> };
    Deno?: { env?: { get(n: string): string | undefined } };
  };
  try {
    return g.process?.env?.[name] ?? g.Deno?.env?.get(name);
  } catch {
    return undefined; // Deno without --allow-env
  }
}

/** Waits `ms`, or rejects when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** `Retry-After` in seconds: a number of seconds or an HTTP date. */
function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  const secs = Number(value.trim());
  if (Number.isFinite(secs) && secs >= 0) return secs;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

export interface Request {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  query?: Record<string, string | number | undefined>;
  /** A JSON body (an object), or raw bytes. */
  json?: unknown;
  bytes?: Uint8Array;
  /** No API key (the unauthenticated task poll). */
  anonymous?: boolean;
  signal?: AbortSignal;
}

export class Http {
  readonly baseUrl: string;
  readonly apiKey: string;
  private readonly maxRetries: number;
  private readonly backoffMs: number;
  private readonly timeoutMs: number;
  private readonly onRetry: ((info: RetryInfo) => void) | undefined;
  private readonly fetchFn: typeof fetch;

  constructor(options: ClientOptions) {
    const baseUrl = options.baseUrl ?? env("WEBPILOT_BASE_URL");
    const apiKey = options.apiKey ?? env("WEBPILOT_API_KEY");
    if (!baseUrl) throw new WebpilotError("baseUrl is required (or WEBPILOT_BASE_URL)", "MISSING_BASE_URL", 0);
    if (!apiKey) throw new WebpilotError("apiKey is required (or WEBPILOT_API_KEY)", "MISSING_API_KEY", 0);
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.apiKey = apiKey;
    this.maxRetries = options.maxRetries ?? 3;
    this.backoffMs = options.backoffMs ?? 500;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.onRetry = options.onRetry;
    this.fetchFn = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  url(path: string, query?: Request["query"]): string {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined) u.searchParams.set(k, String(v));
    }
    return u.toString();
  }

  /** Sends `req`, retrying 429 and 503; returns the answer when it is 2xx, else throws `WebpilotError`. */
  async send(req: Request): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      const res = await this.once(req);
      if (res.ok) return res;
      const error = await toError(res);
      if ((res.status === 429 || res.status === 503) && attempt < this.maxRetries) {
        const backoff = Math.min(this.backoffMs * 2 ** attempt, 8000) * (0.5 + Math.random() / 2);
        const delayMs = error.retryAfter !== undefined ? error.retryAfter * 1000 : backoff;
        const info = { method: req.method, path: req.path, status: res.status, code: error.code };
        this.onRetry?.({ ...info, attempt: attempt + 1, delayMs, retryAfter: error.retryAfter });
        await sleep(delayMs, req.signal);
        continue;
      }
      throw error;
    }
  }

  private async once(req: Request): Promise<Response> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (!req.anonymous) headers["authorization"] = `Bearer ${this.apiKey}`;
    let body: BodyInit | undefined;
    if (req.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(req.json);
    } else if (req.bytes !== undefined) {
      headers["content-type"] = "application/octet-stream";
      body = req.bytes as unknown as BodyInit;
    }
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = req.signal ? anySignal([req.signal, timeout]) : timeout;
    try {
      return await this.fetchFn(this.url(req.path, req.query), { method: req.method, headers, body, signal });
    } catch (e) {
      if (req.signal?.aborted) throw req.signal.reason;
      const timedOut = timeout.aborted;
      const why = timedOut ? `no answer within ${this.timeoutMs} ms` : String(e);
      throw new WebpilotError(`${req.method} ${req.path}: ${why}`, timedOut ? "TIMEOUT" : "NETWORK_ERROR", 0);
    }
  }

  /** Sends `req` and parses the JSON answer. */
  async json<T>(req: Request): Promise<T> {
    const res = await this.send(req);
    try {
      return (await res.json()) as T;
    } catch {
      throw new WebpilotError(`${req.method} ${req.path}: the answer is not JSON`, "INVALID_RESPONSE", res.status);
    }
  }

  /** Sends `req` and returns the answer's bytes. */
  async bytes(req: Request): Promise<Uint8Array> {
    const res = await this.send(req);
    return new Uint8Array(await res.arrayBuffer());
  }
}

/** The error of a non-2xx answer, from the service's error body when it has one. */
async function toError(res: Response): Promise<WebpilotError> {
  const retryAfter = parseRetryAfter(res.headers.get("retry-after"));
  const text = await res.text().catch(() => "");
  let body: unknown = text;
  let message = `HTTP ${res.status}`;
  let code = `HTTP_${res.status}`;
  try {
    body = JSON.parse(text);
    const b = body as { message?: unknown; code?: unknown; error?: { message?: unknown; code?: unknown } };
    if (typeof b.message === "string") message = b.message;
    else if (typeof b.error?.message === "string") message = b.error.message;
    if (typeof b.code === "string") code = b.code;
    else if (typeof b.error?.code === "string") code = b.error.code;
  } catch {
    if (text) message = `HTTP ${res.status}: ${text.slice(0, 200)}`;
  }
  return new WebpilotError(message, code, res.status, body, retryAfter);
}

/** A signal that aborts when any of `signals` does (`AbortSignal.any` where the runtime has it). */
function anySignal(signals: AbortSignal[]): AbortSignal {
  const any = (AbortSignal as { any?: (s: AbortSignal[]) => AbortSignal }).any;
  if (any) return any(signals);
  const ctrl = new AbortController();
  for (const s of signals) {
    if (s.aborted) ctrl.abort(s.reason);
    else s.addEventListener("abort", () => ctrl.abort(s.reason), { once: true });
  }
  return ctrl.signal;
}
