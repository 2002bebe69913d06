"""webpilot: the Python client of the webpilot service (an AI agent in a real remote browser).

    from webpilot import Webpilot
    wp = Webpilot()   # WEBPILOT_BASE_URL, WEBPILOT_API_KEY
    with wp.sessions.start(starting_url="https://example.com", recording=True) as s:
        print(s.run("report the title").message)

``AsyncWebpilot`` is the same surface for asyncio. ``webpilot.webhooks.verify`` checks webhook deliveries.
"""

from . import events, webhooks
from ._async import AsyncSession, AsyncTask, AsyncWebpilot, SessionStart
from ._http import RetryPolicy
from ._sync import Session, Task, Webpilot
from ._version import __version__
from .errors import (
    APIError, AuthenticationError, BadRequestError, ConflictError, GuardrailError, InsufficientBalanceError,
    NotFoundError, PayloadTooLargeError, PermissionDeniedError, RateLimitError, ServerError,
    ServiceUnavailableError, TaskFailedError, WebhookVerificationError, WebpilotConnectionError, WebpilotError,
    WebpilotTimeoutError,
)  # fmt: skip
from .events import (
    ActionEvent, AgentEvent, DownloadEvent, EndSessionEvent, Event, EventStream, AsyncEventStream,
    GuardrailTriggerEvent, InstanceDisconnectedEvent, InstanceReconnectedEvent, ResponseUpdateEvent,
    TaskCompletedEvent, TaskErrorEvent, UnknownEvent,
)  # fmt: skip
from .models import (
    Delivery, FileInfo, Guardrail, LiveSession, Profile, Recording, RecordingLink, SessionInfo, SessionTask, ShownProxy,
    Streaming, TaskResult, TaskState, TimelineEntry, Usage, UsageLine, UsageReport, Webhook,
)  # fmt: skip
from .webhooks import WebhookEvent

__all__ = [
    "__version__", "events", "webhooks",
    "Webpilot", "Session", "Task", "AsyncWebpilot", "AsyncSession", "AsyncTask", "SessionStart", "RetryPolicy",
    "WebpilotError", "APIError", "BadRequestError", "AuthenticationError", "InsufficientBalanceError",
    "PermissionDeniedError", "NotFoundError", "ConflictError", "PayloadTooLargeError", "RateLimitError",
    "ServerError", "ServiceUnavailableError", "WebpilotConnectionError", "WebpilotTimeoutError", "TaskFailedError",
    "GuardrailError", "WebhookVerificationError",
    "Event", "EventStream", "AsyncEventStream", "AgentEvent", "ActionEvent", "ResponseUpdateEvent",
    "TaskCompletedEvent", "GuardrailTriggerEvent", "TaskErrorEvent", "EndSessionEvent",
    "InstanceDisconnectedEvent", "InstanceReconnectedEvent", "DownloadEvent", "UnknownEvent",
    "SessionInfo", "LiveSession", "SessionTask", "ShownProxy", "Streaming", "Usage", "Guardrail", "TaskResult", "TaskState", "FileInfo",
    "Recording", "RecordingLink", "TimelineEntry", "Profile", "Webhook", "Delivery", "UsageLine", "UsageReport",
    "WebhookEvent",
]  # fmt: skip
