"""Drives the MCP endpoint with the official Python `mcp` SDK; prints one JSON object.

Usage: mcp_client.py <task>; env WEBPILOT_MCP_URL (e.g. http://127.0.0.1:port/mcp) and WEBPILOT_KEY.
Lists tools and resources, calls run_task with <task>, get_task on its ids, reads the sessions and the
task resource, and calls get_task on an unknown session.
"""

import asyncio
import json
import os
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def tool_json(result):
    structured = getattr(result, "structured_content", None)
    if structured is None:
        structured = json.loads(result.content[0].text)
    return {"is_error": bool(result.is_error), "body": structured}


async def run(task):
    headers = {"Authorization": f"Bearer {os.environ['WEBPILOT_KEY']}"}
    out = {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http:
        async with streamable_http_client(os.environ["WEBPILOT_MCP_URL"], http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                out["tools"] = sorted(t.name for t in tools.tools)
                resources = await session.list_resources()
                out["resources"] = [str(r.uri) for r in resources.resources]
                run_task = tool_json(await session.call_tool("run_task", {"taskDetails": task}))
                out["run_task"] = run_task
                sid, tid = run_task["body"].get("sessionId"), run_task["body"].get("taskId")
                out["get_task"] = tool_json(await session.call_tool("get_task", {"sessionId": sid, "taskId": tid}))
                started = tool_json(await session.call_tool("start_session", {}))
                out["start_session"] = started
                sessions = await session.read_resource("webpilot://sessions")
                out["sessions_resource"] = json.loads(sessions.contents[0].text)
                task_res = await session.read_resource(f"webpilot://task/{sid}/{tid}")
                out["task_resource"] = json.loads(task_res.contents[0].text)
                terminate = {"actionType": "state", "newState": "terminate"}
                msg = {"sessionId": started["body"]["sessionId"], "message": terminate}
                out["terminate"] = tool_json(await session.call_tool("send_message", msg))
                missing = {"sessionId": "ses_missing", "taskId": "tsk_missing"}
                out["missing"] = tool_json(await session.call_tool("get_task", missing))
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(sys.argv[1]))))
