"""Runs schemathesis (PyPI) against the service's OpenAPI document; prints one JSON object.

Usage: schemathesis_run.py <max-examples> <max-seconds> <excluded path>...; env WEBPILOT_BASE (service base
URL), WEBPILOT_KEY (API key) and WEBPILOT_STATEFUL_KEY (another user's key, whose session cap the first run
has not used up). Checks not_a_server_error and response_schema_conformance on every
operation but the excluded ones, in two runs with their own time budget each, so a slow machine never skips
the second: the examples, coverage and fuzzing phases (one operation at a time), then the stateful phase
(chains of calls along the document's OpenAPI links). Exits non-zero with schemathesis's report when a check
fails. The JSON says how many stateful scenarios ran and how many links they covered.
"""

import json
import os
import re
import subprocess
import sys
import tempfile


def run(phases, key, max_examples, max_seconds, excluded):
    base = os.environ["WEBPILOT_BASE"]
    # The console script next to this interpreter (pip puts it there), else the one on PATH.
    beside = os.path.join(os.path.dirname(sys.executable), "schemathesis")
    cmd = [
        beside if os.path.exists(beside) else "schemathesis", "run", f"{base}/openapi.json",
        "--phases", phases,
        "--checks", "not_a_server_error,response_schema_conformance",
        "--header", f"Authorization: Bearer {key}",
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
    return out.stdout


def main():
    max_examples, max_seconds, excluded = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    key, stateful_key = os.environ["WEBPILOT_KEY"], os.environ["WEBPILOT_STATEFUL_KEY"]
    single = run("examples,coverage,fuzzing", key, max_examples, str(max_seconds * 2 // 3), excluded)
    stateful = run("stateful", stateful_key, max_examples, str(max(max_seconds // 3, 5)), excluded)
    scenarios = re.search(r"Scenarios:\s+(\d+)", stateful)
    links = re.search(r"API Links:\s+(\d+) covered / (\d+) selected", stateful)
    tail = [line for line in (single + stateful).splitlines() if "passed" in line or "generated" in line][-4:]
    print(json.dumps({
        "passed": True,
        "summary": tail,
        "scenarios": int(scenarios.group(1)) if scenarios else 0,
        "linksCovered": int(links.group(1)) if links else 0,
        "linksSelected": int(links.group(2)) if links else 0,
    }))


if __name__ == "__main__":
    main()
