"""Generates a Python client from the service's OpenAPI document with openapi-python-client (PyPI) and calls
send-message through it.

Usage: openapi_python_client.py; env WEBPILOT_BASE (service base URL), WEBPILOT_KEY (an API key),
WEBPILOT_SESSION (a live session of that key). Fails on any warning of the generator or any operation it
dropped. Prints {"operations": n, "generated": n, "sendMessage": <the answer's status and body>}.

The generator is told to treat the document's non-JSON media types (a WebM video, MJPEG frames, an SDP offer)
as raw bytes with its `content_type_overrides` setting, which is what that setting is for.
"""

import importlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import urllib.request

CONFIG = """
post_hooks: []
content_type_overrides:
  video/webm: application/octet-stream
  multipart/x-mixed-replace: application/octet-stream
  application/sdp: application/octet-stream
"""

METHODS = ("get", "put", "post", "delete", "patch")


def snake(name):
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(c.lower())
    return "".join(out)


def main():
    base = os.environ["WEBPILOT_BASE"]
    with urllib.request.urlopen(f"{base}/openapi.json", timeout=30) as r:
        doc = json.load(r)
    operations = {
        op["operationId"] for item in doc["paths"].values() for m, op in item.items() if m in METHODS
    }
    work = pathlib.Path(tempfile.mkdtemp(prefix="opc-"))
    (work / "openapi.json").write_text(json.dumps(doc))
    (work / "config.yaml").write_text(CONFIG)
    gen = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--path", "openapi.json",
         "--config", "config.yaml", "--meta", "none", "--output-path", "webpilot_client"],
        cwd=work, capture_output=True, text=True, timeout=120,
    )
    said = gen.stdout + gen.stderr
    if gen.returncode != 0 or "warning" in said.lower() or "error" in said.lower():
        print(f"openapi-python-client did not generate cleanly (exit {gen.returncode}):\n{said}", file=sys.stderr)
        sys.exit(1)
    generated = {p.stem for p in (work / "webpilot_client" / "api").glob("*/*.py") if p.stem != "__init__"}
    missing = sorted(op for op in operations if snake(op) not in generated)
    if missing:
        print(f"operations dropped by openapi-python-client: {missing}", file=sys.stderr)
        sys.exit(1)

    sys.path.insert(0, str(work))
    client_mod = importlib.import_module("webpilot_client")
    send = importlib.import_module("webpilot_client.api.sessions.send_message")
    models = importlib.import_module("webpilot_client.models")
    client = client_mod.AuthenticatedClient(base_url=base, token=os.environ["WEBPILOT_KEY"])
    body = models.SendMessageRequest(
        session_id=os.environ["WEBPILOT_SESSION"],
        message=models.InteractionMessage(
            action_type=models.InteractionAction.INTERACTION,
            action=models.TakeOverControl(type_=models.TakeOverControlType.TAKEOVERCONTROL),
        ),
    )
    answer = send.sync_detailed(client=client, body=body)
    parsed = answer.parsed
    print(json.dumps({
        "operations": len(operations),
        "generated": len(generated),
        "sendMessage": {
            "status": int(answer.status_code),
            "body": json.loads(answer.content),
            "parsedAs": type(parsed).__name__,
        },
    }))


if __name__ == "__main__":
    main()
