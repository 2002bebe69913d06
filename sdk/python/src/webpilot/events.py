"""A session's live events over Socket.IO (the official python-socketio client), typed.

Task events arrive as the Socket.IO event ``message`` and are told apart by ``type`` (the document's
``SocketMessage`` union); the connection events have names of their own (``end_session``,
``instance:disconnected``, ``instance:reconnected``, ``download``). Anything else is an ``UnknownEvent``.
The service disconnects the socket after ``end_session``, which ends the iteration.
"""

from __future__ import annotations

import asyncio
import queue
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Iterator, List, Literal, Optional, Type, TypeVar, Union, overload

import socketio

from .errors import WebpilotConnectionError, WebpilotError, WebpilotTimeoutError
from .models import Guardrail, Json

E = TypeVar("E", bound="BaseEvent")


@dataclass(frozen=True)
class BaseEvent:
    raw: Json = field(repr=False, compare=False)


@dataclass(frozen=True)
class AgentEvent(BaseEvent):
    """``agent``: the agent's reasoning, live."""

    task_id: str
    content: str
    type: Literal["agent"] = "agent"


@dataclass(frozen=True)
class ActionEvent(BaseEvent):
    """``action``: a browser action was carried out (``name``: ``navigate``, ``click``, ...; ``data`` its fields)."""

    task_id: str
    name: str
    data: Json
    type: Literal["action"] = "action"


@dataclass(frozen=True)
class ResponseUpdateEvent(BaseEvent):
    """``response_update``: a status update."""

    task_id: str
    message: str
    type: Literal["response_update"] = "response_update"


@dataclass(frozen=True)
class TaskCompletedEvent(BaseEvent):
    """``task_completed``: the task's answer (``message``), tokens and cost."""

    task_id: str
    message: str
    output: Any
    data: Json
    cost: Optional[float]
    type: Literal["task_completed"] = "task_completed"


@dataclass(frozen=True)
class GuardrailTriggerEvent(BaseEvent):
    """``guardrail_trigger``: the agent asks a human; answer with ``Session.answer_guardrail``."""

    task_id: str
    guardrail: Guardrail
    type: Literal["guardrail_trigger"] = "guardrail_trigger"


@dataclass(frozen=True)
class TaskErrorEvent(BaseEvent):
    """``error``: the task failed with ``code``."""

    task_id: str
    error: str
    code: str
    type: Literal["error"] = "error"


@dataclass(frozen=True)
class EndSessionEvent(BaseEvent):
    """``end_session``: the session ended (``completed``, ``terminated``, ``expired``, ...)."""

    reason: str
    type: Literal["end_session"] = "end_session"


@dataclass(frozen=True)
class InstanceDisconnectedEvent(BaseEvent):
    """``instance:disconnected``: the browser was lost; the session waits ``grace_period_ms`` for a new one."""

    grace_period_ms: int
    type: Literal["instance:disconnected"] = "instance:disconnected"


@dataclass(frozen=True)
class InstanceReconnectedEvent(BaseEvent):
    """``instance:reconnected``: the session has a browser again."""

    type: Literal["instance:reconnected"] = "instance:reconnected"


@dataclass(frozen=True)
class DownloadEvent(BaseEvent):
    """``download``: a page's download was stored in the session's files (or refused: ``error``, ``code``)."""

    name: Optional[str]
    bytes: Optional[int]
    sha256: Optional[str]
    error: Optional[str]
    code: Optional[str]
    type: Literal["download"] = "download"


@dataclass(frozen=True)
class UnknownEvent(BaseEvent):
    """An event this SDK does not know yet: its Socket.IO ``name`` and payload."""

    name: str
    type: Literal["unknown"] = "unknown"


Event = Union[
    AgentEvent, ActionEvent, ResponseUpdateEvent, TaskCompletedEvent, GuardrailTriggerEvent, TaskErrorEvent,
    EndSessionEvent, InstanceDisconnectedEvent, InstanceReconnectedEvent, DownloadEvent, UnknownEvent,
]  # fmt: skip


def _str(d: Json, key: str) -> str:
    v = d.get(key)
    return v if isinstance(v, str) else ""


def _obj(v: Any) -> Json:
    return v if isinstance(v, dict) else {}


def parse_event(name: str, payload: Any) -> Event:
    """The typed event for a Socket.IO event ``name`` with ``payload``."""
    d = _obj(payload)
    if name == "message":
        kind, task = d.get("type"), _str(d, "taskId")
        data = _obj(d.get("data"))
        if kind == "agent":
            return AgentEvent(d, task, _str(d, "content"))
        if kind == "action":
            return ActionEvent(d, task, _str(data, "name"), data)
        if kind == "response_update":
            return ResponseUpdateEvent(d, task, _str(data, "message"))
        if kind == "task_completed":
            cost = _obj(data.get("usage")).get("cost")
            return TaskCompletedEvent(
                d, task, _str(data, "message"), data.get("output"), data, float(cost) if cost is not None else None
            )
        if kind == "guardrail_trigger":
            return GuardrailTriggerEvent(d, task, Guardrail.from_json(data))
        if kind == "error":
            return TaskErrorEvent(d, task, _str(d, "error"), _str(d, "code"))
    elif name == "end_session":
        return EndSessionEvent(d, _str(d, "reason"))
    elif name == "instance:disconnected":
        grace = d.get("gracePeriod")
        return InstanceDisconnectedEvent(d, int(grace) if isinstance(grace, (int, float)) else 0)
    elif name == "instance:reconnected":
        return InstanceReconnectedEvent(d)
    elif name == "download":
        size = d.get("bytes")
        return DownloadEvent(
            d, d.get("name"), int(size) if isinstance(size, int) else None, d.get("sha256"), d.get("error"),
            d.get("code"),
        )  # fmt: skip
    return UnknownEvent(d, name)


class _Closed:
    """Put in the queue when the socket closes."""


_CLOSED = _Closed()
Item = Union[Event, _Closed]


def _matches(ev: Event, kind: Union[str, Type[E]], task_id: Optional[str]) -> bool:
    ok = isinstance(ev, kind) if isinstance(kind, type) else ev.type == kind
    return ok and (task_id is None or getattr(ev, "task_id", None) == task_id)


class EventStream:
    """A connected Socket.IO client of one session; iterate it for typed events.

    Connects when made (``Session.events()``), so no event after that point is missed. Iteration ends when
    the socket closes: after ``end_session``, or ``close()``.
    """

    def __init__(self, socket_url: str, session_id: str, *, connect_timeout: float = 10.0) -> None:
        self._queue: "queue.Queue[Item]" = queue.Queue()
        self._closed = False
        self._sio = socketio.Client(reconnection=False)
        self._sio.on("*", self._on_event)
        self._sio.on("disconnect", self._on_disconnect)
        try:
            self._sio.connect(socket_url, auth={"sessionId": session_id}, wait_timeout=connect_timeout)
        except socketio.exceptions.ConnectionError as exc:
            raise WebpilotConnectionError(f"the session's socket refused the connection: {exc}") from exc

    def _on_event(self, name: str, *args: Any) -> None:
        self._queue.put(parse_event(name, args[0] if args else None))

    def _on_disconnect(self, *_: Any) -> None:
        self._queue.put(_CLOSED)

    def __iter__(self) -> Iterator[Event]:
        while True:
            ev = self.next(timeout=None)
            if ev is None:
                return
            yield ev

    def next(self, timeout: Optional[float] = None) -> Optional[Event]:
        """The next event; ``None`` once the socket closed; ``WebpilotTimeoutError`` after ``timeout`` s."""
        if self._closed and self._queue.empty():
            return None
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise WebpilotTimeoutError(f"no event within {timeout} s") from None
        if isinstance(item, _Closed):
            self._closed = True
            return None
        return item

    @overload
    def wait_for(self, kind: Type[E], *, task_id: Optional[str] = None, timeout: float = 60.0) -> E: ...
    @overload
    def wait_for(self, kind: str, *, task_id: Optional[str] = None, timeout: float = 60.0) -> Event: ...

    def wait_for(self, kind: Union[str, Type[E]], *, task_id: Optional[str] = None, timeout: float = 60.0) -> Any:
        """Skips events until one of ``kind`` (a ``type`` string or an event class), of ``task_id`` if given."""
        deadline = time.monotonic() + timeout
        while True:
            ev = self.next(timeout=max(0.0, deadline - time.monotonic()))
            if ev is None:
                raise WebpilotError(f"the socket closed before a {kind!r} event")
            if _matches(ev, kind, task_id):
                return ev

    def send(self, message: Json, *, timeout: float = 30.0) -> Json:
        """Emits a send-message ``message`` object over the socket and returns the service's ack."""
        ack = self._sio.call("message", message, timeout=timeout)
        return ack if isinstance(ack, dict) else {"success": False, "message": repr(ack)}

    def close(self) -> None:
        self._sio.disconnect()
        self._queue.put(_CLOSED)

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncEventStream:
    """The asyncio variant of ``EventStream`` (python-socketio's ``AsyncClient``, which needs aiohttp:
    ``pip install webpilot[async]``). Connects on ``async with`` or ``await connect()``."""

    def __init__(self, socket_url: str, session_id: str, *, connect_timeout: float = 10.0) -> None:
        self._url, self._session_id, self._connect_timeout = socket_url, session_id, connect_timeout
        self._queue: "asyncio.Queue[Item]" = asyncio.Queue()
        self._closed = False
        self._sio = socketio.AsyncClient(reconnection=False)
        self._sio.on("*", self._on_event)
        self._sio.on("disconnect", self._on_disconnect)

    async def _on_event(self, name: str, *args: Any) -> None:
        await self._queue.put(parse_event(name, args[0] if args else None))

    async def _on_disconnect(self, *_: Any) -> None:
        await self._queue.put(_CLOSED)

    async def connect(self) -> AsyncEventStream:
        try:
            await self._sio.connect(self._url, auth={"sessionId": self._session_id}, wait_timeout=self._connect_timeout)
        except socketio.exceptions.ConnectionError as exc:
            raise WebpilotConnectionError(f"the session's socket refused the connection: {exc}") from exc
        return self

    async def __aiter__(self) -> AsyncIterator[Event]:
        while True:
            ev = await self.next(timeout=None)
            if ev is None:
                return
            yield ev

    async def next(self, timeout: Optional[float] = None) -> Optional[Event]:
        """The next event; ``None`` once the socket closed; ``WebpilotTimeoutError`` after ``timeout`` s."""
        if self._closed and self._queue.empty():
            return None
        try:
            item = await asyncio.wait_for(self._queue.get(), timeout)
        except asyncio.TimeoutError:
            raise WebpilotTimeoutError(f"no event within {timeout} s") from None
        if isinstance(item, _Closed):
            self._closed = True
            return None
        return item

    @overload
    async def wait_for(self, kind: Type[E], *, task_id: Optional[str] = None, timeout: float = 60.0) -> E: ...
    @overload
    async def wait_for(self, kind: str, *, task_id: Optional[str] = None, timeout: float = 60.0) -> Event: ...

    async def wait_for(
        self, kind: Union[str, Type[E]], *, task_id: Optional[str] = None, timeout: float = 60.0
    ) -> Any:
        """Skips events until one of ``kind`` (a ``type`` string or an event class), of ``task_id`` if given."""
        deadline = time.monotonic() + timeout
        while True:
            ev = await self.next(timeout=max(0.0, deadline - time.monotonic()))
            if ev is None:
                raise WebpilotError(f"the socket closed before a {kind!r} event")
            if _matches(ev, kind, task_id):
                return ev

    async def send(self, message: Json, *, timeout: float = 30.0) -> Json:
        """Emits a send-message ``message`` object over the socket and returns the service's ack."""
        ack = await self._sio.call("message", message, timeout=timeout)
        return ack if isinstance(ack, dict) else {"success": False, "message": repr(ack)}

    async def close(self) -> None:
        await self._sio.disconnect()
        await self._queue.put(_CLOSED)

    async def __aenter__(self) -> AsyncEventStream:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__: List[str] = [
    "Event", "AgentEvent", "ActionEvent", "ResponseUpdateEvent", "TaskCompletedEvent", "GuardrailTriggerEvent",
    "TaskErrorEvent", "EndSessionEvent", "InstanceDisconnectedEvent", "InstanceReconnectedEvent", "DownloadEvent",
    "UnknownEvent", "EventStream", "AsyncEventStream", "parse_event",
]  # fmt: skip
