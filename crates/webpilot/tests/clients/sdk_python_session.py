"""The Python SDK's black-box test, sync client on the scripted model (tests/api/sdk_python.rs).

Env: WEBPILOT_BASE_URL, WEBPILOT_API_KEY (read by the SDK itself), WP_SITE (the fixture site), WP_HOOK_PORT
(a port the service may deliver webhooks to), WP_REPORT_SHA256 (of the fixture's report.csv).
Uses only the SDK's public API (and the official standardwebhooks package to cross-check its verifier).
Prints one JSON line: {"ok": true, "sessionId": ...}; any failed check raises.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import httpx
import standardwebhooks

import webpilot
from webpilot import (
    ActionEvent, DownloadEvent, EndSessionEvent, Event, GuardrailError, GuardrailTriggerEvent, NotFoundError,
    TaskCompletedEvent, TaskErrorEvent, TaskFailedError, Webpilot,
)  # fmt: skip
from webpilot.models import SCHEMA_MODELS

SITE = os.environ["WP_SITE"]
HOOK_PORT = int(os.environ["WP_HOOK_PORT"])
REPORT_SHA256 = os.environ["WP_REPORT_SHA256"]
Delivered = Tuple[Dict[str, str], bytes]


class Collector:
    """Reads a session's events in a thread (``for event in s.events()``) and lets the test wait on them."""

    def __init__(self, stream: webpilot.EventStream) -> None:
        self.events: List[Event] = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self._thread.start()

    def _run(self, stream: webpilot.EventStream) -> None:
        for event in stream:
            with self._cond:
                self.events.append(event)
                self._cond.notify_all()

    def wait(self, what: str, pred: Callable[[Event], bool], timeout: float = 20.0) -> Event:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = next((e for e in self.events if pred(e)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                assert left > 0, f"no {what} event in {timeout} s: {self.events}"
                self._cond.wait(left)


class Receiver:
    """A webhook endpoint that keeps every delivery's headers and raw body, and answers 204."""

    def __init__(self, port: int) -> None:
        self.deliveries: List[Delivered] = []
        received = self.deliveries

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_types(self, types: List[str], timeout: float = 20.0) -> List[Delivered]:
        deadline = time.monotonic() + timeout
        while True:
            seen = {json.loads(body).get("type") for _, body in self.deliveries}
            if all(t in seen for t in types):
                return list(self.deliveries)
            assert time.monotonic() < deadline, f"webhooks {types} not all delivered: {seen}"
            time.sleep(0.1)


def check_models_match_the_document(wp: Webpilot) -> None:
    """Every JSON property of each component a model reads is mapped by the model (and nothing else)."""
    doc = httpx.get(f"{wp.base_url}/openapi.json").json()
    schemas: Dict[str, Any] = doc["components"]["schemas"]

    def props(schema: Dict[str, Any]) -> Dict[str, Any]:
        if "$ref" in schema:
            return props(schemas[schema["$ref"].rsplit("/", 1)[1]])
        out: Dict[str, Any] = dict(schema.get("properties", {}))
        for part in schema.get("allOf", []):
            out.update(props(part))
        return out

    for model in SCHEMA_MODELS:
        documented = set(props(schemas[model.SCHEMA])) - {"success"}
        mapped = set(model.JSON.values())
        assert documented <= mapped, f"{model.__name__} misses {documented - mapped} of {model.SCHEMA}"
        assert mapped <= documented, f"{model.__name__} maps {mapped - documented}, not in {model.SCHEMA}"


def check_webhooks(secret: str, deliveries: List[Delivered], session_id: str) -> List[str]:
    official = standardwebhooks.Webhook(secret)
    types = []
    for headers, body in deliveries:
        event = webpilot.webhooks.verify(secret, body, headers)
        assert official.verify(body, headers) == event.raw, "the official verifier reads the same message"
        assert event.id == headers["webhook-id"] and event.id.startswith("msg_"), event
        assert event.session_id == session_id, event
        types.append(event.type)
    headers, body = deliveries[0]
    # The SDK signs as the official library does, and refuses what does not verify.
    ts = int(headers["webhook-timestamp"])
    sig = webpilot.webhooks.sign(secret, headers["webhook-id"], ts, body)
    assert sig in headers["webhook-signature"].split(" "), (sig, headers)
    assert sig == official.sign(headers["webhook-id"], datetime.fromtimestamp(ts, tz=timezone.utc), body.decode())
    tampered = body.replace(b'"type"', b'"tYpe"')
    for bad_body, bad_headers, bad_secret in [
        (tampered, headers, secret),
        (body, headers, "whsec_" + "A" * 43 + "="),
        (body, {**headers, "webhook-timestamp": str(ts - 3600)}, secret),
        (body, {k: v for k, v in headers.items() if k != "webhook-signature"}, secret),
    ]:
        try:
            webpilot.webhooks.verify(bad_secret, bad_body, bad_headers)
            raise AssertionError("a bad delivery verified")
        except webpilot.WebhookVerificationError:
            pass
    return types


def main() -> None:
    receiver = Receiver(HOOK_PORT)
    wp = Webpilot()  # WEBPILOT_BASE_URL, WEBPILOT_API_KEY
    check_models_match_the_document(wp)
    hook = wp.webhooks.create(f"http://127.0.0.1:{HOOK_PORT}/hook", description="the SDK's test")
    assert hook.secret is not None and hook.secret.startswith("whsec_"), hook
    assert [h.webhook_id for h in wp.webhooks.list()] == [hook.webhook_id]

    with wp.sessions.start(
        starting_url=f"{SITE}/files", recording=True, profile="sdk-profile", persist_profile=True
    ) as s:
        sid = s.session_id
        assert s.info.recording is True, s.info
        assert s.cdp_url.startswith("ws://") and f"/cdp/{sid}" in s.cdp_url, s.cdp_url
        assert (s.streaming.width, s.streaming.height) == (1024, 600)
        assert sid in [live.session_id for live in wp.sessions.list()]
        events = Collector(s.events())

        # A task through the scripted model, past the inline wait; its events and its file.
        result = s.run("Download the report from this page", timeout=30)
        assert result.message == "Downloaded the report.", result
        assert result.usage is not None and result.usage.cost > 0, result
        tid = result.task_id
        done = events.wait("task_completed", lambda e: isinstance(e, TaskCompletedEvent) and e.task_id == tid)
        assert isinstance(done, TaskCompletedEvent) and done.message == result.message, done
        assert done.cost is not None and done.cost > 0, done
        # The session's task history, newest first, and what the list says it is doing.
        history = wp.sessions.tasks(sid)
        assert [t.task_id for t in history][:1] == [tid], history
        assert history[0].status == "complete" and history[0].answer == result.message, history
        assert history[0].task == "Download the report from this page" and history[0].duration_ms >= 0, history
        live = next(x for x in wp.sessions.list() if x.session_id == sid)
        assert live.state in ("idle", "running") and live.created_at and live.url, live
        events.wait("click action", lambda e: isinstance(e, ActionEvent) and e.name == "click")
        download = events.wait("download", lambda e: isinstance(e, DownloadEvent) and e.name == "report.csv")
        assert isinstance(download, DownloadEvent) and download.sha256 == REPORT_SHA256, download

        # Pause while the model thinks; the turn's action completes, then the agent holds until resume.
        task = s.submit("Open the counter page")
        assert task.poll().status == "running"
        s.pause()
        events.wait("navigate", lambda e: isinstance(e, ActionEvent) and e.task_id == task.task_id)
        assert task.poll().status == "running", "paused after its current action"
        s.resume()  # 409 INVALID_STATE unless the task was paused
        assert task.wait(timeout=20).message == "Opened the counter."

        # Stop drops the model call in flight.
        task = s.submit("Think for a long time")
        s.stop()
        try:
            task.wait(timeout=20)
            raise AssertionError("a stopped task completed")
        except TaskFailedError as e:
            assert (e.code, e.task_id, e.session_id) == ("TASK_STOPPED", task.task_id, sid), e
        stopped = events.wait("error", lambda e: isinstance(e, TaskErrorEvent) and e.task_id == task.task_id)
        assert isinstance(stopped, TaskErrorEvent) and stopped.code == "TASK_STOPPED", stopped

        # A guardrail round trip: wait() says what the agent asks, answer_guardrail() answers it.
        task = s.submit("Buy a plan")
        try:
            task.wait(timeout=20)
            raise AssertionError("no guardrail")
        except GuardrailError as g:
            assert (g.question, g.kind, g.task_id) == ("Which plan do you want?", "human_input_needed", task.task_id)
        asked = events.wait("guardrail_trigger", lambda e: isinstance(e, GuardrailTriggerEvent))
        assert isinstance(asked, GuardrailTriggerEvent) and asked.guardrail.value == "Which plan do you want?"
        s.answer_guardrail("Pro, please")
        assert task.wait(timeout=20).message == "Chose the plan."
    # The context manager terminated the session: its socket heard why, and it takes no more messages.
    ended = events.wait("end_session", lambda e: isinstance(e, EndSessionEvent))
    assert isinstance(ended, EndSessionEvent) and ended.reason == "terminated", ended
    try:
        s.pause()
        raise AssertionError("an ended session took a message")
    except NotFoundError as e:
        assert (e.status, e.code) == (404, "SESSION_NOT_FOUND"), e

    # The recording and the file, after the session ended.
    rec = wp.recordings.wait_ready(sid, timeout=20)
    assert rec.status == "ready" and rec.bytes > 0 and rec.frames > 0, rec
    assert sid in [r.session_id for r in wp.recordings.list()]
    with tempfile.TemporaryDirectory() as tmp:
        video = wp.recordings.download(sid, Path(tmp) / "session.webm").read_bytes()
        assert video[:4] == b"\x1a\x45\xdf\xa3" and len(video) == rec.bytes, (video[:4], len(video), rec)
        timeline = wp.recordings.events(sid)
        assert any(isinstance(t.data, dict) and t.data.get("type") == "task_completed" for t in timeline)
        files = {f.name: f for f in wp.files.list(sid)}
        assert files["report.csv"].sha256 == REPORT_SHA256 and files["report.csv"].source == "download", files
        saved = wp.files.download(sid, "report.csv", Path(tmp) / "report.csv").read_bytes()
        assert hashlib.sha256(saved).hexdigest() == REPORT_SHA256
    assert "sdk-profile" in [p.name for p in wp.profiles.list()], "the persisted profile is listed"

    # Webhooks: every delivery verifies with the SDK's helper (and the official library).
    wanted = ["task.completed", "task.failed", "task.guardrail", "file.created", "session.ended", "recording.ready"]
    deliveries = receiver.wait_types(wanted)
    types = check_webhooks(hook.secret, deliveries, sid)
    log = wp.webhooks.deliveries(hook.webhook_id)
    assert any(d.status_code == 204 for d in log), log
    wp.webhooks.delete(hook.webhook_id)
    print(json.dumps({"ok": True, "sessionId": sid, "webhooks": sorted(set(types)), "events": len(events.events)}))


if __name__ == "__main__":
    main()
