//! The account's resources: recordings, session files, profiles, webhooks.

import { WebpilotError } from "./errors.js";
import { sleep, type Http } from "./http.js";
import type {
  FileInfo,
  Profile,
  Recording,
  RecordingLink,
  RecordingList,
  SecretRotated,
  Timeline,
  Webhook,
  WebhookCreated,
  WebhookDelivery,
  WebhookEventType,
} from "./types.js";

const enc = encodeURIComponent;

/** Writes `bytes` to `path` on Node or Deno (`node:fs`); a browser has no file system to write to. */
async function writeFile(path: string, bytes: Uint8Array): Promise<void> {
  const g = globalThis as { process?: { versions?: { node?: string } }; Deno?: unknown };
  if (!g.process?.versions?.node && !g.Deno) {
    throw new WebpilotError("writing a file needs Node or Deno; omit the path to get the bytes", "UNSUPPORTED", 0);
  }
  // A computed specifier, so bundlers for the browser leave node:fs out.
  const specifier = "node:fs/promises";
  const fs = (await import(/* @vite-ignore */ /* webpackIgnore: true */ specifier)) as {
    writeFile(p: string, data: Uint8Array): Promise<void>;
  };
  await fs.writeFile(path, bytes);
}

export class Recordings {
  constructor(private readonly http: Http) {}

  /** The caller's recordings, newest first, and the storage they take. */
  list(options: { limit?: number; offset?: number } = {}): Promise<RecordingList> {
    return this.http.json({ method: "GET", path: "/recordings", query: { ...options } });
  }

  get(sessionId: string): Promise<Recording & { success: boolean }> {
    return this.http.json({ method: "GET", path: `/recordings/${enc(sessionId)}` });
  }

  /** Waits until the recording is no longer being written (`ready` or `failed`) and returns it. */
  async waitUntilReady(sessionId: string, options: { timeoutMs?: number } = {}): Promise<Recording> {
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    for (;;) {
      const r = await this.get(sessionId);
      if (r.status !== "recording") return r;
      if (Date.now() >= deadline) {
        throw new WebpilotError(`recording ${sessionId} is still being written`, "TIMEOUT", 0);
      }
      await sleep(250);
    }
  }

  /**
   * The WebM video of an ended session (waiting until it is written), also written to `path` when given
   * (Node, Deno).
   */
  async download(sessionId: string, path?: string): Promise<Uint8Array> {
    await this.waitUntilReady(sessionId);
    const bytes = await this.http.bytes({ method: "GET", path: `/recordings/${enc(sessionId)}/video.webm` });
    if (path !== undefined) await writeFile(path, bytes);
    return bytes;
  }

  /** The timeline: every event of the session, with `t` in ms on the video's clock. */
  events(sessionId: string): Promise<Timeline> {
    return this.http.json({ method: "GET", path: `/recordings/${enc(sessionId)}/events` });
  }

  /** A read-only link to the video and timeline, valid `ttlSeconds` (default 24 h). */
  share(sessionId: string, ttlSeconds?: number): Promise<RecordingLink> {
    const json = ttlSeconds === undefined ? {} : { ttlSeconds };
    return this.http.json({ method: "POST", path: `/recordings/${enc(sessionId)}/share`, json });
  }

  delete(sessionId: string): Promise<{ success: boolean; message: string }> {
    return this.http.json({ method: "DELETE", path: `/recordings/${enc(sessionId)}` });
  }
}

export class Files {
  constructor(private readonly http: Http) {}

  /** A session's files (downloads of its pages and uploads), oldest first; also after it ended. */
  async list(sessionId: string): Promise<FileInfo[]> {
    const r = await this.http.json<{ files: FileInfo[] }>({ method: "GET", path: `/sessions/${enc(sessionId)}/files` });
    return r.files;
  }

  /** A file's bytes, also written to `path` when given (Node, Deno). */
  async download(sessionId: string, name: string, path?: string): Promise<Uint8Array> {
    const bytes = await this.http.bytes({ method: "GET", path: `/sessions/${enc(sessionId)}/files/${enc(name)}` });
    if (path !== undefined) await writeFile(path, bytes);
    return bytes;
  }

  /** Stores `data` as the session's file `name`, for the agent or an `UPLOAD` interaction to use. */
  async upload(sessionId: string, name: string, data: Uint8Array | string): Promise<FileInfo> {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    const path = `/sessions/${enc(sessionId)}/files`;
    const r = await this.http.json<{ file: FileInfo }>({ method: "POST", path, query: { name }, bytes });
    return r.file;
  }

  delete(sessionId: string, name: string): Promise<{ success: boolean; message: string }> {
    return this.http.json({ method: "DELETE", path: `/sessions/${enc(sessionId)}/files/${enc(name)}` });
  }
}

/** A Playwright-style storage state (`cookies`, `origins`), as a profile's export holds it. */
export type StorageState = { cookies: unknown[]; origins: unknown[] };

export class Profiles {
  constructor(private readonly http: Http) {}

  async list(): Promise<Profile[]> {
    const r = await this.http.json<{ profiles: Profile[] }>({ method: "GET", path: "/profiles" });
    return r.profiles;
  }
  get(name: string): Promise<Profile> {
    return this.http.json({ method: "GET", path: `/profiles/${enc(name)}` });
  }
  delete(name: string): Promise<{ success: boolean; message: string }> {
    return this.http.json({ method: "DELETE", path: `/profiles/${enc(name)}` });
  }
  /** The decrypted storage state: it holds live credentials, keep it as a password. */
  export(name: string): Promise<StorageState> {
    return this.http.json({ method: "GET", path: `/profiles/${enc(name)}/export` });
  }
  import(name: string, state: StorageState): Promise<Profile> {
    return this.http.json({ method: "PUT", path: `/profiles/${enc(name)}/export`, json: state });
  }
}

export class Webhooks {
  constructor(private readonly http: Http) {}

  /** Registers `url` for `events` (all when absent). The answer's `secret` is shown once: keep it. */
  create(url: string, events?: WebhookEventType[], options: { description?: string } = {}): Promise<WebhookCreated> {
    return this.http.json({ method: "POST", path: "/webhooks", json: { url, events, ...options } });
  }
  async list(): Promise<Webhook[]> {
    return (await this.http.json<{ webhooks: Webhook[] }>({ method: "GET", path: "/webhooks" })).webhooks;
  }
  delete(webhookId: string): Promise<{ success: boolean; message: string }> {
    return this.http.json({ method: "DELETE", path: `/webhooks/${enc(webhookId)}` });
  }
  /** A new secret; the old one keeps signing beside it for 24 h. */
  rotateSecret(webhookId: string): Promise<SecretRotated> {
    return this.http.json({ method: "POST", path: `/webhooks/${enc(webhookId)}/rotate-secret`, json: {} });
  }
  /** The latest 100 delivery attempts, newest first. */
  async deliveries(webhookId: string): Promise<WebhookDelivery[]> {
    const path = `/webhooks/${enc(webhookId)}/deliveries`;
    return (await this.http.json<{ deliveries: WebhookDelivery[] }>({ method: "GET", path })).deliveries;
  }
}
