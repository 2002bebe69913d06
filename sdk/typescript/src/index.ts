//! webpilot: the TypeScript SDK of the webpilot service (`README.md`).

export { Webpilot, Sessions } from "./client.js";
export { Session, type Ack } from "./session.js";
export { EventStream } from "./events.js";
export { Recordings, Files, Profiles, Webhooks, type StorageState } from "./resources.js";
export { verifyWebhook, type HeaderSource } from "./webhooks.js";
export { WebpilotError, TaskFailedError, GuardrailError } from "./errors.js";
export type { ClientOptions, RetryInfo } from "./http.js";
export type * from "./types.js";
export type { components, paths, operations } from "./generated/openapi.js";
