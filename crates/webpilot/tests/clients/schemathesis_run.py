"""Runs schemathesis (PyPI) against the service's OpenAPI document; prints one JSON object.

Usage: schemathesis_run.py <max-examples> <max-seconds> <excluded path>...; env WEBPILOT_BASE (service base
URL) and WEBPILOT_KEY (API key). Checks not_a_server_error and response_schema_conformance on every
operation but the excluded ones. Exits non-zero with schemathesis's report when a check fails.
"""

import json
import os
import subprocess
import sys
import tempfile


def main():
    max_examples, max_seconds, excluded = sys.argv[1], sys.argv[2], sys.argv[3:]
    base = os.environ["WEBPILOT_BASE"]
    # The console script next to this interpreter (pip puts it there), else the one on PATH.
    beside = os.path.join(os.path.dirname(sys.executable), "schemathesis")
    cmd = [
        beside if os.path.exists(beside) else "schemathesis", "run", f"{base}/openapi.json",
        "--checks", "not_a_server_error,response_schema_conformance",
        "--header", f"Authorization: Bearer {os.environ['WEBPILOT_KEY']}",
        "--max-examples", max_examples,
        "--max-time", max_seconds,
        "--workers", "1",
        "--seed", "24",
        "--generation-database", "none",
        "--request-timeout", "30",
        "--no-color",
    ]
    for path in excluded:
        cmd += ["--exclude-path", path]
    env = {**os.environ, "SCHEMATHESIS_TELEMETRY": "false"}
    # schemathesis keeps a cache in its working directory: a throwaway one, not the source tree.
    with tempfile.TemporaryDirectory() as scratch:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=scratch)
    if out.returncode != 0:
        print(out.stdout[-20000:], file=sys.stderr)
        print(out.stderr[-5000:], file=sys.stderr)
        sys.exit(out.returncode)
    tail = [line for line in out.stdout.splitlines() if line.strip()][-3:]
    print(json.dumps({"passed": True, "summary": tail}))


if __name__ == "__main__":
    main()
