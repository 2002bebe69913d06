"""Typed answers of the REST API, written by hand over the service's OpenAPI document (``GET /openapi.json``).

Each model names the component it reads (``SCHEMA``) and maps its fields to the JSON properties (``JSON``);
the SDK's test compares those maps with the live document, so a property added to the service and not here
fails CI. Every model keeps the whole JSON object in ``raw``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, List, Literal, Optional

Json = Dict[str, Any]


def _s(d: Json, key: str, default: str = "") -> str:
    v = d.get(key)
    return v if isinstance(v, str) else default


def _os(d: Json, key: str) -> Optional[str]:
    v = d.get(key)
    return v if isinstance(v, str) else None


def _i(d: Json, key: str) -> int:
    v = d.get(key)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _oi(d: Json, key: str) -> Optional[int]:
    v = d.get(key)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _f(d: Json, key: str) -> float:
    v = d.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def _of(d: Json, key: str) -> Optional[float]:
    v = d.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _d(d: Json, key: str) -> Json:
    v = d.get(key)
    return v if isinstance(v, dict) else {}


def _ls(d: Json, key: str) -> List[str]:
    v = d.get(key)
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


@dataclass(frozen=True)
class Streaming:
    """The live view of a session: WHEP (WebRTC) and MJPEG URLs, with the owner's token."""

    SCHEMA: ClassVar[str] = "Streaming"
    JSON: ClassVar[Dict[str, str]] = {"web_rtc_url": "webRTCURL", "web_view_url": "webViewURL", "width": "dimensions"}
    web_rtc_url: str
    web_view_url: str
    width: int
    height: int

    @classmethod
    def from_json(cls, d: Json) -> Streaming:
        dims = _d(d, "dimensions")
        return cls(_s(d, "webRTCURL"), _s(d, "webViewURL"), _i(dims, "width"), _i(dims, "height"))


@dataclass(frozen=True)
class SessionInfo:
    """The answer of start-session."""

    SCHEMA: ClassVar[str] = "SessionStarted"
    JSON: ClassVar[Dict[str, str]] = {
        "session_id": "sessionId", "socket_url": "socketURL", "cdp_url": "cdpURL", "streaming": "streaming",
        "expires_in": "expiresIn", "balance": "balance", "message": "message", "initial_prompt": "initialPrompt",
        "recording": "recording", "recording_skipped": "recordingSkipped", "task_id": "taskId",
        "poll_url": "pollUrl",
    }  # fmt: skip
    session_id: str
    socket_url: str
    cdp_url: str
    streaming: Streaming
    expires_in: int
    balance: float
    message: str
    initial_prompt: str
    recording: bool
    recording_skipped: Optional[Json]
    task_id: Optional[str]
    poll_url: Optional[str]
    raw: Json = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Json) -> SessionInfo:
        skipped = d.get("recordingSkipped")
        return cls(
            _s(d, "sessionId"), _s(d, "socketURL"), _s(d, "cdpURL"), Streaming.from_json(_d(d, "streaming")),
            _i(d, "expiresIn"), _f(d, "balance"), _s(d, "message"), _s(d, "initialPrompt"),
            d.get("recording") is True, skipped if isinstance(skipped, dict) else None, _os(d, "taskId"),
            _os(d, "pollUrl"), d,
        )  # fmt: skip


@dataclass(frozen=True)
class ShownProxy:
    """A session's upstream proxy as answers show it: ``server`` without credentials, or an operator's ``name``."""

    SCHEMA: ClassVar[str] = "ShownProxy"
    JSON: ClassVar[Dict[str, str]] = {"server": "server", "name": "name", "domains": "domains"}
    server: Optional[str] = None
    name: Optional[str] = None
    domains: List[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: Json) -> ShownProxy:
        return cls(_os(d, "server"), _os(d, "name"), _ls(d, "domains"))


@dataclass(frozen=True)
class LiveSession:
    """One of the caller's live sessions (``GET /start/sessions``): its URLs, when it started, what it is doing
    (``state``: ``idle``, ``running``, ``paused`` or ``guardrail``) and its page's ``url`` and ``title``."""

    SCHEMA: ClassVar[str] = "LiveSession"
    JSON: ClassVar[Dict[str, str]] = {
        "session_id": "sessionId", "socket_url": "socketURL", "cdp_url": "cdpURL", "streaming": "streaming",
        "proxies": "proxies", "created_at": "createdAt", "state": "state", "url": "url", "title": "title",
    }  # fmt: skip
    session_id: str
    socket_url: str
    cdp_url: str
    streaming: Streaming
    proxies: List[ShownProxy] = field(default_factory=list)
    created_at: str = ""
    state: str = ""
    url: Optional[str] = None
    title: Optional[str] = None

    @classmethod
    def from_json(cls, d: Json) -> LiveSession:
        proxies = [ShownProxy.from_json(p) for p in d.get("proxies") or [] if isinstance(p, dict)]
        return cls(
            _s(d, "sessionId"), _s(d, "socketURL"), _s(d, "cdpURL"), Streaming.from_json(_d(d, "streaming")), proxies,
            _s(d, "createdAt"), _s(d, "state"), _os(d, "url"), _os(d, "title"),
        )  # fmt: skip


@dataclass(frozen=True)
class SessionTask:
    """One task of a session's history (``GET /start/sessions/{sessionId}/tasks``): ``status`` is ``active``,
    ``guardrail``, ``complete`` or ``failed``; ``cost`` in USD; ``duration_ms`` to its end, or to now while it runs."""

    SCHEMA: ClassVar[str] = "SessionTask"
    JSON: ClassVar[Dict[str, str]] = {
        "task_id": "taskId", "task": "task", "status": "status", "answer": "answer", "error": "error",
        "code": "code", "cost": "cost", "created_at": "createdAt", "completed_at": "completedAt",
        "duration_ms": "durationMs",
    }  # fmt: skip
    task_id: str
    task: str
    status: str
    answer: Optional[str]
    error: Optional[str]
    code: Optional[str]
    cost: float
    created_at: str
    completed_at: Optional[str]
    duration_ms: int

    @classmethod
    def from_json(cls, d: Json) -> SessionTask:
        return cls(
            _s(d, "taskId"), _s(d, "task"), _s(d, "status"), _os(d, "answer"), _os(d, "error"), _os(d, "code"),
            _f(d, "cost"), _s(d, "createdAt"), _os(d, "completedAt"), _i(d, "durationMs"),
        )  # fmt: skip


@dataclass(frozen=True)
class Usage:
    """What a task used and cost (USD); ``session_cost`` is the session's open time when the call ended it."""

    SCHEMA: ClassVar[str] = "Usage"
    JSON: ClassVar[Dict[str, str]] = {
        "input_tokens": "inputTokens", "output_tokens": "outputTokens", "compute_time": "computeTime",
        "cost": "cost", "session_cost": "sessionCost",
    }  # fmt: skip
    input_tokens: int
    output_tokens: int
    compute_time: float
    cost: float
    session_cost: Optional[float] = None

    @classmethod
    def from_json(cls, d: Json) -> Usage:
        return cls(
            _i(d, "inputTokens"), _i(d, "outputTokens"), _f(d, "computeTime"), _f(d, "cost"), _of(d, "sessionCost")
        )


@dataclass(frozen=True)
class Guardrail:
    """The agent asks a human: ``value`` is the question (``type`` e.g. ``human_input_needed``)."""

    SCHEMA: ClassVar[str] = "Guardrail"
    JSON: ClassVar[Dict[str, str]] = {"type": "type", "value": "value"}
    type: str
    value: str

    @classmethod
    def from_json(cls, d: Json) -> Guardrail:
        return cls(_s(d, "type"), _s(d, "value"))


@dataclass(frozen=True)
class TaskResult:
    """A completed task: its answer (``message``; ``output`` with an ``outputSchema``) and what it used."""

    SCHEMA: ClassVar[str] = "ResultData"
    JSON: ClassVar[Dict[str, str]] = {
        "message": "message", "output": "output", "prompt_tokens": "prompt_tokens",
        "completion_tokens": "completion_tokens", "total_tokens": "total_tokens",
        "completion_time": "completion_time", "replay": "replay", "cache": "cache",
    }  # fmt: skip
    session_id: str
    task_id: str
    message: str
    output: Any
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    completion_time: Optional[float]
    replay: Optional[Json]
    #: What the action cache did: ``hit``, ``healed``, ``miss`` or ``off``; ``None`` without a model.
    cache: Optional[str]
    usage: Optional[Usage]
    completed_at: Optional[str]
    raw: Json = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, session_id: str, task_id: str, data: Json, usage: Optional[Json], body: Json) -> TaskResult:
        replay = data.get("replay")
        return cls(
            session_id, task_id, _s(data, "message"), data.get("output"), _i(data, "prompt_tokens"),
            _i(data, "completion_tokens"), _i(data, "total_tokens"), _of(data, "completion_time"),
            replay if isinstance(replay, dict) else None, _os(data, "cache"), Usage.from_json(usage) if usage else None,
            _os(body, "completedAt"), body,
        )  # fmt: skip


TaskStatus = Literal["running", "guardrail", "completed", "failed"]


@dataclass(frozen=True)
class TaskState:
    """A task as a poll (``GET /task/:sessionId/:taskId``) or an inline answer shows it."""

    session_id: str
    task_id: str
    status: TaskStatus
    result: Optional[TaskResult] = None
    guardrail: Optional[Guardrail] = None
    error: Optional[str] = None
    code: Optional[str] = None
    usage: Optional[Usage] = None
    raw: Json = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, session_id: str, task_id: str, d: Json) -> TaskState:
        usage = _d(d, "usage")
        u = Usage.from_json(usage) if usage else None
        kind = d.get("type")
        if kind == "guardrail_trigger":
            return cls(session_id, task_id, "guardrail", guardrail=Guardrail.from_json(_d(d, "data")), raw=d)
        if kind == "task_completed" or isinstance(d.get("result"), dict):
            # A poll has `type` and `data`; an inline answer nests them in `result`.
            inner = _d(d, "result") if isinstance(d.get("result"), dict) else d
            res = TaskResult.from_json(session_id, task_id, _d(inner, "data"), usage or None, d)
            return cls(session_id, task_id, "completed", result=res, usage=u, raw=d)
        if d.get("status") == "failed" or d.get("success") is False:
            return cls(session_id, task_id, "failed", error=_s(d, "error"), code=_os(d, "code"), usage=u, raw=d)
        return cls(session_id, task_id, "running", usage=u, raw=d)


@dataclass(frozen=True)
class FileInfo:
    """A file of a session's area: downloaded by a page or uploaded."""

    SCHEMA: ClassVar[str] = "FileView"
    JSON: ClassVar[Dict[str, str]] = {
        "name": "name", "bytes": "bytes", "sha256": "sha256", "mime_type": "mimeType", "created_at": "createdAt",
        "source": "source",
    }  # fmt: skip
    name: str
    bytes: int
    sha256: str
    mime_type: str
    created_at: str
    source: str

    @classmethod
    def from_json(cls, d: Json) -> FileInfo:
        return cls(
            _s(d, "name"), _i(d, "bytes"), _s(d, "sha256"), _s(d, "mimeType"), _s(d, "createdAt"), _s(d, "source")
        )


@dataclass(frozen=True)
class Recording:
    """A session's recording: ``status`` is ``recording``, ``ready`` or ``failed``."""

    SCHEMA: ClassVar[str] = "RecordingView"
    JSON: ClassVar[Dict[str, str]] = {
        "session_id": "sessionId", "status": "status", "started_at": "startedAt", "ended_at": "endedAt",
        "duration_ms": "durationMs", "bytes": "bytes", "frames": "frames", "video_url": "videoURL",
        "events_url": "eventsURL",
    }  # fmt: skip
    session_id: str
    status: str
    started_at: str
    ended_at: Optional[str]
    duration_ms: int
    bytes: int
    frames: int
    video_url: str
    events_url: str

    @classmethod
    def from_json(cls, d: Json) -> Recording:
        return cls(
            _s(d, "sessionId"), _s(d, "status"), _s(d, "startedAt"), _os(d, "endedAt"), _i(d, "durationMs"),
            _i(d, "bytes"), _i(d, "frames"), _s(d, "videoURL"), _s(d, "eventsURL"),
        )  # fmt: skip


@dataclass(frozen=True)
class RecordingLink:
    """A read-only share link of a recording, valid until ``expires_at``."""

    SCHEMA: ClassVar[str] = "RecordingLink"
    JSON: ClassVar[Dict[str, str]] = {
        "session_id": "sessionId", "video_url": "videoURL", "events_url": "eventsURL", "expires_at": "expiresAt"
    }  # fmt: skip
    session_id: str
    video_url: str
    events_url: str
    expires_at: str

    @classmethod
    def from_json(cls, d: Json) -> RecordingLink:
        return cls(_s(d, "sessionId"), _s(d, "videoURL"), _s(d, "eventsURL"), _s(d, "expiresAt"))


@dataclass(frozen=True)
class TimelineEntry:
    """One event of a recording's timeline: ``t`` ms into the video, the Socket.IO ``event`` and its data."""

    t: int
    event: str
    data: Any

    @classmethod
    def from_json(cls, d: Json) -> TimelineEntry:
        return cls(_i(d, "t"), _s(d, "event"), d.get("data"))


@dataclass(frozen=True)
class Profile:
    """A saved browser profile (never its content)."""

    SCHEMA: ClassVar[str] = "ProfileView"
    JSON: ClassVar[Dict[str, str]] = {
        "name": "name", "bytes": "bytes", "origins": "origins", "cookies": "cookies", "created_at": "createdAt",
        "updated_at": "updatedAt",
    }  # fmt: skip
    name: str
    bytes: int
    origins: List[str]
    cookies: int
    created_at: str
    updated_at: str

    @classmethod
    def from_json(cls, d: Json) -> Profile:
        return cls(
            _s(d, "name"), _i(d, "bytes"), _ls(d, "origins"), _i(d, "cookies"), _s(d, "createdAt"),
            _s(d, "updatedAt"),
        )  # fmt: skip


@dataclass(frozen=True)
class Webhook:
    """A registered webhook endpoint; ``secret`` only in the answer that created or rotated it."""

    SCHEMA: ClassVar[str] = "WebhookCreated"
    JSON: ClassVar[Dict[str, str]] = {
        "webhook_id": "webhookId", "url": "url", "events": "events", "description": "description",
        "created_at": "createdAt", "secret": "secret",
    }  # fmt: skip
    webhook_id: str
    url: str
    events: List[str]
    description: Optional[str]
    created_at: str
    secret: Optional[str] = field(default=None, repr=False)

    @classmethod
    def from_json(cls, d: Json) -> Webhook:
        return cls(
            _s(d, "webhookId"), _s(d, "url"), _ls(d, "events"), _os(d, "description"), _s(d, "createdAt"),
            _os(d, "secret"),
        )  # fmt: skip


@dataclass(frozen=True)
class Delivery:
    """One delivery attempt of a webhook message."""

    SCHEMA: ClassVar[str] = "DeliveryView"
    JSON: ClassVar[Dict[str, str]] = {
        "message_id": "messageId", "type": "type", "attempt": "attempt", "status_code": "statusCode",
        "error": "error", "latency_ms": "latencyMs", "created_at": "createdAt",
    }  # fmt: skip
    message_id: str
    type: str
    attempt: int
    status_code: Optional[int]
    error: Optional[str]
    latency_ms: int
    created_at: str

    @classmethod
    def from_json(cls, d: Json) -> Delivery:
        return cls(
            _s(d, "messageId"), _s(d, "type"), _i(d, "attempt"), _oi(d, "statusCode"), _os(d, "error"),
            _i(d, "latencyMs"), _s(d, "createdAt"),
        )  # fmt: skip


@dataclass(frozen=True)
class UsageLine:
    """One charge: ``kind`` ``task`` or ``session``, ``cost`` in USD."""

    SCHEMA: ClassVar[str] = "UsageLineView"
    JSON: ClassVar[Dict[str, str]] = {
        "kind": "kind", "cost": "cost", "created_at": "createdAt", "session_id": "sessionId", "task_id": "taskId"
    }  # fmt: skip
    kind: str
    cost: float
    created_at: str
    session_id: Optional[str]
    task_id: Optional[str]

    @classmethod
    def from_json(cls, d: Json) -> UsageLine:
        return cls(_s(d, "kind"), _f(d, "cost"), _s(d, "createdAt"), _os(d, "sessionId"), _os(d, "taskId"))


@dataclass(frozen=True)
class UsageReport:
    """``GET /usage``: the balance, what is held, and one page of charges (``next`` is the next page's cursor)."""

    SCHEMA: ClassVar[str] = "UsageAnswer"
    JSON: ClassVar[Dict[str, str]] = {
        "balance": "balance", "held": "held", "lines": "lines", "next": "next", "storage": "storage"
    }  # fmt: skip
    balance: float
    held: float
    lines: List[UsageLine]
    next: Optional[str]
    storage: Json

    @classmethod
    def from_json(cls, d: Json) -> UsageReport:
        lines = [UsageLine.from_json(x) for x in d.get("lines") or [] if isinstance(x, dict)]
        return cls(_f(d, "balance"), _f(d, "held"), lines, _os(d, "next"), _d(d, "storage"))


#: Every model that reads a component of the OpenAPI document (the SDK's test compares them with it).
SCHEMA_MODELS = (
    Streaming, SessionInfo, ShownProxy, LiveSession, SessionTask, Usage, Guardrail, TaskResult, FileInfo, Recording, RecordingLink,
    Profile, Webhook, Delivery, UsageLine, UsageReport,
)  # fmt: skip
