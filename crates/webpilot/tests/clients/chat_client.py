"""Drives /v1/chat/completions and /v1/models with the official openai SDK; prints one JSON object.

Usage: chat_client.py <mode> [task]; env WEBPILOT_BASE (service base URL) and WEBPILOT_KEY (API key).
Modes: complete, stream, models, error, error-stream.
"""

import json
import os
import sys

import openai


def client(key=None):
    return openai.OpenAI(
        base_url=f"{os.environ['WEBPILOT_BASE']}/v1",
        api_key=key or os.environ["WEBPILOT_KEY"],
        max_retries=0,
        timeout=120,
    )


def messages(task):
    return [
        {"role": "system", "content": "You control a browser."},
        {"role": "user", "content": task},
    ]


def complete(task):
    r = client().chat.completions.create(model="svc-browser-1", messages=messages(task), max_tokens=500)
    return {
        "id": r.id,
        "object": r.object,
        "created": r.created,
        "model": r.model,
        "content": r.choices[0].message.content,
        "role": r.choices[0].message.role,
        "finish_reason": r.choices[0].finish_reason,
        "usage": r.usage.model_dump() if r.usage else None,
        "svc": (r.model_extra or {}).get("svc"),
    }


def stream(task):
    chunks = []
    for c in client().chat.completions.create(model="svc-browser-1", messages=messages(task), stream=True):
        chunks.append(c.model_dump())
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    return {"content": content, "chunks": chunks}


def models():
    return {"ids": [m.id for m in client().models.list()], "owned_by": [m.owned_by for m in client().models.list()]}


def error(task, streaming, key=None):
    try:
        r = client(key).chat.completions.create(model="svc-browser-1", messages=messages(task), stream=streaming)
        if streaming:
            for _ in r:
                pass
        return {"raised": None}
    except openai.APIStatusError as e:
        return {"raised": type(e).__name__, "status": e.status_code, "body": e.body, "message": e.message}
    except openai.APIError as e:
        return {"raised": type(e).__name__, "status": None, "body": e.body, "message": e.message}


def main():
    mode = sys.argv[1]
    task = sys.argv[2] if len(sys.argv) > 2 else ""
    if mode == "complete":
        out = complete(task)
    elif mode == "stream":
        out = stream(task)
    elif mode == "models":
        out = models()
    elif mode == "error":
        out = error(task, False)
    elif mode == "error-stream":
        out = error(task, True)
    elif mode == "bad-key":
        out = error(task, False, key="wp_not_a_real_key")
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
