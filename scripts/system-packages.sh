#!/usr/bin/env bash
# Installs the Debian packages webpilot needs when they are missing: chromium (the browser it drives),
# and libvpx-dev with pkg-config (the VP8 encoder of the WebRTC live view, linked at build time).
# Sourced by scripts/run.sh and scripts/test.sh.
missing=()
for pkg in chromium libvpx-dev pkg-config; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
