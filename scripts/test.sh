#!/usr/bin/env bash
# Runs the whole test suite. Installs Chromium and libvpx first when missing (Debian), creates the unprivileged
# user Chromium runs as under root, installs the Python and JavaScript clients the black-box tests use, and
# makes sure the local PostgreSQL that the schema test uses is running.
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
# ... and the official JavaScript Socket.IO client (crates/webpilot/tests/clients/package.json).
npm install --prefix crates/webpilot/tests/clients --no-audit --no-fund --silent

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast
else
  cargo test --workspace --no-fail-fast
fi
