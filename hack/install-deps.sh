#!/usr/bin/env bash
# Install everything the local control plane and the test suite need on a Debian 12 machine: openssl and
# bubblewrap (the sandbox every command agent runs in),
# the Kubernetes release pinned in operator/oasis_operator/localcluster/release.env (kube-apiserver,
# kube-controller-manager, kubectl and etcd, built once from the official Go modules by build-kube.sh and
# cached outside the repo), and the Python virtual environment with the project.
# That release is the only one the local control plane runs (localcluster/release.py), and the chart's
# sandbox images are the same release. A cold build takes about 20 minutes on 2 cores (README).
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install() {
  echo "install-deps: apt-get install $*" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

need_pkgs=()
command -v openssl >/dev/null 2>&1 || need_pkgs+=(openssl)
command -v bwrap >/dev/null 2>&1 || need_pkgs+=(bubblewrap)  # the sandbox every command agent runs in
command -v chromium >/dev/null 2>&1 || need_pkgs+=(chromium)  # renders the HTML report in its test
if [ ${#need_pkgs[@]} -gt 0 ]; then apt_install "${need_pkgs[@]}"; fi

bash hack/build-kube.sh
# The public OASIS runner for the provider API's e2e test (says why and goes on when it cannot be had).
bash hack/build-oasisctl.sh

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q -e '.[dev]' 2>&1 | grep -v -i '^warning' || true
.venv/bin/python -c 'import oasis_operator, kopf, kubernetes' 
# The operator image, built without a container engine (mmdebstrap + umoci, Debian packages) and cached by
# its inputs; tests/integration/chart/test_image.py runs the operator from it. Measured on the 2-core
# machine at a load average of ~25: 30 min with no cache (two Debian root filesystems, then the Python
# layer); a code change rebuilds only the Python layer (see hack/build-image.sh). OASIS_SKIP_IMAGE=1 skips
# it, and the test then skips saying so.
if [ "${OASIS_SKIP_IMAGE:-0}" != 1 ]; then
  as_root bash hack/build-image.sh
fi
echo "install-deps: ok" >&2
