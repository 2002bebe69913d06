#!/usr/bin/env bash
# Installs what the service needs (Debian's Chromium, and libvpx for the WebRTC live view), builds it,
# creates a first user with an API key when the data directory has none, and runs the service on the
# embedded defaults (SQLite in ./data, http://127.0.0.1:8080). Extra arguments go to `webpilot serve`.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium, and libvpx-dev + pkg-config for the WebRTC live view's VP8 encoder.
source scripts/system-packages.sh

# As root, the service starts Chromium as this unprivileged user, with Chromium's sandbox on (docs/security.md).
if [ "$(id -u)" = 0 ] && ! id -u webpilot-browser >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin webpilot-browser
fi

cargo build --release -p webpilot
bin=target/release/webpilot

if [ -z "$("$bin" users list)" ]; then
  user=$("$bin" users create --name admin --balance 10)
  key=$("$bin" keys create --user "$user" --name first 2>/dev/null)
  echo "created user $user with \$10 and API key: $key"
fi

exec "$bin" serve "$@"
