"""A webhook receiver built on the official Standard Webhooks library (`standardwebhooks` from PyPI).

Prints its port as the first line, then one JSON line per delivery attempt: the message id, type,
how many times that id has been seen, whether the signature verified, the status answered, and the body.
It answers 500 to the first FAIL_FIRST attempts of each message id (env, default 0), then 204.
`POST /_secret` (body: a whsec_ secret) adds a secret to verify with; an attempt verifies when any does.
"""
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook

FAIL_FIRST = int(os.environ.get("FAIL_FIRST", "0"))
secrets = []
seen = {}
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path == "/_secret":
            with lock:
                secrets.append(body.decode())
            self.send_response(204)
            self.end_headers()
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        verified = False
        for secret in list(secrets):
            try:
                Webhook(secret).verify(body, headers)
                verified = True
                break
            except Exception:
                pass
        msg_id = headers.get("webhook-id", "")
        with lock:
            seen[msg_id] = seen.get(msg_id, 0) + 1
            count = seen[msg_id]
        status = 500 if count <= FAIL_FIRST else 204
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        line = {"id": msg_id, "type": (parsed or {}).get("type"), "seen": count, "verified": verified,
                "status": status, "body": parsed, "path": self.path}
        with lock:
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()
        self.send_response(status)
        self.end_headers()


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
sys.stdout.write(f"{server.server_address[1]}\n")
sys.stdout.flush()
server.serve_forever()
