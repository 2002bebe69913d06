"""The HTTP layer on httpx: the key, error answers raised as exceptions, and retries with backoff on 429 and
503 that honour ``Retry-After``; one sync and one async transport over the same rules."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import time
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Union

import httpx

from ._version import __version__
from .errors import WebpilotConnectionError, WebpilotError, WebpilotTimeoutError, error_for

log = logging.getLogger("webpilot")

#: Statuses that mean the request was not carried out and may be sent again as it is.
RETRY_STATUSES = frozenset({429, 503})
#: The default timeout: run-task and newTask wait up to 50 s inline, so reads get more than that.
DEFAULT_TIMEOUT = httpx.Timeout(75.0, connect=10.0)

Params = Optional[Mapping[str, Union[str, int]]]


def base_url_from(base_url: Optional[str]) -> str:
    url = base_url or os.environ.get("WEBPILOT_BASE_URL")
    if not url:
        raise WebpilotError("no base URL: pass base_url= or set WEBPILOT_BASE_URL")
    return url.rstrip("/")


def api_key_from(api_key: Optional[str]) -> str:
    key = api_key or os.environ.get("WEBPILOT_API_KEY")
    if not key:
        raise WebpilotError("no API key: pass api_key= or set WEBPILOT_API_KEY")
    return key


def retry_after(headers: httpx.Headers) -> Optional[float]:
    """``Retry-After`` in seconds: a number of seconds or an HTTP date; ``None`` when absent or unreadable."""
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class RetryPolicy:
    """How often and how long to wait: ``Retry-After`` when the answer has it (up to ``max_wait``), else an
    exponential backoff from ``base_delay`` with jitter, at most ``max_delay``."""

    def __init__(
        self, max_retries: int = 3, base_delay: float = 0.5, max_delay: float = 8.0, max_wait: float = 60.0
    ) -> None:
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_wait = max_wait

    def delay(self, attempt: int, response: Optional[httpx.Response]) -> float:
        if response is not None:
            after = retry_after(response.headers)
            if after is not None:
                return min(after, self.max_wait)
        backoff: float = min(self.max_delay, self.base_delay * (2**attempt))
        return backoff * (0.5 + random.random() / 2)


def _error_body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return {"message": response.text[:500]} if response.text else {}


class _Base:
    def __init__(self, base_url: Optional[str], api_key: Optional[str], retries: RetryPolicy) -> None:
        self.base_url = base_url_from(base_url)
        self.api_key = api_key_from(api_key)
        self.retries = retries

    def url(self, path: str) -> str:
        return path if path.startswith(("http://", "https://")) else f"{self.base_url}{path}"

    def headers(self, auth: bool, extra: Optional[Mapping[str, str]]) -> Dict[str, str]:
        h = {"user-agent": f"webpilot-python/{__version__}", "accept": "application/json"}
        if auth:
            h["authorization"] = f"Bearer {self.api_key}"
        h.update(extra or {})
        return h

    def should_retry(self, attempt: int, method: str, status: Optional[int], exc: Optional[Exception]) -> bool:
        if attempt >= self.retries.max_retries:
            return False
        if status is not None:
            return status in RETRY_STATUSES
        # A refused connection never reached the service; other transport failures may have, so only reads
        # are sent again.
        return isinstance(exc, httpx.ConnectError) or method == "GET"

    @staticmethod
    def wrap(exc: httpx.HTTPError) -> WebpilotError:
        if isinstance(exc, httpx.TimeoutException):
            return WebpilotTimeoutError(f"the request timed out: {exc}")
        return WebpilotConnectionError(f"the service could not be reached: {exc}")

    @staticmethod
    def note_retry(method: str, url: str, delay: float, response: Optional[httpx.Response]) -> None:
        why = f"HTTP {response.status_code}" if response is not None else "a connection error"
        log.info("webpilot: %s %s answered %s; retrying in %.2f s", method, url.split("?")[0], why, delay)


class SyncTransport(_Base):
    def __init__(
        self,
        base_url: Optional[str],
        api_key: Optional[str],
        retries: RetryPolicy,
        timeout: Union[float, httpx.Timeout, None],
        http_client: Optional[httpx.Client],
    ) -> None:
        super().__init__(base_url, api_key, retries)
        self._own = http_client is None
        self.client = http_client or httpx.Client(timeout=timeout if timeout is not None else DEFAULT_TIMEOUT)

    def close(self) -> None:
        if self._own:
            self.client.close()

    def send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Params = None,
        content: Optional[bytes] = None,
        auth: bool = True,
        headers: Optional[Mapping[str, str]] = None,
        stream: bool = False,
    ) -> httpx.Response:
        """Sends with retries; returns a 2xx response (streamed when ``stream``), raises for any other."""
        url = self.url(path)
        attempt = 0
        while True:
            request = self.client.build_request(
                method, url, json=json, params=params, content=content, headers=self.headers(auth, headers)
            )
            try:
                response = self.client.send(request, stream=stream)
            except httpx.HTTPError as exc:
                if not self.should_retry(attempt, method, None, exc):
                    raise self.wrap(exc) from exc
                delay = self.retries.delay(attempt, None)
                self.note_retry(method, url, delay, None)
                time.sleep(delay)
                attempt += 1
                continue
            if response.is_success:
                return response
            response.read()
            response.close()
            if self.should_retry(attempt, method, response.status_code, None):
                delay = self.retries.delay(attempt, response)
                self.note_retry(method, url, delay, response)
                time.sleep(delay)
                attempt += 1
                continue
            raise error_for(response.status_code, _error_body(response), retry_after=retry_after(response.headers))

    def json(self, method: str, path: str, **kw: Any) -> Dict[str, Any]:
        body = self.send(method, path, **kw).json()
        if not isinstance(body, dict):
            raise WebpilotError(f"{method} {path}: expected a JSON object, got {type(body).__name__}")
        return body

    def download(self, path: str, dest: Union[str, Path]) -> Path:
        """Streams a body into ``dest`` (written whole or not at all) and returns its path."""
        target = Path(dest)
        part = target.with_name(target.name + ".part")
        response = self.send("GET", path, stream=True, headers={"accept": "*/*"})
        try:
            with open(part, "wb") as f:
                for chunk in response.iter_bytes():
                    f.write(chunk)
        except httpx.HTTPError as exc:
            part.unlink(missing_ok=True)
            raise self.wrap(exc) from exc
        finally:
            response.close()
        part.replace(target)
        return target


class AsyncTransport(_Base):
    def __init__(
        self,
        base_url: Optional[str],
        api_key: Optional[str],
        retries: RetryPolicy,
        timeout: Union[float, httpx.Timeout, None],
        http_client: Optional[httpx.AsyncClient],
    ) -> None:
        super().__init__(base_url, api_key, retries)
        self._own = http_client is None
        self.client = http_client or httpx.AsyncClient(timeout=timeout if timeout is not None else DEFAULT_TIMEOUT)

    async def close(self) -> None:
        if self._own:
            await self.client.aclose()

    async def send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Params = None,
        content: Optional[bytes] = None,
        auth: bool = True,
        headers: Optional[Mapping[str, str]] = None,
        stream: bool = False,
    ) -> httpx.Response:
        """Sends with retries; returns a 2xx response (streamed when ``stream``), raises for any other."""
        url = self.url(path)
        attempt = 0
        while True:
            request = self.client.build_request(
                method, url, json=json, params=params, content=content, headers=self.headers(auth, headers)
            )
            try:
                response = await self.client.send(request, stream=stream)
            except httpx.HTTPError as exc:
                if not self.should_retry(attempt, method, None, exc):
                    raise self.wrap(exc) from exc
                delay = self.retries.delay(attempt, None)
                self.note_retry(method, url, delay, None)
                await asyncio.sleep(delay)
                attempt += 1
                continue
            if response.is_success:
                return response
            await response.aread()
            await response.aclose()
            if self.should_retry(attempt, method, response.status_code, None):
                delay = self.retries.delay(attempt, response)
                self.note_retry(method, url, delay, response)
                await asyncio.sleep(delay)
                attempt += 1
                continue
            raise error_for(response.status_code, _error_body(response), retry_after=retry_after(response.headers))

    async def json(self, method: str, path: str, **kw: Any) -> Dict[str, Any]:
        body = (await self.send(method, path, **kw)).json()
        if not isinstance(body, dict):
            raise WebpilotError(f"{method} {path}: expected a JSON object, got {type(body).__name__}")
        return body

    async def download(self, path: str, dest: Union[str, Path]) -> Path:
        """Streams a body into ``dest`` (written whole or not at all) and returns its path."""
        target = Path(dest)
        part = target.with_name(target.name + ".part")
        response = await self.send("GET", path, stream=True, headers={"accept": "*/*"})
        try:
            with open(part, "wb") as f:
                async for chunk in response.aiter_bytes():
                    f.write(chunk)
        except httpx.HTTPError as exc:
            part.unlink(missing_ok=True)
            raise self.wrap(exc) from exc
        finally:
            await response.aclose()
        part.replace(target)
        return target
