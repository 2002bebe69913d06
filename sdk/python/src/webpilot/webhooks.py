"""Verifying webhook deliveries (Standard Webhooks): ``verify(secret, body, headers)``.

The service signs each delivery with ``webhook-id``, ``webhook-timestamp`` (Unix seconds) and
``webhook-signature`` (``v1,<base64 HMAC-SHA256 of "id.timestamp.body">`` under the secret's key; two,
space-separated, for 24 h after a rotation). The secret is ``whsec_`` + base64 of the key. Any Standard
Webhooks library verifies the same deliveries; this one has no dependency and returns a typed message.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Literal, Mapping, Optional, Union

from .errors import WebhookVerificationError
from .models import Json

#: How far a delivery's timestamp may be from now, in seconds, either way (what Standard Webhooks uses).
DEFAULT_TOLERANCE = 300

WebhookType = Literal[
    "task.completed", "task.failed", "task.guardrail", "session.ended", "file.created", "recording.ready"
]


@dataclass(frozen=True)
class WebhookEvent:
    """A verified delivery: its message ``id`` (the same on every attempt, to de-duplicate), ``type``,
    ``timestamp`` (RFC 3339) and ``data`` (the fields of the matching Socket.IO event, with ``sessionId``)."""

    id: str
    type: str
    timestamp: str
    data: Json
    raw: Json = field(repr=False, compare=False)

    @property
    def session_id(self) -> Optional[str]:
        v = self.data.get("sessionId")
        return v if isinstance(v, str) else None

    @property
    def task_id(self) -> Optional[str]:
        v = self.data.get("taskId")
        return v if isinstance(v, str) else None


def _key(secret: str) -> bytes:
    raw = secret[len("whsec_") :] if secret.startswith("whsec_") else secret
    try:
        key = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise WebhookVerificationError("the secret is not a whsec_ base64 secret") from exc
    if not key:
        raise WebhookVerificationError("the secret is empty")
    return key


def sign(secret: str, msg_id: str, timestamp: int, body: Union[bytes, str]) -> str:
    """The ``webhook-signature`` value for ``body`` sent as ``msg_id`` at ``timestamp``: ``v1,<base64>``."""
    data = body if isinstance(body, bytes) else body.encode()
    mac = hmac.new(_key(secret), f"{msg_id}.{timestamp}.".encode() + data, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def verify(
    secret: str,
    body: Union[bytes, str],
    headers: Mapping[str, str],
    *,
    tolerance: int = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> WebhookEvent:
    """Checks a delivery's signature and timestamp and returns its message; raises
    ``WebhookVerificationError`` otherwise. Pass the body exactly as received (bytes), and the request's
    headers (any mapping; names are matched case-insensitively)."""
    h: Dict[str, str] = {k.lower(): v for k, v in headers.items()}
    msg_id, stamp, signatures = h.get("webhook-id"), h.get("webhook-timestamp"), h.get("webhook-signature")
    if not (msg_id and stamp and signatures):
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        ts = int(stamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not a number of seconds") from None
    current = time.time() if now is None else now
    if ts < current - tolerance:
        raise WebhookVerificationError("the message is too old")
    if ts > current + tolerance:
        raise WebhookVerificationError("the message is too new")
    expected = sign(secret, msg_id, ts, body).split(",", 1)[1].encode()
    matched = False
    for versioned in signatures.split(" "):
        version, _, sig = versioned.partition(",")
        if version == "v1" and hmac.compare_digest(sig.encode(), expected):
            matched = True
            break
    if not matched:
        raise WebhookVerificationError("no signature matches")
    return _message(msg_id, body)


def _message(msg_id: str, body: Union[bytes, str]) -> WebhookEvent:
    try:
        parsed: Any = json.loads(body)
    except ValueError as exc:
        raise WebhookVerificationError("the body is not JSON") from exc
    if not isinstance(parsed, dict):
        raise WebhookVerificationError("the body is not a JSON object")
    kind, stamp, data = parsed.get("type"), parsed.get("timestamp"), parsed.get("data")
    return WebhookEvent(
        msg_id,
        kind if isinstance(kind, str) else "",
        stamp if isinstance(stamp, str) else "",
        data if isinstance(data, dict) else {},
        parsed,
    )


__all__ = ["verify", "sign", "WebhookEvent", "WebhookType", "WebhookVerificationError", "DEFAULT_TOLERANCE"]
