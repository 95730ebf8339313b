#!/usr/bin/env bash
# Install everything the local control plane and the test suite need on a Debian 12 machine:
# Debian packages (etcd, kubectl 1.20, openssl, bubblewrap), the Kubernetes binaries built from Debian's source
# (cached outside the repo, see build-kube.sh), and the Python virtual environment with the project.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

need_pkgs=()
command -v etcd >/dev/null 2>&1 || need_pkgs+=(etcd-server)
command -v openssl >/dev/null 2>&1 || need_pkgs+=(openssl)
command -v bwrap >/dev/null 2>&1 || need_pkgs+=(bubblewrap)  # the sandbox every command agent runs in
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${need_pkgs[*]}" >&2
  as_root apt-get update -qq
  # etcd-server's maintainer script would try to start a system service; there is none to start here.
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

bash hack/build-kube.sh

# kubectl 1.20 (matches the server) from Debian's kubernetes-client, unpacked into the cache rather than
# installed: on some images another package already owns /usr/bin/kubectl.
CACHE_DIR="${OASIS_KUBE_CACHE:-/var/cache/oasis-operator/kube-1.20}"
if [ ! -x "$CACHE_DIR/bin/kubectl" ]; then
  tmp="$(mktemp -d)"
  (cd "$tmp" && apt-get download -qq kubernetes-client 2>/dev/null || { as_root apt-get update -qq && apt-get download -qq kubernetes-client; })
  dpkg -x "$tmp"/kubernetes-client_*.deb "$tmp/x"
  cp "$tmp/x/usr/bin/kubectl" "$CACHE_DIR/bin/kubectl"
  rm -rf "$tmp"
fi

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q -e '.[dev]' 2>&1 | grep -v -i '^warning' || true
.venv/bin/python -c 'import oasis_operator, kopf, kubernetes' 
echo "install-deps: ok" >&2
