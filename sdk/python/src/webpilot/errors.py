"""Exceptions: every error the service answers is raised with its ``code`` and HTTP ``status``."""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class WebpilotError(Exception):
    """Base of every exception the SDK raises.

    ``code`` is the service's error code (``RATE_LIMIT_EXCEEDED``, ``SESSION_NOT_FOUND``, ...) and ``status``
    the HTTP status; both are ``None`` for errors that are not an answer of the service (a refused
    connection, a timeout on the client side).
    """

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        status: Optional[int] = None,
        body: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.body: Dict[str, Any] = body or {}

    def __str__(self) -> str:
        parts = [p for p in (str(self.status) if self.status else None, self.code) if p]
        return f"{' '.join(parts)}: {self.message}" if parts else self.message


class APIError(WebpilotError):
    """The service answered with an error body ``{success: false, message, code}``."""

    status: int

    def __init__(self, message: str, *, code: Optional[str], status: int, body: Optional[Dict[str, Any]] = None):
        super().__init__(message, code=code, status=status, body=body)
        self.status = status


class BadRequestError(APIError):
    """400: a field is missing, of the wrong type or out of range (``INVALID_PARAMS``, ...)."""


class AuthenticationError(APIError):
    """401: the API key is missing, invalid, revoked or expired."""


class InsufficientBalanceError(APIError):
    """402: the balance does not cover new work."""


class PermissionDeniedError(APIError):
    """403: the account is deactivated."""


class NotFoundError(APIError):
    """404: the session, task, file, recording, profile or webhook does not exist (or is not yours)."""


class ConflictError(APIError):
    """409: the state does not allow it (``INVALID_STATE``, ``TASK_ALREADY_RUNNING``, ``PROFILE_IN_USE``)."""


class PayloadTooLargeError(APIError):
    """413: a file or profile is past a cap or the storage quota."""


class RateLimitError(APIError):
    """429: still over the rate limit (or a session limit) after the client's retries."""

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str],
        status: int,
        body: Optional[Dict[str, Any]] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message, code=code, status=status, body=body)
        self.retry_after = retry_after


class ServerError(APIError):
    """5xx: the service failed (``INTERNAL_ERROR``)."""


class ServiceUnavailableError(ServerError):
    """503: no browser instance is free, or the session's node cannot be reached; retried first."""


class WebpilotConnectionError(WebpilotError, ConnectionError):
    """The service could not be reached (refused connection, DNS, TLS, a dropped response); also a
    builtin ``ConnectionError``."""


class WebpilotTimeoutError(WebpilotError, TimeoutError):
    """A wait on the client side ran out: a request, a task, a recording, an event; also a builtin
    ``TimeoutError``."""


class TaskFailedError(WebpilotError):
    """A task ended without success: ``code`` is its failure code (``TASK_STOPPED``, ``ELEMENT_NOT_FOUND``...)."""

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str],
        session_id: str,
        task_id: str,
        body: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message, code=code, body=body)
        self.session_id = session_id
        self.task_id = task_id


class GuardrailError(WebpilotError):
    """A task waits for a human and no ``on_guardrail`` handler was given: ``question`` is what the agent asks.

    Answer with ``Session.answer_guardrail(text)`` (or ``Task.answer_guardrail``), then ``Task.wait()`` again.
    """

    def __init__(self, question: str, *, kind: str, session_id: str, task_id: str) -> None:
        super().__init__(f"the agent asks: {question}", code="GUARDRAIL_TRIGGERED")
        self.question = question
        self.kind = kind
        self.session_id = session_id
        self.task_id = task_id


class WebhookVerificationError(WebpilotError):
    """A webhook delivery's signature, timestamp or headers do not verify."""


_BY_STATUS: Dict[int, Type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    402: InsufficientBalanceError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}


def error_for(status: int, body: Any, *, retry_after: Optional[float] = None) -> APIError:
    """The exception for an error answer: its class by status, its code and message from the body."""
    data: Dict[str, Any] = body if isinstance(body, dict) else {}
    message = data.get("message")
    if not isinstance(message, str):
        nested = data.get("error")
        message = nested.get("message") if isinstance(nested, dict) else None
    if not isinstance(message, str) or not message:
        message = f"the service answered HTTP {status}"
    code = data.get("code")
    if not isinstance(code, str):
        code = None
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else APIError)
    if cls is RateLimitError:
        return RateLimitError(message, code=code, status=status, body=data, retry_after=retry_after)
    return cls(message, code=code, status=status, body=data)
