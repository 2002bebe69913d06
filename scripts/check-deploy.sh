#!/usr/bin/env bash
# Checks deploy/: every Kubernetes manifest against the Kubernetes 1.37 schema, strictly (kubernetes-validate,
# from PyPI, bundles the schemas, so this works offline), every file a kustomization lists exists, and the
# Dockerfile runs as a non-root user and never turns Chromium's sandbox off.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! python3 -c "import kubernetes_validate" >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check "kubernetes-validate==1.37.0"
fi

manifests=$(find deploy/kubernetes -name '*.yaml' ! -name kustomization.yaml | sort)
# shellcheck disable=SC2086
python3 -m kubernetes_validate --strict --quiet -k 1.37.0 $manifests

python3 - <<'PY'
import pathlib, sys, yaml
bad = []
for k in pathlib.Path("deploy/kubernetes").rglob("kustomization.yaml"):
    doc = yaml.safe_load(k.read_text())
    for r in doc.get("resources", []):
        if not (k.parent / r).exists():
            bad.append(f"{k}: {r} does not exist")
if bad:
    sys.exit("\n".join(bad))
PY

docker=deploy/Dockerfile
user=$(grep -E '^USER ' "$docker" | tail -n1 | awk '{print $2}')
case "${user%%:*}" in
  ""|root|0) echo "$docker: the image must run as a non-root USER" >&2; exit 1 ;;
esac
if grep -rq -- '--no-sandbox' "$docker" deploy/kubernetes; then
  echo "deploy/: Chromium's sandbox must stay on (no --no-sandbox)" >&2
  exit 1
fi
echo "deploy/: manifests valid (Kubernetes 1.37, strict), kustomizations complete, image non-root and sandboxed"
