"""The asyncio client: ``AsyncWebpilot``, its resources, and the ``AsyncSession`` and ``AsyncTask`` objects
(the same surface as the synchronous one in ``_sync.py``, awaited)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, Generator, List, Optional, Sequence, Union

import httpx

from . import _common as c
from ._http import AsyncTransport, RetryPolicy
from .errors import GuardrailError, NotFoundError, WebpilotTimeoutError
from .events import AsyncEventStream
from .models import (
    Delivery, FileInfo, Guardrail, Json, LiveSession, Profile, Recording, RecordingLink, SessionInfo, SessionTask,
    Streaming, TaskResult, TaskState, TimelineEntry, UsageReport, Webhook,
)  # fmt: skip

GuardrailHandler = Callable[[Guardrail], Union[str, Awaitable[str]]]


class AsyncTask:
    """A task of a session: ``poll()`` its state, ``wait()`` for its result."""

    def __init__(self, transport: AsyncTransport, session_id: str, task_id: str, first: Optional[TaskState] = None):
        self._t = transport
        self.session_id = session_id
        self.task_id = task_id
        self._last = first

    def __repr__(self) -> str:
        return f"AsyncTask(session_id={self.session_id!r}, task_id={self.task_id!r})"

    async def poll(self) -> TaskState:
        """The task's state now (``GET /task/:sessionId/:taskId``)."""
        answer = await self._t.json("GET", c.task_path(self.session_id, self.task_id), auth=False)
        self._last = TaskState.from_json(self.session_id, self.task_id, answer)
        return self._last

    async def answer_guardrail(self, answer: str) -> None:
        """Answers the agent's question; the task continues."""
        await _send(self._t, self.session_id, c.guardrail(answer))
        self._last = None

    async def wait(
        self,
        *,
        timeout: Optional[float] = None,
        poll_interval: float = 0.5,
        on_guardrail: Optional[GuardrailHandler] = None,
    ) -> TaskResult:
        """Polls until the task ends and returns its result. Raises ``TaskFailedError`` (with the failure
        ``code``) if it fails, ``WebpilotTimeoutError`` after ``timeout`` seconds, and ``GuardrailError`` when
        the agent asks a human and ``on_guardrail`` (called with the question, returning the answer) is not
        given."""
        deadline = None if timeout is None else time.monotonic() + timeout
        st = self._last or await self.poll()
        while True:
            if st.status == "completed" and st.result is not None:
                return st.result
            if st.status == "failed":
                raise c.failed(st)
            if st.status == "guardrail" and st.guardrail is not None:
                if on_guardrail is None:
                    self._last = None
                    raise GuardrailError(
                        st.guardrail.value, kind=st.guardrail.type, session_id=self.session_id, task_id=self.task_id
                    )
                answer = on_guardrail(st.guardrail)
                await self.answer_guardrail(answer if isinstance(answer, str) else await answer)
            if deadline is not None and time.monotonic() >= deadline:
                raise WebpilotTimeoutError(f"task {self.task_id} did not end within {timeout} s")
            await asyncio.sleep(poll_interval)
            st = await self.poll()


async def _send(t: AsyncTransport, session_id: str, message: Json) -> Json:
    return await t.json("POST", "/start/send-message", json={"sessionId": session_id, "message": message})


class AsyncSession:
    """A live browser session. As a context manager it terminates the session on exit."""

    def __init__(self, client: AsyncWebpilot, info: SessionInfo) -> None:
        self._client = client
        self._t = client._transport
        self.info = info
        self.session_id: str = info.session_id
        self.socket_url: str = info.socket_url
        #: The DevTools endpoint: ``playwright.chromium.connect_over_cdp(s.cdp_url)``.
        self.cdp_url: str = info.cdp_url
        self.streaming: Streaming = info.streaming
        #: The task given to ``start(task=...)``, if any.
        self.initial_task: Optional[AsyncTask] = (
            AsyncTask(self._t, info.session_id, info.task_id) if info.task_id else None
        )

    def __repr__(self) -> str:
        return f"AsyncSession(session_id={self.session_id!r})"

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.terminate()

    async def send(self, message: Json) -> Json:
        """Sends any send-message ``message`` object and returns the answer as it is."""
        return await _send(self._t, self.session_id, message)

    async def submit(self, task: str, **options: Any) -> AsyncTask:
        """Starts a task (``newTask``) and returns it once the service's inline wait (up to 50 s) is over;
        ``options``: ``starting_url``, ``max_duration``, ``max_input_tokens``, ``max_output_tokens``,
        ``avoid_domains``, ``secrets``, ``output_schema``, ``replay_of``, ``vision``, ``terminate_on_completion``."""
        answer = await self.send(c.new_task(task, **options))
        sid, tid = c.task_ids(answer, self.session_id)
        return AsyncTask(self._t, sid, tid, TaskState.from_json(sid, tid, answer))

    async def run(
        self,
        task: str,
        *,
        timeout: Optional[float] = None,
        on_guardrail: Optional[GuardrailHandler] = None,
        **options: Any,
    ) -> TaskResult:
        """Runs a task to its end: waits inline, then polls past the 50 s wait (see ``Task.wait``)."""
        return await (await self.submit(task, **options)).wait(timeout=timeout, on_guardrail=on_guardrail)

    def events(self, *, connect_timeout: float = 10.0) -> AsyncEventStream:
        """The typed event stream of the session's Socket.IO channel; it connects on ``async with`` (or
        ``await stream.connect()``), so enter it before starting the work whose events you want."""
        return AsyncEventStream(self.socket_url, self.session_id, connect_timeout=connect_timeout)

    async def pause(self) -> None:
        """Pauses the running task after its current action."""
        await self.send(c.state("pause"))

    async def resume(self) -> None:
        await self.send(c.state("resume"))

    async def stop(self) -> None:
        """Stops the running task at once; the session stays open for the next one."""
        await self.send(c.state("stop"))

    async def terminate(self) -> None:
        """Ends the session (closes its browser context); a session already gone is not an error."""
        try:
            await self.send(c.state("terminate"))
        except NotFoundError:
            pass

    async def take_over(self) -> None:
        """Manual control: the agent waits at its next step until ``release_control()``."""
        await self.send(c.interaction({"type": "takeOverControl"}))

    async def release_control(self) -> None:
        await self.send(c.interaction({"type": "releaseControl"}))

    async def click(self, x: float, y: float) -> None:
        """Clicks at a point of the 1024 x 600 frame (``y`` from 155: the band above is the drawn browser)."""
        await self.send(c.click(x, y))

    async def double_click(self, x: float, y: float) -> None:
        await self.send(c.click(x, y, double=True))

    async def type(self, text: str, *, human_like: bool = False) -> None:
        """Types text into the focused element."""
        await self.send(c.type_text(text, human_like))

    async def key_press(self, key: str) -> None:
        """Presses a key: ``Enter``, ``Escape``, ``Tab``, ``Backspace``, arrows, ... or one character."""
        await self.send(c.interaction({"type": "KEY_PRESS", "key": key}))

    async def upload(self, name: str, x: float, y: float) -> None:
        """Sets the session's file ``name`` on the file input at that frame point."""
        await self.send(c.interaction({"type": "UPLOAD", "name": name, "x": x, "y": y}))

    async def answer_guardrail(self, answer: str) -> None:
        """Answers the question the agent asked; its task continues."""
        await self.send(c.guardrail(answer))

    async def files(self) -> List[FileInfo]:
        return await self._client.files.list(self.session_id)


class SessionStart:
    """What ``AsyncWebpilot.sessions.start`` returns: await it for the session, or enter it with
    ``async with`` to have the session terminated on exit."""

    def __init__(self, make: Callable[[], Awaitable[AsyncSession]]) -> None:
        self._make = make
        self._session: Optional[AsyncSession] = None

    def __await__(self) -> Generator[Any, None, AsyncSession]:
        return self._make().__await__()

    async def __aenter__(self) -> AsyncSession:
        self._session = await self._make()
        return self._session

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.terminate()


class AsyncSessions:
    def __init__(self, client: AsyncWebpilot) -> None:
        self._client = client
        self._t = client._transport

    def start(
        self,
        *,
        starting_url: Optional[str] = None,
        task: Optional[str] = None,
        recording: Optional[bool] = None,
        profile: Optional[str] = None,
        persist_profile: Optional[bool] = None,
        max_duration: Optional[int] = None,
        max_input_tokens: Optional[int] = None,
        max_output_tokens: Optional[int] = None,
        avoid_domains: Optional[Sequence[str]] = None,
        secrets: Optional[c.Secrets] = None,
        output_schema: Optional[Json] = None,
        terminate_on_completion: Optional[bool] = None,
        proxies: Optional[Sequence[Json]] = None,
        locale: Optional[str] = None,
        timezone: Optional[str] = None,
        user_agent: Optional[str] = None,
        geolocation: Optional[Json] = None,
        extra: Optional[Json] = None,
    ) -> SessionStart:
        """Starts a session (``POST /start/start-session``): ``async with wp.sessions.start(...) as s:``
        terminates it on exit; ``s = await wp.sessions.start(...)`` leaves that to you."""
        payload = c.body(
            extra, starting_url=starting_url, task=task, recording=recording, profile=profile,
            persist_profile=persist_profile, max_duration=max_duration, max_input_tokens=max_input_tokens,
            max_output_tokens=max_output_tokens, avoid_domains=list(avoid_domains) if avoid_domains else None,
            secrets=secrets, output_schema=output_schema, terminate_on_completion=terminate_on_completion,
            proxies=list(proxies) if proxies else None, locale=locale, timezone=timezone, user_agent=user_agent,
            geolocation=geolocation,
        )  # fmt: skip

        async def make() -> AsyncSession:
            answer = await self._t.json("POST", "/start/start-session", json=payload)
            return AsyncSession(self._client, SessionInfo.from_json(answer))

        return SessionStart(make)

    async def list(self) -> List[LiveSession]:
        """The caller's live sessions."""
        return [LiveSession.from_json(x) for x in c.items(await self._t.json("GET", "/start/sessions"), "sessions")]

    async def tasks(
        self, session_id: str, *, limit: Optional[int] = None, offset: Optional[int] = None
    ) -> List[SessionTask]:
        """A session's tasks (live or ended), newest first (``GET /start/sessions/{sessionId}/tasks``)."""
        params = {k: v for k, v in (("limit", limit), ("offset", offset)) if v is not None}
        path = f"/start/sessions/{c.seg(session_id)}/tasks"
        return [SessionTask.from_json(x) for x in c.items(await self._t.json("GET", path, params=params), "tasks")]


class AsyncRecordings:
    def __init__(self, t: AsyncTransport) -> None:
        self._t = t

    async def list(self, *, limit: Optional[int] = None, offset: Optional[int] = None) -> List[Recording]:
        params = {k: v for k, v in (("limit", limit), ("offset", offset)) if v is not None}
        answer = await self._t.json("GET", "/recordings", params=params)
        return [Recording.from_json(x) for x in c.items(answer, "recordings")]

    async def get(self, session_id: str) -> Recording:
        return Recording.from_json(await self._t.json("GET", f"/recordings/{c.seg(session_id)}"))

    async def wait_ready(self, session_id: str, *, timeout: float = 30.0, poll_interval: float = 0.25) -> Recording:
        """Waits until the recording is ``ready`` (a few seconds after its session ended)."""
        deadline = time.monotonic() + timeout
        while True:
            rec = await self.get(session_id)
            if rec.status != "recording":
                return rec
            if time.monotonic() >= deadline:
                raise WebpilotTimeoutError(f"the recording of {session_id} is still recording after {timeout} s")
            await asyncio.sleep(poll_interval)

    async def download(self, session_id: str, path: Union[str, Path]) -> Path:
        """Saves the recording's WebM video to ``path``."""
        return await self._t.download(f"/recordings/{c.seg(session_id)}/video.webm", path)

    async def events(self, session_id: str) -> List[TimelineEntry]:
        answer = await self._t.json("GET", f"/recordings/{c.seg(session_id)}/events")
        return [TimelineEntry.from_json(x) for x in c.items(answer, "events")]

    async def share(self, session_id: str, *, ttl_seconds: Optional[int] = None) -> RecordingLink:
        payload = {} if ttl_seconds is None else {"ttlSeconds": ttl_seconds}
        answer = await self._t.json("POST", f"/recordings/{c.seg(session_id)}/share", json=payload)
        return RecordingLink.from_json(answer)

    async def delete(self, session_id: str) -> None:
        await self._t.json("DELETE", f"/recordings/{c.seg(session_id)}")


class AsyncFiles:
    def __init__(self, t: AsyncTransport) -> None:
        self._t = t

    async def list(self, session_id: str) -> List[FileInfo]:
        answer = await self._t.json("GET", f"/sessions/{c.seg(session_id)}/files")
        return [FileInfo.from_json(x) for x in c.items(answer, "files")]

    async def read(self, session_id: str, name: str) -> bytes:
        path = f"/sessions/{c.seg(session_id)}/files/{c.seg(name)}"
        return (await self._t.send("GET", path, headers={"accept": "*/*"})).content

    async def download(self, session_id: str, name: str, path: Union[str, Path]) -> Path:
        return await self._t.download(f"/sessions/{c.seg(session_id)}/files/{c.seg(name)}", path)

    async def upload(self, session_id: str, name: str, data: Union[bytes, str, Path]) -> FileInfo:
        """Uploads bytes (or the file at a path) into the session's files as ``name``."""
        content = data if isinstance(data, bytes) else Path(data).read_bytes()
        answer = await self._t.json(
            "POST", f"/sessions/{c.seg(session_id)}/files", params={"name": name}, content=content,
            headers={"content-type": "application/octet-stream"},
        )  # fmt: skip
        return FileInfo.from_json(answer.get("file") or {})

    async def delete(self, session_id: str, name: str) -> None:
        await self._t.json("DELETE", f"/sessions/{c.seg(session_id)}/files/{c.seg(name)}")


class AsyncProfiles:
    def __init__(self, t: AsyncTransport) -> None:
        self._t = t

    async def list(self) -> List[Profile]:
        return [Profile.from_json(x) for x in c.items(await self._t.json("GET", "/profiles"), "profiles")]

    async def get(self, name: str) -> Profile:
        return Profile.from_json(await self._t.json("GET", f"/profiles/{c.seg(name)}"))

    async def delete(self, name: str) -> None:
        await self._t.json("DELETE", f"/profiles/{c.seg(name)}")

    async def export_state(self, name: str) -> Json:
        """The profile's storage state (Playwright's ``storageState`` shape plus IndexedDB); holds live cookies."""
        return await self._t.json("GET", f"/profiles/{c.seg(name)}/export")

    async def import_state(self, name: str, state: Json) -> Profile:
        return Profile.from_json(await self._t.json("PUT", f"/profiles/{c.seg(name)}/export", json=state))


class AsyncWebhooks:
    def __init__(self, t: AsyncTransport) -> None:
        self._t = t

    async def create(
        self, url: str, events: Optional[Sequence[str]] = None, *, description: Optional[str] = None
    ) -> Webhook:
        """Registers an endpoint; the answer's ``secret`` (``whsec_...``) is shown only here."""
        payload: Json = {"url": url}
        if events is not None:
            payload["events"] = list(events)
        if description is not None:
            payload["description"] = description
        return Webhook.from_json(await self._t.json("POST", "/webhooks", json=payload))

    async def list(self) -> List[Webhook]:
        return [Webhook.from_json(x) for x in c.items(await self._t.json("GET", "/webhooks"), "webhooks")]

    async def delete(self, webhook_id: str) -> None:
        await self._t.json("DELETE", f"/webhooks/{c.seg(webhook_id)}")

    async def rotate_secret(self, webhook_id: str) -> str:
        """A new secret; the old one keeps signing beside it for 24 h."""
        answer = await self._t.json("POST", f"/webhooks/{c.seg(webhook_id)}/rotate-secret")
        return str(answer.get("secret", ""))

    async def deliveries(self, webhook_id: str) -> List[Delivery]:
        answer = await self._t.json("GET", f"/webhooks/{c.seg(webhook_id)}/deliveries")
        return [Delivery.from_json(x) for x in c.items(answer, "deliveries")]


class AsyncWebpilot:
    """The webpilot client. ``base_url`` and ``api_key`` default to ``WEBPILOT_BASE_URL`` and
    ``WEBPILOT_API_KEY``. Answers 429 and 503 are retried ``max_retries`` times, after ``Retry-After``."""

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: Union[float, httpx.Timeout, None] = None,
        max_retries: int = 3,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        self._transport = AsyncTransport(base_url, api_key, RetryPolicy(max_retries), timeout, http_client)
        self.base_url = self._transport.base_url
        self.sessions = AsyncSessions(self)
        self.recordings = AsyncRecordings(self._transport)
        self.files = AsyncFiles(self._transport)
        self.profiles = AsyncProfiles(self._transport)
        self.webhooks = AsyncWebhooks(self._transport)

    async def __aenter__(self) -> AsyncWebpilot:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._transport.close()

    async def submit_task(self, task: str, **options: Any) -> AsyncTask:
        """Starts a one-shot task (``POST /start/run-task``) and returns it after the inline wait."""
        answer = await self._transport.json("POST", "/start/run-task", json=c.body(task=task, **options))
        sid, tid = c.task_ids(answer)
        return AsyncTask(self._transport, sid, tid, TaskState.from_json(sid, tid, answer))

    async def run_task(
        self,
        task: str,
        *,
        timeout: Optional[float] = None,
        on_guardrail: Optional[GuardrailHandler] = None,
        **options: Any,
    ) -> TaskResult:
        """Runs one task in a session of its own, which ends with it; ``options`` as for
        ``sessions.start`` (``starting_url``, ``recording``, ``profile``, ...)."""
        return await (await self.submit_task(task, **options)).wait(timeout=timeout, on_guardrail=on_guardrail)

    async def get_task(self, session_id: str, task_id: str) -> TaskState:
        return await AsyncTask(self._transport, session_id, task_id).poll()

    async def usage(
        self, *, since: Optional[str] = None, until: Optional[str] = None, limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> UsageReport:  # fmt: skip
        """The balance and the charges (``GET /usage``), newest first."""
        params = {k: v for k, v in (("since", since), ("until", until), ("limit", limit), ("cursor", cursor)) if v}
        return UsageReport.from_json(await self._transport.json("GET", "/usage", params=params))

    async def health(self) -> Dict[str, Any]:
        return await self._transport.json("GET", "/start/health", auth=False)
