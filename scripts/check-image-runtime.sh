#!/usr/bin/env bash
# Checks the runtime stage of deploy/Dockerfile without Docker: builds the same Debian root file system with
# mmdebstrap (the packages the Dockerfile's runtime stage installs, read from it), adds the same user, puts a
# webpilot binary in it, and runs `tini -- webpilot serve` there as uid 10001 with the image's environment,
# in new mount, PID and IPC namespaces with that tree as root (bubblewrap: pivot_root, as a container
# runtime does; a plain chroot would not do, since a chrooted process may not create the user namespaces
# Chromium's sandbox needs). It then starts a session and checks that Chromium runs as that user with its
# sandbox on.
#
#   bash scripts/check-image-runtime.sh [path/to/webpilot]   (default: target/release/webpilot, built if absent)
#
# Needs root (chroot, mounts) and the Debian mirror; about 2 minutes. Not part of the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=${1:-target/release/webpilot}
if [ ! -x "$binary" ]; then
    cargo build --release -p webpilot
fi
if ! command -v mmdebstrap >/dev/null || ! command -v bwrap >/dev/null; then
    apt-get update -q >/dev/null && apt-get install -y -q mmdebstrap bubblewrap >/dev/null
fi

# The runtime stage's packages, as the Dockerfile lists them (the apt-get line after the last FROM).
# (continuation lines joined first; the words after `apt-get install` up to the next `&&`, options left out).
packages=$(awk '/^FROM/ {stage++} stage == 2' deploy/Dockerfile | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' \
    | grep -o 'apt-get install[^&]*' | head -1 | tr -s ' ' '\n' | grep -v -e '^-' -e '^apt-get$' -e '^install$' -e '^$' \
    | paste -sd, -)
suite=$(sed -n 's/^FROM debian:\([a-z]*\)-slim$/\1/p' deploy/Dockerfile)
[ -n "$packages" ] && [ -n "$suite" ] || { echo "could not read the runtime stage of deploy/Dockerfile" >&2; exit 1; }

work=$(mktemp -d /tmp/webpilot-image.XXXXXX)
root=$work/root
port=18080
cleanup() {
    if [ -n "${server:-}" ]; then
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "== root file system: debian $suite with $packages"
mmdebstrap --quiet --variant=apt --include="$packages,passwd" "$suite" "$root" http://deb.debian.org/debian
chroot "$root" useradd --uid 10001 --create-home --home-dir /home/webpilot --shell /usr/sbin/nologin webpilot
mkdir -p "$root/data" && chroot "$root" chown webpilot:webpilot /data
install -m 0755 "$binary" "$root/usr/local/bin/webpilot"

run() ( # as the image's user, with the image's environment, the tree as root (a subshell: exec ends it)
    exec bwrap --bind "$root" / --proc /proc --dev /dev --perms 1777 --tmpfs /dev/shm --ro-bind /sys /sys --perms 1777 --tmpfs /tmp \
        --unshare-pid --unshare-ipc --die-with-parent \
        /usr/bin/setpriv --reuid=10001 --regid=10001 --clear-groups \
        /usr/bin/env -i HOME=/home/webpilot PATH=/usr/local/bin:/usr/bin:/bin \
        WEBPILOT_LISTEN=127.0.0.1:$port WEBPILOT_DATA_DIR=/data WEBPILOT_CHROMIUM=/usr/bin/chromium "$@"
)

echo "== user and key"
user=$(run /usr/local/bin/webpilot users create --name image-check --balance 1 | grep -o 'usr_[0-9a-f]*' | head -1)
key=$(run /usr/local/bin/webpilot keys create --user "$user" --name image-check | grep -o 'wp_[A-Za-z0-9_]*' | head -1)
[ -n "$user" ] && [ -n "$key" ] || { echo "could not create a user and key" >&2; exit 1; }

echo "== serve as uid 10001 under tini"
run /usr/bin/tini -s -- /usr/local/bin/webpilot serve >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$port/start/health" >/dev/null 2>&1 && break
    sleep 0.2
done
curl -fsS "http://127.0.0.1:$port/start/health"; echo
started=$(curl -sS -X POST "http://127.0.0.1:$port/start/start-session" -H "Authorization: Bearer $key" \
    -H 'content-type: application/json' -d '{}')
echo "$started" | grep -q '"success":true' || { echo "start-session failed: $started" >&2; tail -20 "$work/serve.log" >&2; exit 1; }
echo "start-session: ok"

browser=$(pgrep -u 10001 -x chromium -o || true)
[ -n "$browser" ] || { echo "no Chromium process runs as uid 10001" >&2; exit 1; }
if tr '\0' ' ' <"/proc/$browser/cmdline" | grep -q -- '--no-sandbox'; then
    echo "Chromium runs with --no-sandbox" >&2; exit 1
fi
if pgrep -u 0 -x chromium >/dev/null; then
    echo "a Chromium process runs as root" >&2; exit 1
fi
# The namespace sandbox: every renderer lives in a user namespace other than the browser's.
renderers=$(pgrep -u 10001 -f -- '--type=renderer' || true)
[ -n "$renderers" ] || { echo "no renderer process" >&2; exit 1; }
for r in $renderers; do
    if [ "$(readlink /proc/$r/ns/user)" = "$(readlink /proc/$browser/ns/user)" ]; then
        echo "renderer $r shares the browser's user namespace: no namespace sandbox" >&2; exit 1
    fi
done
echo "browser pid $browser: uid $(stat -c %u /proc/$browser), $(readlink /proc/$browser/ns/user)"
echo "renderers $(echo $renderers | tr '\n' ' '): $(for r in $renderers; do readlink /proc/$r/ns/user; done | sort -u | paste -sd' ')"
echo "image runtime check: OK (uid 10001, Chromium sandboxed in its own user namespace, a session started)"
