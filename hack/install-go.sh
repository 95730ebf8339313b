#!/usr/bin/env bash
# Print the path of a Go toolchain that can build the pinned Kubernetes release (hack/go-toolchain.env):
#   1. $OASIS_GO when set (used as it is; build-kube.sh still checks its version);
#   2. the machine's Go (/usr/local/go/bin/go, else `go` on PATH) when it is at least GO_MINIMUM;
#   3. else Go GO_VERSION in the project's cache ($OASIS_GO_CACHE, default
#      ${OASIS_CACHE_ROOT:-/var/cache/oasis-operator}/go-<version>), fetched once from the Go module proxy
#      (the first http(s) entry of $GOPROXY, default https://proxy.golang.org) as the module
#      golang.org/toolchain@v0.0.1-go<version>.linux-<arch>, checked against the pinned sha256, unpacked.
# Nothing is installed system-wide and PATH is not changed: the build scripts call the printed binary.
#   --status   print how Go would be had (`machine PATH`, `cached PATH`, `download VERSION`), fetch nothing
# Needs curl, unzip and ca-certificates to fetch (installed from Debian's packages when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=go-toolchain.env
. hack/go-toolchain.env

CACHE_ROOT="${OASIS_CACHE_ROOT:-/var/cache/oasis-operator}"
GO_DIR="${OASIS_GO_CACHE:-$CACHE_ROOT/go-$GO_VERSION}"
log() { echo "install-go: $*" >&2; }

# at_least VERSION MINIMUM: VERSION (1.26.8, 1.19) is MINIMUM (1.26) or newer.
at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }
go_version() { "$1" env GOVERSION 2>/dev/null | sed -nE 's/^go([0-9]+\.[0-9]+(\.[0-9]+)?).*/\1/p'; }
usable() { local v; v="$(go_version "$1")"; [ -n "$v" ] && at_least "$v" "$GO_MINIMUM"; }

machine_go() {
  local candidate
  for candidate in /usr/local/go/bin/go "$(command -v go || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && usable "$candidate"; then echo "$candidate"; return 0; fi
  done
  return 1
}
cached_go() {
  [ -x "$GO_DIR/bin/go" ] && [ "$(go_version "$GO_DIR/bin/go")" = "$GO_VERSION" ] && echo "$GO_DIR/bin/go"
}

if [ -n "${OASIS_GO:-}" ]; then
  [ "${1:-}" = --status ] && echo "given $OASIS_GO" || echo "$OASIS_GO"
  exit 0
fi
if found="$(machine_go)"; then
  [ "${1:-}" = --status ] && echo "machine $found" || echo "$found"
  exit 0
fi
if found="$(cached_go)"; then
  [ "${1:-}" = --status ] && echo "cached $found" || echo "$found"
  exit 0
fi
if [ "${1:-}" = --status ]; then echo "download $GO_VERSION"; exit 0; fi

case "$(uname -m)" in
  x86_64|amd64) arch=amd64; want_sum="$GO_TOOLCHAIN_SHA256_AMD64" ;;
  aarch64|arm64) arch=arm64; want_sum="$GO_TOOLCHAIN_SHA256_ARM64" ;;
  *) log "no pinned Go toolchain for $(uname -m): install Go >= $GO_MINIMUM and set OASIS_GO"; exit 1 ;;
esac
proxy=https://proxy.golang.org
IFS=',|' read -r -a entries <<<"${GOPROXY:-}"
for e in "${entries[@]}"; do case "$e" in http://*|https://*) proxy="${e%/}"; break ;; esac; done
version="v0.0.1-go$GO_VERSION.linux-$arch"
url="$proxy/golang.org/toolchain/@v/$version.zip"

missing=()
command -v curl >/dev/null || missing+=(curl)
command -v unzip >/dev/null || missing+=(unzip)
[ -d /etc/ssl/certs ] && [ -n "$(ls /etc/ssl/certs 2>/dev/null)" ] || missing+=(ca-certificates)
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$CACHE_ROOT"
work="$(mktemp -d "$CACHE_ROOT/.go-$GO_VERSION.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log "no Go >= $GO_MINIMUM on this machine: fetching Go $GO_VERSION from $url"
curl -fsSL --retry 3 -o "$work/toolchain.zip" "$url" || { log "could not fetch $url"; exit 1; }
got_sum="$(sha256sum "$work/toolchain.zip" | cut -d' ' -f1)"
if [ "$got_sum" != "$want_sum" ]; then
  log "checksum mismatch for $url: got sha256 $got_sum, hack/go-toolchain.env pins $want_sum"
  exit 1
fi
unzip -q "$work/toolchain.zip" -d "$work/unpacked"
root="$work/unpacked/golang.org/toolchain@$version"
# Module zips keep no file modes; the toolchain's programs are under bin/ and pkg/tool/ (as `go` itself
# does when it switches toolchains).
find "$root/bin" "$root/pkg/tool" -type f -exec chmod 0755 {} +
[ "$(go_version "$root/bin/go")" = "$GO_VERSION" ] || { log "the unpacked toolchain does not run"; exit 1; }
rm -rf "$GO_DIR"
mv "$root" "$GO_DIR"
log "Go $GO_VERSION in $GO_DIR"
echo "$GO_DIR/bin/go"
