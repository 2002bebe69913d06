"""What the sync and async clients share: request bodies, message objects and paths."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union
from urllib.parse import quote

from .errors import TaskFailedError
from .models import Json, TaskState

#: Python names of the session and task parameters, and their JSON names.
_FIELDS = {
    "task": "taskDetails",
    "starting_url": "startingUrl",
    "recording": "recording",
    "profile": "profile",
    "persist_profile": "persistProfile",
    "max_duration": "maxDuration",
    "max_input_tokens": "maxInputTokens",
    "max_output_tokens": "maxOutputTokens",
    "avoid_domains": "avoidDomains",
    "secrets": "secrets",
    "output_schema": "outputSchema",
    "replay_of": "replayOf",
    "vision": "vision",
    "terminate_on_completion": "terminateOnCompletion",
    "mode": "mode",
    "proxies": "proxies",
    "locale": "locale",
    "timezone": "timezone",
    "user_agent": "userAgent",
    "geolocation": "geolocation",
}

Secrets = Dict[str, Union[str, Dict[str, Any]]]


def body(extra: Optional[Json] = None, **named: Any) -> Json:
    """A JSON body from the Python-named parameters that are not None, plus ``extra`` (sent as it is)."""
    unknown = [k for k in named if k not in _FIELDS]
    if unknown:
        raise TypeError(f"unknown parameter(s) {unknown}; known: {sorted(_FIELDS)} (others go in extra=)")
    out: Json = {_FIELDS[k]: v for k, v in named.items() if v is not None}
    out.update(extra or {})
    return out


def new_task(task: str, **named: Any) -> Json:
    msg: Json = {"actionType": "newTask", "newState": "start"}
    msg.update(body(task=task, **named))
    return msg


def state(new_state: str) -> Json:
    return {"actionType": "state", "newState": new_state}


def interaction(action: Json) -> Json:
    return {"actionType": "interaction", "action": action}


def guardrail(answer: str) -> Json:
    return {"actionType": "guardrail", "taskDetails": answer, "newState": "resume"}


def click(x: float, y: float, double: bool = False) -> Json:
    return interaction({"type": "DOUBLE_CLICK" if double else "CLICK", "x": x, "y": y})


def type_text(text: str, human_like: bool) -> Json:
    action: Json = {"type": "TYPE", "text": text}
    if human_like:
        action["humanLike"] = True
    return interaction(action)


def seg(value: str) -> str:
    """A path segment, escaped."""
    return quote(value, safe="")


def task_path(session_id: str, task_id: str) -> str:
    return f"/task/{seg(session_id)}/{seg(task_id)}"


def task_ids(answer: Json, session_id: Optional[str] = None) -> "tuple[str, str]":
    sid = answer.get("sessionId") or session_id or ""
    tid = answer.get("taskId") or ""
    return str(sid), str(tid)


def failed(state_: TaskState) -> TaskFailedError:
    return TaskFailedError(
        state_.error or "the task failed",
        code=state_.code,
        session_id=state_.session_id,
        task_id=state_.task_id,
        body=state_.raw,
    )


def items(answer: Json, key: str) -> List[Json]:
    v = answer.get(key)
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []
