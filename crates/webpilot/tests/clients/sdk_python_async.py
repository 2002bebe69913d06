"""The Python SDK's black-box test, async client on the offline planner (tests/api/sdk_python.rs).

Env: WEBPILOT_BASE_URL, WEBPILOT_API_KEY (read by the SDK itself), WP_SITE (the fixture site). The service runs
with a rate limit of 20 requests in a 2 s window. Uses only the SDK's public API. Prints one JSON line:
{"ok": true, "retried": {"statuses": [...], "retryAfter": s, "waited": s}}; any failed check raises.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any, Dict, List, Optional

import httpx

from webpilot import (
    AsyncSession, AsyncWebpilot, AuthenticationError, BadRequestError, Guardrail, RateLimitError,
    TaskCompletedEvent,
)  # fmt: skip

SITE = os.environ["WP_SITE"]


class Wire:
    """Every response the SDK's httpx client received: status and Retry-After, in order."""

    def __init__(self) -> None:
        self.seen: List[Dict[str, Any]] = []

    async def hook(self, response: httpx.Response) -> None:
        self.seen.append({"status": response.status_code, "retryAfter": response.headers.get("retry-after")})


async def rate_limit(s: AsyncSession, wire: Wire) -> Dict[str, Any]:
    """Fills the window with a client that does not retry (its 429 is raised with code, status and
    Retry-After), then makes one call with the retrying client of ``s``: it gets 429, waits, succeeds."""
    async with AsyncWebpilot(max_retries=0) as strict:
        limited: Optional[RateLimitError] = None
        for _ in range(25):
            try:
                await strict.sessions.start(max_duration=1)  # 400 INVALID_PARAMETER, counted
            except BadRequestError as e:
                assert e.code == "INVALID_PARAMETER" and e.status == 400, e
            except RateLimitError as e:
                limited = e
                break
        assert limited is not None, "25 requests in 2 s were not limited"
        assert (limited.status, limited.code) == (429, "RATE_LIMIT_EXCEEDED"), limited
        assert limited.retry_after is not None and limited.retry_after >= 1, limited.retry_after
    start, before = time.monotonic(), len(wire.seen)
    await s.stop()  # a no-op with nothing running; sent again after Retry-After
    waited = time.monotonic() - start
    calls = wire.seen[before:]
    statuses = [c["status"] for c in calls]
    retry_after = float(calls[0]["retryAfter"] or 0) if calls else 0.0
    return {"statuses": statuses, "retryAfter": retry_after, "waited": round(waited, 3)}


async def main() -> None:
    wire = Wire()
    http = httpx.AsyncClient(timeout=httpx.Timeout(75.0, connect=10.0), event_hooks={"response": [wire.hook]})
    async with AsyncWebpilot(http_client=http) as wp:
        # Errors carry the service's code and the HTTP status.
        async with AsyncWebpilot(api_key="wp_not_a_key") as wrong:
            try:
                await wrong.sessions.list()
                raise AssertionError("a wrong key was accepted")
            except AuthenticationError as e:
                assert (e.status, e.code) == (401, "INVALID_API_KEY"), e

        # One-shot through the planner.
        one = await wp.run_task(f"open {SITE}/ then report the title", timeout=30)
        assert one.message == "Fixture Home", one
        # The session's identity fields by their Python names: the site sees the locale's languages.
        spoken = await wp.run_task(
            f'open {SITE}/identity then report the text of "#accept-language"', locale="de-DE", timeout=30
        )
        assert spoken.message == "de-DE,de;q=0.9", spoken

        async with wp.sessions.start(starting_url=f"{SITE}/counter") as s:
            async with s.events() as events:
                # Manual input, then a planner task that reads what it did.
                await s.click(200, 295)
                count = await s.run('report the text of "#count"', timeout=30)
                assert count.message == "1", count
                done = await events.wait_for(TaskCompletedEvent, task_id=count.task_id, timeout=10)
                assert done.message == "1", done
            await s.take_over()
            await s.click(550, 275)
            await s.type("hi")
            await s.key_press("Backspace")
            await s.release_control()
            typed = await s.run('report the text of "#typed"', timeout=30)
            assert typed.message == "h", typed

            # A guardrail answered by a handler.
            asked: List[Guardrail] = []

            async def answer(g: Guardrail) -> str:
                asked.append(g)
                return "Pro"

            r = await s.run('ask the human "Which plan?"; report the title', on_guardrail=answer, timeout=30)
            assert [g.value for g in asked] == ["Which plan?"] and r.message == "Counter", (asked, r)

            retried = await rate_limit(s, wire)
    await http.aclose()
    print(json.dumps({"ok": True, "retried": retried}))


if __name__ == "__main__":
    asyncio.run(main())
