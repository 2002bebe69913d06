"""A Socket.IO test client for the webpilot test suite, driven over stdin/stdout.

Usage: session_client.py BASE_URL SESSION_ID   (SESSION_ID "-" sends no auth data)
Env:   WP_CLIENT_TIMEOUT (seconds, default 60): the client exits on its own after this long.
       WP_CLIENT_TRANSPORTS (default "polling,websocket").

Prints one JSON object per line: {"event": name, "data": payload} for every event received (also
"connect" with the socket id, "connect_error", "disconnect"), and {"event": "ack", "id": n, "data": ...}
for acks. Reads one JSON command per line on stdin: {"emit": name, "data": obj, "id": n} emits and waits
for the ack; {"disconnect": true} disconnects. Exits on stdin EOF, after a server disconnect, or at the
timeout.
"""

import json
import os
import sys
import threading

import socketio

lock = threading.Lock()


def out(obj):
    with lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def main():
    base, session = sys.argv[1], sys.argv[2]
    timeout = float(os.environ.get("WP_CLIENT_TIMEOUT", "60"))
    transports = os.environ.get("WP_CLIENT_TRANSPORTS", "polling,websocket").split(",")
    timer = threading.Timer(timeout, lambda: (out({"event": "timeout"}), os._exit(3)))
    timer.daemon = True
    timer.start()

    sio = socketio.Client(reconnection=False)
    done = threading.Event()

    @sio.event
    def connect():
        out({"event": "connect", "sid": sio.get_sid()})

    @sio.event
    def connect_error(data):
        out({"event": "connect_error", "data": data})

    @sio.event
    def disconnect(*args):
        out({"event": "disconnect"})
        done.set()

    @sio.on("*")
    def any_event(event, *args):
        out({"event": event, "data": args[0] if args else None})

    auth = None if session == "-" else {"sessionId": session}
    try:
        sio.connect(base, auth=auth, transports=transports, wait_timeout=10)
    except socketio.exceptions.ConnectionError as e:
        out({"event": "connect_failed", "error": str(e)})
        os._exit(0)

    # Held while a call waits for its ack and prints it: a server that acks and then disconnects (a
    # `terminate`) delivers both at once, and the ack must be printed before the process exits.
    calling = threading.Lock()

    def commands():
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            cmd = json.loads(line)
            if cmd.get("disconnect"):
                sio.disconnect()
                continue
            with calling:
                try:
                    ack = sio.call(cmd["emit"], cmd.get("data"), timeout=30)
                    out({"event": "ack", "id": cmd.get("id"), "data": ack})
                except Exception as e:  # noqa: BLE001 - reported to the test
                    out({"event": "ack_error", "id": cmd.get("id"), "error": str(e)})
        done.set()

    threading.Thread(target=commands, daemon=True).start()
    done.wait()
    # A call whose ack arrived with the disconnect is still printing it: let it finish (briefly).
    if calling.acquire(timeout=2):
        calling.release()
    try:
        sio.disconnect()
    except Exception:  # noqa: BLE001
        pass
    os._exit(0)


if __name__ == "__main__":
    main()
