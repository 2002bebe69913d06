//! A session's live events over Socket.IO (`socket.io-client`), as an async iterator of typed events.

import { io, type Socket } from "socket.io-client";
import { WebpilotError } from "./errors.js";
import type { SessionEvent } from "./types.js";

/** The Socket.IO event names besides `message` that are passed on, with the `type` they get. */
const NAMED = ["end_session", "instance:disconnected", "instance:reconnected", "download"] as const;

/**
 * The events of one session, in order. It connects at once; `await stream.ready` before starting work whose
 * events you want (events sent before the socket connected are not replayed). It ends after `end_session`
 * (the service then closes the socket), on `close()`, or when a `for await` loop over it is left.
 */
export class EventStream implements AsyncIterableIterator<SessionEvent> {
  /** Resolves once the socket is connected; rejects when the service refuses it. */
  readonly ready: Promise<void>;
  private readonly socket: Socket;
  private readonly queue: SessionEvent[] = [];
  private waiting: ((r: IteratorResult<SessionEvent>) => void) | undefined;
  private failWaiting: ((e: unknown) => void) | undefined;
  private ended = false;
  private failure: unknown;

  constructor(socketUrl: string, sessionId: string) {
    this.socket = io(socketUrl, { auth: { sessionId }, reconnection: true, timeout: 20_000 });
    this.ready = new Promise<void>((resolve, reject) => {
      this.socket.once("connect", () => resolve());
      this.socket.once("connect_error", (e: Error) => {
        // A refusal by the service (unknown or ended session, wrong token) is final.
        if (!this.socket.active) {
          const err = new WebpilotError(e.message, "SOCKET_REFUSED", 0);
          reject(err);
          this.fail(err);
        }
      });
    });
    this.ready.catch(() => undefined); // observed through next() too
    this.socket.on("message", (data: unknown) => this.push(data as SessionEvent));
    for (const name of NAMED) {
      this.socket.on(name, (data: unknown) => {
        const payload = typeof data === "object" && data !== null ? data : {};
        this.push({ ...payload, type: name } as SessionEvent);
        if (name === "end_session") this.finish();
      });
    }
    this.socket.on("disconnect", (reason: string) => {
      // The service closes the socket once the session ended; a lost connection is retried by the client.
      if (reason === "io server disconnect") this.finish();
    });
  }

  private push(event: SessionEvent): void {
    if (this.ended) return;
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = this.failWaiting = undefined;
      w({ value: event, done: false });
    } else {
      this.queue.push(event);
    }
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.socket.disconnect();
    if (this.waiting && this.queue.length === 0) {
      const w = this.waiting;
      this.waiting = this.failWaiting = undefined;
      w({ value: undefined, done: true });
    }
  }

  private fail(e: unknown): void {
    this.failure = e;
    this.finish();
    if (this.failWaiting) {
      const f = this.failWaiting;
      this.waiting = this.failWaiting = undefined;
      f(e);
    }
  }

  next(): Promise<IteratorResult<SessionEvent>> {
    const event = this.queue.shift();
    if (event !== undefined) return Promise.resolve({ value: event, done: false });
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failWaiting = reject;
    });
  }

  /** Waits for the first event `pred` accepts (and returns it), skipping the others. */
  async find<T extends SessionEvent>(pred: (e: SessionEvent) => e is T): Promise<T>;
  async find(pred: (e: SessionEvent) => boolean): Promise<SessionEvent>;
  async find(pred: (e: SessionEvent) => boolean): Promise<SessionEvent> {
    for (;;) {
      const r = await this.next();
      if (r.done) throw new WebpilotError("the session's events ended first", "EVENTS_ENDED", 0);
      if (pred(r.value)) return r.value;
    }
  }

  /** Disconnects; the iterator ends. */
  close(): void {
    this.queue.length = 0;
    this.finish();
  }

  return(): Promise<IteratorResult<SessionEvent>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<SessionEvent> {
    return this;
  }
}
