//! The public types: named aliases over the types generated from the service's OpenAPI document
//! (`generated/openapi.ts`), plus the few option shapes the document types too loosely.

import type { components } from "./generated/openapi.js";

type S = components["schemas"];

export type Guardrail = S["Guardrail"];
export type Usage = S["Usage"];
export type ResultData = S["ResultData"];
export type SessionStarted = S["SessionStarted"];
export type LiveSession = S["LiveSession"];
export type SessionTask = S["SessionTask"];
export type SessionTaskList = S["SessionTaskList"];
export type Streaming = S["Streaming"];
export type PollView = S["PollView"];
export type TaskAfterWait = S["TaskAfterWait"];
export type InteractionAction = S["Interaction"];
export type Recording = S["RecordingView"];
export type RecordingList = S["RecordingList"];
export type Timeline = S["Timeline"];
export type RecordingLink = S["RecordingLink"];
export type FileInfo = S["FileView"];
export type Profile = S["ProfileView"];
export type Webhook = S["WebhookView"];
export type WebhookCreated = S["WebhookCreated"];
export type WebhookEventType = S["WebhookEventType"];
export type WebhookDelivery = S["DeliveryView"];
export type SecretRotated = S["SecretRotated"];
export type WebhookMessage = S["WebhookMessage"];
export type UsageAnswer = S["UsageAnswer"];
export type Health = S["Health"];
export type EndReason = S["EndReason"];

/** A task-level Socket.IO `message` event (`agent`, `action`, `response_update`, `task_completed`,
 *  `guardrail_trigger`, `error`), selected by `type`. */
export type TaskEvent = S["SocketMessage"];

/** Every event `session.events()` yields, selected by `type`: the task events, then the connection events
 *  under their Socket.IO names. */
export type SessionEvent =
  | TaskEvent
  | ({ type: "end_session" } & S["EndSessionEvent"])
  | ({ type: "instance:disconnected" } & S["InstanceDisconnectedEvent"])
  | { type: "instance:reconnected" }
  | DownloadEvent;

/** A file the session's page downloaded (or one refused, with `error` and `code`). */
export interface DownloadEvent {
  type: "download";
  name?: string;
  bytes?: number;
  sha256?: string;
  mimeType?: string;
  error?: string;
  code?: string;
}

/** A secret the agent may type: a value, or a value limited to some domains (`docs/agent.md`). */
export type Secret = string | { value: string; domains?: string[] };

/** Task settings shared by start-session, run-task and newTask (`docs/api.md`, "Validation"). */
export interface TaskOptions {
  maxDuration?: number;
  maxInputTokens?: number;
  maxOutputTokens?: number;
  startingUrl?: string | null;
  avoidDomains?: string[];
  /** A JSON Schema the answer must satisfy; the parsed answer is in `result.output`. */
  outputSchema?: Record<string, unknown>;
  /** The taskId of an earlier completed task to replay without the model. */
  replayOf?: string;
  /** When the model sees a screenshot of the page: `auto` (default), `on` or `off` (`docs/agent.md`). */
  vision?: "off" | "auto" | "on";
  secrets?: Record<string, Secret>;
}

/** The body of start-session: every field optional. */
export interface StartSessionOptions extends TaskOptions {
  taskDetails?: string;
  terminateOnCompletion?: boolean;
  mode?: "default";
  /** Record a video and a timeline of the session (`GET /recordings/{sessionId}` once it ended). */
  recording?: boolean;
  profile?: string;
  persistProfile?: boolean;
}

/** The body of run-task besides `taskDetails`. */
export type RunTaskOptions = Omit<StartSessionOptions, "taskDetails" | "terminateOnCompletion">;

/** How a task is waited for. */
export interface WaitOptions {
  /** Answers a guardrail; the task then goes on. Without it a guardrail throws `GuardrailError`. */
  onGuardrail?: (guardrail: Guardrail) => string | Promise<string>;
  /** How often the task is polled once the inline wait has passed (ms, default 1000). */
  pollIntervalMs?: number;
  /** Gives up after this long (ms, default: no limit; the session's maxDuration ends every task). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A completed task. */
export interface TaskResult {
  sessionId: string;
  taskId: string;
  /** The agent's answer (`data.message`). */
  message: string;
  /** The parsed answer when the task had an `outputSchema`. */
  output?: unknown;
  data: ResultData;
  usage?: Usage;
}
