#!/usr/bin/env bash
# LEGACY (OASIS_KUBE_VERSION=1.20 only; hack/build-kube.sh builds the current release): build
# kube-apiserver and kube-controller-manager 1.20 from Debian 12's Kubernetes source package and cache
# them outside the repository. A machine that already has the cached binaries skips the build.
#
# Why from source: no registry reachable from our machines ships a prebuilt kube-apiserver. Debian 12 ships
# the whole vendored Kubernetes 1.20 tree as the source package `kubernetes`.
set -euo pipefail

CACHE_DIR="${OASIS_KUBE_CACHE:-/var/cache/oasis-operator/kube-1.20}"
BIN_DIR="$CACHE_DIR/bin"
WANT=(kube-apiserver kube-controller-manager)

have_all() {
  for b in "${WANT[@]}"; do [ -x "$BIN_DIR/$b" ] || return 1; done
}

if have_all; then
  echo "build-kube: cached binaries found in $BIN_DIR"
  exit 0
fi

log() { echo "build-kube: $*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# Source entries mirroring the binary ones (deb822 format on Debian 12).
SRC_LIST=/etc/apt/sources.list.d/oasis-deb-src.sources
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && [ ! -f "$SRC_LIST" ]; then
  log "adding deb-src entries"
  as_root sh -c "sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > $SRC_LIST"
fi
log "installing build dependencies"
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  golang-1.19-go rsync dpkg-dev golang-github-modern-go-reflect2-dev >/dev/null

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/oasis-kube-build.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
cd "$SCRATCH"
log "fetching the kubernetes source package into $SCRATCH"
apt-get source -qq --download-only kubernetes >/dev/null
dpkg-source -x --no-check ./kubernetes_*.dsc src >/dev/null
cd src

# reflect2 1.0.1 (vendored) segfaults kube-apiserver on the first custom-resource create under Go >= 1.18.
REFLECT2_SRC=/usr/share/gocode/src/github.com/modern-go/reflect2
log "replacing vendored reflect2 with Debian's $(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev)"
rm -rf vendor/github.com/modern-go/reflect2
mkdir -p vendor/github.com/modern-go/reflect2
cp -r "$REFLECT2_SRC"/. vendor/github.com/modern-go/reflect2/
find vendor/github.com/modern-go/reflect2 -name '*_test.go' -delete

log "building ${WANT[*]} (several minutes)"
export PATH="/usr/lib/go-1.19/bin:$PATH" CGO_ENABLED=0 GOPROXY=off GOFLAGS=-mod=vendor
make WHAT="cmd/kube-apiserver cmd/kube-controller-manager" >"$SCRATCH/build.log" 2>&1 || {
  tail -n 60 "$SCRATCH/build.log" >&2
  exit 1
}

mkdir -p "$BIN_DIR.tmp"
for b in "${WANT[@]}"; do
  cp "_output/bin/$b" "$BIN_DIR.tmp/$b"
done
rm -rf "$BIN_DIR"
mv "$BIN_DIR.tmp" "$BIN_DIR"
log "done: $(ls "$BIN_DIR" | tr '\n' ' ')"
