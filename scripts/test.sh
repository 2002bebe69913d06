#!/usr/bin/env bash
# Runs the whole test suite. Installs Chromium and libvpx first when missing (Debian), creates the unprivileged
# user Chromium runs as under root, installs the Python and JavaScript clients the black-box tests use, and
# makes sure the local PostgreSQL and Redis are running. It checks formatting and clippy first. The suite runs
# once on the embedded SQLite (every crate), then the store's tests and the integration tests that keep state run
# again on PostgreSQL (a fresh schema per test); see PG_SKIP below.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium, and libvpx-dev + pkg-config for the WebRTC live view's VP8 encoder.
source scripts/system-packages.sh

# As root, the service starts Chromium as this unprivileged user, with Chromium's sandbox on (docs/security.md).
if [ "$(id -u)" = 0 ] && ! id -u webpilot-browser >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin webpilot-browser
fi

if command -v pg_ctlcluster >/dev/null 2>&1 && ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
fi

# The black-box tests drive the service with real clients: python-socketio and the official openai and mcp SDKs,
python3 -m pip install -q --disable-pip-version-check -r crates/webpilot/tests/python-requirements.txt
# ... and the Python SDK (sdk/python), whose own test drives the service through it.
python3 -m pip install -q --disable-pip-version-check -e 'sdk/python[async]'
# ... and the official JavaScript Socket.IO client (crates/webpilot/tests/clients/package.json).
npm install --prefix crates/webpilot/tests/clients --no-audit --no-fund --silent
# The TypeScript SDK's own dependencies (socket.io-client; typescript and openapi-typescript to build and check
# it): the black-box test sdk_typescript compiles it with `tsc --strict` and drives the service through it.
npm install --prefix sdk/typescript --no-audit --no-fund --silent

# The cluster tests use the local Redis (several nodes share its rate windows).
if command -v redis-cli >/dev/null 2>&1 && ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 >/dev/null || true
fi

# deploy/: the Kubernetes manifests against the Kubernetes schema, the Dockerfile non-root and sandboxed.
bash scripts/check-deploy.sh

# The PostgreSQL pass leaves out the integration modules whose subject is the browser or a wire protocol, not
# stored state: the DevTools relay, the live view and WebRTC, egress, page observation and input, the Chromium
# pool and its faults, the browser's own behaviour (storage per context, input, upstream proxies, identity, human
# checks, vision's screenshots and their marks, the edge cases of dialogs and stops), the console, the OpenAPI document's
# generators and fuzzer, metrics, MCP's memory limits and socket ids. They store only what every other module
# stores too (a user, a key, a session row); they run on SQLite above. Every module that reads or writes tasks, files, recordings, profiles, webhooks, balances, usage,
# keys or cluster state runs on both. The SDKs' tests (sdk_python, sdk_typescript) run once too: their subject is
# the client, and every route they call is tested on both stores by its own module.
PG_SKIP='cdp|cdp_client|cdp_limits|cdp_tenants|devtools|devtools_clients|devtools_downloads|live_view|live_view_secrets|whep|egress|net_errors|observation|input_rules|browser|browser_faults|remote_browser|pool|proxies|proxies_https|identity|human_checks|vision|marks|point_secrets|edge_cases|console|openapi|metrics|mcp_limits|socket_security|sdk_python|sdk_typescript'

status=0
# House rules as code: formatting and clippy (with the workspace lints of Cargo.toml) fail the run too.
cargo fmt --all -- --check || status=$?
cargo clippy --all-targets -- -D warnings || status=$?
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast || status=$?
  WEBPILOT_TEST_DATABASE=postgres cargo nextest run -p webpilot -p webpilot-store --no-fail-fast \
    -E "(binary(api) & !test(/^($PG_SKIP)::/)) | package(webpilot-store)" || status=$?
else
  cargo test --workspace --no-fail-fast || status=$?
  WEBPILOT_TEST_DATABASE=postgres cargo test -p webpilot --test api --no-fail-fast -- --skip cdp --skip devtools \
    --skip live_view --skip whep --skip egress --skip observation --skip console --skip openapi || status=$?
  WEBPILOT_TEST_DATABASE=postgres cargo test -p webpilot-store --no-fail-fast || status=$?
fi
exit "$status"
